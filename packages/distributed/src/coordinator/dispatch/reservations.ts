import { type PartitionInputs, partitionBatches } from './partition.js';

/**
 * Per-rank reservation spans of an epoch, in samples (floDl 0.6 reservations): the epoch's
 * batches split like a partition (explicit ratios, else ElChe's throughput ratios once
 * calibrated or hinted, else equal; dead ranks get none), times the batch size. The spans
 * tile `[0, totalBatches × batchSize)` in rank order.
 */
export function reservationSpans(batchSize: number, inputs: PartitionInputs): number[] {
  return partitionBatches(inputs).map((batches) => batches * batchSize);
}

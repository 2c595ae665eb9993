import { describe, expect, it } from 'vitest';
import {
  ChunkPool,
  chunkBatches,
  type DispatchContext,
  EpochDispatcher,
  equalShares,
  MIN_CHUNK_BATCHES,
  partitionBatches,
  plansFromSizes,
  probeChunkBatches,
  throughputShares,
  usableSamples,
  weightedShares,
} from '../src/coordinator/index.js';

const ALL = [true, true, true];

describe('partitions', () => {
  it('covers floor(N / batch) · batch samples with consecutive, disjoint plans', () => {
    expect(usableSamples(1000, 32)).toBe(992);
    const plans = plansFromSizes(3, [320, 320, 352]);
    expect(plans.map((plan) => plan.partitionOffset)).toEqual([0, 320, 640]);
    expect(plans.every((plan) => plan.epoch === 3)).toBe(true);
  });

  it('splits equally when uncalibrated or under Sync (remainder to the lowest ranks)', () => {
    expect(equalShares(10, ALL)).toEqual([4, 3, 3]);
    expect(equalShares(10, [true, false, true])).toEqual([5, 0, 5]);
    const inputs = {
      totalBatches: 31,
      live: ALL,
      counts: [10, 20, 35],
      msPerBatch: [35, 17.5, 10],
      partitionRatios: undefined,
    };
    expect(partitionBatches({ ...inputs, policy: 'Sync', calibrated: true })).toEqual([11, 10, 10]);
    expect(
      partitionBatches({ ...inputs, policy: 'Cadence', calibrated: false, counts: [10, 10, 10] }),
    ).toEqual([11, 10, 10]);
  });

  it('splits by throughput once calibrated, remainder to the fastest', () => {
    // Rates 1 : 2 : 3.5 of 100 batches → 15.38, 30.77, 53.85 → floors 15, 30, 53, +2 to the fastest first.
    expect(throughputShares(100, [35, 17.5, 10], ALL)).toEqual([15, 31, 54]);
    expect(
      partitionBatches({
        policy: 'Cadence',
        totalBatches: 100,
        live: ALL,
        calibrated: true,
        counts: [10, 20, 35],
        msPerBatch: [35, 17.5, 10],
        partitionRatios: undefined,
      }),
    ).toEqual([15, 31, 54]);
  });

  it('normalises explicit ratios, which override everything', () => {
    expect(weightedShares(100, [2, 1, 1], ALL)).toEqual([50, 25, 25]);
    expect(
      partitionBatches({
        policy: 'Sync',
        totalBatches: 10,
        live: ALL,
        calibrated: false,
        counts: [1, 1, 1],
        msPerBatch: [0, 0, 0],
        partitionRatios: [0.5, 0.3, 0.2],
      }),
    ).toEqual([5, 3, 2]);
  });
});

describe('ChunkPool reservations', () => {
  it('serves each rank from the front of its own contiguous span', () => {
    const pool = new ChunkPool(0, [100, 200, 300]);
    expect(pool.totalSamples).toBe(600);
    expect(pool.takeChunk(40, 1)).toEqual({ offset: 100, size: 40 });
    expect(pool.takeChunk(40, 1)).toEqual({ offset: 140, size: 40 });
    expect(pool.takeChunk(500, 0)).toEqual({ offset: 0, size: 100 });
    expect(pool.reservation(1)).toEqual({ offset: 180, size: 120 });
  });

  it('lets a rank that out-ran its span steal from the tail of the largest residue', () => {
    const pool = new ChunkPool(0, [100, 200, 300]);
    pool.takeChunk(100, 0);
    expect(pool.takeChunk(50, 0)).toEqual({ offset: 550, size: 50 });
    expect(pool.residue(2)).toBe(250);
    // Owner front and thief tail meet but never cross.
    pool.takeChunk(240, 2);
    // Span 1 now has the largest residue: rank 0 peels its tail, rank 1 keeps its front.
    expect(pool.takeChunk(50, 0)).toEqual({ offset: 250, size: 50 });
    expect(pool.takeChunk(50, 1)).toEqual({ offset: 100, size: 50 });
    expect(pool.takeChunk(500, 2)).toEqual({ offset: 540, size: 10 });
    expect(pool.takeChunk(500, 0)).toEqual({ offset: 150, size: 100 });
    expect(pool.remaining()).toBe(0);
  });

  it('returns a dead rank’s uncompleted chunks first, and completes only when all is reported', () => {
    const pool = new ChunkPool(0, [64, 64]);
    pool.takeChunk(32, 0);
    pool.takeChunk(32, 1);
    pool.markCompleted(1, 32);
    expect(pool.forfeit(0)).toBe(32);
    expect(pool.inFlight(0)).toBe(0);
    expect(pool.takeChunk(64, 1)).toEqual({ offset: 0, size: 32 });
    expect(pool.isComplete()).toBe(false);
    pool.takeChunk(64, 1);
    pool.takeChunk(64, 1);
    pool.markCompleted(1, 96);
    expect(pool.remaining()).toBe(0);
    expect(pool.isComplete()).toBe(true);
  });

  it('credits the processed prefix of a non-progressive death', () => {
    const pool = new ChunkPool(0, [320, 320]);
    pool.takeChunk(320, 0);
    pool.takeChunk(320, 1);
    expect(pool.forfeit(0, 96)).toBe(224);
    expect(pool.completed(0)).toBe(96);
    expect(pool.takeChunk(1000, 1)).toEqual({ offset: 96, size: 224 });
  });
});

describe('chunk sizing', () => {
  const base = {
    rank: 0,
    calibrated: true,
    counts: [10, 20, 35],
    msPerBatch: [35, 17.5, 10],
    live: ALL,
    inFlightBatches: [0, 0, 0],
    totalSamples: 60_000,
    batchSize: 32,
    minChunkBatches: MIN_CHUNK_BATCHES,
  };

  it('probes with max(4, N / (W · 10 · batch)) batches before calibration', () => {
    expect(probeChunkBatches(60_000, 3, 32)).toBe(62);
    expect(probeChunkBatches(3000, 3, 32)).toBe(4);
    expect(chunkBatches({ ...base, calibrated: false, remainingBatches: 1000 })).toBe(62);
  });

  it('gives a calibrated rank one window of its schedule, never under 4 batches', () => {
    expect(chunkBatches({ ...base, rank: 2, remainingBatches: 1000 })).toBe(35);
    expect(chunkBatches({ ...base, counts: [2, 4, 7], remainingBatches: 1000 })).toBe(4);
  });

  it('balances the tail so the chunk ends with the rest of the cohort', () => {
    // 40 batches left, others busy for 10 (rank 1) and 0 (rank 2) more: T = 50 / (1/35 + 2/35 + 3.5/35).
    // The share is ceil(50 · 3.5 / 6.5) = 27; half of it goes out, and the rank returns for the rest.
    const size = chunkBatches({ ...base, rank: 2, remainingBatches: 40, inFlightBatches: [0, 10, 0] });
    expect(size).toBe(Math.ceil(Math.ceil((50 * 3.5) / 6.5) / 2));
    // A share under two minimum chunks goes out whole.
    expect(chunkBatches({ ...base, rank: 2, remainingBatches: 13 })).toBe(7);
  });

  it('balances from the window that would leave less than a round, so no rank takes a remainder alone', () => {
    // Two equal ranks, windows of 30 and 27 batches, 62 in the pool at the epoch's start: a
    // window of 30 would leave 32 (less than the 57 of a round), so each gets half.
    const pair = {
      ...base,
      counts: [30, 27],
      msPerBatch: [20, 20],
      live: [true, true],
      inFlightBatches: [0, 0],
    };
    // Each share is 31, and half of it (16) goes out first.
    const first = chunkBatches({ ...pair, remainingBatches: 62 });
    expect(first).toBe(16);
    expect(
      chunkBatches({ ...pair, rank: 1, remainingBatches: 62 - first, inFlightBatches: [first, 0] }),
    ).toBe(16);
    // With more than a window and a round left, a rank still gets its window.
    expect(chunkBatches({ ...pair, remainingBatches: 87 })).toBe(30);
  });

  it('folds a sub-minimum remainder into the chunk instead of leaving a crumb', () => {
    // One live rank, window 35: a 2-batch remainder would be a crumb, so it rides along.
    expect(chunkBatches({ ...base, rank: 2, live: [false, false, true], remainingBatches: 37 })).toBe(37);
    expect(chunkBatches({ ...base, remainingBatches: 0 })).toBe(0);
  });

  it('gives a rank far slower than the others only its share of the tail, under the minimum', () => {
    // 3 batches left, nothing in flight: the slowest rank (35 ms) would end them with the
    // others in ceil(3 / 6.5) = 1 batch, the fastest (10 ms) in ceil(3 · 3.5 / 6.5) = 2.
    expect(chunkBatches({ ...base, remainingBatches: 3 })).toBe(1);
    expect(chunkBatches({ ...base, rank: 2, remainingBatches: 3 })).toBe(2);
    // A CPU rank beside GPU ranks 40x faster: one batch, where the minimum chunk was 4.
    const mixed = { ...base, counts: [1, 40, 40], msPerBatch: [100, 2.5, 2.5] };
    expect(chunkBatches({ ...mixed, remainingBatches: 30, inFlightBatches: [0, 20, 20] })).toBe(1);
    expect(chunkBatches({ ...base, remainingBatches: 0 })).toBe(0);
  });
});

describe('EpochDispatcher', () => {
  const context = (overrides: Partial<DispatchContext> = {}): DispatchContext => ({
    policy: 'Cadence',
    live: [true, true],
    calibrated: false,
    counts: [10, 10],
    msPerBatch: [0, 0],
    partitionRatios: undefined,
    now: 0,
    ...overrides,
  });
  const make = (progressive: boolean, streamAhead = false) =>
    new EpochDispatcher({
      worldSize: 2,
      totalSamples: 32 * 100 + 5,
      batchSize: 32,
      numEpochs: 3,
      progressive,
      minChunkBatches: 4,
      streamAhead,
    });

  it('hands out whole partitions without progressive dispatch', () => {
    const dispatcher = make(false);
    const plans = dispatcher.startEpoch(0, context({ policy: 'Sync' }));
    expect(plans.map(({ plan }) => [plan.partitionOffset, plan.partitionSize])).toEqual([
      [0, 1600],
      [1600, 1600],
    ]);
    expect(dispatcher.nextChunk(0, context())).toBeUndefined();
  });

  it('keeps one chunk in flight per rank', () => {
    const dispatcher = make(true);
    const [first] = dispatcher.startEpoch(0, context());
    expect(first?.plan.partitionSize).toBe(probeChunkBatches(3205, 2, 32) * 32);
    expect(dispatcher.nextChunk(0, context())).toBeUndefined();
    dispatcher.complete(0, 0, first!.plan.partitionSize);
    expect(dispatcher.nextChunk(0, context())).toBeDefined();
  });

  it('hands a chunk ahead once the one in flight has lookaheadBatches left, one at most', () => {
    const dispatcher = new EpochDispatcher({
      worldSize: 2,
      totalSamples: 32 * 100,
      batchSize: 32,
      numEpochs: 2,
      progressive: true,
      minChunkBatches: 4,
      lookaheadBatches: 2,
      streamAhead: false,
    });
    const ctx = context({ calibrated: true, counts: [10, 10] });
    const [first] = dispatcher.startEpoch(0, ctx);
    expect(first?.plan.partitionSize).toBe(320);
    expect(dispatcher.readyRanks()).toEqual([]);
    for (let batch = 0; batch < 7; batch++) dispatcher.noteBatch(0);
    expect(dispatcher.endsSoon(0)).toBe(false); // 3 batches left
    expect(dispatcher.nextChunk(0, ctx)).toBeUndefined();
    dispatcher.noteBatch(0);
    expect(dispatcher.readyRanks()).toEqual([0]);
    const ahead = dispatcher.nextChunk(0, ctx);
    expect(ahead).toEqual({ epoch: 0, partitionOffset: 320, partitionSize: 320 });
    // Two in flight: no third, however far the first has gone.
    dispatcher.noteBatch(0);
    dispatcher.noteBatch(0);
    expect(dispatcher.nextChunk(0, ctx)).toBeUndefined();
    expect(dispatcher.inFlightBatches(0)).toBe(10);
    // Unassigned 70, rank 1's first chunk 10, rank 0's two chunks less the 10 batches run.
    expect(dispatcher.batchesLeft(0)).toBe(70 + 10 + 10);
    // The first chunk's report leaves the one ahead in flight, none of it run yet.
    dispatcher.complete(0, 0, 320);
    expect(dispatcher.inFlightBatches(0)).toBe(10);
    expect(dispatcher.nextChunk(0, ctx)).toBeUndefined();
    for (let batch = 0; batch < 8; batch++) dispatcher.noteBatch(0);
    expect(dispatcher.nextChunk(0, ctx)?.partitionOffset).toBe(640);
    // A death returns both chunks it held to the pool.
    expect(dispatcher.forfeit(0)).toBe(640);
    expect(dispatcher.inFlightSamples(0)).toBe(0);
  });

  it('hands nothing ahead without lookaheadBatches (one chunk in flight, floDl)', () => {
    const dispatcher = make(true);
    const ctx = context({ calibrated: true, counts: [10, 10] });
    const [first] = dispatcher.startEpoch(0, ctx);
    for (let batch = 0; batch < first!.plan.partitionSize / 32; batch++) dispatcher.noteBatch(0);
    expect(dispatcher.endsSoon(0)).toBe(false);
    expect(dispatcher.readyRanks()).toEqual([]);
    expect(dispatcher.nextChunk(0, ctx)).toBeUndefined();
  });

  it('aggregates epoch N only when all its chunks are reported, in order', () => {
    const dispatcher = make(true);
    const ctx = context({ calibrated: true, counts: [50, 50] });
    const held = new Map(dispatcher.startEpoch(0, ctx).map(({ rank, plan }) => [rank, plan]));
    // Both ranks run their chunks and ask for more until the pool is drained.
    let reported = 0;
    while (dispatcher.pool(0)!.remaining() > 0) {
      for (const rank of [0, 1]) {
        const plan = held.get(rank);
        if (!plan) continue;
        dispatcher.complete(rank, 0, plan.partitionSize);
        reported += plan.partitionSize;
        held.delete(rank);
        const next = dispatcher.nextChunk(rank, ctx);
        if (next) held.set(rank, next);
      }
      expect(dispatcher.nextAggregatable()).toBeUndefined();
    }
    const last = [...held.entries()];
    expect(reported + last.reduce((sum, [, plan]) => sum + plan.partitionSize, 0)).toBe(3200);
    for (const [index, [rank, plan]] of last.entries()) {
      expect(dispatcher.nextAggregatable()).toBeUndefined();
      dispatcher.complete(rank, 0, plan.partitionSize);
      if (index === last.length - 1) expect(dispatcher.nextAggregatable()).toBe(0);
    }
    dispatcher.markAggregated(0);
    expect(dispatcher.activeEpoch).toBe(1);
    expect(dispatcher.complete(0, 0, 32)).toBe(false);
  });

  it('streams one epoch ahead only when allowed (CpuCadence, CpuAsync)', () => {
    for (const streamAhead of [false, true]) {
      const dispatcher = make(true, streamAhead);
      const ctx = context({ calibrated: true, counts: [10, 10] });
      dispatcher.startEpoch(0, ctx);
      // Rank 0 drains the pool while rank 1 keeps its first chunk.
      for (let plan = dispatcher.pool(0)!.outstanding(0)[0]; plan; ) {
        dispatcher.complete(0, 0, plan.size);
        const next = dispatcher.nextChunk(0, ctx);
        if (next?.epoch !== 0) {
          expect(next?.epoch).toBe(streamAhead ? 1 : undefined);
          break;
        }
        plan = { offset: next.partitionOffset, size: next.partitionSize };
      }
      expect(dispatcher.pool(0)!.remaining()).toBe(0);
      expect(dispatcher.nextAggregatable()).toBeUndefined();
    }
  });

  it('re-assigns a dead rank’s unprocessed span to survivors (ExtendPartition)', () => {
    const dispatcher = new EpochDispatcher({
      worldSize: 3,
      totalSamples: 960,
      batchSize: 32,
      numEpochs: 1,
      progressive: false,
      minChunkBatches: 4,
      streamAhead: false,
    });
    const ctx = context({ policy: 'Sync', live: [true, true, true], counts: [1, 1, 1] });
    dispatcher.startEpoch(0, ctx);
    for (let batch = 0; batch < 3; batch++) dispatcher.noteBatch(1);
    dispatcher.forfeit(1, dispatcher.doneInFlightBatches(1));
    const extensions = dispatcher.distributeReclaimed({ ...ctx, live: [true, false, true] });
    // Rank 1 held [320, 640) and ran 3 batches: [416, 640) is split 4 : 3 batches between 0 and 2.
    expect(extensions).toEqual([
      { rank: 0, epoch: 0, offset: 416, size: 128 },
      { rank: 2, epoch: 0, offset: 544, size: 96 },
    ]);
    expect(extensions.reduce((sum, extension) => sum + extension.size, 0)).toBe(320 - 96);
  });
});

import { writeFileSync } from 'node:fs';
import { checkOneOf, checkOptions } from '@flodl/tensor-native';
import { readMetricsLog } from './read-metrics-log.js';
import type { EpochRecord, EvalRecord, MonitorRecord, StepRecord } from './schema.js';

/** Which table {@link metricsCsv} makes. */
export type MetricsCsvTable = 'epochs' | 'steps';

/** Options of {@link metricsCsv} and {@link exportMetricsCsv}. */
export interface MetricsCsvOptions {
  /**
   * `epochs` (default): one row per epoch: `epoch, t, avg_loss, epoch_ms, eval`, every scalar,
   * then per rank `rank<i>_samples_per_s, rank<i>_share, rank<i>_loss, rank<i>_samples`.
   * `steps`: one row per sampled step: `t, rank, step, loss, lr, step_ms, data_ms`.
   */
  table?: MetricsCsvTable;
}

/** A CSV field: numbers as JavaScript prints them, empty for absent, strings quoted when needed. */
function field(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  const text = String(value);
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function rows(table: unknown[][]): string {
  return `${table.map((row) => row.map(field).join(',')).join('\n')}\n`;
}

function epochTable(records: readonly MonitorRecord[]): unknown[][] {
  const epochs = records.filter((record): record is EpochRecord => record.kind === 'epoch');
  const evals = new Map<number, number>();
  for (const record of records)
    if (record.kind === 'eval' && !(record as EvalRecord).error) evals.set(record.epoch, record.metric);
  const scalars = [...new Set(epochs.flatMap((record) => Object.keys(record.metrics.scalars)))].sort();
  const ranks = Math.max(0, ...epochs.map((record) => record.metrics.perRankThroughput.length));
  const header: unknown[] = ['epoch', 't', 'avg_loss', 'epoch_ms', 'eval', ...scalars];
  for (let rank = 0; rank < ranks; rank++)
    header.push(`rank${rank}_samples_per_s`, `rank${rank}_share`, `rank${rank}_loss`, `rank${rank}_samples`);
  const body = epochs.map(({ t, metrics }) => {
    const row: unknown[] = [metrics.epoch, t, metrics.avgLoss, metrics.epochMs, evals.get(metrics.epoch)];
    for (const name of scalars) row.push(metrics.scalars[name]);
    for (let rank = 0; rank < ranks; rank++) {
      const perMs = metrics.perRankThroughput[rank];
      row.push(
        perMs === undefined ? undefined : perMs * 1000,
        metrics.perRankBatchShare[rank],
        metrics.perRankLoss[rank],
        metrics.perRankSamples[rank],
      );
    }
    return row;
  });
  return [header, ...body];
}

function stepTable(records: readonly MonitorRecord[]): unknown[][] {
  const steps = records.filter((record): record is StepRecord => record.kind === 'step');
  return [
    ['t', 'rank', 'step', 'loss', 'lr', 'step_ms', 'data_ms'],
    ...steps.map((step) => [step.t, step.rank, step.step, step.loss, step.lr, step.stepMs, step.dataMs]),
  ];
}

/**
 * A metrics log's records as CSV text (RFC 4180, a header row, `\n` line ends).
 *
 * @throws `ERR_INVALID_ARGUMENT` for an unknown option or table.
 * @example
 * ```ts
 * const csv = metricsCsv(readMetricsLog('run.jsonl').records, { table: 'steps' });
 * ```
 */
export function metricsCsv(records: readonly MonitorRecord[], options: MetricsCsvOptions = {}): string {
  const { table = 'epochs' } = checkOptions('metricsCsv', options, ['table']);
  checkOneOf('metricsCsv', 'table', table, ['epochs', 'steps']);
  return rows(table === 'steps' ? stepTable(records) : epochTable(records));
}

/**
 * Reads the metrics log at `logPath` and writes it as CSV to `csvPath` (see {@link metricsCsv}).
 *
 * @throws `ERR_IO` when the log cannot be read; `ERR_INVALID_ARGUMENT` for bad options.
 */
export function exportMetricsCsv(logPath: string, csvPath: string, options: MetricsCsvOptions = {}): void {
  const text = metricsCsv(readMetricsLog(logPath).records, options);
  writeFileSync(csvPath, text);
}

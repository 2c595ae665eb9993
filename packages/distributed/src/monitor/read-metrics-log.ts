import { readFileSync } from 'node:fs';
import { FlodlError } from '@flodl/tensor-native';
import { fileError } from './io-error.js';
import {
  METRICS_LOG_VERSION,
  MONITOR_RECORD_KINDS,
  type MonitorRecord,
  type RunStartRecord,
} from './schema.js';

/** A metrics log as read back. */
export interface MetricsLogContents {
  /** The first line. */
  header: RunStartRecord;
  /** Every record after it whose kind this version knows, in order. */
  records: MonitorRecord[];
  /** The last line was cut (the writer died mid-line, or the run is still writing): it was left out. */
  truncated: boolean;
  /** Lines of kinds this version does not know (a newer writer), skipped. */
  skipped: number;
}

const KNOWN = new Set<string>(MONITOR_RECORD_KINDS);

function logError(path: string, problem: string, expected: string, got: string): FlodlError {
  return new FlodlError('ERR_IO', `${path}: ${problem}`, { op: 'readMetricsLog', expected, got });
}

/**
 * Parses the text of a metrics log (see {@link readMetricsLog}); `source` names it in errors.
 *
 * @throws `ERR_IO` for an empty log, a first line that is not a `run` record, a newer major
 *   version, or a malformed line before the last.
 */
export function parseMetricsLog(text: string, source = 'metrics log'): MetricsLogContents {
  const lines = text.split('\n');
  // A complete log ends with '\n': the last piece is then empty.
  const last = lines.pop() ?? '';
  let truncated = false;
  if (last.length > 0) {
    try {
      JSON.parse(last);
      lines.push(last);
    } catch {
      truncated = true;
    }
  }
  const parsed: unknown[] = [];
  lines.forEach((line, index) => {
    if (line.length === 0) return;
    try {
      parsed.push(JSON.parse(line));
    } catch {
      throw logError(source, `line ${index + 1} is not JSON`, 'one JSON object per line', line.slice(0, 60));
    }
  });
  const header = parsed[0] as Partial<RunStartRecord> | undefined;
  if (header?.kind !== 'run')
    throw logError(
      source,
      'not a flodl metrics log',
      'a first line of kind "run"',
      JSON.stringify(header)?.slice(0, 60) ?? 'an empty file',
    );
  if (typeof header.version !== 'number' || header.version > METRICS_LOG_VERSION)
    throw logError(
      source,
      'written by a newer flodl',
      `schema version ${METRICS_LOG_VERSION} or lower`,
      `${String(header.version)} (update @flodl/distributed to read it)`,
    );
  const records: MonitorRecord[] = [];
  let skipped = 0;
  for (const value of parsed.slice(1)) {
    const kind = (value as { kind?: unknown } | null)?.kind;
    if (typeof kind === 'string' && KNOWN.has(kind)) records.push(value as MonitorRecord);
    else skipped += 1;
  }
  return { header: header as RunStartRecord, records, truncated, skipped };
}

/**
 * Reads a metrics log written by {@link metricsLog}: the header, the records, and whether the
 * last line was cut (tolerated: a run still writing, or one that died, reads fine).
 *
 * @throws `ERR_IO` when the file cannot be read or is not a metrics log (see {@link parseMetricsLog}).
 * @example
 * ```ts
 * const { records } = readMetricsLog('runs/mnist.jsonl');
 * const losses = records.flatMap((r) => (r.kind === 'epoch' ? [r.metrics.avgLoss] : []));
 * ```
 */
export function readMetricsLog(path: string): MetricsLogContents {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw fileError('readMetricsLog', path, 'cannot read the metrics log', 'a readable file', error);
  }
  return parseMetricsLog(text, path);
}

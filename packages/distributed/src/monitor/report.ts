import { writeFile } from 'node:fs/promises';
import { checkOptions, invalidArgument } from '@flodl/tensor-native';
import { fileError } from './io-error.js';
import { renderPage } from './page.js';
import { pageAssets } from './page-assets.js';
import { type MetricsLogContents, readMetricsLog } from './read-metrics-log.js';
import { RunRecorder } from './run-recorder.js';
import { RunState } from './run-state.js';

/** Options of {@link saveReport}. */
export interface ReportOptions {
  /** The run: a metrics log's path, a log already read, or a live recorder (a running run). */
  from: string | MetricsLogContents | RunRecorder;
  /** Page title. Default the run's name, or `flodl run`. */
  title?: string;
}

/**
 * Writes a run (finished, or still running) as one self-contained HTML file: the dashboard's
 * charts, rank table and timeline, its script, styles, uPlot and the data inline. It opens from
 * disk with no server and no network.
 *
 * @throws `ERR_INVALID_ARGUMENT` for bad options; `ERR_IO` when the log cannot be read or the
 *   file cannot be written.
 * @example
 * ```ts
 * await saveReport('runs/mnist.html', { from: 'runs/mnist.jsonl' });
 * ```
 */
export async function saveReport(path: string, options: ReportOptions): Promise<void> {
  checkOptions('saveReport', options, ['from', 'title']);
  if (typeof path !== 'string' || path.length === 0)
    throw invalidArgument('saveReport', 'path', 'a file path', path);
  const { from } = options;
  let snapshot: RunState['snapshot'];
  if (from instanceof RunRecorder) snapshot = from.state.snapshot;
  else if (typeof from === 'string' || (typeof from === 'object' && from !== null && 'header' in from)) {
    const contents = typeof from === 'string' ? readMetricsLog(from) : from;
    const state = new RunState();
    state.apply(contents.header);
    for (const record of contents.records) state.apply(record);
    snapshot = state.snapshot;
  } else
    throw invalidArgument('saveReport', 'from', 'a metrics log path, its contents or a RunRecorder', from);
  const title = options.title ?? snapshot.run?.name ?? 'flodl run';
  const html = renderPage(title, { kind: 'report', state: snapshot }, await pageAssets());
  try {
    await writeFile(path, html);
  } catch (error) {
    throw fileError('saveReport', path, 'cannot write the report', 'a writable file path', error);
  }
}

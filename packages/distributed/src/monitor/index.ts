// monitor: watching a run from the launcher: the metrics log (JSON Lines, CSV), the recorder that
// a coordinator host or a trainer feeds, the live dashboard and the saved HTML report.
export {
  type Dashboard,
  type DashboardOptions,
  isLoopback,
  startDashboard,
} from './dashboard.js';
export { exportMetricsCsv, type MetricsCsvOptions, type MetricsCsvTable, metricsCsv } from './metrics-csv.js';
export { MetricsLog, type MetricsLogOptions, metricsLog, type RunInfo } from './metrics-log.js';
export { type Observation, observe } from './observe.js';
export { type MetricsLogContents, parseMetricsLog, readMetricsLog } from './read-metrics-log.js';
export { type ReportOptions, saveReport } from './report.js';
export { type RecordListener, RunRecorder, type RunRecorderOptions } from './run-recorder.js';
export {
  type RankStatus,
  type RankStatusKind,
  RUN_STATE_LIMIT,
  RunState,
  type RunStateSnapshot,
  type TimelineRecord,
} from './run-state.js';
export {
  type AnchorRecord,
  type CheckpointRecord,
  type ElcheRecord,
  type EpochRecord,
  type EvalRecord,
  type ExitRecord,
  type FinishedRecord,
  type FormedRecord,
  METRICS_LOG_VERSION,
  MONITOR_RECORD_KINDS,
  type MonitorRecord,
  type MonitorRecordInput,
  type MonitorRecordKind,
  type RankDeathLogRecord,
  type ReformRecord,
  type RoundRecord,
  type RoundStartRecord,
  type RunStartRecord,
  type StepRecord,
} from './schema.js';

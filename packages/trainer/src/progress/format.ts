// The progress display's text: pure functions from what the run reported to one line each, shared
// by the terminal renderer (a bar redrawn in place) and the plain one (a line every few seconds).

/** Where an epoch stands, as the display shows it. */
export interface StepView {
  /** 0-based epoch. */
  epoch: number;
  /** Planned epochs, when known. */
  epochs?: number;
  /** Batches (or chunks) done in this epoch, 1-based after the first step. */
  batch: number;
  /** Batches in this epoch. */
  batches: number;
  samplesPerSec: number;
  /** The smoothed loss; `null` before the first finite one. */
  loss: number | null;
  /** Time left in this epoch, ms (`null`: not known yet). */
  epochEtaMs: number | null;
  /** Time left in the run, ms (`null`: not known). */
  runEtaMs: number | null;
  /** The latest eval result, shown until the next. */
  lastEval?: EvalView;
}

/** An eval result. */
export interface EvalView {
  epoch: number;
  metric: number;
  /** What the metric is, e.g. `accuracy`. Default `eval`. */
  name?: string;
}

/** One rank's part of the cluster line. */
export interface RankView {
  rank: number;
  /** Fraction of the epoch's batches it ran, in [0, 1]. */
  share: number;
  samplesPerSec: number;
  /** Dead, or not started. */
  down?: boolean;
}

/** A finished epoch. */
export interface EpochView {
  epoch: number;
  epochs?: number;
  /** Mean training loss of the epoch. */
  loss: number;
  durationMs: number;
  samplesPerSec?: number;
  /** Further named values to show (e.g. `lr`). */
  metrics?: Record<string, number>;
}

/** `59s`, `4:05`, `1:02:03`; `--` when not known. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '--';
  const total = Math.round(ms / 1000);
  if (total < 60) return `${total}s`;
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
}

/** Samples/s with a k or M suffix past 10 000: `912/s`, `4.5k/s`, `1.2M/s`. */
export function formatRate(perSec: number): string {
  if (!Number.isFinite(perSec) || perSec < 0) return '--/s';
  if (perSec >= 1e7) return `${(perSec / 1e6).toFixed(1)}M/s`;
  if (perSec >= 1e4) return `${(perSec / 1e3).toFixed(1)}k/s`;
  return `${Math.round(perSec)}/s`;
}

/** A loss or metric with 4 significant digits (`0.4321`, `12.35`, `1.235e-5`); `--` for none. */
export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined) return '--';
  if (!Number.isFinite(value)) return String(value);
  if (value !== 0 && Math.abs(value) < 1e-3) return value.toExponential(3);
  return String(Number(value.toPrecision(4)));
}

function epochLabel(epoch: number, epochs: number | undefined): string {
  return epochs === undefined ? `epoch ${epoch + 1}` : `epoch ${epoch + 1}/${epochs}`;
}

function evalText(view: EvalView | undefined): string | undefined {
  return view ? `${view.name ?? 'eval'} ${formatValue(view.metric)} (epoch ${view.epoch + 1})` : undefined;
}

/**
 * The step line: `epoch 2/5 [bar] 120/469 · 4.5k/s · loss 0.4321 · eta 0:23 (run 2:10) · eval 0.88 (epoch 1)`.
 * `bar` is the drawn bar (the terminal renderer's), left out when absent (plain lines).
 */
export function formatStepLine(view: StepView, bar?: string): string {
  const width = String(view.batches).length;
  const parts = [
    `${epochLabel(view.epoch, view.epochs)}${bar === undefined ? '' : ` ${bar}`} ${String(view.batch).padStart(width)}/${view.batches}`,
    formatRate(view.samplesPerSec),
    `loss ${formatValue(view.loss)}`,
    `eta ${formatDuration(view.epochEtaMs)}${view.runEtaMs === null ? '' : ` (run ${formatDuration(view.runEtaMs)})`}`,
  ];
  const evaluated = evalText(view.lastEval);
  if (evaluated) parts.push(evaluated);
  return parts.join(' · ');
}

/** The cluster line: `ranks 0: 63.8% 1.6k/s · 1: 36.2% 896/s · 2: down`. */
export function formatClusterLine(ranks: readonly RankView[]): string {
  const parts = ranks.map((rank) =>
    rank.down
      ? `${rank.rank}: down`
      : `${rank.rank}: ${(rank.share * 100).toFixed(1)}% ${formatRate(rank.samplesPerSec)}`,
  );
  return `ranks ${parts.join(' · ')}`;
}

/** The epoch line: `epoch 2/5 done · loss 0.4321 · 12s · 4.5k/s · lr 0.001`. */
export function formatEpochLine(view: EpochView): string {
  const parts = [
    `${epochLabel(view.epoch, view.epochs)} done`,
    `loss ${formatValue(view.loss)}`,
    formatDuration(view.durationMs),
  ];
  if (view.samplesPerSec !== undefined) parts.push(formatRate(view.samplesPerSec));
  for (const [name, value] of Object.entries(view.metrics ?? {})) parts.push(`${name} ${formatValue(value)}`);
  return parts.join(' · ');
}

/** The eval line: `eval epoch 2 · accuracy 0.8812`. */
export function formatEvalLine(view: EvalView): string {
  return `eval epoch ${view.epoch + 1} · ${view.name ?? 'eval'} ${formatValue(view.metric)}`;
}

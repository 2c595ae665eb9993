// The verdict and the printed report of `pnpm bench:ddp`: each run against the fastest rank
// alone, its ideal ratio, and where the time went when it falls short.
import type { RankPart, RunResult } from './ddp-run.js';
import { describeThreadUse } from './ddp-threads.js';

/** Fraction of the ideal ratio a run must reach (1.35x of 1.5x; 1.8x of 2x). */
export const RATIO_TARGET = 0.9;
/** Largest accuracy drop below the fastest rank alone, in percentage points. */
export const ACCURACY_TARGET_POINTS = 0.5;

/**
 * The references, shown beside the runs but not held to the targets: `apart` (one plain training
 * per rank at once, no cluster) and PyTorch's `pytorch-alone` and `pytorch-ddp` (same model,
 * data and settings; DistributedDataParallel over Gloo).
 */
export function isReference(mode: string): boolean {
  return mode === 'apart' || mode.startsWith('pytorch-');
}

/** Whether `devices` mix kinds (a CPU rank beside a GPU rank). */
export function mixedDevices(devices: readonly string[]): boolean {
  return new Set(devices.map((device) => device.replace(/:\d+$/, ''))).size > 1;
}

const LABELS: Record<string, string> = {
  alone: 'fastest alone',
  'pytorch-alone': 'PyTorch alone',
  'pytorch-ddp': 'PyTorch DDP',
};

/** A run with its comparison to the fastest rank alone. */
export interface Assessed extends RunResult {
  /** samples/s over the fastest rank alone's (training time). */
  ratio: number;
  /** The same by wall time (run() to join(), rank start-up included). */
  ratioWall: number;
  /**
   * What the ranks' speeds allow: Σ speeds / fastest, or for Sync ranks × slowest / fastest;
   * on mixed devices the speeds are the ranks' measured compute rates.
   */
  ideal: number;
  /**
   * The same from what the ranks' compute measured in this run against the fastest rank alone's:
   * below `ideal` where ranks sharing a machine slow each other down (cores, caches, memory).
   */
  measuredIdeal: number;
  /** ratio / ideal. */
  efficiency: number;
  /**
   * ratio / the ratio of the reference `apart` (one plain training per rank, all at once, no
   * cluster): the share of what the machine gives that many trainings that the run reached.
   */
  ofApart?: number;
  /** accuracy − the fastest rank alone's, percentage points. */
  accuracyDelta: number;
  /** Whether ratio ≥ RATIO_TARGET × ideal and the accuracy is within ACCURACY_TARGET_POINTS. */
  met: boolean;
  /** Where the time went (every run with several ranks; printed when `met` is false). */
  timeWent: string[];
}

/** A rank's samples per ms of compute (the pacing idle included). */
function computeRate(part: RankPart): number {
  return part.computeMs > 0 ? part.samples / part.computeMs : 0;
}

/**
 * Compares `run` with `alone` (the fastest rank alone; a run compared with itself has ratio 1)
 * and, when given, with `apart` (as many plain trainings at once, no cluster).
 */
export function assess(run: RunResult, alone: RunResult, apart?: Assessed): Assessed {
  // DDP averages the gradients at every step: like Sync, it goes at its slowest rank's pace.
  const sync = run.mode.endsWith('Sync') || run.mode === 'pytorch-ddp';
  // Ranks on one kind of device go at their given speeds; on different kinds (a CPU rank beside
  // a GPU rank) at what their compute measured: samples per second of compute, pacing included.
  const mixed = mixedDevices(run.devices);
  const rates = run.perRank.map(computeRate);
  const speeds = mixed ? rates : run.speeds;
  // What ranks at these speeds train together: Sync goes at its slowest rank's pace.
  const capacity = (values: number[]) =>
    sync ? run.ranks * Math.min(...values) : values.reduce((a, b) => a + b, 0);
  const single = run.ranks === 1;
  const ideal = single ? 1 : capacity(speeds) / Math.max(...speeds);
  const aloneRate = alone.perRank[0] === undefined ? 0 : computeRate(alone.perRank[0]);
  // PyTorch's compute is not flodl's: its measured ideal is against its own alone, not set here.
  const measuredIdeal =
    single || aloneRate === 0 || run.mode.startsWith('pytorch-') ? 1 : capacity(rates) / aloneRate;
  const ratio = run.samplesPerSec / alone.samplesPerSec;
  const ratioWall = run.samples / run.wallMs / (alone.samples / alone.wallMs);
  const accuracyDelta = (run.accuracy - alone.accuracy) * 100;
  const met = ratio >= RATIO_TARGET * ideal && accuracyDelta >= -ACCURACY_TARGET_POINTS;
  const ofApart = apart === undefined ? undefined : ratio / apart.ratio;
  const timeWent =
    run.mode === 'alone' || isReference(run.mode)
      ? []
      : [
          ...run.perRank.map((part) => {
            const spent = part.computeMs + part.dataMs + part.waitMs || 1;
            const pct = (ms: number) => `${((ms / spent) * 100).toFixed(0)}%`;
            return (
              `rank ${part.rank} (speed ${part.speed}): compute ${pct(part.computeMs)} ` +
              `(pacing idle ${pct(part.paceIdleMs)}), data ${pct(part.dataMs)}, ` +
              `the rest (reports, control, plan waits, averaging) ${pct(part.waitMs)}; ` +
              (run.mode.endsWith('Sync')
                ? `done with its share at ${(part.shareDone * 100).toFixed(0)}% of the epoch; `
                : '') +
              `work ${part.workPerStepMs.toFixed(1)} ms a step` +
              (part.warmStepMs > 0 ? ` (${part.warmStepMs.toFixed(1)} ms warm, the pace's base)` : '')
            );
          }),
          `${run.rounds} averaging rounds, ${(run.averagingMs / 1000).toFixed(2)} s from round start to done ` +
            `(${((run.averagingMs / run.trainMs) * 100).toFixed(1)}% of training time); ` +
            `rank start-up and shutdown ${((run.wallMs - run.trainMs) / 1000).toFixed(1)} s`,
          `shares by epoch: ${epochShares(run.epochShares)}`,
          ...(run.threads === undefined
            ? []
            : [
                `threads over epochs ${run.threads.fromEpoch}-${run.threads.toEpoch}: ${describeThreadUse(run.threads.uses)}`,
              ]),
          ...(apart?.threads === undefined
            ? []
            : [`threads of the trainings apart: ${describeThreadUse(apart.threads.uses)}`]),
          ...(apart === undefined || ofApart === undefined
            ? []
            : [
                `${apart.ranks} plain trainings at once (apart, no cluster) reached ${apart.ratio.toFixed(2)}x alone ` +
                  `on this machine: this run reached ${(ofApart * 100).toFixed(0)}% of that`,
              ]),
        ];
  const reference = alone.aloneRuns === undefined ? {} : { aloneRuns: alone.aloneRuns };
  return {
    ...run,
    ...reference,
    ...(ofApart === undefined ? {} : { ofApart }),
    ratio,
    ratioWall,
    ideal,
    measuredIdeal,
    efficiency: ratio / ideal,
    accuracyDelta,
    met,
    timeWent,
  };
}

/** `50/50, 64/36, …` (the first five epochs and the last). */
function epochShares(shares: number[][]): string {
  const shown = shares.length > 6 ? [...shares.slice(0, 5), shares.at(-1) as number[]] : shares;
  const text = shown.map((epoch) => epoch.map((share) => (share * 100).toFixed(0)).join('/'));
  if (shares.length > 6) text.splice(5, 0, '…');
  return text.join(', ');
}

interface Report {
  machine: string;
  settings: { samples: number; epochs: number; split: string; holdout: number; batchSize: number };
  runs: Assessed[];
  skipped: { model: string; mode: string; reason: string }[];
}

function pad(cells: string[], widths: number[]): string {
  return cells
    .map((cell, index) => (index < 2 ? cell.padEnd(widths[index]!) : cell.padStart(widths[index]!)))
    .join('  ');
}

/** Prints the table, the skipped modes and, for each run that missed its target, where its time went. */
export function printReport(report: Report): void {
  const { settings } = report;
  const heldOut =
    settings.split === 'test' ? `the last ${settings.holdout} test images (held out)` : 'the test split';
  console.log(
    `bench:ddp on ${report.machine}: ${settings.samples} ${settings.split} images × ${settings.epochs} epochs, ` +
      `batch ${settings.batchSize} per rank; evaluated on ${heldOut}`,
  );
  const header = [
    'model',
    'mode',
    'speeds',
    'wall s',
    'train s',
    'samples/s',
    'x alone',
    'ideal',
    'measured',
    'of apart',
    'wall x',
    'acc %',
    'Δ pts',
    'loss',
    'rounds',
    'avg s',
    'shares',
    'target',
  ];
  const rows = report.runs.map((run) => [
    run.model,
    LABELS[run.mode] ?? (run.mode === 'apart' ? `${run.ranks} apart` : run.mode),
    run.devices.every((device) => device === 'cpu')
      ? run.speeds.join(',')
      : `${run.speeds.join(',')} on ${run.devices.join(',')}`,
    (run.wallMs / 1000).toFixed(1),
    (run.trainMs / 1000).toFixed(1),
    run.samplesPerSec.toFixed(0),
    run.ratio.toFixed(2),
    run.ideal.toFixed(2),
    run.mode.startsWith('pytorch-') ? '—' : run.measuredIdeal.toFixed(2),
    run.ofApart === undefined ? '' : `${(run.ofApart * 100).toFixed(0)}%`,
    run.ratioWall.toFixed(2),
    ...(run.mode === 'apart'
      ? ['—', '—', '—']
      : [(run.accuracy * 100).toFixed(2), run.accuracyDelta.toFixed(2), run.loss.toFixed(4)]),
    String(run.rounds),
    (run.averagingMs / 1000).toFixed(2),
    run.perRank.map((part) => `${(part.share * 100).toFixed(0)}%`).join('/'),
    run.mode === 'alone' ? '' : isReference(run.mode) ? 'reference' : run.met ? 'met' : 'MISSED',
  ]);
  const widths = header.map((cell, index) => Math.max(cell.length, ...rows.map((row) => row[index]!.length)));
  console.log(pad(header, widths));
  for (const row of rows) console.log(pad(row, widths));
  console.log(
    `target: x alone ≥ ${RATIO_TARGET} × ideal (Sync is paced by its slowest rank) and accuracy within ${ACCURACY_TARGET_POINTS} points; ` +
      `measured: the ideal from the ranks' compute rates in the run over the fastest rank alone's; ` +
      `apart: one plain training per rank, all at once with no cluster (what the machine gives them); ` +
      `of apart: x alone over apart's`,
  );
  for (const run of report.runs) {
    if (run.mode !== 'alone' || run.aloneRuns === undefined) continue;
    const speeds = run.aloneRuns;
    const spread = (Math.max(...speeds) / Math.min(...speeds) - 1) * 100;
    console.log(
      `${run.model} fastest alone, before the first mode and after each: ${speeds.map((v) => v.toFixed(0)).join(', ')} ` +
        `samples/s (${spread.toFixed(1)}% apart); each mode is compared with the mean of the two around it`,
    );
  }
  for (const skip of report.skipped) console.log(`skipped ${skip.model} ${skip.mode}: ${skip.reason}`);
  for (const model of new Set(report.runs.map((run) => run.model))) {
    const line = pytorchLine(report.runs.filter((run) => run.model === model));
    if (line !== undefined) console.log(line);
  }
  for (const run of report.runs.filter((r) => r.mode !== 'alone' && !isReference(r.mode) && !r.met)) {
    console.log(`${run.model} ${run.mode} missed its target; where the time went:`);
    for (const line of run.timeWent) console.log(`  ${line}`);
  }
}

/** One model's PyTorch reference in words: DDP over its own alone, and flodl's runs over DDP. */
function pytorchLine(runs: Assessed[]): string | undefined {
  const alone = runs.find((run) => run.mode === 'pytorch-alone');
  const ddp = runs.find((run) => run.mode === 'pytorch-ddp');
  const flodl = runs.filter((run) => !isReference(run.mode) && run.mode !== 'alone');
  if (alone === undefined || ddp === undefined) return undefined;
  const best = flodl.sort((a, b) => b.samplesPerSec - a.samplesPerSec)[0];
  const gpu = ddp.devices.some((device) => device.startsWith('cuda'));
  const [where, backend] = gpu ? [ddp.devices.join(', '), 'NCCL'] : [`BLAS: ${ddp.blas}`, 'Gloo'];
  return (
    `${ddp.model} PyTorch ${ddp.torch} (${where}): DDP over ${backend} ${(ddp.samplesPerSec / alone.samplesPerSec).toFixed(2)}x ` +
    `its own alone (ideal ${ddp.ideal.toFixed(2)}, acc ${(ddp.accuracy * 100).toFixed(2)}%); PyTorch alone ${alone.ratio.toFixed(2)}x flodl alone` +
    (best === undefined
      ? ''
      : `; flodl ${best.mode} ${(best.samplesPerSec / ddp.samplesPerSec).toFixed(2)}x PyTorch DDP`)
  );
}

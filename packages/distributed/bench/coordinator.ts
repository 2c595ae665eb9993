// `pnpm bench:coordinator`: the ElChe coordinator at scale, by simulation. A SimulatedCluster of
// 64, 256 and 1024 ranks of mixed speeds trains through a real ClusterCoordinator; every input
// it handles is timed. Reports the coordinator's CPU time per round and per rank report, the
// time from the report that closes a window to the round's start (the decision), the time to
// finish a round, and the coordinator's retained memory. `--json FILE` writes the numbers.
//
//   pnpm bench:coordinator -- [--ranks 64,256,1024] [--modes CpuCadence,NcclCadence,CpuAsync]
//                             [--batches N] [--repeats N] [--json FILE]
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { CoordinatorInput, CoordinatorOutput, ElCheMode } from '../src/coordinator/index.js';
import { SimulatedCluster, type SimulatedRankSpec } from '../src/coordinator/index.js';
import { fmt, intOption, median, nowMs, parseArgs, table, writeJson } from './stats.js';

/** Options of {@link runCoordinatorBench}. */
export interface CoordinatorBenchOptions {
  /** Cluster sizes. Default [64, 256, 1024]. */
  ranks?: readonly number[];
  /** ElChe modes. Default CpuCadence, NcclCadence, CpuAsync. */
  modes?: readonly ElCheMode[];
  /** Batches of the slowest rank per epoch (sets the run's length). Default 120. */
  batches?: number;
  /** Runs per setting; the medians across runs are reported. Default 3. */
  repeats?: number;
  print?: boolean;
}

/** One setting's figures (medians across repeats). */
export interface CoordinatorBenchRow {
  mode: ElCheMode;
  ranks: number;
  rounds: number;
  /** Rank reports (Batch, Metrics, SnapshotReady / SyncAck) handled per round. */
  reportsPerRound: number;
  /** Coordinator CPU per round, every input included (ticks, heartbeats), ms. */
  cpuPerRoundMs: number;
  /** Mean coordinator CPU per rank report, µs. */
  perReportUs: number;
  /** Median and 99th percentile per rank report, µs. */
  medianReportUs: number;
  p99ReportUs: number;
  /** The slowest rank report, µs. */
  maxReportUs: number;
  /** Handling the report that closed the cohort's windows up to the round's start, ms (median). */
  decisionMs: number;
  /** Handling the report that completed a round (the feedback and the next window's plan), ms (median). */
  finishMs: number;
  /** Heap the coordinator retains after the run, bytes. */
  heapBytes: number;
  heapBytesPerRank: number;
  /** Simulated training time, ms, and the wall time of the run. */
  simulatedMs: number;
  wallMs: number;
}

const REPORTS = new Set(['Batch', 'Metrics', 'SnapshotReady', 'SyncAck']);

/** Mixed speeds: a fifth of the ranks at 4× the slowest's time per batch, the rest spread in between. */
export function mixedSpeeds(ranks: number): SimulatedRankSpec[] {
  return Array.from({ length: ranks }, (_, rank) => ({
    msPerBatch: rank % 5 === 0 ? 40 : 10 + ((rank * 7919) % 23),
    jitter: 0.03,
    dataMs: 0.5,
  }));
}

function percentile(values: number[], fraction: number): number {
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

type Figures = Omit<CoordinatorBenchRow, 'mode' | 'ranks'>;

function simulate(mode: ElCheMode, ranks: number, batches: number): Figures {
  const before = heapUsed();
  const { coordinator, figures } = simulateRun(mode, ranks, batches);
  // What stays reachable from the coordinator alone (the simulation and its records dropped).
  const heapBytes = Math.max(0, heapUsed() - before);
  if (coordinator.state !== 'finished') throw new Error(`${mode} with ${ranks} ranks did not finish`);
  return { ...figures, heapBytes, heapBytesPerRank: heapBytes / ranks };
}

function simulateRun(
  mode: ElCheMode,
  ranks: number,
  batches: number,
): {
  coordinator: SimulatedCluster['coordinator'];
  figures: Omit<Figures, 'heapBytes' | 'heapBytesPerRank'>;
} {
  const wallStart = nowMs();
  const cluster = new SimulatedCluster({
    ranks: mixedSpeeds(ranks),
    syncMs: 20,
    reduceMs: 20,
    seed: ranks,
    coordinator: { totalSamples: ranks * 32 * batches, batchSize: 32, numEpochs: 2, elche: { mode } },
  });
  const coordinator = cluster.coordinator;
  const handle = coordinator.handle.bind(coordinator);
  let totalMs = 0;
  let reports = 0;
  let reportMs = 0;
  let maxReportMs = 0;
  const reportTimes: number[] = [];
  const decisions: number[] = [];
  const finishes: number[] = [];
  coordinator.handle = (input: CoordinatorInput): CoordinatorOutput => {
    const start = nowMs();
    const output = handle(input);
    const elapsed = nowMs() - start;
    totalMs += elapsed;
    if (REPORTS.has(input.type)) {
      reports += 1;
      reportMs += elapsed;
      reportTimes.push(elapsed);
      if (elapsed > maxReportMs) maxReportMs = elapsed;
    }
    for (const notice of output.notices) {
      if (notice.type === 'AveragingStarted') decisions.push(elapsed);
      else if (notice.type === 'Averaged') finishes.push(elapsed);
    }
    return output;
  };
  const result = cluster.run();
  const wallMs = nowMs() - wallStart;
  if (!result.finished) throw new Error(`${mode} with ${ranks} ranks did not finish`);
  const rounds = finishes.length;
  const simulatedMs = result.timeMs;
  coordinator.handle = handle;
  const figures = {
    rounds,
    reportsPerRound: reports / rounds,
    cpuPerRoundMs: totalMs / rounds,
    perReportUs: (reportMs / reports) * 1000,
    medianReportUs: median(reportTimes) * 1000,
    p99ReportUs: percentile(reportTimes, 0.99) * 1000,
    maxReportUs: maxReportMs * 1000,
    decisionMs: median(decisions),
    finishMs: median(finishes),
    simulatedMs,
    wallMs,
  };
  return { coordinator, figures };
}

/** Runs the benchmark; see the file's head. */
export function runCoordinatorBench(options: CoordinatorBenchOptions = {}): CoordinatorBenchRow[] {
  const print = options.print ?? true;
  const sizes = options.ranks ?? [64, 256, 1024];
  const modes = options.modes ?? (['CpuCadence', 'NcclCadence', 'CpuAsync'] as const);
  const batches = options.batches ?? 120;
  const repeats = options.repeats ?? 3;
  const rows: CoordinatorBenchRow[] = [];
  for (const mode of modes) {
    for (const ranks of sizes) {
      const runs = Array.from({ length: repeats }, () => simulate(mode, ranks, batches));
      const pick = (key: keyof (typeof runs)[number]): number => median(runs.map((run) => run[key]));
      const row: CoordinatorBenchRow = {
        mode,
        ranks,
        rounds: pick('rounds'),
        reportsPerRound: pick('reportsPerRound'),
        cpuPerRoundMs: pick('cpuPerRoundMs'),
        perReportUs: pick('perReportUs'),
        medianReportUs: pick('medianReportUs'),
        p99ReportUs: pick('p99ReportUs'),
        maxReportUs: pick('maxReportUs'),
        decisionMs: pick('decisionMs'),
        finishMs: pick('finishMs'),
        heapBytes: pick('heapBytes'),
        heapBytesPerRank: pick('heapBytesPerRank'),
        simulatedMs: pick('simulatedMs'),
        wallMs: pick('wallMs'),
      };
      rows.push(row);
      if (print)
        console.log(
          `  ${mode} ${ranks} ranks: ${fmt(row.perReportUs)} µs/report, ${fmt(row.wallMs)} ms wall`,
        );
    }
  }
  if (print) {
    console.log('');
    console.log(
      table(
        [
          'mode',
          'ranks',
          'rounds',
          'reports/round',
          'CPU/round ms',
          'µs/report (mean)',
          'median µs',
          'p99 µs',
          'decision ms',
          'finish ms',
          'heap KiB',
          'B/rank',
        ],
        rows.map((row) => [
          row.mode,
          String(row.ranks),
          String(row.rounds),
          fmt(row.reportsPerRound),
          fmt(row.cpuPerRoundMs),
          fmt(row.perReportUs),
          fmt(row.medianReportUs),
          fmt(row.p99ReportUs),
          fmt(row.decisionMs),
          fmt(row.finishMs),
          fmt(row.heapBytes / 1024),
          fmt(row.heapBytesPerRank),
        ]),
      ),
    );
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const list = (name: string): string[] | undefined => args.get(name)?.split(',').filter(Boolean);
  const rows = runCoordinatorBench({
    ...(list('ranks') ? { ranks: list('ranks')!.map(Number) } : {}),
    ...(list('modes') ? { modes: list('modes') as ElCheMode[] } : {}),
    batches: intOption(args, 'batches', 120),
    repeats: intOption(args, 'repeats', 3),
  });
  writeJson(args.get('json'), {
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? 'unknown', node: process.version },
    rows,
  });
}

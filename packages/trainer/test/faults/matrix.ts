// The fault suite's scenarios and what every one of them must end with. Shared by the test
// (`rank-faults.test.ts`, a subset that covers each fault kind and each mode) and the soak
// script (`soak.ts`, the whole matrix, printing the README's table).
import { join } from 'node:path';
import type { LaunchMode } from '@flodl/distributed';
import { Linear, load, ReLU, Sequential } from '@flodl/nn';
import { readCheckpoint } from '../../src/index.js';
import type { Fault, FaultConfig } from './fault-script.js';
import type { ScenarioOutcome } from './scenario.js';

export const MODES: LaunchMode[] = ['CpuSync', 'CpuCadence', 'CpuAsync', 'NcclSync', 'NcclCadence'];

/** The run's liveness setting in the suite: short, so that a hung rank costs seconds. */
export const LIVENESS_MS = 3_000;
/** How long after the fault the run may take to end (survivors finished, or saved and exited). */
export const RECOVERY_BOUND_MS = LIVENESS_MS + 5_000;

/** One scripted scenario. */
export interface Scenario {
  name: string;
  mode: LaunchMode;
  fault: Fault;
  config: Omit<FaultConfig, 'dir' | 'out'>;
}

const TOTAL_SAMPLES = 480;
const NUM_EPOCHS = 2;

function scenario(name: string, mode: LaunchMode, fault: Fault, extra: Partial<FaultConfig> = {}): Scenario {
  return {
    name,
    mode,
    fault,
    config: {
      mode,
      totalSamples: TOTAL_SAMPLES,
      batchSize: 8,
      numEpochs: NUM_EPOCHS,
      livenessMs: LIVENESS_MS,
      checkpointEvery: 1,
      fault,
      ...extra,
    },
  };
}

/**
 * Where the round faults and the throw land: the rank's 2nd step of the first epoch (the
 * first round after it, whichever epoch's chunk the rank holds by then). The first epoch is
 * the one whose steps a rank is sure to train: its first chunk (the probe, 4 batches here) is
 * handed out at formation, while a later epoch's chunks go to whichever rank asks first, so a
 * rank descheduled across an epoch boundary on a loaded machine may get one batch of that
 * epoch's tail, or none, and the fault would never fire. A round follows in every mode: every
 * live rank takes part in every round, and the run's end flushes the trailing steps at the
 * latest.
 */
const EPOCH = 0;
const STEP = 2;
const PHASES = ['before', 'during', 'after'] as const;
const SIGNALS = ['SIGKILL', 'SIGSTOP'] as const;

/** A rank's signal at a round's phase. */
export function roundFault(mode: LaunchMode, signal: Fault['signal'], at: (typeof PHASES)[number]): Scenario {
  return scenario(`${signal} ${at} a reduce`, mode, { at, rank: 1, signal, epoch: EPOCH, step: STEP });
}

/** The faults that are not about a round's phase. */
export function otherFaults(mode: LaunchMode): Scenario[] {
  const last = NUM_EPOCHS - 1;
  return [
    // The last epoch's eval and bundle: the survivors re-elect, redo it, write the final bundle.
    scenario('SIGKILL of the eval rank during eval', mode, { at: 'eval', signal: 'SIGKILL', epoch: last }),
    scenario('SIGKILL during a checkpoint write', mode, {
      at: 'checkpoint',
      signal: 'SIGKILL',
      bundle: last + 1,
    }),
    // Once the first epoch's bundle is down; the ranks must go with their launcher.
    scenario(
      'SIGKILL of the launcher',
      mode,
      { at: 'launcher', signal: 'SIGKILL', epoch: 1 },
      { numEpochs: 3 },
    ),
    scenario('trainStep throws', mode, { at: 'throw', rank: 2, epoch: EPOCH, step: STEP }),
  ];
}

/** Every scenario: each mode × (each signal × each phase, and the other faults). */
export function fullMatrix(): Scenario[] {
  return MODES.flatMap((mode) => [
    ...SIGNALS.flatMap((signal) => PHASES.map((phase) => roundFault(mode, signal, phase))),
    ...otherFaults(mode),
  ]);
}

/**
 * The test's share of the matrix, sized for CI: every mode meets both signals, at phases that
 * rotate with the mode so each (signal, phase) pair runs in some mode; each other fault runs in
 * two modes, one host mode and one collective.
 */
export function ciMatrix(): Scenario[] {
  const rounds = MODES.flatMap((mode, index) =>
    SIGNALS.map((signal, offset) =>
      roundFault(mode, signal, PHASES[(index + offset) % 3] as (typeof PHASES)[number]),
    ),
  );
  const pairs: [LaunchMode, number][] = [
    ['CpuSync', 0],
    ['NcclCadence', 0],
    ['CpuCadence', 1],
    ['NcclSync', 1],
    ['CpuAsync', 2],
    ['CpuCadence', 3],
    ['NcclSync', 3],
  ];
  return [...rounds, ...pairs.map(([mode, index]) => otherFaults(mode)[index] as Scenario)];
}

/**
 * Scenarios that show an open bug, by `${mode} ${name}`: npm test skips them (naming the bug in
 * the test's title), the soak runs them. None at present.
 */
export const KNOWN_BUGS: Readonly<Record<string, string>> = {};

/** How a scenario ended, for the table. */
export interface ScenarioRow {
  name: string;
  mode: LaunchMode;
  /** What the run did. */
  outcome: string;
  /** From the fault to the run's end (its last process gone), ms. */
  recoveryMs: number | undefined;
  /** From the fault to the faulted process ended and reported lost (the launcher: every rank gone), ms. */
  handledMs: number | undefined;
  problems: string[];
}

/** How strictly `checkScenario` takes time. */
export interface TimeBound {
  /**
   * `end`: the whole run, survivors' remaining work included, must end within
   * {@link RECOVERY_BOUND_MS} of the fault (the soak; the README's table). `handled`: the
   * faulted process must be ended and reported lost within it, and the run end within
   * {@link HANG_BOUND_MS} (npm test, where a loaded machine slows the survivors' own training).
   */
  bound: 'end' | 'handled';
}

/** The hang bound npm test puts on a whole scenario's end after its fault. */
export const HANG_BOUND_MS = 60_000;

/** Checks one outcome against what every scenario must end with; lists what went wrong. */
export function checkScenario(
  scenario: Scenario,
  outcome: ScenarioOutcome,
  { bound }: TimeBound = { bound: 'end' },
): ScenarioRow {
  const problems: string[] = [];
  const { fault, result } = outcome;
  const launcherKilled = scenario.fault.at === 'launcher';
  if (!fault) problems.push('the fault never fired');
  const recoveryMs = fault ? outcome.allGoneAt - fault.time : undefined;
  const lostAt = result?.lost.find((record) => record.rank === fault?.rank)?.time;
  const handledMs = !fault
    ? undefined
    : launcherKilled
      ? recoveryMs
      : lostAt === undefined
        ? undefined
        : lostAt - fault.time;
  const endBound = bound === 'end' ? RECOVERY_BOUND_MS : HANG_BOUND_MS;
  if (recoveryMs !== undefined && recoveryMs > endBound)
    problems.push(`the run took ${recoveryMs} ms after the fault to end (bound ${endBound} ms)`);
  if (handledMs !== undefined && handledMs > RECOVERY_BOUND_MS)
    problems.push(
      `the faulted process was handled ${handledMs} ms after the fault (bound ${RECOVERY_BOUND_MS} ms)`,
    );
  if (outcome.leftBehind.length > 0) problems.push(`left behind: ${outcome.leftBehind.join(' | ')}`);
  let what = '';
  if (launcherKilled) {
    if (outcome.signal !== 'SIGKILL')
      problems.push(`the launcher ended by ${outcome.signal ?? outcome.status}`);
    what = 'ranks stopped by their guards';
  } else {
    if (outcome.status !== 0) problems.push(`the launcher exited with ${outcome.status ?? outcome.signal}`);
    if (!result) problems.push('join never resolved');
    else {
      const lost = result.lost.map((record) => record.rank);
      if (fault && (lost.length !== 1 || lost[0] !== fault.rank))
        problems.push(`lost ranks [${lost.join(', ')}], expected [${fault.rank}]`);
      const epochs = result.metrics.map((metrics) => metrics.epoch);
      const expected = Array.from({ length: scenario.config.numEpochs }, (_, epoch) => epoch);
      if (epochs.join() !== expected.join()) problems.push(`epochs [${epochs.join(', ')}] reported`);
      for (const metrics of result.metrics) {
        const samples = metrics.perRankSamples.reduce((sum, count) => sum + count, 0);
        if (samples !== scenario.config.totalSamples)
          problems.push(
            `epoch ${metrics.epoch} trained ${samples} samples of ${scenario.config.totalSamples}`,
          );
      }
      what = `survivors finished (lost rank ${lost.join(', ')})`;
    }
  }
  const bundle = lastBundle(outcome);
  if (typeof bundle === 'string') problems.push(bundle);
  else what += `; ${bundle.reason} bundle loads`;
  return { name: scenario.name, mode: scenario.mode, outcome: what, recoveryMs, handledMs, problems };
}

/** Reads the bundle `resumeFrom(savePath)` would take and loads its model; a problem as text. */
function lastBundle(outcome: ScenarioOutcome): { reason: string } | string {
  try {
    const bundle = readCheckpoint(join(outcome.dir, 'run'));
    const model = new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 1));
    try {
      load(model, bundle.model);
    } finally {
      model.dispose();
    }
    return { reason: bundle.meta.reason };
  } catch (error) {
    return `the last bundle does not load: ${(error as Error).message}`;
  }
}

// The fault suite's Trainer script: one file is the launcher (the test's child process) and
// every rank, as in a user's run. argv[2] is a JSON FaultConfig. The fault is scripted by rank
// and phase, and fired by the rank on itself at a deterministic point:
//   before:     the first round after this rank's step `step` of epoch `epoch` called it
//               in; it has contributed nothing yet (steps count from the rank's first plan
//               of that epoch, on through later ones: with chunks handed out ahead, a rank
//               may hold the next epoch's plan before the round comes)
//   during:     its contribution to that round left (host modes: the snapshot was sent on
//               the data channel; collective modes: its buffers were reduced, its masses not:
//               the script splits the round's one allReduce call in two)
//   after:      that round was applied on this rank, before its next step
//   eval:       inside the eval callback of epoch `epoch` (so on the elected rank)
//   checkpoint: inside periodic bundle `bundle`'s write (its files written, the meta not renamed)
//   throw:      trainStep throws at this rank's step `step` of epoch `epoch`
//   launcher:   the launcher SIGKILLs itself when epoch `epoch`'s metrics reach it
// Every process writes its pid to `<dir>/pid-<role>`; the fault writes `<dir>/fault.json` right
// before it fires; the launcher writes `out` (metrics, lost ranks, when join resolved). With
// FLODL_FAULTS_METRICS_LOG set, the run's metrics log (rounds, deaths, exits, with times) goes there.
import fs, { appendFileSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { mseLoss } from '@flodl/autograd';
import { DistributedSession, isCollectiveMode, type LaunchMode } from '@flodl/distributed';
import { Linear, ReLU, Sequential, SGD } from '@flodl/nn';
import { manualSeed, randn } from '@flodl/tensor-native';
import { TensorDataset } from '../../src/data/index.js';
import { Trainer } from '../../src/index.js';

/** Where a fault fires. */
export type FaultPoint = 'before' | 'during' | 'after' | 'eval' | 'checkpoint' | 'throw' | 'launcher';

/** The scripted fault of a run. */
export interface Fault {
  at: FaultPoint;
  /** The rank that faults (unused for `launcher`, and for `eval`/`checkpoint`: whichever rank is elected). */
  rank?: number;
  signal?: 'SIGKILL' | 'SIGSTOP';
  /**
   * The rank's step (1-based) counted from its first plan of epoch `epoch`: the round after
   * it (before / during / after), or the step that throws (throw).
   */
  step?: number;
  /** The epoch, 0-based (every fault but checkpoint). */
  epoch?: number;
  /** The periodic bundle, 1-based (checkpoint). */
  bundle?: number;
}

/** The script's argument. */
export interface FaultConfig {
  mode: LaunchMode;
  totalSamples: number;
  batchSize: number;
  numEpochs: number;
  livenessMs: number;
  /** The scenario's folder: pid files, the fault record, the bundles. */
  dir: string;
  out: string;
  savePath?: string;
  checkpointEvery?: number;
  stepDelayMs?: number;
  fault?: Fault;
}

const config = JSON.parse(process.argv[2] ?? '{}') as FaultConfig;
const rank = Number(process.env.FLODL_RANK ?? -1);
const fault = config.fault;
writeFileSync(join(config.dir, `pid-${rank < 0 ? 'launcher' : `rank${rank}`}`), String(process.pid));

/**
 * Claims the run's one fault and records it, synchronously (before the process can vanish).
 * False when another process claimed it first: a re-elected rank that takes over the eval or
 * the checkpoint of a dead one must not die too.
 */
function record(what: string): boolean {
  try {
    writeFileSync(
      join(config.dir, 'fault.json'),
      JSON.stringify({ rank, pid: process.pid, what, time: Date.now() }),
      { flag: 'wx' },
    );
    return true;
  } catch {
    return false;
  }
}

/** Records the fault, then fires its signal. */
function fire(what: string): void {
  if (record(what)) process.kill(process.pid, fault?.signal ?? 'SIGKILL');
}

const mine = (point: FaultPoint) => fault?.at === point && (fault.rank === undefined || fault.rank === rank);

if (rank >= 0 && fault) scriptSession(fault);
if (rank >= 0 && mine('checkpoint')) scriptCheckpointWrite(fault as Fault);

/** The epoch (1-based) of the eval the coordinator last asked for. */
let evalEpoch = 0;
/**
 * This rank's steps since its first plan of the fault's epoch or a later one (from the
 * coordinator's plans); undefined before that plan.
 */
let stepsIn: number | undefined;

/**
 * Wraps the rank's session (the Trainer joins through `DistributedSession.join`) to fire at a
 * round's phase, and to know which epoch's eval the coordinator asks for.
 */
function scriptSession(planned: Fault): void {
  const join = DistributedSession.join.bind(DistributedSession);
  DistributedSession.join = async (model, options = {}) => {
    let round = 0;
    let target: number | undefined;
    const session = await join(model, {
      ...options,
      onControl: (message) => {
        if (message.type === 'ExecuteEvalCallback') evalEpoch = message.epoch;
        if (
          message.type === 'StartEpoch' &&
          stepsIn === undefined &&
          message.plan.epoch >= (planned.epoch ?? 0)
        )
          stepsIn = 0;
        options.onControl?.(message);
      },
      onBeforeAverage: (event) => {
        round = event.version;
        if (target === undefined && stepsIn !== undefined && stepsIn >= (planned.step ?? 0))
          target = event.version;
        options.onBeforeAverage?.(event);
        if (mine('before') && event.version === target) fire(`entering round ${event.version}`);
      },
      onAveraged: (event) => {
        options.onAveraged?.(event);
        if (mine('after') && event.version === target) fire(`after round ${event.version}`);
      },
    });
    if (!mine('during')) return session;
    if (isCollectiveMode(session.mode)) {
      const group = session.group;
      if (!group) return session;
      const allReduce = group.allReduce.bind(group);
      group.allReduce = (tensors, options) => {
        // The round reduces its buffers and its masses (the list's last tensor) in one call:
        // here the buffers go first and the fault fires before the masses', so the peers are
        // left inside a reduction of the round.
        if (round !== target || !Array.isArray(tensors) || tensors.length < 2)
          return allReduce(tensors, options);
        allReduce(tensors.slice(0, -1), options);
        fire(`between the buffers' and the masses' reductions of round ${round}`);
        allReduce(tensors.slice(-1), options);
      };
    } else if (session.data) {
      const data = session.data;
      const send = data.send.bind(data);
      data.send = async (...args: Parameters<typeof send>) => {
        await send(...args);
        if (args[0] === target) fire(`snapshot of round ${args[0]} sent`);
      };
    }
    return session;
  };
}

/** Fires inside periodic bundle `bundle`'s write: its files are down, the meta is not renamed into place. */
function scriptCheckpointWrite(planned: Fault): void {
  const rename = fs.renameSync;
  // The coordinator elects each bundle's writer, not always the same rank: the bundles are
  // counted across the ranks (one line each in a file of the run's folder; saves never overlap).
  const written = join(config.dir, 'bundles-written');
  fs.renameSync = (from, to) => {
    if (/\.step-\d+\.meta\.json$/.test(String(to))) {
      appendFileSync(written, `${rank}\n`);
      const bundles = fs.readFileSync(written, 'utf8').trim().split('\n').length;
      if (bundles === (planned.bundle ?? 1)) fire(`writing ${String(to)}`);
    }
    rename(from, to);
  };
  syncBuiltinESMExports();
}

manualSeed(11); // the same data in every process
const x = randn([config.totalSamples, 4]);
const y = x.matmul(randn([4, 1]));
const data = new TensorDataset([x, y]);

const builder = Trainer.builder(
  () => new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 1)),
  (params) => new SGD(params, { lr: 0.05 }),
  (model, batch) => {
    if (stepsIn !== undefined) stepsIn += 1;
    if (
      mine('throw') &&
      stepsIn !== undefined &&
      fault?.step === stepsIn &&
      record(`trainStep threw at step ${stepsIn} of epoch ${fault?.epoch}`)
    )
      throw new Error(`planned failure at step ${stepsIn} of epoch ${fault?.epoch}`);
    const delay = config.stepDelayMs ?? 0;
    if (delay > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delay);
    return mseLoss(model.forward(batch.at(0)), batch.at(1));
  },
)
  .dataset(data)
  .batchSize(config.batchSize)
  .numEpochs(config.numEpochs)
  .devices(['cpu', 'cpu', 'cpu'])
  .mode(config.mode)
  .elche({ anchor: 3 })
  .elastic()
  .livenessMs(config.livenessMs)
  .progress(false)
  .evalFn((model) => {
    if (mine('eval') && fault?.epoch === evalEpoch - 1) fire(`eval of epoch ${fault.epoch}`);
    const loss = mseLoss(model.forward(x), y);
    const value = loss.item() as number;
    loss.dispose();
    return value;
  })
  .metricsFn((metrics) => {
    if (rank < 0 && fault?.at === 'launcher' && fault.epoch === metrics.epoch) fire('the launcher');
  });
if (config.savePath) builder.savePath(config.savePath);
if (process.env.FLODL_FAULTS_METRICS_LOG) builder.metricsLog(process.env.FLODL_FAULTS_METRICS_LOG);
if (config.checkpointEvery) builder.checkpointEvery(config.checkpointEvery);
const handle = builder.run();
const metrics = [];
for await (const epoch of handle.metrics()) metrics.push(epoch);
const state = await handle.join();
if (!handle.isRank) {
  writeFileSync(
    config.out,
    JSON.stringify({ metrics, lost: state.lost, worldSize: handle.worldSize, endedAt: Date.now() }),
  );
} else appendFileSync(join(config.dir, 'finished'), `${rank}\n`);

#!/usr/bin/env node
// The averaging modes through the managed Trainer, one rank process per GPU, for machines
// where the test runner is not installed (the GPU machine: only `node` and the built dist/
// folders):
//
//   node packages/trainer/scripts/gpu-cluster.mjs [--nproc 2] [--device cuda|cpu]
//     [--modes NcclSync,NcclCadence,CpuSync,CpuCadence,CpuAsync] [--steps 60]
//     [--kill-rank R --kill-at S]
//
// For each mode it runs this same script as a Trainer script (`--run <settings>`, in a child
// process): `Trainer.builder(...).devices([...]).run()` makes that process the launcher of
// --nproc ranks on cuda:0..N-1 (or N CPU ranks with --device cpu; the Nccl* modes then
// average over Gloo), each training an MLP on a synthetic classification task. The ranks
// trace every averaging round they applied (FLODL_TRACE_DIR: the round and a digest of the
// parameters after it); the launcher writes the run's metrics, lost ranks and consensus. A
// mode passes when the run ended cleanly with every epoch's metrics, there were at least 3
// rounds, every rank applied the same rounds and held the same parameters after each (CpuAsync:
// each rank applied at least 3 rounds; its ranks train on between shipping and adopting), the
// consensus `join()` returned is what the ranks held after the last round, and the loss fell.
// One line per mode, then a tally; the exit status is non-zero when any mode failed.
//
// With --kill-rank R --kill-at S the run is elastic and rank R exits (code 3) at its step S: a
// mode then passes when the launcher reports R lost, the survivors applied the same rounds with
// the same parameters, R applied only rounds the survivors applied too, and the loss fell.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const BATCH_SIZE = 32;
const NUM_EPOCHS = 3;
/** Bound on one mode's run; a mode normally takes a few seconds. */
const MODE_TIMEOUT_MS = 90_000;
const MIN_ROUNDS = 3;
/**
 * Least wall time of a rank's step, ms: ElChe's cadence is timed in wall time, and this MLP's
 * steps take well under a millisecond, faster than the control round trip of a round.
 */
const STEP_MS = 4;
const FEATURES = 32;
const CLASSES = 4;
const MODES = ['NcclSync', 'NcclCadence', 'CpuSync', 'CpuCadence', 'CpuAsync'];

/**
 * @typedef {{ rank: number; atStep: number }} Kill
 * @typedef {{ mode: string; devices: string[]; totalSamples: number; anchor?: number; kill?: Kill; savePath?: string; out: string }} RunSettings
 * @typedef {{ metrics: { epoch: number; avgLoss: number }[]; lost: { rank: number }[]; params: string[] }} RunResult
 */

/**
 * One mode's run, in a process of its own: the launcher and, re-run by it, every rank.
 * @param {RunSettings} settings
 */
async function trainerRun(settings) {
  const [
    { CrossEntropyLoss, Linear, ReLU, Sequential, Adam },
    { manualSeed, randn, tidy, toBytes },
    trainer,
  ] = await Promise.all([import('@flodl/nn'), import('@flodl/tensor-native'), import('@flodl/trainer')]);
  const { Trainer, TensorDataset } = trainer;
  const rank = Number(process.env.FLODL_RANK ?? -1);
  // The same dataset in every process: labels from a random linear teacher.
  manualSeed(1234);
  const [inputs, labels] = tidy(() => {
    const x = randn([settings.totalSamples, FEATURES]);
    return [x, x.matmul(randn([FEATURES, CLASSES])).argmax(1)];
  });
  const lossFunction = new CrossEntropyLoss();
  let steps = 0;
  const builder = Trainer.builder(
    () =>
      new Sequential(
        new Linear(FEATURES, 64),
        new ReLU(),
        new Linear(64, 64),
        new ReLU(),
        new Linear(64, CLASSES),
      ),
    (params) => new Adam(params, { lr: 0.01 }),
    (model, batch) => {
      steps += 1;
      // The death scenario: this rank dies mid-run.
      if (rank === settings.kill?.rank && steps >= settings.kill.atStep) process.exit(3);
      const started = performance.now();
      const loss = lossFunction.forward(model.forward(batch.at(0)), batch.at(1));
      const rest = STEP_MS - (performance.now() - started);
      if (rest > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, rest);
      return loss;
    },
  )
    .dataset(new TensorDataset([inputs, labels]))
    .batchSize(BATCH_SIZE)
    .numEpochs(NUM_EPOCHS)
    .devices(settings.devices)
    .mode(settings.mode)
    .progress(false)
    .timeoutMs(30_000);
  // Cadence and Async: a short anchor, allowed to double at most (ElChe would grow it far on
  // such cheap steps), so a short run averages about ten times; Sync averages every step.
  if (settings.anchor !== undefined)
    builder.elche({ anchor: settings.anchor, maxAnchor: 2 * settings.anchor });
  if (settings.kill) builder.elastic();
  if (settings.savePath) builder.savePath(settings.savePath);
  const handle = builder.run();
  const metrics = [];
  for await (const epoch of handle.metrics()) metrics.push({ epoch: epoch.epoch, avgLoss: epoch.avgLoss });
  const state = await handle.join();
  writeFileSync(
    settings.out,
    JSON.stringify({
      metrics,
      lost: state.lost.map((record) => ({ rank: record.rank })),
      params: state.params.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex')),
    }),
  );
}

/**
 * The command line, checked.
 * @returns {{ nproc: number; device: 'cpu' | 'cuda'; modes: string[]; steps: number; kill: Kill | undefined }}
 */
function parseCommandLine() {
  const { values } = parseArgs({
    options: {
      nproc: { type: 'string', default: '2' },
      device: { type: 'string', default: 'cuda' },
      modes: { type: 'string', default: MODES.join(',') },
      steps: { type: 'string', default: '60' },
      'kill-rank': { type: 'string' },
      'kill-at': { type: 'string', default: '20' },
    },
  });
  /** @param {string} message */
  const usage = (message) => {
    process.stderr.write(`gpu-cluster: ${message}\n`);
    process.exit(2);
  };
  const nproc = Number(values.nproc);
  if (!Number.isInteger(nproc) || nproc < 2) usage(`--nproc: expected an integer ≥ 2, got ${values.nproc}`);
  if (values.device !== 'cpu' && values.device !== 'cuda')
    usage(`--device: expected cpu or cuda, got ${values.device}`);
  const steps = Number(values.steps);
  if (!Number.isInteger(steps) || steps < 12) usage(`--steps: expected an integer ≥ 12, got ${values.steps}`);
  const modes = values.modes.split(',').filter((mode) => mode.length > 0);
  for (const mode of modes) {
    if (!MODES.includes(mode)) usage(`--modes: expected some of ${MODES.join(',')}, got ${mode}`);
  }
  /** @type {Kill | undefined} */
  let kill;
  if (values['kill-rank'] !== undefined) {
    const killRank = Number(values['kill-rank']);
    const atStep = Number(values['kill-at']);
    if (!Number.isInteger(killRank) || killRank < 0 || killRank >= nproc)
      usage(`--kill-rank: expected a rank in [0, ${nproc}), got ${values['kill-rank']}`);
    if (!Number.isInteger(atStep) || atStep < 1 || atStep >= steps)
      usage(`--kill-at: expected a step in [1, ${steps}), got ${values['kill-at']}`);
    kill = { rank: killRank, atStep };
  }
  return { nproc, device: /** @type {'cpu' | 'cuda'} */ (values.device), modes, steps, kill };
}

/**
 * Runs `mode` in a child process and collects its result and the ranks' round traces.
 * @param {string} mode
 * @param {ReturnType<typeof parseCommandLine>} options
 */
async function runMode(mode, options) {
  const { nproc, steps, kill } = options;
  const dir = mkdtempSync(join(tmpdir(), 'flodl-gpu-cluster-'));
  const started = Date.now();
  try {
    /** @type {RunSettings} */
    const settings = {
      mode,
      devices: Array.from({ length: nproc }, (_, rank) =>
        options.device === 'cuda' ? `cuda:${rank}` : 'cpu',
      ),
      // About `steps` optimizer steps per rank over NUM_EPOCHS epochs (ElChe may split them unevenly).
      totalSamples: Math.ceil((steps * nproc) / NUM_EPOCHS) * BATCH_SIZE,
      ...(mode.endsWith('Sync') ? {} : { anchor: Math.max(2, Math.round(steps / 15)) }),
      // A death: the run saves its last state (the survivor told to save, or the final one).
      ...(kill ? { kill, savePath: join(dir, 'run') } : {}),
      out: join(dir, 'result.json'),
    };
    const child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), '--run', JSON.stringify(settings)],
      {
        env: { ...process.env, FLODL_TRACE_DIR: dir },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    const timer = setTimeout(() => child.kill('SIGKILL'), MODE_TIMEOUT_MS);
    const status = await new Promise((resolve) =>
      child.on('exit', (code, signal) => resolve(code ?? signal)),
    );
    clearTimeout(timer);
    /** @type {Map<number, { version: number; digest: string }[]>} */
    const traces = new Map();
    for (const file of readdirSync(dir).filter((name) => name.startsWith('rounds-rank'))) {
      const text = readFileSync(join(dir, file), 'utf8');
      traces.set(
        Number(/rank(\d+)/.exec(file)?.[1]),
        text.split('\n').flatMap((line) => (line.length > 0 ? [JSON.parse(line)] : [])),
      );
    }
    /** @type {RunResult | undefined} */
    const result = existsSync(settings.out) ? JSON.parse(readFileSync(settings.out, 'utf8')) : undefined;
    const meta = `${settings.savePath}.meta.json`;
    /** @type {string | undefined} */
    const saved =
      settings.savePath && existsSync(meta) ? JSON.parse(readFileSync(meta, 'utf8')).reason : undefined;
    return { status, result, traces, saved, seconds: (Date.now() - started) / 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Why the run of `mode` failed, or its summary line when it passed.
 * @param {string} mode
 * @param {ReturnType<typeof parseCommandLine>} options
 * @param {Awaited<ReturnType<typeof runMode>>} outcome
 * @returns {{ ok: boolean; text: string }}
 */
function judge(mode, options, outcome) {
  const { status, result, traces, saved, seconds } = outcome;
  const fail = (/** @type {string} */ reason) => ({ ok: false, text: `${reason} (${seconds.toFixed(1)} s)` });
  if (status !== 0) return fail(`the run exited with ${status}`);
  if (!result) return fail('the run wrote no result');
  const { kill } = options;
  const lost = result.lost.map((record) => record.rank);
  if (lost.join() !== (kill ? String(kill.rank) : '')) {
    return fail(`the launcher lost ranks [${lost.join(',')}], expected [${kill ? kill.rank : ''}]`);
  }
  const epochs = result.metrics.map((metrics) => metrics.epoch);
  // A collective left with one rank stops at the death: the epochs before it are all there is.
  if (
    kill === undefined &&
    epochs.join() !== Array.from({ length: NUM_EPOCHS }, (_, epoch) => epoch).join()
  ) {
    return fail(`epochs [${epochs.join(',')}] arrived, expected every one of ${NUM_EPOCHS}`);
  }
  const survivors = [...traces.keys()].filter((rank) => rank !== kill?.rank).sort((a, b) => a - b);
  if (survivors.length !== options.nproc - (kill ? 1 : 0)) {
    return fail(`round traces from ranks [${survivors.join(',')}] only`);
  }
  const asynchronous = mode === 'CpuAsync';
  const versions = (traces.get(survivors[0]) ?? []).map((round) => round.version);
  const minRounds = kill ? 1 : MIN_ROUNDS;
  for (const rank of survivors) {
    const seen = (traces.get(rank) ?? []).map((round) => round.version);
    if (seen.length < minRounds)
      return fail(`rank ${rank} applied ${seen.length} rounds, expected at least ${minRounds}`);
    if (!asynchronous && seen.join() !== versions.join()) {
      return fail(`rank ${rank} applied rounds [${brief(seen)}], rank ${survivors[0]} [${brief(versions)}]`);
    }
    if (seen.some((version, index) => index > 0 && version <= (seen[index - 1] ?? 0))) {
      return fail(`rank ${rank} applied rounds out of order: [${brief(seen)}]`);
    }
  }
  if (kill) {
    const applied = new Set(
      survivors.flatMap((rank) => (traces.get(rank) ?? []).map((round) => round.version)),
    );
    const ghost = (traces.get(kill.rank) ?? []).filter((round) => !applied.has(round.version));
    if (ghost.length > 0) return fail(`rank ${kill.rank} applied rounds no survivor applied`);
  }
  if (!asynchronous) {
    for (const version of versions) {
      const digests = new Set(
        survivors.map((rank) => traces.get(rank)?.find((round) => round.version === version)?.digest),
      );
      if (digests.size > 1) return fail(`the parameters differ across ranks after round ${version}`);
    }
    // The consensus join returned is what every rank held after the last round.
    if (kill === undefined) {
      const hash = createHash('sha256');
      for (const hex of result.params) hash.update(Buffer.from(hex, 'hex'));
      const last = traces.get(survivors[0])?.at(-1)?.digest;
      if (hash.digest('hex').slice(0, 32) !== last)
        return fail("join()'s consensus is not the last round's parameters");
    }
  }
  // A collective left with one rank is told to save and stop (SingleSurvivor): no later epoch.
  const survivorSaved = kill !== undefined && saved === 'shutdownWithSave';
  if (kill && !survivorSaved && saved !== 'final')
    return fail(`the run saved ${saved ?? 'nothing'} at its end`);
  if (survivorSaved && result.metrics.length === 0) {
    return {
      ok: true,
      text: `rank ${kill.rank} died at step ${kill.atStep}, the survivor was told to save and stop, ${versions.length} rounds before, params identical after each, ${seconds.toFixed(1)} s`,
    };
  }
  const first = result.metrics[0]?.avgLoss ?? Number.NaN;
  const final = result.metrics.at(-1)?.avgLoss ?? Number.NaN;
  if (!(final < first)) return fail(`the loss did not fall: ${first.toFixed(2)} -> ${final.toFixed(2)}`);
  const agreed = asynchronous ? 'rounds in order' : 'params identical';
  const death =
    kill === undefined
      ? ''
      : `rank ${kill.rank} died at step ${kill.atStep}, ${survivorSaved ? 'the survivor was told to save and stop' : `${survivors.length} survivor(s) finished`}, `;
  return {
    ok: true,
    text: `${death}${versions.length} rounds, ${agreed} on ${survivors.length} ranks after each, epoch loss ${first.toFixed(2)} -> ${final.toFixed(2)}, ${seconds.toFixed(1)} s`,
  };
}

/** @param {readonly number[]} versions @returns {string} at most 12 of them */
function brief(versions) {
  return versions.length <= 12
    ? versions.join(',')
    : `${versions.slice(0, 12).join(',')},… ${versions.length} in all`;
}

const runIndex = process.argv.indexOf('--run');
if (runIndex >= 0) {
  await trainerRun(JSON.parse(process.argv[runIndex + 1] ?? '{}'));
} else {
  const options = parseCommandLine();
  console.log(
    `gpu-cluster: ${options.nproc} Trainer ranks on ${options.device}, about ${options.steps} steps per rank`,
  );
  let failed = 0;
  for (const mode of options.modes) {
    const verdict = judge(mode, options, await runMode(mode, options));
    if (!verdict.ok) failed += 1;
    console.log(`${verdict.ok ? 'ok  ' : 'FAIL'} ${mode}: ${verdict.text}`);
  }
  console.log(`${options.modes.length - failed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

#!/usr/bin/env node
// The averaging modes across real rank processes, for machines where the test runner is not
// installed (the GPU machine: only `node` and the built dist/ folders):
//
//   node packages/distributed/scripts/gpu-cluster.mjs [--nproc 2] [--device cuda|cpu]
//     [--modes NcclSync,NcclCadence,CpuSync,CpuCadence,CpuAsync] [--steps 60]
//     [--driver coordinator|averaging] [--easgd-alpha α] [--kill-rank R --kill-at S]
//
// For each mode it launches --nproc ranks of gpu-cluster-rank.mjs (on cuda, rank r trains on
// cuda:r) with a launcher-side driver: CoordinatorHost running the real ClusterCoordinator (epoch
// plans, ElChe-timed rounds), or with --driver averaging the simpler every-K-steps AveragingHost.
// The Nccl* modes average with NCCL on cuda and with Gloo on the CPU (--device cpu needs a
// libtorch built with Gloo). Every rank records a hash of its parameters after each round it
// applied; a mode passes when every rank applied every round (CpuAsync: each rank every round
// that took its snapshot), the hashes agree across ranks for each round (CpuAsync with
// --easgd-alpha: the consensus hashes, since the blend leaves ranks apart), there were at least
// 3 rounds, and the loss fell. One line per mode, then a tally; the exit status is non-zero
// when any mode failed.
//
// With --kill-rank R --kill-at S the run is elastic and rank R exits (code 3) at its step S: a
// mode then passes when the launcher resolves in time with R among the lost ranks, the
// coordinator either completed with the survivors or ended with SingleSurvivor (a collective
// with one rank left is told to save: it writes its model and stops), R applied only rounds the driver completed, every
// survivor applied every round, and the survivors' parameters agree after each round.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  AveragingHost,
  CoordinatorHost,
  LAUNCH_MODES,
  launch,
  PROCESS_GROUP_PORT_ENV,
} from '@flodl/distributed';

/** Environment variable naming the folder the ranks write their records into. */
const RECORDS_ENV = 'FLODL_CLUSTER_RECORDS';
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

const rankScript = join(dirname(fileURLToPath(import.meta.url)), 'gpu-cluster-rank.mjs');

/**
 * @typedef {import('@flodl/distributed').LaunchMode} LaunchMode
 * @typedef {{ rank: number; version: number; params: string; consensus?: string; loss: number; steps: number }} RoundRecord
 * @typedef {{ version: number; accepted?: readonly number[] }} CompletedRound
 * @typedef {{ rank: number; atStep: number }} Kill
 * @typedef {{ nproc: number; device: 'cpu' | 'cuda'; steps: number; driver: 'coordinator' | 'averaging'; easgdAlpha: number | undefined; kill: Kill | undefined }} ClusterOptions
 */

/**
 * The command line, checked.
 * @returns {ClusterOptions & { modes: LaunchMode[] }}
 */
function parseCommandLine() {
  const { values } = parseArgs({
    options: {
      nproc: { type: 'string', default: '2' },
      device: { type: 'string', default: 'cuda' },
      modes: { type: 'string', default: LAUNCH_MODES.join(',') },
      steps: { type: 'string', default: '60' },
      driver: { type: 'string', default: 'coordinator' },
      'easgd-alpha': { type: 'string' },
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
  if (values.driver !== 'coordinator' && values.driver !== 'averaging') {
    usage(`--driver: expected coordinator or averaging, got ${values.driver}`);
  }
  const modes = /** @type {LaunchMode[]} */ (values.modes.split(',').filter((mode) => mode.length > 0));
  for (const mode of modes) {
    if (!LAUNCH_MODES.includes(mode))
      usage(`--modes: expected some of ${LAUNCH_MODES.join(',')}, got ${mode}`);
  }
  let easgdAlpha;
  if (values['easgd-alpha'] !== undefined) {
    easgdAlpha = Number(values['easgd-alpha']);
    if (!(easgdAlpha > 0 && easgdAlpha <= 1))
      usage(`--easgd-alpha: expected a number in (0, 1], got ${easgdAlpha}`);
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
    if (values.driver !== 'coordinator') usage('--kill-rank needs the coordinator driver');
    kill = { rank: killRank, atStep };
  }
  return {
    nproc,
    kill,
    device: /** @type {'cpu' | 'cuda'} */ (values.device),
    modes,
    steps,
    driver: /** @type {'coordinator' | 'averaging'} */ (values.driver),
    easgdAlpha,
  };
}

/** @returns {Promise<number>} a port free on the loopback right now */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * Runs `mode` once and collects what the driver and every rank saw.
 * @param {LaunchMode} mode
 * @param {ClusterOptions} options
 */
async function runMode(mode, options) {
  const { nproc, steps, driver } = options;
  // About `steps` optimizer steps per rank over NUM_EPOCHS epochs (ElChe may split them unevenly).
  const totalSamples = Math.ceil((steps * nproc) / NUM_EPOCHS) * BATCH_SIZE;
  const easgdAlpha = mode === 'CpuAsync' ? options.easgdAlpha : undefined;
  // Cadence and Async: a short anchor, allowed to double at most (ElChe would grow it far on
  // such cheap steps), so a short run averages about ten times; Sync averages every step.
  const anchor = mode.endsWith('Sync') ? 1 : Math.max(2, Math.round(steps / 15));
  const elche = {
    mode,
    ...(mode.endsWith('Sync') ? {} : { anchor, maxAnchor: 2 * anchor }),
    ...(easgdAlpha === undefined ? {} : { easgdAlpha }),
  };
  const recordDir = mkdtempSync(join(tmpdir(), 'flodl-gpu-cluster-'));
  /** @type {CoordinatorHost | AveragingHost | undefined} */
  let host;
  /** @type {unknown[]} */
  const hostErrors = [];
  const started = Date.now();
  const { kill } = options;
  try {
    /** @type {unknown} */
    let failure;
    /** @type {number[]} */
    let lost = [];
    try {
      const result = await launch({
        nproc,
        script: rankScript,
        device: options.device,
        mode,
        args: [
          JSON.stringify({
            driver,
            totalSamples,
            batchSize: BATCH_SIZE,
            steps,
            stepMs: STEP_MS,
            ...(easgdAlpha === undefined ? {} : { easgdAlpha }),
            ...(kill === undefined ? {} : { killRank: kill.rank, killAt: kill.atStep }),
          }),
        ],
        elastic: kill !== undefined,
        env: { [PROCESS_GROUP_PORT_ENV]: String(await freePort()), [RECORDS_ENV]: recordDir },
        prefixOutput: true,
        timeoutMs: MODE_TIMEOUT_MS,
        killGraceMs: 2000,
        onServer: (server, run) => {
          const onError = (/** @type {unknown} */ error) => hostErrors.push(error);
          host =
            driver === 'coordinator'
              ? CoordinatorHost.attach(server, {
                  mode,
                  run,
                  coordinator: {
                    worldSize: nproc,
                    totalSamples,
                    batchSize: BATCH_SIZE,
                    numEpochs: NUM_EPOCHS,
                    elche,
                  },
                  tickMs: 100,
                  onError,
                })
              : AveragingHost.attach(server, {
                  mode,
                  worldSize: nproc,
                  everySteps: anchor,
                  onError,
                });
        },
      });
      lost = result.lost.map((record) => record.rank);
    } catch (error) {
      failure = error;
    }
    if (host instanceof CoordinatorHost) host.detach();
    /** @type {RoundRecord[][]} */
    const records = [];
    for (let rank = 0; rank < nproc; rank += 1) {
      const path = join(recordDir, `rank-${rank}.jsonl`);
      const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
      records.push(text.split('\n').flatMap((line) => (line.length > 0 ? [JSON.parse(line)] : [])));
    }
    const saved = readdirSync(recordDir).filter((name) => name.endsWith('.safetensors'));
    return { host, hostErrors, failure, lost, saved, records, seconds: (Date.now() - started) / 1000 };
  } finally {
    rmSync(recordDir, { recursive: true, force: true });
  }
}

/**
 * The rounds the driver completed, with the ranks each accepted where the driver knows them.
 * @param {CoordinatorHost | AveragingHost} host
 * @returns {CompletedRound[]}
 */
function completedRounds(host) {
  if (host instanceof AveragingHost) return host.rounds;
  const accepted = new Map(host.rounds.map((round) => [round.version, round.accepted]));
  return host.notices.flatMap((notice) =>
    notice.type === 'Averaged' ? [{ version: notice.version, accepted: accepted.get(notice.version) }] : [],
  );
}

/**
 * Why the run of `mode` failed, or its summary line when it passed.
 * @param {LaunchMode} mode
 * @param {ClusterOptions} options
 * @param {Awaited<ReturnType<typeof runMode>>} outcome
 * @returns {{ ok: boolean; text: string }}
 */
function judge(mode, options, outcome) {
  const { host, hostErrors, failure, lost, saved, records: allRecords, seconds } = outcome;
  const fail = (/** @type {string} */ reason) => ({ ok: false, text: `${reason} (${seconds.toFixed(1)} s)` });
  if (failure !== undefined) return fail(`the run failed: ${describe(failure)}`);
  if (!host) return fail('no driver was attached');
  if (hostErrors.length > 0) return fail(`the driver failed: ${hostErrors.map(describe).join('; ')}`);
  const { kill } = options;
  const finish = host instanceof CoordinatorHost ? host.coordinator.finishReason : 'Completed';
  const survivorsSaved = kill !== undefined && finish === 'SingleSurvivor';
  if (finish !== 'Completed' && !survivorsSaved) {
    return fail(`the coordinator finished with ${finish ?? 'no reason (still running)'}`);
  }
  if (survivorsSaved && saved.length !== 1)
    return fail(`the survivor was told to save; files: [${saved.join(', ')}]`);
  if (kill !== undefined && lost.join() !== String(kill.rank)) {
    return fail(`the launcher lost ranks [${lost.join(',')}], expected [${kill.rank}]`);
  }
  // The dead rank applied some of the rounds (all completed ones, up to its death).
  const records = allRecords.filter((_, rank) => rank !== kill?.rank);
  if (kill !== undefined) {
    const completed = new Set(completedRounds(host).map((round) => round.version));
    const ghost = (allRecords[kill.rank] ?? []).filter((record) => !completed.has(record.version));
    if (ghost.length > 0) return fail(`rank ${kill.rank} applied rounds the driver never completed`);
  }
  const rounds = completedRounds(host);
  const versions = rounds.map((round) => round.version);
  // A collective left with one rank stops at the death: the rounds before it are all there is.
  const minRounds = survivorsSaved ? 1 : MIN_ROUNDS;
  if (rounds.length < minRounds) return fail(`${rounds.length} rounds, expected at least ${minRounds}`);
  const asynchronous = mode === 'CpuAsync';
  for (const list of records) {
    const rank = list[0]?.rank ?? -1;
    const seen = list.map((record) => record.version);
    if (!asynchronous) {
      if (seen.join() !== versions.join()) {
        return fail(
          `rank ${rank} applied rounds [${brief(seen)}], the driver completed [${brief(versions)}]`,
        );
      }
      continue;
    }
    // CpuAsync: each rank applies the rounds that accepted its snapshot, in order.
    if (seen.some((version, index) => index > 0 && version <= (seen[index - 1] ?? 0))) {
      return fail(`rank ${rank} applied rounds out of order: [${brief(seen)}]`);
    }
    const missed = rounds.filter(
      (round) => (round.accepted ?? []).includes(rank) && !seen.includes(round.version),
    );
    if (missed.length > 0) {
      return fail(
        `rank ${rank} never applied rounds [${brief(missed.map((round) => round.version))}] that took its state`,
      );
    }
    const unknown = seen.filter((version) => !versions.includes(version));
    if (unknown.length > 0)
      return fail(`rank ${rank} applied rounds [${brief(unknown)}] the driver never completed`);
    if (seen.length < minRounds)
      return fail(`rank ${rank} applied ${seen.length} rounds, expected at least ${minRounds}`);
  }
  // EASGD blends the consensus into each rank's own state: the consensus is what must agree.
  const field = asynchronous && options.easgdAlpha !== undefined ? 'consensus' : 'params';
  for (const version of versions) {
    const hashes = records.flatMap((list) => list.filter((record) => record.version === version));
    const distinct = new Set(hashes.map((record) => record[field]));
    if (distinct.size > 1) {
      const byRank = hashes
        .map((record) => `rank ${record.rank} ${String(record[field]).slice(0, 12)}`)
        .join(', ');
      return fail(`${field} differ across ranks after round ${version}: ${byRank}`);
    }
  }
  // Loss per round: the mean over the ranks that applied it of their losses since their last round.
  const losses = versions.flatMap((version) => {
    const values = records.flatMap((list) =>
      list
        .filter((record) => record.version === version && Number.isFinite(record.loss))
        .map((record) => record.loss),
    );
    return values.length > 0 ? [values.reduce((sum, value) => sum + value, 0) / values.length] : [];
  });
  const span = Math.min(3, Math.max(1, Math.floor(losses.length / 4)));
  const mean = (/** @type {number[]} */ values) =>
    values.reduce((sum, value) => sum + value, 0) / values.length;
  const first = mean(losses.slice(0, span));
  const last = mean(losses.slice(-span));
  if (!(last < first)) return fail(`the loss did not fall: ${first.toFixed(2)} -> ${last.toFixed(2)}`);
  const agreed = field === 'params' ? 'params identical' : 'consensus identical';
  const death =
    kill === undefined
      ? ''
      : `rank ${kill.rank} died at step ${kill.atStep}, ${survivorsSaved ? `the survivor saved ${saved[0]} and stopped` : `${plural(records.length, 'survivor')} finished`}, `;
  return {
    ok: true,
    text: `${death}${rounds.length} rounds, ${agreed} on ${plural(records.length, 'rank')} after each, loss ${first.toFixed(2)} -> ${last.toFixed(2)}, ${seconds.toFixed(1)} s`,
  };
}

/** @param {readonly number[]} versions @returns {string} at most 12 of them */
function brief(versions) {
  return versions.length <= 12
    ? versions.join(',')
    : `${versions.slice(0, 12).join(',')},… ${versions.length} in all`;
}

/** @param {number} count @param {string} noun @returns {string} */
function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** @param {unknown} error @returns {string} */
function describe(error) {
  return error instanceof Error ? error.message : String(error);
}

const options = parseCommandLine();
const driverName = options.driver === 'coordinator' ? 'CoordinatorHost' : 'AveragingHost';
console.log(
  `gpu-cluster: ${options.nproc} ranks on ${options.device}, ${driverName}, about ${options.steps} steps per rank`,
);
let failed = 0;
for (const mode of options.modes) {
  const outcome = await runMode(mode, options);
  const verdict = judge(mode, options, outcome);
  if (!verdict.ok) failed += 1;
  console.log(`${verdict.ok ? 'ok  ' : 'FAIL'} ${mode}: ${verdict.text}`);
}
console.log(`${options.modes.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);

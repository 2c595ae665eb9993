// `pnpm bench:averaging`: the host averaging path (CpuSync / CpuCadence / CpuAsync) of a large
// model against this machine's own memcpy and loopback TCP bandwidth, and one collective
// averaging round (Gloo on the CPU) against an `allReduce` of the same bytes alone, all
// measured in one run. Prints a table; `--json FILE` writes the numbers.
//
//   pnpm bench:averaging -- [--params N] [--layers N] [--ranks N] [--rounds N] [--skip-collective] [--serial] [--json FILE]
//
// --serial: the root averages the whole model before sending any of it (the order before the
// hosts pipelined the two), for a comparison in the same conditions.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MassAccumulator } from '../src/averaging/index.js';
import { ConsensusPool, foldAndSend } from '../src/host/host-reduce.js';
import { ControlServer, createRunSecret, type DataChannel } from '../src/wire/index.js';
import type { RankCollectiveTiming, RankConfig, RankHostTiming } from './averaging-rank.js';
import { forkTs, loopbackBandwidth, memcpyBandwidth } from './bandwidth.js';
import { freePort } from './free-port.js';
import { fmt, intOption, median, nowMs, parseArgs, table, writeJson } from './stats.js';

const rankScript = fileURLToPath(new URL('./averaging-rank.ts', import.meta.url));

/** Options of {@link runAveragingBench}. */
export interface AveragingBenchOptions {
  /** Float32 parameters of the model (rounded to whole layers). Default 100 000 000. */
  params?: number;
  /** Parameter tensors (bias-free Linear layers). Default 25. */
  layers?: number;
  /** Rank processes. Default 2. */
  ranks?: number;
  /** Timed rounds (after one warm-up round). Default 5. */
  rounds?: number;
  /** Skip the collective (Gloo) part. */
  skipCollective?: boolean;
  /**
   * The root averages the whole model, then sends it (the hosts' order before 2026-12-03),
   * instead of the hosts' `foldAndSend`: each tensor averaged as its turn to go out comes.
   */
  serial?: boolean;
  /** Print progress and the tables. Default true. */
  print?: boolean;
}

/** Medians of one host round's phases, ms. */
export interface HostPhases {
  /** Signal to every contribution received at the root. */
  receive: number;
  /** Serial rounds: the contributions added, then averaged (0 when pipelined). */
  fold: number;
  average: number;
  /** The consensus into every data channel (pipelined: with the average). */
  sendBack: number;
  /** Signal to every rank having applied the consensus: the round. */
  round: number;
  /** The slowest rank's phases. */
  rankSnapshot: number;
  rankSend: number;
  rankApply: number;
}

/** The benchmark's result (also its JSON). */
export interface AveragingBenchResult {
  machine: { cpus: number; model: string; memoryGiB: number; node: string };
  params: number;
  tensors: number;
  bytes: number;
  ranks: number;
  rounds: number;
  memcpyBytesPerSec: number;
  loopbackBytesPerSec: number;
  /** One copy out, every contribution in over loopback, one fold, the consensus out, one copy back, ms. */
  limitMs: number;
  host: HostPhases & { roundsMs: number[]; ratioToLimit: number; pipelined: boolean };
  collective?: { averageMs: number; allReduceMs: number; ratio: number };
}

/** The floor of a host round: what it must move, at the machine's measured rates, ms. */
export function hostRoundLimitMs(bytes: number, ranks: number, memcpy: number, loopback: number): number {
  const copies = 1 /* snapshot out */ + ranks /* fold reads each contribution */ + 1; /* apply */
  const wire = 2 * ranks; /* every contribution in, the consensus out to every rank, through one root */
  return ((copies * bytes) / memcpy + (wire * bytes) / loopback) * 1000;
}

function shape(params: number, layers: number): { rows: number; columns: number; layers: number } {
  const perLayer = Math.max(1, Math.floor(params / layers));
  const rows = Math.max(1, Math.min(1000, perLayer));
  return { rows, columns: Math.max(1, Math.floor(perLayer / rows)), layers };
}

function waitFor<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }): void => {
      if (message.type !== type) return;
      cleanup();
      resolve(message as T);
    };
    const onExit = (code: number | null): void => {
      cleanup();
      reject(new Error(`a benchmark rank exited (code ${code}) before sending ${type}`));
    };
    const cleanup = (): void => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

async function hostRounds(
  geometry: ReturnType<typeof shape>,
  ranks: number,
  rounds: number,
  serial: boolean,
  log: (line: string) => void,
): Promise<{ phases: HostPhases; roundsMs: number[] }> {
  const secret = createRunSecret();
  const server = await ControlServer.listen({
    secret,
    worldSize: ranks,
    heartbeatIntervalMs: 0,
    idleTimeoutMs: 0,
  });
  const children: ChildProcess[] = [];
  try {
    const channels = new Map<number, DataChannel>();
    const allChannels = new Promise<void>((resolve) => {
      server.on('dataChannel', (rank, channel) => {
        channels.set(rank, channel);
        if (channels.size === ranks) resolve();
      });
    });
    for (let rank = 0; rank < ranks; rank += 1) {
      const config: RankConfig = {
        rank,
        worldSize: ranks,
        ...geometry,
        host: { port: server.port, secretHex: Buffer.from(secret).toString('hex') },
      };
      children.push(forkTs(rankScript, [JSON.stringify(config)]));
    }
    await Promise.all(children.map((child) => waitFor(child, 'ready')));
    await allChannels;
    const samples: (HostPhases & { version: number })[] = [];
    // As CoordinatorHost does: each consensus in a kept buffer set, the last one held.
    const pool = new ConsensusPool();
    for (let version = 1; version <= rounds + 1; version += 1) {
      const start = nowMs();
      const done = children.map((child) =>
        waitFor<{ timing: RankHostTiming }>(child, 'done').then((message) => message.timing),
      );
      const ordered = [...channels.keys()].sort((left, right) => left - right);
      const arriving = ordered.map((rank) =>
        (channels.get(rank) as DataChannel).receiveContribution({ timeoutMs: 600_000 }),
      );
      for (const [rank, child] of children.entries()) child.send({ type: 'round', version, mass: rank + 1 });
      const contributions = await Promise.all(arriving);
      const received = nowMs();
      const buffers = pool.acquire();
      let folded = received;
      let averaged = received;
      if (serial) {
        const root = new MassAccumulator();
        for (const [index, contribution] of contributions.entries())
          root.add(ordered[index] as number, contribution.tensors);
        folded = nowMs();
        const consensus = root.average(buffers);
        averaged = nowMs();
        // The folded contributions' buffers take the next round's.
        for (const [index, contribution] of contributions.entries())
          channels.get(ordered[index] as number)?.recycle(contribution.tensors);
        await Promise.all(
          ordered.map((rank) => (channels.get(rank) as DataChannel).send(version, consensus)),
        );
      } else {
        // Exactly what CoordinatorHost and AveragingHost run.
        const byRank = new Map(
          contributions.map((contribution, index) => [ordered[index] as number, contribution]),
        );
        await foldAndSend('bench:averaging', server, version, ordered, byRank, buffers);
      }
      const sentBack = nowMs();
      pool.holdLast(buffers);
      const timings = await Promise.all(done);
      const end = nowMs();
      const slowest = (key: keyof RankHostTiming): number =>
        Math.max(...timings.map((timing) => timing[key]));
      const sample = {
        version,
        receive: received - start,
        fold: folded - received,
        average: averaged - folded,
        sendBack: sentBack - averaged,
        round: end - start,
        rankSnapshot: slowest('snapshot'),
        rankSend: slowest('send'),
        rankApply: slowest('apply'),
      };
      log(`  round ${version}${version === 1 ? ' (warm-up)' : ''}: ${fmt(sample.round)} ms`);
      if (version > 1) samples.push(sample);
    }
    const pick = (key: keyof HostPhases): number => median(samples.map((sample) => sample[key]));
    const phases: HostPhases = {
      receive: pick('receive'),
      fold: pick('fold'),
      average: pick('average'),
      sendBack: pick('sendBack'),
      round: pick('round'),
      rankSnapshot: pick('rankSnapshot'),
      rankSend: pick('rankSend'),
      rankApply: pick('rankApply'),
    };
    return { phases, roundsMs: samples.map((sample) => sample.round) };
  } finally {
    for (const child of children) child.send?.({ type: 'stop' });
    await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
    await server.close({ timeoutMs: 2000 });
  }
}

async function collectiveRounds(
  geometry: ReturnType<typeof shape>,
  ranks: number,
  rounds: number,
): Promise<{ averageMs: number; allReduceMs: number }> {
  const port = await freePort();
  const children = Array.from({ length: ranks }, (_, rank) => {
    const config: RankConfig = {
      rank,
      worldSize: ranks,
      ...geometry,
      collective: { port, rounds: rounds + 1 },
    };
    return forkTs(rankScript, [JSON.stringify(config)]);
  });
  const results = await Promise.all(
    children.map((child) => waitFor<{ timings: RankCollectiveTiming[] }>(child, 'collective')),
  );
  await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
  // Per round, the slower rank; the warm-up round left out.
  const perRound = (key: keyof RankCollectiveTiming): number[] =>
    (results[0] as { timings: RankCollectiveTiming[] }).timings
      .map((_, round) =>
        Math.max(...results.map((result) => (result.timings[round] as RankCollectiveTiming)[key])),
      )
      .slice(1);
  return { averageMs: median(perRound('average')), allReduceMs: median(perRound('allReduce')) };
}

/** Runs the benchmark; see the file's head. */
export async function runAveragingBench(options: AveragingBenchOptions = {}): Promise<AveragingBenchResult> {
  const print = options.print ?? true;
  const log = (line: string): void => {
    if (print) console.log(line);
  };
  const geometry = shape(options.params ?? 100_000_000, options.layers ?? 25);
  const params = geometry.rows * geometry.columns * geometry.layers;
  const bytes = params * 4;
  const ranks = options.ranks ?? 2;
  const rounds = options.rounds ?? 5;
  log(
    `averaging: ${params} float32 parameters in ${geometry.layers} tensors (${fmt(bytes / 2 ** 20)} MiB), ${ranks} ranks`,
  );
  const probe = Math.min(bytes, 256 * 2 ** 20);
  const memcpyBefore = memcpyBandwidth(probe);
  const loopbackBefore = await loopbackBandwidth(probe);
  log(`  memcpy ${fmt(memcpyBefore / 1e9)} GB/s, loopback TCP ${fmt(loopbackBefore / 1e9)} GB/s`);
  const serial = options.serial ?? false;
  const host = await hostRounds(geometry, ranks, rounds, serial, log);
  // Measured again after the rounds: the machine is shared, take the better of the two.
  const memcpy = Math.max(memcpyBefore, memcpyBandwidth(probe));
  const loopback = Math.max(loopbackBefore, await loopbackBandwidth(probe));
  const limitMs = hostRoundLimitMs(bytes, ranks, memcpy, loopback);
  const result: AveragingBenchResult = {
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    params,
    tensors: geometry.layers,
    bytes,
    ranks,
    rounds,
    memcpyBytesPerSec: memcpy,
    loopbackBytesPerSec: loopback,
    limitMs,
    host: {
      ...host.phases,
      roundsMs: host.roundsMs,
      ratioToLimit: host.phases.round / limitMs,
      pipelined: !serial,
    },
  };
  if (!options.skipCollective) {
    const collective = await collectiveRounds(geometry, ranks, rounds);
    result.collective = { ...collective, ratio: collective.averageMs / collective.allReduceMs };
  }
  log('');
  log(
    table(
      ['host round (median)', 'ms'],
      [
        ['rank snapshot (scale, copy out)', fmt(result.host.rankSnapshot)],
        ['rank send (into the socket)', fmt(result.host.rankSend)],
        ['root: every contribution in', fmt(result.host.receive)],
        ...(serial
          ? [
              ['root: fold', fmt(result.host.fold)],
              ['root: average', fmt(result.host.average)],
              ['root: consensus out', fmt(result.host.sendBack)],
            ]
          : [['root: average and consensus out (pipelined)', fmt(result.host.sendBack)]]),
        ['rank apply', fmt(result.host.rankApply)],
        ['round', fmt(result.host.round)],
        ['limit (memcpy + loopback)', fmt(limitMs)],
        ['round / limit', fmt(result.host.ratioToLimit)],
      ],
    ),
  );
  if (result.collective) {
    log('');
    log(
      table(
        ['collective (Gloo, median)', 'ms'],
        [
          ['collectiveAverage', fmt(result.collective.averageMs)],
          ['allReduce of the same tensors', fmt(result.collective.allReduceMs)],
          ['average / allReduce', fmt(result.collective.ratio)],
        ],
      ),
    );
  }
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const result = await runAveragingBench({
    params: intOption(args, 'params', 100_000_000),
    layers: intOption(args, 'layers', 25),
    ranks: intOption(args, 'ranks', 2),
    rounds: intOption(args, 'rounds', 5),
    skipCollective: args.has('skip-collective'),
    serial: args.has('serial'),
  });
  writeJson(args.get('json'), result);
}

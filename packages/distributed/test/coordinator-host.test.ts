// CoordinatorHost and the launcher's exit feed, in one process: a reported process end is a
// death the coordinator acts on at once, and an elastic run's maxFailure becomes its own.
import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinatorOptions } from '../src/coordinator/index.js';
import { AveragingHost, CoordinatorHost } from '../src/host/index.js';
import { RankExitFeed } from '../src/launcher/index.js';
import { ControlServer, createRunSecret } from '../src/wire/index.js';

const servers: ControlServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close({ timeoutMs: 1000 });
});

async function attach(run: RankExitFeed, coordinator: Partial<CoordinatorOptions> = {}) {
  const server = await ControlServer.listen({ secret: createRunSecret(), worldSize: 3 });
  servers.push(server);
  const host = CoordinatorHost.attach(server, {
    mode: 'NcclCadence',
    run,
    coordinator: { worldSize: 3, totalSamples: 480, batchSize: 16, numEpochs: 1, ...coordinator },
  });
  // Formation without sockets: the coordinator only needs the joins.
  for (const rank of [0, 1, 2]) host.feed({ type: 'RankJoined', rank });
  host.detach();
  return host;
}

describe('CoordinatorHost with the launcher run', () => {
  it('turns a reported exit into a death: DeclareDead to the survivors, a new session id asked of the lowest', async () => {
    const run = new RankExitFeed(3, true, undefined);
    const host = await attach(run);
    expect(host.coordinator.state).toBe('running');
    const sent = host.commands.length;
    run.emit({
      rank: 1,
      localRank: 1,
      pid: 4242,
      exitCode: null,
      signal: 'SIGKILL',
      outcome: 'failed',
      failure: {
        rank: 1,
        localRank: 1,
        pid: 4242,
        exitCode: null,
        signal: 'SIGKILL',
        message: 'killed by signal SIGKILL',
        stack: undefined,
        time: Date.now(),
        source: 'launcher',
      },
    });
    expect(host.exits.map((exit) => exit.rank)).toEqual([1]);
    expect(host.coordinator.deathRecords()).toMatchObject([
      { rank: 1, cause: 'process-exit', signal: 'SIGKILL', pid: 4242, message: 'killed by signal SIGKILL' },
    ]);
    expect(host.commands.slice(sent).map(({ rank, command }) => `${rank} ${command.type}`)).toEqual(
      expect.arrayContaining(['0 DeclareDead', '2 DeclareDead', '0 RequestNewNcclId']),
    );
    // The lowest survivor's answer re-forms the survivors with dense ranks in ascending order.
    const uidBytes = new TextEncoder().encode('127.0.0.1:4000');
    host.feed({ type: 'NewNcclIdGenerated', rank: 0, uidBytes });
    const sessions = host.commands.filter(({ command }) => command.type === 'NewNcclSession');
    expect(sessions).toEqual([
      { rank: 0, command: { type: 'NewNcclSession', uidBytes, newRank: 0, newWorldSize: 2 } },
      { rank: 2, command: { type: 'NewNcclSession', uidBytes, newRank: 1, newWorldSize: 2 } },
    ]);
  });

  it("takes an elastic run's maxFailure, and ignores exits after the run finished", async () => {
    const run = new RankExitFeed(3, true, { absolute: 1 });
    const host = await attach(run);
    expect(host.coordinator.config.maxFailure).toEqual({ absolute: 1 });
    run.emit({ rank: 2, localRank: 2, pid: 1, exitCode: 3, signal: null, outcome: 'failed' });
    expect(host.coordinator.finishReason).toBe('MaxFailureExceeded');
    expect(host.commands.filter(({ command }) => command.type === 'ShutdownWithSave')).toHaveLength(1);
    run.emit({ rank: 0, localRank: 0, pid: 2, exitCode: 0, signal: null, outcome: 'ok' });
    expect(host.coordinator.deathRecords().map((record) => record.rank)).toEqual([2]);
  });

  it('leaves maxFailure alone in a plain run (the launcher stops everyone at the first death)', async () => {
    const host = await attach(new RankExitFeed(3, false, undefined));
    expect(host.coordinator.config.maxFailure).toBeUndefined();
  });

  it('takes its heartbeat timeout from the run, ends ranks it declares dead, and those still running long after the finish', async () => {
    const run = new RankExitFeed(3, true, { absolute: 2 }, 500);
    const stopped: [number, string][] = [];
    const running = new Set([0, 1, 2]);
    // The launcher's side of the run: which processes run, and stopping one.
    run.supervise({
      ranks: () =>
        [0, 1, 2].map((rank) => ({ rank, localRank: rank, pid: 100 + rank, running: running.has(rank) })),
      stopRank: (rank, reason) => {
        stopped.push([rank, reason]);
        return running.has(rank);
      },
    });
    const host = await attach(run, { callbackTimeoutMs: 1 });
    expect(host.coordinator.config.heartbeatTimeoutMs).toBe(500);
    // A dropped connection: the process gets min(2 s, livenessMs) to end on its own first.
    host.feed({ type: 'ConnectionLost', rank: 1, message: 'control connection closed' });
    expect(stopped).toEqual([]);
    // A reported process end is not stopped at all.
    running.delete(2);
    run.emit({ rank: 2, localRank: 2, pid: 102, exitCode: 3, signal: null, outcome: 'failed' });
    expect(host.coordinator.finishReason).toBe('MaxFailureExceeded');
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(stopped).toEqual([
      [1, 'declared dead by the coordinator (connection-lost: control connection closed)'],
    ]);
    // Ranks 0 and 1 never exit: after max(2 × livenessMs, callbackTimeoutMs) they are ended.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(stopped.slice(1)).toEqual([
      [0, 'still running 1000 ms after the run finished'],
      [1, 'still running 1000 ms after the run finished'],
    ]);
  });
});

describe('CoordinatorHost history', () => {
  it('keeps the newest historyLimit notices and commands of a long run; observers see every one', async () => {
    const server = await ControlServer.listen({ secret: createRunSecret(), worldSize: 2 });
    servers.push(server);
    let now = 0;
    const host = CoordinatorHost.attach(server, {
      mode: 'CpuCadence',
      clock: { now: () => now },
      historyLimit: 5,
      coordinator: { worldSize: 2, totalSamples: 64, batchSize: 4, numEpochs: 1000 },
    });
    const seen: string[] = [];
    host.addObserver({ command: ({ rank, command }) => seen.push(`${rank} ${command.type}`) });
    for (const rank of [0, 1]) host.feed({ type: 'RankJoined', rank });
    host.detach();
    // Heartbeats and plans: each rank trains every plan it gets and reports it.
    for (let tick = 0; tick < 400; tick++) {
      now += 1000;
      host.feed({ type: 'Tick' });
      for (const { rank, command } of host.commands.slice(-4)) {
        if (command.type !== 'StartEpoch') continue;
        const { epoch, partitionSize } = command.plan;
        host.feed({ type: 'Batch', rank, batchMs: 1, dataMs: 0, stepCount: tick + 1, batchLoss: 0.5 });
        host.feed({ type: 'Metrics', rank, ...metricsOf(epoch, partitionSize) });
      }
    }
    expect(seen.length).toBeGreaterThan(50);
    expect(host.commands.length).toBeGreaterThanOrEqual(5);
    expect(host.commands.length).toBeLessThan(10);
    expect(host.commands.map(({ rank, command }) => `${rank} ${command.type}`)).toEqual(
      seen.slice(-host.commands.length),
    );
    expect(host.notices.length).toBeLessThan(10);
  });

  it('refuses a historyLimit that is not an integer ≥ 1 (both hosts)', async () => {
    const server = await ControlServer.listen({ secret: createRunSecret(), worldSize: 1 });
    servers.push(server);
    const coordinator = { worldSize: 1, totalSamples: 8, batchSize: 4, numEpochs: 1 };
    for (const historyLimit of [0, 2.5, Number.NaN]) {
      expect(() => CoordinatorHost.attach(server, { mode: 'CpuCadence', coordinator, historyLimit })).toThrow(
        /historyLimit/,
      );
      expect(() => AveragingHost.attach(server, { mode: 'CpuCadence', worldSize: 1, historyLimit })).toThrow(
        /historyLimit/,
      );
    }
  });
});

/** A rank's report of a plan of `size` samples (batches of 4), trained in 1 ms a batch. */
function metricsOf(epoch: number, size: number) {
  const batches = Math.floor(size / 4);
  return {
    epoch,
    avgLoss: 0.5,
    batchesProcessed: batches,
    epochMs: batches,
    samplesProcessed: size,
    shareCompleteMs: batches,
    computeOnlyMs: batches,
    dataStarveMs: 0,
    scalars: {},
  };
}

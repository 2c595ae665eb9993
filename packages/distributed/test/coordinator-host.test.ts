// CoordinatorHost and the launcher's exit feed, in one process: a reported process end is a
// death the coordinator acts on at once, and an elastic run's maxFailure becomes its own.
import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorHost } from '../src/host/index.js';
import { RankExitFeed } from '../src/launcher/index.js';
import { ControlServer, createRunSecret } from '../src/wire/index.js';

const servers: ControlServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close({ timeoutMs: 1000 });
});

async function attach(run: RankExitFeed) {
  const server = await ControlServer.listen({ secret: createRunSecret(), worldSize: 3 });
  servers.push(server);
  const host = CoordinatorHost.attach(server, {
    mode: 'NcclCadence',
    run,
    coordinator: { worldSize: 3, totalSamples: 480, batchSize: 16, numEpochs: 1 },
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
});

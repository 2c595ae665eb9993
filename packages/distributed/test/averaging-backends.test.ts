// The averaging backends behind one interface, driven by an in-process context (no network),
// and the mode vocabulary that picks them, under every name users import it by.
import { Linear } from '@flodl/nn';
import { describe, expect, it } from 'vitest';
import {
  type AveragedEvent,
  type AveragingContext,
  HostBackend,
  isAveragingCommand,
} from '../src/averaging/backends/index.js';
import * as coordinator from '../src/coordinator/index.js';
import * as root from '../src/index.js';
import * as launcher from '../src/launcher/index.js';
import { EL_CHE_MODES, isChunkedMode, isCollectiveMode, LAUNCH_MODES } from '../src/modes.js';
import type { DataChannel } from '../src/wire/data-channel.js';
import type { CoordinatorMessage } from '../src/wire/messages.js';

/** A context that records what a backend does of the session. */
function contextFor(): AveragingContext & { events: AveragedEvent[]; sent: string[] } {
  const events: AveragedEvent[] = [];
  const sent: string[] = [];
  const backlog: CoordinatorMessage[] = [];
  return {
    model: new Linear(2, 2),
    control: {
      syncAck: () => sent.push('SyncAck'),
      snapshotReady: (version: number) => sent.push(`SnapshotReady ${version}`),
      rendezvousMinted: () => sent.push('NewNcclIdGenerated'),
      poll: () => [],
    } as unknown as AveragingContext['control'],
    timeoutMs: 1000,
    version: 0,
    stepCount: 0,
    closeWindow: (version) => ({ version, steps: 1, mass: 1 }),
    reopenWindow: () => {},
    applied: (event) => events.push(event),
    backlog,
    serve: async () => {},
    awaitControl: async () => false,
    events,
    sent,
  };
}

describe('the mode vocabulary', () => {
  it('is one list under every name it is exported by', () => {
    expect(LAUNCH_MODES).toBe(EL_CHE_MODES);
    expect(root.LAUNCH_MODES).toBe(EL_CHE_MODES);
    expect(launcher.LAUNCH_MODES).toBe(EL_CHE_MODES);
    expect(coordinator.EL_CHE_MODES).toBe(EL_CHE_MODES);
    expect(root.isCollectiveMode).toBe(isCollectiveMode);
    expect(root.isChunkedMode).toBe(isChunkedMode);
    expect(EL_CHE_MODES.filter(isCollectiveMode)).toEqual(['NcclSync', 'NcclCadence']);
  });
});

describe('averaging backends', () => {
  it('serve only the averaging commands', () => {
    expect(isAveragingCommand({ type: 'SyncNow' } as CoordinatorMessage)).toBe(true);
    expect(isAveragingCommand({ type: 'RequestParams', version: 1 } as CoordinatorMessage)).toBe(true);
    expect(isAveragingCommand({ type: 'Shutdown' } as CoordinatorMessage)).toBe(false);
  });

  it('a host backend refuses a collective round and holds only in CpuSync / CpuCadence', async () => {
    const data = {} as DataChannel;
    const held = new HostBackend(contextFor(), { data, async: false });
    const async = new HostBackend(contextFor(), { data, async: true });
    expect([held.holdsRound, async.holdsRound]).toEqual([true, false]);
    await expect(held.serve({ type: 'SyncNow' } as never)).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
  });
});

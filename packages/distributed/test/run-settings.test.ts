// The run settings a rank announces in its Hello: carried whole to the coordinator's options,
// malformed ones refused, and a rank whose settings differ from the run's named at the handshake.
import { describe, expect, it } from 'vitest';
import { ClusterCoordinator } from '../src/coordinator/index.js';
import {
  coordinatorOptionsFor,
  encodeRunSettings,
  type RunSettings,
  RunSettingsGate,
  runSettingsOf,
} from '../src/host/index.js';

const SETTINGS: RunSettings = {
  mode: 'CpuCadence',
  totalSamples: 6400,
  batchSize: 32,
  numEpochs: 2,
  seed: 42,
  lookaheadBatches: 3,
  model: { parameters: 2, buffers: 0, structure: 'abc', values: 'def' },
};

const hello = (rank: number, settings: unknown) => ({
  rank,
  capabilities: encodeRunSettings(settings as RunSettings),
});

describe('run settings', () => {
  it('round-trips through the Hello and plans the coordinator with lookaheadBatches', () => {
    expect(runSettingsOf(hello(0, SETTINGS))).toEqual(SETTINGS);
    const options = coordinatorOptionsFor(SETTINGS, 2);
    expect(options.lookaheadBatches).toBe(3);
    expect(new ClusterCoordinator(options).config.lookaheadBatches).toBe(3);
    const { lookaheadBatches: _unset, ...plain } = SETTINGS;
    expect(new ClusterCoordinator(coordinatorOptionsFor(plain, 2)).config.lookaheadBatches).toBe(0);
  });

  it('refuses a malformed lookaheadBatches, and a rank whose lookahead differs from the run’s', () => {
    expect(runSettingsOf(hello(0, { ...SETTINGS, lookaheadBatches: -1 }))).toBe('bad lookaheadBatches');
    expect(runSettingsOf(hello(0, { ...SETTINGS, lookaheadBatches: 1.5 }))).toBe('bad lookaheadBatches');
    const gate = new RunSettingsGate();
    expect(gate.admit(hello(0, SETTINGS))).toBeUndefined();
    expect(gate.admit(hello(1, { ...SETTINGS, lookaheadBatches: 0 }))).toMatch(
      /rank 1 cannot join the run rank 0 formed: its lookaheadBatches is 0 where the run's is 3/,
    );
    expect(
      () => new ClusterCoordinator({ ...coordinatorOptionsFor(SETTINGS, 2), lookaheadBatches: -2 }),
    ).toThrow(/lookaheadBatches/);
  });

  it("carries a script's progress(false) to the launcher, and refuses another progress value", () => {
    expect(runSettingsOf(hello(0, { ...SETTINGS, progress: false }))).toEqual({
      ...SETTINGS,
      progress: false,
    });
    expect(runSettingsOf(hello(0, { ...SETTINGS, progress: true } as never))).toBe('bad progress');
  });
});

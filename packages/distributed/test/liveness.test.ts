// The one liveness setting and the deadlines that derive from it.
import { FlodlError } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { parseLaunchArgs, rankEnvironment, resolveLaunchOptions } from '../src/launcher/index.js';
import { LIVENESS_ENV, livenessFromEnv, livenessTimeouts } from '../src/wire/index.js';

describe('livenessMs', () => {
  it('derives every deadline from one setting', () => {
    expect(livenessTimeouts()).toEqual({
      livenessMs: 30_000,
      heartbeatTimeoutMs: 30_000,
      coordinatorTimeoutMs: 30_000,
      heartbeatIntervalMs: 1000,
      sessionTimeoutMs: 60_000,
    });
    expect(livenessTimeouts(3000)).toMatchObject({
      heartbeatTimeoutMs: 3000,
      heartbeatIntervalMs: 500,
      sessionTimeoutMs: 6000,
    });
    for (const bad of [100, Number.NaN, Number.POSITIVE_INFINITY, '3000']) {
      let error: unknown;
      try {
        livenessTimeouts(bad as number);
      } catch (caught) {
        error = caught;
      }
      expect(FlodlError.isInstance(error) && error.code).toBe('ERR_INVALID_ARGUMENT');
    }
  });

  it('reaches the ranks as FLODL_LIVENESS_MS, and a launcher inside a run inherits it', () => {
    const options = resolveLaunchOptions({ nproc: 2, script: 'train.js', livenessMs: 4000 });
    expect(options.livenessMs).toBe(4000);
    const environment = rankEnvironment(
      options,
      { rank: 1, localRank: 1 },
      new Uint8Array(32),
      29500,
      '/tmp/x',
    );
    expect(environment[LIVENESS_ENV]).toBe('4000');
    expect(livenessFromEnv(environment).sessionTimeoutMs).toBe(8000);
    expect(livenessFromEnv({}).livenessMs).toBe(30_000);
    const previous = process.env[LIVENESS_ENV];
    process.env[LIVENESS_ENV] = '2500';
    try {
      expect(resolveLaunchOptions({ nproc: 1, script: 'train.js' }).livenessMs).toBe(2500);
    } finally {
      if (previous === undefined) delete process.env[LIVENESS_ENV];
      else process.env[LIVENESS_ENV] = previous;
    }
    expect(() => livenessFromEnv({ [LIVENESS_ENV]: 'soon' })).toThrow(/FLODL_LIVENESS_MS/);
  });

  it('is --liveness-ms on the command line', () => {
    expect(parseLaunchArgs(['launch', '--nproc', '2', '--liveness-ms', '5000', 's.ts'])).toMatchObject({
      options: { livenessMs: 5000 },
    });
    expect(() => parseLaunchArgs(['launch', '--nproc', '2', '--liveness-ms', '100', 's.ts'])).toThrow(
      /--liveness-ms/,
    );
  });
});

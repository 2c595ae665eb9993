// Which part a process plays: flodl-launched rank, torchrun-style or SLURM rank, launcher, single.
import { FlodlError } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { detectRole, externalRunSecret, firstSlurmHost, type RankRole } from '../src/trainer/role.js';

describe('detectRole', () => {
  it('reads flodl launch, torchrun-style and SLURM variables', () => {
    expect(detectRole(['cpu'], {})).toEqual({ kind: 'single' });
    expect(detectRole(['cpu', 'cpu'], {})).toEqual({ kind: 'launcher' });
    expect(
      detectRole(['cpu'], {
        FLODL_RANK: '1',
        FLODL_WORLD_SIZE: '2',
        FLODL_DEVICE: 'cuda',
        FLODL_DEVICE_INDEX: '1',
      }),
    ).toMatchObject({ kind: 'rank', rank: 1, worldSize: 2, device: 'cuda:1', launchedBy: 'flodl' });
    expect(
      detectRole(['cpu', 'cpu'], {
        FLODL_RANK: '1',
        FLODL_WORLD_SIZE: '2',
        FLODL_TRAINER_DEVICES: 'cpu,cuda:0',
      }),
    ).toMatchObject({ device: 'cuda:0' });
    expect(
      detectRole(['cpu'], {
        RANK: '2',
        WORLD_SIZE: '4',
        LOCAL_RANK: '0',
        MASTER_ADDR: '10.1.2.3',
        MASTER_PORT: '29400',
      }),
    ).toMatchObject({
      kind: 'rank',
      rank: 2,
      worldSize: 4,
      localRank: 0,
      launchedBy: 'external',
      coordinator: { host: '10.1.2.3', port: 29400 },
    });
    expect(
      detectRole(['cpu'], {
        SLURM_PROCID: '3',
        SLURM_NTASKS: '8',
        SLURM_LOCALID: '1',
        SLURM_NODELIST: 'gpu[07-08]',
      }),
    ).toMatchObject({ rank: 3, worldSize: 8, localRank: 1, coordinator: { host: 'gpu07', port: 29500 } });
    expect(detectRole(['cpu'], { RANK: '0', WORLD_SIZE: '1' })).toEqual({ kind: 'single' });
  });

  it('refuses inconsistent variables with the names', () => {
    const error = (() => {
      try {
        detectRole(['cpu'], { RANK: 'x', WORLD_SIZE: '2' });
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(FlodlError.isInstance(error) && error.message).toContain('RANK is not a rank number');
    expect(() => detectRole(['cpu'], { RANK: '3', WORLD_SIZE: '2', MASTER_ADDR: 'h' })).toThrow(/do not fit/);
    expect(() => detectRole(['cpu'], { RANK: '0', WORLD_SIZE: '2' })).toThrow(/no coordinator address/);
  });

  it('reads the first host of a SLURM node list', () => {
    expect(firstSlurmHost('node[01-04,07],gpu3')).toBe('node01');
    expect(firstSlurmHost('login2')).toBe('login2');
    expect(firstSlurmHost(undefined)).toBeUndefined();
  });

  it('derives a secret on one host, and asks for FLODL_SECRET across hosts', () => {
    const role = (host: string): RankRole => ({
      kind: 'rank',
      rank: 0,
      worldSize: 2,
      localRank: 0,
      device: 'cpu',
      launchedBy: 'external',
      coordinator: { host, port: 29500 },
    });
    expect(externalRunSecret(role('127.0.0.1'), {})).toMatch(/^[0-9a-f]{64}$/);
    expect(externalRunSecret(role('127.0.0.1'), {})).toBe(externalRunSecret(role('127.0.0.1'), {}));
    expect(externalRunSecret(role('10.0.0.5'), { FLODL_SECRET: 'ab'.repeat(32) })).toBe('ab'.repeat(32));
    expect(() => externalRunSecret(role('10.0.0.5'), {})).toThrow(/needs a shared secret/);
  });
});

// Which part this process plays in a run: a rank started by `flodl launch` (or by a
// Trainer's launcher), a rank started by an external launcher (torchrun-style variables,
// SLURM), the launcher of a multi-device run, or a single-device run.
import { createHash } from 'node:crypto';
import { type Device, FlodlError } from '@flodl/tensor-native';

/** Environment variable with the rank devices a Trainer's launcher hands its ranks. */
export const TRAINER_DEVICES_ENV = 'FLODL_TRAINER_DEVICES';

/** A rank process. */
export interface RankRole {
  kind: 'rank';
  rank: number;
  worldSize: number;
  localRank: number;
  device: Device;
  /** `flodl`: started by flodl's launcher (it exits when done); `external`: torchrun-style or SLURM. */
  launchedBy: 'flodl' | 'external';
  /** External ranks: where rank 0 hosts the coordinator. */
  coordinator?: { host: string; port: number };
}

export type ProcessRole = RankRole | { kind: 'launcher' } | { kind: 'single' };

/**
 * The role of this process for a run on `devices`.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for inconsistent rank variables
 */
export function detectRole(
  devices: readonly Device[],
  environment: NodeJS.ProcessEnv = process.env,
): ProcessRole {
  if (environment.FLODL_RANK !== undefined) {
    const rank = integer(environment, 'FLODL_RANK');
    const worldSize = integer(environment, 'FLODL_WORLD_SIZE');
    const localRank =
      environment.FLODL_LOCAL_RANK === undefined ? rank : integer(environment, 'FLODL_LOCAL_RANK');
    return {
      kind: 'rank',
      rank,
      worldSize,
      localRank,
      device: flodlRankDevice(environment, rank, localRank),
      launchedBy: 'flodl',
    };
  }
  const external = externalRank(environment, devices);
  if (external) return external;
  return devices.length > 1 ? { kind: 'launcher' } : { kind: 'single' };
}

function flodlRankDevice(environment: NodeJS.ProcessEnv, rank: number, localRank: number): Device {
  const listed = environment[TRAINER_DEVICES_ENV]?.split(',');
  if (listed?.[rank]) return listed[rank] as Device;
  if (environment.FLODL_DEVICE === 'cuda')
    return `cuda:${environment.FLODL_DEVICE_INDEX ?? localRank}` as Device;
  return 'cpu';
}

/** torchrun-style (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`) or SLURM variables. */
function externalRank(environment: NodeJS.ProcessEnv, devices: readonly Device[]): RankRole | undefined {
  let rank: number;
  let worldSize: number;
  let localRank: number;
  let host: string | undefined;
  if (environment.RANK !== undefined && environment.WORLD_SIZE !== undefined) {
    rank = integer(environment, 'RANK');
    worldSize = integer(environment, 'WORLD_SIZE');
    localRank = environment.LOCAL_RANK === undefined ? rank : integer(environment, 'LOCAL_RANK');
    host = environment.MASTER_ADDR;
  } else if (environment.SLURM_PROCID !== undefined && environment.SLURM_NTASKS !== undefined) {
    rank = integer(environment, 'SLURM_PROCID');
    worldSize = integer(environment, 'SLURM_NTASKS');
    localRank = environment.SLURM_LOCALID === undefined ? 0 : integer(environment, 'SLURM_LOCALID');
    host =
      environment.MASTER_ADDR ??
      firstSlurmHost(environment.SLURM_STEP_NODELIST ?? environment.SLURM_NODELIST);
  } else return undefined;
  if (worldSize < 2) return undefined; // one task: a plain single-device run
  if (rank >= worldSize) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the rank variables do not fit together', {
      op: 'Trainer.run',
      expected: 'RANK < WORLD_SIZE',
      got: `rank ${rank} of ${worldSize}`,
    });
  }
  if (!host) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'no coordinator address for this rank', {
      op: 'Trainer.run',
      expected: 'MASTER_ADDR (rank 0 hosts the coordinator there), or a SLURM node list',
      got: 'neither',
    });
  }
  const port = environment.MASTER_PORT === undefined ? 29500 : integer(environment, 'MASTER_PORT');
  const device = devices.length === worldSize ? devices[rank] : devices[localRank % devices.length];
  return {
    kind: 'rank',
    rank,
    worldSize,
    localRank,
    device: (device ?? 'cpu') as Device,
    launchedBy: 'external',
    coordinator: { host, port },
  };
}

/** The first host of a SLURM node list (`node[01-04,07],gpu3` → `node01`). */
export function firstSlurmHost(list: string | undefined): string | undefined {
  if (!list) return undefined;
  const match = /^([^,[]+)(?:\[([^\]]+)\])?/.exec(list.trim());
  if (!match) return undefined;
  const [, prefix, range] = match;
  if (!range) return prefix;
  const first = range.split(',')[0]?.split('-')[0] ?? '';
  return `${prefix}${first}`;
}

/**
 * The run secret of externally launched ranks: `FLODL_SECRET` when set; on one host (a
 * loopback coordinator) a secret derived from the run's address and id, so the ranks agree
 * without a shared file.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for a multi-host run without `FLODL_SECRET`
 */
export function externalRunSecret(role: RankRole, environment: NodeJS.ProcessEnv = process.env): string {
  if (environment.FLODL_SECRET) return environment.FLODL_SECRET;
  const host = role.coordinator?.host ?? '';
  const loopback = host === 'localhost' || host.startsWith('127.') || host === '::1';
  if (!loopback) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'a multi-host run needs a shared secret', {
      op: 'Trainer.run',
      expected: 'FLODL_SECRET set to the same 64 hex digits on every host (openssl rand -hex 32)',
      got: `coordinator ${host} without FLODL_SECRET`,
    });
  }
  const run = environment.TORCHELASTIC_RUN_ID ?? environment.SLURM_JOB_ID ?? '';
  return createHash('sha256').update(`flodl-run|${host}|${role.coordinator?.port}|${run}`).digest('hex');
}

function integer(environment: NodeJS.ProcessEnv, name: string): number {
  const value = Number(environment[name]);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${name} is not a rank number`, {
      op: 'Trainer.run',
      expected: `${name} = a non-negative integer`,
      got: JSON.stringify(environment[name]),
    });
  }
  return value;
}

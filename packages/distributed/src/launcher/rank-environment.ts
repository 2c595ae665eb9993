import { LIVENESS_ENV, secretEnvironment } from '../wire/index.js';
import { RECORD_DIR_ENV } from './death-record.js';
import type { ResolvedLaunchOptions } from './options.js';
import { KILL_GRACE_ENV, LAUNCHER_PID_ENV } from './orphan-guard.js';

/** The role of one rank process, as the launcher hands it over. */
export interface RankRole {
  rank: number;
  localRank: number;
}

/**
 * The variables that tell a rank process its role. `CUDA_VISIBLE_DEVICES` is left
 * alone: every rank sees every GPU and picks `cuda:FLODL_DEVICE_INDEX`.
 * `FLODL_LAUNCHER_PID` and `FLODL_KILL_GRACE_MS` arm the rank's orphan guard;
 * `FLODL_LIVENESS_MS` carries the run's liveness setting.
 */
export function rankEnvironment(
  options: ResolvedLaunchOptions,
  role: RankRole,
  secret: Uint8Array,
  coordinatorPort: number,
  recordDir: string,
): Record<string, string> {
  const host = options.coordinatorHost.includes(':')
    ? `[${options.coordinatorHost}]`
    : options.coordinatorHost;
  const environment: Record<string, string> = {
    FLODL_RANK: String(role.rank),
    FLODL_LOCAL_RANK: String(role.localRank),
    FLODL_WORLD_SIZE: String(options.worldSize),
    FLODL_LOCAL_WORLD_SIZE: String(options.nproc),
    FLODL_NODE_RANK: String(options.nodeRank),
    FLODL_NNODES: String(options.nnodes),
    FLODL_COORDINATOR: `${host}:${coordinatorPort}`,
    FLODL_MODE: options.mode,
    FLODL_DEVICE: options.device,
    [RECORD_DIR_ENV]: recordDir,
    [LAUNCHER_PID_ENV]: String(process.pid),
    [KILL_GRACE_ENV]: String(options.killGraceMs),
    [LIVENESS_ENV]: String(options.livenessMs),
    ...secretEnvironment(secret),
  };
  if (options.device === 'cuda') environment.FLODL_DEVICE_INDEX = String(role.localRank);
  return environment;
}

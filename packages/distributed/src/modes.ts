// modes: the averaging-mode vocabulary of a run, in one place. The launcher, the coordinator,
// the hosts and the rank's session all speak it; it imports nothing of the package.

/**
 * The five averaging modes of floDl 0.7.0 (`ElCheMode`). The first word is the backend
 * (`Nccl`: an in-place device collective; `Cpu`: parameters averaged by mass on the
 * coordinator host), the second the policy (when to average).
 */
export type ElCheMode = 'NcclSync' | 'NcclCadence' | 'CpuSync' | 'CpuCadence' | 'CpuAsync';

/** Every {@link ElCheMode}, in floDl's order. */
export const EL_CHE_MODES: readonly ElCheMode[] = [
  'NcclSync',
  'NcclCadence',
  'CpuSync',
  'CpuCadence',
  'CpuAsync',
];

/** An averaging mode, as the launcher and the rank's session name it: the same type as {@link ElCheMode}. */
export type LaunchMode = ElCheMode;

/** The averaging modes a run can use (REFERENCE §5.3): {@link EL_CHE_MODES}, under the launcher's name. */
export const LAUNCH_MODES: readonly LaunchMode[] = EL_CHE_MODES;

/**
 * When to average (floDl `ApplyPolicy`): `Sync` after every step, `Cadence` when the slowest
 * rank has spent the anchor's wall time, `Async` when every rank has done its batch count.
 */
export type ApplyPolicy = 'Sync' | 'Cadence' | 'Async';

/** How to average (floDl `AverageBackend`). */
export type AverageBackend = 'Nccl' | 'Cpu';

/** The policy half of a mode. */
export function policyOf(mode: ElCheMode): ApplyPolicy {
  if (mode.endsWith('Sync')) return 'Sync';
  return mode.endsWith('Cadence') ? 'Cadence' : 'Async';
}

/** The backend half of a mode. */
export function backendOf(mode: ElCheMode): AverageBackend {
  return mode.startsWith('Nccl') ? 'Nccl' : 'Cpu';
}

/**
 * True for the modes that average through a device collective (NcclSync / NcclCadence; the
 * collective runs on Gloo on CPU devices): {@link backendOf} is `Nccl`.
 */
export function isCollectiveMode(mode: LaunchMode): boolean {
  return backendOf(mode) === 'Nccl';
}

/**
 * True for the modes whose coordinator hands out each epoch in chunks as the ranks ask
 * (progressive dispatch, `CoordinatorOptions.progressive`'s default): every mode but the Sync
 * ones, which split each epoch into whole partitions.
 */
export function isChunkedMode(mode: ElCheMode): boolean {
  return policyOf(mode) !== 'Sync';
}

// One liveness setting for the whole run. The launcher takes `livenessMs` and hands it to
// every rank as FLODL_LIVENESS_MS; the server's idle drop, the coordinator's heartbeat
// timeout, the rank client's coordinator timeout and the session's waits all derive from it,
// so they cannot disagree (a session giving up before the coordinator declared anyone dead).
import { invalidArgument } from '@flodl/tensor-native';

/** Environment variable with the run's liveness setting, ms (set by the launcher). */
export const LIVENESS_ENV = 'FLODL_LIVENESS_MS';
/** The liveness setting when none is given, ms. */
export const DEFAULT_LIVENESS_MS = 30_000;
/** The smallest liveness setting, ms (below it scheduling noise reads as death). */
export const MIN_LIVENESS_MS = 500;

/** Every deadline that derives from one liveness setting, ms. */
export interface LivenessTimeouts {
  /** The setting itself. */
  livenessMs: number;
  /** A rank silent this long is dead: the coordinator's heartbeat timeout and the server's idle drop. */
  heartbeatTimeoutMs: number;
  /** A rank that heard nothing from the coordinator this long counts its connection lost. */
  coordinatorTimeoutMs: number;
  /** Heartbeat (and coordinator beacon) period: a sixth of the setting, at most 1 s. */
  heartbeatIntervalMs: number;
  /**
   * Bound on a session's waits (a collective, a consensus, Shutdown) and on the coordinator
   * host's wait for a snapshot: twice the setting, so a death is declared before anyone gives up.
   */
  sessionTimeoutMs: number;
}

/**
 * The deadlines that derive from `livenessMs` (default {@link DEFAULT_LIVENESS_MS}): 30 000
 * gives heartbeat timeouts of 30 s, a 1 s heartbeat and 60 s session waits.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT unless `livenessMs` is a finite number ≥ {@link MIN_LIVENESS_MS}
 */
export function livenessTimeouts(
  livenessMs: number = DEFAULT_LIVENESS_MS,
  op = 'liveness',
): LivenessTimeouts {
  if (typeof livenessMs !== 'number' || !Number.isFinite(livenessMs) || livenessMs < MIN_LIVENESS_MS) {
    throw invalidArgument(op, 'livenessMs', `a number of milliseconds ≥ ${MIN_LIVENESS_MS}`, livenessMs);
  }
  return {
    livenessMs,
    heartbeatTimeoutMs: livenessMs,
    coordinatorTimeoutMs: livenessMs,
    heartbeatIntervalMs: Math.min(1000, Math.max(50, Math.round(livenessMs / 6))),
    sessionTimeoutMs: 2 * livenessMs,
  };
}

/**
 * The deadlines of the run this process was launched into (`FLODL_LIVENESS_MS`), or the
 * defaults outside a launched run.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT when `FLODL_LIVENESS_MS` is set but not a valid setting
 */
export function livenessFromEnv(environment: NodeJS.ProcessEnv = process.env): LivenessTimeouts {
  const text = environment[LIVENESS_ENV];
  if (text === undefined || text === '') return livenessTimeouts();
  return livenessTimeouts(Number(text), LIVENESS_ENV);
}

import { invalidArgument, unknownOptionError } from '@flodl/tensor-native';
import { EL_CHE_MODES, type ElCheMode } from '../coordinator/config.js';
import { checkMaxFailure } from '../coordinator/coordinator-config.js';
import type { MaxFailureThreshold } from '../coordinator/membership.js';
import type { ControlServer, ControlServerOptions } from '../wire/index.js';
import { livenessFromEnv, livenessTimeouts } from '../wire/liveness.js';
import type { LaunchRun } from './run.js';

/** The averaging modes a run can use (REFERENCE §5.3): ElChe's five modes, one type. */
export const LAUNCH_MODES: readonly ElCheMode[] = EL_CHE_MODES;
/** An averaging mode; the same type as the coordinator's {@link ElCheMode}. */
export type LaunchMode = ElCheMode;

/** Where ranks train. */
export const LAUNCH_DEVICES = ['cpu', 'cuda'] as const;
export type LaunchDevice = (typeof LAUNCH_DEVICES)[number];

/** The limits of node 0's coordinator server that `launch({ server })` can set. */
export type LaunchServerLimits = Pick<
  ControlServerOptions,
  'handshakeTimeoutMs' | 'idleTimeoutMs' | 'writeTimeoutMs' | 'maxPendingHandshakes'
>;

const SERVER_LIMITS = [
  'handshakeTimeoutMs',
  'idleTimeoutMs',
  'writeTimeoutMs',
  'maxPendingHandshakes',
] as const;

/** Options of `launch`. */
export interface LaunchOptions {
  /** Rank processes on this host. */
  nproc: number;
  /** The rank script: `.js`/`.mjs`/`.cjs` run with `node`, `.ts`/`.mts` with `node --import tsx`. */
  script: string;
  /** Arguments passed to every rank script. Default none. */
  args?: readonly string[];
  /** Device kind; with `cuda` each rank is told `cuda:LOCAL_RANK` via `FLODL_DEVICE_INDEX`. Default `cpu`. */
  device?: LaunchDevice;
  /** Averaging mode, handed to ranks as `FLODL_MODE`. Default `NcclCadence` on cuda, `CpuCadence` on cpu. */
  mode?: LaunchMode;
  /** Extra environment for every rank (the launcher's own role variables win). */
  env?: Readonly<Record<string, string>>;
  /** Coordinator port on a single host; 0 picks a free one. Default 0. Ignored when `coordinator` is set. */
  port?: number;
  /** Hosts in the run. Default 1. */
  nnodes?: number;
  /** This host's index, 0 ≤ nodeRank < nnodes; node 0 hosts the coordinator. Default 0. */
  nodeRank?: number;
  /** `host:port` every rank dials; required when `nnodes > 1`. Node 0 binds it. Default `127.0.0.1:<port>`. */
  coordinator?: string;
  /** Bound on the whole run, ms: past it the ranks are stopped and `launch` fails with ERR_TIMEOUT. Default none. */
  timeoutMs?: number;
  /** Between SIGTERM and SIGKILL when stopping ranks, ms. Default 3000. */
  killGraceMs?: number;
  /**
   * The run's one liveness setting, ms (≥ 500; `FLODL_LIVENESS_MS` for the ranks). A rank
   * silent this long is declared dead (and killed); the server drops its connection; a rank
   * that hears nothing from the coordinator this long gives up; heartbeats go every sixth
   * of it (at most 1 s); sessions wait at most twice it. Default `FLODL_LIVENESS_MS` of the
   * launcher's environment, else 30 000.
   */
  livenessMs?: number;
  /**
   * Limits of node 0's coordinator server (handshake bound, idle drop, write stall bound,
   * pending handshakes). Default: the server's defaults, the idle drop at `livenessMs`.
   */
  server?: LaunchServerLimits;
  /**
   * Folder for death records. Default a fresh folder under the OS temp dir, kept only when
   * the result (`lost`) or a `RankFailedError` names it, removed otherwise.
   */
  recordDir?: string;
  /** Extra Node flags for every rank, e.g. `['--expose-gc']`. Default none. */
  nodeArgs?: readonly string[];
  /** Ranks' stdio. Default `inherit`. */
  stdio?: 'inherit' | 'ignore';
  /**
   * Passes each rank's stdout and stderr on line by line with `[rank N] ` before every line
   * (whole lines, never two ranks' text within one; an unfinished last line is flushed when
   * the rank exits). Needs `stdio: 'inherit'`. Default false (`flodl launch`: on, `--no-prefix`
   * turns it off).
   */
  prefixOutput?: boolean;
  /** Stops the run (SIGTERM then SIGKILL to every rank); `launch` then resolves with `interrupted: true`. */
  signal?: AbortSignal;
  /**
   * Elastic membership: a rank that fails does not stop the others. Its death is reported
   * to the coordinator host (through `run` of `onServer`), the survivors keep training, and
   * `launch` resolves with the failed ranks in `lost`; it fails with `RankFailedError` only
   * when no rank finished or `maxFailure` was reached. Default false: the first failure stops
   * every rank and `launch` fails (`flodl launch --elastic`).
   */
  elastic?: boolean;
  /**
   * Elastic runs only: dead ranks at which the run fails, `{ absolute: n }` or
   * `{ percent: p }` (of the world size); the coordinator host takes it as its `maxFailure`
   * (the survivors save and exit). Default none: the run goes on while any rank lives.
   */
  maxFailure?: MaxFailureThreshold;
  /**
   * Called with the coordinator's `ControlServer` (node 0 only) after it listens and
   * before any rank starts: the hook where the rank runtime attaches a
   * `ClusterCoordinator` (`CoordinatorHost.attach(server, { ..., run })`). `run` reports
   * every local rank's process end as it happens. Without it the server only runs
   * handshakes, answers heartbeats with its beacon, and relays nothing.
   */
  onServer?: (server: ControlServer, run: LaunchRun) => void | Promise<void>;
}

/** `LaunchOptions` with defaults applied and every field checked. */
export interface ResolvedLaunchOptions {
  nproc: number;
  script: string;
  args: readonly string[];
  device: LaunchDevice;
  mode: LaunchMode;
  env: Readonly<Record<string, string>>;
  nnodes: number;
  nodeRank: number;
  worldSize: number;
  coordinatorHost: string;
  coordinatorPort: number;
  timeoutMs: number | undefined;
  killGraceMs: number;
  livenessMs: number;
  server: LaunchServerLimits;
  recordDir: string | undefined;
  nodeArgs: readonly string[];
  stdio: 'inherit' | 'ignore';
  prefixOutput: boolean;
  elastic: boolean;
  maxFailure: MaxFailureThreshold | undefined;
}

const KNOWN = new Set([
  'nproc',
  'script',
  'args',
  'device',
  'mode',
  'env',
  'port',
  'nnodes',
  'nodeRank',
  'coordinator',
  'timeoutMs',
  'killGraceMs',
  'livenessMs',
  'server',
  'recordDir',
  'nodeArgs',
  'stdio',
  'prefixOutput',
  'signal',
  'elastic',
  'maxFailure',
  'onServer',
]);

/**
 * Applies defaults and validates `launch`'s options.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT naming the first bad option
 */
export function resolveLaunchOptions(options: LaunchOptions): ResolvedLaunchOptions {
  const op = 'launch';
  if (typeof options !== 'object' || options === null) {
    throw invalidArgument(op, 'options', 'an options object', options);
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw unknownOptionError(op, key, [...KNOWN]);
  }
  const nproc = options.nproc;
  if (!Number.isInteger(nproc) || nproc < 1) throw invalidArgument(op, 'nproc', 'a positive integer', nproc);
  if (typeof options.script !== 'string' || options.script.length === 0) {
    throw invalidArgument(op, 'script', 'the path of a .js, .mjs, .cjs, .ts or .mts file', options.script);
  }
  const args = options.args ?? [];
  if (!Array.isArray(args) || args.some((value) => typeof value !== 'string')) {
    throw invalidArgument(op, 'args', 'an array of strings', args);
  }
  const device = options.device ?? 'cpu';
  if (!LAUNCH_DEVICES.includes(device)) throw invalidArgument(op, 'device', "'cpu' or 'cuda'", device);
  const mode = options.mode ?? (device === 'cuda' ? 'NcclCadence' : 'CpuCadence');
  if (!LAUNCH_MODES.includes(mode))
    throw invalidArgument(op, 'mode', `one of ${LAUNCH_MODES.join(', ')}`, mode);
  // On CPU devices the collective modes run their collective on Gloo (ARCHITECTURE §5).
  const nnodes = options.nnodes ?? 1;
  if (!Number.isInteger(nnodes) || nnodes < 1)
    throw invalidArgument(op, 'nnodes', 'a positive integer', nnodes);
  const nodeRank = options.nodeRank ?? 0;
  if (!Number.isInteger(nodeRank) || nodeRank < 0 || nodeRank >= nnodes) {
    throw invalidArgument(op, 'nodeRank', `an integer in [0, ${nnodes - 1}]`, nodeRank);
  }
  let coordinatorHost = '127.0.0.1';
  let coordinatorPort = options.port ?? 0;
  if (!Number.isInteger(coordinatorPort) || coordinatorPort < 0 || coordinatorPort > 65_535) {
    throw invalidArgument(op, 'port', 'an integer in [0, 65535] (0 picks a free port)', coordinatorPort);
  }
  if (options.coordinator !== undefined) {
    const parsed = parseCoordinator(options.coordinator);
    if (parsed === undefined) {
      throw invalidArgument(op, 'coordinator', "'host:port' with a port in [1, 65535]", options.coordinator);
    }
    [coordinatorHost, coordinatorPort] = parsed;
  } else if (nnodes > 1) {
    throw invalidArgument(op, 'coordinator', "'host:port' of node 0, required when nnodes > 1", undefined);
  }
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw invalidArgument(op, 'timeoutMs', 'a positive number of milliseconds', timeoutMs);
  }
  const killGraceMs = options.killGraceMs ?? 3000;
  if (!(Number.isFinite(killGraceMs) && killGraceMs >= 0)) {
    throw invalidArgument(op, 'killGraceMs', 'a non-negative number of milliseconds', killGraceMs);
  }
  // Unset: the launcher's own FLODL_LIVENESS_MS (a launcher started inside a run), else 30 s.
  const livenessMs =
    options.livenessMs === undefined
      ? livenessFromEnv().livenessMs
      : livenessTimeouts(options.livenessMs, op).livenessMs;
  const server = checkServerLimits(options.server, op);
  const env = options.env ?? {};
  if (
    typeof env !== 'object' ||
    env === null ||
    Object.values(env).some((value) => typeof value !== 'string')
  ) {
    throw invalidArgument(op, 'env', 'an object of string values', env);
  }
  const nodeArgs = options.nodeArgs ?? [];
  if (!Array.isArray(nodeArgs) || nodeArgs.some((value) => typeof value !== 'string')) {
    throw invalidArgument(op, 'nodeArgs', 'an array of strings', nodeArgs);
  }
  const stdio = options.stdio ?? 'inherit';
  if (stdio !== 'inherit' && stdio !== 'ignore')
    throw invalidArgument(op, 'stdio', "'inherit' or 'ignore'", stdio);
  const prefixOutput = options.prefixOutput ?? false;
  if (typeof prefixOutput !== 'boolean') throw invalidArgument(op, 'prefixOutput', 'a boolean', prefixOutput);
  if (prefixOutput && stdio !== 'inherit') {
    throw invalidArgument(
      op,
      'prefixOutput',
      "false with stdio 'ignore' (there is no output to prefix)",
      prefixOutput,
    );
  }
  const elastic = options.elastic ?? false;
  if (typeof elastic !== 'boolean') throw invalidArgument(op, 'elastic', 'a boolean', elastic);
  let maxFailure: MaxFailureThreshold | undefined;
  if (options.maxFailure !== undefined) {
    if (!elastic) {
      throw invalidArgument(
        op,
        'maxFailure',
        'only with elastic: true (a plain run fails at the first death)',
        options.maxFailure,
      );
    }
    maxFailure = checkMaxFailure(options.maxFailure, op);
  }
  if (options.onServer !== undefined && typeof options.onServer !== 'function') {
    throw invalidArgument(op, 'onServer', 'a function', options.onServer);
  }
  return {
    nproc,
    script: options.script,
    args,
    device,
    mode,
    env,
    nnodes,
    nodeRank,
    worldSize: nproc * nnodes,
    coordinatorHost,
    coordinatorPort,
    timeoutMs,
    killGraceMs,
    livenessMs,
    server,
    recordDir: options.recordDir,
    nodeArgs,
    stdio,
    prefixOutput,
    elastic,
    maxFailure,
  };
}

function checkServerLimits(value: unknown, op: string): LaunchServerLimits {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidArgument(op, 'server', `an object of ${SERVER_LIMITS.join(', ')}`, value);
  }
  const limits: Record<string, number> = {};
  for (const [key, limit] of Object.entries(value)) {
    if (!(SERVER_LIMITS as readonly string[]).includes(key)) {
      throw invalidArgument(op, `server.${key}`, `one of ${SERVER_LIMITS.join(', ')}`, key);
    }
    if (limit === undefined) continue;
    const integer = key === 'maxPendingHandshakes';
    if (
      typeof limit !== 'number' ||
      !Number.isFinite(limit) ||
      (integer ? !Number.isInteger(limit) || limit < 1 : limit < 0)
    ) {
      throw invalidArgument(
        op,
        `server.${key}`,
        integer ? 'a positive integer' : 'a non-negative number of milliseconds',
        limit,
      );
    }
    limits[key] = limit;
  }
  return limits as LaunchServerLimits;
}

/** Splits `host:port` (IPv6 as `[::1]:port`); `undefined` when malformed. */
export function parseCoordinator(text: unknown): [host: string, port: number] | undefined {
  if (typeof text !== 'string') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text.trim());
  if (!match) return undefined;
  const host = match[1] ?? match[2] ?? '';
  const port = Number(match[3]);
  if (host.length === 0 || port < 1 || port > 65_535) return undefined;
  return [host, port];
}

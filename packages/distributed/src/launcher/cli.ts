import { existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { FlodlError } from '@flodl/tensor-native';
import type { CoordinatorHost } from '../host/coordinator-host.js';
import { type LaunchWatch, type LaunchWatcher, watchLaunch } from './cli-dashboard.js';
import { type LaunchResult, launch } from './launch.js';
import {
  LAUNCH_DEVICES,
  LAUNCH_MODES,
  type LaunchDevice,
  type LaunchMode,
  type LaunchOptions,
} from './options.js';

/** `flodl` usage text (the commands). */
export const CLI_USAGE = `usage: flodl <command> [options]

commands:
  launch       start one process per rank and supervise the run (flodl launch --help)
  help [cmd]   show this text, or a command's help

options:
  -h, --help     show this text
  -v, --version  print the version`;

/** `flodl launch` usage text. */
export const USAGE = `usage: flodl launch --nproc N [options] script.(ts|js|mjs) [script args...]

Flags come before the script (as --flag value or --flag=value); everything after the
script goes to it.

options:
  --nproc N                  rank processes on this host (required)
  --device cpu|cuda          device kind; cuda gives rank K cuda:K (default cpu)
  --mode MODE                ${LAUNCH_MODES.join('|')}
                             (default NcclCadence on cuda, CpuCadence on cpu)
  --nnodes N                 hosts in the run (default 1)
  --node-rank K              this host's index, 0..N-1; node 0 hosts the coordinator (default 0)
  --coordinator host:port    address every rank dials; required with --nnodes > 1
  --port P                   coordinator port on a single host (default: a free port)
  --timeout-ms MS            stop the run after MS milliseconds
  --liveness-ms MS           a rank silent (or stalled) this long is declared dead and ended
                             (default 30000, at least 500; the ranks get FLODL_LIVENESS_MS)
  --elastic                  a failed rank does not stop the others: the survivors go on
                             and the lost ranks are listed at the end
  --max-failure N|P%         with --elastic: fail the run once N ranks (or P% of them) died
  --no-prefix                pass rank output through as is (default: each line gets [rank N])
  --dashboard PORT           serve the live dashboard of the run on 127.0.0.1:PORT (0: a free port)
  -h, --help                 show this text`;

/** A parsed `flodl` command line. */
export type LaunchCommand =
  | { kind: 'help'; topic?: 'launch' }
  | { kind: 'version' }
  | { kind: 'launch'; options: LaunchOptions; dashboard?: number };

const LAUNCH_FLAGS = {
  nproc: { type: 'string' },
  device: { type: 'string' },
  mode: { type: 'string' },
  nnodes: { type: 'string' },
  'node-rank': { type: 'string' },
  coordinator: { type: 'string' },
  port: { type: 'string' },
  'timeout-ms': { type: 'string' },
  'liveness-ms': { type: 'string' },
  elastic: { type: 'boolean' },
  'max-failure': { type: 'string' },
  'no-prefix': { type: 'boolean' },
  dashboard: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

/**
 * Parses `flodl` arguments (without `node` and the bin path) with Node's `util.parseArgs`.
 * Flags come before the script, as `--flag value` or `--flag=value`; everything after the
 * script (or after `--`) goes to it.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT naming the bad flag, with the usage text
 */
export function parseLaunchArgs(argv: readonly string[]): LaunchCommand {
  const [command, ...rest] = argv;
  if (command === undefined || command === '-h' || command === '--help') return { kind: 'help' };
  if (command === '-v' || command === '--version' || command === 'version') return { kind: 'version' };
  if (command === 'help') {
    if (rest[0] === undefined) return { kind: 'help' };
    if (rest[0] === 'launch') return { kind: 'help', topic: 'launch' };
    throw usageError(`unknown command ${JSON.stringify(rest[0])}`, "'launch'", 'flodl help');
  }
  if (command !== 'launch') {
    throw usageError(`unknown command ${JSON.stringify(command)}`, "'launch'", 'flodl');
  }
  const { flags, script, args } = splitAtScript(rest);
  let values: ReturnType<typeof parseLaunchFlags>;
  try {
    values = parseLaunchFlags(flags);
  } catch (error) {
    throw usageError(parseErrorMessage(error), 'one of the flags below');
  }
  if (values.help) return { kind: 'help', topic: 'launch' };
  const options: Partial<LaunchOptions> = {};
  // In the order of the usage text, so that a bad value is named before a missing flag.
  if (values.nproc !== undefined) options.nproc = wholeNumber('--nproc', values.nproc);
  if (values.device !== undefined) {
    if (!(LAUNCH_DEVICES as readonly string[]).includes(values.device))
      throw usageError(`bad --device ${values.device}`, 'cpu or cuda');
    options.device = values.device as LaunchDevice;
  }
  if (values.mode !== undefined) {
    if (!(LAUNCH_MODES as readonly string[]).includes(values.mode)) {
      throw usageError(`bad --mode ${values.mode}`, LAUNCH_MODES.join(', '));
    }
    options.mode = values.mode as LaunchMode;
  }
  if (values.nnodes !== undefined) options.nnodes = wholeNumber('--nnodes', values.nnodes);
  if (values['node-rank'] !== undefined) {
    options.nodeRank = wholeNumber('--node-rank', values['node-rank'], (options.nnodes ?? 1) - 1);
  }
  if (values.coordinator !== undefined) options.coordinator = values.coordinator;
  if (values.port !== undefined) options.port = wholeNumber('--port', values.port);
  if (values['timeout-ms'] !== undefined)
    options.timeoutMs = wholeNumber('--timeout-ms', values['timeout-ms']);
  if (values['liveness-ms'] !== undefined)
    options.livenessMs = wholeNumber('--liveness-ms', values['liveness-ms']);
  if (values.elastic) options.elastic = true;
  const maxFailure = values['max-failure'];
  if (maxFailure !== undefined) options.maxFailure = failureThreshold(maxFailure);
  if (values['no-prefix']) options.prefixOutput = false;
  const dashboard = values.dashboard === undefined ? undefined : wholeNumber('--dashboard', values.dashboard);
  if (script === undefined) throw usageError('no script given', 'a script path after the flags');
  if (options.nproc === undefined) throw usageError('--nproc is required', '--nproc N');
  if (options.maxFailure !== undefined && !options.elastic) {
    throw usageError('--max-failure needs --elastic', '--elastic --max-failure N');
  }
  return {
    kind: 'launch',
    options: { ...options, nproc: options.nproc, script, args },
    ...(dashboard === undefined ? {} : { dashboard }),
  };
}

function parseLaunchFlags(flags: string[]) {
  return parseArgs({
    args: joinDashValues(flags),
    options: LAUNCH_FLAGS,
    strict: true,
    allowPositionals: false,
  }).values;
}

/**
 * `--flag -1` as `--flag=-1`: a value starting with a dash that is no flag of ours (a negative
 * number) reaches the flag's own check, which says what the flag takes, instead of parseArgs'
 * "argument is ambiguous".
 */
function joinDashValues(flags: readonly string[]): string[] {
  const joined: string[] = [];
  for (let index = 0; index < flags.length; index += 1) {
    const flag = flags[index] as string;
    const value = flags[index + 1];
    const name = flag.startsWith('--') ? flag.slice(2) : undefined;
    const takesValue =
      name !== undefined && Object.hasOwn(LAUNCH_FLAGS, name)
        ? LAUNCH_FLAGS[name as keyof typeof LAUNCH_FLAGS].type === 'string'
        : false;
    if (takesValue && value !== undefined && /^-[^-h]/.test(value)) {
      joined.push(`${flag}=${value}`);
      index += 1;
    } else joined.push(flag);
  }
  return joined;
}

/**
 * Splits `launch`'s arguments at the script: the first argument that is neither a flag nor a
 * flag's value (flags declared as taking a value take the next argument, as parseArgs does).
 */
function splitAtScript(rest: string[]): { flags: string[]; script: string | undefined; args: string[] } {
  const { tokens } = parseArgs({
    args: rest,
    options: LAUNCH_FLAGS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === 'positional') {
      return { flags: rest.slice(0, token.index), script: token.value, args: rest.slice(token.index + 1) };
    }
    if (token.kind === 'option-terminator') {
      const script = rest[token.index + 1];
      return { flags: rest.slice(0, token.index), script, args: rest.slice(token.index + 2) };
    }
  }
  return { flags: rest, script: undefined, args: [] };
}

function parseErrorMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const unknown = message.match(/Unknown option '([^']+)'/);
  if (unknown) return `unknown flag ${unknown[1]}`;
  const missing = message.match(/Option '(-\w, )?(--[\w-]+)[^']*' argument missing/);
  if (missing) return `${missing[2]} needs a value`;
  // `--nproc --port 1`: a flag where the value should be.
  const ambiguous = message.match(/Option '(-\w, )?(--[\w-]+)' argument is ambiguous/);
  if (ambiguous) return `${ambiguous[2]} needs a value (got the next flag instead)`;
  const boolean = message.match(/Option '(-\w, )?(--[\w-]+)' does not take an argument/);
  if (boolean) return `${boolean[2]} takes no value`;
  return message.split('\n')[0] ?? message;
}

/** The version of this package, read from its package.json (src/, dist/ and dist/cjs/ alike). */
export function cliVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth += 1) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const data = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (data.name === '@flodl/distributed' && data.version) return data.version;
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

/** What a command built on `flodl` adds to it (`runCli`'s second argument). */
export interface CliExtensions {
  /**
   * Watches every run `flodl launch` hosts the coordinator of (node 0), beside `--dashboard`:
   * `@flodl/cooperative`'s command draws the Trainer's cohort progress line with it.
   */
  watch?: LaunchWatch;
}

/**
 * Runs `flodl` with `argv` (without `node` and the bin path), prefixing rank output with
 * `[rank N] ` unless `--no-prefix` is given, and returns the exit code:
 * 0 when every rank exited 0, 1 when a rank failed, 2 for a usage error, 130/143 when
 * SIGINT/SIGTERM stopped the run. `extensions.watch` watches the run it launches.
 *
 * @example
 * ```ts fragment
 * process.exitCode = await runCli(process.argv.slice(2));
 * ```
 */
export async function runCli(argv: readonly string[], extensions: CliExtensions = {}): Promise<number> {
  let command: LaunchCommand;
  try {
    command = parseLaunchArgs(argv);
  } catch (error) {
    const help = FlodlError.isInstance(error) && error.op !== 'flodl launch' ? CLI_USAGE : USAGE;
    process.stderr.write(`flodl: ${error instanceof Error ? error.message : String(error)}\n\n${help}\n`);
    return 2;
  }
  if (command.kind === 'help') {
    process.stdout.write(`${command.topic === 'launch' ? USAGE : CLI_USAGE}\n`);
    return 0;
  }
  if (command.kind === 'version') {
    process.stdout.write(`flodl ${cliVersion()}\n`);
    return 0;
  }
  const controller = new AbortController();
  // The coordinator this process hosts (node 0), once it formed: the first signal asks it to
  // stop the ranks together (they save, as a managed run's do); before it formed, or on a
  // second signal, the ranks are ended at once.
  let host: CoordinatorHost | undefined;
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received === undefined && host !== undefined && !host.finished) {
      received = signal;
      const again = signal === 'SIGINT' ? 'Ctrl-C' : 'SIGTERM';
      process.stderr.write(
        `flodl launch: ${signal}: stopping the ranks after their next averaging round (step ${host.coordinator.globalStep}); they save where the script gives a savePath (${again} again to end them at once)\n`,
      );
      host.requestStop();
      return;
    }
    if (received !== undefined) process.stderr.write(`flodl launch: ${signal} again: ending the ranks now\n`);
    received ??= signal;
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const { options } = command;
  const run = {
    script: options.script,
    worldSize: options.nproc * (options.nnodes ?? 1),
    ...(options.mode ? { mode: options.mode } : {}),
  };
  const stopper: LaunchWatcher = {
    attach: (attached) => {
      host = attached;
    },
    close: () => {
      host = undefined;
    },
  };
  const watchers = [stopper, ...(extensions.watch ? [extensions.watch(run)] : [])];
  // On a node other than 0 the coordinator is elsewhere: `onServer` is never called there.
  const watched = watchLaunch(
    { ...(command.dashboard === undefined ? {} : { dashboard: command.dashboard }), watchers },
    run,
    (error) =>
      process.stderr.write(
        `flodl launch: coordinator: ${error instanceof Error ? error.message : String(error)}\n`,
      ),
  );
  let outcome: 'Completed' | 'Failed' = 'Failed';
  try {
    const result = await launch({
      prefixOutput: true,
      ...options,
      onServer: watched.onServer,
      signal: controller.signal,
    });
    if (!result.interrupted) outcome = 'Completed';
    // Only a signal aborts the launch: interrupted, or stopped together, it exits 130 / 143.
    if (received !== undefined) return signalExitCode(received);
    if (result.lost.length > 0) process.stderr.write(`${describeLost(result)}\n`);
    return 0;
  } catch (error) {
    // Stopped by a signal: ranks that did not outlive it (a script that lets SIGINT end it)
    // are the stop, not a failure to report.
    if (received !== undefined) return signalExitCode(received);
    const isFlodl = FlodlError.isInstance(error);
    process.stderr.write(
      `flodl: ${isFlodl ? `[${error.code}] ` : ''}${error instanceof Error ? error.message : String(error)}\n`,
    );
    return isFlodl && error.code === 'ERR_INVALID_ARGUMENT' ? 2 : 1;
  } finally {
    await watched.close(outcome);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The exit code of a process ended by `signal`, as a shell reports it (130 for SIGINT, 143 for SIGTERM). */
function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/** The lines `flodl launch --elastic` prints when a run finished without some of its ranks. */
export function describeLost(result: Pick<LaunchResult, 'lost' | 'worldSize' | 'recordDir'>): string {
  const lines = result.lost.map(
    (record) =>
      `  rank ${record.rank} (pid ${record.pid}, ${record.signal !== null ? `signal ${record.signal}` : `exit code ${record.exitCode}`}) at ${new Date(record.time).toISOString()}: ${record.message}`,
  );
  return [
    `flodl: the run finished without ${result.lost.length} of ${result.worldSize} ranks (elastic); lost:`,
    ...lines,
    ...(result.recordDir ? [`death records: ${result.recordDir}`] : []),
  ].join('\n');
}

/** What each numeric flag takes, as its usage error says it, and an example of it. */
const NUMERIC_FLAGS: Record<string, { takes: string; minimum: number; maximum?: number; example: string }> = {
  '--nproc': { takes: 'a whole number of ranks', minimum: 1, example: '--nproc 2' },
  '--nnodes': { takes: 'a whole number of hosts', minimum: 1, example: '--nnodes 2' },
  '--node-rank': {
    takes: "this host's index",
    minimum: 0,
    example: '--node-rank 0 on the host of the coordinator',
  },
  '--port': { takes: 'a port', minimum: 0, maximum: 65_535, example: '--port 29500 (0: a free port)' },
  '--timeout-ms': { takes: 'a whole number of milliseconds', minimum: 1, example: '--timeout-ms 600000' },
  '--liveness-ms': { takes: 'a whole number of milliseconds', minimum: 500, example: '--liveness-ms 30000' },
  '--dashboard': {
    takes: 'a port',
    minimum: 0,
    maximum: 65_535,
    example: '--dashboard 8080 (0: a free port)',
  },
};

/**
 * The whole number `text` of a numeric flag, within the flag's range (`maximum` narrows it).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT `--nproc takes a whole number of ranks >= 1, got -1`
 */
function wholeNumber(flag: string, text: string, maximum?: number): number {
  const rule = NUMERIC_FLAGS[flag] as (typeof NUMERIC_FLAGS)[string];
  const highest = maximum ?? rule.maximum;
  const value = Number(text);
  if (
    !/^\d+$/.test(text) ||
    !Number.isSafeInteger(value) ||
    value < rule.minimum ||
    value > (highest ?? value)
  ) {
    const range = highest === undefined ? `>= ${rule.minimum}` : `in ${rule.minimum}..${highest}`;
    // A host's index is below the host count.
    const because = flag === '--node-rank' ? ` (--nnodes ${(highest ?? 0) + 1})` : '';
    throw usageError(`${flag} takes ${rule.takes} ${range}${because}, got ${text}`, `e.g. ${rule.example}`);
  }
  return value;
}

/**
 * `--max-failure N` (ranks) or `P%` (of the world size).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT naming both forms
 */
function failureThreshold(text: string): { absolute: number } | { percent: number } {
  const expected = 'e.g. --max-failure 1 or --max-failure 25%';
  const message = `--max-failure takes a whole number of ranks >= 1 or a percentage in (0, 100], got ${text}`;
  if (!text.endsWith('%')) {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) throw usageError(message, expected);
    return { absolute: value };
  }
  const digits = text.slice(0, -1);
  const value = Number(digits);
  if (!/^\d+(\.\d+)?$/.test(digits) || !(value > 0 && value <= 100)) throw usageError(message, expected);
  return { percent: value / 100 };
}

function usageError(message: string, expected: string, op = 'flodl launch'): FlodlError {
  return new FlodlError('ERR_INVALID_ARGUMENT', message, { op, expected });
}

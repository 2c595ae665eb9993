import { FlodlError } from '@flodl/tensor-native';
import { type LaunchResult, launch } from './launch.js';
import {
  LAUNCH_DEVICES,
  LAUNCH_MODES,
  type LaunchDevice,
  type LaunchMode,
  type LaunchOptions,
} from './options.js';

/** `flodl` usage text. */
export const USAGE = `usage: flodl launch --nproc N [options] script.(ts|js|mjs) [script args...]

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
  --elastic                  a failed rank does not stop the others: the survivors go on
                             and the lost ranks are listed at the end
  --max-failure N|P%         with --elastic: fail the run once N ranks (or P% of them) died
  --no-prefix                pass rank output through as is (default: each line gets [rank N])
  -h, --help                 show this text`;

/** A parsed `flodl` command line. */
export type LaunchCommand = { kind: 'help' } | { kind: 'launch'; options: LaunchOptions };

/**
 * Parses `flodl` arguments (without `node` and the bin path). Flags come before the
 * script; everything after the script goes to it.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT naming the bad flag, with the usage text
 */
export function parseLaunchArgs(argv: readonly string[]): LaunchCommand {
  const [subcommand, ...rest] = argv;
  if (subcommand === undefined || subcommand === '-h' || subcommand === '--help' || subcommand === 'help') {
    return { kind: 'help' };
  }
  if (subcommand !== 'launch') throw usageError(`unknown command ${JSON.stringify(subcommand)}`, "'launch'");
  const options: Partial<LaunchOptions> = {};
  let index = 0;
  while (index < rest.length) {
    const token = rest[index] as string;
    if (!token.startsWith('-')) break;
    if (token === '-h' || token === '--help') return { kind: 'help' };
    if (token === '--elastic') {
      options.elastic = true;
      index += 1;
      continue;
    }
    if (token === '--no-prefix') {
      options.prefixOutput = false;
      index += 1;
      continue;
    }
    const equals = token.indexOf('=');
    const flag = equals >= 0 ? token.slice(0, equals) : token;
    const value: string | undefined = equals >= 0 ? token.slice(equals + 1) : rest[index + 1];
    index += equals >= 0 ? 1 : 2;
    if (value === undefined) throw usageError(`${flag} needs a value`, `${flag} <value>`);
    switch (flag) {
      case '--nproc':
        options.nproc = integer(flag, value, 1);
        break;
      case '--device':
        if (!(LAUNCH_DEVICES as readonly string[]).includes(value))
          throw usageError(`bad ${flag} ${value}`, 'cpu or cuda');
        options.device = value as LaunchDevice;
        break;
      case '--mode':
        if (!(LAUNCH_MODES as readonly string[]).includes(value)) {
          throw usageError(`bad ${flag} ${value}`, LAUNCH_MODES.join(', '));
        }
        options.mode = value as LaunchMode;
        break;
      case '--nnodes':
        options.nnodes = integer(flag, value, 1);
        break;
      case '--node-rank':
        options.nodeRank = integer(flag, value, 0);
        break;
      case '--coordinator':
        options.coordinator = value;
        break;
      case '--port':
        options.port = integer(flag, value, 0);
        break;
      case '--timeout-ms':
        options.timeoutMs = integer(flag, value, 1);
        break;
      case '--max-failure':
        options.maxFailure = value.endsWith('%')
          ? { percent: percent(flag, value.slice(0, -1)) }
          : { absolute: integer(flag, value, 1) };
        break;
      default:
        throw usageError(`unknown flag ${flag}`, 'one of the flags below');
    }
  }
  const script = rest[index];
  if (script === undefined) throw usageError('no script given', 'a script path after the flags');
  if (options.nproc === undefined) throw usageError('--nproc is required', '--nproc N');
  if (options.maxFailure !== undefined && !options.elastic) {
    throw usageError('--max-failure needs --elastic', '--elastic --max-failure N');
  }
  return {
    kind: 'launch',
    options: { ...options, nproc: options.nproc, script, args: rest.slice(index + 1) },
  };
}

/**
 * Runs `flodl` with `argv` (without `node` and the bin path), prefixing rank output with
 * `[rank N] ` unless `--no-prefix` is given, and returns the exit code:
 * 0 when every rank exited 0, 1 when a rank failed, 2 for a usage error, 130/143 when
 * SIGINT/SIGTERM stopped the run.
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  let command: LaunchCommand;
  try {
    command = parseLaunchArgs(argv);
  } catch (error) {
    process.stderr.write(`flodl: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}\n`);
    return 2;
  }
  if (command.kind === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    received ??= signal;
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const result = await launch({ prefixOutput: true, ...command.options, signal: controller.signal });
    if (result.interrupted) return received === 'SIGTERM' ? 143 : 130;
    if (result.lost.length > 0) process.stderr.write(`${describeLost(result)}\n`);
    return 0;
  } catch (error) {
    const isFlodl = FlodlError.isInstance(error);
    process.stderr.write(
      `flodl: ${isFlodl ? `[${error.code}] ` : ''}${error instanceof Error ? error.message : String(error)}\n`,
    );
    return isFlodl && error.code === 'ERR_INVALID_ARGUMENT' ? 2 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
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

function percent(flag: string, text: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(value > 0 && value <= 100)) {
    throw usageError(`bad ${flag} ${JSON.stringify(`${text}%`)}`, 'a percentage in (0, 100]');
  }
  return value / 100;
}

function integer(flag: string, text: string, minimum: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < minimum) {
    throw usageError(`bad ${flag} ${JSON.stringify(text)}`, `an integer ≥ ${minimum}`);
  }
  return value;
}

function usageError(message: string, expected: string): FlodlError {
  return new FlodlError('ERR_INVALID_ARGUMENT', message, { op: 'flodl launch', expected });
}

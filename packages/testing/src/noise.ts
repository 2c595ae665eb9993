// Expected noise, captured and asserted on instead of printed: console warnings a test is meant
// to cause, and what a fresh process writes to its stderr (libtorch logs there directly).
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, expect, vi } from 'vitest';

/** The console.warn lines captured so far in the enclosing `describe` (or file). */
export interface CapturedWarnings {
  readonly lines: readonly string[];
}

/**
 * For the enclosing `describe` (or file): captures `console.warn` instead of printing it (a
 * warning logged by a server a test left closing still counts), and after its last test expects
 * each captured line to match one of `expected`. A test may also read `captured.lines`.
 *
 * @example const warnings = captureWarnings([/dropped connection .*ECONNRESET/]);
 */
export function captureWarnings(expected: readonly RegExp[]): CapturedWarnings {
  const lines: string[] = [];
  let restore: (() => void) | undefined;
  beforeAll(() => {
    const spy = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
      lines.push(args.map(String).join(' '));
    });
    restore = () => spy.mockRestore();
  });
  afterAll(() => {
    restore?.();
    const unexpected = lines.filter((line) => !expected.some((pattern) => pattern.test(line)));
    expect(unexpected, `unexpected console.warn output (expected only ${expected.join(', ')})`).toEqual([]);
  });
  return { lines };
}

/** What a fresh Node process did: its exit status and everything it wrote. */
export interface IsolatedRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs ES module source in a fresh Node process (bounded by `timeoutMs`) and returns its output,
 * for noise that only a process's own stderr shows, such as libtorch's log lines. The
 * environment is this process's, with libtorch's log level reset to its default (a
 * `GLOG_minloglevel` in the caller's environment would hide them), so every warning shows.
 */
export function runIsolated(source: string, options: { cwd?: string; timeoutMs?: number } = {}): IsolatedRun {
  const env = { ...process.env };
  delete env.GLOG_minloglevel;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', source], {
    cwd: options.cwd,
    env,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 60_000,
  });
  if (result.error !== undefined) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

// Protection from outside the ranks: the orphan guard runs inside each rank, so a rank that
// is frozen (SIGSTOP, a hung kernel call) outlives a killed launcher. The launcher therefore
// also starts one small reaper process, connected to it by a pipe and told every rank's pid.
// When the launcher dies, even by SIGKILL, the kernel closes the pipe: the reaper sends every
// rank still listed SIGTERM and SIGCONT (a stopped process takes the SIGTERM), then SIGKILL
// after the grace, and exits. A launcher that ends normally closes the pipe with no rank listed.
import { type ChildProcess, spawn } from 'node:child_process';

// The reaper (CommonJS, `node -e`). Lines on stdin: `+pid` (a rank started), `-pid` (it
// ended). End of stdin: the launcher is gone (or done).
const REAPER_SOURCE = `
const graceMs = Number(process.argv[1]);
const pids = new Set();
let text = '';
for (const signal of ['SIGINT', 'SIGHUP', 'SIGPIPE']) process.on(signal, () => {});
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  text += chunk;
  let newline;
  while ((newline = text.indexOf('\\n')) >= 0) {
    const line = text.slice(0, newline);
    text = text.slice(newline + 1);
    const pid = Number(line.slice(1));
    if (!Number.isSafeInteger(pid) || pid <= 0) continue;
    if (line[0] === '+') pids.add(pid);
    else if (line[0] === '-') pids.delete(pid);
  }
});
const send = (pid, signal) => {
  try { process.kill(pid, signal); return true; } catch { return false; }
};
process.stdin.on('end', () => {
  const left = [...pids].filter((pid) => send(pid, 'SIGTERM'));
  if (left.length === 0) process.exit(0);
  try {
    require('node:fs').writeSync(2, 'flodl: the launcher is gone; stopping rank process(es) ' + left.join(', ') + '\\n');
  } catch {}
  for (const pid of left) send(pid, 'SIGCONT');
  setTimeout(() => {
    for (const pid of left) send(pid, 'SIGKILL');
    process.exit(0);
  }, Number.isFinite(graceMs) && graceMs >= 0 ? graceMs : 3000);
});
process.stdin.on('error', () => {});
`;

/** The launcher's end of its reaper process. */
export class Reaper {
  readonly #child: ChildProcess;
  #closed = false;

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  /** Starts the reaper; `graceMs` goes between its SIGTERM and SIGKILL. */
  static start(graceMs: number): Reaper {
    const child = spawn(process.execPath, ['-e', REAPER_SOURCE, String(graceMs)], {
      stdio: ['pipe', 'ignore', 'inherit'],
      env: {},
    });
    // Neither the process nor its pipe keeps the launcher's event loop alive.
    child.unref();
    child.stdin?.on('error', () => undefined);
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    child.on('error', () => undefined);
    return new Reaper(child);
  }

  /** The reaper's pid (tests). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Lists a started rank process. */
  watch(pid: number | undefined): void {
    this.#write(pid, '+');
  }

  /** Unlists an ended rank process (its pid may be reused). */
  forget(pid: number | undefined): void {
    this.#write(pid, '-');
  }

  /** Closes the pipe: the reaper stops what is still listed (nothing, after a clean run) and exits. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#child.stdin?.end();
  }

  #write(pid: number | undefined, sign: '+' | '-'): void {
    if (this.#closed || pid === undefined || this.#child.stdin?.writable !== true) return;
    this.#child.stdin.write(`${sign}${pid}\n`);
  }
}

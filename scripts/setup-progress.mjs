// What scripts/setup.mjs prints: each phase that has work to do says when it starts and how long
// it took, and a line every 15 s while it runs; a phase with nothing to do prints nothing, so an
// up-to-date set-up prints one line in all.
import { spawn } from 'node:child_process';

const HEARTBEAT_MS = 15_000;
// A phase that may have nothing to do (pnpm install, the build) is announced once it has run this
// long or has something to show: an up-to-date one stays silent.
const LAZY_ANNOUNCE_MS = 3_000;

/** `41 s`, `2 min 5 s`. */
export function formatDuration(ms) {
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

const started = performance.now();
let announcedAny = false;
// The announcement waiting for its ` done in N s` (nothing printed after it yet).
let openLine = null;

function writeLine(text) {
  if (openLine !== null) {
    process.stdout.write('\n');
    openLine = null;
  }
  process.stdout.write(`${text}\n`);
}

/** Ends a pending announcement's line before a child writes to the terminal itself. */
export function endOpenLine() {
  if (openLine === null) return;
  process.stdout.write('\n');
  openLine = null;
}

/** One numbered phase of the set-up. */
export class Phase {
  /**
   * @param {number} index - 1-based
   * @param {number} count - the number of phases
   * @param {string} title - what it does, e.g. `installing the workspace (pnpm install)`
   */
  constructor(index, count, title) {
    this.label = `setup: [${index}/${count}] ${title}`;
    this.started = performance.now();
    this.announced = false;
  }

  /** Prints the phase's first line (once). */
  announce() {
    if (this.announced) return;
    this.announced = true;
    announcedAny = true;
    endOpenLine();
    // Left open: when nothing comes before the end, ` done in N s` goes on the same line.
    process.stdout.write(`${this.label}...`);
    openLine = this;
    this.lastPrinted = performance.now();
  }

  /** A progress line under the phase (announcing it first). */
  say(text) {
    this.announce();
    writeLine(`setup:   ${text}`);
    this.lastPrinted = performance.now();
  }

  elapsed() {
    return formatDuration(performance.now() - this.started);
  }

  /** The phase's last line, when it was announced: `... done in 41 s`. */
  done(detail = '') {
    if (!this.announced) return;
    const tail = `done in ${this.elapsed()}${detail === '' ? '' : ` (${detail})`}`;
    if (openLine === this) {
      openLine = null;
      process.stdout.write(` ${tail}\n`);
    } else {
      writeLine(`${this.label}: ${tail}`);
    }
  }
}

/**
 * Runs a command for a phase. With `capture`, its output is kept (and shown when it fails) and
 * each line goes to `onLine`, which returns the text to show under the phase, if any; without,
 * the command writes to the terminal itself. Either way a heartbeat line comes every 15 s of
 * silence, saying `heartbeat()`'s text and the time so far; a `lazy` phase is announced only
 * once it has run 3 s or has a line to show.
 *
 * @returns {Promise<{ status: number | null, output: string[] }>}
 */
export function runInPhase(phase, command, args, { capture, lazy = false, onLine, heartbeat, options = {} }) {
  if (!lazy || !capture) phase.announce();
  if (!capture) endOpenLine();
  const output = [];
  const child = spawn(command, args, {
    ...options,
    stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit',
  });
  const lazyTimer = lazy ? setTimeout(() => phase.announce(), LAZY_ANNOUNCE_MS) : undefined;
  const beat = setInterval(() => {
    if (!phase.announced) return;
    if (performance.now() - phase.lastPrinted < HEARTBEAT_MS - 500) return;
    const what = heartbeat?.() ?? 'still running';
    phase.say(`${what} (${phase.elapsed()})`);
    if (!capture) endOpenLine();
  }, HEARTBEAT_MS / 3);
  if (capture) {
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        pending += chunk;
        const lines = pending.split(/\r?\n/);
        pending = lines.pop() ?? '';
        for (const line of lines) {
          output.push(line);
          const shown = onLine?.(line);
          if (shown) phase.say(shown);
        }
      });
      stream.on('end', () => {
        if (pending !== '') output.push(pending);
      });
    }
  }
  return new Promise((resolve) => {
    const finish = (status) => {
      clearTimeout(lazyTimer);
      clearInterval(beat);
      resolve({ status, output });
    };
    child.on('error', (error) => {
      output.push(String(error));
      finish(null);
    });
    child.on('close', (status) => finish(status));
  });
}

/** The set-up's closing line: `setup: up to date (1.2 s)` when no phase had work, else the total. */
export function finishSetup() {
  const total = performance.now() - started;
  if (announcedAny) writeLine(`setup: done in ${formatDuration(total)}`);
  else writeLine(`setup: up to date (${(total / 1000).toFixed(1)} s)`);
}

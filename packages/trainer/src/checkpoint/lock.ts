// The lock of a `savePath`: a run that writes bundles under it holds `<savePath>.lock` for its
// whole life, so a second run on the same path is refused at its start instead of the two
// overwriting each other's bundles. The file is created exclusively (`wx`) and names its owner
// (pid, host, start time); the owner removes it when the run ends, fails, or its process exits.
// A process killed outright (SIGKILL) leaves it behind: a lock of this host whose pid is dead
// is stale and taken over with a one-line warning.

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { FlodlError } from '@flodl/tensor-native';

/** What `<savePath>.lock` holds: who runs on the path, since when. */
export interface SaveLockOwner {
  pid: number;
  hostname: string;
  /** ISO time the run took the lock. */
  startedAt: string;
  /** The operation that took it, e.g. `Trainer.run`. */
  op: string;
  /** Random, so a process removes only its own lock. */
  token: string;
}

/** A held lock; `release()` removes the file (idempotent). */
export interface SaveLock {
  /** `<savePath>.lock`. */
  readonly path: string;
  readonly owner: SaveLockOwner;
  release(): void;
}

/** A lock file that cannot be parsed is held (its owner may be writing it) until it is this old, ms. */
const UNREADABLE_STALE_MS = 10_000;
/** Takeover attempts before giving up (another process taking over the same stale lock). */
const ATTEMPTS = 5;

/** The locks this process holds, removed by the one `exit` handler if the run did not release them. */
const held = new Map<string, SaveLockOwner>();
let exitHandlerInstalled = false;

/** The lock file of `savePath`. */
export function lockPathOf(savePath: string): string {
  return `${savePath}.lock`;
}

/**
 * Takes the lock of `savePath` for a run (`undefined` when the run has no `savePath`): creates
 * `<savePath>.lock` exclusively, with this process's pid, host name and start time. A stale lock
 * (this host, its pid dead) is taken over with a one-line warning on stderr.
 *
 * @param savePath the run's `savePath` (the lock sits beside its bundles: `<savePath>.lock`)
 * @param op the operation named in the error, e.g. `Trainer.run`
 * @throws FlodlError ERR_CHECKPOINT when another live run holds the lock (the error names its
 *   pid, host and start time, and what to do); ERR_IO when the file cannot be created
 * @example
 * ```ts fragment
 * const lock = acquireSaveLock('runs/mnist', 'my-run');
 * try { train(); } finally { lock?.release(); }
 * ```
 * PyTorch has no equivalent (two runs on one checkpoint path overwrite each other).
 */
export function acquireSaveLock(savePath: string | undefined, op: string): SaveLock | undefined {
  if (savePath === undefined) return undefined;
  const path = lockPathOf(savePath);
  const owner: SaveLockOwner = {
    pid: process.pid,
    hostname: hostname(),
    startedAt: new Date().toISOString(),
    op,
    token: randomBytes(8).toString('hex'),
  };
  const text = `${JSON.stringify(owner)}\n`;
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch (error) {
    throw lockIoError(path, op, error);
  }
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (createExclusive(path, text, op)) return holdLock(path, owner);
    const current = readOwner(path);
    if (current === 'gone') continue;
    const stale = staleReason(path, current);
    if (stale === undefined) throw heldError(path, op, savePath, current);
    if (takeOver(path, current)) process.stderr.write(`flodl: ${path}: ${stale}; taking it over\n`);
  }
  throw new FlodlError('ERR_CHECKPOINT', `${path}: could not take the lock of ${savePath}`, {
    op,
    expected: 'the lock free, or stale',
    got: `other processes took the stale lock over first, ${ATTEMPTS} times`,
  });
}

/** Creates the lock file with `text`; false when it exists. */
function createExclusive(path: string, text: string, op: string): boolean {
  let descriptor: number;
  try {
    descriptor = openSync(path, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw lockIoError(path, op, error);
  }
  try {
    writeSync(descriptor, text);
  } finally {
    closeSync(descriptor);
  }
  return true;
}

/** The lock's owner, `undefined` when the file does not parse, `'gone'` when it went meanwhile. */
function readOwner(path: string): SaveLockOwner | undefined | 'gone' {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    return undefined;
  }
  try {
    const value = JSON.parse(text) as Partial<SaveLockOwner>;
    if (Number.isSafeInteger(value.pid) && typeof value.hostname === 'string') return value as SaveLockOwner;
  } catch {
    // written by something else, or its owner died while writing it
  }
  return undefined;
}

/** Why the lock is stale, or `undefined` while its owner may still run. */
function staleReason(path: string, owner: SaveLockOwner | undefined): string | undefined {
  if (owner === undefined) {
    try {
      const age = Date.now() - statSync(path).mtimeMs;
      return age > UNREADABLE_STALE_MS
        ? `an unreadable lock ${Math.round(age / 1000)} s old is stale`
        : undefined;
    } catch {
      return undefined;
    }
  }
  if (owner.hostname !== hostname()) return undefined;
  if (owner.pid === process.pid) {
    // This pid's lock from before this process started: an earlier process (a container's pid 1).
    const started = Date.now() - process.uptime() * 1000;
    return held.get(path)?.token !== owner.token && Date.parse(owner.startedAt) < started - 1000
      ? `stale lock of pid ${owner.pid}, taken before this process started`
      : undefined;
  }
  return isAlive(owner.pid) ? undefined : `stale lock of pid ${owner.pid} (no such process on this host)`;
}

/** Whether process `pid` runs on this host (another user's counts; a zombie, dead and unreaped, does not). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    // no /proc (not Linux): the signal test is all there is
    return true;
  }
}

/**
 * Removes the stale lock, unless another process replaced it since it was read: it is renamed
 * aside first, and put back when what was renamed is not the stale lock judged.
 */
function takeOver(path: string, stale: SaveLockOwner | undefined): boolean {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch {
    return false;
  }
  const moved = readOwner(aside);
  const same =
    moved === stale ||
    (typeof moved === 'object' &&
      typeof stale === 'object' &&
      moved.token === stale.token &&
      moved.pid === stale.pid);
  if (!same) {
    // Another process's fresh lock: back where it was (a link fails where a third process
    // created the path meanwhile, and does not replace its file).
    try {
      linkSync(aside, path);
    } catch {
      // the path is taken again: the next attempt judges that lock
    }
    rmSync(aside, { force: true });
    return false;
  }
  rmSync(aside, { force: true });
  return true;
}

function holdLock(path: string, owner: SaveLockOwner): SaveLock {
  held.set(path, owner);
  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true;
    process.on('exit', () => {
      for (const [heldPath, heldOwner] of held) removeOwn(heldPath, heldOwner);
    });
  }
  let released = false;
  return {
    path,
    owner,
    release: () => {
      if (released) return;
      released = true;
      if (held.get(path) === owner) held.delete(path);
      removeOwn(path, owner);
    },
  };
}

/** Removes the lock file when it is still `owner`'s (a takeover's file is left alone). */
function removeOwn(path: string, owner: SaveLockOwner): void {
  const current = readOwner(path);
  if (typeof current !== 'object' || current.token !== owner.token) return;
  try {
    rmSync(path, { force: true });
  } catch {
    // a folder removed under the run: nothing left to release
  }
}

function heldError(path: string, op: string, savePath: string, owner: SaveLockOwner | undefined): FlodlError {
  const who =
    owner === undefined
      ? 'a lock file that does not name its owner'
      : `pid ${owner.pid} on ${owner.hostname}${owner.pid === process.pid && owner.hostname === hostname() ? ' (this process)' : ''}, since ${owner.startedAt}`;
  return new FlodlError(
    'ERR_CHECKPOINT',
    `${savePath} is in use by another run: ${path} is held by ${who}. Wait for that run to end, ` +
      `give this run another .savePath(...), or, if no run uses it (its host rebooted, or another ` +
      `host's run died), remove ${path}`,
    { op, expected: `no other run writing under ${savePath}`, got: who },
  );
}

function lockIoError(path: string, op: string, error: unknown): FlodlError {
  return new FlodlError('ERR_IO', `could not create ${path}: ${(error as Error).message}`, {
    op,
    cause: error,
  });
}

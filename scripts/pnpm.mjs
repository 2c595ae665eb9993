#!/usr/bin/env node
// Runs the pinned pnpm, installing it into .tools/ first when it is missing.
// npm is on every Node install; pnpm is not, so this is how the README's
// `npm run demo` / `npm test` reach pnpm on a fresh machine.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const pinned = String(manifest.packageManager).replace(/^pnpm@/, '');
/** The pnpm version `packageManager` pins. */
export const pinnedPnpmVersion = pinned;
const toolsDir = join(root, '.tools');
const pnpmEntry = join(toolsDir, 'node_modules', 'pnpm', 'bin', 'pnpm.mjs');

function installedVersion() {
  const packageFile = join(toolsDir, 'node_modules', 'pnpm', 'package.json');
  if (!existsSync(packageFile)) return null;
  return JSON.parse(readFileSync(packageFile, 'utf8')).version;
}

/** Whether the pinned pnpm is already in .tools/ (ensurePnpm then installs nothing). */
export function hasPinnedPnpm() {
  return installedVersion() === pinned && existsSync(pnpmEntry);
}

export function ensurePnpm({ quiet = false } = {}) {
  if (hasPinnedPnpm()) return pnpmEntry;
  if (!quiet) console.log(`[flodl] installing pnpm ${pinned} into .tools/`);
  const result = spawnSync(
    'npm',
    ['install', '--prefix', toolsDir, '--no-audit', '--no-fund', '--loglevel=error', `pnpm@${pinned}`],
    { stdio: 'inherit' },
  );
  if (result.status !== 0 || installedVersion() !== pinned) {
    console.error(
      `[flodl] could not install pnpm ${pinned}; try: npm install --prefix .tools pnpm@${pinned}`,
    );
    process.exit(1);
  }
  return pnpmEntry;
}

/** The command line and the options (cwd, env) that run the pinned pnpm with `args`. */
export function pnpmInvocation(args) {
  const entry = ensurePnpm();
  const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' };
  const tools = join(toolsDir, 'node_modules', '.bin');
  env.PATH = `${tools}:${env.PATH ?? ''}`;
  return { command: process.execPath, args: [entry, ...args], options: { cwd: root, env } };
}

export function runPnpm(args, options = {}) {
  const invocation = pnpmInvocation(args);
  return spawnSync(invocation.command, invocation.args, {
    stdio: 'inherit',
    ...invocation.options,
    ...options,
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = runPnpm(process.argv.slice(2));
  process.exit(result.status ?? 1);
}

#!/usr/bin/env node
// Idempotent set-up shared by `npm run demo` and `npm test`:
//   1. libtorch (LIBTORCH, python3's torch with headers, or Debian's libtorch-dev + libgloo-dev)
//   2. the pinned pnpm, 3. the workspace's dependencies, 4. the addon and the packages.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runPnpm } from './pnpm.mjs';

const DEBIAN_PACKAGES = ['libtorch-dev', 'libgloo-dev'];

function missingDebianPackages() {
  return DEBIAN_PACKAGES.filter((name) => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
    const query = spawnSync('dpkg-query', ['-W', '-f=${Status}', name], { encoding: 'utf8' });
    return query.status !== 0 || !query.stdout.includes('install ok installed');
  });
}

function pythonTorchHasHeaders() {
  const probe = spawnSync('python3', ['-c', 'import os, torch; print(os.path.dirname(torch.__file__))'], {
    encoding: 'utf8',
  });
  if (probe.status !== 0) return false;
  return existsSync(join(probe.stdout.trim(), 'include', 'ATen', 'ATen.h'));
}

function ensureLibtorch() {
  if (process.env.LIBTORCH) return;
  if (pythonTorchHasHeaders()) return;
  const missing = missingDebianPackages();
  if (missing.length === 0) return;
  const command = `apt-get update && apt-get install -y ${missing.join(' ')}`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    console.error(
      `[flodl] libtorch is missing. Install it as root, then run this again:\n\n  sudo sh -c '${command}'\n`,
    );
    console.error('[flodl] or point LIBTORCH at an unpacked libtorch folder.');
    process.exit(1);
  }
  console.log(`[flodl] installing ${missing.join(', ')} with apt`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...missing],
  ]) {
    const result = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (result.status !== 0) {
      console.error(`[flodl] apt-get ${args.join(' ')} failed; run it by hand: ${command}`);
      process.exit(1);
    }
  }
}

/**
 * Installs an optional Debian package that some tests (and the demo) need, when this machine can
 * (root with apt); otherwise says what to run. Those tests skip, saying why, without it.
 */
function ensureOptionalDebianPackage(name, present, why) {
  if (existsSync(present)) return;
  const command = `apt-get install -y ${name}`;
  const canInstall =
    typeof process.getuid === 'function' && process.getuid() === 0 && existsSync('/usr/bin/apt-get');
  if (!canInstall) {
    console.warn(`[flodl] ${name} is missing (${why}): ${command}`);
    return;
  }
  console.log(`[flodl] installing ${name} with apt`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let result = spawnSync('apt-get', ['install', '-y', '-qq', name], { stdio: 'inherit', env });
  if (result.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    result = spawnSync('apt-get', ['install', '-y', '-qq', name], { stdio: 'inherit', env });
  }
  if (result.status !== 0) console.warn(`[flodl] could not install ${name}; run: ${command}`);
}

function step(args, what) {
  const result = runPnpm(args);
  if (result.status !== 0) {
    console.error(`[flodl] ${what} failed (pnpm ${args.join(' ')})`);
    process.exit(result.status ?? 1);
  }
}

ensureLibtorch();
// The demo and the data tests use the real Fashion-MNIST that Debian packages.
ensureOptionalDebianPackage(
  'dataset-fashion-mnist',
  '/usr/share/datasets/fashion-mnist',
  'the demo needs it; data tests skip',
);
// The dashboard's browser test drives Debian's Chromium headless.
ensureOptionalDebianPackage('chromium', '/usr/bin/chromium', 'the dashboard browser test skips');
step(['install', '--reporter=append-only', '--silent'], 'installing dependencies');
step(['exec', 'turbo', 'run', 'build', '--output-logs=errors-only'], 'building the packages');

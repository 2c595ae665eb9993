#!/usr/bin/env node
// Idempotent set-up shared by `npm run demo`, `npm test` and the bench scripts, in five phases:
//   1. libtorch (LIBTORCH, python3's torch with headers, or Debian's libtorch-dev + libgloo-dev)
//   2. Debian's Fashion-MNIST and Chromium (the demo, the data and dashboard tests)
//   3. the pinned pnpm, 4. the workspace's dependencies (on a fresh clone this compiles the
//   native addon: tensor-native's install script), 5. the packages (turbo, cached).
// A phase with work to do prints when it starts, a line every 15 s while it runs and how long it
// took (scripts/setup-progress.mjs); when everything is up to date the set-up prints one line.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePnpm, hasPinnedPnpm, pinnedPnpmVersion, pnpmInvocation } from './pnpm.mjs';
import { endOpenLine, finishSetup, Phase, runInPhase } from './setup-progress.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PHASES = 5;
const DEBIAN_PACKAGES = ['libtorch-dev', 'libgloo-dev'];
const aptEnvironment = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };

/** Prints a failure (ending a pending phase line first) and exits. */
function fail(lines, status = 1) {
  endOpenLine();
  for (const line of lines) console.error(line);
  process.exit(status || 1);
}

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

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

async function apt(phase, args, what) {
  return runInPhase(phase, 'apt-get', args, {
    capture: false,
    heartbeat: () => `still ${what}`,
    options: { env: aptEnvironment },
  });
}

async function ensureLibtorch() {
  if (process.env.LIBTORCH) return;
  // dpkg first: importing python3's torch takes a second or two.
  const missing = missingDebianPackages();
  if (missing.length === 0 || pythonTorchHasHeaders()) return;
  const command = `apt-get update && apt-get install -y ${missing.join(' ')}`;
  if (!isRoot()) {
    fail([
      `[flodl] libtorch is missing. Install it as root, then run this again:\n\n  sudo sh -c '${command}'\n`,
      '[flodl] or point LIBTORCH at an unpacked libtorch folder.',
    ]);
  }
  const phase = new Phase(1, PHASES, `installing libtorch with apt (${missing.join(', ')}; about 1 GB)`);
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...missing],
  ]) {
    const what = args[0] === 'update' ? 'reading the package lists' : `installing ${missing.join(', ')}`;
    const result = await apt(phase, args, what);
    if (result.status !== 0) fail([`[flodl] apt-get ${args.join(' ')} failed; run it by hand: ${command}`]);
  }
  phase.done();
}

/**
 * Installs the optional Debian packages that some tests (and the demo) need, when this machine
 * can (root with apt); otherwise says what to run. Those tests skip, saying why, without them.
 */
async function ensureOptionalDebianPackages(packages) {
  const missing = packages.filter((entry) => !existsSync(entry.present));
  if (missing.length === 0) return;
  const canInstall = isRoot() && existsSync('/usr/bin/apt-get');
  if (!canInstall) {
    for (const { name, why } of missing)
      console.warn(`[flodl] ${name} is missing (${why}): apt-get install -y ${name}`);
    return;
  }
  const phase = new Phase(2, PHASES, `installing ${missing.map(({ name }) => name).join(', ')} with apt`);
  for (const { name } of missing) {
    const install = ['install', '-y', '-qq', name];
    let result = await apt(phase, install, `installing ${name}`);
    if (result.status !== 0) {
      await apt(phase, ['update', '-qq'], 'reading the package lists');
      result = await apt(phase, install, `installing ${name}`);
    }
    if (result.status !== 0) {
      endOpenLine();
      console.warn(`[flodl] could not install ${name}; run: apt-get install -y ${name}`);
    }
  }
  phase.done();
}

function ensurePnpmPhase() {
  if (hasPinnedPnpm()) return;
  const phase = new Phase(3, PHASES, `installing pnpm ${pinnedPnpmVersion} into .tools/`);
  phase.announce();
  endOpenLine();
  ensurePnpm({ quiet: true }); // npm install --prefix .tools, or exits saying what to run
  phase.done();
}

/** Runs pnpm for a phase, its output captured and shown only when it fails (`failureLines`). */
async function pnpmPhase(phase, args, what, { lazy, onLine, heartbeat, failureLines = (output) => output }) {
  const invocation = pnpmInvocation(args);
  const result = await runInPhase(phase, invocation.command, invocation.args, {
    capture: true,
    lazy,
    onLine,
    heartbeat,
    options: invocation.options,
  });
  if (result.status !== 0) {
    fail(
      [...failureLines(result.output), `[flodl] ${what} failed (pnpm ${args.join(' ')})`],
      result.status ?? 1,
    );
  }
  return result;
}

/** The addon compile's own progress lines (scripts/build-addon.mjs), without the prefixes around them. */
function addonProgress(line) {
  const match = line.match(/\[tensor-native\]\s+(.*)$/);
  if (match === null || /addon up to date/.test(match[1])) return undefined;
  return `addon: ${match[1]}`;
}

async function installWorkspace() {
  const fresh = !existsSync(join(root, 'node_modules', '.pnpm', 'lock.yaml'));
  const phase = new Phase(
    4,
    PHASES,
    `installing the workspace (pnpm install${fresh ? '; it compiles the native addon, a few minutes' : ''})`,
  );
  let progress = 'still installing';
  await pnpmPhase(phase, ['install', '--reporter=append-only'], 'installing dependencies', {
    lazy: !fresh,
    onLine: (line) => {
      const counts = line.match(/^Progress: (resolved .*)$/);
      if (counts !== null) progress = `still installing: ${counts[1]}`;
      const addon = addonProgress(line);
      if (addon !== undefined) progress = 'still compiling the addon';
      return addon;
    },
    heartbeat: () => progress,
  });
  phase.done();
}

const PACKAGE_DIRS = ['tensor-native', 'autograd', 'nn', 'distributed', 'trainer', 'cooperative', 'testing'];

/** The log lines of the tasks turbo lists as failed, and its own summary; all of it if none is named. */
function failedTaskLogs(output) {
  const failed = output
    .flatMap((line) => line.match(/^\s*Failed:\s+(.*)$/)?.[1]?.split(/,\s*/) ?? [])
    .map((task) => `${task.replace('#', ':')}:`);
  if (failed.length === 0) return output;
  return output.filter(
    (line) => failed.some((prefix) => line.startsWith(prefix)) || /ERROR|Failed:/.test(line),
  );
}

async function buildPackages() {
  const fresh =
    !existsSync(join(root, 'packages', 'tensor-native', 'build', 'Release', 'flodl_tensor_native.node')) ||
    PACKAGE_DIRS.some((name) => !existsSync(join(root, 'packages', name, 'dist')));
  const phase = new Phase(5, PHASES, 'building the packages (turbo run build)');
  const built = [];
  let current = '';
  const result = await pnpmPhase(
    phase,
    ['exec', 'turbo', 'run', 'build', '--output-logs=full', '--log-order=stream'],
    'building the packages',
    {
      lazy: !fresh,
      onLine: (line) => {
        const task = line.match(/^(@flodl\/[\w-]+):build: cache miss, executing/);
        if (task !== null) {
          built.push(task[1]);
          current = task[1];
          return `building ${task[1]}`;
        }
        return addonProgress(line);
      },
      heartbeat: () => `still building${current === '' ? '' : ` ${current}`}`,
      failureLines: failedTaskLogs,
    },
  );
  const cached = result.output.find((line) => /^\s*Cached:/.test(line))?.match(/(\d+) cached, (\d+) total/);
  phase.done(cached ? `${built.length} built, ${cached[1]} of ${cached[2]} from the cache` : '');
}

await ensureLibtorch();
await ensureOptionalDebianPackages([
  // The demo and the data tests use the real Fashion-MNIST that Debian packages.
  {
    name: 'dataset-fashion-mnist',
    present: '/usr/share/datasets/fashion-mnist',
    why: 'the demo needs it; data tests skip',
  },
  // The dashboard's browser test drives Debian's Chromium headless.
  { name: 'chromium', present: '/usr/bin/chromium', why: 'the dashboard browser test skips' },
]);
ensurePnpmPhase();
await installWorkspace();
await buildPackages();
finishSetup();

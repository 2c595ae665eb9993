#!/usr/bin/env node
// Builds the native addon against the libtorch that scripts/libtorch.mjs finds, and says
// which one it used. Skips the build when the addon is newer than its sources.
//
//   node scripts/build-addon.mjs            node-gyp build (the normal path)
//   node scripts/build-addon.mjs --force    rebuild even when up to date
//   node scripts/build-addon.mjs --direct   compile with $CXX (g++) directly, no node-gyp:
//                                           for machines without npm packages or a network
//                                           (NODE_ADDON_API_DIR and NODE_HEADERS_DIR may point
//                                           at the node-addon-api and Node headers there)
// FLODL_BUILD=direct is the same as --direct (for `npm install`, which passes no flags);
// FLODL_BUILD_JOBS sets the parallel compiles (default 2).
//
// It runs as the package's install script, so it prints one line naming the libtorch and the
// compile, a line per compiled file and the time taken. npm hides the output of dependencies'
// install scripts unless `--foreground-scripts` is given; the lines then go to the terminal
// directly when there is one.
import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLibtorch, gypField } from './libtorch.mjs';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const output = join(packageDir, 'build', 'Release', 'flodl_tensor_native.node');
const stamp = join(packageDir, 'build', 'libtorch.json');
const args = process.argv.slice(2);
const direct = args.includes('--direct') || process.env.FLODL_BUILD === 'direct';
const progress = progressSink();

/** Prints a progress line where the user sees it (the terminal when npm hides script output). */
function say(line) {
  console.log(line);
  if (progress !== undefined) writeSync(progress, `${line}\n`);
}

function progressSink() {
  const hidden =
    process.env.npm_lifecycle_event === 'install' &&
    process.env.npm_config_user_agent?.startsWith('npm/') &&
    process.env.npm_config_foreground_scripts !== 'true' &&
    !process.stdout.isTTY;
  if (!hidden) return undefined;
  try {
    const fd = openSync('/dev/tty', 'w');
    process.on('exit', () => closeSync(fd));
    return fd;
  } catch {
    return undefined; // no terminal (CI): npm shows the log when the install fails
  }
}

let config;
try {
  config = findLibtorch();
} catch (error) {
  console.error(`[tensor-native] ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
const summary = `${config.source} (${config.root}), torch ${config.version}, ${config.cuda ? 'CUDA' : 'CPU'}`;
const nativeDir = join(packageDir, 'native');
const sources = readdirSync(nativeDir).filter((name) => name.endsWith('.cc'));

function newestSource() {
  const files = ['binding.gyp', ...readdirSync(nativeDir).map((name) => join('native', name))];
  return Math.max(...files.map((file) => statSync(join(packageDir, file)).mtimeMs));
}

const sameLibtorch = existsSync(stamp) && readFileSync(stamp, 'utf8') === JSON.stringify(config);
if (
  existsSync(output) &&
  sameLibtorch &&
  statSync(output).mtimeMs > newestSource() &&
  !args.includes('--force')
) {
  say(`[tensor-native] addon up to date (libtorch: ${summary})`);
  process.exit(0);
}

const jobs = Math.max(1, Number(process.env.FLODL_BUILD_JOBS) || 2);
const started = Date.now();
say(
  `[tensor-native] building the addon against libtorch from ${summary}: ${sources.length} C++ files, ${jobs} at a time, ${direct ? `${process.env.CXX ?? 'g++'} directly (FLODL_BUILD=direct)` : 'node-gyp'}; this takes a few minutes`,
);
const ok = direct ? await buildDirect() : await buildWithGyp();
if (!ok) {
  console.error('[tensor-native] the addon build failed (see the compiler output above)');
  process.exit(1);
}
writeFileSync(stamp, JSON.stringify(config));
say(`[tensor-native] built ${output} in ${elapsed()}`);

function elapsed() {
  const seconds = Math.round((Date.now() - started) / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

function compiled(name, count) {
  say(`[tensor-native]   compiled ${name} (${count}/${sources.length}, ${elapsed()})`);
}
function nodeHeadersDir() {
  if (process.env.NODE_HEADERS_DIR) return process.env.NODE_HEADERS_DIR;
  const nodeDir = process.env.npm_config_nodedir ?? dirname(dirname(process.execPath));
  return join(nodeDir, 'include', 'node');
}

/**
 * node-gyp's entry script: this package's own dependency, found the way Node resolves it
 * (hoisted by npm, in pnpm's virtual store, or nested), then the copy npm ships with itself.
 */
function nodeGypScript() {
  try {
    const require = createRequire(join(packageDir, 'package.json'));
    return join(dirname(require.resolve('node-gyp/package.json')), 'bin', 'node-gyp.js');
  } catch {
    const bundled = process.env.npm_config_node_gyp;
    if (bundled && existsSync(bundled)) return bundled;
    console.error(
      '[tensor-native] node-gyp was not found (it is a dependency of this package). Possible solutions:\n' +
        '  - reinstall: npm rebuild @flodl/tensor-native\n' +
        '  - compile without node-gyp: FLODL_BUILD=direct npm rebuild @flodl/tensor-native',
    );
    process.exit(1);
  }
}

async function buildWithGyp() {
  const gyp = nodeGypScript();
  const command = existsSync(output) && sameLibtorch ? 'build' : 'rebuild';
  // Build against the headers of the running Node when they are installed beside it (no download).
  const headers = nodeHeadersDir();
  const nodeDirArgs = existsSync(join(headers, 'node_api.h'))
    ? [`--nodedir=${dirname(dirname(headers))}`]
    : [];
  const child = spawn(process.execPath, [gyp, command, '--release', '-j', String(jobs), ...nodeDirArgs], {
    cwd: packageDir,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // make prints `  CXX(target) Release/obj.target/flodl_tensor_native/native/NAME.o` as it
  // starts each file: the previous one of the same worker is then done. Count started files.
  let count = 0;
  let pending = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const match = line.match(/CXX\(target\) .*\/native\/([\w-]+)\.o/);
      if (match) {
        count += 1;
        say(`[tensor-native]   compiling ${match[1]}.cc (${count}/${sources.length}, ${elapsed()})`);
      } else if (/SOLINK_MODULE|LINK\(target\)/.test(line)) {
        say(`[tensor-native]   linking (${elapsed()})`);
      } else if (line.trim() !== '') {
        console.log(line);
      }
    }
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  return code === 0;
}

function addonApiDir() {
  if (process.env.NODE_ADDON_API_DIR) return process.env.NODE_ADDON_API_DIR;
  const require = createRequire(join(packageDir, 'package.json'));
  return dirname(require.resolve('node-addon-api/package.json'));
}

async function buildDirect() {
  const compiler = process.env.CXX ?? 'g++';
  const objectDir = join(packageDir, 'build', 'direct');
  mkdirSync(objectDir, { recursive: true });
  mkdirSync(dirname(output), { recursive: true });
  const includes = [nodeHeadersDir(), addonApiDir(), ...gypField(config, 'includes').split(' ')];
  const defines = [
    'NAPI_VERSION=8',
    'NAPI_CPP_EXCEPTIONS',
    'BUILDING_NODE_EXTENSION',
    ...gypField(config, 'defines').split(' '),
  ];
  const flags = [
    '-std=c++17',
    '-O2',
    '-fPIC',
    '-fexceptions',
    '-frtti',
    '-fvisibility=hidden',
    '-Wno-unused-parameter',
    '-Wno-deprecated-declarations',
    ...includes.map((dir) => `-I${dir}`),
    ...defines.map((define) => `-D${define}`),
  ];
  const pending = [...sources];
  const objects = sources.map((name) => join(objectDir, name.replace(/\.cc$/, '.o')));
  let failed = false;
  let done = 0;
  const worker = async () => {
    while (pending.length > 0 && !failed) {
      const name = pending.shift();
      const object = join(objectDir, name.replace(/\.cc$/, '.o'));
      const code = await new Promise((resolve) => {
        const child = spawn(compiler, [...flags, '-c', join(nativeDir, name), '-o', object], {
          stdio: 'inherit',
        });
        child.on('close', resolve);
      });
      if (code !== 0) failed = true;
      else compiled(name, ++done);
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  if (failed) return false;
  say(`[tensor-native]   linking (${elapsed()})`);
  const link = spawnSync(
    compiler,
    ['-shared', '-o', output, ...objects, ...gypField(config, 'ldflags').split(' ')],
    {
      stdio: 'inherit',
    },
  );
  return link.status === 0;
}

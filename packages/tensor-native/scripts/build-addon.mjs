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
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLibtorch, gypField } from './libtorch.mjs';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const output = join(packageDir, 'build', 'Release', 'flodl_tensor_native.node');
const stamp = join(packageDir, 'build', 'libtorch.json');
const args = process.argv.slice(2);
const direct = args.includes('--direct') || process.env.FLODL_BUILD === 'direct';

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
  console.log(`[tensor-native] addon up to date (libtorch: ${summary})`);
  process.exit(0);
}

console.log(
  `[tensor-native] building the addon against libtorch from ${summary}${direct ? ' (direct)' : ''}`,
);
const jobs = Math.max(1, Number(process.env.FLODL_BUILD_JOBS) || 2);
const ok = direct ? await buildDirect() : buildWithGyp();
if (!ok) {
  console.error('[tensor-native] the addon build failed (see the compiler output above)');
  process.exit(1);
}
writeFileSync(stamp, JSON.stringify(config));
console.log(`[tensor-native] built ${output}`);

function nodeHeadersDir() {
  if (process.env.NODE_HEADERS_DIR) return process.env.NODE_HEADERS_DIR;
  const nodeDir = process.env.npm_config_nodedir ?? dirname(dirname(process.execPath));
  return join(nodeDir, 'include', 'node');
}

function buildWithGyp() {
  const gyp = join(packageDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  const command = existsSync(output) && sameLibtorch ? 'build' : 'rebuild';
  // Build against the headers of the running Node when they are installed beside it (no download).
  const headers = nodeHeadersDir();
  const nodeDirArgs = existsSync(join(headers, 'node_api.h'))
    ? [`--nodedir=${dirname(dirname(headers))}`]
    : [];
  const result = spawnSync(
    process.execPath,
    [gyp, command, '--release', '-j', String(jobs), ...nodeDirArgs],
    {
      cwd: packageDir,
      stdio: 'inherit',
    },
  );
  return result.status === 0;
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
      else console.log(`[tensor-native]   compiled ${name}`);
    }
  };
  await Promise.all(Array.from({ length: jobs }, worker));
  if (failed) return false;
  const link = spawnSync(
    compiler,
    ['-shared', '-o', output, ...objects, ...gypField(config, 'ldflags').split(' ')],
    {
      stdio: 'inherit',
    },
  );
  return link.status === 0;
}

#!/usr/bin/env node
// Builds the native addon with node-gyp against the libtorch that scripts/libtorch.mjs finds,
// and says which one it used. Skips the build when the addon is newer than its sources.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLibtorch } from './libtorch.mjs';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const output = join(packageDir, 'build', 'Release', 'flodl_tensor_native.node');
const stamp = join(packageDir, 'build', 'libtorch.json');

let config;
try {
  config = findLibtorch();
} catch (error) {
  console.error(`[tensor-native] ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
const summary = `${config.source} (${config.root}), torch ${config.version}, ${config.cuda ? 'CUDA' : 'CPU'}`;

function newestSource() {
  const files = [
    'binding.gyp',
    ...readdirSync(join(packageDir, 'native')).map((name) => join('native', name)),
  ];
  return Math.max(...files.map((file) => statSync(join(packageDir, file)).mtimeMs));
}

const sameLibtorch = existsSync(stamp) && readFileSync(stamp, 'utf8') === JSON.stringify(config);
if (
  existsSync(output) &&
  sameLibtorch &&
  statSync(output).mtimeMs > newestSource() &&
  !process.argv.includes('--force')
) {
  console.log(`[tensor-native] addon up to date (libtorch: ${summary})`);
  process.exit(0);
}

console.log(`[tensor-native] building the addon against libtorch from ${summary}`);
const gyp = join(packageDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
const jobs = String(Math.max(1, Number(process.env.FLODL_BUILD_JOBS) || 2));
const command = existsSync(output) && sameLibtorch ? 'build' : 'rebuild';
// Build against the headers of the running Node when they are installed beside it (no download).
const nodeDir = process.env.npm_config_nodedir ?? join(dirname(dirname(process.execPath)));
const nodeDirArgs = existsSync(join(nodeDir, 'include', 'node', 'node_api.h'))
  ? [`--nodedir=${nodeDir}`]
  : [];
const result = spawnSync(process.execPath, [gyp, command, '--release', '-j', jobs, ...nodeDirArgs], {
  cwd: packageDir,
  stdio: 'inherit',
});
if (result.status !== 0) {
  console.error('[tensor-native] the addon build failed (see the compiler output above)');
  process.exit(result.status ?? 1);
}
writeFileSync(stamp, JSON.stringify(config));
console.log(`[tensor-native] built ${output}`);

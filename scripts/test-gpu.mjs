#!/usr/bin/env node
// `pnpm test:gpu`: the CUDA tier. Runs the tensor core's, autograd's, nn's and the data
// pipeline's test suites with CUDA as the default device (the same cases CI runs on the CPU;
// see each package's test/device-setup.ts), then the CUDA-only checks (streams and events,
// pinned copies, allocator statistics, cuDNN RNNs, fused Adam, autocast + GradScaler, flat
// device memory). Without CUDA it prints one line saying why and exits 0.
//
//   node scripts/test-gpu.mjs [--device cuda:N] [--only tensor-native,nn,...] [--no-checks]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    device: { type: 'string', default: 'cuda' },
    only: { type: 'string' },
    'no-checks': { type: 'boolean', default: false },
  },
});
const suites = ['tensor-native', 'autograd', 'nn', 'trainer'];
const selected = args.only ? args.only.split(',') : suites;
for (const name of selected) {
  if (!suites.includes(name)) {
    console.error(`test:gpu: unknown package '${name}' (one of ${suites.join(', ')})`);
    process.exit(2);
  }
}

const entry = join(root, 'packages', 'tensor-native', 'dist', 'index.js');
if (!existsSync(entry)) {
  console.error('test:gpu: @flodl/tensor-native is not built (run `pnpm build` first)');
  process.exit(2);
}
const { buildInfo, cuda } = await import(pathToFileURL(entry).href);
const info = buildInfo();
if (!cuda.isAvailable()) {
  const why = info.cuda ? 'no GPU is visible' : 'this libtorch has no CUDA';
  console.log(`test:gpu: skipped, ${why} (libtorch ${info.torchVersion})`);
  process.exit(0);
}
console.log(
  `test:gpu: ${cuda.deviceName()} ×${cuda.deviceCount()}, libtorch ${info.torchVersion}, device ${args.device}`,
);

const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
const results = [];
for (const name of selected) {
  const cwd = join(root, 'packages', name);
  const run = spawnSync(process.execPath, [vitest, 'run'], {
    cwd,
    stdio: 'inherit',
    env: { ...process.env, FLODL_TEST_DEVICE: args.device },
  });
  const report = join(cwd, 'test-results.json');
  const counts = existsSync(report) ? JSON.parse(readFileSync(report, 'utf8')) : {};
  results.push({
    name,
    ok: run.status === 0,
    line: `${counts.numPassedTests ?? 0} passed, ${counts.numFailedTests ?? 0} failed, ${counts.numPendingTests ?? 0} skipped`,
  });
}
if (!args['no-checks']) {
  for (const script of [
    'packages/tensor-native/scripts/gpu-check.mjs',
    'packages/nn/scripts/gpu-check.mjs',
    'packages/trainer/scripts/gpu-check.mjs',
  ]) {
    const run = spawnSync(process.execPath, ['--expose-gc', join(root, script)], {
      cwd: root,
      stdio: 'inherit',
    });
    results.push({
      name: script,
      ok: run.status === 0,
      line: run.status === 0 ? 'passed' : `exit ${run.status}`,
    });
  }
}
console.log('\ntest:gpu summary');
for (const result of results) console.log(`  ${result.ok ? 'ok  ' : 'FAIL'} ${result.name}: ${result.line}`);
process.exit(results.every((result) => result.ok) ? 0 : 1);

// bench:sgemm — the float32 products of a linear layer's training step (forward, input gradient,
// weight gradient) on libtorch's own BLAS and on the oneDNN sgemm that the addon's CPU linear maps
// use (native/gemm-cpu.cc), timed from C++ on the same libtorch. `--blas DIR` puts DIR first on
// the library path of the timed process, so libtorch links the BLAS found there (Debian's
// libopenblas0-pthread, say, where libblas.so.3 is the reference BLAS).
//
//   pnpm bench:sgemm [-- --threads 1 --repeats 5 --blas /usr/lib/x86_64-linux-gnu/openblas-pthread]
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildAgainstLibtorch } from './native-build.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    threads: { type: 'string', default: '1' },
    repeats: { type: 'string', default: '5' },
    blas: { type: 'string' },
  },
});
const binary = join(here, '..', 'build', 'sgemm-bench');
mkdirSync(dirname(binary), { recursive: true });
const { build, config } = await buildAgainstLibtorch(join(here, 'sgemm.cc'), binary, ['-ldl']);
if (build.status !== 0) {
  console.error(`bench:sgemm: g++ could not build bench/sgemm.cc:\n${build.stderr}`);
  process.exit(1);
}
const env = { ...process.env, OPENBLAS_NUM_THREADS: values.threads };
if (values.blas !== undefined)
  env.LD_LIBRARY_PATH = [values.blas, env.LD_LIBRARY_PATH].filter(Boolean).join(':');
const run = spawnSync(binary, [values.threads, values.repeats], { encoding: 'utf8', env });
if (run.status !== 0) {
  console.error(`bench:sgemm: the timed process failed (${run.status ?? run.signal}):\n${run.stderr}`);
  process.exit(1);
}
const result = JSON.parse(run.stdout.trim().split('\n').pop());
const gflops = (p, seconds) => ((2 * p.m * p.n * p.k) / seconds / 1e9).toFixed(1);
const us = (seconds) => (seconds * 1e6).toFixed(seconds < 1e-5 ? 2 : 1);
const rows = result.products.map((p) => [
  p.layer,
  p.product,
  `${p.m}×${p.n}×${p.k}`,
  `${us(p.libtorch)} (${gflops(p, p.libtorch)})`,
  p.oneDnn > 0 ? `${us(p.oneDnn)} (${gflops(p, p.oneDnn)})` : 'none',
  p.oneDnn > 0 ? (p.libtorch / p.oneDnn).toFixed(1) : '',
]);
const header = [
  'layer',
  'product',
  'M×N×K',
  'libtorch µs (GFLOP/s)',
  'oneDNN µs (GFLOP/s)',
  'libtorch / oneDNN',
];
const widths = header.map((h, k) => Math.max(h.length, ...rows.map((row) => row[k].length)));
const line = (cells) =>
  `| ${cells.map((cell, k) => (k < 3 ? cell.padEnd(widths[k]) : cell.padStart(widths[k]))).join(' | ')} |`;
console.log(line(header));
console.log(`| ${widths.map((w, k) => (k < 3 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`);
for (const row of rows) console.log(line(row));
console.log(
  `\n${result.threads} thread(s); libtorch ${config.version ?? ''} links ${result.blas.join(', ') || 'a BLAS built into it'}; ` +
    `oneDNN sgemm ${result.oneDnn ? 'found' : 'not found (the addon keeps libtorch for linear maps)'}`,
);

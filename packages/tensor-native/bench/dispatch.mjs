#!/usr/bin/env node
// Per-op dispatch overhead on small tensors (64 floats, 8x8 matrices): flodl from TS versus
// PyTorch from Python, measured in the same run on the same machine. Lower is better; the
// ratio is flodl / PyTorch (below 1 means flodl is faster).
// On CUDA (`--device cuda`) every side times the host-side cost of launching each op, with a
// device synchronize before the clock is read.
// The C++ floor is given twice: each result freed at once (what "dispose" and Python do) and
// results held 100 at a time (the lifetime a tidy() scope gives them); "over floor" compares
// each flodl column with the floor of the same lifetime.
//   pnpm bench:dispatch [--device cpu|cuda] [--iterations N] [--repeats N] [--python PATH]
// --repeats: every side keeps its best of N timings (default 3; raise it on a busy machine).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgainstLibtorch } from './native-build.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && args[at + 1] !== undefined ? args[at + 1] : fallback;
};
const iterations = Number(option('iterations', '200000'));
const repeats = Math.max(1, Number(option('repeats', '3')));
// The first interpreter that has torch: --python, then python3 on PATH, then Debian's.
const python =
  option('python', null) ??
  ['python3', '/usr/bin/python3'].find(
    (candidate) => spawnSync(candidate, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0,
  ) ??
  'python3';
const device = option('device', 'cpu');

const flodl = await import(join(here, '..', 'dist', 'index.js'));
const { Tensor, cuda, manualSeed, rand, setDefaultDevice, setNumThreads, tidy, keep } = flodl;
if (device !== 'cpu' && !cuda.isAvailable()) {
  console.error(
    `[bench] --device ${device}: CUDA is not available in this libtorch build or on this machine`,
  );
  process.exit(2);
}
setDefaultDevice(device);
setNumThreads(1);
manualSeed(0);
const sync = device === 'cpu' ? () => {} : () => cuda.synchronize();
const x = keep(rand([64]));
const y = keep(rand([64]));
const m = keep(rand([8, 8]));
const n = keep(rand([8, 8]));
const index = keep(Tensor.from([1, 3, 5], undefined, { dtype: 'int64' }));
const w = keep(rand([64]).requiresGrad_());

const cases = {
  add: () => x.add(y),
  mul: () => x.mul(y),
  relu: () => x.relu(),
  sum: () => x.sum(),
  'matmul 8x8': () => m.matmul(n),
  reshape: () => x.reshape(8, 8),
  'select m[3]': () => m.select(0, 3),
  narrow: () => m.narrow(0, 2, 3),
  index_select: () => m.indexSelect(0, index),
  'add (grad)': () => w.add(y),
};

// Results are freed the way a training loop frees them: by a scope every `batch` ops.
function timeScoped(fn, batch = 100) {
  const rounds = Math.ceil(iterations / batch);
  const start = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) {
    tidy(() => {
      for (let k = 0; k < batch; k++) fn();
    });
  }
  sync();
  return Number(process.hrtime.bigint() - start) / (rounds * batch);
}

// Each result disposed right away (the closest match to Python's reference counting).
function timeDisposed(fn) {
  const start = process.hrtime.bigint();
  for (let k = 0; k < iterations; k++) fn().dispose();
  sync();
  return Number(process.hrtime.bigint() - start) / iterations;
}

function best(measure, fn) {
  for (let k = 0; k < 2000; k++) tidy(() => fn());
  sync();
  let fastest = Number.POSITIVE_INFINITY;
  for (let k = 0; k < repeats; k++) fastest = Math.min(fastest, measure(fn));
  return fastest;
}

const ours = {};
for (const [name, fn] of Object.entries(cases)) {
  ours[name] = { scoped: best(timeScoped, fn), disposed: best(timeDisposed, fn) };
}

let reference = null;
const run = spawnSync(python, [join(here, 'dispatch.py'), String(iterations), device, String(repeats)], {
  encoding: 'utf8',
});
if (run.status === 0) reference = JSON.parse(run.stdout.trim().split('\n').pop());
else if (run.error)
  console.error(`[bench] ${python} could not start: install python3-torch for the PyTorch column`);
else console.error(`[bench] PyTorch reference failed: ${run.stderr.trim().split('\n').pop()}`);

// The C++ floor: the same ops from a C++ loop on the same libtorch (built here when g++ is present).
let floor = null;
try {
  const binary = join(here, '..', 'build', 'dispatch-floor');
  const { build } = await buildAgainstLibtorch(join(here, 'floor.cc'), binary);
  if (build.status === 0) {
    const run = spawnSync(binary, [String(iterations), device, String(repeats)], { encoding: 'utf8' });
    if (run.status === 0) floor = JSON.parse(run.stdout.trim().split('\n').pop());
    else
      console.error(
        `[bench] C++ floor failed (${run.status ?? run.signal}): ${(run.stderr ?? '').trim().split('\n').pop()}`,
      );
  } else {
    console.error(`[bench] C++ floor not built: ${(build.stderr ?? '').split('\n')[0]}`);
  }
} catch (error) {
  console.error(`[bench] C++ floor skipped: ${error instanceof Error ? error.message : error}`);
}

const info = flodl.buildInfo();
console.log(
  `dispatch overhead on ${device === 'cpu' ? 'cpu' : cuda.deviceName()}, ${iterations} iterations, 1 thread; flodl on libtorch ${info.torchVersion}` +
    (reference ? `, PyTorch ${reference.torch} from Python` : ''),
);
const header = [
  'op',
  'flodl scoped ns',
  'flodl dispose ns',
  'pytorch ns',
  'C++ floor ns',
  'floor held ns',
  'scoped over held',
  'dispose over floor',
  'ratio (scoped)',
  'ratio (dispose)',
  'floor/pytorch',
];
const over = (value, base) => (base ? `${value - base >= 0 ? '+' : ''}${(value - base).toFixed(0)}` : '-');
const rows = Object.entries(ours).map(([name, value]) => {
  const py = reference?.results[name];
  const once = floor?.[name];
  const held = floor?.held?.[name];
  return [
    name,
    value.scoped.toFixed(0),
    value.disposed.toFixed(0),
    py ? py.toFixed(0) : '-',
    once ? once.toFixed(0) : '-',
    held ? held.toFixed(0) : '-',
    over(value.scoped, held),
    over(value.disposed, once),
    py ? (value.scoped / py).toFixed(2) : '-',
    py ? (value.disposed / py).toFixed(2) : '-',
    py && once ? (once / py).toFixed(2) : '-',
  ];
});
const widths = header.map((title, k) => Math.max(title.length, ...rows.map((row) => row[k].length)));
const line = (cells) =>
  cells.map((cell, k) => (k === 0 ? cell.padEnd(widths[k]) : cell.padStart(widths[k]))).join('  ');
console.log(line(header));
for (const row of rows) console.log(line(row));
if (floor) {
  const excess = rows.flatMap((row) => [row[6], row[7]]).filter((cell) => cell !== '-');
  console.log(`most over the floor: ${Math.max(...excess.map(Number)).toFixed(0)} ns (target <= 100)`);
}
if (reference) {
  const worst = Math.max(...rows.map((row) => Number(row[8])));
  console.log(`worst ratio (scoped): ${worst.toFixed(2)} (target <= 0.70)`);
  console.log('scoped: results freed by tidy() every 100 ops; dispose: each result disposed at once.');
  console.log(
    'over floor (ns): scoped minus the C++ floor holding results 100 at a time, dispose minus the C++ floor freeing each at once.',
  );
  console.log(
    'floor/pytorch: what the same libtorch call costs from C++ alone, relative to Python; no binding can go below it.',
  );
}

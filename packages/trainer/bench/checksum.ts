// `pnpm bench:checksum`: what a bundle's checksums cost. First the hash functions node:crypto
// offers, over one buffer in memory (MB/s); then, per model size (a square Linear with Adam's
// moments, one step taken), the model and optimizer files written without a digest and with
// SHA-256 fed as they are written (alternating, `--rounds` times), SHA-256 over the same bytes
// in memory (the digest's own cost), the whole `writeBundle`
// (fsync included), and `readCheckpoint` with the version-3 meta (every file hashed) against
// the same bundle's meta rewritten as version 2 (sizes and bundle ids only).
// Prints medians and JSON. The writes fsync: `--dir /dev/shm` takes the disk out of them.
//
//   node --import tsx bench/checksum.ts [--widths 1024,2048,4096] [--rounds 5] [--dir DIR] [--json out.json]
import { createHash, getHashes, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Adam, Linear, save, saveOptimizer } from '@flodl/nn';
import { manualSeed, randn } from '@flodl/tensor-native';
import { readCheckpoint } from '../src/checkpoint/read.js';
import { type BundleSource, writeBundle } from '../src/checkpoint/write.js';
import { benchArgs } from './cli-args.js';

const { values: args } = parseArgs({
  args: benchArgs(),
  options: {
    widths: { type: 'string', default: '1024,2048,4096' },
    rounds: { type: 'string', default: '5' },
    dir: { type: 'string' },
    json: { type: 'string' },
  },
});
const rounds = Number(args.rounds);
const widths = String(args.widths).split(',').map(Number);
const folder = mkdtempSync(join(args.dir ?? tmpdir(), 'flodl-bench-checksum-'));

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const time = (fn: () => void): number => {
  const start = performance.now();
  fn();
  return performance.now() - start;
};

// The hash functions, over 64 MiB in memory.
const bytes = randomBytes(64 * 1024 * 1024);
const hashes: Record<string, number> = {};
for (const algorithm of ['sha256', 'sha1', 'md5', 'sha512', 'sha512-256', 'blake2b512', 'blake2s256']) {
  if (!getHashes().includes(algorithm)) continue;
  const ms = median(
    Array.from({ length: rounds }, () => time(() => createHash(algorithm).update(bytes).digest())),
  );
  hashes[algorithm] = bytes.length / 1e6 / (ms / 1000);
}
console.log('hash over 64 MiB in memory, MB/s (median):');
for (const [algorithm, rate] of Object.entries(hashes))
  console.log(`  ${algorithm.padEnd(11)} ${rate.toFixed(0)}`);

interface SizeResult {
  parameters: number;
  bundleMB: number;
  plainWriteMs: number;
  digestWriteMs: number;
  /** SHA-256 of the bundle's model and optimizer bytes, in memory. */
  hashMs: number;
  writeBundleMs: number;
  readV3Ms: number;
  readV2Ms: number;
}
const sizes: SizeResult[] = [];
for (const width of widths) {
  manualSeed(1);
  const model = new Linear(width, width);
  const optimizer = new Adam(model.parameters(), { lr: 1e-3 });
  const loss = model.forward(randn([4, width])).sum();
  loss.backward();
  optimizer.step();
  loss.dispose();
  const source: BundleSource = {
    model,
    optimizer,
    scheduler: undefined,
    device: 'cpu',
    rank: 0,
    worldSize: 1,
    mode: 'single',
    membership: [0],
    seed: 1,
    batchSize: 8,
    datasetLength: 64,
    globalStep: 0,
    localStep: 1,
    stepsSinceAvg: 1,
    averagingCount: 0,
    cursor: { epoch: 0, batch: 1, totalLoss: 0, computeMs: 0, dataMs: 0 },
    covered: [],
  };
  const plain: number[] = [];
  const digested: number[] = [];
  const bundles: number[] = [];
  const readV3: number[] = [];
  const readV2: number[] = [];
  const stem = join(folder, `w${width}`);
  const v2Stem = join(folder, `w${width}-v2`);
  const writePlain = () =>
    plain.push(
      time(() => {
        save(model, `${stem}.plain.safetensors`);
        saveOptimizer(optimizer, `${stem}.plain.optim.safetensors`);
      }),
    );
  const writeDigested = () =>
    digested.push(
      time(() => {
        const digest = createHash('sha256');
        save(model, `${stem}.digest.safetensors`, { digest });
        const optimizerDigest = createHash('sha256');
        saveOptimizer(optimizer, `${stem}.digest.optim.safetensors`, { digest: optimizerDigest });
        digest.digest('hex');
        optimizerDigest.digest('hex');
      }),
    );
  for (let round = 0; round < rounds; round++) {
    // Alternating which goes first: the file system's state favours neither.
    if (round % 2 === 0) {
      writePlain();
      writeDigested();
    } else {
      writeDigested();
      writePlain();
    }
    bundles.push(time(() => writeBundle(stem, source, 'every')));
    // The same files under a version-2 meta (no checksums): what reading checked before.
    const meta = JSON.parse(readFileSync(`${stem}.meta.json`, 'utf8'));
    for (const suffix of ['.safetensors', '.optim.safetensors'])
      writeFileSync(`${v2Stem}${suffix}`, readFileSync(`${stem}${suffix}`));
    const strip = ({ bytes: size }: { bytes: number }, name: string) => ({ name, bytes: size });
    writeFileSync(
      `${v2Stem}.meta.json`,
      JSON.stringify({
        ...meta,
        version: 2,
        files: {
          model: strip(meta.files.model, `w${width}-v2.safetensors`),
          optimizer: { 0: strip(meta.files.optimizer['0'], `w${width}-v2.optim.safetensors`) },
          scheduler: null,
        },
      }),
    );
    readV3.push(time(() => readCheckpoint(stem)));
    readV2.push(time(() => readCheckpoint(v2Stem)));
  }
  const meta = readCheckpoint(stem).meta;
  const bundleBytes = meta.files.model.bytes + (meta.files.optimizer['0']?.bytes ?? 0);
  const contents = [readFileSync(`${stem}.safetensors`), readFileSync(`${stem}.optim.safetensors`)];
  const hashMs = median(
    Array.from({ length: rounds }, () =>
      time(() => {
        for (const content of contents) createHash('sha256').update(content).digest();
      }),
    ),
  );
  sizes.push({
    parameters: width * width + width,
    bundleMB: bundleBytes / 1e6,
    plainWriteMs: median(plain),
    digestWriteMs: median(digested),
    hashMs,
    writeBundleMs: median(bundles),
    readV3Ms: median(readV3),
    readV2Ms: median(readV2),
  });
  optimizer.dispose();
  model.dispose();
}
console.log(
  '\nparameters  bundle MB  sha256 ms  write plain ms  write+sha256 ms  writeBundle ms  readCheckpoint v3 ms  v2 ms',
);
for (const size of sizes)
  console.log(
    `${String(size.parameters).padStart(10)}  ${size.bundleMB.toFixed(1).padStart(9)}  ${size.hashMs.toFixed(1).padStart(9)}  ${size.plainWriteMs.toFixed(1).padStart(14)}  ${size.digestWriteMs.toFixed(1).padStart(15)}  ${size.writeBundleMs.toFixed(1).padStart(14)}  ${size.readV3Ms.toFixed(1).padStart(20)}  ${size.readV2Ms.toFixed(1).padStart(5)}`,
  );
const report = { hashesMBps: hashes, sizes, rounds };
console.log(`\n${JSON.stringify(report)}`);
if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
rmSync(folder, { recursive: true, force: true });

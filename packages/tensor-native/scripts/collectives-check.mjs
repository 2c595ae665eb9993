#!/usr/bin/env node
// Collectives across real processes, for machines where the test runner is not installed
// (the GPU machine): `node scripts/collectives-check.mjs gloo 3` or `... nccl 2` (one GPU per
// rank). Every rank all-reduces, broadcasts and all-gathers; the parent checks that all ranks
// hold bit-identical, correct results. Exits non-zero on a failure.
import { fork } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(import.meta.url);
const [backend = 'gloo', sizeText = '2', role, rankText, portText] = process.argv.slice(2);
const worldSize = Number(sizeText);

if (role === 'rank') {
  const flodl = await import(join(dirname(here), '..', 'dist', 'index.js'));
  const rank = Number(rankText);
  const device = backend === 'nccl' ? `cuda:${rank}` : 'cpu';
  const group = flodl.createProcessGroup({
    backend,
    rank,
    worldSize,
    port: Number(portText),
    timeoutMs: 30000,
  });
  const values = flodl.tidy(() => {
    const tensor = flodl.Tensor.from([rank + 1, 2 * (rank + 1), 0.5], undefined, { dtype: 'float32' }).to(
      device,
    );
    group.allReduce([tensor], { op: 'sum' });
    const average = flodl.Tensor.from([rank, 10 + rank], undefined, { dtype: 'float64' }).to(device);
    group.allReduce([average], { op: 'avg' });
    const shared = flodl.Tensor.from([rank * 7], undefined, { dtype: 'float32' }).to(device);
    group.broadcast([shared], worldSize - 1);
    group.barrier();
    return [tensor, average, shared].map((item) => Array.from(item.cpu().toTypedArray()));
  });
  group.destroy();
  process.send({ rank, values });
  process.exit(0);
} else {
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = server.address();
      server.close(() => resolve(free));
    });
  });
  const results = await Promise.all(
    Array.from(
      { length: worldSize },
      (_, rank) =>
        new Promise((resolve, reject) => {
          const child = fork(here, [backend, String(worldSize), 'rank', String(rank), String(port)]);
          child.on('message', resolve);
          child.on('exit', (code) => code !== 0 && reject(new Error(`rank ${rank} exited with ${code}`)));
        }),
    ),
  );
  const total = (worldSize * (worldSize + 1)) / 2;
  const expected = JSON.stringify([
    [total, 2 * total, 0.5 * worldSize],
    [(worldSize - 1) / 2, 10 + (worldSize - 1) / 2],
    [7 * (worldSize - 1)],
  ]);
  const failures = results.filter((result) => JSON.stringify(result.values) !== expected);
  for (const result of results) console.log(`rank ${result.rank}: ${JSON.stringify(result.values)}`);
  console.log(
    `${backend} with ${worldSize} ranks: ${failures.length === 0 ? 'all ranks identical and correct' : `${failures.length} rank(s) wrong, expected ${expected}`}`,
  );
  console.log(`${results.length - failures.length} passed, ${failures.length} failed`);
  process.exit(failures.length === 0 ? 0 : 1);
}

// Two hosts in network namespaces made by the test (ip netns + a veth pair): each runs its own
// launcher with one rank; rank 1 dials the coordinator on the other host's address, and both
// average every step (CpuSync) over the control and data channels. Root only; skipped otherwise.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunSecret, SECRET_ENV } from '../src/wire/index.js';
import { bundledRankWorker, tsxDirectory } from './fixtures/cluster-setup.js';

const here = dirname(fileURLToPath(import.meta.url));
const tsxLoader = join(tsxDirectory, 'dist', 'loader.mjs');

function canMakeNamespaces(): boolean {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return false;
  try {
    execFileSync('ip', ['netns', 'add', `flodl-probe-${process.pid}`], { stdio: 'ignore' });
    execFileSync('ip', ['netns', 'del', `flodl-probe-${process.pid}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const available = canMakeNamespaces();
const suffix = process.pid % 10000;
const namespaces = [`flodl-a-${suffix}`, `flodl-b-${suffix}`];
const addresses = [`10.231.${suffix % 250}.1`, `10.231.${suffix % 250}.2`];
const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

describe.skipIf(!available)('two hosts in network namespaces (root only)', () => {
  const workerUrl = bundledRankWorker('two-host-rank-worker');
  beforeAll(() => {
    for (const name of namespaces) ip('netns', 'add', name);
    ip('link', 'add', `fa${suffix}`, 'type', 'veth', 'peer', 'name', `fb${suffix}`);
    ip('link', 'set', `fa${suffix}`, 'netns', namespaces[0]!);
    ip('link', 'set', `fb${suffix}`, 'netns', namespaces[1]!);
    for (const [k, name] of namespaces.entries()) {
      const link = k === 0 ? `fa${suffix}` : `fb${suffix}`;
      ip('netns', 'exec', name, 'ip', 'addr', 'add', `${addresses[k]}/24`, 'dev', link);
      ip('netns', 'exec', name, 'ip', 'link', 'set', link, 'up');
      ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
    }
  });
  afterAll(() => {
    for (const name of namespaces) {
      try {
        ip('netns', 'del', name);
      } catch {
        // already gone
      }
    }
  });

  it('rank 1 on host B joins the coordinator on host A and both average every step', async () => {
    const recordDir = mkdtempSync(join(tmpdir(), 'flodl-two-host-'));
    const coordinator = `${addresses[0]}:29517`;
    const env = { ...process.env, [SECRET_ENV]: Buffer.from(createRunSecret()).toString('hex') };
    const runNode = (nodeRank: number) =>
      new Promise<number>((resolve) => {
        const config = {
          nodeRank,
          coordinator,
          recordDir,
          rankScript: join(here, 'fixtures', 'averaging-rank.ts'),
          workerUrl: workerUrl().href,
          steps: 12,
        };
        const child = spawn(
          'ip',
          [
            'netns',
            'exec',
            namespaces[nodeRank]!,
            process.execPath,
            '--import',
            tsxLoader,
            join(here, 'fixtures', 'two-host-node.ts'),
            JSON.stringify(config),
          ],
          { env, stdio: 'inherit' },
        );
        child.on('exit', (code) => resolve(code ?? 1));
      });
    try {
      const nodeA = runNode(0);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const codes = await Promise.all([nodeA, runNode(1)]);
      expect(codes).toEqual([0, 0]);
      const records = [0, 1].map((rank) =>
        JSON.parse(readFileSync(join(recordDir, `averaging-${rank}.json`), 'utf8')),
      );
      const versions = records[0].rounds.map((round: { version: number }) => round.version);
      expect(versions.length).toBeGreaterThan(1);
      for (const version of versions) {
        const [a, b] = records.map(
          (record) => record.rounds.find((round: { version: number }) => round.version === version).post,
        );
        expect(b).toEqual(a);
      }
    } finally {
      rmSync(recordDir, { recursive: true, force: true });
    }
  }, 90_000);
});

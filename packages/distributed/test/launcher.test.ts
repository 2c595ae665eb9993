import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FlodlError } from '@flodl/tensor-native';
import { captureWarnings } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { launch, parseLaunchArgs, RankFailedError } from '../src/launcher/index.js';
import './fixtures/cluster-setup.js'; // runs the .ts rank fixtures through this package's tsx

// A failing rank can reset its connection; the coordinator logs the drop (expected here).
captureWarnings([
  /^\[flodl\] dropped connection from .*: wire: connection error: (read|write) (ECONNRESET|EPIPE)/,
]);

const here = dirname(fileURLToPath(import.meta.url));
const rankScript = join(here, 'fixtures', 'launcher-rank.ts');
const bin = join(here, '..', 'bin', 'flodl.mjs');

async function failure(promise: Promise<unknown>): Promise<RankFailedError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RankFailedError);
  // The death records stay for the post-mortem the error names; this test has read them.
  const { recordDir } = error as RankFailedError;
  expect(existsSync(recordDir)).toBe(true);
  rmSync(recordDir, { recursive: true, force: true });
  return error as RankFailedError;
}

describe('launch', () => {
  it('runs three ranks that check their role and handshake, and resolves when all exit 0', async () => {
    const result = await launch({ nproc: 3, script: rankScript, stdio: 'ignore', timeoutMs: 20_000 });
    expect(result.worldSize).toBe(3);
    expect(result.interrupted).toBe(false);
    expect(result.ranks.map((rank) => [rank.rank, rank.exitCode, rank.outcome])).toEqual([
      [0, 0, 'ok'],
      [1, 0, 'ok'],
      [2, 0, 'ok'],
    ]);
  });

  it('turns one throwing rank into ERR_RANK_FAILED naming it, and stops the others fast', async () => {
    const started = Date.now();
    const scenario = { 0: { action: 'hang' }, 1: { action: 'throw', afterMs: 300 }, 2: { action: 'hang' } };
    const error = await failure(
      launch({
        nproc: 3,
        script: rankScript,
        args: [JSON.stringify(scenario)],
        stdio: 'ignore',
        killGraceMs: 1000,
      }),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(FlodlError.isInstance(error) && error.code).toBe('ERR_RANK_FAILED');
    expect(error.rootCause.rank).toBe(1);
    expect(error.rootCause.source).toBe('rank');
    expect(error.rootCause.message).toBe('Error: rank 1 failed on purpose');
    expect(error.rootCause.stack).toContain('launcher-rank.ts');
    expect(error.failures.map((record) => record.rank)).toEqual([1]);
    expect(error.stoppedRanks).toEqual([0, 2]);
    expect(error.message).toMatch(/1 of 3 ranks failed; root cause: rank 1 \(exit code 1\)/);
    expect(error.message).toContain('<- root cause');
  });

  it('names the earliest of two failures as the root cause', async () => {
    // Rank 2 fails first (once rank 0 is set up); rank 0, told to stop, fails within the grace period.
    const scenario = {
      0: { action: 'hang', throwOnTerm: true },
      1: { action: 'hang' },
      2: { action: 'throw', afterMs: 100, waitFor: [0] },
    };
    const error = await failure(
      launch({
        nproc: 3,
        script: rankScript,
        args: [JSON.stringify(scenario)],
        stdio: 'ignore',
        killGraceMs: 3000,
      }),
    );
    expect(error.failures.map((record) => record.rank)).toEqual([2, 0]);
    expect(error.rootCause.rank).toBe(2);
    expect(error.stoppedRanks).toEqual([1]);
    expect(error.message).toMatch(/2 of 3 ranks failed; root cause: rank 2/);
  });

  it('records a rank killed by a signal, and SIGKILLs a rank that ignores SIGTERM', async () => {
    const started = Date.now();
    const scenario = { 0: { action: 'hang', ignoreTerm: true }, 1: { action: 'signal', afterMs: 200 } };
    const error = await failure(
      launch({
        nproc: 2,
        script: rankScript,
        args: [JSON.stringify(scenario)],
        stdio: 'ignore',
        killGraceMs: 500,
      }),
    );
    expect(error.rootCause).toMatchObject({ rank: 1, signal: 'SIGKILL', exitCode: null, source: 'launcher' });
    expect(error.rootCause.message).toBe('killed by signal SIGKILL');
    expect(error.stoppedRanks).toEqual([0]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('synthesises a record for a rank that exits non-zero without writing one', async () => {
    const scenario = { 0: { action: 'exit', afterMs: 100 } };
    const error = await failure(
      launch({ nproc: 1, script: rankScript, args: [JSON.stringify(scenario)], stdio: 'ignore' }),
    );
    expect(error.rootCause).toMatchObject({ rank: 0, exitCode: 3, signal: null, source: 'launcher' });
  });

  it('stops the ranks when its signal aborts', async () => {
    const controller = new AbortController();
    const scenario = { 0: { action: 'hang' }, 1: { action: 'hang' } };
    setTimeout(() => controller.abort(), 1500);
    const result = await launch({
      nproc: 2,
      script: rankScript,
      args: [JSON.stringify(scenario)],
      stdio: 'ignore',
      signal: controller.signal,
    });
    expect(result.interrupted).toBe(true);
    expect(result.ranks.map((rank) => rank.outcome)).toEqual(['stopped', 'stopped']);
  });

  it('times out a run that outlives timeoutMs, stopping every rank, and leaves no record directory', async () => {
    const previous = process.env.TMPDIR;
    const scratch = mkdtempSync(join(tmpdir(), 'flodl-launch-timeout-'));
    process.env.TMPDIR = scratch;
    try {
      const scenario = { 0: { action: 'hang' }, 1: { action: 'hang' } };
      const error = await launch({
        nproc: 2,
        script: rankScript,
        args: [JSON.stringify(scenario)],
        stdio: 'ignore',
        timeoutMs: 1500,
        killGraceMs: 500,
      }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({
        code: 'ERR_TIMEOUT',
        message: expect.stringMatching(/outlived timeoutMs 1500/),
      });
      expect(readdirSync(scratch).filter((name) => name.startsWith('flodl-run-'))).toEqual([]);
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("leaves no run folder when the launcher's own start fails (the coordinator's port taken)", async () => {
    const previous = process.env.TMPDIR;
    const scratch = mkdtempSync(join(tmpdir(), 'flodl-launch-port-'));
    const runFolders = () => readdirSync(scratch).filter((name) => name.startsWith('flodl-run-'));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    process.env.TMPDIR = scratch;
    try {
      const before = runFolders();
      const port = (taken.address() as AddressInfo).port;
      const error = await launch({ nproc: 2, script: rankScript, stdio: 'ignore', port }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(FlodlError.isInstance(error) && error.code).toBe('ERR_IO');
      expect(runFolders()).toEqual(before);
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
      await new Promise((resolve) => taken.close(resolve));
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('rejects bad options before starting anything', async () => {
    await expect(launch({ nproc: 0, script: rankScript })).rejects.toThrow(/invalid nproc/);
    await expect(launch({ nproc: 1, script: rankScript, mode: 'NcclAsync' as never })).rejects.toThrow(
      /invalid mode/,
    );
    await expect(launch({ nproc: 1, script: rankScript, nnodes: 2 })).rejects.toThrow(/invalid coordinator/);
    await expect(launch({ nproc: 1, script: 'train.py' })).rejects.toThrow(/invalid script/);
  });
});

describe('flodl launch (bin)', () => {
  const run = (args: string[]) =>
    spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: 20_000, env: process.env });

  it('runs two ranks end to end and exits 0, each output line prefixed with its rank', () => {
    expect(existsSync(bin)).toBe(true);
    const result = run(['launch', '--nproc', '2', '--mode', 'CpuSync', rankScript]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.split('\n').filter(Boolean).sort()).toEqual([
      '[rank 0] rank 0 ok CpuSync cpu',
      '[rank 1] rank 1 ok CpuSync cpu',
    ]);
    const plain = run(['launch', '--nproc', '1', '--no-prefix', rankScript]);
    expect([plain.status, plain.stdout]).toEqual([0, 'rank 0 ok CpuCadence cpu\n']);
  });

  it('exits 1 with one ERR_RANK_FAILED error when a rank fails', () => {
    const result = run([
      'launch',
      '--nproc=2',
      rankScript,
      JSON.stringify({ 0: { action: 'hang' }, 1: { action: 'throw' } }),
    ]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'flodl: [ERR_RANK_FAILED] launch: 1 of 2 ranks failed; root cause: rank 1',
    );
    // The error names the death records it keeps for the post-mortem.
    const recordDir = /death records: (\S+)/.exec(result.stderr)?.[1] as string;
    expect(readdirSync(recordDir)).toContain('rank1.death.json');
    rmSync(recordDir, { recursive: true, force: true });
  });

  it('names a missing rank script before starting anything, and leaves no run folder', () => {
    const scratch = mkdtempSync(join(tmpdir(), 'flodl-launch-missing-'));
    const runFolders = () => readdirSync(scratch).filter((name) => name.startsWith('flodl-run-'));
    try {
      const before = runFolders();
      const result = spawnSync(process.execPath, [bin, 'launch', '--nproc', '2', 'does-not-exist.js'], {
        encoding: 'utf8',
        timeout: 20_000,
        cwd: scratch,
        env: { ...process.env, TMPDIR: scratch },
      });
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(
        result.stderr.replaceAll(realpathSync(scratch), '<dir>').replaceAll(scratch, '<dir>'),
      ).toMatchInlineSnapshot(`
        "flodl: [ERR_INVALID_ARGUMENT] launch: the rank script <dir>/does-not-exist.js does not exist
          expected: the path of the script every rank runs (relative to the working directory)
          got: "does-not-exist.js" (in <dir>)
        "
      `);
      expect(runFolders()).toEqual(before);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('answers bad flags with a usage error and exit code 2', () => {
    const unknown = run(['launch', '--nprocs', '2', rankScript]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('unknown flag --nprocs');
    expect(unknown.stderr).toContain('usage: flodl launch --nproc N');
    expect(run(['launch', rankScript]).stderr).toContain('--nproc is required');
    expect(run(['launch', '--nproc', 'two', rankScript]).stderr).toContain(
      '--nproc takes a whole number of ranks >= 1, got two',
    );
  });

  it('parses flags before the script and passes the rest through', () => {
    expect(
      parseLaunchArgs([
        'launch',
        '--nproc',
        '4',
        '--device',
        'cuda',
        '--nnodes=2',
        '--node-rank',
        '1',
        '--coordinator',
        'h:1337',
        's.ts',
        '--lr',
        '3',
      ]),
    ).toEqual({
      kind: 'launch',
      options: {
        nproc: 4,
        device: 'cuda',
        nnodes: 2,
        nodeRank: 1,
        coordinator: 'h:1337',
        script: 's.ts',
        args: ['--lr', '3'],
      },
    });
    expect(() => parseLaunchArgs(['launch', '--mode', 'NcclAsync', 's.ts'])).toThrow(/bad --mode NcclAsync/);
  });
});

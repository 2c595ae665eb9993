// The launcher's elastic policy and its exit feed, with real rank processes (no coordinator:
// the ranks of test/fixtures/launcher-rank.ts handshake and exit, or fail on cue).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FlodlError } from '@flodl/tensor-native';
import { alive, captureWarnings } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import {
  deathRecordPath,
  describeLost,
  type LaunchRun,
  launch,
  parseLaunchArgs,
  type RankExitEvent,
  RankFailedError,
  type RankProcessInfo,
} from '../src/launcher/index.js';
import './fixtures/cluster-setup.js'; // runs the .ts rank fixtures through this package's tsx

// A failing rank can reset its connection; the coordinator logs the drop (expected here).
captureWarnings([
  /^\[flodl\] dropped connection from .*: wire: connection error: (read|write) (ECONNRESET|EPIPE)/,
  // The SIGSTOPped rank of the liveness test is dropped for silence.
  /^\[flodl\] dropped connection from .*: wire: rank 1's control channel timed out after 1000 ms/,
]);

const here = dirname(fileURLToPath(import.meta.url));
const rankScript = join(here, 'fixtures', 'launcher-rank.ts');
const bin = join(here, '..', 'bin', 'flodl.mjs');

function elastic(scenario: object, extra: { maxFailure?: { absolute: number } } = {}) {
  const exits: (RankExitEvent & { seenAt: number })[] = [];
  const promise = launch({
    nproc: 3,
    script: rankScript,
    args: [JSON.stringify(scenario)],
    stdio: 'ignore',
    timeoutMs: 20_000,
    elastic: true,
    ...extra,
    onServer: (_server, run) => {
      expect(run).toMatchObject({ worldSize: 3, elastic: true, maxFailure: extra.maxFailure });
      run.onRankExit((exit) => exits.push({ ...exit, seenAt: Date.now() }));
    },
  });
  return { promise, exits };
}

/** Runs 3 ranks where rank 1 hangs; `act` gets the run once rank 1 is ready. */
async function withHungRank(act: (run: LaunchRun) => void, livenessMs?: number) {
  const recordDir = mkdtempSync(join(tmpdir(), 'flodl-stop-rank-'));
  let listed: RankProcessInfo[] = [];
  try {
    const result = await launch({
      nproc: 3,
      script: rankScript,
      args: [JSON.stringify({ 1: { action: 'hang' } })],
      stdio: 'ignore',
      timeoutMs: 20_000,
      killGraceMs: 1000,
      elastic: true,
      recordDir,
      ...(livenessMs ? { livenessMs } : {}),
      onServer: (_server, run) => {
        expect(run.livenessMs).toBe(livenessMs ?? 30_000);
        const timer = setInterval(() => {
          if (!existsSync(join(recordDir, 'ready-1'))) return;
          clearInterval(timer);
          listed = run.ranks();
          act(run);
        }, 20);
        run.onRankExit(() => run.ranks().some((rank) => rank.running) || clearInterval(timer));
      },
    });
    return { result, listed };
  } finally {
    rmSync(recordDir, { recursive: true, force: true });
  }
}

describe('the run handle: rank pids, stopRank, hung ranks', () => {
  it.concurrent('lists the rank pids and stops one rank, reported as lost with the reason', async () => {
    const { result, listed } = await withHungRank((run) => {
      expect(run.stopRank(7)).toBe(false);
      expect(run.stopRank(1, { reason: 'stopped by the test' })).toBe(true);
    });
    expect(listed.map((rank) => rank.rank)).toEqual([0, 1, 2]);
    expect(listed.every((rank) => rank.pid > 0)).toBe(true);
    expect(listed[1]!.running).toBe(true);
    expect(result.ranks.map((rank) => rank.outcome)).toEqual(['ok', 'failed', 'ok']);
    expect(result.ranks.map((rank) => rank.pid)).toEqual(listed.map((rank) => rank.pid));
    expect(result.lost).toHaveLength(1);
    expect(result.lost[0]).toMatchObject({ rank: 1, signal: 'SIGTERM', source: 'launcher' });
    expect(result.lost[0]!.message).toBe('stopped by the test; ended by the launcher (SIGTERM)');
    expect(alive(listed[1]!.pid)).toBe(false);
  });

  it.concurrent('ends a SIGSTOPped rank the server dropped for silence (no coordinator), after livenessMs', async () => {
    const { result, listed } = await withHungRank((run) => {
      process.kill(run.ranks()[1]!.pid, 'SIGSTOP');
    }, 1000);
    expect(result.ranks.map((rank) => rank.outcome)).toEqual(['ok', 'failed', 'ok']);
    expect(result.lost[0]!.message).toMatch(/^silent for 1000 ms; ended by the launcher \(SIG(TERM|KILL)\)$/);
    expect(alive(listed[1]!.pid)).toBe(false);
  });

  it('rejects a liveness setting under 500 ms and unknown server limits', async () => {
    for (const options of [
      { livenessMs: 100 },
      { server: { bogus: 1 } },
      { server: { maxPendingHandshakes: 0 } },
      { server: { idleTimeoutMs: -1 } },
    ]) {
      const error = await launch({ nproc: 1, script: rankScript, ...options } as never).catch(
        (caught) => caught,
      );
      expect(FlodlError.isInstance(error) && error.code, JSON.stringify(options)).toBe(
        'ERR_INVALID_ARGUMENT',
      );
    }
  });
});

describe('launch({ elastic: true })', () => {
  it('keeps the other ranks running, reports every exit as it happens and lists the lost rank', async () => {
    const { promise, exits } = elastic({ 1: { action: 'throw', afterMs: 300 } });
    const result = await promise;
    expect(result.ranks.map((rank) => [rank.rank, rank.outcome])).toEqual([
      [0, 'ok'],
      [1, 'failed'],
      [2, 'ok'],
    ]);
    expect(result.lost).toHaveLength(1);
    expect(result.lost[0]).toMatchObject({ rank: 1, exitCode: 1, source: 'rank' });
    expect(result.lost[0]!.message).toBe('Error: rank 1 failed on purpose');
    // The lost rank's record is kept for the post-mortem.
    expect(result.recordDir).toBeDefined();
    expect(existsSync(deathRecordPath(result.recordDir!, 1))).toBe(true);
    rmSync(result.recordDir!, { recursive: true, force: true });
    // Every process end reached the run's listeners; the failure within moments of the death.
    expect(exits.map((exit) => [exit.rank, exit.outcome]).sort()).toEqual([
      [0, 'ok'],
      [1, 'failed'],
      [2, 'ok'],
    ]);
    const failed = exits.find((exit) => exit.rank === 1)!;
    expect(failed.failure).toEqual(result.lost[0]);
    expect(failed.seenAt - failed.failure!.time).toBeLessThan(1000);
    expect(exits.find((exit) => exit.rank === 0)!.failure).toBeUndefined();
    expect(describeLost(result)).toContain('the run finished without 1 of 3 ranks (elastic)');
  });

  it('fails with RankFailedError when no rank finished', async () => {
    const { promise } = elastic({ 0: { action: 'exit' }, 1: { action: 'signal' }, 2: { action: 'throw' } });
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(RankFailedError);
    rmSync((error as RankFailedError).recordDir, { recursive: true, force: true }); // done with the death records
    expect((error as RankFailedError).failures.map((record) => record.rank).sort()).toEqual([0, 1, 2]);
    expect((error as RankFailedError).stoppedRanks).toEqual([]);
  });

  it('fails with RankFailedError once the failures reach maxFailure, without stopping the others', async () => {
    const { promise } = elastic({ 2: { action: 'signal', afterMs: 100 } }, { maxFailure: { absolute: 1 } });
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(RankFailedError);
    rmSync((error as RankFailedError).recordDir, { recursive: true, force: true }); // done with the death records
    expect((error as RankFailedError).rootCause).toMatchObject({ rank: 2, signal: 'SIGKILL' });
    expect((error as RankFailedError).stoppedRanks).toEqual([]);
  });

  it('reports exits in a plain run too, where the first failure still stops the others', async () => {
    const exits: RankExitEvent[] = [];
    const error = await launch({
      nproc: 3,
      script: rankScript,
      args: [
        JSON.stringify({ 0: { action: 'hang' }, 1: { action: 'exit', afterMs: 200 }, 2: { action: 'hang' } }),
      ],
      stdio: 'ignore',
      killGraceMs: 1000,
      onServer: (_server, run) => {
        expect(run.elastic).toBe(false);
        run.onRankExit((exit) => exits.push(exit));
      },
    }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(RankFailedError);
    rmSync((error as RankFailedError).recordDir, { recursive: true, force: true }); // done with the death records
    expect(exits[0]).toMatchObject({ rank: 1, outcome: 'failed', exitCode: 3 });
    expect(
      exits
        .slice(1)
        .map((exit) => [exit.rank, exit.outcome])
        .sort(),
    ).toEqual([
      [0, 'stopped'],
      [2, 'stopped'],
    ]);
  });

  it('rejects maxFailure without elastic', async () => {
    const error = await launch({ nproc: 1, script: rankScript, maxFailure: { absolute: 1 } }).catch(
      (caught: unknown) => caught,
    );
    expect(FlodlError.isInstance(error) && error.code).toBe('ERR_INVALID_ARGUMENT');
    expect((error as Error).message).toContain('maxFailure');
  });
});

describe('flodl launch --elastic', () => {
  it('parses --elastic and --max-failure N or P%', () => {
    expect(parseLaunchArgs(['launch', '--nproc', '2', '--elastic', '--max-failure', '50%', 's.ts'])).toEqual({
      kind: 'launch',
      options: { nproc: 2, elastic: true, maxFailure: { percent: 0.5 }, script: 's.ts', args: [] },
    });
    expect(parseLaunchArgs(['launch', '--elastic', '--nproc=2', '--max-failure=1', 's.ts'])).toMatchObject({
      options: { elastic: true, maxFailure: { absolute: 1 } },
    });
    expect(() => parseLaunchArgs(['launch', '--nproc', '2', '--max-failure', '1', 's.ts'])).toThrow(
      /--max-failure needs --elastic/,
    );
    expect(() =>
      parseLaunchArgs(['launch', '--nproc', '2', '--elastic', '--max-failure', '0%', 's.ts']),
    ).toThrow(/--max-failure takes a whole number of ranks >= 1 or a percentage in \(0, 100\], got 0%/);
  });

  it('exits 0 and names the lost rank when the others finish', () => {
    const result = spawnSync(
      process.execPath,
      [
        bin,
        'launch',
        '--nproc',
        '2',
        '--elastic',
        rankScript,
        JSON.stringify({ 1: { action: 'exit', afterMs: 100 } }),
      ],
      { encoding: 'utf8', timeout: 20_000, env: process.env },
    );
    expect(result.status).toBe(0);
    expect(result.stderr).toContain('flodl: the run finished without 1 of 2 ranks (elastic); lost:');
    expect(result.stderr).toMatch(/ {2}rank 1 \(pid \d+, exit code 3\) at .*: exited with code 3/);
    const recordDir = /death records: (.+)/.exec(result.stderr)?.[1];
    if (recordDir) rmSync(recordDir, { recursive: true, force: true });
  });
});

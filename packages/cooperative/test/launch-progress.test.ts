// `flodl launch` of this package draws the Trainer's cohort progress line from its launcher, on a
// terminal (a pseudo-terminal here, through util-linux `script`), as the managed cluster run's
// launcher does; FLODL_PROGRESS=0, a pipe, or a script's `.progress(false)` draw none.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import {
  type CoordinatorHost,
  type CoordinatorNotice,
  type EpochMetrics,
  launchProgress,
  type RunSettings,
} from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'bin', 'flodl.mjs');
const script = join(here, 'fixtures', 'launch-progress-script.ts');
const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
const quote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * `flodl launch --nproc 2` of the fixture on a pseudo-terminal; what the terminal showed. The
 * suite's FLODL_PROGRESS=0 (vitest.config.ts) is lifted unless `progress` sets it.
 */
function launchOnTerminal(progress?: string) {
  const command = [process.execPath, bin, 'launch', '--nproc', '2', '--mode', 'CpuCadence', script, '{}']
    .map(quote)
    .join(' ');
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.FLODL_PROGRESS;
  if (progress !== undefined) env.FLODL_PROGRESS = progress;
  return spawnSync('script', ['-qfec', command, '/dev/null'], { encoding: 'utf8', timeout: 120_000, env });
}

const metrics = (epoch: number): EpochMetrics => ({
  epoch,
  avgLoss: 0.5,
  epochMs: 100,
  scalars: {},
  perRank: [{}, {}],
  perRankThroughput: [2, 1],
  perRankBatchShare: [2 / 3, 1 / 3],
  perRankShareCompleteMs: [100, 100],
  perRankComputeOnlyMs: [90, 90],
  perRankDataStarveMs: [0, 0],
  deviceIndices: [0, 0],
  perRankLoss: [0.4, 0.6],
  perRankSamples: [160, 80],
});

/** A coordinator host as a watcher sees it: its server's events, its observers' notices. */
function fakeHost() {
  const notices: ((notice: CoordinatorNotice) => void)[] = [];
  const server = { on: vi.fn(), off: vi.fn() };
  const host = {
    server,
    addObserver: (observer: { notice?: (notice: CoordinatorNotice) => void }) => {
      if (observer.notice) notices.push(observer.notice);
      return () => notices.splice(0);
    },
  } as unknown as CoordinatorHost;
  const notify = (notice: CoordinatorNotice): void => {
    for (const listen of notices) listen(notice);
  };
  return { host, server, notify };
}

const settings = { mode: 'CpuCadence', totalSamples: 64, batchSize: 8, numEpochs: 2, seed: 0 } as RunSettings;

describe('flodl launch: the cohort progress line', () => {
  it.skipIf(!hasScript)(
    'draws it on a terminal: the epochs, the per-rank line, the evals',
    () => {
      const shown = launchOnTerminal();
      expect(shown.status, shown.stdout).toBe(0);
      expect(shown.stdout).toMatch(/epoch 2\/2 done/);
      expect(shown.stdout).toMatch(/ranks 0: (down|\d+\.\d%) .*· 1: /);
      expect(shown.stdout).toMatch(/eval epoch 2 · eval /);
      expect(shown.stdout).toMatch(/training done/);
      // FLODL_PROGRESS=0 turns it off, as everywhere.
      const quiet = launchOnTerminal('0');
      expect(quiet.status, quiet.stdout).toBe(0);
      expect(quiet.stdout).not.toMatch(/ranks 0:|training done|epoch \d\/2/);
    },
    300_000,
  );

  it('draws from the coordinator it watches, only on a terminal by default or where told', () => {
    // vitest's stdout is no terminal: the default draws nothing and listens to nothing.
    const piped = fakeHost();
    const quiet = launchProgress()({ script: 's.ts', worldSize: 2 });
    quiet.attach(piped.host, settings);
    expect(piped.server.on).not.toHaveBeenCalled();
    quiet.close('Completed');

    const lines: string[] = [];
    const told = fakeHost();
    const watcher = launchProgress({ stream: { write: (text: string) => lines.push(text) }, tty: false })({
      script: 's.ts',
      worldSize: 2,
    });
    watcher.attach(told.host, settings);
    expect(told.server.on).toHaveBeenCalledWith('message', expect.any(Function));
    told.notify({ type: 'EpochMetrics', metrics: metrics(0) });
    told.notify({ type: 'EvalResult', rank: 0, epoch: 1, metric: 0.25 });
    watcher.close('Completed');
    expect(told.server.off).toHaveBeenCalledWith('message', expect.any(Function));
    expect(lines.join('')).toMatch(/^epoch 1\/2 done · loss 0\.5 · /);
    expect(lines.join('')).toMatch(/eval epoch 1 · eval 0\.25\n/);
    expect(lines.at(-1)).toBe('training done\n');

    // A script that turned its display off announces it: nothing is drawn for it.
    const off = fakeHost();
    const none: string[] = [];
    const silent = launchProgress({ stream: { write: (text: string) => none.push(text) } })({
      script: 's.ts',
      worldSize: 2,
    });
    silent.attach(off.host, { ...settings, progress: false });
    silent.close('Failed');
    expect([off.server.on.mock.calls.length, none]).toEqual([0, []]);
  });
});

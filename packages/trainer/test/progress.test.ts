// The progress display: the formatter's lines (pinned), the tracker's smoothing and ETAs on a
// fake clock, the plain renderer's at-most-every-intervalMs step lines, the terminal renderer
// drawing in place through cli-progress, and when it stays silent.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  createProgress,
  formatClusterLine,
  formatDuration,
  formatEpochLine,
  formatEvalLine,
  formatRate,
  formatStepLine,
  formatValue,
  ProgressTracker,
  stdoutIsUsers,
} from '../src/progress/index.js';

/** A stream that keeps what it was given. */
function capture(isTTY: boolean): {
  stream: PassThrough & { isTTY: boolean; columns: number };
  text: () => string;
} {
  const stream = Object.assign(new PassThrough(), { isTTY, columns: 160 });
  const chunks: string[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  return { stream, text: () => chunks.join('') };
}

describe('progress formatter', () => {
  it('formats durations, rates and values', () => {
    expect([0, 999, 59_400, 60_000, 245_000, 3_723_000].map(formatDuration)).toEqual([
      '0s',
      '1s',
      '59s',
      '1:00',
      '4:05',
      '1:02:03',
    ]);
    expect(formatDuration(null)).toBe('--');
    expect([912.4, 9999, 45_210, 1_234_567, 12_345_678].map(formatRate)).toEqual([
      '912/s',
      '9999/s',
      '45.2k/s',
      '1234.6k/s',
      '12.3M/s',
    ]);
    expect([0.432149, 12.3456, 0.0000123456, 0, Number.NaN, null].map(formatValue)).toEqual([
      '0.4321',
      '12.35',
      '1.235e-5',
      '0',
      'NaN',
      '--',
    ]);
  });

  it('writes the step line with a bar (terminal) and without (plain)', () => {
    const view = {
      epoch: 1,
      epochs: 5,
      batch: 120,
      batches: 469,
      samplesPerSec: 4512,
      loss: 0.43214,
      epochEtaMs: 23_000,
      runEtaMs: 130_000,
      lastEval: { epoch: 0, metric: 0.8812, name: 'accuracy' },
    };
    expect(formatStepLine(view, '[bar]')).toBe(
      'epoch 2/5 [bar] 120/469 · 4512/s · loss 0.4321 · eta 23s (run 2:10) · accuracy 0.8812 (epoch 1)',
    );
    expect(
      formatStepLine({
        ...view,
        batch: 7,
        epochs: undefined,
        runEtaMs: null,
        lastEval: undefined,
        loss: null,
      }),
    ).toBe('epoch 2   7/469 · 4512/s · loss -- · eta 23s');
    expect(
      formatClusterLine([
        { rank: 0, share: 0.638, samplesPerSec: 1649 },
        { rank: 1, share: 0.362, samplesPerSec: 896 },
        { rank: 2, share: 0, samplesPerSec: 0, down: true },
      ]),
    ).toBe('ranks 0: 63.8% 1649/s · 1: 36.2% 896/s · 2: down');
    expect(
      formatEpochLine({
        epoch: 1,
        epochs: 5,
        loss: 0.5,
        durationMs: 12_300,
        samplesPerSec: 45_000,
        metrics: { lr: 0.001 },
      }),
    ).toBe('epoch 2/5 done · loss 0.5 · 12s · 45.0k/s · lr 0.001');
    expect(formatEvalLine({ epoch: 1, metric: 0.88123 })).toBe('eval epoch 2 · eval 0.8812');
  });
});

describe('progress tracker', () => {
  it('smooths the loss (bias-corrected), shows a non-finite one as is, and projects the ETAs', () => {
    let now = 0;
    const tracker = new ProgressTracker(() => now, 0.5);
    tracker.start({ epochs: 3 });
    const first = tracker.step({ epoch: 0, batch: 1, batches: 11, samplesPerSec: 100, loss: 2 });
    expect(first).toMatchObject({ loss: 2, epochEtaMs: null, runEtaMs: null });
    now = 100;
    // EMA 0.5: (0.5·2·0.5 + 0.5·1) / (1 − 0.25) = 1.3333…
    const second = tracker.step({ epoch: 0, batch: 2, batches: 11, samplesPerSec: 100, loss: 1 });
    expect(second.loss).toBeCloseTo(4 / 3, 12);
    // 100 ms a batch: 9 left in this epoch, then 2 epochs of 11 batches.
    expect(second.epochEtaMs).toBe(900);
    expect(second.runEtaMs).toBe(900 + 2 * 1100);
    expect(
      tracker.step({ epoch: 0, batch: 3, batches: 11, samplesPerSec: 100, loss: Number.NaN }).loss,
    ).toBeNaN();
    now = 1000;
    expect(tracker.epochEnd({ epoch: 0, loss: 1.1 })).toEqual({
      epoch: 0,
      epochs: 3,
      loss: 1.1,
      durationMs: 1000,
    });
    tracker.eval({ epoch: 0, metric: 0.7 });
    // The next epoch's run ETA uses the finished epoch's 1000 ms.
    tracker.step({ epoch: 1, batch: 1, batches: 11, samplesPerSec: 100, loss: 1 });
    now = 1200;
    expect(tracker.step({ epoch: 1, batch: 3, batches: 11, samplesPerSec: 100, loss: 1 })).toMatchObject({
      epochEtaMs: 800,
      runEtaMs: 800 + 1000,
      lastEval: { epoch: 0, metric: 0.7 },
    });
  });
});

describe('progress display', () => {
  it('plain (not a terminal): a step line at most every intervalMs, epochs and evals always', () => {
    let now = 0;
    const { stream, text } = capture(false);
    const progress = createProgress({ stream, clock: () => now, intervalMs: 5000 });
    progress.start({ epochs: 2, label: 'mlp' });
    progress.cluster([
      { rank: 0, share: 0.6, samplesPerSec: 600 },
      { rank: 1, share: 0.4, samplesPerSec: 400 },
    ]);
    for (let batch = 1; batch <= 20; batch++) {
      now = (batch - 1) * 1000;
      progress.step({ epoch: 0, batch, batches: 20, samplesPerSec: 1000, loss: 1 });
    }
    progress.epochEnd({ epoch: 0, loss: 1, samplesPerSec: 1000 });
    progress.eval({ epoch: 0, metric: 0.75, name: 'accuracy' });
    progress.finish('done in 20s');
    expect(text()).toBe(
      [
        'mlp',
        'epoch 1/2  1/20 · 1000/s · loss 1 · eta --',
        'ranks 0: 60.0% 600/s · 1: 40.0% 400/s',
        'epoch 1/2  6/20 · 1000/s · loss 1 · eta 14s (run 34s)',
        'ranks 0: 60.0% 600/s · 1: 40.0% 400/s',
        'epoch 1/2 11/20 · 1000/s · loss 1 · eta 9s (run 29s)',
        'ranks 0: 60.0% 600/s · 1: 40.0% 400/s',
        'epoch 1/2 16/20 · 1000/s · loss 1 · eta 4s (run 24s)',
        'ranks 0: 60.0% 600/s · 1: 40.0% 400/s',
        'epoch 1/2 done · loss 1 · 19s · 1000/s',
        'eval epoch 1 · accuracy 0.75',
        'done in 20s',
        '',
      ].join('\n'),
    );
    expect(text()).not.toContain('\x1b');
  });

  it('terminal: cli-progress draws the bar and the cluster line in place, epoch lines above', async () => {
    let now = 0;
    const { stream, text } = capture(true);
    const progress = createProgress({ stream, clock: () => now });
    progress.start({ epochs: 1 });
    for (let batch = 1; batch <= 10; batch++) {
      now = batch * 100;
      progress.step({ epoch: 0, batch, batches: 10, samplesPerSec: 2000, loss: 0.5 });
    }
    progress.cluster([{ rank: 0, share: 1, samplesPerSec: 2000 }]);
    progress.epochEnd({ epoch: 0, loss: 0.5, durationMs: 1000 });
    progress.finish();
    await new Promise((resolve) => setImmediate(resolve));
    const out = text();
    expect(out).toContain(`epoch 1/1 ${'█'.repeat(20)} 10/10 · 2000/s · loss 0.5 · eta 0s (run 0s)`);
    expect(out).toContain('ranks 0: 100.0% 2000/s');
    expect(out).toContain('epoch 1/1 done · loss 0.5 · 1s');
    // Redrawn in place: cursor movements and line clears, not a scroll of lines.
    expect(out).toContain('\x1b[1A'); // back up to the step line
    expect(out).toContain('\x1b[0K'); // and clear what the last drawing left
    expect(out.indexOf('epoch 1/1 done')).toBeLessThan(out.lastIndexOf('ranks 0:'));
  });

  it('off: false, a worker thread, a launched rank other than 0, or FLODL_PROGRESS=0', () => {
    const off = createProgress(false);
    expect(off.enabled).toBe(false);
    off.step({ epoch: 0, batch: 1, batches: 1, samplesPerSec: 1, loss: 1 });
    expect(stdoutIsUsers({}, true)).toBe(true);
    expect(stdoutIsUsers({ FLODL_RANK: '0' }, true)).toBe(true);
    expect(stdoutIsUsers({ FLODL_RANK: '1' }, true)).toBe(false);
    expect(stdoutIsUsers({ FLODL_PROGRESS: '0' }, true)).toBe(false);
    expect(stdoutIsUsers({}, false)).toBe(false);
    expect(() => createProgress({ intervalMs: -1 })).toThrow(/invalid intervalMs/);
    expect(() => createProgress({ smoothing: 1 })).toThrow(/invalid smoothing/);
    expect(() => createProgress({ colour: true } as never)).toThrow(/unknown option 'colour'/);
  });
});

// The metrics log: its schema (the first line, the version, every record kind), a round trip
// through the writer and the reader, a cut last line tolerated, corrupt logs refused with a typed
// error, the CSV export, step sampling, and the folded state's bounds.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlodlError } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  exportMetricsCsv,
  localEpochMetrics,
  METRICS_LOG_VERSION,
  MONITOR_RECORD_KINDS,
  type MonitorRecordInput,
  metricsCsv,
  metricsLog,
  parseMetricsLog,
  RunRecorder,
  RunState,
  readMetricsLog,
} from '../src/monitor/index.js';
import type { EpochMetrics } from '../src/wire/messages.js';

const dir = mkdtempSync(join(tmpdir(), 'flodl-monitor-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const epoch = (index: number, loss: number): EpochMetrics => ({
  epoch: index,
  avgLoss: loss,
  epochMs: 1200,
  scalars: { accuracy: 0.5 + index / 10 },
  perRank: [{ accuracy: 0.5 }, { accuracy: 0.6 }],
  perRankThroughput: [2.5, 1.25],
  perRankBatchShare: [2 / 3, 1 / 3],
  perRankShareCompleteMs: [1190, 1200],
  perRankComputeOnlyMs: [1000, 1100],
  perRankDataStarveMs: [10, 20],
  deviceIndices: [0, 0],
  perRankLoss: [loss - 0.1, null],
  perRankSamples: [3000, 1500],
});

/** One record of every kind (after the first line), with fixed times. */
const everyKind: MonitorRecordInput[] = [
  { kind: 'formed', worldSize: 2, t: 1001 },
  { kind: 'step', rank: 0, step: 10, loss: 1.5, stepMs: 12, dataMs: 1, lr: 0.01, t: 1002 },
  { kind: 'round-start', version: 1, ranks: [0, 1], t: 1003 },
  { kind: 'round', version: 1, accepted: [0, 1], totalMass: 1, masses: { 0: 0.6, 1: 0.4 }, t: 1004 },
  {
    kind: 'elche',
    version: 1,
    phase: 'Warmup',
    anchor: 3,
    window: [6, 3],
    steps: [6, 3],
    globalStep: 9,
    verdict: 'Stable',
    syncMs: 4,
    t: 1005,
  },
  { kind: 'anchor', from: 3, to: 4, t: 1006 },
  { kind: 'epoch', metrics: epoch(0, 1.25), t: 1007 },
  { kind: 'eval', epoch: 0, metric: 0.81, rank: 0, t: 1008 },
  { kind: 'checkpoint', version: 1, rank: 0, path: '/tmp/ckpt', t: 1009 },
  {
    kind: 'death',
    rank: 1,
    cause: 'process-exit',
    message: 'exit code 3',
    exitCode: 3,
    lastStep: 12,
    t: 1010,
  },
  { kind: 'reform', ranks: [0], worldSize: 1, t: 1011 },
  { kind: 'exit', rank: 1, exitCode: 3, signal: null, t: 1012 },
  { kind: 'finished', reason: 'Completed', failedRanks: [1], t: 1013 },
];

describe('metrics log', () => {
  it('writes a versioned first line, then one record per line, and reads back what it wrote', () => {
    const path = join(dir, 'round-trip.jsonl');
    const log = metricsLog(path, {
      run: { name: 'demo', mode: 'CpuCadence', worldSize: 2, epochs: 3 },
      clock: () => 1000,
    });
    const written = everyKind.map((record) => log.write(record));
    log.close();
    log.write({ kind: 'formed', worldSize: 9 }); // dropped: closed

    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines).toHaveLength(everyKind.length + 2);
    expect(JSON.parse(lines[0]!)).toEqual({
      kind: 'run',
      t: 1000,
      version: METRICS_LOG_VERSION,
      name: 'demo',
      mode: 'CpuCadence',
      worldSize: 2,
      epochs: 3,
    });
    const contents = readMetricsLog(path);
    expect(contents.header).toEqual(log.header);
    expect(contents.truncated).toBe(false);
    expect(contents.skipped).toBe(0);
    expect(contents.records).toEqual(written);
    // Every kind the schema names is covered, in the order it lists them.
    expect(['run', ...new Set(contents.records.map((record) => record.kind))].sort()).toEqual(
      [...MONITOR_RECORD_KINDS].sort(),
    );
  });

  it('fills in the time, and writes a non-finite loss as null', () => {
    let now = 5000;
    const log = metricsLog(join(dir, 'time.jsonl'), { clock: () => now++ });
    const record = log.write({ kind: 'epoch', metrics: { ...epoch(0, Number.NaN) } });
    log.close();
    expect(record.t).toBe(5001);
    const [read] = readMetricsLog(log.path).records;
    expect(read).toMatchObject({ kind: 'epoch', t: 5001, metrics: { avgLoss: null } });
    expect(log.header.worldSize).toBe(1);
  });

  it('tolerates a cut last line (a run that died, or one still writing)', () => {
    const path = join(dir, 'cut.jsonl');
    const log = metricsLog(path, { clock: () => 1 });
    log.write({ kind: 'eval', epoch: 0, metric: 0.5 });
    log.close();
    appendFileSync(path, '{"kind":"eval","t":2,"epo');
    const contents = readMetricsLog(path);
    expect(contents.truncated).toBe(true);
    expect(contents.records).toEqual([{ kind: 'eval', epoch: 0, metric: 0.5, t: 1 }]);
    // A last line that is whole but lacks its newline is kept.
    writeFileSync(path, `${readFileSync(path, 'utf8').split('\n').slice(0, 2).join('\n')}`);
    expect(readMetricsLog(path)).toMatchObject({ truncated: false, records: [{ kind: 'eval' }] });
  });

  it('skips kinds a newer writer added, and refuses what is not a log', () => {
    const header = JSON.stringify({ kind: 'run', t: 0, version: 1, worldSize: 1 });
    expect(
      parseMetricsLog(`${header}\n{"kind":"future","t":1}\n{"kind":"formed","t":2,"worldSize":1}\n`),
    ).toMatchObject({
      skipped: 1,
      records: [{ kind: 'formed' }],
    });
    const refused = (text: string) => {
      try {
        parseMetricsLog(text, 'x.jsonl');
      } catch (error) {
        expect(FlodlError.isInstance(error) && error.code).toBe('ERR_IO');
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused('')).toMatch(/x\.jsonl: not a flodl metrics log/);
    expect(refused('{"kind":"formed","t":0}\n')).toMatch(/first line of kind "run"/);
    expect(refused('{"kind":"run","t":0,"version":2,"worldSize":1}\n')).toMatch(
      /newer flodl[\s\S]*update @flodl\/distributed/,
    );
    expect(refused(`${header}\nnot json\n{"kind":"formed","t":2,"worldSize":1}\n`)).toMatch(
      /line 2 is not JSON/,
    );
    expect(() => readMetricsLog(join(dir, 'missing.jsonl'))).toThrow(/cannot read the metrics log/);
    expect(() => metricsLog('')).toThrow(/invalid path/);
  });

  it("makes the log's missing folders, as a savePath's are, and names a path it cannot create", () => {
    const nested = join(dir, 'no', 'such', 'dir.jsonl');
    metricsLog(nested, { clock: () => 1 }).close();
    expect(readMetricsLog(nested).header).toMatchObject({ kind: 'run', t: 1 });
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const error = caught(() => metricsLog(join(file, 'run.jsonl')), 'ERR_IO');
    expect(error.message.replaceAll(dir, '<dir>')).toMatchInlineSnapshot(`
      "metricsLog: <dir>/a-file/run.jsonl: cannot create the metrics log
        expected: a writable file path
        got: EEXIST: file already exists, mkdir '<dir>/a-file'"
    `);
  });
});

describe('CSV export', () => {
  it('writes one row per epoch with the eval, the scalars and each rank, and one per sampled step', () => {
    const path = join(dir, 'csv.jsonl');
    const log = metricsLog(path, { clock: () => 7 });
    for (const record of everyKind) log.write(record);
    log.write({ kind: 'epoch', metrics: { ...epoch(1, 0.75), perRankLoss: [0.7, 0.8] }, t: 2000 });
    log.close();
    const csvPath = join(dir, 'epochs.csv');
    exportMetricsCsv(path, csvPath);
    expect(readFileSync(csvPath, 'utf8')).toBe(
      [
        'epoch,t,avg_loss,epoch_ms,eval,accuracy,rank0_samples_per_s,rank0_share,rank0_loss,rank0_samples,rank1_samples_per_s,rank1_share,rank1_loss,rank1_samples',
        `0,1007,1.25,1200,0.81,0.5,2500,${2 / 3},1.15,3000,1250,${1 / 3},,1500`,
        `1,2000,0.75,1200,,0.6,2500,${2 / 3},0.7,3000,1250,${1 / 3},0.8,1500`,
        '',
      ].join('\n'),
    );
    expect(metricsCsv(readMetricsLog(path).records, { table: 'steps' })).toBe(
      't,rank,step,loss,lr,step_ms,data_ms\n1002,0,10,1.5,0.01,12,1\n',
    );
    expect(() => metricsCsv([], { table: 'rows' as 'steps' })).toThrow(/invalid table/);
  });
});

describe('RunRecorder and RunState', () => {
  it('samples one step in stepEvery per rank, folds records, logs them and tells listeners', () => {
    const path = join(dir, 'recorder.jsonl');
    const recorder = new RunRecorder({ run: { worldSize: 2 }, log: path, stepEvery: 5, clock: () => 42 });
    const heard: string[] = [];
    const stop = recorder.subscribe((record) =>
      heard.push(`${record.kind}:${'step' in record ? record.step : ''}`),
    );
    for (let step = 1; step <= 12; step++)
      recorder.record({ kind: 'step', rank: step % 2, step, loss: 1 / step, stepMs: 3 });
    recorder.record({ kind: 'epoch', metrics: epoch(0, 0.9) });
    stop();
    recorder.record({ kind: 'death', rank: 1, cause: 'heartbeat-timeout', message: 'silent' });
    recorder.close();
    expect(heard).toEqual(['step:1', 'step:5', 'step:10', 'epoch:']);
    const state = recorder.state.snapshot;
    expect(state.steps.map((step) => step.step)).toEqual([1, 5, 10]);
    expect(state.ranks).toMatchObject([
      { rank: 0, status: 'training', steps: 10, samplesPerSec: 2500, share: 2 / 3 },
      { rank: 1, status: 'dead', cause: 'heartbeat-timeout', steps: 5, samplesPerSec: 1250 },
    ]);
    expect(readMetricsLog(path).records.map((record) => record.kind)).toEqual([
      'step',
      'step',
      'step',
      'epoch',
      'death',
    ]);
    expect(() => new RunRecorder({ stepEvery: 0 })).toThrow(/invalid stepEvery/);
    expect(() => new RunRecorder({ every: 3 } as never)).toThrow(/unknown option 'every'/);
  });

  it('keeps its lists bounded by thinning, the whole run still covered', () => {
    const state = new RunState({ limit: 16 });
    for (let step = 1; step <= 1000; step++)
      state.apply({ kind: 'step', t: step, rank: 0, step, loss: 1, stepMs: 1 });
    const steps = state.snapshot.steps.map((step) => step.step);
    expect(steps.length).toBeLessThanOrEqual(16);
    expect(steps.at(-1)).toBe(1000);
    expect(steps[0]).toBeLessThan(100);
    expect(state.snapshot.recordCount).toBe(1000);
  });
});

describe('localEpochMetrics', () => {
  it('makes a single-process epoch a one-rank EpochMetrics that the state and the CSV read', () => {
    const metrics = localEpochMetrics({
      epoch: 0,
      avgLoss: 0.5,
      epochMs: 2000,
      samples: 6000,
      scalars: { accuracy: 0.9 },
      dataStarveMs: 100,
    });
    expect(metrics).toEqual({
      epoch: 0,
      avgLoss: 0.5,
      epochMs: 2000,
      scalars: { accuracy: 0.9 },
      perRank: [{ accuracy: 0.9 }],
      perRankThroughput: [3],
      perRankBatchShare: [1],
      perRankShareCompleteMs: [2000],
      perRankComputeOnlyMs: [1900],
      perRankDataStarveMs: [100],
      deviceIndices: [0],
      perRankLoss: [0.5],
      perRankSamples: [6000],
    });
    const state = new RunState();
    state.apply({ kind: 'epoch', t: 1, metrics });
    expect(state.snapshot.ranks).toMatchObject([
      { rank: 0, samplesPerSec: 3000, share: 1, status: 'training' },
    ]);
    expect(metricsCsv([{ kind: 'epoch', t: 1, metrics }]).split('\n')[1]).toBe(
      '0,1,0.5,2000,,0.9,3000,1,0.5,6000',
    );
    expect(() => localEpochMetrics({ epoch: 0, avgLoss: 1, epochMs: -1, samples: 1 })).toThrow(
      /invalid epochMs/,
    );
    expect(() => localEpochMetrics({ epoch: 0, avgLoss: 1, epochMs: 1, samples: 1, lr: 1 } as never)).toThrow(
      /unknown option 'lr'/,
    );
  });
});

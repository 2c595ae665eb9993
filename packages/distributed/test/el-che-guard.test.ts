import { describe, expect, it } from 'vitest';
import {
  cosineSimilarities,
  LevelGuard,
  MetaController,
  maxRelativeDelta,
  NoGuard,
  sustainFor,
} from '../src/coordinator/index.js';

const report = (delta: number) => ({ deltas: [delta / 2, delta] });

describe('divergence report', () => {
  it('takes the worst replica and derives the cosine from the norms', () => {
    expect(maxRelativeDelta({ deltas: [0.01, 0.05, 0.03] })).toBe(0.05);
    expect(maxRelativeDelta({ deltas: [] })).toBe(0);
    const cosine = cosineSimilarities({ deltas: [0.001], preNorms: [10], postNorm: 10 });
    expect(cosine?.[0]).toBeGreaterThan(0.999);
    expect(cosineSimilarities({ deltas: [0.1] })).toBeUndefined();
  });
});

describe('LevelGuard', () => {
  it('suppresses growth after 3 rising values with the latest above 0.05', () => {
    const guard = new LevelGuard();
    expect(guard.threshold).toBe(0.05);
    expect(guard.report(report(0.06)).kind).toBe('Stable');
    expect(guard.report(report(0.07)).kind).toBe('Stable');
    expect(guard.report(report(0.08)).kind).toBe('SuppressGrowth');
  });

  it('stays Stable below the threshold or without a strict rise', () => {
    const below = new LevelGuard(0.1);
    for (const delta of [0.01, 0.02, 0.03]) expect(below.report(report(delta)).kind).toBe('Stable');
    const flat = new LevelGuard();
    for (const delta of [0.08, 0.07, 0.09]) expect(flat.report(report(delta)).kind).toBe('Stable');
  });

  it('keeps a 5-value ring that restores across a resume', () => {
    const guard = new LevelGuard();
    for (let index = 0; index < 9; index++) guard.report(report(index / 100));
    expect(guard.history()).toEqual([0.04, 0.05, 0.06, 0.07, 0.08]);
    const resumed = new LevelGuard(0.05, [0.06, 0.07]);
    expect(resumed.report(report(0.08)).kind).toBe('SuppressGrowth');
    guard.reset();
    expect(guard.history()).toEqual([]);
  });

  it('uses the 0.3 threshold under EASGD', () => {
    const guard = new LevelGuard(0.3);
    for (const delta of [0.1, 0.2, 0.25]) expect(guard.report(report(delta)).kind).toBe('Stable');
    expect(guard.report(report(0.31)).kind).toBe('SuppressGrowth');
  });

  it('NoGuard is always Stable', () => {
    const guard = new NoGuard();
    for (let index = 0; index < 5; index++) expect(guard.report().kind).toBe('Stable');
  });
});

describe('MetaController', () => {
  const suppress = { kind: 'SuppressGrowth' } as const;
  const stable = { kind: 'Stable' } as const;

  it('turns sustained non-Stable verdicts into a NudgeDown (K per phase)', () => {
    expect([sustainFor('Warmup'), sustainFor('Stable'), sustainFor('Mature')]).toEqual([5, 3, 2]);
    const meta = new MetaController();
    expect(meta.observe(0.1, 20, suppress, 'Stable')).toBeUndefined();
    expect(meta.observe(0.1, 20, suppress, 'Stable')).toBeUndefined();
    expect(meta.observe(0.1, 20, suppress, 'Stable')).toBeCloseTo(0.5);
  });

  it('nudges on an LR cliff before divergence shows', () => {
    const meta = new MetaController();
    meta.observe(0.1, 20, stable, 'Stable');
    expect(meta.observe(0.01, 20, stable, 'Stable')).toBeCloseTo(0.5);
    expect(meta.observe(0.01, 20, stable, 'Stable')).toBeUndefined();
    // Gentle decay (cosine) stays silent.
    expect(meta.observe(0.009, 20, stable, 'Stable')).toBeUndefined();
  });

  it('dampens the nudge while the anchor is already falling, and is silent in Probe', () => {
    const meta = new MetaController();
    for (const anchor of [40, 40, 40, 40]) meta.observe(0.1, anchor, stable, 'Stable');
    expect(meta.observe(0.01, 20, stable, 'Stable')).toBeGreaterThan(0.5);
    const probe = new MetaController();
    probe.observe(0.1, 20, stable, 'Probe');
    expect(probe.observe(0.01, 20, stable, 'Probe')).toBeUndefined();
  });
});

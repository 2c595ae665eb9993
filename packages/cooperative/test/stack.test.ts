import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as autograd from '@flodl/autograd';
import * as distributed from '@flodl/distributed';
import * as nn from '@flodl/nn';
import * as tensorNative from '@flodl/tensor-native';
import * as trainer from '@flodl/trainer';
import { describe, expect, it } from 'vitest';
import * as cooperative from '../src/index.js';
import {
  Adam,
  crossEntropy,
  Linear,
  liveTensorCount,
  manualSeed,
  ReLU,
  randint,
  randn,
  Sequential,
  type Tensor,
  TensorDataset,
  tidy,
} from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Names that two layers export; the index takes them from the layer named here. */
const CHOSEN: Record<string, string> = {
  isGradEnabled: 'autograd',
  setGradEnabled: 'autograd',
  EpochPlan: 'trainer',
};
/** Names of a layer the index leaves out: helpers for packages built on tensor-native. */
const LEFT_OUT = new Set(['shareClassIdentity']);

describe('@flodl/cooperative', () => {
  const layers = { 'tensor-native': tensorNative, autograd, nn, trainer, distributed };

  it('re-exports every runtime name of the stack, as the same object', () => {
    const exported = cooperative as Record<string, unknown>;
    for (const [layer, module] of Object.entries(layers)) {
      for (const [name, value] of Object.entries(module)) {
        if (LEFT_OUT.has(name)) continue;
        expect(name in exported, `${name} of @flodl/${layer}`).toBe(true);
        if (CHOSEN[name] === undefined || CHOSEN[name] === layer) expect(exported[name]).toBe(value);
      }
    }
    // and nothing of its own yet: every name comes from a layer
    const all = new Set(Object.values(layers).flatMap((module) => Object.keys(module)));
    expect(Object.keys(exported).filter((name) => !all.has(name))).toEqual([]);
  });

  it('trains a model with a hand-written loop from its imports alone', () => {
    manualSeed(3);
    const live = liveTensorCount();
    const model = new Sequential(new Linear(4, 16), new ReLU(), new Linear(16, 3));
    const optimizer = new Adam(model.parameters(), { lr: 0.05 });
    const inputs = randn([64, 4]);
    const labels = randint(0, 3, [64]);
    const data = new TensorDataset([inputs, labels]);
    expect(data.length).toBe(64);
    const losses: number[] = [];
    for (let step = 0; step < 40; step++) {
      losses.push(
        tidy(() => {
          const loss: Tensor = crossEntropy(model.forward(inputs), labels);
          optimizer.zeroGrad();
          loss.backward();
          optimizer.step();
          return loss.item() as number;
        }),
      );
    }
    expect(losses.at(-1)).toBeLessThan((losses[0] as number) * 0.7);
    data.dispose();
    inputs.dispose();
    labels.dispose();
    optimizer.dispose();
    model.dispose();
    expect(liveTensorCount()).toBe(live);
  });

  it('carries the flodl command', () => {
    const bin = join(here, '..', 'bin', 'flodl.mjs');
    const version = JSON.parse(readFileSync(join(here, '..', '..', 'distributed', 'package.json'), 'utf8'))
      .version as string;
    const help = spawnSync(process.execPath, [bin, 'launch', '--help'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('usage: flodl launch --nproc N');
    const printed = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(printed.stdout.trim()).toBe(`flodl ${version}`);
  });
});

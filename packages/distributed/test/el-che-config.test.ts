import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import {
  backendOf,
  EL_CHE_MODES,
  ElChe,
  ElCheConfig,
  type ElCheConfigOptions,
  isChunkedMode,
  policyOf,
  resolveCoordinatorConfig,
} from '../src/coordinator/index.js';

describe('ElCheConfig', () => {
  it("has floDl's defaults", () => {
    const config = ElCheConfig.resolve();
    expect(config).toMatchObject({
      mode: 'NcclCadence',
      anchor: 10,
      minAnchor: 10,
      maxAnchor: 200,
      overheadTarget: 0.05,
      maxBatchDiff: undefined,
      maxOvershoot: undefined,
      gamma: 1,
      relaxUp: false,
      partitionRatios: undefined,
      metaController: true,
      convergenceGuard: 'level',
      divergenceThreshold: 0.05,
      noDivergenceGuard: false,
      easgdAlpha: undefined,
      bf16Wire: false,
    });
  });

  it('has the five mode presets; NcclSync is the anchor = 1 case', () => {
    expect(EL_CHE_MODES).toEqual(['NcclSync', 'NcclCadence', 'CpuSync', 'CpuCadence', 'CpuAsync']);
    expect(ElCheConfig.ncclSync()).toMatchObject({ mode: 'NcclSync', anchor: 1 });
    expect(ElCheConfig.ncclCadence().mode).toBe('NcclCadence');
    expect(ElCheConfig.cpuSync()).toMatchObject({ mode: 'CpuSync', anchor: 10 });
    expect(ElCheConfig.cpuCadence().mode).toBe('CpuCadence');
    expect(ElCheConfig.cpuAsync({ anchor: 16 })).toMatchObject({ mode: 'CpuAsync', anchor: 16 });
    expect(EL_CHE_MODES.map((mode) => `${policyOf(mode)}/${backendOf(mode)}`)).toEqual([
      'Sync/Nccl',
      'Cadence/Nccl',
      'Sync/Cpu',
      'Cadence/Cpu',
      'Async/Cpu',
    ]);
  });

  it('raises the divergence threshold to 0.3 under EASGD', () => {
    expect(ElCheConfig.cpuAsync({ easgdAlpha: 0.5 }).divergenceThreshold).toBe(0.3);
    expect(ElCheConfig.cpuAsync({ easgdAlpha: 0.5, divergenceThreshold: 0.2 }).divergenceThreshold).toBe(0.2);
  });

  it('turns the guard off with noDivergenceGuard', () => {
    expect(ElCheConfig.resolve({ noDivergenceGuard: true }).convergenceGuard).toBe('none');
  });

  it('configures ElChe: no growth under Sync, hints and ratio pins applied', () => {
    expect(ElChe.fromConfig(2, ElCheConfig.cpuSync()).windowGrowth).toBe(false);
    expect(ElChe.fromConfig(2, ElCheConfig.cpuCadence()).windowGrowth).toBe(true);
    const hinted = ElChe.fromConfig(2, ElCheConfig.cpuCadence({ speedHint: { slowRank: 0, ratio: 3 } }));
    expect(hinted.batchCounts).toEqual([10, 30]);
    const pinned = ElChe.fromConfig(3, ElCheConfig.cpuCadence({ partitionRatios: [2, 1, 2] }));
    expect(pinned.anchorRank).toBe(1);
  });

  it('rejects bad options with ERR_INVALID_ARGUMENT naming the option', () => {
    const cases: [ElCheConfigOptions, string][] = [
      [{ anchor: 0 }, 'anchor'],
      [{ anchor: 2.5 }, 'anchor'],
      [{ overheadTarget: 0.9 }, 'overheadTarget'],
      [{ minAnchor: 50, maxAnchor: 20 }, 'anchor bounds'],
      [{ mode: 'NcclAsync' as never }, 'mode'],
      [{ easgdAlpha: 0.5 }, 'easgdAlpha'],
      [{ mode: 'NcclCadence', bf16Wire: true }, 'bf16Wire'],
      [{ partitionRatios: [0, 0] }, 'partitionRatios'],
      [{ anchr: 3 } as never, 'options.anchr'],
    ];
    for (const [options, name] of cases) {
      const error = caught(() => ElCheConfig.resolve(options));
      expect(error.code).toBe('ERR_INVALID_ARGUMENT');
      expect(error.message).toContain(name);
    }
  });

  it('pins the error text for a misspelled option', () => {
    expect(caught(() => ElCheConfig.resolve({ anchr: 3 } as never)).message).toMatchInlineSnapshot(`
      "ElCheConfig: invalid options.anchr; did you mean \`anchor\`?
        expected: one of the known options (mode, anchor, minAnchor, maxAnchor, overheadTarget, maxBatchDiff, maxOvershoot, gamma, relaxUp, partitionRatios, metaController, convergenceGuard, divergenceThreshold, noDivergenceGuard, easgdAlpha, bf16Wire, speedHint)
        got: "anchr""
    `);
  });
});

describe('coordinator config', () => {
  const base = { worldSize: 3, totalSamples: 6400, batchSize: 32, numEpochs: 2 };

  it('fills defaults: progressive for Cadence/Async, whole partitions for Sync', () => {
    const config = resolveCoordinatorConfig(base);
    expect(config).toMatchObject({
      seed: 42,
      lrScaleRatio: 1,
      epochCallbackPolicy: 'Fastest',
      heartbeatTimeoutMs: 30_000,
      coordHeartbeatMs: 1000,
      minChunkBatches: 4,
      progressive: true,
    });
    expect(resolveCoordinatorConfig({ ...base, elche: { mode: 'CpuSync' } }).progressive).toBe(false);
    // The default is isChunkedMode's answer for the run's mode.
    for (const mode of EL_CHE_MODES) {
      expect(resolveCoordinatorConfig({ ...base, elche: { mode } }).progressive, mode).toBe(
        isChunkedMode(mode),
      );
    }
    expect(EL_CHE_MODES.filter(isChunkedMode)).toEqual(['NcclCadence', 'CpuCadence', 'CpuAsync']);
  });

  it('scales network deadlines (floor 0.1) but not the beacon', () => {
    const config = resolveCoordinatorConfig({ ...base, netTimeoutScale: 0.01, heartbeatTimeoutMs: 10_000 });
    expect(config.heartbeatTimeoutMs).toBe(1000);
    expect(config.coordHeartbeatMs).toBe(1000);
  });

  it('rejects configurations that do not fit the world', () => {
    const cases: [object, string][] = [
      [{ ...base, worldSize: 0 }, 'worldSize'],
      [{ ...base, totalSamples: 10 }, 'less than one batch'],
      [{ ...base, elche: { partitionRatios: [1, 2] } }, 'partitionRatios'],
      [{ ...base, epochCallbackPolicy: { rank: 3 } }, 'epochCallbackPolicy.rank'],
      [{ ...base, maxFailure: { absolute: 0 } }, 'maxFailure.absolute'],
      [{ ...base, checkpointEvry: 2 }, 'options.checkpointEvry'],
    ];
    for (const [options, name] of cases) {
      const error = caught(() => resolveCoordinatorConfig(options as never));
      expect(error.code).toBe('ERR_INVALID_ARGUMENT');
      expect(error.message).toContain(name);
    }
  });
});

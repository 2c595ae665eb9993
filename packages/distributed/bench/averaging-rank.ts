// One rank of the averaging benchmark (forked by averaging.ts). argv[2]: JSON RankConfig.
// Host mode: connects to the coordinator's ControlServer, opens a data channel, and per round
// (an IPC `round` message) snapshots its model (mass-scaled), ships it, receives the consensus
// and applies it, reporting each phase's time. Collective mode: joins a Gloo process group and
// times `collectiveAverage` next to an `allReduce` of the same tensors alone, alternating.
import { Linear, Sequential } from '@flodl/nn';
import { createProcessGroup, manualSeed, setNumThreads, type Tensor } from '@flodl/tensor-native';
import { applyConsensus, collectiveAverage, snapshotContribution } from '../src/averaging/index.js';
import { ControlClient } from '../src/wire/index.js';
import { nowMs } from './stats.js';

/** What a rank is told at start. */
export interface RankConfig {
  rank: number;
  worldSize: number;
  /** Rows × columns of each bias-free Linear weight, and how many layers. */
  rows: number;
  columns: number;
  layers: number;
  host?: { port: number; secretHex: string; chunkBytes?: number };
  collective?: { port: number; rounds: number };
}

/** One host round as a rank saw it, ms. */
export interface RankHostTiming {
  snapshot: number;
  send: number;
  wait: number;
  apply: number;
}

/** Per collective round: `average` is collectiveAverage, `allReduce` the bare allReduce, ms. */
export interface RankCollectiveTiming {
  average: number;
  allReduce: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as RankConfig;
setNumThreads(1);
manualSeed(1 + config.rank);
const model = new Sequential(
  ...Array.from({ length: config.layers }, () => new Linear(config.columns, config.rows, { bias: false })),
);

function reply(message: unknown): Promise<void> {
  return new Promise((resolve, reject) =>
    process.send?.(message, (error) => (error ? reject(error) : resolve())),
  );
}

async function hostMode(host: NonNullable<RankConfig['host']>): Promise<void> {
  const client = await ControlClient.connect({
    port: host.port,
    secret: Uint8Array.from(Buffer.from(host.secretHex, 'hex')),
    rank: config.rank,
    worldSize: config.worldSize,
    heartbeatIntervalMs: 0,
    coordinatorTimeoutMs: 0,
  });
  const data = await client.openDataChannel(host.chunkBytes ? { chunkBytes: host.chunkBytes } : {});
  process.on('message', (message: { type: string; version: number; mass: number }) => {
    if (message.type === 'stop') {
      data.close();
      void client.close({ timeoutMs: 1000 }).finally(() => process.exit(0));
      return;
    }
    void (async () => {
      const start = nowMs();
      const snapshot = snapshotContribution(model, message.mass);
      const snapped = nowMs();
      await data.send(message.version, snapshot);
      const sent = nowMs();
      const consensus = await data.receiveContribution({ timeoutMs: 600_000 });
      const received = nowMs();
      applyConsensus(model, consensus.tensors);
      const applied = nowMs();
      // As the session does: the consensus's buffers receive the next round's.
      data.recycle(consensus.tensors);
      const timing: RankHostTiming = {
        snapshot: snapped - start,
        send: sent - snapped,
        wait: received - sent,
        apply: applied - received,
      };
      await reply({ type: 'done', version: message.version, timing });
    })().catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  });
  await reply({ type: 'ready' });
}

async function collectiveMode(collective: NonNullable<RankConfig['collective']>): Promise<void> {
  const group = createProcessGroup({
    backend: 'gloo',
    rank: config.rank,
    worldSize: config.worldSize,
    port: collective.port,
    timeoutMs: 600_000,
  });
  // The bare floor reduces copies of the same tensors, so the model's values stay sane.
  const scratch: Tensor[] = model.parameters().map((parameter) => parameter.detach().clone());
  const timings: RankCollectiveTiming[] = [];
  for (let round = 0; round < collective.rounds; round += 1) {
    const order = round % 2 === 0 ? ['average', 'allReduce'] : ['allReduce', 'average'];
    const timing: RankCollectiveTiming = { average: 0, allReduce: 0 };
    for (const what of order) {
      group.barrier();
      const start = nowMs();
      if (what === 'average') collectiveAverage(group, model, 1 + config.rank);
      else group.allReduce(scratch, { op: 'sum' });
      timing[what as keyof RankCollectiveTiming] = nowMs() - start;
    }
    timings.push(timing);
  }
  group.barrier();
  group.destroy();
  for (const tensor of scratch) tensor.dispose();
  await reply({ type: 'collective', timings });
  process.exit(0);
}

if (config.host) await hostMode(config.host);
else if (config.collective) await collectiveMode(config.collective);

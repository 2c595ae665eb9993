// A rank started by an external launcher (torchrun-style variables, SLURM): every process is
// a rank, and rank 0 also hosts the coordinator on MASTER_ADDR:MASTER_PORT (the process group
// of the collective modes rendezvouses on the next port).

import { CoordinatorHost, PROCESS_GROUP_PORT_ENV, RunSettingsGate } from '@flodl/distributed';
import { ControlServer, secretFromHex } from '@flodl/distributed/wire';
import type { AnyModule } from '../runtime/types.js';
import type { TrainedRun, TrainerHandle } from './handle.js';
import { runClusterRank } from './rank-entry.js';
import { externalRunSecret, type RankRole } from './role.js';
import type { RunSpec } from './spec.js';

/** @internal Runs this externally launched rank (and, on rank 0, the coordinator). */
export async function runExternalRank<M extends AnyModule>(
  spec: RunSpec<M>,
  role: RankRole,
  handle: TrainerHandle,
): Promise<TrainedRun> {
  const coordinator = role.coordinator as { host: string; port: number };
  const secret = externalRunSecret(role);
  Object.assign(process.env, {
    FLODL_RANK: String(role.rank),
    FLODL_LOCAL_RANK: String(role.localRank),
    FLODL_WORLD_SIZE: String(role.worldSize),
    FLODL_COORDINATOR: `${coordinator.host}:${coordinator.port}`,
    FLODL_SECRET: secret,
    FLODL_MODE: spec.options.mode,
    [PROCESS_GROUP_PORT_ENV]: process.env[PROCESS_GROUP_PORT_ENV] ?? String(coordinator.port + 1),
  });
  let server: ControlServer | undefined;
  let host: CoordinatorHost | undefined;
  if (role.rank === 0) {
    const gate = new RunSettingsGate();
    server = await ControlServer.listen({
      secret: secretFromHex(secret, 'FLODL_SECRET'),
      worldSize: role.worldSize,
      host: coordinator.host,
      port: coordinator.port,
      admit: (hello) => gate.admit(hello),
    });
    CoordinatorHost.attachFromRanks(server, {
      onAttached: (attached) => {
        host = attached;
      },
      onNotice: (notice) => {
        if (notice.type === 'EpochMetrics') handle.pushMetrics(notice.metrics);
        else if (notice.type === 'EvalResult' && notice.error === undefined)
          handle.pushEval(notice.epoch, notice.metric);
      },
    });
  }
  try {
    return await runClusterRank(spec, role, role.rank === 0);
  } finally {
    if (server) {
      // Let the other ranks finish their shutdown before the coordinator goes away.
      const deadline = Date.now() + 10_000;
      while (server.connectedRanks().length > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      host?.detach();
      await server.close({ timeoutMs: 1000 });
    }
  }
}

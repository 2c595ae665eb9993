// The host modes' reduce at the launcher, shared by every host: fold the ranks' mass-scaled
// contributions (the mass law: one division by the summed mass of exactly the accepted ones),
// hand their buffers back for the next round, and ship the consensus on the data channels.
import { FlodlError } from '@flodl/tensor-native';
import { type HostTensor, MassAccumulator } from '../averaging/host.js';
import type { ReceivedContribution } from '../wire/data-channel.js';
import type { ControlServer } from '../wire/server.js';

/** One folded round. */
export interface FoldedRound {
  consensus: HostTensor[];
  /** The mass each accepted rank shipped with its parameters. */
  masses: Record<number, number>;
  /** Σ of those masses: the one divisor. */
  totalMass: number;
}

/**
 * Folds the contributions of `accepted` (in that order) into the consensus of round
 * `version`, then lends their buffers back to each rank's data channel.
 *
 * @throws FlodlError ERR_WIRE for a contribution of another round, ERR_RANK_FAILED when no
 *   contribution had mass
 */
export function foldRound(
  op: string,
  server: ControlServer,
  version: number,
  accepted: readonly number[],
  received: ReadonlyMap<number, ReceivedContribution>,
): FoldedRound {
  const root = new MassAccumulator();
  const masses: Record<number, number> = {};
  for (const rank of accepted) {
    const contribution = received.get(rank) as ReceivedContribution;
    if (contribution.version !== version) {
      throw new FlodlError(
        'ERR_WIRE',
        `rank ${rank} sent round ${contribution.version} for round ${version}`,
        {
          op,
          expected: `round ${version}`,
          got: `round ${contribution.version}`,
        },
      );
    }
    root.add(rank, contribution.tensors);
    masses[rank] = contribution.tensors.find((tensor) => tensor.name.startsWith('p:'))?.mass ?? 0;
  }
  const consensus = root.average();
  // Folded: the contributions' buffers receive the next round's (no fresh memory per round).
  for (const rank of accepted)
    server.dataChannelOf(rank)?.recycle((received.get(rank) as ReceivedContribution).tensors);
  if (consensus.length === 0) {
    throw new FlodlError('ERR_RANK_FAILED', `round ${version}: no contribution had mass`, { op });
  }
  const totalMass = Object.values(masses).reduce((sum, mass) => sum + mass, 0);
  return { consensus, masses, totalMass };
}

/** Ships `consensus` to each of `ranks` on its data channel (a rank that dies meanwhile is skipped). */
export async function sendConsensus(
  server: ControlServer,
  ranks: readonly number[],
  version: number,
  consensus: readonly HostTensor[],
): Promise<void> {
  await Promise.all(
    ranks.map((rank) =>
      server
        .dataChannelOf(rank)
        ?.send(version, consensus as HostTensor[])
        .catch(() => undefined),
    ),
  );
}

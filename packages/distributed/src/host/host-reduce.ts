// The host modes' reduce at the launcher, shared by every host: fold the ranks' mass-scaled
// contributions (the mass law: one division by the summed mass of exactly the accepted ones),
// hand their buffers back for the next round, and ship the consensus on the data channels.
import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import {
  ConsensusBuffers,
  type HostTensor,
  LaterTensor,
  MassAccumulator,
  settled,
} from '../averaging/host.js';
import type { OutgoingTensor, ReceivedContribution } from '../wire/data-channel.js';
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
 * `version` (written into `into`'s buffers when given), then lends their buffers back to each
 * rank's data channel.
 *
 * A round in which no accepted rank trained (every mass 0: the only rank that stepped died
 * while the round was in flight) has nothing to average: its consensus is one tensor of mass
 * 0, which ranks apply as "keep your parameters" (as a collective round of total mass 0 does).
 *
 * @throws FlodlError ERR_WIRE for a contribution of another round, ERR_INVALID_ARGUMENT for
 *   an empty accepted set
 */
export function foldRound(...round: RoundArguments): FoldedRound {
  return foldLater(...round).settle();
}

/** What a round's fold takes: who names errors, the server, the round, its ranks, their contributions, the buffers to write into. */
type RoundArguments = [
  op: string,
  server: ControlServer,
  version: number,
  accepted: readonly number[],
  received: ReadonlyMap<number, ReceivedContribution>,
  into?: ConsensusBuffers,
];

/**
 * {@link foldRound}, then the consensus out to each of `ranks` on its data channel
 * ({@link sendConsensus}), pipelined: each tensor is averaged when its turn to go out comes,
 * while the one before it is still on its way, instead of the whole model first. The
 * contributions' buffers are lent back once every tensor is averaged (after the sends, or
 * after a failed one).
 *
 * @throws as foldRound
 */
export async function foldAndSend(...round: RoundArguments): Promise<FoldedRound> {
  const [, server, version, accepted] = round;
  const folding = foldLater(...round);
  try {
    await sendConsensus(server, accepted, version, folding.later.map(sentLater));
  } finally {
    // Every value computed (a rank that died left some unread) before the buffers go back.
    folding.settle();
  }
  return folding.settle(); // the round settled above
}

/** A consensus tensor as a data channel sends it: each chunk's values computed when its turn comes. */
function sentLater(tensor: HostTensor): OutgoingTensor {
  const { name, mass, dtype, shape } = tensor;
  if (!(tensor instanceof LaterTensor)) return { name, mass, dtype, shape, bytes: tensor.bytes };
  return { name, mass, dtype, shape, bytes: (end) => tensor.upTo(end) };
}

/** The fold of a round, its values computed on first read; `settle` computes the rest and lends the buffers back. */
function foldLater(...[op, server, version, accepted, received, into]: RoundArguments): {
  later: HostTensor[];
  settle: () => FoldedRound;
} {
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
  if (accepted.length === 0) throw invalidArgument(op, 'accepted', 'at least one rank', accepted);
  const average: HostTensor[] = root.averageLater(into);
  const later = average.length > 0 ? average : [untrainedMarker(received.get(accepted[0]!)!)];
  const totalMass = Object.values(masses).reduce((sum, mass) => sum + mass, 0);
  let round: FoldedRound | undefined;
  const settle = (): FoldedRound => {
    if (round) return round;
    round = { consensus: later.map(settled), masses, totalMass };
    // Folded: the contributions' buffers receive the next round's (no fresh memory per round).
    for (const rank of accepted)
      server.dataChannelOf(rank)?.recycle((received.get(rank) as ReceivedContribution).tensors);
    return round;
  };
  return { later, settle };
}

/**
 * The consensus of a round nobody trained in: the contribution's smallest tensor with mass 0
 * (zeros of its own size, not its buffer, which is lent back), left out of the model by
 * `applyConsensus`.
 */
function untrainedMarker(contribution: ReceivedContribution): HostTensor {
  const smallest = contribution.tensors.reduce((best, tensor) =>
    tensor.bytes.byteLength < best.bytes.byteLength ? tensor : best,
  );
  const { name, dtype, shape } = smallest;
  return { name, dtype, shape, mass: 0, bytes: new Uint8Array(smallest.bytes.byteLength) };
}

/**
 * The consensus buffer sets of a host: one per consensus it still sends or holds (the last one
 * among them, with `holdLast`), one more kept for the next round, so steady rounds write no
 * fresh memory.
 */
export class ConsensusPool {
  #spare: ConsensusBuffers | undefined;
  #held: ConsensusBuffers | undefined;

  /** A set no consensus in use lives in. */
  acquire(): ConsensusBuffers {
    const buffers = this.#spare ?? new ConsensusBuffers();
    this.#spare = undefined;
    return buffers;
  }

  /** Gives a set back once nothing reads the consensus written into it. */
  release(buffers: ConsensusBuffers): void {
    this.#spare ??= buffers;
  }

  /** Keeps `buffers` as the set of the consensus the host holds; the one it replaces is given back. */
  holdLast(buffers: ConsensusBuffers): void {
    if (this.#held !== undefined) this.release(this.#held);
    this.#held = buffers;
  }
}

/** Ships `consensus` to each of `ranks` on its data channel (a rank that dies meanwhile is skipped). */
export async function sendConsensus(
  server: ControlServer,
  ranks: readonly number[],
  version: number,
  consensus: readonly OutgoingTensor[],
): Promise<void> {
  await Promise.all(
    ranks.map((rank) =>
      server
        .dataChannelOf(rank)
        ?.send(version, consensus)
        .catch(() => undefined),
    ),
  );
}

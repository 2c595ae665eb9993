import { invalidArgument } from '@flodl/tensor-native';

/**
 * A contribution's mass (floDl realized-work algebra): the realized steps of its window shaped
 * by `gamma`, `steps^γ`. A rank with zero steps has zero mass and is excluded.
 */
export function contributionMass(steps: number, gamma: number): number {
  return steps > 0 ? steps ** gamma : 0;
}

/** A partial sum on its way to the root: Σ mass·values and Σ mass over `ranks`. */
export interface FoldedContribution {
  readonly ranks: readonly number[];
  readonly mass: number;
  readonly sum: readonly number[];
}

/** A rank's contribution, pre-scaled at its source: `values × mass`, shipped with its mass. */
export function prescale(rank: number, values: readonly number[], mass: number): FoldedContribution {
  return { ranks: [rank], mass, sum: values.map((value) => value * mass) };
}

/**
 * A fold (relay, aggregator): sums tensors and masses, never divides.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when the two sums differ in length.
 */
export function foldContributions(left: FoldedContribution, right: FoldedContribution): FoldedContribution {
  if (left.sum.length !== right.sum.length) {
    throw invalidArgument('foldContributions', 'right.sum', `length ${left.sum.length}`, right.sum.length);
  }
  return {
    ranks: [...left.ranks, ...right.ranks],
    mass: left.mass + right.mass,
    sum: left.sum.map((value, index) => value + (right.sum[index] ?? 0)),
  };
}

/**
 * The root's one division: Σ mass·values / Σ mass over exactly the folded contributions.
 * `undefined` when nothing with mass was accepted (the round changes nothing).
 */
export function rootAverage(folded: FoldedContribution): number[] | undefined {
  if (!(folded.mass > 0)) return undefined;
  return folded.sum.map((value) => value / folded.mass);
}

/**
 * The mass bookkeeping of one reduce round: the masses the coordinator expects from each
 * rank's closed window, and the set the root actually accepted. Sum and divisor must come from
 * the same accepted set: a dead rank or a lost frame enters neither.
 */
export class MassLedger {
  readonly version: number;
  readonly gamma: number;
  #expected = new Map<number, number>();
  #accepted = new Set<number>();

  constructor(version: number, gamma: number) {
    this.version = version;
    this.gamma = gamma;
  }

  /** Records `rank`'s realized steps for this round; zero-step ranks are excluded. */
  expect(rank: number, steps: number): void {
    const mass = contributionMass(steps, this.gamma);
    if (mass > 0) this.#expected.set(rank, mass);
    else this.#expected.delete(rank);
  }

  /** Marks `rank`'s contribution accepted by the root (ignored when it has no mass). */
  accept(rank: number): void {
    if (this.#expected.has(rank)) this.#accepted.add(rank);
  }

  /** Removes `rank` from both the expected and accepted sets (death, lost frame). */
  drop(rank: number): void {
    this.#expected.delete(rank);
    this.#accepted.delete(rank);
  }

  /** `rank`'s expected mass (0 when excluded). */
  massOf(rank: number): number {
    return this.#expected.get(rank) ?? 0;
  }

  /** Ranks with a positive expected mass. */
  expectedRanks(): number[] {
    return [...this.#expected.keys()].sort((left, right) => left - right);
  }

  /** Accepted ranks. */
  acceptedRanks(): number[] {
    return [...this.#accepted].sort((left, right) => left - right);
  }

  /** The root's divisor: Σ mass of exactly the accepted contributions. */
  divisor(): number {
    let sum = 0;
    for (const rank of this.#accepted) sum += this.#expected.get(rank) ?? 0;
    return sum;
  }

  /** Effective weight of `rank` in the consensus: its mass over the divisor (0 when not accepted). */
  weightOf(rank: number): number {
    const divisor = this.divisor();
    return divisor > 0 && this.#accepted.has(rank) ? (this.#expected.get(rank) ?? 0) / divisor : 0;
  }
}

/** A completed round, as the launcher-side host saw it. */
export interface HostRound {
  version: number;
  /** Ranks whose contributions were accepted (host modes) or that acked (collective modes). */
  accepted: number[];
  /** Host modes: the mass each accepted rank shipped with its parameters. */
  masses?: Record<number, number>;
  /** Host modes: Σ mass of the accepted contributions (the one divisor). */
  totalMass?: number;
  /** Host modes: ranks of the round that died before it completed (their contributions left out). */
  dropped?: number[];
}

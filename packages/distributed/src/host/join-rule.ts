// When a rank's connections make it a member of the run, on the launcher side: a control
// connection in collective modes; in host modes its data channel too, opened on a bootstrap
// control connection before the RankClient connects (the rank joins on that second one).
import type { ControlServer } from '../wire/server.js';

/** Tracks each rank's connections and says when it joins (the same rule for every host). */
export class JoinRule {
  readonly #connects = new Map<number, number>();
  readonly #joined = new Set<number>();

  constructor(
    private readonly server: ControlServer,
    private readonly collective: boolean,
  ) {}

  /** A control connection of `rank` completed its handshake. */
  connected(rank: number): void {
    this.#connects.set(rank, (this.#connects.get(rank) ?? 0) + 1);
  }

  /** `rank` left (its control connection ended): it joins again only on new connections. */
  left(rank: number): void {
    this.#joined.delete(rank);
  }

  /** Whether `rank` has joined. */
  has(rank: number): boolean {
    return this.#joined.has(rank);
  }

  /** The joined ranks, ascending. */
  members(): number[] {
    return [...this.#joined].sort((left, right) => left - right);
  }

  get size(): number {
    return this.#joined.size;
  }

  /** Joins `rank` when its connections are complete; true when it joined now. */
  tryJoin(rank: number): boolean {
    if (this.#joined.has(rank) || !this.server.connectedRanks().includes(rank)) return false;
    if (!this.collective && (!this.server.dataChannelOf(rank) || (this.#connects.get(rank) ?? 0) < 2)) {
      return false;
    }
    this.#joined.add(rank);
    return true;
  }
}

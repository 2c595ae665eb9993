// When a rank's connections make it a member of the run, on the launcher side: a control
// connection in collective modes; in host modes its data channel too (a rank's link opens it
// before its control connection). A setup connection (`BOOTSTRAP_CAPABILITY`, which a client
// may use to open the data channel first) does not count: the rank joins on its next one.
import { BOOTSTRAP_CAPABILITY } from '../wire/handshake.js';
import type { Hello } from '../wire/messages.js';
import type { ControlServer } from '../wire/server.js';

/** Tracks each rank's connections and says when it joins (the same rule for every host). */
export class JoinRule {
  readonly #connects = new Map<number, number>();
  readonly #joined = new Set<number>();

  constructor(
    private readonly server: ControlServer,
    private readonly collective: boolean,
  ) {}

  /** A control connection of `rank` completed its handshake (`hello`: its Hello). */
  connected(rank: number, hello: Hello): void {
    if (hello.capabilities.includes(BOOTSTRAP_CAPABILITY)) return;
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
    if (!this.collective && (!this.server.dataChannelOf(rank) || (this.#connects.get(rank) ?? 0) < 1)) {
      return false;
    }
    this.#joined.add(rank);
    return true;
  }
}

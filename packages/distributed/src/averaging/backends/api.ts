// The interface every averaging backend implements, and what it may use of the session.
import type { Module } from '@flodl/nn';
import type { RankClient } from '../../rank/client.js';
import type { CoordinatorMessage, NewNcclSession } from '../../wire/messages.js';
import type { HostTensor } from '../host.js';

/** This rank's share of one round: its realized steps in the window and their mass (`steps^γ`). */
export interface AveragingWindow {
  version: number;
  steps: number;
  mass: number;
}

/** One applied averaging round, as this rank saw it. */
export interface AveragedEvent {
  version: number;
  /** This rank's realized steps in the window, and its mass. */
  steps: number;
  mass: number;
  /** Σ mass of the parameters' accepted contributions (the one divisor). */
  totalMass: number;
  /**
   * Host modes: the consensus as received. Its bytes are valid during the callback only (they
   * receive the next round's consensus): copy what you keep.
   */
  consensus?: readonly HostTensor[];
  /** True when the consensus was EASGD-blended rather than adopted. */
  blended: boolean;
}

/**
 * What a backend may read and do of the session that holds it. The session owns the step
 * clock and the window; a backend closes the window when its round starts, gives it back
 * when the round fails, and reports the round once applied.
 */
export interface AveragingContext {
  readonly model: Module;
  /** The rank's control channel, for the round's replies (`SyncAck`, `SnapshotReady`, re-formation). */
  readonly control: Pick<RankClient, 'send' | 'syncAck' | 'poll'>;
  /** Bound on every wait of a round (collective, consensus), ms. */
  readonly timeoutMs: number;
  /** Version of the last round applied to the model. */
  readonly version: number;
  /** Steps this rank has run (a `SyncAck` reports them). */
  readonly stepCount: number;
  /** Closes this rank's window for round `version`: its steps and mass; the next window starts empty. */
  closeWindow(version: number): AveragingWindow;
  /** Gives a closed window's steps back to the open one (its round failed before it touched the model). */
  reopenWindow(steps: number): void;
  /** Records round `event.version` as applied to the model (the session's `version`, `onAveraged`). */
  applied(event: AveragedEvent): void;
  /**
   * Messages taken off the channel during a hold that the session serves after it (in order).
   * A hold pushes onto it and may take from it.
   */
  readonly backlog: CoordinatorMessage[];
  /** Serves one message as a drain would (a hold hands back what it must not keep waiting). */
  serve(message: CoordinatorMessage): Promise<void>;
  /** Waits until a message is in, or for one slice of a hold / `leftMs` (see the session's `awaitControl`). */
  awaitControl(leftMs: number): Promise<boolean>;
}

/**
 * A way of averaging: the rank side of one backend of the run's mode. The session hands it
 * every averaging command in the order the coordinator sent them; a backend throws
 * `ERR_INVALID_ARGUMENT` for a command of another backend (the coordinator and the rank
 * disagree on the mode). The collective backend (`CollectiveBackend`: NcclSync /
 * NcclCadence, Gloo on CPU) reduces in place through a process group and re-forms the group
 * after deaths; the host backend (`HostBackend`: CpuSync / CpuCadence / CpuAsync) ships
 * a mass-scaled snapshot to the coordinator host and applies the consensus it sends back. A
 * backend that averages something else than the model's state (an outer optimizer over
 * pseudo-gradients, say) implements the same interface and reads its own commands in `serve`.
 */
export interface AveragingBackend {
  /**
   * True when a round's request holds the rank until its consensus is applied (CpuSync,
   * CpuCadence): a `Throttle` drained behind that request is served by the hold, not again.
   */
  readonly holdsRound: boolean;
  /**
   * Serves one averaging command: `SyncNow` (collective), `RequestParams` / `Update` (host),
   * `RequestNewNcclId` (collective: mint the survivors' rendezvous).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for a command of another backend
   * @throws FlodlError ERR_TIMEOUT when a round's wait runs past {@link AveragingContext.timeoutMs}
   */
  serve(command: AveragingCommand): Promise<void>;
  /** A peer was declared dead: whatever this backend shares with it (a process group) is dropped. */
  peerDied(): void;
  /** The coordinator re-formed the cohort (`NewNcclSession`): join the survivors' new group. */
  reform(message: NewNcclSession): void;
  /** Collective backends: process groups formed after deaths. */
  readonly reformations: number;
  /** Frees what the backend holds (group, channel, pinned buffers). Idempotent. */
  close(): void;
}

/** The coordinator messages an {@link AveragingBackend} serves. */
export type AveragingCommand = Extract<
  CoordinatorMessage,
  { type: 'SyncNow' | 'RequestParams' | 'Update' | 'RequestNewNcclId' }
>;

/** True for the messages an {@link AveragingBackend} serves. */
export function isAveragingCommand(message: CoordinatorMessage): message is AveragingCommand {
  return (
    message.type === 'SyncNow' ||
    message.type === 'RequestParams' ||
    message.type === 'Update' ||
    message.type === 'RequestNewNcclId'
  );
}

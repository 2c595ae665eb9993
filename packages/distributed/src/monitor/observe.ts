import type { AddressedCommand, CoordinatorNotice } from '../coordinator/messages.js';
import type { CoordinatorHost } from '../session/coordinator-host.js';
import type { HostRound } from '../session/host-round.js';
import type { RankMessage } from '../wire/messages.js';
import { RunRecorder, type RunRecorderOptions } from './run-recorder.js';
import { deathRecord } from './schema.js';

/** What {@link observe} returns: the recorder, and how to stop watching. */
export interface Observation {
  readonly recorder: RunRecorder;
  /** Stops listening to the host (the recorder and its log stay open: close them yourself). */
  stop(): void;
}

/**
 * Records a cluster run as its launcher-side {@link CoordinatorHost} sees it: epochs
 * (`EpochMetrics` whole), eval results, sampled steps of every rank (loss, lr, step time, from
 * their `Batch` and `LrUpdate` reports), ElChe decisions (phase, anchor, window sizes),
 * averaging rounds (masses in host modes), deaths, re-formations, checkpoints, rank exits and
 * the end. Call it in `launch({ onServer })` right after `CoordinatorHost.attach` to see the
 * whole run. It only reads: nothing it does changes the run.
 *
 * `recorder`: a {@link RunRecorder} to feed, or its options (the run's name, mode, world size,
 * epochs and samples per epoch default to the host's).
 *
 * @example
 * ```ts
 * await launch({ nproc: 2, script, mode: 'CpuCadence', onServer: (server, run) => {
 *   const host = CoordinatorHost.attach(server, { mode: 'CpuCadence', run, coordinator });
 *   const { recorder } = observe(host, { log: 'run.jsonl' });
 *   startDashboard({ port: 8080, recorder });
 * } });
 * ```
 */
export function observe(host: CoordinatorHost, recorder: RunRecorder | RunRecorderOptions = {}): Observation {
  const { coordinator, mode } = host.options;
  const target =
    recorder instanceof RunRecorder
      ? recorder
      : new RunRecorder({
          ...recorder,
          run: {
            mode,
            worldSize: coordinator.worldSize,
            epochs: coordinator.numEpochs,
            samplesPerEpoch: coordinator.totalSamples,
            ...recorder.run,
          },
        });
  const roundStarts = new Map<number, number[]>();
  const hostRounds = new Map<number, HostRound>();
  const reforms = new Map<string, number[]>();
  const learningRates = new Map<number, number>();

  const onNotice = (notice: CoordinatorNotice): void => {
    switch (notice.type) {
      case 'Formed':
        target.record({ kind: 'formed', worldSize: notice.worldSize });
        break;
      case 'EpochMetrics':
        target.record({ kind: 'epoch', metrics: notice.metrics });
        break;
      case 'EvalResult':
        target.record({
          kind: 'eval',
          epoch: notice.epoch,
          metric: notice.metric,
          rank: notice.rank,
          ...(notice.error ? { error: notice.error } : {}),
        });
        break;
      case 'CheckpointResult':
        target.record({
          kind: 'checkpoint',
          version: notice.version,
          rank: notice.rank,
          ...(notice.error ? { error: notice.error } : {}),
          ...(notice.gaveUp ? { gaveUp: true } : {}),
        });
        break;
      case 'AveragingStarted':
        roundStarts.set(notice.version, [...notice.ranks]);
        target.record({ kind: 'round-start', version: notice.version, ranks: [...notice.ranks] });
        break;
      case 'Averaged': {
        const round = hostRounds.get(notice.version);
        hostRounds.delete(notice.version);
        const accepted = round?.accepted ?? roundStarts.get(notice.version) ?? [];
        roundStarts.delete(notice.version);
        target.record({
          kind: 'round',
          version: notice.version,
          accepted: [...accepted],
          totalMass: round?.totalMass ?? notice.divisor,
          ...(round?.masses ? { masses: round.masses } : {}),
          ...(round?.dropped ? { dropped: round.dropped } : {}),
        });
        target.record({
          kind: 'elche',
          version: notice.version,
          phase: notice.phase,
          anchor: notice.anchor,
          window: [...notice.batchCounts],
          steps: [...notice.steps],
          globalStep: notice.globalStep,
          verdict: notice.verdict,
          syncMs: notice.syncMs,
        });
        break;
      }
      case 'AnchorChanged':
        target.record({ kind: 'anchor', from: notice.from, to: notice.to });
        break;
      case 'RankDead': {
        const { t: _, ...death } = deathRecord(notice.record, 0);
        target.record(death);
        break;
      }
      case 'Finished':
        target.record({ kind: 'finished', reason: notice.reason, failedRanks: [...notice.failedRanks] });
        break;
      default:
        break;
    }
  };

  const onCommand = ({ rank, command }: AddressedCommand): void => {
    if (command.type !== 'NewNcclSession') return;
    // One re-formation sends every survivor the same token: it is complete when all have theirs.
    const key = Buffer.from(command.uidBytes).toString('hex');
    const ranks = reforms.get(key) ?? [];
    ranks.push(rank);
    reforms.set(key, ranks);
    if (ranks.length === command.newWorldSize) {
      reforms.delete(key);
      target.record({
        kind: 'reform',
        ranks: [...ranks].sort((a, b) => a - b),
        worldSize: command.newWorldSize,
      });
    }
  };

  const onMessage = (rank: number, message: RankMessage): void => {
    if (message.type === 'LrUpdate') learningRates.set(rank, message.lr);
    else if (message.type === 'Batch') {
      const lr = learningRates.get(rank);
      target.record({
        kind: 'step',
        rank,
        step: message.stepCount,
        loss: Number.isFinite(message.batchLoss) ? message.batchLoss : null,
        stepMs: message.batchMs,
        dataMs: message.dataMs,
        ...(lr === undefined ? {} : { lr }),
      });
    }
  };

  const removeObserver = host.addObserver({
    notice: onNotice,
    command: onCommand,
    round: (round) => hostRounds.set(round.version, round),
    exit: (exit) =>
      target.record({ kind: 'exit', rank: exit.rank, exitCode: exit.exitCode, signal: exit.signal }),
  });
  host.server.on('message', onMessage);
  return {
    recorder: target,
    stop: () => {
      removeObserver();
      host.server.off('message', onMessage);
    },
  };
}

import { FlodlError } from '@flodl/tensor-native';
import type { DeathRecord } from './death-record.js';

/**
 * The one error of a failed run: `ERR_RANK_FAILED`, every failed rank's death record
 * (earliest first) and the root cause, the earliest of them.
 */
export class RankFailedError extends FlodlError {
  /** Death records of the ranks that failed on their own, earliest first. */
  readonly failures: readonly DeathRecord[];
  /** The earliest failure: where to start looking. */
  readonly rootCause: DeathRecord;
  /** Ranks the launcher stopped because another failed. */
  readonly stoppedRanks: readonly number[];
  /** Folder holding the ranks' death records. */
  readonly recordDir: string;

  constructor(
    failures: readonly DeathRecord[],
    stoppedRanks: readonly number[],
    worldSize: number,
    recordDir: string,
  ) {
    const sorted = [...failures].sort((left, right) => left.time - right.time || left.rank - right.rank);
    const rootCause = sorted[0];
    if (rootCause === undefined) throw new RangeError('RankFailedError needs at least one failure');
    const lines = [
      `${sorted.length} of ${worldSize} ranks failed; root cause: rank ${rootCause.rank} (${describeEnd(rootCause)}): ${rootCause.message}`,
      'failed ranks, earliest first:',
      ...sorted.map(
        (record, index) =>
          `  rank ${record.rank} (local ${record.localRank}, pid ${record.pid}) at ${new Date(record.time).toISOString()}: ${describeEnd(record)}: ${record.message}${index === 0 ? '  <- root cause' : ''}`,
      ),
      `stopped by the launcher: ${stoppedRanks.length > 0 ? stoppedRanks.map((rank) => `rank ${rank}`).join(', ') : 'none'}`,
      `death records: ${recordDir}`,
    ];
    super('ERR_RANK_FAILED', lines.join('\n'), { op: 'launch' });
    this.failures = sorted;
    this.rootCause = rootCause;
    this.stoppedRanks = [...stoppedRanks].sort((left, right) => left - right);
    this.recordDir = recordDir;
  }
}

function describeEnd(record: DeathRecord): string {
  return record.signal !== null ? `signal ${record.signal}` : `exit code ${record.exitCode}`;
}

// The coordinator's state a cluster bundle records: after a graceful stop, ranks that said
// Exiting once they saved stopped as asked (live), while a rank lost otherwise stays lost.
import { ClusterCoordinator } from '@flodl/distributed/coordinator';
import { describe, expect, it } from 'vitest';
import { snapshotCoordinator } from '../src/checkpoint/coordinator-state.js';

function coordinatorOfThree(): ClusterCoordinator {
  const coordinator = new ClusterCoordinator({
    worldSize: 3,
    totalSamples: 96,
    batchSize: 8,
    numEpochs: 2,
    elche: { mode: 'CpuAsync' },
  });
  for (const rank of [0, 1, 2]) coordinator.handle({ type: 'RankJoined', rank });
  return coordinator;
}

describe('snapshotCoordinator', () => {
  it('records every rank live before anything happens', () => {
    expect(snapshotCoordinator({ coordinator: coordinatorOfThree() })).toMatchObject({
      live: [0, 1, 2],
      lost: [],
    });
  });

  it('counts a rank that said Exiting after a graceful stop as stopped, not lost; a dropped one stays lost', () => {
    const coordinator = coordinatorOfThree();
    coordinator.handle({ type: 'Exiting', rank: 1 });
    coordinator.handle({ type: 'ConnectionLost', rank: 2, message: 'control connection closed' });
    expect(coordinator.deathRecords().map((record) => record.cause)).toEqual([
      'exited-early',
      'connection-lost',
    ]);
    // Without a stop, an early exit is a loss like any other.
    expect(snapshotCoordinator({ coordinator })).toMatchObject({ live: [0], lost: [1, 2] });
    expect(snapshotCoordinator({ coordinator }, { stopping: true })).toMatchObject({
      live: [0, 1],
      lost: [2],
    });
  });
});

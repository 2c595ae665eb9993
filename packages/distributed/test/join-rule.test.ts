// When a rank joins on the launcher side: its one control connection (and, in host modes, its
// data channel); a setup connection (BOOTSTRAP_CAPABILITY) does not count.
import { describe, expect, it } from 'vitest';
import { JoinRule } from '../src/host/join-rule.js';
import { BOOTSTRAP_CAPABILITY } from '../src/wire/handshake.js';
import type { Hello } from '../src/wire/messages.js';
import type { ControlServer } from '../src/wire/server.js';

function serverWith(connected: number[], data: number[]): ControlServer {
  return {
    connectedRanks: () => connected,
    dataChannelOf: (rank: number) => (data.includes(rank) ? {} : undefined),
  } as unknown as ControlServer;
}

const hello = (capabilities: string[] = []): Hello => ({ capabilities }) as unknown as Hello;

describe('JoinRule', () => {
  it('joins a host-mode rank on one control connection and its data channel', () => {
    const rule = new JoinRule(serverWith([0], [0]), false);
    expect(rule.tryJoin(0)).toBe(false); // no control connection counted yet
    rule.connected(0, hello([BOOTSTRAP_CAPABILITY]));
    expect(rule.tryJoin(0)).toBe(false); // a setup connection is not the rank
    rule.connected(0, hello());
    expect(rule.tryJoin(0)).toBe(true);
    expect(rule.members()).toEqual([0]);
  });

  it('waits for the data channel in host modes, not in collective ones', () => {
    const host = new JoinRule(serverWith([1], []), false);
    host.connected(1, hello());
    expect(host.tryJoin(1)).toBe(false);
    const collective = new JoinRule(serverWith([1], []), true);
    collective.connected(1, hello());
    expect(collective.tryJoin(1)).toBe(true);
  });
});

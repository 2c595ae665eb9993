import { createServer } from 'node:net';
import { MAX_SESSION_ID_BYTES } from '../wire/messages.js';

/** Where the survivors of a collective run meet to form their new process group. */
export interface Rendezvous {
  host: string;
  port: number;
}

/**
 * The token a re-formation carries (`NewNcclIdGenerated` / `NewNcclSession`): the new group's
 * rendezvous as UTF-8 `host:port` (`[v6]:port`). The new rank 0 hosts the TCPStore there.
 */
export function encodeRendezvous({ host, port }: Rendezvous): Uint8Array {
  const bytes = new TextEncoder().encode(`${host.includes(':') ? `[${host}]` : host}:${port}`);
  if (bytes.length > MAX_SESSION_ID_BYTES) throw new RangeError(`rendezvous host too long: ${host}`);
  return bytes;
}

/** The rendezvous of a token from {@link encodeRendezvous}, or `undefined` when malformed. */
export function decodeRendezvous(bytes: Uint8Array): Rendezvous | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(new TextDecoder().decode(bytes));
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: match[1] ?? match[2] ?? '', port };
}

/** A port that is free on `host` right now (the OS picks it). */
export function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

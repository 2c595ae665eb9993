// The machine's own limits, measured in the same run as the averaging rounds: memcpy bandwidth
// (one large buffer copied into another) and loopback TCP bandwidth (one sender process, this
// process receiving, plain sockets with no framing or authentication).
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { median, nowMs } from './stats.js';

const here = fileURLToPath(import.meta.url);

/** Where a forked benchmark process runs: the package root, so `--import tsx` resolves. */
export const PACKAGE_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Forks a TypeScript benchmark process through tsx, with an IPC channel. */
export function forkTs(file: string, args: readonly string[]): ChildProcess {
  return fork(file, [...args], {
    cwd: PACKAGE_ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** Median memcpy bandwidth in bytes/s over `reps` copies of `bytes` (pages touched first). */
export function memcpyBandwidth(bytes: number, reps = 5): number {
  const source = new Uint8Array(bytes).fill(1);
  const target = new Uint8Array(bytes).fill(2);
  const rates: number[] = [];
  for (let rep = 0; rep < reps; rep += 1) {
    const start = nowMs();
    target.set(rep % 2 === 0 ? source : source.subarray(0));
    rates.push(bytes / ((nowMs() - start) / 1000));
  }
  return median(rates);
}

/**
 * Median loopback TCP bandwidth in bytes/s: a forked process writes `bytes` in `chunkBytes`
 * writes (respecting backpressure) `reps` times; this process times each transfer from its
 * first to its last byte.
 */
export async function loopbackBandwidth(bytes: number, reps = 3, chunkBytes = 4 << 20): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const child = forkTs(here, [
    '--loopback-sender',
    String(port),
    String(bytes),
    String(reps),
    String(chunkBytes),
  ]);
  const rates: number[] = [];
  try {
    for (let rep = 0; rep < reps; rep += 1) {
      const [socket] = (await once(server, 'connection')) as [Socket];
      let received = 0;
      let start = 0;
      socket.on('data', (chunk: Buffer) => {
        if (received === 0) start = nowMs();
        received += chunk.length;
      });
      await once(socket, 'end');
      socket.destroy();
      if (received !== bytes) throw new Error(`loopback: received ${received} of ${bytes} bytes`);
      rates.push(bytes / ((nowMs() - start) / 1000));
    }
  } finally {
    child.kill();
    server.close();
  }
  return median(rates);
}

async function sendLoop(port: number, bytes: number, reps: number, chunkBytes: number): Promise<void> {
  const chunk = new Uint8Array(chunkBytes).fill(3);
  for (let rep = 0; rep < reps; rep += 1) {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    socket.setNoDelay(true);
    for (let sent = 0; sent < bytes; sent += chunkBytes) {
      const part = chunk.subarray(0, Math.min(chunkBytes, bytes - sent));
      if (!socket.write(part)) await once(socket, 'drain');
    }
    socket.end();
    await once(socket, 'close');
  }
}

if (process.argv[2] === '--loopback-sender') {
  const [port, bytes, reps, chunkBytes] = process.argv.slice(3).map(Number) as [
    number,
    number,
    number,
    number,
  ];
  await sendLoop(port, bytes, reps, chunkBytes);
  process.exit(0);
}

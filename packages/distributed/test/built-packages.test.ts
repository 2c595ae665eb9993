import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

// The published builds (dist/ for import, dist/cjs/ for require), not the sources: RankClient
// starts its control worker on its own module file, which each build must point at.
const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

type Built = {
  root: typeof import('../src/index.js');
  wire: typeof import('../src/wire/index.js');
};

async function handshake({ root, wire }: Built): Promise<number> {
  const secret = wire.createRunSecret();
  const server = await wire.ControlServer.listen({ secret, worldSize: 1 });
  try {
    const rank = await root.RankClient.connect({
      coordinator: `127.0.0.1:${server.port}`,
      rank: 0,
      worldSize: 1,
      secret,
      timeoutMs: 10_000,
      connectTimeoutMs: 10_000,
    });
    const connected = rank.rank;
    await rank.close();
    return connected;
  } finally {
    await server.close();
  }
}

describe('the built packages', () => {
  it('connect a RankClient from the CommonJS build', async () => {
    const built: Built = {
      root: require(join(here, '..', 'dist', 'cjs', 'index.js')),
      wire: require(join(here, '..', 'dist', 'cjs', 'wire', 'index.js')),
    };
    expect(await handshake(built)).toBe(0);
  });

  it('connect a RankClient from the ESM build', async () => {
    const built: Built = {
      root: await import(pathToFileURL(join(here, '..', 'dist', 'index.js')).href),
      wire: await import(pathToFileURL(join(here, '..', 'dist', 'wire', 'index.js')).href),
    };
    expect(await handshake(built)).toBe(0);
  });
});

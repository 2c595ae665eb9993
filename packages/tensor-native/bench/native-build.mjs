// Building a C++ benchmark against the libtorch the addon uses: g++'s arguments for one source
// file and its binary, from scripts/libtorch.mjs's configuration.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Compiles `source` (C++17, -O2) into `binary` against that libtorch; spawnSync's result. */
export async function buildAgainstLibtorch(source, binary, extraLinkFlags = []) {
  const { findLibtorch, gypField } = await import(join(here, '..', 'scripts', 'libtorch.mjs'));
  const config = findLibtorch();
  const args = [
    '-std=c++17',
    '-O2',
    ...gypField(config, 'includes')
      .split(' ')
      .map((dir) => `-I${dir}`),
    ...gypField(config, 'defines')
      .split(' ')
      .map((define) => `-D${define}`),
    source,
    '-o',
    binary,
    ...gypField(config, 'ldflags').split(' '),
    ...extraLinkFlags,
  ];
  return { build: spawnSync('g++', args, { encoding: 'utf8' }), config };
}

#!/usr/bin/env node
// Finds libtorch for the addon build, in this order:
//   1. LIBTORCH: an unpacked libtorch folder (include/, lib/)
//   2. the torch package of `python3` when it ships headers (how CUDA builds are made)
//   3. the system: Debian's libtorch-dev + libgloo-dev (CPU)
// `node scripts/libtorch.mjs` prints the choice; `--gyp KEY` prints one field for binding.gyp.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const FIX = [
  'Possible solutions:',
  '  - Debian/Ubuntu (CPU): apt-get install -y libtorch-dev libgloo-dev',
  '  - any libtorch: export LIBTORCH=/path/to/libtorch (the folder with include/ and lib/)',
  '  - CUDA: install PyTorch for python3 (pip install torch) so python3 -c "import torch" works',
].join('\n');

function readVersion(includeDir) {
  const header = [
    join(includeDir, 'torch', 'csrc', 'api', 'include', 'torch', 'version.h'),
    join(includeDir, 'torch', 'version.h'),
  ].find((path) => existsSync(path));
  if (header === undefined) return 'unknown';
  const text = readFileSync(header, 'utf8');
  const part = (name) => text.match(new RegExp(`#define\\s+TORCH_VERSION_${name}\\s+(\\d+)`))?.[1] ?? '?';
  return `${part('MAJOR')}.${part('MINOR')}.${part('PATCH')}`;
}

function describe(source, root, includeDir, libDir, cxx11Abi) {
  const has = (name) => existsSync(join(libDir, `lib${name}.so`));
  const cuda = has('torch_cuda') && has('c10_cuda');
  const libs = ['torch', 'torch_cpu', 'c10'];
  if (cuda) libs.push('torch_cuda', 'c10_cuda');
  const defines = [`_GLIBCXX_USE_CXX11_ABI=${cxx11Abi ? 1 : 0}`];
  const glooHeader = join(includeDir, 'gloo', 'config.h');
  if (existsSync(glooHeader) || source === 'system') defines.push('USE_C10D_GLOO');
  if (cuda) defines.push('FLODL_CUDA', 'USE_C10D_NCCL');
  const includes = [includeDir, join(includeDir, 'torch', 'csrc', 'api', 'include')];
  if (cuda) {
    const cudaIncludes = existsSync('/usr/local')
      ? readdirSync('/usr/local')
          .filter((name) => name.startsWith('cuda'))
          .sort()
          .map((name) => join('/usr/local', name, 'targets', 'x86_64-linux', 'include'))
      : [];
    const fromEnv = process.env.CUDA_HOME ? [join(process.env.CUDA_HOME, 'include')] : [];
    const found = [...fromEnv, ...cudaIncludes].find((dir) => existsSync(join(dir, 'cuda_runtime_api.h')));
    if (found) includes.push(found);
    // PyTorch wheels take nccl.h from the nvidia-nccl package beside torch.
    const ncclInclude = join(root, '..', 'nvidia', 'nccl', 'include');
    if (existsSync(join(ncclInclude, 'nccl.h'))) includes.push(ncclInclude);
    const cudaLibs = found ? [join(found, '..', 'lib'), join(found, '..', '..', '..', 'lib64')] : [];
    return {
      source,
      root,
      version: readVersion(includeDir),
      includes,
      libDir,
      libs,
      defines,
      cuda,
      cudaLibDirs: cudaLibs,
    };
  }
  return {
    source,
    root,
    version: readVersion(includeDir),
    includes,
    libDir,
    libs,
    defines,
    cuda,
    cudaLibDirs: [],
  };
}

function fromEnvironment() {
  const root = process.env.LIBTORCH;
  if (!root) return null;
  const includeDir = join(root, 'include');
  if (!existsSync(join(includeDir, 'ATen', 'ATen.h'))) {
    throw new Error(`LIBTORCH=${root} has no include/ATen/ATen.h.\n${FIX}`);
  }
  const abi = process.env.LIBTORCH_CXX11_ABI !== '0';
  return describe('LIBTORCH', root, includeDir, join(root, 'lib'), abi);
}

function fromPython() {
  const probe = spawnSync(
    'python3',
    [
      '-c',
      'import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))',
    ],
    { encoding: 'utf8' },
  );
  if (probe.status !== 0) return null;
  const [root, abi, version] = probe.stdout.trim().split('\n');
  if (!root) return null;
  const includeDir = join(root, 'include');
  const libDir = join(root, 'lib');
  if (!existsSync(join(includeDir, 'ATen', 'ATen.h')) || !existsSync(join(libDir, 'libtorch_cpu.so')))
    return null;
  const found = describe('python3 torch', root, includeDir, libDir, abi === '1');
  if (found.version === 'unknown' || found.version.includes('?')) found.version = version ?? 'unknown';
  return found;
}

function fromSystem() {
  const libDirs = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib'];
  const libDir = libDirs.find((dir) => existsSync(join(dir, 'libtorch_cpu.so')));
  if (!existsSync('/usr/include/ATen/ATen.h') || !libDir) return null;
  return describe('system', '/usr', '/usr/include', libDir, true);
}

export function findLibtorch() {
  const found = fromEnvironment() ?? fromPython() ?? fromSystem();
  if (!found) throw new Error(`libtorch was not found.\n${FIX}`);
  return found;
}

export function gypField(config, key) {
  switch (key) {
    case 'includes':
      return config.includes.join(' ');
    case 'defines':
      return config.defines.join(' ');
    case 'ldflags': {
      const dirs = [config.libDir, ...config.cudaLibDirs.filter((dir) => existsSync(dir))];
      const flags = dirs.flatMap((dir) => [`-L${dir}`, `-Wl,-rpath,${dir}`]);
      // --no-as-needed keeps libtorch_cuda linked: its static initialisers register the CUDA kernels.
      return [
        ...flags,
        '-Wl,--no-as-needed',
        ...config.libs.map((lib) => `-l${lib}`),
        '-Wl,--as-needed',
      ].join(' ');
    }
    default:
      throw new Error(`unknown field ${key}`);
  }
}

const args = process.argv.slice(2);
if (args[0] === '--gyp') {
  try {
    process.stdout.write(gypField(findLibtorch(), args[1]));
  } catch (error) {
    console.error(String(error instanceof Error ? error.message : error));
    process.exit(1);
  }
} else if (process.argv[1]?.endsWith('libtorch.mjs')) {
  try {
    const config = findLibtorch();
    console.log(JSON.stringify(config, null, 2));
  } catch (error) {
    console.error(String(error instanceof Error ? error.message : error));
    process.exit(1);
  }
}

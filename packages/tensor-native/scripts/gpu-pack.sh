#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for a GPU machine that has PyTorch, a compiler and CUDA but
# no Node.js and no network: a compressed copy of this Node, its N-API headers, the
# node-addon-api headers, and modules.tar.xz (the test runner's node_modules without the
# linters, compilers and turbo, plus every package's built dist/). The GPU side is
# scripts/gpu-run.sh; carry `.device` (under the 64 MiB a call may take).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
out="$root/.device"
mkdir -p "$out/node-include" "$out/napi"
node_bin="$(command -v node)"
[ -f "$out/node.xz" ] && [ "$out/node.xz" -nt "$node_bin" ] || xz -T2 -6 -c "$node_bin" > "$out/node.xz"
node_include="$(dirname "$(dirname "$node_bin")")/include/node"
cp "$node_include"/{node_api.h,node_api_types.h,js_native_api.h,js_native_api_types.h} "$out/node-include/"
napi="$(cd "$root/packages/tensor-native" && node -p "require('node:path').dirname(require.resolve('node-addon-api/package.json'))")"
cp "$napi"/napi.h "$napi"/napi-inl.h "$napi"/napi-inl.deprecated.h "$out/napi/"
(cd "$root" && node scripts/pnpm.mjs exec turbo run build --output-logs=errors-only > /dev/null)
(
  cd "$root"
  excluded=('@biomejs+cli-*' '@turbo+*' 'lightningcss-*' 'typescript@*' 'prettier@*' '@types+node@*' 'node-gyp@*' '@changesets+*')
  tar -cf - "${excluded[@]/#/--exclude=node_modules/.pnpm/}" \
    node_modules packages/*/node_modules apps/*/node_modules packages/*/dist |
    xz -T2 -6 > "$out/modules.tar.xz"
)
# The Fashion-MNIST test split (4.5 MB) for the managed-Trainer phase; the train split would
# not fit in what a call may carry.
data=/usr/share/datasets/fashion-mnist
if [ -f "$data/t10k-images-idx3-ubyte.gz" ]; then
  mkdir -p "$out/fashion-mnist" && cp "$data"/t10k-*-idx*-ubyte.gz "$out/fashion-mnist/"
fi
du -sh "$out" "$out"/*.xz

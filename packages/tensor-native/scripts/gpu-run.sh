#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with .device/ (scripts/gpu-pack.sh) and
# packages/{tensor-native,autograd,nn}/dist carried: builds the addon against python3's torch through the
# project's build script (direct mode: no npm packages needed) and runs the CUDA checks.
set -euo pipefail
root="$(pwd)"
mkdir -p /tmp/flodl-node
xz -dc .device/node.xz > /tmp/flodl-node/node
chmod +x /tmp/flodl-node/node
export PATH="/tmp/flodl-node:$PATH"
node --version
cd packages/tensor-native
export NODE_HEADERS_DIR="$root/.device/node-include" NODE_ADDON_API_DIR="$root/.device/napi"
FLODL_BUILD_JOBS="${FLODL_BUILD_JOBS:-$(nproc)}" node scripts/build-addon.mjs --direct --force
node scripts/gpu-check.mjs
if node -e "import('./dist/index.js').then((m) => process.exit(m.distributed.isAvailable('gloo') ? 0 : 1))"; then
  node scripts/collectives-check.mjs gloo 3
else
  echo "gloo across processes skipped: this libtorch ships no Gloo headers (PyTorch wheels)"
fi
gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"
if [ "$gpus" -ge 2 ]; then node scripts/collectives-check.mjs nccl "$gpus"; else echo "nccl across processes skipped: $gpus GPU(s)"; fi
# The upper packages' checks, when their dist/ was carried too (they import each other by name).
cd "$root"
mkdir -p node_modules/@flodl
for package in tensor-native autograd nn trainer; do ln -sfn "../../packages/$package" "node_modules/@flodl/$package"; done
if [ -f packages/nn/dist/index.js ] && [ -f packages/autograd/dist/index.js ]; then
  node packages/nn/scripts/gpu-check.mjs
fi
if [ -f packages/trainer/dist/index.js ]; then
  node packages/trainer/scripts/gpu-check.mjs
fi

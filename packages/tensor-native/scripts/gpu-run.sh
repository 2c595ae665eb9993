#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with .device/ (scripts/gpu-pack.sh) and
# packages/tensor-native/dist carried: builds the addon against python3's torch through the
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

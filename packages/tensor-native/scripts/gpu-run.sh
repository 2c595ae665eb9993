#!/usr/bin/env bash
# Runs on the GPU machine from the repository root with `.device` carried (scripts/gpu-pack.sh):
# unpacks Node and the modules, builds the addon against python3's torch through the project's
# build script (direct mode: no npm packages needed) unless .device/cuda-addon.node was built
# from the same sources, then runs the phases asked for (default: tests):
#   tests        `pnpm test:gpu`: every package suite on cuda, then the CUDA-only checks
#                (GPU_TESTS_ONLY=trainer,nn: those suites only, no checks)
#   collectives  c10d NCCL all-reduce / broadcast across the GPUs (2 or more)
#   cluster      the averaging modes through the managed Trainer, one rank process per GPU
#                (2 or more), then the same with rank 1 dying mid-run
#   bench        bench:dispatch and bench:train (with its CUDA-graph column) on cuda against
#                this machine's PyTorch
#   graphs       the CUDA graph tests (CudaGraph, CapturedStep) and bench:train's small models
#                with and without a captured step
#   kernels      bench:kernels: kernels, memcpys and memsets per training step on each side
#                (a CUPTI counter), their GPU time and the step's wall time
#   managed      bench:managed on cuda: the managed Trainer against a hand-written loop, on
#                the Fashion-MNIST test split carried in .device/fashion-mnist
#   ddp          bench:ddp on CPU ranks: the fastest rank alone against two ranks in each
#                mode, equal and one at half speed (same carried test split; DDP_MODELS=mlp
#                and DDP_MODES=CpuCadence,CpuAsync narrow it), with its references (two
#                trainings apart, PyTorch alone and DDP over Gloo; DDP_REFERENCES=apart or ''
#                narrows them)
#   ddp-gpu      bench:ddp on real devices: a GPU rank beside a CPU rank (the Cpu modes), and
#                with two or more GPUs one rank on each of two GPUs in every mode (the MLP,
#                the CNN and the wide ResNet), beside PyTorch alone and DDP over NCCL on the
#                same GPUs; with one GPU, the ResNet's two ranks share it (the Cpu modes)
# With $OUT set, the built addon and each phase's log are left there.
set -uo pipefail
root="$(pwd)"
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=(tests)
mkdir -p /tmp/flodl-node
xz -dc .device/node.xz > /tmp/flodl-node/node && chmod +x /tmp/flodl-node/node
export PATH="/tmp/flodl-node:$PATH"
[ -f .device/modules.tar.xz ] && xz -dc .device/modules.tar.xz | tar -xf -
echo "node $(node --version); $(nvidia-smi -L 2>/dev/null | wc -l) GPU(s)"

addon=packages/tensor-native/build/Release/flodl_tensor_native.node
sources="$(cd packages/tensor-native && cat native/* binding.gyp scripts/build-addon.mjs scripts/libtorch.mjs | sha256sum | cut -c1-16)"
if [ -f "$addon" ] && [ "$(cat "$addon.sha" 2>/dev/null)" = "$sources" ]; then
  echo "addon: already built here for sources $sources"
elif [ -f .device/cuda-addon.node ] && [ "$(cat .device/cuda-addon.sha 2>/dev/null)" = "$sources" ]; then
  mkdir -p "$(dirname "$addon")" && cp .device/cuda-addon.node "$addon"
  echo "addon: prebuilt for sources $sources"
else
  started=$SECONDS
  (cd packages/tensor-native &&
    NODE_HEADERS_DIR="$root/.device/node-include" NODE_ADDON_API_DIR="$root/.device/napi" \
      FLODL_BUILD_JOBS="${FLODL_BUILD_JOBS:-$(nproc)}" node scripts/build-addon.mjs --direct --force) || exit 1
  echo "addon: built in $((SECONDS - started)) s"
  echo "$sources" > "$addon.sha"
  if [ -n "${OUT:-}" ]; then cp "$addon" "$OUT/cuda-addon.node" && echo "$sources" > "$OUT/cuda-addon.sha"; fi
fi
# Packages import each other by name.
mkdir -p node_modules/@flodl
for package in tensor-native autograd nn distributed trainer cooperative; do ln -sfn "../../packages/$package" "node_modules/@flodl/$package"; done

status=0
log() { if [ -n "${OUT:-}" ]; then tee "$OUT/$1.log"; else cat; fi; }
gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"
for phase in "${phases[@]}"; do
  echo "== $phase"
  case "$phase" in
    tests) node scripts/test-gpu.mjs ${GPU_TESTS_ONLY:+--only "$GPU_TESTS_ONLY" --no-checks} 2>&1 | log tests || status=1 ;;
    collectives)
      if [ "$gpus" -ge 2 ]; then node packages/tensor-native/scripts/collectives-check.mjs nccl "$gpus" 2>&1 | log collectives || status=1
      else echo "collectives skipped: $gpus GPU(s)"; fi ;;
    cluster)
      if [ "$gpus" -ge 2 ]; then
        { node packages/trainer/scripts/gpu-cluster.mjs --nproc "$gpus" &&
          node packages/trainer/scripts/gpu-cluster.mjs --nproc "$gpus" --kill-rank 1 --kill-at 20; } 2>&1 | log cluster || status=1
      else echo "cluster skipped: $gpus GPU(s)"; fi ;;
    bench)
      (node --expose-gc packages/tensor-native/bench/dispatch.mjs --device cuda --iterations 50000 &&
        node --expose-gc packages/trainer/bench/train.mjs --device cuda --model all --cuda-graph) 2>&1 | log bench || status=1 ;;
    graphs)
      vitest="$root/node_modules/vitest/vitest.mjs"
      ((cd packages/tensor-native && FLODL_TEST_DEVICE=cuda node "$vitest" run test/cuda-graph.test.ts) &&
        (cd packages/nn && FLODL_TEST_DEVICE=cuda node "$vitest" run test/captured-step.test.ts) &&
        node --expose-gc packages/trainer/bench/train.mjs --device cuda --model mlp64,cnn-small --cuda-graph) 2>&1 |
        log graphs || status=1 ;;
    kernels) node packages/trainer/bench/kernels.mjs --model mlp64,cnn-small,cnn,lstm ${OUT:+--json "$OUT/kernels.json"} 2>&1 | log kernels || status=1 ;;
    managed)
      if [ -d .device/fashion-mnist ]; then
        (cd packages/trainer && node --expose-gc --import tsx bench/managed.ts --device cuda \
          --root "$root/.device/fashion-mnist" --split test --samples 9984 --epochs 3 --rounds 5) 2>&1 | log managed || status=1
      else echo "managed skipped: no .device/fashion-mnist (gpu-pack.sh copies it from Debian's dataset-fashion-mnist)"; fi ;;
    ddp)
      # bench:ddp on CPU ranks (1 thread each): equal ranks, then one at half speed. The MLP and
      # the CNN run separately, each sized to train long enough for ElChe to calibrate (about
      # 8 minutes on 16 cores).
      if [ -d .device/fashion-mnist ]; then
        (cd packages/trainer && for speeds in 1,1 1,0.5; do
          for model in ${DDP_MODELS:-mlp cnn}; do
            epochs=24
            [ "$model" = mlp ] && epochs=100
            node --expose-gc --import tsx bench/ddp.ts --model "$model" --speeds "$speeds" \
              ${DDP_MODES:+--modes "$DDP_MODES"} ${DDP_REFERENCES+--references "$DDP_REFERENCES"} \
              --root "$root/.device/fashion-mnist" --split test \
              --samples 8000 --epochs "$epochs" ${OUT:+--json "$OUT/ddp-$model-${speeds/,/_}.json"} || exit 1
          done
        done) 2>&1 | log ddp || status=1
      else echo "ddp skipped: no .device/fashion-mnist (gpu-pack.sh copies it from Debian's dataset-fashion-mnist)"; fi ;;
    ddp-gpu)
      # bench:ddp on real devices against the first GPU alone: cuda:0 beside a 1-thread CPU rank
      # (host averaging only: NCCL needs every rank on a GPU; the MLP and the CNN), then with two
      # or more GPUs one rank on each of cuda:0 and cuda:1 in every mode (the two, and the wide
      # ResNet that keeps a GPU busy). With one GPU the ResNet runs with two ranks on it instead
      # (the Cpu modes; NCCL needs a GPU per rank): its alone, PyTorch alone, and the host rounds
      # of its 4.33M parameters. DDP_MODELS narrows the models.
      if [ -d .device/fashion-mnist ]; then
        (cd packages/trainer && set -e
          sets=(cuda:0,cpu)
          if [ "$gpus" -ge 2 ]; then sets+=(cuda:0,cuda:1); else sets+=(cuda:0,cuda:0); fi
          for devices in "${sets[@]}"; do
            case "$devices" in
              cuda:0,cpu) modes=CpuSync,CpuCadence,CpuAsync models="mlp cnn" ;;
              cuda:0,cuda:0) modes=CpuCadence,CpuAsync models=resnet ;;
              *) modes=CpuSync,CpuCadence,CpuAsync,NcclSync,NcclCadence models="mlp cnn resnet" ;;
            esac
            for model in $models; do
              case " ${DDP_MODELS:-mlp cnn resnet} " in *" $model "*) ;; *) continue ;; esac
              epochs=20
              [ "$model" = resnet ] && epochs=10
              node --expose-gc --import tsx bench/ddp.ts --model $model --devices "$devices" --modes $modes \
                ${DDP_REFERENCES+--references "$DDP_REFERENCES"} \
                --root "$root/.device/fashion-mnist" --split test --samples 8000 --epochs $epochs \
                ${OUT:+--json "$OUT/ddp-gpu-$model-${devices//[:,]/_}.json"}
            done
          done
          [ "$gpus" -ge 2 ] || echo "ddp-gpu: one GPU here, so no two-GPU run") 2>&1 | log ddp-gpu || status=1
      else echo "ddp-gpu skipped: no .device/fashion-mnist (gpu-pack.sh copies it from Debian's dataset-fashion-mnist)"; fi ;;
    *) echo "unknown phase $phase"; status=2 ;;
  esac
done
exit $status

// Module initialisation only: the allocator's settings once per process, one AddonState per
// environment, then every op family.
#include <napi.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "addon-state.h"
#include "call.h"
#include "gemm-cpu.h"

namespace {

// glibc maps every block over 128 KiB afresh and unmaps it when freed (its threshold only rises
// as such blocks are freed, and the heap's top is trimmed back to the system past 128 KiB too),
// so a training step's activations, a few hundred KiB to a few MiB each, came back as fresh
// pages every step: page faults and zeroing were a third of a small CNN's CPU step. Blocks up
// to 16 MiB now come from the heap, and the heap keeps up to 64 MiB free at its top. Once per
// process; FLODL_MALLOC=default keeps glibc's settings, and glibc's own MALLOC_MMAP_THRESHOLD_
// and MALLOC_TRIM_THRESHOLD_ win where set.
void tuneAllocator() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    const char* choice = std::getenv("FLODL_MALLOC");
    if (choice != nullptr && std::strcmp(choice, "default") == 0) return;
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 16 << 20);
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") == nullptr) mallopt(M_TRIM_THRESHOLD, 64 << 20);
  });
#endif
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  tuneAllocator();
  flodl::registerOneDnnMatmul();
  auto* state = new flodl::AddonState(env);
  env.SetInstanceData<flodl::AddonState>(state);  // deleted with the environment
  flodl::Registry registry(env, exports, state);
  flodl::registerRuntimeOps(registry);
  flodl::registerCreationOps(registry);
  flodl::registerElementwiseOps(registry);
  flodl::registerReductionOps(registry);
  flodl::registerShapeOps(registry);
  flodl::registerLinalgOps(registry);
  flodl::registerInplaceOps(registry);
  flodl::registerAutogradOps(registry);
  flodl::registerNnOps(registry);
  flodl::registerLossOps(registry);
  flodl::registerRnnOps(registry);
  flodl::registerOptimOps(registry);
  flodl::registerAveragingOps(registry);
  flodl::registerCudaOps(registry);
  flodl::registerDistributedOps(registry);
  return exports;
}

}  // namespace

NODE_API_MODULE(flodl_tensor_native, Init)

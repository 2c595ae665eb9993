// Module initialisation only: one AddonState per environment, then every op family.
#include <napi.h>

#include "addon-state.h"
#include "call.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
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

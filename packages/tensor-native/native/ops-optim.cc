// Fused optimizer kernels of libtorch 2.x (one multi-tensor CUDA kernel per step). Older
// libtorch builds and CPU-only builds do not register these entries; @flodl/nn checks
// `aten.has('fusedAdam')` and falls back to per-parameter in-place ops.
#include <ATen/ATen.h>
#include <torch/version.h>

#include "call.h"

#if TORCH_VERSION_MAJOR >= 2 && defined(FLODL_CUDA)
#define FLODL_FUSED_ADAM 1
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1
#define FLODL_FUSED_ADAMW 1
#endif
#endif

namespace flodl {
namespace {

#ifdef FLODL_FUSED_ADAM
// fusedAdam(params[], grads[], expAvgs[], expAvgSqs[], maxExpAvgSqs[], steps[], lr, beta1, beta2,
//           weightDecay, eps, amsgrad, maximize, decoupled)
// `steps` are float32 scalar tensors on the parameters' device, incremented by the kernel.
FLODL_OP(fusedAdam) {
  std::vector<at::Tensor> params = c.tensors(0);
  const std::vector<at::Tensor> grads = c.tensors(1);
  std::vector<at::Tensor> expAvgs = c.tensors(2);
  std::vector<at::Tensor> expAvgSqs = c.tensors(3);
  std::vector<at::Tensor> maxExpAvgSqs = c.isAbsent(4) ? std::vector<at::Tensor>{} : c.tensors(4);
  std::vector<at::Tensor> steps = c.tensors(5);
  const double lr = c.number(6);
  const double beta1 = c.number(7);
  const double beta2 = c.number(8);
  const double weightDecay = c.number(9);
  const double eps = c.number(10);
  const bool amsgrad = c.flag(11);
  const bool maximize = c.flag(12);
  const bool decoupled = c.flag(13);
  if (decoupled) {
#ifdef FLODL_FUSED_ADAMW
    at::_fused_adamw_(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps, lr, beta1, beta2, weightDecay, eps,
                      amsgrad, maximize);
#else
    c.state.fail("ERR_NATIVE", c.op, "this libtorch has no fused AdamW kernel");
#endif
  } else {
    at::_fused_adam_(params, grads, expAvgs, expAvgSqs, maxExpAvgSqs, steps, lr, beta1, beta2, weightDecay, eps,
                     amsgrad, maximize);
  }
  return c.undefined();
}
#endif

}  // namespace

void registerOptimOps(Registry& r) {
#ifdef FLODL_FUSED_ADAM
  FLODL_REGISTER(r, fusedAdam);
#else
  (void)r;
#endif
}

}  // namespace flodl

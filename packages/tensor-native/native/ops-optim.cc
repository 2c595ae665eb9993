// Multi-tensor optimizer steps of libtorch 2.x: the fused Adam/AdamW kernels (one CUDA kernel
// per step; CUDA builds) and the foreach Adam/AdamW step (a dozen multi-tensor kernels for the
// whole group, PyTorch's default for CUDA parameters). Builds without them do not register
// these entries; @flodl/nn checks `aten.has(...)` and falls back to per-parameter ops.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include "call.h"

#if TORCH_VERSION_MAJOR >= 2
#define FLODL_FOREACH_ADAM 1
#endif

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

#ifdef FLODL_FOREACH_ADAM
// Argument i as a list of numbers, each turned into a Scalar (per-tensor step sizes).
std::vector<at::Scalar> scalarList(Call& c, size_t i, size_t expected) {
  if (!c.info[i].IsArray()) c.invalid(i, "an array of numbers");
  const Napi::Array array = c.info[i].As<Napi::Array>();
  if (array.Length() != expected) c.invalid(i, "one number per parameter");
  std::vector<at::Scalar> out;
  out.reserve(expected);
  for (uint32_t k = 0; k < array.Length(); ++k) {
    const Napi::Value value = array.Get(k);
    if (!value.IsNumber()) c.invalid(i, "an array of numbers");
    out.emplace_back(value.As<Napi::Number>().DoubleValue());
  }
  return out;
}

// foreachAdam(params[], grads[], expAvgs[], expAvgSqs[], maxExpAvgSqs[]?, stepSizes[],
//             biasCorrection2Sqrts[], lr, beta1, beta2, weightDecay, eps, amsgrad, maximize, decoupled)
// One Adam/AdamW step over a whole group with multi-tensor kernels, op for op as PyTorch's
// _multi_tensor_adam (non-capturable): stepSizes[k] = -lr / (1 - beta1^step_k) and
// biasCorrection2Sqrts[k] = sqrt(1 - beta2^step_k), with the steps counted by the caller.
FLODL_OP(foreachAdam) {
  std::vector<at::Tensor> params = c.tensors(0);
  std::vector<at::Tensor> grads = c.tensors(1);
  std::vector<at::Tensor> expAvgs = c.tensors(2);
  std::vector<at::Tensor> expAvgSqs = c.tensors(3);
  std::vector<at::Tensor> maxExpAvgSqs = c.isAbsent(4) ? std::vector<at::Tensor>{} : c.tensors(4);
  const size_t n = params.size();
  if (grads.size() != n || expAvgs.size() != n || expAvgSqs.size() != n) c.invalid(1, "one entry per parameter");
  const std::vector<at::Scalar> stepSizes = scalarList(c, 5, n);
  const std::vector<at::Scalar> biasCorrection2Sqrts = scalarList(c, 6, n);
  const double lr = c.number(7);
  const double beta1 = c.number(8);
  const double beta2 = c.number(9);
  const double weightDecay = c.number(10);
  const double eps = c.number(11);
  const bool amsgrad = c.flag(12);
  const bool maximize = c.flag(13);
  const bool decoupled = c.flag(14);
  if (amsgrad && maxExpAvgSqs.size() != n) c.invalid(4, "one max_exp_avg_sq per parameter with amsgrad");
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> directions = maximize ? at::_foreach_neg(grads) : grads;
  if (weightDecay != 0) {
    if (decoupled) {
      at::_foreach_mul_(params, at::Scalar(1 - lr * weightDecay));
    } else {
      directions = at::_foreach_add(directions, params, at::Scalar(weightDecay));
    }
  }
  at::_foreach_lerp_(expAvgs, directions, at::Scalar(1 - beta1));
  at::_foreach_mul_(expAvgSqs, at::Scalar(beta2));
  at::_foreach_addcmul_(expAvgSqs, directions, directions, at::Scalar(1 - beta2));
  directions.clear();
  std::vector<at::Tensor> denominators;
  if (amsgrad) {
    at::_foreach_maximum_(maxExpAvgSqs, expAvgSqs);
    denominators = at::_foreach_sqrt(maxExpAvgSqs);
  } else {
    denominators = at::_foreach_sqrt(expAvgSqs);
  }
  at::_foreach_div_(denominators, at::ArrayRef<at::Scalar>(biasCorrection2Sqrts));
  at::_foreach_add_(denominators, at::Scalar(eps));
  at::_foreach_addcdiv_(params, expAvgs, denominators, at::ArrayRef<at::Scalar>(stepSizes));
  return c.undefined();
}
#endif

}  // namespace

void registerOptimOps(Registry& r) {
  (void)r;
#ifdef FLODL_FOREACH_ADAM
  FLODL_REGISTER(r, foreachAdam);
#endif
#ifdef FLODL_FUSED_ADAM
  FLODL_REGISTER(r, fusedAdam);
#endif
}

}  // namespace flodl

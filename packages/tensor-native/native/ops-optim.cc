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

#if defined(FLODL_FUSED_ADAM) || defined(FLODL_FOREACH_ADAM)
// What both Adam kernels take: the group's lists from argument 0 on (params, grads, both
// moments, the maxima with amsgrad, else absent) and its settings from argument `first` on
// (lr, beta1, beta2, weightDecay, eps, amsgrad, maximize, decoupled).
struct AdamGroup {
  std::vector<at::Tensor> params, grads, expAvgs, expAvgSqs, maxExpAvgSqs;
  double lr, beta1, beta2, weightDecay, eps;
  bool amsgrad, maximize, decoupled;
};

AdamGroup readAdamGroup(Call& c, size_t first) {
  AdamGroup g{c.tensors(0),
              c.tensors(1),
              c.tensors(2),
              c.tensors(3),
              c.isAbsent(4) ? std::vector<at::Tensor>{} : c.tensors(4),
              c.number(first),
              c.number(first + 1),
              c.number(first + 2),
              c.number(first + 3),
              c.number(first + 4),
              c.flag(first + 5),
              c.flag(first + 6),
              c.flag(first + 7)};
  const size_t n = g.params.size();
  if (g.grads.size() != n || g.expAvgs.size() != n || g.expAvgSqs.size() != n) c.invalid(1, "one entry per parameter");
  if (g.amsgrad && g.maxExpAvgSqs.size() != n) c.invalid(4, "one max_exp_avg_sq per parameter with amsgrad");
  return g;
}
#endif

#ifdef FLODL_FUSED_ADAM
// fusedAdam(params[], grads[], expAvgs[], expAvgSqs[], maxExpAvgSqs[]?, steps[], lr, beta1, beta2,
//           weightDecay, eps, amsgrad, maximize, decoupled)
// `steps` are float32 scalar tensors on the parameters' device, incremented by the kernel.
FLODL_OP(fusedAdam) {
  AdamGroup g = readAdamGroup(c, 6);
  std::vector<at::Tensor> steps = c.tensors(5);
  if (g.decoupled) {
#ifdef FLODL_FUSED_ADAMW
    at::_fused_adamw_(g.params, g.grads, g.expAvgs, g.expAvgSqs, g.maxExpAvgSqs, steps, g.lr, g.beta1, g.beta2,
                      g.weightDecay, g.eps, g.amsgrad, g.maximize);
#else
    c.state.fail("ERR_NATIVE", c.op, "this libtorch has no fused AdamW kernel");
#endif
  } else {
    at::_fused_adam_(g.params, g.grads, g.expAvgs, g.expAvgSqs, g.maxExpAvgSqs, steps, g.lr, g.beta1, g.beta2,
                     g.weightDecay, g.eps, g.amsgrad, g.maximize);
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
  AdamGroup g = readAdamGroup(c, 7);
  const std::vector<at::Scalar> stepSizes = scalarList(c, 5, g.params.size());
  const std::vector<at::Scalar> biasCorrection2Sqrts = scalarList(c, 6, g.params.size());
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> directions = g.maximize ? at::_foreach_neg(g.grads) : g.grads;
  if (g.weightDecay != 0) {
    if (g.decoupled) {
      at::_foreach_mul_(g.params, at::Scalar(1 - g.lr * g.weightDecay));
    } else {
      directions = at::_foreach_add(directions, g.params, at::Scalar(g.weightDecay));
    }
  }
  at::_foreach_lerp_(g.expAvgs, directions, at::Scalar(1 - g.beta1));
  at::_foreach_mul_(g.expAvgSqs, at::Scalar(g.beta2));
  at::_foreach_addcmul_(g.expAvgSqs, directions, directions, at::Scalar(1 - g.beta2));
  directions.clear();
  std::vector<at::Tensor> denominators;
  if (g.amsgrad) {
    at::_foreach_maximum_(g.maxExpAvgSqs, g.expAvgSqs);
    denominators = at::_foreach_sqrt(g.maxExpAvgSqs);
  } else {
    denominators = at::_foreach_sqrt(g.expAvgSqs);
  }
  at::_foreach_div_(denominators, at::ArrayRef<at::Scalar>(biasCorrection2Sqrts));
  at::_foreach_add_(denominators, at::Scalar(g.eps));
  at::_foreach_addcdiv_(g.params, g.expAvgs, denominators, at::ArrayRef<at::Scalar>(stepSizes));
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

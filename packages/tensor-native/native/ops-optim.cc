// The optimizer step's multi-tensor ops: libtorch 2.x's fused Adam/AdamW kernels (one CUDA
// kernel per step; CUDA builds) and foreach Adam/AdamW step (PyTorch's multi-tensor order, the
// default for CUDA parameters), and, on every libtorch, one call per group for the Adam/AdamW,
// SGD, RMSprop, Adagrad, NAdam and RAdam updates op for op as the per-parameter ones (bit for bit
// equal on the CPU, where libtorch's _foreach_* ops apply the per-tensor op to each entry; the
// last four run the per-parameter ops on every device), zeroing every gradient of a list and the
// clipping of their total norm. Builds without the 2.x kernels do not register those entries;
// @flodl/nn checks `aten.has(...)` and falls back to per-parameter ops.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include <cmath>

#include "adam-cpu.h"
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

// The parameters of a group, argument 0: at least one.
std::vector<at::Tensor> groupParams(Call& c) {
  std::vector<at::Tensor> params = c.tensors(0);
  if (params.empty()) c.invalid(0, "at least one parameter");
  return params;
}

// The gradients of a group: argument i as a list, or, when absent, the accumulated gradient of
// every parameter (each must have one; @flodl/nn asks `hasGrads` first).
std::vector<at::Tensor> groupGrads(Call& c, size_t i, const std::vector<at::Tensor>& params) {
  if (!c.isAbsent(i)) {
    std::vector<at::Tensor> grads = c.tensors(i);
    if (grads.size() != params.size()) c.invalid(i, "one gradient per parameter");
    return grads;
  }
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const at::Tensor& param : params) {
    if (!param.grad().defined()) c.invalid(0, "parameters that all have a gradient");
    grads.push_back(param.grad());
  }
  return grads;
}

// What the Adam steps take: the group's lists from argument 0 on (params, grads or absent for
// the params' own, both moments, the maxima with amsgrad, else absent) and its settings from argument `first` on
// (lr, beta1, beta2, weightDecay, eps, amsgrad, maximize, decoupled).
struct AdamGroup {
  std::vector<at::Tensor> params, grads, expAvgs, expAvgSqs, maxExpAvgSqs;
  double lr, beta1, beta2, weightDecay, eps;
  bool amsgrad, maximize, decoupled;
};

AdamGroup readAdamGroup(Call& c, size_t first) {
  std::vector<at::Tensor> params = c.tensors(0);
  std::vector<at::Tensor> grads = groupGrads(c, 1, params);
  AdamGroup g{std::move(params),
              std::move(grads),
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
  if (n == 0) c.invalid(0, "at least one parameter");
  if (g.expAvgs.size() != n || g.expAvgSqs.size() != n) c.invalid(2, "one entry per parameter");
  if (g.amsgrad && g.maxExpAvgSqs.size() != n) c.invalid(4, "one max_exp_avg_sq per parameter with amsgrad");
  return g;
}

// The multi-tensor steps' first ops: the gradients (negated with maximize) with the L2 penalty
// added, or the parameters shrunk by the decoupled one (AdamW).
std::vector<at::Tensor> decayedDirections(AdamGroup& g) {
  std::vector<at::Tensor> directions = g.maximize ? at::_foreach_neg(g.grads) : g.grads;
  if (g.weightDecay != 0) {
    if (g.decoupled) {
      at::_foreach_mul_(g.params, at::Scalar(1 - g.lr * g.weightDecay));
    } else {
      directions = at::_foreach_add(directions, g.params, at::Scalar(g.weightDecay));
    }
  }
  return directions;
}

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

#ifdef FLODL_FUSED_ADAM
// fusedAdam(params[], grads[], expAvgs[], expAvgSqs[], maxExpAvgSqs[]?, steps[], lr, beta1, beta2,
//           weightDecay, eps, amsgrad, maximize, decoupled)
// `steps` are float32 scalar tensors on the parameters' device, the counts before this step: one
// multi-tensor add moves them on, then the kernel reads them (PyTorch's fused Adam, two launches
// for the group; both are recorded into a captured graph). Registered as `fusedAdamW` too where
// libtorch has the AdamW kernel (decoupled true).
FLODL_OP(fusedAdam) {
  AdamGroup g = readAdamGroup(c, 6);
  std::vector<at::Tensor> steps = c.tensors(5);
  if (steps.size() != g.params.size()) c.invalid(5, "one step count per parameter");
  at::NoGradGuard noGrad;
  at::_foreach_add_(steps, at::Scalar(1));
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
  std::vector<at::Tensor> directions = decayedDirections(g);
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

// The gradients the parameters have, skipping those without one.
std::vector<at::Tensor> definedGrads(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const at::Tensor& param : params) {
    if (param.grad().defined()) grads.push_back(param.grad());
  }
  return grads;
}

// True when every tensor is on the CPU: there libtorch's _foreach_* ops loop over the per-tensor
// ops anyway, so the steps below run the whole update of one parameter before the next (its
// tensors stay in cache) and launch the same kernels as the per-parameter update.
bool allOnCpu(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads) {
  for (const at::Tensor& t : params) if (!t.is_cpu()) return false;
  for (const at::Tensor& t : grads) if (!t.is_cpu()) return false;
  return true;
}

// One parameter's Adam/AdamW update, op for op as AdamBase.stepParameter in @flodl/nn.
void adamOne(AdamTensors& t, const AdamSettings& s, double stepSize, double biasCorrection2Sqrt) {
  at::Tensor direction = s.maximize ? t.grad.neg() : t.grad;
  if (s.weightDecay != 0) {
    if (s.decoupled) {
      t.param.mul_(at::Scalar(1 - s.lr * s.weightDecay));
    } else {
      direction = direction.add(t.param, at::Scalar(s.weightDecay));
    }
  }
  t.expAvg.mul_(at::Scalar(s.beta1)).add_(direction, at::Scalar(1 - s.beta1));
  t.expAvgSq.mul_(at::Scalar(s.beta2)).addcmul_(direction, direction, at::Scalar(1 - s.beta2));
  at::Tensor second = t.expAvgSq;
  if (s.amsgrad) {
    t.maxExpAvgSq.copy_(at::maximum(t.maxExpAvgSq, t.expAvgSq));
    second = t.maxExpAvgSq;
  }
  const at::Tensor denominator = second.sqrt().div(at::Scalar(biasCorrection2Sqrt)).add_(at::Scalar(s.eps));
  t.param.addcdiv_(t.expAvg, denominator, at::Scalar(stepSize));
}

// Parameter k of a group: in one pass where adam-cpu.cc's kernel equals adamOne bit for bit, else
// op for op.
void adamCpu(AdamGroup& g, size_t k, double stepSize, double biasCorrection2Sqrt) {
  AdamTensors t{g.params[k], g.grads[k], g.expAvgs[k], g.expAvgSqs[k],
                g.amsgrad ? g.maxExpAvgSqs[k] : at::Tensor()};
  const AdamSettings s{g.lr, g.beta1, g.beta2, g.weightDecay, g.eps, g.amsgrad, g.maximize, g.decoupled};
  if (adamOnePassTakes(t, s, adamOne)) {
    adamOnePass(t, s, stepSize, biasCorrection2Sqrt);
  } else {
    adamOne(t, s, stepSize, biasCorrection2Sqrt);
  }
}

// The same update over the whole group with multi-tensor ops, one op for every parameter at a time.
void adamForeach(AdamGroup& g, at::ArrayRef<at::Scalar> stepSizes, at::ArrayRef<at::Scalar> biasCorrection2Sqrts) {
  std::vector<at::Tensor> directions = decayedDirections(g);
  at::_foreach_mul_(g.expAvgs, at::Scalar(g.beta1));
  at::_foreach_add_(g.expAvgs, directions, at::Scalar(1 - g.beta1));
  at::_foreach_mul_(g.expAvgSqs, at::Scalar(g.beta2));
  at::_foreach_addcmul_(g.expAvgSqs, directions, directions, at::Scalar(1 - g.beta2));
  directions.clear();
  if (g.amsgrad) at::_foreach_maximum_(g.maxExpAvgSqs, g.expAvgSqs);
  std::vector<at::Tensor> denominators = at::_foreach_sqrt(g.amsgrad ? g.maxExpAvgSqs : g.expAvgSqs);
  at::_foreach_div_(denominators, biasCorrection2Sqrts);
  at::_foreach_add_(denominators, at::Scalar(g.eps));
  at::_foreach_addcdiv_(g.params, g.expAvgs, denominators, stepSizes);
}

// foreachAdamExact(params[], grads[]?, expAvgs[], expAvgSqs[], maxExpAvgSqs[]?, stepSizes[],
//                  biasCorrection2Sqrts[], lr, beta1, beta2, weightDecay, eps, amsgrad, maximize, decoupled)
// One Adam/AdamW step over a whole group in one call, op for op as the per-parameter update
// (PyTorch's _single_tensor_adam: the first moment by mul_ and add_, not lerp), so on the CPU
// it is bit for bit that update; the arguments are foreachAdam's. Grads absent: the params'.
FLODL_OP(foreachAdamExact) {
  AdamGroup g = readAdamGroup(c, 7);
  const size_t n = g.params.size();
  const std::vector<at::Scalar> stepSizes = scalarList(c, 5, n);
  const std::vector<at::Scalar> biasCorrection2Sqrts = scalarList(c, 6, n);
  at::NoGradGuard noGrad;
  if (allOnCpu(g.params, g.grads)) {
    for (size_t k = 0; k < n; ++k) adamCpu(g, k, stepSizes[k].toDouble(), biasCorrection2Sqrts[k].toDouble());
  } else {
    adamForeach(g, stepSizes, biasCorrection2Sqrts);
  }
  return c.undefined();
}

// adamOnePassKernel(tensor) -> string | null: which one-pass CPU Adam kernel equals the op-by-op
// update bit for bit for the tensor's dtype on this machine and libtorch (adam-cpu.h), null for none.
FLODL_OP(adamOnePassKernel) {
  const char* kernel = flodl::adamOnePassKernel(c.tensor(0).scalar_type(), adamOne);
  if (kernel == nullptr) return c.env.Null();
  return Napi::String::New(c.env, kernel);
}

// What an SGD step takes: the group's lists, its momentum buffers (undefined where a parameter
// has none yet) and its settings.
struct SgdGroup {
  std::vector<at::Tensor> params, grads, buffers;
  double lr, momentum, dampening, weightDecay;
  bool nesterov, maximize;
};

// Parameter k's SGD update, op for op as SGD.stepParameter in @flodl/nn; a missing momentum
// buffer starts as a clone of the direction.
void sgdOne(SgdGroup& g, size_t k) {
  at::Tensor direction = g.maximize ? g.grads[k].neg() : g.grads[k];
  if (g.weightDecay != 0) direction = direction.add(g.params[k], at::Scalar(g.weightDecay));
  if (g.momentum != 0) {
    at::Tensor& buffer = g.buffers[k];
    if (!buffer.defined()) {
      buffer = direction.clone();
    } else {
      buffer.mul_(at::Scalar(g.momentum)).add_(direction, at::Scalar(1 - g.dampening));
    }
    direction = g.nesterov ? direction.add(buffer, at::Scalar(g.momentum)) : buffer;
  }
  g.params[k].add_(direction, at::Scalar(-g.lr));
}

// The same update over the whole group with multi-tensor ops.
void sgdForeach(SgdGroup& g) {
  std::vector<at::Tensor> directions = g.maximize ? at::_foreach_neg(g.grads) : g.grads;
  if (g.weightDecay != 0) directions = at::_foreach_add(directions, g.params, at::Scalar(g.weightDecay));
  if (g.momentum == 0) {
    at::_foreach_add_(g.params, directions, at::Scalar(-g.lr));
    return;
  }
  std::vector<at::Tensor> running, runningDirections;
  for (size_t k = 0; k < g.params.size(); ++k) {
    if (g.buffers[k].defined()) {
      running.push_back(g.buffers[k]);
      runningDirections.push_back(directions[k]);
    } else {
      g.buffers[k] = directions[k].clone();
    }
  }
  if (!running.empty()) {
    at::_foreach_mul_(running, at::Scalar(g.momentum));
    at::_foreach_add_(running, runningDirections, at::Scalar(1 - g.dampening));
  }
  if (g.nesterov) directions = at::_foreach_add(directions, g.buffers, at::Scalar(g.momentum));
  at::_foreach_add_(g.params, g.nesterov ? directions : g.buffers, at::Scalar(-g.lr));
}

// Argument i as one momentum buffer (or null) per parameter: undefined tensors where null.
std::vector<at::Tensor> momentumBuffers(Call& c, size_t i, size_t n) {
  if (!c.info[i].IsArray() || c.info[i].As<Napi::Array>().Length() != n) {
    c.invalid(i, "one momentum buffer (or null) per parameter");
  }
  const Napi::Array list = c.info[i].As<Napi::Array>();
  std::vector<at::Tensor> buffers(n);
  for (uint32_t k = 0; k < n; ++k) {
    const Napi::Value entry = list.Get(k);
    if (entry.IsNull() || entry.IsUndefined()) continue;
    if (!entry.IsNumber()) c.invalid(i, "an array of Tensors or nulls");
    at::Tensor* found = c.state.tensors().find(entry.As<Napi::Number>().DoubleValue());
    if (found == nullptr) c.state.fail("ERR_DISPOSED", c.op, "momentum buffer " + std::to_string(k) + " was disposed");
    buffers[k] = *found;
  }
  return buffers;
}

// foreachSgd(params[], grads[]?, momentumBuffers[]?, lr, momentum, dampening, weightDecay,
//            nesterov, maximize) -> (Tensor | null)[] | undefined
// One SGD step over a whole group in one call, op for op as the per-parameter update (PyTorch's
// _single_tensor_sgd). With momentum, momentumBuffers has one entry per parameter, null where
// the parameter has none yet: that buffer starts as a clone of the direction and comes back in
// the result at its index (null elsewhere). Grads absent: the params'.
FLODL_OP(foreachSgd) {
  std::vector<at::Tensor> params = groupParams(c);
  const size_t n = params.size();
  std::vector<at::Tensor> grads = groupGrads(c, 1, params);
  SgdGroup g{std::move(params), std::move(grads), {}, c.number(3), c.number(4), c.number(5), c.number(6),
             c.flag(7), c.flag(8)};
  g.buffers = g.momentum != 0 ? momentumBuffers(c, 2, n) : std::vector<at::Tensor>(n);
  std::vector<bool> fresh(n);
  for (size_t k = 0; k < n; ++k) fresh[k] = g.momentum != 0 && !g.buffers[k].defined();
  {
    at::NoGradGuard noGrad;
    if (allOnCpu(g.params, g.grads)) {
      for (size_t k = 0; k < n; ++k) sgdOne(g, k);
    } else {
      sgdForeach(g);
    }
  }
  if (g.momentum == 0) return c.undefined();
  Napi::Array out = Napi::Array::New(c.env, n);
  for (size_t k = 0; k < n; ++k) {
    out.Set(static_cast<uint32_t>(k), fresh[k] ? c.state.adopt(g.buffers[k]) : c.env.Null());
  }
  return out;
}

// Argument i as one tensor per parameter (a state list of the group).
std::vector<at::Tensor> stateList(Call& c, size_t i, size_t n, const char* what) {
  std::vector<at::Tensor> list = c.tensors(i);
  if (list.size() != n) c.invalid(i, what);
  return list;
}

// foreachRmsprop(params[], grads[]?, squareAvgs[], momentumBuffers[]?, gradAvgs[]?, lr, alpha, eps,
//                weightDecay, momentum, centered, maximize)
// One RMSprop step over a whole group in one call, op for op as RMSprop.stepParameter in
// @flodl/nn (PyTorch's _single_tensor_rmsprop), so it is bit for bit that update on every
// device. momentumBuffers with momentum > 0, gradAvgs when centered (absent otherwise). Grads
// absent: the params'.
FLODL_OP(foreachRmsprop) {
  const std::vector<at::Tensor> params = groupParams(c);
  const size_t n = params.size();
  const std::vector<at::Tensor> grads = groupGrads(c, 1, params);
  const std::vector<at::Tensor> squareAvgs = stateList(c, 2, n, "one square average per parameter");
  const double lr = c.number(5), alpha = c.number(6), eps = c.number(7), weightDecay = c.number(8);
  const double momentum = c.number(9);
  const bool centered = c.flag(10), maximize = c.flag(11);
  const std::vector<at::Tensor> buffers = momentum > 0
      ? stateList(c, 3, n, "one momentum buffer per parameter with momentum")
      : std::vector<at::Tensor>{};
  const std::vector<at::Tensor> gradAvgs = centered
      ? stateList(c, 4, n, "one gradient average per parameter when centered")
      : std::vector<at::Tensor>{};
  at::NoGradGuard noGrad;
  for (size_t k = 0; k < n; ++k) {
    at::Tensor direction = maximize ? grads[k].neg() : grads[k];
    if (weightDecay != 0) direction = direction.add(params[k], at::Scalar(weightDecay));
    squareAvgs[k].mul_(at::Scalar(alpha)).addcmul_(direction, direction, at::Scalar(1 - alpha));
    at::Tensor average;
    if (centered) {
      gradAvgs[k].mul_(at::Scalar(alpha)).add_(direction, at::Scalar(1 - alpha));
      average = squareAvgs[k].clone().addcmul_(gradAvgs[k], gradAvgs[k], at::Scalar(-1)).sqrt_();
    } else {
      average = squareAvgs[k].sqrt();
    }
    average.add_(at::Scalar(eps));
    if (momentum > 0) {
      buffers[k].mul_(at::Scalar(momentum)).addcdiv_(direction, average);
      params[k].add_(buffers[k], at::Scalar(-lr));
    } else {
      params[k].addcdiv_(direction, average, at::Scalar(-lr));
    }
  }
  return c.undefined();
}

// foreachAdagrad(params[], grads[]?, sums[], lrs[], weightDecay, eps, maximize)
// One Adagrad step over a whole group in one call, op for op as Adagrad.stepParameter in
// @flodl/nn (PyTorch's _single_tensor_adagrad, dense): lrs holds each parameter's decayed
// learning rate for this step. Grads absent: the params'.
FLODL_OP(foreachAdagrad) {
  const std::vector<at::Tensor> params = groupParams(c);
  const size_t n = params.size();
  const std::vector<at::Tensor> grads = groupGrads(c, 1, params);
  const std::vector<at::Tensor> sums = stateList(c, 2, n, "one accumulator per parameter");
  const std::vector<at::Scalar> lrs = scalarList(c, 3, n);
  const double weightDecay = c.number(4), eps = c.number(5);
  const bool maximize = c.flag(6);
  at::NoGradGuard noGrad;
  for (size_t k = 0; k < n; ++k) {
    at::Tensor direction = maximize ? grads[k].neg() : grads[k];
    if (weightDecay != 0) direction = direction.add(params[k], at::Scalar(weightDecay));
    sums[k].addcmul_(direction, direction, at::Scalar(1));
    const at::Tensor deviation = sums[k].sqrt().add_(at::Scalar(eps));
    params[k].addcdiv_(direction, deviation, at::Scalar(-lrs[k].toDouble()));
  }
  return c.undefined();
}

// The moments' update NAdam and RAdam share with Adam's per-parameter form: the L2 penalty on
// the gradient, then m ← β1·m + (1 − β1)·g and v ← β2·v + (1 − β2)·g².
at::Tensor updateMoments(const at::Tensor& param, const at::Tensor& grad, const at::Tensor& expAvg,
                         const at::Tensor& expAvgSq, double beta1, double beta2, double weightDecay) {
  const at::Tensor direction = weightDecay != 0 ? grad.add(param, at::Scalar(weightDecay)) : grad;
  expAvg.mul_(at::Scalar(beta1)).add_(direction, at::Scalar(1 - beta1));
  expAvgSq.mul_(at::Scalar(beta2)).addcmul_(direction, direction, at::Scalar(1 - beta2));
  return direction;
}

// What NAdam and RAdam steps take first: the group's parameters, gradients (absent: the params')
// and both moments, arguments 0-3.
struct MomentGroup {
  std::vector<at::Tensor> params, grads, expAvgs, expAvgSqs;
};

MomentGroup readMomentGroup(Call& c) {
  std::vector<at::Tensor> params = groupParams(c);
  const size_t n = params.size();
  std::vector<at::Tensor> grads = groupGrads(c, 1, params);
  std::vector<at::Tensor> expAvgs = stateList(c, 2, n, "one first moment per parameter");
  std::vector<at::Tensor> expAvgSqs = stateList(c, 3, n, "one second moment per parameter");
  return {std::move(params), std::move(grads), std::move(expAvgs), std::move(expAvgSqs)};
}

// foreachNadam(params[], grads[]?, expAvgs[], expAvgSqs[], biasCorrection2s[], gradSteps[],
//              avgSteps[], beta1, beta2, weightDecay, eps)
// One NAdam step over a whole group in one call, op for op as NAdam.stepParameter in @flodl/nn:
// the per-parameter scalars (the second moment's bias correction and the two step sizes, from
// the μ products the state keeps) come computed. Grads absent: the params'.
FLODL_OP(foreachNadam) {
  const MomentGroup g = readMomentGroup(c);
  const size_t n = g.params.size();
  const std::vector<at::Scalar> biasCorrection2s = scalarList(c, 4, n);
  const std::vector<at::Scalar> gradSteps = scalarList(c, 5, n);
  const std::vector<at::Scalar> avgSteps = scalarList(c, 6, n);
  const double beta1 = c.number(7), beta2 = c.number(8), weightDecay = c.number(9), eps = c.number(10);
  at::NoGradGuard noGrad;
  for (size_t k = 0; k < n; ++k) {
    const at::Tensor direction =
        updateMoments(g.params[k], g.grads[k], g.expAvgs[k], g.expAvgSqs[k], beta1, beta2, weightDecay);
    const at::Tensor denominator = g.expAvgSqs[k].div(biasCorrection2s[k]).sqrt().add_(at::Scalar(eps));
    g.params[k].addcdiv_(direction, denominator, gradSteps[k]);
    g.params[k].addcdiv_(g.expAvgs[k], denominator, avgSteps[k]);
  }
  return c.undefined();
}

// foreachRadam(params[], grads[]?, expAvgs[], expAvgSqs[], biasCorrection1s[], biasCorrection2Sqrts[],
//              rectifications[], lr, beta1, beta2, weightDecay, eps)
// One RAdam step over a whole group in one call, op for op as RAdam.stepParameter in @flodl/nn;
// a parameter whose rectification is 0 takes the unrectified step (ρₜ ≤ 5). Grads absent: the params'.
FLODL_OP(foreachRadam) {
  const MomentGroup g = readMomentGroup(c);
  const size_t n = g.params.size();
  const std::vector<at::Scalar> biasCorrection1s = scalarList(c, 4, n);
  const std::vector<at::Scalar> biasCorrection2Sqrts = scalarList(c, 5, n);
  const std::vector<at::Scalar> rectifications = scalarList(c, 6, n);
  const double lr = c.number(7), beta1 = c.number(8), beta2 = c.number(9), weightDecay = c.number(10);
  const double eps = c.number(11);
  at::NoGradGuard noGrad;
  for (size_t k = 0; k < n; ++k) {
    updateMoments(g.params[k], g.grads[k], g.expAvgs[k], g.expAvgSqs[k], beta1, beta2, weightDecay);
    const at::Tensor corrected = g.expAvgs[k].div(biasCorrection1s[k]);
    if (rectifications[k].toDouble() != 0) {
      const at::Tensor adaptiveLr =
          g.expAvgSqs[k].sqrt().add_(at::Scalar(eps)).reciprocal().mul(biasCorrection2Sqrts[k]);
      g.params[k].add_(corrected.mul(at::Scalar(lr)).mul(adaptiveLr).mul(rectifications[k]), at::Scalar(-1));
    } else {
      g.params[k].add_(corrected.mul(at::Scalar(lr)), at::Scalar(-1));
    }
  }
  return c.undefined();
}

// hasGrads(params[]) -> boolean[]: whether each parameter has an accumulated gradient.
FLODL_OP(hasGrads) {
  const std::vector<at::Tensor> params = c.tensors(0);
  Napi::Array out = Napi::Array::New(c.env, params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    out.Set(static_cast<uint32_t>(k), Napi::Boolean::New(c.env, params[k].grad().defined()));
  }
  return out;
}

// zeroGrads(params[], setToNone): clears every gradient of the list in one call: set to none, or
// filled with zeros in place (a gradient built with createGraph cut from its graph first).
FLODL_OP(zeroGrads) {
  const std::vector<at::Tensor> params = c.tensors(0);
  if (c.flag(1)) {
    for (const at::Tensor& param : params) param.mutable_grad() = at::Tensor();
    return c.undefined();
  }
  std::vector<at::Tensor> grads = definedGrads(params);
  for (const at::Tensor& grad : grads) {
    if (grad.grad_fn()) grad.detach_();
  }
  at::NoGradGuard noGrad;
  if (!grads.empty()) at::_foreach_zero_(grads);
  return c.undefined();
}

// gradsNorm(params[], p) -> Tensor | null: the total p-norm of the gradients the parameters
// have (null with none), op for op as clipGradNorm_: the norm of the per-gradient norms, or
// with p = +inf the largest absolute element.
FLODL_OP(gradsNorm) {
  const std::vector<at::Tensor> grads = definedGrads(c.tensors(0));
  const double p = c.number(1);
  if (grads.empty()) return c.env.Null();
  at::NoGradGuard noGrad;
  if (std::isinf(p) && p > 0) {
    std::vector<at::Tensor> norms;
    norms.reserve(grads.size());
    for (const at::Tensor& grad : grads) norms.push_back(at::max(at::abs(grad)));
    return c.result(norms.size() == 1 ? norms[0] : at::max(at::stack(norms, 0)));
  }
  const std::vector<at::Tensor> norms = at::_foreach_norm(grads, at::Scalar(p));
  return c.result(at::linalg_vector_norm(at::stack(norms, 0), at::Scalar(p), c10::nullopt, false, c10::nullopt));
}

// clipGrads(params[], total, maxNorm): multiplies every gradient the parameters have by
// min(1, maxNorm / (total + 1e-6)), computed on the 0-d `total` as clipGradNorm_ does.
FLODL_OP(clipGrads) {
  const std::vector<at::Tensor> grads = definedGrads(c.tensors(0));
  const at::Tensor& total = c.tensor(1);
  const double maxNorm = c.number(2);
  at::NoGradGuard noGrad;
  const at::Tensor coefficient =
      at::clamp(at::mul(at::reciprocal(at::add(total, at::Scalar(1e-6))), at::Scalar(maxNorm)), c10::nullopt,
                at::Scalar(1.0));
  for (const at::Tensor& grad : grads) grad.mul_(coefficient);
  return c.undefined();
}

}  // namespace

void registerOptimOps(Registry& r) {
  FLODL_REGISTER(r, foreachAdamExact);
  FLODL_REGISTER(r, adamOnePassKernel);
  FLODL_REGISTER(r, foreachSgd);
  FLODL_REGISTER(r, foreachRmsprop);
  FLODL_REGISTER(r, foreachAdagrad);
  FLODL_REGISTER(r, foreachNadam);
  FLODL_REGISTER(r, foreachRadam);
  FLODL_REGISTER(r, hasGrads);
  FLODL_REGISTER(r, zeroGrads);
  FLODL_REGISTER(r, gradsNorm);
  FLODL_REGISTER(r, clipGrads);
#ifdef FLODL_FOREACH_ADAM
  FLODL_REGISTER(r, foreachAdam);
#endif
#ifdef FLODL_FUSED_ADAM
  FLODL_REGISTER(r, fusedAdam);
#endif
#ifdef FLODL_FUSED_ADAMW
  r.add("fusedAdamW", &op_fusedAdam);
#endif
}

}  // namespace flodl

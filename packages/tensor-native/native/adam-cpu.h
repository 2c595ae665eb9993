// Adam/AdamW on the CPU in one pass over each parameter: every element goes through the same
// operations, with the same roundings, as the op-by-op update (libtorch's mul_, add_ with alpha,
// addcmul_, maximum, sqrt, div, add_ and addcdiv_), so the result is that update's bit for bit,
// while the parameter, its gradient and both moments are read once instead of a dozen times.
// Whether libtorch's kernels fuse `a + alpha·b` and `self + s·t1·t2` into one rounding depends on
// how libtorch was compiled, so the first use of each dtype checks each candidate kernel against
// the op-by-op update on sample data and keeps the first that agrees to the bit; when none does
// (or the CPU lacks AVX2 and FMA), the op-by-op update stays.
#pragma once

#include <ATen/ATen.h>

namespace flodl {

// The settings of one Adam/AdamW step, as the op-by-op update takes them.
struct AdamSettings {
  double lr, beta1, beta2, weightDecay, eps;
  bool amsgrad, maximize, decoupled;
};

// One parameter's tensors; `maxExpAvgSq` undefined without amsgrad.
struct AdamTensors {
  at::Tensor param, grad, expAvg, expAvgSq, maxExpAvgSq;
};

// The op-by-op update the one-pass kernel must equal (ops-optim.cc's).
using AdamReference = void (*)(AdamTensors& t, const AdamSettings& s, double stepSize, double biasCorrection2Sqrt);

// True when the one-pass kernel updates these tensors bit for bit as `reference` would: contiguous
// CPU tensors of one floating dtype (float32 or float64) and one size, and a kernel that passed
// the check for that dtype (run on first use).
bool adamOnePassTakes(const AdamTensors& t, const AdamSettings& s, AdamReference reference);

// The kernel the check chose for a dtype ("both", "addOnly" or "neither": which of libtorch's
// `a + alpha·b` and `self + s·t1·t2` round once), checking now if not yet; null when the
// op-by-op update stays (no kernel agreed, no AVX2 and FMA, or not float32/float64).
const char* adamOnePassKernel(at::ScalarType dtype, AdamReference reference);

// The update in one pass (stepSize = -lr / (1 - beta1^step), biasCorrection2Sqrt as the op-by-op
// update takes them). Only after adamOnePassTakes said yes.
void adamOnePass(AdamTensors& t, const AdamSettings& s, double stepSize, double biasCorrection2Sqrt);

}  // namespace flodl

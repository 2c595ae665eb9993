// Hot-path helpers. When no input takes part in autograd, the autograd layer of the
// dispatcher only re-dispatches; skipping it gives the same results for less time.
// For a few hot CPU kernels the dispatcher is skipped entirely (at::cpu::*), which is what
// the dispatcher would reach anyway when no autograd, autocast or device key is active.
#pragma once

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

namespace flodl {

inline bool cpuAutocastOn() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

// A dense CPU tensor with nothing for another dispatch key to do: no grad, no lazy conjugate
// or negation, not one of autograd's storage-less zero tensors.
inline bool plainCpu(const at::Tensor& t) {
  return t.is_cpu() && !t.requires_grad() && t.layout() == at::kStrided && !t.is_conj() && !t.is_neg() &&
         !t._is_zerotensor();
}

// True when every tensor can take the direct CPU kernel.
inline bool directCpu(const at::Tensor& a) { return plainCpu(a) && !cpuAutocastOn(); }
inline bool directCpu(const at::Tensor& a, const at::Tensor& b) {
  return plainCpu(a) && plainCpu(b) && !cpuAutocastOn();
}

inline bool needsAutograd(const at::Tensor& a) { return a.requires_grad(); }
inline bool needsAutograd(const at::Tensor& a, const at::Tensor& b) { return a.requires_grad() || b.requires_grad(); }

// Skips the autograd dispatch layer for the rest of the scope when no input needs it.
class BelowAutogradIf {
 public:
  explicit BelowAutogradIf(bool skip) {
    if (skip) guard_.emplace();
  }

 private:
  c10::optional<at::AutoDispatchBelowAutograd> guard_;
};

// Holds the state the dispatcher's autograd kernel sets before it calls a CPU kernel: the ops
// a composite kernel calls inside (a reduction's views and fills, an index kernel's
// temporaries) then dispatch below autograd and ADInplaceOrView. Called directly without it,
// each of those inner ops takes the whole dispatch stack and builds view metadata.
using DirectKernelGuard = at::AutoDispatchBelowADInplaceOrView;

}  // namespace flodl

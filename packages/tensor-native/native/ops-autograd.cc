// libtorch's autograd engine, reached from JS: requires-grad flags, gradients, backward,
// torch.autograd.grad, grad mode. No graph is ever walked here; the engine does it all.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include "call.h"
#include "convert.h"

namespace flodl {
namespace {

FLODL_OP(requiresGrad) { return Napi::Boolean::New(c.env, c.tensor(0).requires_grad()); }

FLODL_OP(setRequiresGrad) {
  at::Tensor& t = c.tensor(0);
  t.set_requires_grad(c.flag(1));
  return c.undefined();
}

FLODL_OP(isLeaf) { return Napi::Boolean::New(c.env, c.tensor(0).is_leaf()); }

FLODL_OP(gradFn) {
  const at::Tensor& t = c.tensor(0);
  const auto& node = t.grad_fn();
  if (!node) return c.env.Null();
  return Napi::String::New(c.env, node->name());
}

// grad(t) -> handle | null: a new handle on the accumulated gradient
FLODL_OP(grad) {
  const at::Tensor& grad = c.tensor(0).grad();
  if (!grad.defined()) return c.env.Null();
  return c.result(grad);
}

// setGrad(t, g | null)
FLODL_OP(setGrad) {
  at::Tensor& t = c.tensor(0);
  if (c.isAbsent(1)) {
    t.mutable_grad() = at::Tensor();
  } else {
    t.mutable_grad() = c.tensor(1);
  }
  return c.undefined();
}

FLODL_OP(retainGrad) {
  c.tensor(0).retain_grad();
  return c.undefined();
}

// detach_(t): cuts t from its graph in place, so the graph's nodes can be freed now.
FLODL_OP(detach_) {
  c.tensor(0).detach_();
  return c.undefined();
}

// backward(t, gradOutput | undefined, retainGraph, createGraph, sever)
FLODL_OP(backward) {
  at::Tensor& t = c.tensor(0);
  torch::autograd::variable_list gradients;
  if (!c.isAbsent(1)) gradients.push_back(c.tensor(1));
  const bool retain = c.flag(2);
  const bool create = c.flag(3);
  torch::autograd::backward({t}, gradients, retain, create);
  // Without retainGraph, drop the output's link to the graph so every node is freed now,
  // not when the JS object is collected. A view cannot be detached in place; its graph goes
  // with its handle.
  if (!retain && c.flag(4) && !t.is_view()) t.detach_();
  return c.undefined();
}

// autogradGrad(outputs[], inputs[], gradOutputs[] | undefined, retainGraph, createGraph, allowUnused)
//   -> (handle | null)[]
FLODL_OP(autogradGrad) {
  const std::vector<at::Tensor> outputs = c.tensors(0);
  const std::vector<at::Tensor> inputs = c.tensors(1);
  std::vector<at::Tensor> gradOutputs;
  if (!c.isAbsent(2)) gradOutputs = c.tensors(2);
  const bool create = c.flag(4);
  const c10::optional<bool> retain = c.isAbsent(3) ? c10::optional<bool>(create) : c10::optional<bool>(c.flag(3));
  const auto grads = torch::autograd::grad(outputs, inputs, gradOutputs, retain, create, c.flag(5));
  Napi::Array out = Napi::Array::New(c.env, grads.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    out.Set(static_cast<uint32_t>(k), grads[k].defined() ? c.state.adopt(grads[k]) : c.env.Null());
  }
  return out;
}

// variableData(t): the same data as a new leaf with its own version counter (PyTorch's .data).
FLODL_OP(variableData) { return c.result(c.tensor(0).variable_data()); }

// setData(t, source): t keeps its identity (and its place in optimizers and graphs' leaves)
// but takes source's data, dtype and device. PyTorch: `t.data = source`.
FLODL_OP(setData) {
  at::Tensor& t = c.tensor(0);
  t.set_data(c.tensor(1));
  return c.undefined();
}

// Autocast (mixed precision) state of one device type, as [enabled, dtype code].
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocastEnabled(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
at::ScalarType autocastDtype(bool cuda) { return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU); }
void setAutocast(bool cuda, bool enabled, at::ScalarType dtype) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, enabled);
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
}
#else
bool autocastEnabled(bool cuda) { return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled(); }
at::ScalarType autocastDtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void setAutocast(bool cuda, bool enabled, at::ScalarType dtype) {
  if (cuda) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

// autocastState(cuda) -> [enabled, dtypeCode]
FLODL_OP(autocastState) {
  const bool cuda = c.flag(0);
  Napi::Array out = Napi::Array::New(c.env, 2);
  out.Set(uint32_t{0}, Napi::Boolean::New(c.env, autocastEnabled(cuda)));
  out.Set(uint32_t{1}, Napi::Number::New(c.env, dtypeCode(autocastDtype(cuda))));
  return out;
}

// autocastEnter(cuda, enabled, dtype): sets the state and counts the nesting level.
FLODL_OP(autocastEnter) {
  setAutocast(c.flag(0), c.flag(1), c.dtype(2));
  at::autocast::increment_nesting();
  return c.undefined();
}

// autocastExit(cuda, enabled, dtype): restores the state; leaving the outermost level drops
// the cache of casted weights, as PyTorch's autocast context manager does.
FLODL_OP(autocastExit) {
  setAutocast(c.flag(0), c.flag(1), c.dtype(2));
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  return c.undefined();
}

FLODL_OP(isGradEnabled) { return Napi::Boolean::New(c.env, at::GradMode::is_enabled()); }

FLODL_OP(setGradEnabled) {
  at::GradMode::set_enabled(c.flag(0));
  return c.undefined();
}

// inferenceMode(fn, enabled) -> fn's result: calls the JS function fn with libtorch's own
// c10::InferenceMode guard held around the call (the thread's autograd state and the dispatch
// keys autograd adds), so tensors fn makes are inference tensors. The guard restores the
// previous state when fn returns or throws (its exception passes through unchanged).
FLODL_OP(inferenceMode) {
  if (c.length() < 1 || !c.info[0].IsFunction()) c.invalid(0, "a function");
  const Napi::Function fn = c.info[0].As<Napi::Function>();
  const bool enabled = c.flag(1);
  c10::InferenceMode guard(enabled);
  return fn.Call({});
}

FLODL_OP(isInferenceModeEnabled) { return Napi::Boolean::New(c.env, c10::InferenceMode::is_enabled()); }

// isInference(t): made inside inference mode (PyTorch's `t.is_inference()`).
FLODL_OP(isInference) { return Napi::Boolean::New(c.env, c.tensor(0).is_inference()); }

// The version counter: bumped by every in-place change (what autograd checks saved tensors against).
FLODL_OP(version) { return Napi::Number::New(c.env, static_cast<double>(c.tensor(0)._version())); }

}  // namespace

void registerAutogradOps(Registry& r) {
  FLODL_REGISTER(r, requiresGrad);
  FLODL_REGISTER(r, setRequiresGrad);
  FLODL_REGISTER(r, isLeaf);
  FLODL_REGISTER(r, gradFn);
  FLODL_REGISTER(r, grad);
  FLODL_REGISTER(r, setGrad);
  FLODL_REGISTER(r, retainGrad);
  FLODL_REGISTER(r, detach_);
  FLODL_REGISTER(r, backward);
  FLODL_REGISTER(r, autogradGrad);
  FLODL_REGISTER(r, variableData);
  FLODL_REGISTER(r, setData);
  FLODL_REGISTER(r, autocastState);
  FLODL_REGISTER(r, autocastEnter);
  FLODL_REGISTER(r, autocastExit);
  FLODL_REGISTER(r, isGradEnabled);
  FLODL_REGISTER(r, setGradEnabled);
  FLODL_REGISTER(r, inferenceMode);
  FLODL_REGISTER(r, isInferenceModeEnabled);
  FLODL_REGISTER(r, isInference);
  FLODL_REGISTER(r, version);
}

}  // namespace flodl

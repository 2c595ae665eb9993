// The calling convention of every native entry: argument readers that name the argument
// in their errors, and a dispatcher that turns every C++ exception into a FlodlError.
#pragma once

#include <napi.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/util/SmallVector.h>

#include <memory>
#include <string>
#include <vector>

#include "addon-state.h"

namespace flodl {

class Call;
using OpFunction = Napi::Value (*)(Call&);

class Call {
 public:
  Call(AddonState& state, const Napi::CallbackInfo& info, const char* op)
      : state(state), info(info), env(info.Env()), op(op) {}

  AddonState& state;
  const Napi::CallbackInfo& info;
  Napi::Env env;
  const char* op;

  size_t length() const { return info.Length(); }
  bool isAbsent(size_t i) const;  // undefined, null or missing

  at::Tensor& tensor(size_t i);
  std::vector<at::Tensor> tensors(size_t i);
  double number(size_t i);
  int64_t integer(size_t i);
  c10::optional<int64_t> optionalInteger(size_t i);
  bool flag(size_t i);
  at::Scalar scalar(size_t i);
  c10::optional<at::Scalar> optionalScalar(size_t i);
  std::vector<int64_t> integers(size_t i);  // an array of integers, or one integer
  // Sizes as the hot view ops take them: the numbers from argument i to the last
  // (`reshape(h, 8, 8)`: no list to read), else the list at argument i as `integers` reads it.
  c10::SmallVector<int64_t, 8> integerTail(size_t i);
  at::ScalarType dtype(size_t i);
  c10::optional<at::ScalarType> optionalDtype(size_t i);  // absent or -1 -> none
  c10::Device device(size_t i);
  std::string string(size_t i);

  Napi::Value result(at::Tensor tensor) { return state.adopt(std::move(tensor)); }
  Napi::Value result(std::tuple<at::Tensor, at::Tensor> pair);
  Napi::Value result(const std::vector<at::Tensor>& list);
  Napi::Value undefined() { return env.Undefined(); }

  [[noreturn]] void invalid(size_t i, const char* expected);

 private:
  napi_value raw(size_t i) const { return info[i]; }
};

// Collects the entries of one file of ops onto the exports object.
class Registry {
 public:
  Registry(Napi::Env env, Napi::Object exports, AddonState* state) : env_(env), exports_(exports), state_(state) {}
  void add(const char* name, OpFunction function);

 private:
  Napi::Env env_;
  Napi::Object exports_;
  AddonState* state_;
};

struct OpEntry {
  AddonState* state;
  const char* name;
  OpFunction function;
};

void registerRuntimeOps(Registry& registry);
void registerCreationOps(Registry& registry);
void registerElementwiseOps(Registry& registry);
void registerReductionOps(Registry& registry);
void registerShapeOps(Registry& registry);
void registerLinalgOps(Registry& registry);
void registerInplaceOps(Registry& registry);
void registerAutogradOps(Registry& registry);
void registerNnOps(Registry& registry);
void registerLossOps(Registry& registry);
void registerRnnOps(Registry& registry);
void registerOptimOps(Registry& registry);
void registerAveragingOps(Registry& registry);
void registerCudaOps(Registry& registry);
void registerDistributedOps(Registry& registry);

}  // namespace flodl

// Defines `static Napi::Value op_NAME(flodl::Call& c)`; the body returns a Napi::Value.
#define FLODL_OP(NAME) static Napi::Value op_##NAME(flodl::Call& c)
#define FLODL_REGISTER(REGISTRY, NAME) (REGISTRY).add(#NAME, &op_##NAME)

// Everything the addon keeps for one JS environment (main thread or a worker thread).
// No globals: each environment gets its own state through napi instance data.
#pragma once

#include <napi.h>

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "tensor-table.h"

namespace flodl {

class DistributedTable;  // live c10d stores and process groups (distributed-table.h)
std::shared_ptr<DistributedTable> createDistributedTable();

class AddonState {
 public:
  explicit AddonState(Napi::Env env) : env_(env) {}
  ~AddonState();

  TensorTable& tensors() { return tensors_; }

  // The c10d stores and process groups of this environment, created on first use.
  DistributedTable& distributed() {
    if (!distributed_) distributed_ = createDistributedTable();
    return *distributed_;
  }

  // Registers a result tensor and returns its JS handle.
  Napi::Value adopt(at::Tensor tensor);
  double adoptHandle(at::Tensor tensor);
  // Releases a handle; false when it was already released.
  bool release(double handle);
  // See TensorTable::retire / reclaim.
  bool retire(double handle);
  bool reclaim(double handle);

  // The JS function (code, op, message) -> Error that makes FlodlError instances.
  void setErrorFactory(Napi::Function factory) { errorFactory_ = Napi::Persistent(factory); }
  [[noreturn]] void fail(const char* code, const char* op, const std::string& message);

  // Keeps per-function data (op names) alive as long as the environment.
  void keepAlive(std::shared_ptr<void> data) { keepAlive_.push_back(std::move(data)); }

 private:
  void reportExternal(int64_t delta);

  Napi::Env env_;
  TensorTable tensors_;
  Napi::FunctionReference errorFactory_;
  int64_t pendingExternal_ = 0;
  std::vector<std::shared_ptr<void>> keepAlive_;
  std::shared_ptr<DistributedTable> distributed_;  // declared last: torn down before the tensors
};

}  // namespace flodl

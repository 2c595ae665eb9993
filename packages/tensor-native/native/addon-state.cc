#include "addon-state.h"

#include <c10/core/Storage.h>

namespace flodl {

namespace {
// V8 learns about native bytes in batches: one napi call per op would cost more than
// the op itself, and the GC only needs the order of magnitude.
constexpr int64_t kExternalReportBatch = 1 << 20;

int64_t ownedCpuBytes(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_cpu() || !tensor.has_storage()) return 0;
  const c10::Storage& storage = tensor.storage();
  // Only the first holder of a storage reports it; views of it report nothing.
  if (storage.use_count() != 1) return 0;
  return static_cast<int64_t>(storage.nbytes());
}
}  // namespace

AddonState::~AddonState() {
  // Environment teardown: tensors die with the table; V8's counters die with the isolate.
}

double AddonState::adoptHandle(at::Tensor tensor) {
  const int64_t bytes = ownedCpuBytes(tensor);
  const double handle = tensors_.insert(std::move(tensor), bytes);
  if (bytes != 0) reportExternal(bytes);
  return handle;
}

Napi::Value AddonState::adopt(at::Tensor tensor) {
  return Napi::Number::New(env_, adoptHandle(std::move(tensor)));
}

bool AddonState::release(double handle) {
  const int64_t bytes = tensors_.erase(handle);
  if (bytes < 0) return false;
  if (bytes != 0) reportExternal(-bytes);
  return true;
}

bool AddonState::retire(double handle) {
  const int64_t bytes = tensors_.retire(handle);
  if (bytes < 0) return false;
  if (bytes != 0) reportExternal(-bytes);
  return true;
}

bool AddonState::reclaim(double handle) {
  const int64_t bytes = tensors_.reclaim(handle);
  if (bytes < 0) return false;
  if (bytes != 0) reportExternal(-bytes);
  return true;
}

void AddonState::reportExternal(int64_t delta) {
  pendingExternal_ += delta;
  if (pendingExternal_ >= kExternalReportBatch || pendingExternal_ <= -kExternalReportBatch) {
    Napi::MemoryManagement::AdjustExternalMemory(env_, pendingExternal_);
    pendingExternal_ = 0;
  }
}

void AddonState::fail(const char* code, const char* op, const std::string& message) {
  if (errorFactory_.IsEmpty()) throw Napi::Error::New(env_, std::string(op) + ": " + message);
  Napi::Value error = errorFactory_.Call(
      {Napi::String::New(env_, code), Napi::String::New(env_, op), Napi::String::New(env_, message)});
  throw Napi::Error(env_, error);
}

}  // namespace flodl

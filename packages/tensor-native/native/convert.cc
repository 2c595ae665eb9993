#include "convert.h"

#include <ATen/ATen.h>

#include <cstring>

namespace flodl {

namespace {
const at::ScalarType kDtypes[kDtypeCount] = {
    at::kHalf, at::kBFloat16, at::kFloat, at::kDouble, at::kInt, at::kLong, at::kByte, at::kBool,
};
}  // namespace

bool dtypeFromCode(int32_t code, at::ScalarType* out) {
  if (code < 0 || code >= kDtypeCount) return false;
  *out = kDtypes[code];
  return true;
}

int32_t dtypeCode(at::ScalarType type) {
  for (int32_t i = 0; i < kDtypeCount; ++i) {
    if (kDtypes[i] == type) return i;
  }
  return -1;
}

c10::Device deviceFromCode(int32_t code) {
  if (code < 0) return c10::Device(c10::kCPU);
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(code));
}

int32_t deviceCode(const c10::Device& device) {
  if (device.is_cuda()) return device.has_index() ? device.index() : 0;
  return -1;
}

namespace {
template <typename T, napi_typedarray_type Kind>
Napi::Value copyOut(Napi::Env env, const at::Tensor& source) {
  const size_t count = static_cast<size_t>(source.numel());
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, count * sizeof(T));
  if (count != 0) std::memcpy(buffer.Data(), source.data_ptr(), count * sizeof(T));
  return Napi::TypedArrayOf<T>::New(env, count, buffer, 0, Kind);
}
}  // namespace

Napi::Value toTypedArray(Napi::Env env, const at::Tensor& tensor) {
  at::Tensor host = tensor.detach();
  if (!host.is_cpu()) host = host.to(at::kCPU);
  switch (host.scalar_type()) {
    case at::kHalf:
    case at::kBFloat16:
      host = host.to(at::kFloat);
      break;
    case at::kBool:
      host = host.to(at::kByte);
      break;
    default:
      break;
  }
  host = host.contiguous();
  switch (host.scalar_type()) {
    case at::kFloat:
      return copyOut<float, napi_float32_array>(env, host);
    case at::kDouble:
      return copyOut<double, napi_float64_array>(env, host);
    case at::kInt:
      return copyOut<int32_t, napi_int32_array>(env, host);
    case at::kLong:
      return copyOut<int64_t, napi_bigint64_array>(env, host);
    case at::kByte:
      return copyOut<uint8_t, napi_uint8_array>(env, host);
    default:
      throw std::invalid_argument(std::string("cannot read out dtype ") + c10::toString(host.scalar_type()));
  }
}

}  // namespace flodl

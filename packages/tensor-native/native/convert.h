// Codes shared with src/internal/codes.ts: dtypes and devices cross the boundary as small
// integers so that no string is parsed on the hot path.
#pragma once

#include <napi.h>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace flodl {

// Order matches DTYPE_CODES in src/internal/codes.ts.
constexpr int kDtypeCount = 8;
bool dtypeFromCode(int32_t code, at::ScalarType* out);
int32_t dtypeCode(at::ScalarType type);  // -1 for a dtype this API does not expose

// -1 is the CPU; n >= 0 is cuda:n.
c10::Device deviceFromCode(int32_t code);
int32_t deviceCode(const c10::Device& device);

// Copies a CPU tensor's values into a new JS TypedArray of the matching kind
// (float16 / bfloat16 widen to Float32Array, bool to Uint8Array, int64 to BigInt64Array).
Napi::Value toTypedArray(Napi::Env env, const at::Tensor& tensor);

}  // namespace flodl

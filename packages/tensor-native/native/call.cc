#include "call.h"

#include <c10/util/Exception.h>

#include <cmath>

#include "convert.h"

namespace flodl {

namespace {
bool isSafeInteger(double value) {
  return std::isfinite(value) && std::trunc(value) == value && std::fabs(value) <= 9007199254740992.0;
}
}  // namespace

bool Call::isAbsent(size_t i) const {
  if (i >= info.Length()) return true;
  napi_valuetype type;
  napi_typeof(env, raw(i), &type);
  return type == napi_undefined || type == napi_null;
}

void Call::invalid(size_t i, const char* expected) {
  state.fail("ERR_INVALID_ARGUMENT", op, "argument " + std::to_string(i) + ": expected " + expected);
}

at::Tensor& Call::tensor(size_t i) {
  double handle;
  if (i >= info.Length() || napi_get_value_double(env, raw(i), &handle) != napi_ok) invalid(i, "a Tensor");
  at::Tensor* found = state.tensors().find(handle);
  if (found == nullptr) {
    state.fail("ERR_DISPOSED", op,
               "tensor argument " + std::to_string(i) + " was disposed (or freed by its tidy scope); keep() it to use it later");
  }
  return *found;
}

std::vector<at::Tensor> Call::tensors(size_t i) {
  if (i >= info.Length() || !info[i].IsArray()) invalid(i, "an array of Tensors");
  Napi::Array array = info[i].As<Napi::Array>();
  const uint32_t count = array.Length();
  std::vector<at::Tensor> out;
  out.reserve(count);
  for (uint32_t k = 0; k < count; ++k) {
    Napi::Value element = array.Get(k);
    double handle;
    if (napi_get_value_double(env, element, &handle) != napi_ok) invalid(i, "an array of Tensors");
    at::Tensor* found = state.tensors().find(handle);
    if (found == nullptr) state.fail("ERR_DISPOSED", op, "tensor " + std::to_string(k) + " of the list was disposed");
    out.push_back(*found);
  }
  return out;
}

double Call::number(size_t i) {
  double value;
  if (i >= info.Length() || napi_get_value_double(env, raw(i), &value) != napi_ok) invalid(i, "a number");
  return value;
}

int64_t Call::integer(size_t i) {
  const double value = number(i);
  if (!isSafeInteger(value)) invalid(i, "an integer");
  return static_cast<int64_t>(value);
}

c10::optional<int64_t> Call::optionalInteger(size_t i) {
  if (isAbsent(i)) return c10::nullopt;
  return integer(i);
}

bool Call::flag(size_t i) {
  if (isAbsent(i)) return false;
  bool value;
  if (napi_get_value_bool(env, raw(i), &value) != napi_ok) invalid(i, "a boolean");
  return value;
}

at::Scalar Call::scalar(size_t i) {
  if (i >= info.Length()) invalid(i, "a number or boolean");
  napi_valuetype type;
  napi_typeof(env, raw(i), &type);
  if (type == napi_boolean) return at::Scalar(flag(i));
  if (type != napi_number) invalid(i, "a number or boolean");
  const double value = number(i);
  // Integral JS numbers act like Python ints in type promotion, others like floats.
  if (isSafeInteger(value)) {
    return at::Scalar(static_cast<int64_t>(value));
  }
  return at::Scalar(value);
}

c10::optional<at::Scalar> Call::optionalScalar(size_t i) {
  if (isAbsent(i)) return c10::nullopt;
  return scalar(i);
}

std::vector<int64_t> Call::integers(size_t i) {
  if (i >= info.Length()) invalid(i, "an array of integers");
  if (info[i].IsNumber()) return {integer(i)};
  // A Float64Array is read in place: one N-API call for the whole list, where an Array
  // costs two per element (the hot path of reshape and view passes one).
  bool isTyped = false;
  napi_is_typedarray(env, raw(i), &isTyped);
  if (isTyped) {
    napi_typedarray_type type;
    size_t count = 0;
    void* data = nullptr;
    napi_get_typedarray_info(env, raw(i), &type, &count, &data, nullptr, nullptr);
    if (type != napi_float64_array) invalid(i, "an array of integers");
    const double* values = static_cast<const double*>(data);
    std::vector<int64_t> out(count);
    for (size_t k = 0; k < count; ++k) {
      if (!isSafeInteger(values[k])) invalid(i, "an array of integers");
      out[k] = static_cast<int64_t>(values[k]);
    }
    return out;
  }
  if (!info[i].IsArray()) invalid(i, "an array of integers");
  Napi::Array array = info[i].As<Napi::Array>();
  const uint32_t count = array.Length();
  std::vector<int64_t> out(count);
  for (uint32_t k = 0; k < count; ++k) {
    double value;
    if (napi_get_value_double(env, array.Get(k), &value) != napi_ok || !isSafeInteger(value)) {
      invalid(i, "an array of integers");
    }
    out[k] = static_cast<int64_t>(value);
  }
  return out;
}

c10::SmallVector<int64_t, 8> Call::integerTail(size_t i) {
  c10::SmallVector<int64_t, 8> out;
  const size_t count = info.Length();
  napi_valuetype type = napi_undefined;
  if (i < count) napi_typeof(env, raw(i), &type);
  if (type != napi_number) {
    const std::vector<int64_t> list = integers(i);
    out.append(list.begin(), list.end());
    return out;
  }
  out.resize(count - i);
  for (size_t k = i; k < count; ++k) out[k - i] = integer(k);
  return out;
}

at::ScalarType Call::dtype(size_t i) {
  at::ScalarType type;
  if (!dtypeFromCode(static_cast<int32_t>(integer(i)), &type)) invalid(i, "a dtype code");
  return type;
}

c10::optional<at::ScalarType> Call::optionalDtype(size_t i) {
  if (isAbsent(i) || integer(i) < 0) return c10::nullopt;
  return dtype(i);
}

c10::Device Call::device(size_t i) {
  if (isAbsent(i)) return c10::Device(c10::kCPU);
  return deviceFromCode(static_cast<int32_t>(integer(i)));
}

std::string Call::string(size_t i) {
  if (i >= info.Length() || !info[i].IsString()) invalid(i, "a string");
  return info[i].As<Napi::String>().Utf8Value();
}

Napi::Value Call::result(std::tuple<at::Tensor, at::Tensor> pair) {
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(uint32_t{0}, state.adopt(std::move(std::get<0>(pair))));
  out.Set(uint32_t{1}, state.adopt(std::move(std::get<1>(pair))));
  return out;
}

Napi::Value Call::result(const std::vector<at::Tensor>& list) {
  Napi::Array out = Napi::Array::New(env, list.size());
  for (size_t k = 0; k < list.size(); ++k) out.Set(static_cast<uint32_t>(k), state.adopt(list[k]));
  return out;
}

namespace {
Napi::Value dispatch(const Napi::CallbackInfo& info) {
  const OpEntry* entry = static_cast<const OpEntry*>(info.Data());
  Call call(*entry->state, info, entry->name);
  try {
    return entry->function(call);
  } catch (const Napi::Error&) {
    throw;
  } catch (const c10::Error& error) {
    entry->state->fail("ERR_NATIVE", entry->name, error.what_without_backtrace());
  } catch (const std::exception& error) {
    entry->state->fail("ERR_NATIVE", entry->name, error.what());
  } catch (...) {
    entry->state->fail("ERR_NATIVE", entry->name, "unknown native exception");
  }
}
}  // namespace

void Registry::add(const char* name, OpFunction function) {
  auto entry = std::make_shared<OpEntry>(OpEntry{state_, name, function});
  exports_.Set(name, Napi::Function::New(env_, dispatch, name, entry.get()));
  state_->keepAlive(std::move(entry));
}

}  // namespace flodl

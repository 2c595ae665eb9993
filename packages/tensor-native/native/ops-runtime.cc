// Lifecycle, metadata, read-out, seeding, threads and the CUDA runtime queries.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>

#include "call.h"
#include "convert.h"
#include "gemm-cpu.h"

#ifdef FLODL_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace flodl {
namespace {

FLODL_OP(setErrorFactory) {
  if (c.length() < 1 || !c.info[0].IsFunction()) c.invalid(0, "a function");
  c.state.setErrorFactory(c.info[0].As<Napi::Function>());
  return c.undefined();
}

FLODL_OP(free) {
  double handle;
  if (napi_get_value_double(c.env, c.info[0], &handle) != napi_ok) c.invalid(0, "a handle");
  return Napi::Boolean::New(c.env, c.state.release(handle));
}

FLODL_OP(retire) {
  double handle;
  if (napi_get_value_double(c.env, c.info[0], &handle) != napi_ok) c.invalid(0, "a handle");
  return Napi::Boolean::New(c.env, c.state.retire(handle));
}

FLODL_OP(reclaim) {
  double handle;
  if (napi_get_value_double(c.env, c.info[0], &handle) != napi_ok) c.invalid(0, "a handle");
  return Napi::Boolean::New(c.env, c.state.reclaim(handle));
}

// freeMany(handles, count): one call for a whole scope's worth of tensors. `handles` is a
// Float64Array (read in place) or an array of numbers.
FLODL_OP(freeMany) {
  uint32_t freed = 0;
  if (c.length() >= 1 && c.info[0].IsTypedArray()) {
    Napi::TypedArray array = c.info[0].As<Napi::TypedArray>();
    if (array.TypedArrayType() != napi_float64_array) c.invalid(0, "a Float64Array of handles");
    const double* handles = reinterpret_cast<const double*>(
        static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset());
    const size_t count = c.isAbsent(1) ? array.ElementLength()
                                        : std::min(array.ElementLength(), static_cast<size_t>(c.integer(1)));
    for (size_t k = 0; k < count; ++k) {
      if (c.state.release(handles[k])) ++freed;
    }
    return Napi::Number::New(c.env, freed);
  }
  if (c.length() < 1 || !c.info[0].IsArray()) c.invalid(0, "an array of handles");
  Napi::Array handles = c.info[0].As<Napi::Array>();
  const uint32_t count = handles.Length();
  for (uint32_t k = 0; k < count; ++k) {
    double handle;
    if (napi_get_value_double(c.env, handles.Get(k), &handle) == napi_ok && c.state.release(handle)) ++freed;
  }
  return Napi::Number::New(c.env, freed);
}

FLODL_OP(isLive) {
  double handle;
  if (napi_get_value_double(c.env, c.info[0], &handle) != napi_ok) return Napi::Boolean::New(c.env, false);
  return Napi::Boolean::New(c.env, c.state.tensors().find(handle) != nullptr);
}

FLODL_OP(liveCount) { return Napi::Number::New(c.env, static_cast<double>(c.state.tensors().live())); }

FLODL_OP(shape) {
  const at::Tensor& t = c.tensor(0);
  const auto sizes = t.sizes();
  Napi::Array out = Napi::Array::New(c.env, sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) out.Set(static_cast<uint32_t>(k), static_cast<double>(sizes[k]));
  return out;
}

FLODL_OP(strides) {
  const at::Tensor& t = c.tensor(0);
  const auto strides = t.strides();
  Napi::Array out = Napi::Array::New(c.env, strides.size());
  for (size_t k = 0; k < strides.size(); ++k) out.Set(static_cast<uint32_t>(k), static_cast<double>(strides[k]));
  return out;
}

FLODL_OP(dtype) {
  const at::Tensor& t = c.tensor(0);
  const int32_t code = dtypeCode(t.scalar_type());
  if (code < 0) c.state.fail("ERR_DTYPE", c.op, std::string("unsupported dtype ") + c10::toString(t.scalar_type()));
  return Napi::Number::New(c.env, code);
}

FLODL_OP(device) { return Napi::Number::New(c.env, deviceCode(c.tensor(0).device())); }
FLODL_OP(numel) { return Napi::Number::New(c.env, static_cast<double>(c.tensor(0).numel())); }
FLODL_OP(dim) { return Napi::Number::New(c.env, static_cast<double>(c.tensor(0).dim())); }
FLODL_OP(isContiguous) { return Napi::Boolean::New(c.env, c.tensor(0).is_contiguous()); }
FLODL_OP(isPinned) { return Napi::Boolean::New(c.env, c.tensor(0).is_cpu() && c.tensor(0).is_pinned()); }
FLODL_OP(sameStorage) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  return Napi::Boolean::New(c.env, a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage()));
}

FLODL_OP(item) {
  const at::Tensor& t = c.tensor(0);
  if (t.numel() != 1) {
    c.state.fail("ERR_SHAPE", c.op,
                 "only a tensor with exactly one element converts to a number, got " + std::to_string(t.numel()) +
                     " elements");
  }
  const at::Scalar value = t.item();
  if (value.isBoolean()) return Napi::Boolean::New(c.env, value.toBool());
  if (value.isIntegral(false)) return Napi::Number::New(c.env, static_cast<double>(value.toLong()));
  return Napi::Number::New(c.env, value.toDouble());
}

FLODL_OP(toTypedArray) { return toTypedArray(c.env, c.tensor(0)); }

// fromTypedArray(data, shape, dtype, device): copies the JS values into a new tensor.
FLODL_OP(fromTypedArray) {
  if (c.length() < 1 || !c.info[0].IsTypedArray()) c.invalid(0, "a TypedArray");
  Napi::TypedArray array = c.info[0].As<Napi::TypedArray>();
  at::ScalarType source;
  switch (array.TypedArrayType()) {
    case napi_float32_array: source = at::kFloat; break;
    case napi_float64_array: source = at::kDouble; break;
    case napi_int32_array: source = at::kInt; break;
    case napi_bigint64_array: source = at::kLong; break;
    case napi_uint8_array: source = at::kByte; break;
    case napi_int8_array: source = at::kChar; break;
    case napi_int16_array: source = at::kShort; break;
    default: c.invalid(0, "a Float32Array, Float64Array, Int32Array, BigInt64Array, Uint8Array, Int8Array or Int16Array");
  }
  const std::vector<int64_t> shape = c.integers(1);
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0) c.invalid(1, "a shape of non-negative sizes");
    count *= size;
  }
  if (static_cast<size_t>(count) != array.ElementLength()) {
    c.state.fail("ERR_SHAPE", c.op,
                 "data has " + std::to_string(array.ElementLength()) + " values but the shape holds " +
                     std::to_string(count));
  }
  const at::ScalarType target = c.optionalDtype(2).value_or(source);
  const c10::Device device = c.device(3);
  at::Tensor host = at::empty(shape, at::TensorOptions().dtype(source));
  const size_t bytes = array.ByteLength();
  if (bytes != 0) {
    const uint8_t* base = static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset();
    std::memcpy(host.data_ptr(), base, bytes);
  }
  if (target != source) host = host.to(target);
  if (!device.is_cpu()) host = host.to(device);
  return c.result(std::move(host));
}

// Argument i: a Uint8Array of exactly `expected` bytes (ERR_SHAPE naming `need` otherwise) -> its
// first byte, in JavaScript memory that stays valid for this call.
uint8_t* bytesArgument(Call& c, size_t i, size_t expected, const char* need) {
  if (c.length() <= i || !c.info[i].IsTypedArray()) c.invalid(i, "a Uint8Array");
  Napi::TypedArray array = c.info[i].As<Napi::TypedArray>();
  if (array.TypedArrayType() != napi_uint8_array) c.invalid(i, "a Uint8Array");
  if (array.ByteLength() != expected) {
    c.state.fail("ERR_SHAPE", c.op,
                 "got " + std::to_string(array.ByteLength()) + " bytes but " + need + " need " +
                     std::to_string(expected));
  }
  return static_cast<uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset();
}

// fromBytes(bytes: Uint8Array, shape, dtype, device): raw little-endian element bytes of any dtype.
FLODL_OP(fromBytes) {
  if (c.length() < 1 || !c.info[0].IsTypedArray()) c.invalid(0, "a Uint8Array");
  const std::vector<int64_t> shape = c.integers(1);
  const at::ScalarType dtype = c.dtype(2);
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0) c.invalid(1, "a shape of non-negative sizes");
    count *= size;
  }
  const size_t expected = static_cast<size_t>(count) * c10::elementSize(dtype);
  const uint8_t* data = bytesArgument(c, 0, expected, "the shape and dtype");
  at::Tensor host = at::empty(shape, at::TensorOptions().dtype(dtype));
  if (expected != 0) std::memcpy(host.data_ptr(), data, expected);
  const c10::Device device = c.device(3);
  if (!device.is_cpu()) host = host.to(device);
  return c.result(std::move(host));
}

// copyFromBytes_(target, bytes: Uint8Array, dtype, alpha?): target := the values of `bytes`
// (raw little-endian elements of `dtype`, target's shape), or with alpha target := (1 − α)·target
// + α·values (lerp). In place, unrecorded; the bytes are read where they are (no intermediate
// tensor on the CPU), cast to target's dtype and copied to its device as part of the write.
FLODL_OP(copyFromBytes_) {
  at::Tensor& target = c.tensor(0);
  const at::ScalarType dtype = c.dtype(2);
  const size_t expected = static_cast<size_t>(target.numel()) * c10::elementSize(dtype);
  uint8_t* data = bytesArgument(c, 1, expected, "the target's shape and the dtype");
  const bool blend = !c.isAbsent(3);
  const double alpha = blend ? c.number(3) : 0.0;
  at::NoGradGuard noGrad;
  if (expected == 0) return c.undefined();
  // A view of the JavaScript bytes, alive for this call only: every use below completes in it
  // (a copy from pageable host memory is synchronous).
  const at::Tensor values = at::from_blob(data, target.sizes(), at::TensorOptions().dtype(dtype));
  if (blend) target.lerp_(values.to(target.device(), target.scalar_type()), at::Scalar(alpha));
  else target.copy_(values);
  return c.undefined();
}

// The element bytes of a contiguous CPU tensor, copied into a new Uint8Array.
Napi::Value copyBytes(Napi::Env env, const at::Tensor& host) {
  const size_t bytes = static_cast<size_t>(host.numel()) * host.element_size();
  Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, bytes);
  if (bytes != 0) std::memcpy(buffer.Data(), host.data_ptr(), bytes);
  return Napi::Uint8Array::New(env, bytes, buffer, 0);
}

// toBytes(t, into?: Uint8Array, scale?, dtype?): the raw element bytes (row-major, native
// little-endian) of t, cast to dtype and multiplied by scale when given (the values of
// t.to(dtype).mul(scale), bit for bit), in a new Uint8Array or written into `into` (exactly the
// byte count), which is returned. On the CPU the scaled values are written straight into `into`
// (one pass, no tensor in between); off it, scaled on the device, then copied over.
FLODL_OP(toBytes) {
  at::NoGradGuard noGrad;
  at::Tensor source = c.tensor(0).detach();
  const bool scaled = !c.isAbsent(2);
  const double scale = scaled ? c.number(2) : 1.0;
  if (!c.isAbsent(3)) {
    const at::ScalarType dtype = c.dtype(3);
    if (dtype != source.scalar_type()) source = source.to(dtype);
  }
  if (c.isAbsent(1)) {
    at::Tensor host = scaled ? source.mul(at::Scalar(scale)) : source;
    if (!host.is_cpu()) host = host.to(at::kCPU);
    return copyBytes(c.env, host.contiguous());
  }
  const size_t expected = static_cast<size_t>(source.numel()) * source.element_size();
  uint8_t* data = bytesArgument(c, 1, expected, "the tensor's shape and dtype");
  if (expected != 0) {
    // A view of the JavaScript bytes, alive for this call only (every write below completes in it).
    at::Tensor out = at::from_blob(data, source.sizes(), at::TensorOptions().dtype(source.scalar_type()));
    if (scaled && source.is_cpu()) {
      // What mul(tensor, Scalar) multiplies by: the number as a wrapped 0-dim tensor.
      at::Tensor factor = at::scalar_tensor(scale, at::TensorOptions().dtype(at::kDouble));
      factor.unsafeGetTensorImpl()->set_wrapped_number(true);
      at::mul_out(out, source, factor);
    } else {
      out.copy_(scaled ? source.mul(at::Scalar(scale)) : source);
    }
  }
  return c.info[1];
}

// scalarTensor(value, dtype?): a 0-dim tensor that promotes like a Python number.
FLODL_OP(scalarTensor) {
  const at::Scalar value = c.scalar(0);
  const auto dtype = c.optionalDtype(1);
  at::Tensor out = dtype ? at::scalar_tensor(value, at::TensorOptions().dtype(*dtype))
                         : at::scalar_tensor(value, at::TensorOptions().dtype(value.type()));
  out.unsafeGetTensorImpl()->set_wrapped_number(true);
  return c.result(std::move(out));
}

// to(t, dtype | -1, device | undefined, nonBlocking, copy)
FLODL_OP(to) {
  const at::Tensor& t = c.tensor(0);
  const at::ScalarType dtype = c.optionalDtype(1).value_or(t.scalar_type());
  const c10::Device device = c.isAbsent(2) ? t.device() : c.device(2);
  return c.result(t.to(device, dtype, c.flag(3), c.flag(4)));
}

FLODL_OP(clone) { return c.result(c.tensor(0).clone()); }
FLODL_OP(detach) { return c.result(c.tensor(0).detach()); }
FLODL_OP(contiguous) { return c.result(c.tensor(0).contiguous()); }
FLODL_OP(alias) { return c.result(c.tensor(0)); }

// Without CUDA there is nothing to pin against: the data stays where it is.
FLODL_OP(pinMemory) {
  const at::Tensor& t = c.tensor(0);
  if (!at::hasCUDA() || !t.is_cpu()) return c.result(t);
  return c.result(t.pin_memory());
}

int64_t cudaDevices() {
#ifdef FLODL_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

FLODL_OP(manualSeed) {
  const int64_t seed = c.integer(0);
  {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_current_seed(static_cast<uint64_t>(seed));
  }
  const int64_t devices = cudaDevices();
  for (int64_t index = 0; index < devices; ++index) {
    at::Generator generator =
        at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_current_seed(static_cast<uint64_t>(seed));
  }
  return c.undefined();
}

// The default generator of `device` (-1 CPU, N cuda:N).
at::Generator defaultGenerator(const c10::Device& device) {
  if (device.is_cpu()) return at::detail::getDefaultCPUGenerator();
  return at::globalContext().defaultGenerator(device);
}

// rngState(device): the default generator's state as bytes (PyTorch's torch.get_rng_state /
// torch.cuda.get_rng_state): the CPU's Mersenne Twister, or a CUDA device's seed and offset.
FLODL_OP(rngState) {
  const c10::Device device = c.device(0);
  at::Generator generator = defaultGenerator(device);
  at::Tensor state;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    state = generator.get_state();
  }
  return copyBytes(c.env, state.to(at::kCPU).contiguous());
}

// setRngState(device, bytes): restores a state rngState returned (libtorch checks its size).
FLODL_OP(setRngState) {
  const c10::Device device = c.device(0);
  if (c.length() < 2 || !c.info[1].IsTypedArray()) c.invalid(1, "a Uint8Array");
  Napi::TypedArray array = c.info[1].As<Napi::TypedArray>();
  if (array.TypedArrayType() != napi_uint8_array) c.invalid(1, "a Uint8Array");
  const size_t bytes = array.ByteLength();
  at::Tensor state = at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte));
  if (bytes != 0) {
    std::memcpy(state.data_ptr(), static_cast<const uint8_t*>(array.ArrayBuffer().Data()) + array.ByteOffset(),
                bytes);
  }
  at::Generator generator = defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
  return c.undefined();
}

FLODL_OP(setNumThreads) {
  const int64_t threads = c.integer(0);
  if (threads < 1) c.invalid(0, "a thread count >= 1");
  at::set_num_threads(static_cast<int>(threads));
  return c.undefined();
}
FLODL_OP(getNumThreads) { return Napi::Number::New(c.env, at::get_num_threads()); }

FLODL_OP(buildInfo) {
  Napi::Object out = Napi::Object::New(c.env);
  out.Set("torchVersion", Napi::String::New(c.env, TORCH_VERSION));
#ifdef FLODL_CUDA
  out.Set("cuda", Napi::Boolean::New(c.env, true));
#else
  out.Set("cuda", Napi::Boolean::New(c.env, false));
#endif
#ifdef USE_C10D_GLOO
  out.Set("gloo", Napi::Boolean::New(c.env, true));
#else
  out.Set("gloo", Napi::Boolean::New(c.env, false));
#endif
#ifdef USE_C10D_NCCL
  out.Set("nccl", Napi::Boolean::New(c.env, true));
#else
  out.Set("nccl", Napi::Boolean::New(c.env, false));
#endif
  return out;
}

// Global backend switches of ATen's context (torch.backends.*). `name` picks one:
// cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allowTF32, cuda.matmul.allowTF32,
// deterministicAlgorithms, and ours: cpu.oneDnnLinear (float32 CPU linear maps by oneDNN's sgemm,
// gemm-cpu.h) and cpu.oneDnnAvailable (read only). backendFlag(name) -> bool;
// setBackendFlag(name, value).
enum class BackendFlag {
  CudnnEnabled,
  CudnnBenchmark,
  CudnnDeterministic,
  CudnnTF32,
  MatmulTF32,
  Deterministic,
  OneDnnLinear,
  OneDnnAvailable
};

BackendFlag backendFlagAt(Call& c, size_t i) {
  const std::string name = c.string(i);
  if (name == "cudnn.enabled") return BackendFlag::CudnnEnabled;
  if (name == "cudnn.benchmark") return BackendFlag::CudnnBenchmark;
  if (name == "cudnn.deterministic") return BackendFlag::CudnnDeterministic;
  if (name == "cudnn.allowTF32") return BackendFlag::CudnnTF32;
  if (name == "cuda.matmul.allowTF32") return BackendFlag::MatmulTF32;
  if (name == "deterministicAlgorithms") return BackendFlag::Deterministic;
  if (name == "cpu.oneDnnLinear") return BackendFlag::OneDnnLinear;
  if (name == "cpu.oneDnnAvailable") return BackendFlag::OneDnnAvailable;
  c.invalid(i, "a backend flag name");
}

FLODL_OP(backendFlag) {
  auto& context = at::globalContext();
  bool value = false;
  switch (backendFlagAt(c, 0)) {
    case BackendFlag::CudnnEnabled: value = context.userEnabledCuDNN(); break;
    case BackendFlag::CudnnBenchmark: value = context.benchmarkCuDNN(); break;
    case BackendFlag::CudnnDeterministic: value = context.deterministicCuDNN(); break;
    case BackendFlag::CudnnTF32: value = context.allowTF32CuDNN(); break;
    case BackendFlag::MatmulTF32: value = context.allowTF32CuBLAS(); break;
    case BackendFlag::Deterministic: value = context.deterministicAlgorithms(); break;
    case BackendFlag::OneDnnLinear: value = oneDnnGemmEnabled(); break;
    case BackendFlag::OneDnnAvailable: value = oneDnnGemmAvailable(); break;
  }
  return Napi::Boolean::New(c.env, value);
}

FLODL_OP(setBackendFlag) {
  auto& context = at::globalContext();
  const BackendFlag flag = backendFlagAt(c, 0);
  const bool value = c.flag(1);
  switch (flag) {
    case BackendFlag::CudnnEnabled: context.setUserEnabledCuDNN(value); break;
    case BackendFlag::CudnnBenchmark: context.setBenchmarkCuDNN(value); break;
    case BackendFlag::CudnnDeterministic: context.setDeterministicCuDNN(value); break;
    case BackendFlag::CudnnTF32: context.setAllowTF32CuDNN(value); break;
    case BackendFlag::MatmulTF32: context.setAllowTF32CuBLAS(value); break;
    case BackendFlag::Deterministic: context.setDeterministicAlgorithms(value, false); break;
    case BackendFlag::OneDnnLinear:
      if (value && !oneDnnGemmAvailable()) {
        c.state.fail("ERR_DEVICE", c.op,
                     "this libtorch brings no oneDNN sgemm to the process (its own BLAS does the CPU linear maps)");
      }
      setOneDnnGemmEnabled(value);
      break;
    case BackendFlag::OneDnnAvailable: c.invalid(0, "a flag that can be set (cpu.oneDnnAvailable is read only)");
  }
  return c.env.Undefined();
}

FLODL_OP(cudaDeviceCount) { return Napi::Number::New(c.env, static_cast<double>(cudaDevices())); }

#ifdef FLODL_CUDA
c10::DeviceIndex checkedCudaIndex(Call& c, size_t i) {
  const int64_t index = c.isAbsent(i) ? 0 : c.integer(i);
  if (index < 0 || index >= cudaDevices()) {
    c.state.fail("ERR_DEVICE", c.op,
                 "cuda:" + std::to_string(index) + " does not exist (" + std::to_string(cudaDevices()) +
                     " CUDA devices)");
  }
  return static_cast<c10::DeviceIndex>(index);
}
#endif

FLODL_OP(cudaSynchronize) {
#ifdef FLODL_CUDA
  const c10::DeviceIndex index = checkedCudaIndex(c, 0);
  c10::cuda::CUDAGuard guard(index);
  const cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) c.state.fail("ERR_NATIVE", c.op, cudaGetErrorString(status));
#endif
  return c.undefined();
}

// [allocated, reserved, peakAllocated, peakReserved, active] in bytes.
FLODL_OP(cudaMemoryStats) {
  Napi::Array out = Napi::Array::New(c.env, 5);
  double values[5] = {0, 0, 0, 0, 0};
#ifdef FLODL_CUDA
  const c10::DeviceIndex index = checkedCudaIndex(c, 0);
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
  values[0] = static_cast<double>(stats.allocated_bytes[0].current);
  values[1] = static_cast<double>(stats.reserved_bytes[0].current);
  values[2] = static_cast<double>(stats.allocated_bytes[0].peak);
  values[3] = static_cast<double>(stats.reserved_bytes[0].peak);
  values[4] = static_cast<double>(stats.active_bytes[0].current);
#endif
  for (uint32_t k = 0; k < 5; ++k) out.Set(k, values[k]);
  return out;
}

FLODL_OP(cudaResetPeakMemoryStats) {
#ifdef FLODL_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(checkedCudaIndex(c, 0));
#endif
  return c.undefined();
}

FLODL_OP(cudaEmptyCache) {
#ifdef FLODL_CUDA
  if (cudaDevices() > 0) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  return c.undefined();
}

FLODL_OP(cudaDeviceName) {
#ifdef FLODL_CUDA
  const c10::DeviceIndex index = checkedCudaIndex(c, 0);
  cudaDeviceProp properties;
  if (cudaGetDeviceProperties(&properties, index) == cudaSuccess) return Napi::String::New(c.env, properties.name);
#endif
  return c.env.Null();
}

}  // namespace

void registerRuntimeOps(Registry& r) {
  FLODL_REGISTER(r, setErrorFactory);
  FLODL_REGISTER(r, free);
  FLODL_REGISTER(r, freeMany);
  FLODL_REGISTER(r, retire);
  FLODL_REGISTER(r, reclaim);
  FLODL_REGISTER(r, isLive);
  FLODL_REGISTER(r, liveCount);
  FLODL_REGISTER(r, shape);
  FLODL_REGISTER(r, strides);
  FLODL_REGISTER(r, dtype);
  FLODL_REGISTER(r, device);
  FLODL_REGISTER(r, numel);
  FLODL_REGISTER(r, dim);
  FLODL_REGISTER(r, isContiguous);
  FLODL_REGISTER(r, isPinned);
  FLODL_REGISTER(r, sameStorage);
  FLODL_REGISTER(r, item);
  FLODL_REGISTER(r, toTypedArray);
  FLODL_REGISTER(r, fromTypedArray);
  FLODL_REGISTER(r, fromBytes);
  FLODL_REGISTER(r, copyFromBytes_);
  FLODL_REGISTER(r, toBytes);
  FLODL_REGISTER(r, scalarTensor);
  FLODL_REGISTER(r, to);
  FLODL_REGISTER(r, clone);
  FLODL_REGISTER(r, detach);
  FLODL_REGISTER(r, contiguous);
  FLODL_REGISTER(r, alias);
  FLODL_REGISTER(r, pinMemory);
  FLODL_REGISTER(r, manualSeed);
  FLODL_REGISTER(r, rngState);
  FLODL_REGISTER(r, setRngState);
  FLODL_REGISTER(r, setNumThreads);
  FLODL_REGISTER(r, getNumThreads);
  FLODL_REGISTER(r, buildInfo);
  FLODL_REGISTER(r, backendFlag);
  FLODL_REGISTER(r, setBackendFlag);
  FLODL_REGISTER(r, cudaDeviceCount);
  FLODL_REGISTER(r, cudaSynchronize);
  FLODL_REGISTER(r, cudaMemoryStats);
  FLODL_REGISTER(r, cudaResetPeakMemoryStats);
  FLODL_REGISTER(r, cudaEmptyCache);
  FLODL_REGISTER(r, cudaDeviceName);
}

}  // namespace flodl

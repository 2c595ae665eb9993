// The two passes of a collective averaging round around its allReduce: packing every tensor of
// a bucket, scaled by the rank's mass, into one flat buffer (so the allReduce needs no gather
// and no scatter), and unpacking the reduced buffer: each tensor overwritten by its share
// divided by the total, with the divergence norms (‖pre‖², ‖pre − post‖², ‖post‖²) summed in
// float64 on the way. On the CPU both are one loop over the memory (float32 and float64; float32
// in AVX2 lanes where the CPU has them, with the same bits); elsewhere (CUDA, half precisions)
// they are libtorch ops on the device.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <array>
#include <type_traits>

#include "call.h"

// x86-64: the float32 loops in AVX2 lanes where the CPU has them (asked at run time).
#if defined(__x86_64__)
#include <immintrin.h>
#define FLODL_AVERAGING_LANES 1
#define FLODL_AVX2 __attribute__((target("avx2")))
#else
#define FLODL_AVERAGING_LANES 0
#endif

namespace flodl {
namespace {

// The flat buffer of a bucket: 1-D, contiguous, one dtype and device with every member, and
// exactly as long as the members together.
void checkBucket(Call& c, const std::vector<at::Tensor>& members, const at::Tensor& flat, size_t flatArg) {
  if (flat.dim() != 1 || !flat.is_contiguous()) c.invalid(flatArg, "a contiguous 1-D tensor");
  int64_t total = 0;
  for (const at::Tensor& member : members) {
    if (member.scalar_type() != flat.scalar_type() || member.device() != flat.device()) {
      c.invalid(0, "tensors of the flat buffer's dtype and device");
    }
    total += member.numel();
  }
  if (total != flat.numel()) c.invalid(flatArg, "as many elements as the tensors together");
}

// A member the CPU loops handle: contiguous float32 or float64 in host memory.
bool loopable(const at::Tensor& member) {
  return member.device().is_cpu() && member.is_contiguous() &&
         (member.scalar_type() == at::ScalarType::Float || member.scalar_type() == at::ScalarType::Double);
}

// out[i] = in[i] · scale for i in [from, count).
template <typename T>
void scaleLoop(const T* in, T* out, T scale, int64_t from, int64_t count) {
  for (int64_t i = from; i < count; ++i) out[i] = in[i] * scale;
}

// Sums of x² over four interleaved lanes, added up in a fixed order at the end: the same bits
// on every run, with four additions in flight.
struct Squares {
  std::array<double, 4> pre{}, diff{}, post{};
  static double total(const std::array<double, 4>& lanes) { return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]); }
};

#if FLODL_AVERAGING_LANES
// Whether this CPU has AVX2 (asked once; the CPU model is read first, since a static
// initializer of this library may run before libgcc's own).
bool hasAvx2() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
}

// out[i] = in[i] · scale on eight floats at a time (a product rounds the same in a lane as alone);
// → where the lanes stopped.
FLODL_AVX2 int64_t scaleFloats(const float* in, float* out, float scale, int64_t count) {
  const __m256 by = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(in + i), by));
  return i;
}

// target[i] = in[i] / by on eight floats at a time; → where the lanes stopped.
FLODL_AVX2 int64_t divideFloats(const float* in, float* target, float by, int64_t count) {
  const __m256 divisor = _mm256_set1_ps(by);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(target + i, _mm256_div_ps(_mm256_loadu_ps(in + i), divisor));
  return i;
}

// The unpack with its norms on four floats at a time: element i goes to lane i & 3 of each sum,
// as in the scalar loop, and each square is rounded before it is added (no fused multiply-add),
// so the sums have the scalar loop's bits; → where the lanes stopped.
FLODL_AVX2 int64_t divideFloatsWithSquares(const float* in, float* target, float by, int64_t count, Squares* sums) {
  const __m128 divisor = _mm_set1_ps(by);
  __m256d pre2 = _mm256_loadu_pd(sums->pre.data());
  __m256d diff2 = _mm256_loadu_pd(sums->diff.data());
  __m256d post2 = _mm256_loadu_pd(sums->post.data());
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m128 average = _mm_div_ps(_mm_loadu_ps(in + i), divisor);
    const __m256d pre = _mm256_cvtps_pd(_mm_loadu_ps(target + i));
    const __m256d post = _mm256_cvtps_pd(average);
    const __m256d diff = _mm256_sub_pd(pre, post);
    pre2 = _mm256_add_pd(pre2, _mm256_mul_pd(pre, pre));
    diff2 = _mm256_add_pd(diff2, _mm256_mul_pd(diff, diff));
    post2 = _mm256_add_pd(post2, _mm256_mul_pd(post, post));
    _mm_storeu_ps(target + i, average);
  }
  _mm256_storeu_pd(sums->pre.data(), pre2);
  _mm256_storeu_pd(sums->diff.data(), diff2);
  _mm256_storeu_pd(sums->post.data(), post2);
  return i;
}
#endif

template <typename T>
void packLoop(const at::Tensor& member, T* out, double mass) {
  const T scale = static_cast<T>(mass);  // rounded to T first, as libtorch's mul by a number is
  const T* in = member.data_ptr<T>();
  const int64_t count = member.numel();
  int64_t from = 0;
#if FLODL_AVERAGING_LANES
  if constexpr (std::is_same_v<T, float>) {
    if (hasAvx2()) from = scaleFloats(in, out, scale, count);
  }
#endif
  scaleLoop(in, out, scale, from, count);
}

template <typename T>
void unpackLoop(const at::Tensor& member, const T* in, double divisor, Squares* sums) {
  const T by = static_cast<T>(divisor);  // libtorch's div by a number rounds it to T too
  T* target = member.data_ptr<T>();
  const int64_t count = member.numel();
  int64_t from = 0;
  if (sums == nullptr) {
#if FLODL_AVERAGING_LANES
    if constexpr (std::is_same_v<T, float>) {
      if (hasAvx2()) from = divideFloats(in, target, by, count);
    }
#endif
    for (int64_t i = from; i < count; ++i) target[i] = in[i] / by;
    return;
  }
#if FLODL_AVERAGING_LANES
  if constexpr (std::is_same_v<T, float>) {
    if (hasAvx2()) from = divideFloatsWithSquares(in, target, by, count, sums);
  }
#endif
  for (int64_t i = from; i < count; ++i) {
    const T average = in[i] / by;
    const double pre = static_cast<double>(target[i]);
    const double post = static_cast<double>(average);
    const double diff = pre - post;
    const size_t lane = static_cast<size_t>(i & 3);
    sums->pre[lane] += pre * pre;
    sums->diff[lane] += diff * diff;
    sums->post[lane] += post * post;
    target[i] = average;
  }
}

// averagePack(tensors[], flat, mass): flat := the tensors, in order, each times mass.
FLODL_OP(averagePack) {
  const std::vector<at::Tensor> members = c.tensors(0);
  at::Tensor& flat = c.tensor(1);
  const double mass = c.number(2);
  checkBucket(c, members, flat, 1);
  at::NoGradGuard noGrad;
  int64_t offset = 0;
  for (const at::Tensor& member : members) {
    if (loopable(member) && member.scalar_type() == at::ScalarType::Float) {
      packLoop<float>(member, flat.data_ptr<float>() + offset, mass);
    } else if (loopable(member)) {
      packLoop<double>(member, flat.data_ptr<double>() + offset, mass);
    } else {
      at::Tensor slot = flat.narrow(0, offset, member.numel()).view(member.sizes());
      at::mul_out(slot, member, at::Scalar(mass));
    }
    offset += member.numel();
  }
  return c.undefined();
}

// averageUnpack(tensors[], flat, divisor, norms) -> Tensor | undefined: each tensor := its share
// of flat / divisor; with norms, a float64 tensor [Σ pre², Σ (pre − post)², Σ post²] over every
// element, on the buffer's device (one read for the caller).
FLODL_OP(averageUnpack) {
  const std::vector<at::Tensor> members = c.tensors(0);
  const at::Tensor& flat = c.tensor(1);
  const double divisor = c.number(2);
  const bool norms = c.flag(3);
  checkBucket(c, members, flat, 1);
  if (!(divisor > 0)) c.invalid(2, "a divisor > 0");
  at::NoGradGuard noGrad;
  Squares sums;
  at::Tensor onDevice;  // the norms of the members the loops do not handle
  int64_t offset = 0;
  for (const at::Tensor& member : members) {
    if (loopable(member) && member.scalar_type() == at::ScalarType::Float) {
      unpackLoop<float>(member, flat.data_ptr<float>() + offset, divisor, norms ? &sums : nullptr);
    } else if (loopable(member)) {
      unpackLoop<double>(member, flat.data_ptr<double>() + offset, divisor, norms ? &sums : nullptr);
    } else {
      const at::Tensor average =
          flat.narrow(0, offset, member.numel()).view(member.sizes()).div(at::Scalar(divisor));
      if (norms) {
        const at::Tensor pre = member.to(at::ScalarType::Double);
        const at::Tensor post = average.to(at::ScalarType::Double);
        const at::Tensor squares = at::stack({pre.square().sum(), (pre - post).square().sum(), post.square().sum()});
        onDevice = onDevice.defined() ? onDevice.add_(squares) : squares;
      }
      member.copy_(average);
    }
    offset += member.numel();
  }
  if (!norms) return c.undefined();
  at::Tensor host = at::empty({3}, at::TensorOptions().dtype(at::ScalarType::Double));
  double* values = host.data_ptr<double>();
  values[0] = Squares::total(sums.pre);
  values[1] = Squares::total(sums.diff);
  values[2] = Squares::total(sums.post);
  if (!onDevice.defined()) return c.result(host);
  return c.result(onDevice.add_(host.to(onDevice.device())));
}

}  // namespace

void registerAveragingOps(Registry& r) {
  FLODL_REGISTER(r, averagePack);
  FLODL_REGISTER(r, averageUnpack);
}

}  // namespace flodl

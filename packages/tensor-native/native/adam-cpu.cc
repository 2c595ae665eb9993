// Adam/AdamW on the CPU in one pass over each parameter (see adam-cpu.h for the contract).
#include "adam-cpu.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <immintrin.h>

#include <array>
#include <cmath>
#include <cstring>
#include <mutex>

#define FLODL_AVX2 __attribute__((target("avx2,fma")))

namespace flodl {
namespace {

// How libtorch's kernels round `a + alpha·b` (add_ with alpha) and `self + s·t1·t2` (addcmul_):
// both as one fused multiply-add, only the first, or neither.
enum class Fusion { Both, AddOnly, Neither };
constexpr std::array<Fusion, 3> kFusions{Fusion::Both, Fusion::AddOnly, Fusion::Neither};

// AVX2 lanes of one dtype, each operation libtorch's Vectorized one.
struct Floats {
  using T = float;
  using V = __m256;
  static constexpr int64_t lanes = 8;
  FLODL_AVX2 static V load(const T* p) { return _mm256_loadu_ps(p); }
  FLODL_AVX2 static void store(T* p, V v) { _mm256_storeu_ps(p, v); }
  FLODL_AVX2 static V set(T x) { return _mm256_set1_ps(x); }
  FLODL_AVX2 static V add(V a, V b) { return _mm256_add_ps(a, b); }
  FLODL_AVX2 static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  FLODL_AVX2 static V div(V a, V b) { return _mm256_div_ps(a, b); }
  FLODL_AVX2 static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  FLODL_AVX2 static V sqrt(V a) { return _mm256_sqrt_ps(a); }
  FLODL_AVX2 static V neg(V a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  // libtorch's maximum: the larger, NaN (all bits set) where either is NaN.
  FLODL_AVX2 static V maximum(V a, V b) { return _mm256_or_ps(_mm256_max_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q)); }
};

struct Doubles {
  using T = double;
  using V = __m256d;
  static constexpr int64_t lanes = 4;
  FLODL_AVX2 static V load(const T* p) { return _mm256_loadu_pd(p); }
  FLODL_AVX2 static void store(T* p, V v) { _mm256_storeu_pd(p, v); }
  FLODL_AVX2 static V set(T x) { return _mm256_set1_pd(x); }
  FLODL_AVX2 static V add(V a, V b) { return _mm256_add_pd(a, b); }
  FLODL_AVX2 static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  FLODL_AVX2 static V div(V a, V b) { return _mm256_div_pd(a, b); }
  FLODL_AVX2 static V fmadd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  FLODL_AVX2 static V sqrt(V a) { return _mm256_sqrt_pd(a); }
  FLODL_AVX2 static V neg(V a) { return _mm256_xor_pd(a, _mm256_set1_pd(-0.0)); }
  FLODL_AVX2 static V maximum(V a, V b) { return _mm256_or_pd(_mm256_max_pd(a, b), _mm256_cmp_pd(a, b, _CMP_UNORD_Q)); }
};

// a + alpha·b, rounded once or twice.
template <typename L, bool Fused>
FLODL_AVX2 typename L::V plusScaled(typename L::V a, typename L::V alpha, typename L::V b) {
  if constexpr (Fused) return L::fmadd(b, alpha, a);
  return L::add(a, L::mul(alpha, b));
}

// The step's scalars in the dtype, converted as libtorch converts a Scalar.
template <typename L>
struct Constants {
  typename L::V beta1, oneMinusBeta1, beta2, oneMinusBeta2, weightDecay, shrink, biasCorrection2Sqrt, eps, stepSize;
  bool l2, decoupled, amsgrad, maximize;

  FLODL_AVX2 Constants(const AdamSettings& s, double step, double bc2) {
    using T = typename L::T;
    beta1 = L::set(static_cast<T>(s.beta1));
    oneMinusBeta1 = L::set(static_cast<T>(1 - s.beta1));
    beta2 = L::set(static_cast<T>(s.beta2));
    oneMinusBeta2 = L::set(static_cast<T>(1 - s.beta2));
    weightDecay = L::set(static_cast<T>(s.weightDecay));
    shrink = L::set(static_cast<T>(1 - s.lr * s.weightDecay));
    biasCorrection2Sqrt = L::set(static_cast<T>(bc2));
    eps = L::set(static_cast<T>(s.eps));
    stepSize = L::set(static_cast<T>(step));
    l2 = s.weightDecay != 0 && !s.decoupled;
    decoupled = s.weightDecay != 0 && s.decoupled;
    amsgrad = s.amsgrad;
    maximize = s.maximize;
  }
};

// One group of lanes, op for op as ops-optim.cc's adamOne.
template <typename L, Fusion F>
FLODL_AVX2 void lanesStep(const Constants<L>& c, typename L::T* p, const typename L::T* g, typename L::T* m,
                          typename L::T* v, typename L::T* mx) {
  constexpr bool addFused = F != Fusion::Neither;
  constexpr bool addcmulFused = F == Fusion::Both;
  using V = typename L::V;
  V direction = L::load(g);
  if (c.maximize) direction = L::neg(direction);
  V param = L::load(p);
  if (c.decoupled) param = L::mul(param, c.shrink);
  if (c.l2) direction = plusScaled<L, addFused>(direction, c.weightDecay, param);
  const V first = plusScaled<L, addFused>(L::mul(L::load(m), c.beta1), c.oneMinusBeta1, direction);
  const V decayed = L::mul(L::load(v), c.beta2);
  const V scaled = L::mul(c.oneMinusBeta2, direction);
  const V second = addcmulFused ? L::fmadd(scaled, direction, decayed) : L::add(decayed, L::mul(scaled, direction));
  V moment = second;
  if (c.amsgrad) {
    moment = L::maximum(L::load(mx), second);
    L::store(mx, moment);
  }
  // add_(eps) is an add with alpha 1: fused or not, one rounding.
  const V denominator = L::add(L::div(L::sqrt(moment), c.biasCorrection2Sqrt), c.eps);
  param = L::add(param, L::div(L::mul(c.stepSize, first), denominator));
  L::store(p, param);
  L::store(m, first);
  L::store(v, second);
}

// Lane groups [begin, end) of the tensors.
template <typename L, Fusion F>
FLODL_AVX2 void groupsStep(const Constants<L>& c, typename L::T* p, const typename L::T* g, typename L::T* m,
                           typename L::T* v, typename L::T* mx, int64_t begin, int64_t end) {
  for (int64_t k = begin; k < end; ++k) {
    const int64_t i = k * L::lanes;
    lanesStep<L, F>(c, p + i, g + i, m + i, v + i, mx == nullptr ? nullptr : mx + i);
  }
}

template <typename L, Fusion F>
FLODL_AVX2 void onePass(AdamTensors& t, const AdamSettings& s, double stepSize, double bc2) {
  using T = typename L::T;
  constexpr int64_t lanes = L::lanes;
  const Constants<L> c(s, stepSize, bc2);
  T* p = t.param.data_ptr<T>();
  const T* g = t.grad.data_ptr<T>();
  T* m = t.expAvg.data_ptr<T>();
  T* v = t.expAvgSq.data_ptr<T>();
  T* mx = s.amsgrad ? t.maxExpAvgSq.data_ptr<T>() : nullptr;
  const int64_t n = t.param.numel();
  const int64_t whole = n / lanes;
  // libtorch's grain for elementwise kernels (32768 elements).
  at::parallel_for(0, whole, 32768 / lanes,
                   [&](int64_t begin, int64_t end) { groupsStep<L, F>(c, p, g, m, v, mx, begin, end); });
  const int64_t rest = n - whole * lanes;
  if (rest == 0) return;
  // The last elements through the same lanes, from zero-padded copies.
  const int64_t i = whole * lanes;
  T buffers[5][lanes] = {};
  std::memcpy(buffers[0], p + i, sizeof(T) * rest);
  std::memcpy(buffers[1], g + i, sizeof(T) * rest);
  std::memcpy(buffers[2], m + i, sizeof(T) * rest);
  std::memcpy(buffers[3], v + i, sizeof(T) * rest);
  if (mx != nullptr) std::memcpy(buffers[4], mx + i, sizeof(T) * rest);
  lanesStep<L, F>(c, buffers[0], buffers[1], buffers[2], buffers[3], buffers[4]);
  std::memcpy(p + i, buffers[0], sizeof(T) * rest);
  std::memcpy(m + i, buffers[2], sizeof(T) * rest);
  std::memcpy(v + i, buffers[3], sizeof(T) * rest);
  if (mx != nullptr) std::memcpy(mx + i, buffers[4], sizeof(T) * rest);
}

template <typename L>
void onePassWith(Fusion f, AdamTensors& t, const AdamSettings& s, double stepSize, double bc2) {
  switch (f) {
    case Fusion::Both: onePass<L, Fusion::Both>(t, s, stepSize, bc2); break;
    case Fusion::AddOnly: onePass<L, Fusion::AddOnly>(t, s, stepSize, bc2); break;
    case Fusion::Neither: onePass<L, Fusion::Neither>(t, s, stepSize, bc2); break;
  }
}

void onePassIn(Fusion f, AdamTensors& t, const AdamSettings& s, double stepSize, double bc2) {
  if (t.param.scalar_type() == at::kFloat) {
    onePassWith<Floats>(f, t, s, stepSize, bc2);
  } else {
    onePassWith<Doubles>(f, t, s, stepSize, bc2);
  }
}

bool sameBits(const at::Tensor& a, const at::Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

// Three steps of `reference` and of the kernel with fusion `f` from the same start, on sample
// data (a private generator: the user's random stream is untouched), under three settings.
bool agrees(Fusion f, at::ScalarType dtype, AdamReference reference) {
  const std::array<AdamSettings, 3> settings{{
      {1e-3, 0.9, 0.999, 0, 1e-8, false, false, false},
      {2e-2, 0.8, 0.99, 0.1, 1e-6, true, true, false},
      {5e-3, 0.9, 0.999, 0.3, 1e-8, false, false, true},
  }};
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(20261202);
  const at::TensorOptions options = at::TensorOptions().dtype(dtype);
  for (const AdamSettings& s : settings) {
    for (const int64_t n : {int64_t{37}, int64_t{1003}}) {
      const at::Tensor start = at::randn({n}, generator, options);
      const auto fresh = [&] {
        return AdamTensors{start.clone(), {}, at::zeros({n}, options), at::zeros({n}, options),
                           s.amsgrad ? at::zeros({n}, options) : at::Tensor()};
      };
      AdamTensors ours = fresh();
      AdamTensors theirs = fresh();
      for (int step = 1; step <= 3; ++step) {
        at::Tensor grad = at::randn({n}, generator, options);
        grad.slice(0, 0, n, 5).zero_();
        ours.grad = grad;
        theirs.grad = grad;
        const double stepSize = -s.lr / (1 - std::pow(s.beta1, step));
        const double bc2 = std::sqrt(1 - std::pow(s.beta2, step));
        onePassIn(f, ours, s, stepSize, bc2);
        reference(theirs, s, stepSize, bc2);
      }
      if (!sameBits(ours.param, theirs.param) || !sameBits(ours.expAvg, theirs.expAvg) ||
          !sameBits(ours.expAvgSq, theirs.expAvgSq) ||
          (s.amsgrad && !sameBits(ours.maxExpAvgSq, theirs.maxExpAvgSq))) {
        return false;
      }
    }
  }
  return true;
}

// The kernel chosen for a dtype (index 0 float32, 1 float64): checked once, on first use.
struct Choice {
  std::once_flag checked;
  bool found = false;
  Fusion fusion = Fusion::Both;
};

Choice& choiceFor(at::ScalarType dtype) {
  static std::array<Choice, 2> choices;
  return choices[dtype == at::kFloat ? 0 : 1];
}

const Choice& chosen(at::ScalarType dtype, AdamReference reference) {
  Choice& choice = choiceFor(dtype);
  std::call_once(choice.checked, [&] {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return;
    at::NoGradGuard noGrad;
    for (const Fusion f : kFusions) {
      if (agrees(f, dtype, reference)) {
        choice.found = true;
        choice.fusion = f;
        return;
      }
    }
  });
  return choice;
}

bool plainCpu(const at::Tensor& t, at::ScalarType dtype, int64_t numel) {
  return t.defined() && t.is_cpu() && t.layout() == at::kStrided && !t.is_mkldnn() && t.scalar_type() == dtype &&
         t.numel() == numel && t.is_contiguous();
}

}  // namespace

bool adamOnePassTakes(const AdamTensors& t, const AdamSettings& s, AdamReference reference) {
  const at::ScalarType dtype = t.param.scalar_type();
  if (dtype != at::kFloat && dtype != at::kDouble) return false;
  const int64_t n = t.param.numel();
  if (n == 0 || !plainCpu(t.param, dtype, n) || !plainCpu(t.grad, dtype, n) || !plainCpu(t.expAvg, dtype, n) ||
      !plainCpu(t.expAvgSq, dtype, n) || (s.amsgrad && !plainCpu(t.maxExpAvgSq, dtype, n))) {
    return false;
  }
  return chosen(dtype, reference).found;
}

const char* adamOnePassKernel(at::ScalarType dtype, AdamReference reference) {
  if (dtype != at::kFloat && dtype != at::kDouble) return nullptr;
  const Choice& choice = chosen(dtype, reference);
  if (!choice.found) return nullptr;
  switch (choice.fusion) {
    case Fusion::Both: return "both";
    case Fusion::AddOnly: return "addOnly";
    case Fusion::Neither: return "neither";
  }
  return nullptr;
}

void adamOnePass(AdamTensors& t, const AdamSettings& s, double stepSize, double biasCorrection2Sqrt) {
  const Choice& choice = choiceFor(t.param.scalar_type());
  onePassIn(choice.fusion, t, s, stepSize, biasCorrection2Sqrt);
  // The in-place ops this pass stands for each move a tensor's version (autograd's check that a
  // tensor saved for a backward was not changed since).
  for (const at::Tensor* tensor : {&t.param, &t.expAvg, &t.expAvgSq, &t.maxExpAvgSq}) {
    if (tensor->defined()) tensor->unsafeGetTensorImpl()->bump_version();
  }
}

}  // namespace flodl

// Reductions over all elements or over dims (keepdim), scans, softmax and friends.
#include <ATen/ATen.h>
#include <ATen/CPUFunctions.h>

#include "call.h"
#include "fast-path.h"

namespace flodl {
namespace {

// sum(t, dims?, keepdim, dtype?), and mean alike. A plain CPU tensor goes straight to the
// structured CPU kernel the dispatcher would reach (its hops, two for the whole-tensor overload,
// are most of a small reduction's cost), under DirectKernelGuard; any other tensor keeps the
// full dispatch (skipping only the autograd layer measured slower: the composite kernels
// re-dispatch inside). `dim` absent (nullopt) is the whole tensor.
#define SUM_LIKE(NAME)                                                         \
  FLODL_OP(NAME) {                                                             \
    const at::Tensor& x = c.tensor(0);                                         \
    const auto dtype = c.optionalDtype(3);                                     \
    if (c.isAbsent(1)) {                                                       \
      if (directCpu(x)) {                                                      \
        DirectKernelGuard guard;                                               \
        return c.result(at::cpu::NAME(x, c10::nullopt, false, dtype));         \
      }                                                                        \
      return c.result(at::NAME(x, dtype));                                     \
    }                                                                          \
    const std::vector<int64_t> dims = c.integers(1);                           \
    const bool keepdim = c.flag(2);                                            \
    if (directCpu(x)) {                                                        \
      DirectKernelGuard guard;                                                 \
      return c.result(at::cpu::NAME(x, dims, keepdim, dtype));                 \
    }                                                                          \
    return c.result(at::NAME(x, dims, keepdim, dtype));                        \
  }
SUM_LIKE(sum)
SUM_LIKE(mean)
#undef SUM_LIKE
// prod(t, dim?, keepdim, dtype?)
FLODL_OP(prod) {
  const at::Tensor& x = c.tensor(0);
  const auto dtype = c.optionalDtype(3);
  if (c.isAbsent(1)) return c.result(at::prod(x, dtype));
  return c.result(at::prod(x, c.integer(1), c.flag(2), dtype));
}
FLODL_OP(maxAll) { return c.result(at::max(c.tensor(0))); }
FLODL_OP(minAll) { return c.result(at::min(c.tensor(0))); }
FLODL_OP(maxDim) { return c.result(at::max(c.tensor(0), c.integer(1), c.flag(2))); }
FLODL_OP(minDim) { return c.result(at::min(c.tensor(0), c.integer(1), c.flag(2))); }
FLODL_OP(amax) { return c.result(at::amax(c.tensor(0), c.integers(1), c.flag(2))); }
FLODL_OP(amin) { return c.result(at::amin(c.tensor(0), c.integers(1), c.flag(2))); }
FLODL_OP(argmax) { return c.result(at::argmax(c.tensor(0), c.optionalInteger(1), c.flag(2))); }
FLODL_OP(argmin) { return c.result(at::argmin(c.tensor(0), c.optionalInteger(1), c.flag(2))); }

// std(t, dims?, unbiased, keepdim, correction?) / var: with a correction (the options form,
// PyTorch's `correction=` keyword), the correction overload, whose absent dims are the whole
// tensor and which keeps them with keepdim. Its correction is c10::optional<int64_t> in
// libtorch 1.x and c10::optional<at::Scalar> in 2.x: Correction converts to either.
struct Correction {
  int64_t value;
  operator c10::optional<int64_t>() const { return value; }
  operator c10::optional<at::Scalar>() const { return at::Scalar(value); }
};
#define SPREAD(NAME)                                                                          \
  FLODL_OP(NAME) {                                                                            \
    const at::Tensor& x = c.tensor(0);                                                        \
    if (!c.isAbsent(4)) {                                                                     \
      const Correction correction{c.integer(4)};                                              \
      if (c.isAbsent(1)) return c.result(at::NAME(x, c10::nullopt, correction, c.flag(3)));   \
      const std::vector<int64_t> dims = c.integers(1);                                        \
      return c.result(at::NAME(x, at::OptionalIntArrayRef(dims), correction, c.flag(3)));     \
    }                                                                                         \
    if (c.isAbsent(1)) return c.result(at::NAME(x, c.flag(2)));                               \
    return c.result(at::NAME(x, at::OptionalIntArrayRef(c.integers(1)), c.flag(2), c.flag(3))); \
  }
SPREAD(std)
SPREAD(var)
#undef SPREAD
// norm(t, p, dims?, keepdim, dtype?): the vector p-norm (absent dims: the whole tensor, kept
// as size-1 dims with keepdim), computed in dtype when given
FLODL_OP(norm) {
  const at::Tensor& x = c.tensor(0);
  const at::Scalar p = c.scalar(1);
  const auto dtype = c.optionalDtype(4);
  if (c.isAbsent(2)) return c.result(at::linalg_vector_norm(x, p, c10::nullopt, c.flag(3), dtype));
  const std::vector<int64_t> dims = c.integers(2);
  return c.result(at::linalg_vector_norm(x, p, at::OptionalIntArrayRef(dims), c.flag(3), dtype));
}
FLODL_OP(logsumexp) { return c.result(at::logsumexp(c.tensor(0), c.integers(1), c.flag(2))); }
FLODL_OP(softmax) { return c.result(at::softmax(c.tensor(0), c.integer(1), c.optionalDtype(2))); }
FLODL_OP(logSoftmax) { return c.result(at::log_softmax(c.tensor(0), c.integer(1), c.optionalDtype(2))); }
FLODL_OP(cumsum) { return c.result(at::cumsum(c.tensor(0), c.integer(1), c.optionalDtype(2))); }
FLODL_OP(cumprod) { return c.result(at::cumprod(c.tensor(0), c.integer(1), c.optionalDtype(2))); }
FLODL_OP(all) {
  const at::Tensor& x = c.tensor(0);
  if (c.isAbsent(1)) return c.result(at::all(x));
  return c.result(at::all(x, c.integer(1), c.flag(2)));
}
FLODL_OP(any) {
  const at::Tensor& x = c.tensor(0);
  if (c.isAbsent(1)) return c.result(at::any(x));
  return c.result(at::any(x, c.integer(1), c.flag(2)));
}
FLODL_OP(countNonzero) {
  const at::Tensor& x = c.tensor(0);
  if (c.isAbsent(1)) return c.result(at::count_nonzero(x));
  return c.result(at::count_nonzero(x, c.integers(1)));
}

}  // namespace

void registerReductionOps(Registry& r) {
  FLODL_REGISTER(r, sum);
  FLODL_REGISTER(r, mean);
  FLODL_REGISTER(r, prod);
  FLODL_REGISTER(r, maxAll);
  FLODL_REGISTER(r, minAll);
  FLODL_REGISTER(r, maxDim);
  FLODL_REGISTER(r, minDim);
  FLODL_REGISTER(r, amax);
  FLODL_REGISTER(r, amin);
  FLODL_REGISTER(r, argmax);
  FLODL_REGISTER(r, argmin);
  FLODL_REGISTER(r, std);
  FLODL_REGISTER(r, var);
  FLODL_REGISTER(r, norm);
  FLODL_REGISTER(r, logsumexp);
  FLODL_REGISTER(r, softmax);
  FLODL_REGISTER(r, logSoftmax);
  FLODL_REGISTER(r, cumsum);
  FLODL_REGISTER(r, cumprod);
  FLODL_REGISTER(r, all);
  FLODL_REGISTER(r, any);
  FLODL_REGISTER(r, countNonzero);
}

}  // namespace flodl

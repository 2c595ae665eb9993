// Factories: zeros/ones/full/empty/rand/randn/randint/arange/linspace/eye and *Like.
#include <ATen/ATen.h>

#include "call.h"

namespace flodl {
namespace {

// Factory arguments end with (dtype, device); dtype -1 lets libtorch infer it.
at::TensorOptions optionsAt(Call& c, size_t dtypeIndex, at::ScalarType fallback) {
  return at::TensorOptions().dtype(c.optionalDtype(dtypeIndex).value_or(fallback)).device(c.device(dtypeIndex + 1));
}

std::vector<int64_t> checkedShape(Call& c, size_t i) {
  std::vector<int64_t> shape = c.integers(i);
  for (int64_t size : shape) {
    if (size < 0) c.state.fail("ERR_SHAPE", c.op, "sizes must be non-negative, got " + std::to_string(size));
  }
  return shape;
}

FLODL_OP(zeros) { return c.result(at::zeros(checkedShape(c, 0), optionsAt(c, 1, at::kFloat))); }
FLODL_OP(ones) { return c.result(at::ones(checkedShape(c, 0), optionsAt(c, 1, at::kFloat))); }
FLODL_OP(empty) { return c.result(at::empty(checkedShape(c, 0), optionsAt(c, 1, at::kFloat))); }
FLODL_OP(rand) { return c.result(at::rand(checkedShape(c, 0), optionsAt(c, 1, at::kFloat))); }
FLODL_OP(randn) { return c.result(at::randn(checkedShape(c, 0), optionsAt(c, 1, at::kFloat))); }

FLODL_OP(full) {
  const std::vector<int64_t> shape = checkedShape(c, 0);
  const at::Scalar value = c.scalar(1);
  // Like torch.full: an int fill gives int64, a float fill float32, a bool fill bool.
  at::ScalarType inferred = value.isBoolean() ? at::kBool : value.isIntegral(false) ? at::kLong : at::kFloat;
  return c.result(at::full(shape, value, optionsAt(c, 2, inferred)));
}

FLODL_OP(randint) {
  const int64_t low = c.integer(0);
  const int64_t high = c.integer(1);
  if (high <= low) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "high must be greater than low");
  return c.result(at::randint(low, high, checkedShape(c, 2), optionsAt(c, 3, at::kLong)));
}

FLODL_OP(arange) {
  const at::Scalar start = c.scalar(0);
  const at::Scalar end = c.scalar(1);
  const at::Scalar step = c.scalar(2);
  if (step.toDouble() == 0) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "step must be non-zero");
  const bool integral = start.isIntegral(false) && end.isIntegral(false) && step.isIntegral(false);
  return c.result(at::arange(start, end, step, optionsAt(c, 3, integral ? at::kLong : at::kFloat)));
}

FLODL_OP(linspace) {
  const int64_t steps = c.integer(2);
  if (steps < 0) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "steps must be non-negative");
  return c.result(at::linspace(c.scalar(0), c.scalar(1), steps, optionsAt(c, 3, at::kFloat)));
}

FLODL_OP(eye) {
  const int64_t n = c.integer(0);
  const int64_t m = c.isAbsent(1) ? n : c.integer(1);
  if (n < 0 || m < 0) c.state.fail("ERR_SHAPE", c.op, "sizes must be non-negative");
  return c.result(at::eye(n, m, optionsAt(c, 2, at::kFloat)));
}

// *Like(t, ..., dtype?, device?): same shape; dtype and device default to the source's.
at::TensorOptions likeOptions(Call& c, const at::Tensor& source, size_t dtypeIndex) {
  return at::TensorOptions()
      .dtype(c.optionalDtype(dtypeIndex).value_or(source.scalar_type()))
      .device(c.isAbsent(dtypeIndex + 1) ? source.device() : c.device(dtypeIndex + 1));
}

FLODL_OP(zerosLike) { return c.result(at::zeros(c.tensor(0).sizes(), likeOptions(c, c.tensor(0), 1))); }
FLODL_OP(onesLike) { return c.result(at::ones(c.tensor(0).sizes(), likeOptions(c, c.tensor(0), 1))); }
FLODL_OP(emptyLike) { return c.result(at::empty(c.tensor(0).sizes(), likeOptions(c, c.tensor(0), 1))); }
FLODL_OP(randLike) { return c.result(at::rand(c.tensor(0).sizes(), likeOptions(c, c.tensor(0), 1))); }
FLODL_OP(randnLike) { return c.result(at::randn(c.tensor(0).sizes(), likeOptions(c, c.tensor(0), 1))); }
FLODL_OP(fullLike) { return c.result(at::full(c.tensor(0).sizes(), c.scalar(1), likeOptions(c, c.tensor(0), 2))); }
FLODL_OP(randintLike) {
  const int64_t low = c.integer(1);
  const int64_t high = c.integer(2);
  if (high <= low) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "high must be greater than low");
  return c.result(at::randint(low, high, c.tensor(0).sizes(), likeOptions(c, c.tensor(0), 3)));
}

}  // namespace

void registerCreationOps(Registry& r) {
  FLODL_REGISTER(r, zeros);
  FLODL_REGISTER(r, ones);
  FLODL_REGISTER(r, empty);
  FLODL_REGISTER(r, rand);
  FLODL_REGISTER(r, randn);
  FLODL_REGISTER(r, full);
  FLODL_REGISTER(r, randint);
  FLODL_REGISTER(r, arange);
  FLODL_REGISTER(r, linspace);
  FLODL_REGISTER(r, eye);
  FLODL_REGISTER(r, zerosLike);
  FLODL_REGISTER(r, onesLike);
  FLODL_REGISTER(r, emptyLike);
  FLODL_REGISTER(r, randLike);
  FLODL_REGISTER(r, randnLike);
  FLODL_REGISTER(r, fullLike);
  FLODL_REGISTER(r, randintLike);
}

}  // namespace flodl

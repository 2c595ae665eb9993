// Element-wise math, activations, comparisons and logical ops (broadcasting binaries).
#include <ATen/ATen.h>

#include <ATen/CPUFunctions.h>

#include "call.h"
#include "fast-path.h"

namespace flodl {
namespace {

#define UNARY(NAME, EXPR)                       \
  FLODL_OP(NAME) {                              \
    const at::Tensor& x = c.tensor(0);          \
    BelowAutogradIf skip(!needsAutograd(x));    \
    return c.result(EXPR);                      \
  }

UNARY(neg, directCpu(x) ? at::cpu::neg(x) : at::neg(x))
UNARY(abs, at::abs(x))
UNARY(sign, at::sign(x))
UNARY(exp, at::exp(x))
UNARY(expm1, at::expm1(x))
UNARY(log, at::log(x))
UNARY(log1p, at::log1p(x))
UNARY(log2, at::log2(x))
UNARY(log10, at::log10(x))
UNARY(sqrt, at::sqrt(x))
UNARY(rsqrt, at::rsqrt(x))
UNARY(square, at::square(x))
UNARY(reciprocal, at::reciprocal(x))
UNARY(sin, at::sin(x))
UNARY(cos, at::cos(x))
UNARY(tan, at::tan(x))
UNARY(asin, at::asin(x))
UNARY(acos, at::acos(x))
UNARY(atan, at::atan(x))
UNARY(sinh, at::sinh(x))
UNARY(cosh, at::cosh(x))
UNARY(tanh, at::tanh(x))
UNARY(erf, at::erf(x))
UNARY(erfinv, at::erfinv(x))
UNARY(sigmoid, at::sigmoid(x))
UNARY(relu, directCpu(x) ? at::cpu::relu(x) : at::relu(x))
UNARY(silu, at::silu(x))
UNARY(floor, at::floor(x))
UNARY(ceil, at::ceil(x))
UNARY(trunc, at::trunc(x))
UNARY(frac, at::frac(x))
UNARY(isnan, at::isnan(x))
UNARY(isinf, at::isinf(x))
UNARY(isfinite, at::isfinite(x))
UNARY(logicalNot, at::logical_not(x))
UNARY(bitwiseNot, at::bitwise_not(x))

FLODL_OP(round) {
  const at::Tensor& x = c.tensor(0);
  const int64_t decimals = c.optionalInteger(1).value_or(0);
  return c.result(decimals == 0 ? at::round(x) : at::round(x, decimals));
}

FLODL_OP(gelu) {
  const at::Tensor& x = c.tensor(0);
  return c.result(at::gelu(x, c.isAbsent(1) ? "none" : c.string(1)));
}

#define BINARY(NAME, EXPR)                        \
  FLODL_OP(NAME) {                                \
    const at::Tensor& a = c.tensor(0);            \
    const at::Tensor& b = c.tensor(1);            \
    BelowAutogradIf skip(!needsAutograd(a, b));   \
    return c.result(EXPR);                        \
  }
#define BINARY_SCALAR(NAME, EXPR)                 \
  FLODL_OP(NAME) {                                \
    const at::Tensor& a = c.tensor(0);            \
    const at::Scalar s = c.scalar(1);             \
    BelowAutogradIf skip(!needsAutograd(a));      \
    return c.result(EXPR);                        \
  }

FLODL_OP(add) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  const at::Scalar alpha = c.isAbsent(2) ? at::Scalar(1) : c.scalar(2);
  if (directCpu(a, b)) return c.result(at::cpu::add(a, b, alpha));
  BelowAutogradIf skip(!needsAutograd(a, b));
  return c.result(at::add(a, b, alpha));
}
FLODL_OP(sub) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  const at::Scalar alpha = c.isAbsent(2) ? at::Scalar(1) : c.scalar(2);
  if (directCpu(a, b)) return c.result(at::cpu::sub(a, b, alpha));
  BelowAutogradIf skip(!needsAutograd(a, b));
  return c.result(at::sub(a, b, alpha));
}
FLODL_OP(addScalar) {
  const at::Tensor& a = c.tensor(0);
  const at::Scalar s = c.scalar(1);
  BelowAutogradIf skip(!needsAutograd(a));
  return c.result(c.isAbsent(2) ? at::add(a, s) : at::add(a, s, c.scalar(2)));
}
FLODL_OP(subScalar) {
  const at::Tensor& a = c.tensor(0);
  const at::Scalar s = c.scalar(1);
  BelowAutogradIf skip(!needsAutograd(a));
  return c.result(c.isAbsent(2) ? at::sub(a, s) : at::sub(a, s, c.scalar(2)));
}
// rsubScalar(t, s) = s - t
BINARY_SCALAR(rsubScalar, at::rsub(a, s))

c10::optional<c10::string_view> roundingMode(Call& c, size_t i, std::string* storage) {
  if (c.isAbsent(i)) return c10::nullopt;
  *storage = c.string(i);
  return c10::string_view(*storage);
}
FLODL_OP(div) {
  std::string mode;
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  if (c.isAbsent(2) && directCpu(a, b)) return c.result(at::cpu::div(a, b));
  BelowAutogradIf skip(!needsAutograd(a, b));
  return c.result(at::div(a, b, roundingMode(c, 2, &mode)));
}
FLODL_OP(divScalar) {
  std::string mode;
  const at::Tensor& a = c.tensor(0);
  const at::Scalar s = c.scalar(1);
  return c.result(at::div(a, s, roundingMode(c, 2, &mode)));
}

BINARY(mul, directCpu(a, b) ? at::cpu::mul(a, b) : at::mul(a, b))
BINARY_SCALAR(mulScalar, at::mul(a, s))
BINARY(pow, at::pow(a, b))
BINARY_SCALAR(powScalar, at::pow(a, s))
FLODL_OP(powScalarBase) {
  const at::Scalar s = c.scalar(0);
  return c.result(at::pow(s, c.tensor(1)));
}
BINARY(remainder, at::remainder(a, b))
BINARY_SCALAR(remainderScalar, at::remainder(a, s))
BINARY(fmod, at::fmod(a, b))
BINARY_SCALAR(fmodScalar, at::fmod(a, s))
BINARY(atan2, at::atan2(a, b))
BINARY(maximum, at::maximum(a, b))
BINARY(minimum, at::minimum(a, b))
BINARY(eq, at::eq(a, b))
BINARY(ne, at::ne(a, b))
BINARY(lt, at::lt(a, b))
BINARY(le, at::le(a, b))
BINARY(gt, at::gt(a, b))
BINARY(ge, at::ge(a, b))
BINARY_SCALAR(eqScalar, at::eq(a, s))
BINARY_SCALAR(neScalar, at::ne(a, s))
BINARY_SCALAR(ltScalar, at::lt(a, s))
BINARY_SCALAR(leScalar, at::le(a, s))
BINARY_SCALAR(gtScalar, at::gt(a, s))
BINARY_SCALAR(geScalar, at::ge(a, s))
BINARY(logicalAnd, at::logical_and(a, b))
BINARY(logicalOr, at::logical_or(a, b))
BINARY(logicalXor, at::logical_xor(a, b))
FLODL_OP(allclose) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  return Napi::Boolean::New(c.env, at::allclose(a, b, c.number(2), c.number(3), c.flag(4)));
}

FLODL_OP(lerp) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  return c.result(at::lerp(a, b, c.scalar(2)));
}

// clamp(t, min?, max?) with scalar bounds
FLODL_OP(clamp) {
  const at::Tensor& x = c.tensor(0);
  const auto low = c.optionalScalar(1);
  const auto high = c.optionalScalar(2);
  if (!low && !high) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "at least one of min and max must be given");
  return c.result(at::clamp(x, low, high));
}
// clampTensor(t, min?, max?) with tensor bounds
FLODL_OP(clampTensor) {
  const at::Tensor& x = c.tensor(0);
  c10::optional<at::Tensor> low;
  c10::optional<at::Tensor> high;
  if (!c.isAbsent(1)) low = c.tensor(1);
  if (!c.isAbsent(2)) high = c.tensor(2);
  if (!low && !high) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "at least one of min and max must be given");
  return c.result(at::clamp(x, low, high));
}

FLODL_OP(where) {
  const at::Tensor& condition = c.tensor(0);
  const at::Tensor& a = c.tensor(1);
  const at::Tensor& b = c.tensor(2);
  return c.result(at::where(condition, a, b));
}

FLODL_OP(leakyRelu) { return c.result(at::leaky_relu(c.tensor(0), c.scalar(1))); }
FLODL_OP(elu) { return c.result(at::elu(c.tensor(0), c.scalar(1))); }
FLODL_OP(softplus) { return c.result(at::softplus(c.tensor(0), c.scalar(1), c.scalar(2))); }

}  // namespace

void registerElementwiseOps(Registry& r) {
  FLODL_REGISTER(r, neg);
  FLODL_REGISTER(r, abs);
  FLODL_REGISTER(r, sign);
  FLODL_REGISTER(r, exp);
  FLODL_REGISTER(r, expm1);
  FLODL_REGISTER(r, log);
  FLODL_REGISTER(r, log1p);
  FLODL_REGISTER(r, log2);
  FLODL_REGISTER(r, log10);
  FLODL_REGISTER(r, sqrt);
  FLODL_REGISTER(r, rsqrt);
  FLODL_REGISTER(r, square);
  FLODL_REGISTER(r, reciprocal);
  FLODL_REGISTER(r, sin);
  FLODL_REGISTER(r, cos);
  FLODL_REGISTER(r, tan);
  FLODL_REGISTER(r, asin);
  FLODL_REGISTER(r, acos);
  FLODL_REGISTER(r, atan);
  FLODL_REGISTER(r, sinh);
  FLODL_REGISTER(r, cosh);
  FLODL_REGISTER(r, tanh);
  FLODL_REGISTER(r, erf);
  FLODL_REGISTER(r, erfinv);
  FLODL_REGISTER(r, sigmoid);
  FLODL_REGISTER(r, relu);
  FLODL_REGISTER(r, silu);
  FLODL_REGISTER(r, floor);
  FLODL_REGISTER(r, ceil);
  FLODL_REGISTER(r, trunc);
  FLODL_REGISTER(r, frac);
  FLODL_REGISTER(r, isnan);
  FLODL_REGISTER(r, isinf);
  FLODL_REGISTER(r, isfinite);
  FLODL_REGISTER(r, logicalNot);
  FLODL_REGISTER(r, bitwiseNot);
  FLODL_REGISTER(r, round);
  FLODL_REGISTER(r, gelu);
  FLODL_REGISTER(r, add);
  FLODL_REGISTER(r, sub);
  FLODL_REGISTER(r, addScalar);
  FLODL_REGISTER(r, subScalar);
  FLODL_REGISTER(r, rsubScalar);
  FLODL_REGISTER(r, div);
  FLODL_REGISTER(r, divScalar);
  FLODL_REGISTER(r, mul);
  FLODL_REGISTER(r, mulScalar);
  FLODL_REGISTER(r, pow);
  FLODL_REGISTER(r, powScalar);
  FLODL_REGISTER(r, powScalarBase);
  FLODL_REGISTER(r, remainder);
  FLODL_REGISTER(r, remainderScalar);
  FLODL_REGISTER(r, fmod);
  FLODL_REGISTER(r, fmodScalar);
  FLODL_REGISTER(r, atan2);
  FLODL_REGISTER(r, maximum);
  FLODL_REGISTER(r, minimum);
  FLODL_REGISTER(r, eq);
  FLODL_REGISTER(r, ne);
  FLODL_REGISTER(r, lt);
  FLODL_REGISTER(r, le);
  FLODL_REGISTER(r, gt);
  FLODL_REGISTER(r, ge);
  FLODL_REGISTER(r, eqScalar);
  FLODL_REGISTER(r, neScalar);
  FLODL_REGISTER(r, ltScalar);
  FLODL_REGISTER(r, leScalar);
  FLODL_REGISTER(r, gtScalar);
  FLODL_REGISTER(r, geScalar);
  FLODL_REGISTER(r, logicalAnd);
  FLODL_REGISTER(r, logicalOr);
  FLODL_REGISTER(r, logicalXor);
  FLODL_REGISTER(r, allclose);
  FLODL_REGISTER(r, lerp);
  FLODL_REGISTER(r, clamp);
  FLODL_REGISTER(r, clampTensor);
  FLODL_REGISTER(r, where);
  FLODL_REGISTER(r, leakyRelu);
  FLODL_REGISTER(r, elu);
  FLODL_REGISTER(r, softplus);
}

}  // namespace flodl

// In-place updates (what optimizers and data staging need). They return nothing: the JS
// side hands back the same Tensor object.
#include <ATen/ATen.h>

#include "call.h"

namespace flodl {
namespace {

#define INPLACE(NAME, EXPR)      \
  FLODL_OP(NAME) {               \
    at::Tensor& self = c.tensor(0); \
    EXPR;                        \
    return c.undefined();        \
  }

INPLACE(add_, c.isAbsent(2) ? self.add_(c.tensor(1)) : self.add_(c.tensor(1), c.scalar(2)))
INPLACE(addScalar_, c.isAbsent(2) ? self.add_(c.scalar(1)) : self.add_(c.scalar(1), c.scalar(2)))
INPLACE(sub_, c.isAbsent(2) ? self.sub_(c.tensor(1)) : self.sub_(c.tensor(1), c.scalar(2)))
INPLACE(subScalar_, self.sub_(c.scalar(1)))
INPLACE(mul_, self.mul_(c.tensor(1)))
INPLACE(mulScalar_, self.mul_(c.scalar(1)))
INPLACE(div_, self.div_(c.tensor(1)))
INPLACE(divScalar_, self.div_(c.scalar(1)))
INPLACE(pow_, self.pow_(c.scalar(1)))
INPLACE(addcmul_, self.addcmul_(c.tensor(1), c.tensor(2), c.scalar(3)))
INPLACE(addcdiv_, self.addcdiv_(c.tensor(1), c.tensor(2), c.scalar(3)))
INPLACE(lerp_, self.lerp_(c.tensor(1), c.scalar(2)))
INPLACE(copy_, self.copy_(c.tensor(1), c.flag(2)))
INPLACE(zero_, self.zero_())
INPLACE(fill_, self.fill_(c.scalar(1)))
INPLACE(sqrt_, self.sqrt_())
INPLACE(neg_, self.neg_())
INPLACE(exp_, self.exp_())
INPLACE(relu_, self.relu_())
INPLACE(erfinv_, self.erfinv_())
INPLACE(tanh_, self.tanh_())
INPLACE(sigmoid_, self.sigmoid_())
INPLACE(maskedFill_, self.masked_fill_(c.tensor(1), c.scalar(2)))
INPLACE(uniform_, self.uniform_(c.number(1), c.number(2)))
INPLACE(normal_, self.normal_(c.number(1), c.number(2)))

FLODL_OP(clamp_) {
  at::Tensor& self = c.tensor(0);
  const auto low = c.optionalScalar(1);
  const auto high = c.optionalScalar(2);
  if (!low && !high) c.state.fail("ERR_INVALID_ARGUMENT", c.op, "at least one of min and max must be given");
  self.clamp_(low, high);
  return c.undefined();
}

}  // namespace

void registerInplaceOps(Registry& r) {
  FLODL_REGISTER(r, add_);
  FLODL_REGISTER(r, addScalar_);
  FLODL_REGISTER(r, sub_);
  FLODL_REGISTER(r, subScalar_);
  FLODL_REGISTER(r, mul_);
  FLODL_REGISTER(r, mulScalar_);
  FLODL_REGISTER(r, div_);
  FLODL_REGISTER(r, divScalar_);
  FLODL_REGISTER(r, pow_);
  FLODL_REGISTER(r, addcmul_);
  FLODL_REGISTER(r, addcdiv_);
  FLODL_REGISTER(r, lerp_);
  FLODL_REGISTER(r, copy_);
  FLODL_REGISTER(r, zero_);
  FLODL_REGISTER(r, fill_);
  FLODL_REGISTER(r, sqrt_);
  FLODL_REGISTER(r, neg_);
  FLODL_REGISTER(r, exp_);
  FLODL_REGISTER(r, relu_);
  FLODL_REGISTER(r, erfinv_);
  FLODL_REGISTER(r, tanh_);
  FLODL_REGISTER(r, sigmoid_);
  FLODL_REGISTER(r, maskedFill_);
  FLODL_REGISTER(r, uniform_);
  FLODL_REGISTER(r, normal_);
  FLODL_REGISTER(r, clamp_);
}

}  // namespace flodl

// Matrix products and the dense solvers.
#include <ATen/ATen.h>

#include <ATen/CPUFunctions.h>

#include "call.h"
#include "fast-path.h"
#include "gemm-cpu.h"

namespace flodl {
namespace {

// matmul of two matrices is mm; taking the kernel directly skips matmul's dispatch layers.
FLODL_OP(matmul) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  if (a.dim() == 2 && b.dim() == 2 && directCpu(a, b)) return c.result(mmCpu(a, b));
  BelowAutogradIf skip(!needsAutograd(a, b));
  return c.result(at::matmul(a, b));
}
FLODL_OP(mm) {
  const at::Tensor& a = c.tensor(0);
  const at::Tensor& b = c.tensor(1);
  if (directCpu(a, b)) return c.result(mmCpu(a, b));
  return c.result(at::mm(a, b));
}
FLODL_OP(bmm) { return c.result(at::bmm(c.tensor(0), c.tensor(1))); }
FLODL_OP(mv) { return c.result(at::mv(c.tensor(0), c.tensor(1))); }
FLODL_OP(dot) { return c.result(at::dot(c.tensor(0), c.tensor(1))); }
FLODL_OP(outer) { return c.result(at::outer(c.tensor(0), c.tensor(1))); }
FLODL_OP(t) { return c.result(at::t(c.tensor(0))); }
// addmm(input, mat1, mat2, beta, alpha) = beta * input + alpha * (mat1 @ mat2)
FLODL_OP(addmm) {
  return c.result(at::addmm(c.tensor(0), c.tensor(1), c.tensor(2), c.scalar(3), c.scalar(4)));
}
FLODL_OP(einsum) { return c.result(at::einsum(c.string(0), c.tensors(1))); }
FLODL_OP(trace) { return c.result(at::trace(c.tensor(0))); }
FLODL_OP(solve) { return c.result(at::linalg_solve(c.tensor(0), c.tensor(1))); }
FLODL_OP(inv) { return c.result(at::linalg_inv(c.tensor(0))); }
FLODL_OP(det) { return c.result(at::linalg_det(c.tensor(0))); }
FLODL_OP(cholesky) { return c.result(at::linalg_cholesky(c.tensor(0), c.flag(1))); }
FLODL_OP(qr) { return c.result(at::linalg_qr(c.tensor(0), c.isAbsent(1) ? "reduced" : c.string(1))); }
FLODL_OP(pinv) { return c.result(at::linalg_pinv(c.tensor(0))); }

}  // namespace

void registerLinalgOps(Registry& r) {
  FLODL_REGISTER(r, matmul);
  FLODL_REGISTER(r, mm);
  FLODL_REGISTER(r, bmm);
  FLODL_REGISTER(r, mv);
  FLODL_REGISTER(r, dot);
  FLODL_REGISTER(r, outer);
  FLODL_REGISTER(r, t);
  FLODL_REGISTER(r, addmm);
  FLODL_REGISTER(r, einsum);
  FLODL_REGISTER(r, trace);
  FLODL_REGISTER(r, solve);
  FLODL_REGISTER(r, inv);
  FLODL_REGISTER(r, det);
  FLODL_REGISTER(r, cholesky);
  FLODL_REGISTER(r, qr);
  FLODL_REGISTER(r, pinv);
}

}  // namespace flodl

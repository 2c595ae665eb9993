// Views, reshaping, joining, splitting, indexing, gathering/scattering and sorting.
#include <ATen/ATen.h>
#include <ATen/CPUFunctions.h>

#include "call.h"
#include "fast-path.h"

namespace flodl {
namespace {

FLODL_OP(reshape) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::reshape(x, c.integerTail(1)));
}
FLODL_OP(view) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(x.view(c.integerTail(1)));
}
FLODL_OP(flatten) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::flatten(x, c.integer(1), c.integer(2)));
}
FLODL_OP(unflatten) { return c.result(c.tensor(0).unflatten(c.integer(1), c.integers(2))); }
FLODL_OP(squeeze) {
  const at::Tensor& x = c.tensor(0);
  if (c.isAbsent(1)) return c.result(at::squeeze(x));
  return c.result(at::squeeze(x, c.integer(1)));
}
FLODL_OP(unsqueeze) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::unsqueeze(x, c.integer(1)));
}
FLODL_OP(transpose) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::transpose(x, c.integer(1), c.integer(2)));
}
FLODL_OP(permute) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::permute(x, c.integerTail(1)));
}
FLODL_OP(movedim) { return c.result(at::movedim(c.tensor(0), c.integers(1), c.integers(2))); }
FLODL_OP(expand) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(x.expand(c.integerTail(1)));
}
FLODL_OP(broadcastTo) { return c.result(at::broadcast_to(c.tensor(0), c.integers(1))); }
FLODL_OP(narrow) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::narrow(x, c.integer(1), c.integer(2), c.integer(3)));
}
// slice(t, dim, start?, end?, step)
FLODL_OP(slice) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::slice(x, c.integer(1), c.optionalInteger(2), c.optionalInteger(3), c.integer(4)));
}
FLODL_OP(select) {
  const at::Tensor& x = c.tensor(0);
  BelowAutogradIf skip(!needsAutograd(x));
  return c.result(at::select(x, c.integer(1), c.integer(2)));
}
FLODL_OP(indexSelect) {
  const at::Tensor& x = c.tensor(0);
  const at::Tensor& index = c.tensor(2);
  if (directCpu(x, index)) {
    DirectKernelGuard guard;
    return c.result(at::cpu::index_select(x, c.integer(1), index));
  }
  return c.result(at::index_select(x, c.integer(1), index));
}
FLODL_OP(gather) {
  const at::Tensor& x = c.tensor(0);
  return c.result(at::gather(x, c.integer(1), c.tensor(2)));
}
FLODL_OP(scatter) { return c.result(at::scatter(c.tensor(0), c.integer(1), c.tensor(2), c.tensor(3))); }
FLODL_OP(scatterValue) { return c.result(at::scatter(c.tensor(0), c.integer(1), c.tensor(2), c.scalar(3))); }
FLODL_OP(scatterAdd) { return c.result(at::scatter_add(c.tensor(0), c.integer(1), c.tensor(2), c.tensor(3))); }
FLODL_OP(scatterReduce) {
  return c.result(at::scatter_reduce(c.tensor(0), c.integer(1), c.tensor(2), c.tensor(3), c.string(4), c.flag(5)));
}
FLODL_OP(maskedFill) { return c.result(at::masked_fill(c.tensor(0), c.tensor(1), c.scalar(2))); }
FLODL_OP(maskedFillTensor) { return c.result(at::masked_fill(c.tensor(0), c.tensor(1), c.tensor(2))); }
FLODL_OP(maskedSelect) { return c.result(at::masked_select(c.tensor(0), c.tensor(1))); }
FLODL_OP(nonzero) { return c.result(at::nonzero(c.tensor(0))); }
// index(t, [index tensors]): advanced indexing along the leading dims
FLODL_OP(index) {
  const at::Tensor& x = c.tensor(0);
  std::vector<at::Tensor> indices = c.tensors(1);
  c10::List<c10::optional<at::Tensor>> list;
  for (auto& tensor : indices) list.push_back(tensor);
  return c.result(at::index(x, list));
}
FLODL_OP(cat) { return c.result(at::cat(c.tensors(0), c.integer(1))); }
FLODL_OP(stack) { return c.result(at::stack(c.tensors(0), c.integer(1))); }
FLODL_OP(chunk) { return c.result(at::chunk(c.tensor(0), c.integer(1), c.integer(2))); }
// split(t, size | sizes, dim)
FLODL_OP(split) {
  const at::Tensor& x = c.tensor(0);
  if (c.info[1].IsNumber()) return c.result(at::split(x, c.integer(1), c.integer(2)));
  return c.result(at::split_with_sizes(x, c.integers(1), c.integer(2)));
}
FLODL_OP(unbind) { return c.result(at::unbind(c.tensor(0), c.integer(1))); }
FLODL_OP(repeat) {
  const at::Tensor& x = c.tensor(0);
  return c.result(x.repeat(c.integers(1)));
}
FLODL_OP(repeatInterleave) { return c.result(at::repeat_interleave(c.tensor(0), c.integer(1), c.optionalInteger(2))); }
FLODL_OP(flip) { return c.result(at::flip(c.tensor(0), c.integers(1))); }
FLODL_OP(roll) { return c.result(at::roll(c.tensor(0), c.integers(1), c.integers(2))); }
// sort(t, dim, descending, stable) -> [values, indices]
FLODL_OP(sort) { return c.result(at::sort(c.tensor(0), c.flag(3), c.integer(1), c.flag(2))); }
FLODL_OP(argsort) { return c.result(std::get<1>(at::sort(c.tensor(0), c.flag(3), c.integer(1), c.flag(2)))); }
// topk(t, k, dim, largest, sorted) -> [values, indices]
FLODL_OP(topk) { return c.result(at::topk(c.tensor(0), c.integer(1), c.integer(2), c.flag(3), c.flag(4))); }
FLODL_OP(tril) { return c.result(at::tril(c.tensor(0), c.integer(1))); }
FLODL_OP(triu) { return c.result(at::triu(c.tensor(0), c.integer(1))); }
FLODL_OP(diag) { return c.result(at::diag(c.tensor(0), c.integer(1))); }
FLODL_OP(oneHot) { return c.result(at::one_hot(c.tensor(0), c.integer(1))); }

}  // namespace

void registerShapeOps(Registry& r) {
  FLODL_REGISTER(r, reshape);
  FLODL_REGISTER(r, view);
  FLODL_REGISTER(r, flatten);
  FLODL_REGISTER(r, unflatten);
  FLODL_REGISTER(r, squeeze);
  FLODL_REGISTER(r, unsqueeze);
  FLODL_REGISTER(r, transpose);
  FLODL_REGISTER(r, permute);
  FLODL_REGISTER(r, movedim);
  FLODL_REGISTER(r, expand);
  FLODL_REGISTER(r, broadcastTo);
  FLODL_REGISTER(r, narrow);
  FLODL_REGISTER(r, slice);
  FLODL_REGISTER(r, select);
  FLODL_REGISTER(r, indexSelect);
  FLODL_REGISTER(r, gather);
  FLODL_REGISTER(r, scatter);
  FLODL_REGISTER(r, scatterValue);
  FLODL_REGISTER(r, scatterAdd);
  FLODL_REGISTER(r, scatterReduce);
  FLODL_REGISTER(r, maskedFill);
  FLODL_REGISTER(r, maskedFillTensor);
  FLODL_REGISTER(r, maskedSelect);
  FLODL_REGISTER(r, nonzero);
  FLODL_REGISTER(r, index);
  FLODL_REGISTER(r, cat);
  FLODL_REGISTER(r, stack);
  FLODL_REGISTER(r, chunk);
  FLODL_REGISTER(r, split);
  FLODL_REGISTER(r, unbind);
  FLODL_REGISTER(r, repeat);
  FLODL_REGISTER(r, repeatInterleave);
  FLODL_REGISTER(r, flip);
  FLODL_REGISTER(r, roll);
  FLODL_REGISTER(r, sort);
  FLODL_REGISTER(r, argsort);
  FLODL_REGISTER(r, topk);
  FLODL_REGISTER(r, tril);
  FLODL_REGISTER(r, triu);
  FLODL_REGISTER(r, diag);
  FLODL_REGISTER(r, oneHot);
}

}  // namespace flodl

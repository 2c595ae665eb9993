// Loss primitives, each with reduction none / mean / sum. Arguments are validated in
// TypeScript (@flodl/autograd functional/loss*.ts); here they are read and handed to ATen the
// way torch.nn.functional does (broadcasting, weight expansion, batchmean).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/Reduction.h>

#include <string>
#include <vector>

#include "call.h"

namespace flodl {
namespace {

// Argument i as at::Reduction: 'none' | 'mean' | 'sum'.
int64_t reduction(Call& c, size_t i) {
  const std::string name = c.string(i);
  if (name == "none") return at::Reduction::None;
  if (name == "mean") return at::Reduction::Mean;
  if (name == "sum") return at::Reduction::Sum;
  c.invalid(i, "a reduction: 'none', 'mean' or 'sum'");
}

c10::optional<at::Tensor> optionalTensor(Call& c, size_t i) {
  if (c.isAbsent(i)) return c10::nullopt;
  return c.tensor(i);
}

// Input and target broadcast to one shape, as torch.nn.functional does for element-wise losses.
std::vector<at::Tensor> broadcastPair(Call& c) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& target = c.tensor(1);
  if (input.sizes() == target.sizes()) return {input, target};
  return at::broadcast_tensors({input, target});
}

// mseLoss(input, target, reduction)
FLODL_OP(mseLoss) {
  const auto pair = broadcastPair(c);
  return c.result(at::mse_loss(pair[0], pair[1], reduction(c, 2)));
}

// l1Loss(input, target, reduction)
FLODL_OP(l1Loss) {
  const auto pair = broadcastPair(c);
  return c.result(at::l1_loss(pair[0], pair[1], reduction(c, 2)));
}

// smoothL1Loss(input, target, reduction, beta): beta = 0 is the L1 loss.
FLODL_OP(smoothL1Loss) {
  const auto pair = broadcastPair(c);
  const double beta = c.number(3);
  if (beta == 0.0) return c.result(at::l1_loss(pair[0], pair[1], reduction(c, 2)));
  return c.result(at::smooth_l1_loss(pair[0], pair[1], reduction(c, 2), beta));
}

// huberLoss(input, target, reduction, delta)
FLODL_OP(huberLoss) {
  const auto pair = broadcastPair(c);
  return c.result(at::huber_loss(pair[0], pair[1], reduction(c, 2), c.number(3)));
}

// crossEntropy(input, target, weight?, reduction, ignoreIndex, labelSmoothing)
// Class indices (int64) or class probabilities (floating, the input's shape) as target.
FLODL_OP(crossEntropy) {
  return c.result(at::cross_entropy_loss(c.tensor(0), c.tensor(1), optionalTensor(c, 2), reduction(c, 3), c.integer(4),
                                         c.number(5)));
}

// nllLoss(input, target, weight?, reduction, ignoreIndex), for (N, C, d1, ..., dK) inputs too.
FLODL_OP(nllLoss) {
  return c.result(at::nll_loss_nd(c.tensor(0), c.tensor(1), optionalTensor(c, 2), reduction(c, 3), c.integer(4)));
}

// binaryCrossEntropy(input, target, weight?, reduction): weight expands to the target's shape.
FLODL_OP(binaryCrossEntropy) {
  const at::Tensor& target = c.tensor(1);
  c10::optional<at::Tensor> weight = optionalTensor(c, 2);
  if (weight.has_value()) weight = weight->expand(at::infer_size(target.sizes(), weight->sizes()));
  return c.result(at::binary_cross_entropy(c.tensor(0), target, weight, reduction(c, 3)));
}

// binaryCrossEntropyWithLogits(input, target, weight?, posWeight?, reduction)
FLODL_OP(binaryCrossEntropyWithLogits) {
  return c.result(at::binary_cross_entropy_with_logits(c.tensor(0), c.tensor(1), optionalTensor(c, 2),
                                                       optionalTensor(c, 3), reduction(c, 4)));
}

// klDiv(input, target, reduction, logTarget): reduction may also be 'batchmean', the sum over
// all elements divided by the batch size (the size of dim 0).
FLODL_OP(klDiv) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& target = c.tensor(1);
  const bool logTarget = c.flag(3);
  if (c.string(2) == "batchmean") {
    at::Tensor sum = at::kl_div(input, target, at::Reduction::Sum, logTarget);
    return c.result(input.dim() == 0 ? sum : sum.div(input.size(0)));
  }
  return c.result(at::kl_div(input, target, reduction(c, 2), logTarget));
}

// cosineEmbeddingLoss(input1, input2, target, margin, reduction)
FLODL_OP(cosineEmbeddingLoss) {
  return c.result(at::cosine_embedding_loss(c.tensor(0), c.tensor(1), c.tensor(2), c.number(3), reduction(c, 4)));
}

// marginRankingLoss(input1, input2, target, margin, reduction)
FLODL_OP(marginRankingLoss) {
  return c.result(at::margin_ranking_loss(c.tensor(0), c.tensor(1), c.tensor(2), c.number(3), reduction(c, 4)));
}

// tripletMarginLoss(anchor, positive, negative, margin, p, eps, swap, reduction)
FLODL_OP(tripletMarginLoss) {
  return c.result(at::triplet_margin_loss(c.tensor(0), c.tensor(1), c.tensor(2), c.number(3), c.number(4), c.number(5),
                                          c.flag(6), reduction(c, 7)));
}

// Argument i as lengths: an array of integers, or an integer tensor read on the CPU.
std::vector<int64_t> lengths(Call& c, size_t i) {
  if (c.info[i].IsArray()) return c.integers(i);
  const at::Tensor values = c.tensor(i).to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + values.numel());
}

// ctcLoss(logProbs, targets, inputLengths, targetLengths, blank, reduction, zeroInfinity)
// Lengths are arrays of integers or integer tensors (both tensors: the tensor overload).
FLODL_OP(ctcLoss) {
  const at::Tensor& logProbs = c.tensor(0);
  const at::Tensor& targets = c.tensor(1);
  const int64_t blank = c.integer(4);
  const int64_t mode = reduction(c, 5);
  const bool zeroInfinity = c.flag(6);
  if (!c.info[2].IsArray() && !c.info[3].IsArray()) {
    return c.result(at::ctc_loss(logProbs, targets, c.tensor(2), c.tensor(3), blank, mode, zeroInfinity));
  }
  return c.result(at::ctc_loss(logProbs, targets, lengths(c, 2), lengths(c, 3), blank, mode, zeroInfinity));
}

// poissonNllLoss(input, target, logInput, full, eps, reduction)
FLODL_OP(poissonNllLoss) {
  return c.result(
      at::poisson_nll_loss(c.tensor(0), c.tensor(1), c.flag(2), c.flag(3), c.number(4), reduction(c, 5)));
}

}  // namespace

void registerLossOps(Registry& r) {
  FLODL_REGISTER(r, mseLoss);
  FLODL_REGISTER(r, l1Loss);
  FLODL_REGISTER(r, smoothL1Loss);
  FLODL_REGISTER(r, huberLoss);
  FLODL_REGISTER(r, crossEntropy);
  FLODL_REGISTER(r, nllLoss);
  FLODL_REGISTER(r, binaryCrossEntropy);
  FLODL_REGISTER(r, binaryCrossEntropyWithLogits);
  FLODL_REGISTER(r, klDiv);
  FLODL_REGISTER(r, cosineEmbeddingLoss);
  FLODL_REGISTER(r, marginRankingLoss);
  FLODL_REGISTER(r, tripletMarginLoss);
  FLODL_REGISTER(r, ctcLoss);
  FLODL_REGISTER(r, poissonNllLoss);
}

}  // namespace flodl

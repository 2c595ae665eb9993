// Recurrent layers (fused multi-layer GRU / LSTM, single cells) and scaled dot-product attention.
// Arguments are validated in TypeScript (@flodl/autograd functional/recurrent*.ts and
// attention.ts); here they are only read and handed to ATen.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "call.h"

namespace flodl {
namespace {

// What gru and lstm share: the fused op's flags and the shape of its initial state.
struct RecurrentLayout {
  bool hasBiases;
  int64_t numLayers;
  double dropout;
  bool train;
  bool bidirectional;
  bool batchFirst;
  bool unbatched;  // a 2-D input: one sequence, run as a batch of one

  // A zero initial state [numLayers * directions, batch, hidden], hidden read off w_hh.
  at::Tensor zeroState(const at::Tensor& input, const std::vector<at::Tensor>& params) const {
    const int64_t batch = input.size(batchFirst ? 0 : 1);
    const int64_t hidden = params.at(1).size(1);
    return at::zeros({numLayers * (bidirectional ? 2 : 1), batch, hidden}, input.options());
  }
  at::Tensor batchInput(const at::Tensor& input) const {
    return unbatched ? input.unsqueeze(batchFirst ? 0 : 1) : input;
  }
  at::Tensor batchState(const at::Tensor& state) const { return unbatched ? state.unsqueeze(1) : state; }
  at::Tensor unbatchOutput(const at::Tensor& output) const {
    return unbatched ? output.squeeze(batchFirst ? 0 : 1) : output;
  }
  at::Tensor unbatchState(const at::Tensor& state) const { return unbatched ? state.squeeze(1) : state; }
};

// Reads (hasBiases, numLayers, dropout, train, bidirectional, batchFirst) from argument `first` on.
RecurrentLayout readLayout(Call& c, size_t first, const at::Tensor& input) {
  return RecurrentLayout{c.flag(first),     c.integer(first + 1), c.number(first + 2),   c.flag(first + 3),
                         c.flag(first + 4), c.flag(first + 5),    input.dim() == 2};
}

// gru(input, hx?, params[], hasBiases, numLayers, dropout, train, bidirectional, batchFirst)
//   -> [output, hN]
FLODL_OP(gru) {
  const at::Tensor& rawInput = c.tensor(0);
  const std::vector<at::Tensor> params = c.tensors(2);
  const RecurrentLayout layout = readLayout(c, 3, rawInput);
  const at::Tensor input = layout.batchInput(rawInput);
  const at::Tensor hx = c.isAbsent(1) ? layout.zeroState(input, params) : layout.batchState(c.tensor(1));
  auto [output, hN] = at::gru(input, hx, params, layout.hasBiases, layout.numLayers, layout.dropout, layout.train,
                              layout.bidirectional, layout.batchFirst);
  return c.result(std::vector<at::Tensor>{layout.unbatchOutput(output), layout.unbatchState(hN)});
}

// lstm(input, [h0, c0]?, params[], hasBiases, numLayers, dropout, train, bidirectional, batchFirst)
//   -> [output, hN, cN]
FLODL_OP(lstm) {
  const at::Tensor& rawInput = c.tensor(0);
  const std::vector<at::Tensor> params = c.tensors(2);
  const RecurrentLayout layout = readLayout(c, 3, rawInput);
  const at::Tensor input = layout.batchInput(rawInput);
  std::vector<at::Tensor> hx;
  if (c.isAbsent(1)) {
    hx = {layout.zeroState(input, params), layout.zeroState(input, params)};
  } else {
    for (const at::Tensor& state : c.tensors(1)) hx.push_back(layout.batchState(state));
  }
  auto [output, hN, cN] = at::lstm(input, hx, params, layout.hasBiases, layout.numLayers, layout.dropout, layout.train,
                                   layout.bidirectional, layout.batchFirst);
  return c.result(std::vector<at::Tensor>{layout.unbatchOutput(output), layout.unbatchState(hN),
                                          layout.unbatchState(cN)});
}

// cudnnFlattenWeights(params[], weightStride0, inputSize, mode, hiddenSize, projSize, numLayers,
//   batchFirst, bidirectional): copies an RNN's weights into one buffer in cuDNN's layout and
// makes every weight a view into it (PyTorch's RNNBase.flatten_parameters), so cuDNN reads them
// in place instead of compacting them on every call. CUDA weights only; mode is cuDNN's
// (0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU).
FLODL_OP(cudnnFlattenWeights) {
  const std::vector<at::Tensor> params = c.tensors(0);
  for (const at::Tensor& param : params) {
    if (!param.is_cuda()) c.state.fail("ERR_DEVICE", c.op, "cuDNN weights must live on a CUDA device");
  }
  at::NoGradGuard noGrad;
  at::_cudnn_rnn_flatten_weight(params, c.integer(1), c.integer(2), c.integer(3), c.integer(4), c.integer(5),
                                c.integer(6), c.flag(7), c.flag(8));
  return c.env.Undefined();
}

c10::optional<at::Tensor> optionalTensor(Call& c, size_t i) {
  if (c.isAbsent(i)) return c10::nullopt;
  return c.tensor(i);
}

// A cell's zero state [batch, hidden] (or [hidden] for one sample), hidden read off w_hh.
at::Tensor zeroCellState(const at::Tensor& input, const at::Tensor& wHh) {
  if (input.dim() == 1) return at::zeros({wHh.size(1)}, input.options());
  return at::zeros({input.size(0), wHh.size(1)}, input.options());
}

// gruCell(input, hx?, wIh, wHh, bIh?, bHh?) -> h'. A 1-D input is one sample.
FLODL_OP(gruCell) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& wIh = c.tensor(2);
  const at::Tensor& wHh = c.tensor(3);
  const at::Tensor hx = c.isAbsent(1) ? zeroCellState(input, wHh) : c.tensor(1);
  const bool unbatched = input.dim() == 1;
  at::Tensor h = at::gru_cell(unbatched ? input.unsqueeze(0) : input, unbatched ? hx.unsqueeze(0) : hx, wIh, wHh,
                              optionalTensor(c, 4), optionalTensor(c, 5));
  return c.result(unbatched ? h.squeeze(0) : h);
}

// lstmCell(input, [hx, cx]?, wIh, wHh, bIh?, bHh?) -> [h', c']. A 1-D input is one sample.
FLODL_OP(lstmCell) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& wIh = c.tensor(2);
  const at::Tensor& wHh = c.tensor(3);
  const bool unbatched = input.dim() == 1;
  std::vector<at::Tensor> hx;
  if (c.isAbsent(1)) {
    hx = {zeroCellState(input, wHh), zeroCellState(input, wHh)};
  } else {
    hx = c.tensors(1);
  }
  if (unbatched) {
    for (at::Tensor& state : hx) state = state.unsqueeze(0);
  }
  auto [h, cell] = at::lstm_cell(unbatched ? input.unsqueeze(0) : input, hx, wIh, wHh, optionalTensor(c, 4),
                                 optionalTensor(c, 5));
  if (unbatched) return c.result(std::make_tuple(h.squeeze(0), cell.squeeze(0)));
  return c.result(std::make_tuple(h, cell));
}

// softmax(Q K^T * scale + mask) V from ATen ops: PyTorch's reference math for scaled dot-product
// attention, for libtorch builds without the fused op (1.x) or without its `scale` (2.0).
[[maybe_unused]] at::Tensor composedAttention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                             const c10::optional<at::Tensor>& mask, double dropoutP, bool isCausal,
                             c10::optional<double> scale) {
  const double factor = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const double negativeInfinity = -std::numeric_limits<double>::infinity();
  at::Tensor scores = at::matmul(query, key.transpose(-2, -1)).mul(factor);
  if (isCausal) {
    const at::Tensor allowed = at::ones({query.size(-2), key.size(-2)}, query.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(allowed.logical_not(), negativeInfinity);
  }
  if (mask.has_value()) {
    if (mask->scalar_type() == at::kBool) {
      scores = scores.masked_fill(mask->logical_not(), negativeInfinity);
    } else {
      scores = scores.add(*mask);
    }
  }
  at::Tensor weights = at::softmax(scores, -1);
  // No dropout call at p = 0, so the random stream is untouched, as with the fused op.
  if (dropoutP > 0) weights = at::dropout(weights, dropoutP, true);
  return at::matmul(weights, value);
}

// scaledDotProductAttention(query, key, value, attnMask?, dropoutP, isCausal, scale?)
FLODL_OP(scaledDotProductAttention) {
  const at::Tensor& query = c.tensor(0);
  const at::Tensor& key = c.tensor(1);
  const at::Tensor& value = c.tensor(2);
  const c10::optional<at::Tensor> mask = optionalTensor(c, 3);
  const double dropoutP = c.number(4);
  const bool isCausal = c.flag(5);
  const c10::optional<double> scale = c.isAbsent(6) ? c10::nullopt : c10::optional<double>(c.number(6));
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  return c.result(at::scaled_dot_product_attention(query, key, value, mask, dropoutP, isCausal, scale));
#elif TORCH_VERSION_MAJOR == 2
  if (!scale.has_value()) {
    return c.result(at::scaled_dot_product_attention(query, key, value, mask, dropoutP, isCausal));
  }
  return c.result(composedAttention(query, key, value, mask, dropoutP, isCausal, scale));
#else
  return c.result(composedAttention(query, key, value, mask, dropoutP, isCausal, scale));
#endif
}

}  // namespace

void registerRnnOps(Registry& r) {
  FLODL_REGISTER(r, gru);
  FLODL_REGISTER(r, lstm);
  FLODL_REGISTER(r, cudnnFlattenWeights);
  FLODL_REGISTER(r, gruCell);
  FLODL_REGISTER(r, lstmCell);
  FLODL_REGISTER(r, scaledDotProductAttention);
}

}  // namespace flodl

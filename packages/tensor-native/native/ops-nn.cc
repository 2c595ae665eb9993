// Neural-network primitives: linear maps, convolutions, pooling, normalisation, dropout,
// embeddings, activations, padding and resampling. Each entry is one ATen call (rmsNorm is
// composed of ATen ops), so libtorch's autograd differentiates all of them, except 2-d max
// pooling of contiguous CPU tensors, which runs our kernel (maxpool-cpu.h) under its own
// autograd node. The functional
// layer of @flodl/autograd validates the arguments; here libtorch asserts. Only ATen
// functions present in both libtorch 1.13 and 2.x are used.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <string>
#include <vector>

#include "call.h"
#include "gemm-cpu.h"
#include "maxpool-cpu.h"

namespace flodl {
namespace {

c10::optional<at::Tensor> optionalTensor(Call& c, size_t i) {
  if (c.isAbsent(i)) return c10::nullopt;
  return c.tensor(i);
}

std::vector<double> numbers(Call& c, size_t i) {
  if (i >= c.length() || !c.info[i].IsArray()) c.invalid(i, "an array of numbers");
  Napi::Array array = c.info[i].As<Napi::Array>();
  std::vector<double> out(array.Length());
  for (uint32_t k = 0; k < array.Length(); ++k) {
    Napi::Value value = array.Get(k);
    if (!value.IsNumber()) c.invalid(i, "an array of numbers");
    out[k] = value.As<Napi::Number>().DoubleValue();
  }
  return out;
}

// PyTorch passes torch.backends.cudnn.enabled to the normalisation kernels.
bool cudnnEnabled() { return at::globalContext().userEnabledCuDNN(); }

// ---- linear maps ----

FLODL_OP(linear) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& weight = c.tensor(1);
  const c10::optional<at::Tensor> bias = optionalTensor(c, 2);
  if (linearCpuTakes(input, weight, bias)) return c.result(linearCpu(input, weight, bias));
  return c.result(at::linear(input, weight, bias));
}
FLODL_OP(bilinear) { return c.result(at::bilinear(c.tensor(0), c.tensor(1), c.tensor(2), optionalTensor(c, 3))); }

// ---- convolutions: the weight's rank picks 1d, 2d or 3d ----

// conv(input, weight, bias?, stride, padding: integers | 'same' | 'valid', dilation, groups)
FLODL_OP(conv) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& weight = c.tensor(1);
  const c10::optional<at::Tensor> bias = optionalTensor(c, 2);
  const std::vector<int64_t> stride = c.integers(3);
  const std::vector<int64_t> dilation = c.integers(5);
  const int64_t groups = c.integer(6);
  if (c.length() > 4 && c.info[4].IsString()) {
    const std::string padding = c.string(4);
    switch (weight.dim()) {
      case 3: return c.result(at::conv1d(input, weight, bias, stride, padding, dilation, groups));
      case 4: return c.result(at::conv2d(input, weight, bias, stride, padding, dilation, groups));
      case 5: return c.result(at::conv3d(input, weight, bias, stride, padding, dilation, groups));
    }
  } else {
    const std::vector<int64_t> padding = c.integers(4);
    switch (weight.dim()) {
      case 3: return c.result(at::conv1d(input, weight, bias, stride, padding, dilation, groups));
      case 4: return c.result(at::conv2d(input, weight, bias, stride, padding, dilation, groups));
      case 5: return c.result(at::conv3d(input, weight, bias, stride, padding, dilation, groups));
    }
  }
  c.invalid(1, "a 3-d, 4-d or 5-d weight");
}

// convTranspose(input, weight, bias?, stride, padding, outputPadding, groups, dilation)
FLODL_OP(convTranspose) {
  const at::Tensor& input = c.tensor(0);
  const at::Tensor& weight = c.tensor(1);
  const c10::optional<at::Tensor> bias = optionalTensor(c, 2);
  const std::vector<int64_t> stride = c.integers(3);
  const std::vector<int64_t> padding = c.integers(4);
  const std::vector<int64_t> outputPadding = c.integers(5);
  const int64_t groups = c.integer(6);
  const std::vector<int64_t> dilation = c.integers(7);
  switch (weight.dim()) {
    case 3: return c.result(at::conv_transpose1d(input, weight, bias, stride, padding, outputPadding, groups, dilation));
    case 4: return c.result(at::conv_transpose2d(input, weight, bias, stride, padding, outputPadding, groups, dilation));
    case 5: return c.result(at::conv_transpose3d(input, weight, bias, stride, padding, outputPadding, groups, dilation));
  }
  c.invalid(1, "a 3-d, 4-d or 5-d weight");
}

// ---- pooling: the kernel size's length picks 1d, 2d or 3d ----

// maxPool(input, kernelSize, stride, padding, dilation, ceilMode, withIndices) -> out | [out, indices]
FLODL_OP(maxPool) {
  const at::Tensor& input = c.tensor(0);
  const std::vector<int64_t> kernel = c.integers(1);
  const std::vector<int64_t> stride = c.integers(2);
  const std::vector<int64_t> padding = c.integers(3);
  const std::vector<int64_t> dilation = c.integers(4);
  const bool ceil = c.flag(5);
  const bool withIndices = c.flag(6);
  switch (kernel.size()) {
    case 1:
      if (withIndices) return c.result(at::max_pool1d_with_indices(input, kernel, stride, padding, dilation, ceil));
      return c.result(at::max_pool1d(input, kernel, stride, padding, dilation, ceil));
    case 2: {
      const PoolWindow2d window{kernel, stride, padding, dilation, ceil};
      if (maxPool2dCpuTakes(input, window)) {
        auto [values, indices] = maxPool2dCpu(input, window, withIndices);
        if (withIndices) return c.result(std::make_tuple(values, *indices));
        return c.result(values);
      }
      if (withIndices) return c.result(at::max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil));
      return c.result(at::max_pool2d(input, kernel, stride, padding, dilation, ceil));
    }
    case 3:
      if (withIndices) return c.result(at::max_pool3d_with_indices(input, kernel, stride, padding, dilation, ceil));
      return c.result(at::max_pool3d(input, kernel, stride, padding, dilation, ceil));
  }
  c.invalid(1, "1, 2 or 3 kernel sizes");
}

// avgPool(input, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride?)
FLODL_OP(avgPool) {
  const at::Tensor& input = c.tensor(0);
  const std::vector<int64_t> kernel = c.integers(1);
  const std::vector<int64_t> stride = c.integers(2);
  const std::vector<int64_t> padding = c.integers(3);
  const bool ceil = c.flag(4);
  const bool countIncludePad = c.flag(5);
  const c10::optional<int64_t> divisor = c.optionalInteger(6);
  switch (kernel.size()) {
    case 1: return c.result(at::avg_pool1d(input, kernel, stride, padding, ceil, countIncludePad));
    case 2: return c.result(at::avg_pool2d(input, kernel, stride, padding, ceil, countIncludePad, divisor));
    case 3: return c.result(at::avg_pool3d(input, kernel, stride, padding, ceil, countIncludePad, divisor));
  }
  c.invalid(1, "1, 2 or 3 kernel sizes");
}

// adaptiveAvgPool(input, outputSize)
FLODL_OP(adaptiveAvgPool) {
  const at::Tensor& input = c.tensor(0);
  const std::vector<int64_t> size = c.integers(1);
  switch (size.size()) {
    case 1: return c.result(at::adaptive_avg_pool1d(input, size));
    case 2: return c.result(at::adaptive_avg_pool2d(input, size));
    case 3: return c.result(at::adaptive_avg_pool3d(input, size));
  }
  c.invalid(1, "1, 2 or 3 output sizes");
}

// adaptiveMaxPool(input, outputSize) -> [out, indices]
FLODL_OP(adaptiveMaxPool) {
  const at::Tensor& input = c.tensor(0);
  const std::vector<int64_t> size = c.integers(1);
  switch (size.size()) {
    case 1: return c.result(at::adaptive_max_pool1d(input, size));
    case 2: return c.result(at::adaptive_max_pool2d(input, size));
    case 3: return c.result(at::adaptive_max_pool3d(input, size));
  }
  c.invalid(1, "1, 2 or 3 output sizes");
}

// ---- normalisation (running statistics are updated in place, as in PyTorch) ----

// batchNorm(input, weight?, bias?, runningMean?, runningVar?, training, momentum, eps)
FLODL_OP(batchNorm) {
  return c.result(at::batch_norm(c.tensor(0), optionalTensor(c, 1), optionalTensor(c, 2), optionalTensor(c, 3),
                                 optionalTensor(c, 4), c.flag(5), c.number(6), c.number(7), cudnnEnabled()));
}

// instanceNorm(input, weight?, bias?, runningMean?, runningVar?, useInputStats, momentum, eps)
FLODL_OP(instanceNorm) {
  return c.result(at::instance_norm(c.tensor(0), optionalTensor(c, 1), optionalTensor(c, 2), optionalTensor(c, 3),
                                    optionalTensor(c, 4), c.flag(5), c.number(6), c.number(7), cudnnEnabled()));
}

// layerNorm(input, normalizedShape, weight?, bias?, eps)
FLODL_OP(layerNorm) {
  return c.result(at::layer_norm(c.tensor(0), c.integers(1), optionalTensor(c, 2), optionalTensor(c, 3), c.number(4),
                                 cudnnEnabled()));
}

// groupNorm(input, numGroups, weight?, bias?, eps)
FLODL_OP(groupNorm) {
  return c.result(at::group_norm(c.tensor(0), c.integer(1), optionalTensor(c, 2), optionalTensor(c, 3), c.number(4),
                                 cudnnEnabled()));
}

// rmsNorm(input, normalizedShape, weight?, eps): x * rsqrt(mean(x^2 over the normalised dims) + eps) * weight.
// Composed (at::rms_norm is 2.4+) so that libtorch's autograd differentiates it the same everywhere.
FLODL_OP(rmsNorm) {
  const at::Tensor& input = c.tensor(0);
  const std::vector<int64_t> shape = c.integers(1);
  const c10::optional<at::Tensor> weight = optionalTensor(c, 2);
  const double eps = c.number(3);
  std::vector<int64_t> dims;
  for (int64_t k = 1; k <= static_cast<int64_t>(shape.size()); ++k) dims.push_back(-k);
  at::Tensor out = input * at::rsqrt(at::pow(input, 2).mean(dims, /*keepdim=*/true) + eps);
  if (weight.has_value()) out = out * *weight;
  return c.result(out);
}

// ---- dropout (libtorch's CPU generator, so manualSeed repeats the masks) ----

FLODL_OP(dropout) { return c.result(at::dropout(c.tensor(0), c.number(1), c.flag(2))); }
// featureDropout(input, p, train): zeroes whole channels (dim 1)
FLODL_OP(featureDropout) { return c.result(at::feature_dropout(c.tensor(0), c.number(1), c.flag(2))); }
FLODL_OP(alphaDropout) { return c.result(at::alpha_dropout(c.tensor(0), c.number(1), c.flag(2))); }

// ---- embeddings ----

// embedding(weight, indices, paddingIdx (-1: none), scaleGradByFreq, sparse)
FLODL_OP(embedding) {
  return c.result(at::embedding(c.tensor(0), c.tensor(1), c.integer(2), c.flag(3), c.flag(4)));
}

// embeddingRenorm_(weight, indices, maxNorm, normType): rescales the looked-up rows in place,
// outside autograd (PyTorch's _no_grad_embedding_renorm_).
FLODL_OP(embeddingRenorm_) {
  at::Tensor& weight = c.tensor(0);
  const at::Tensor indices = c.tensor(1).contiguous();
  at::NoGradGuard noGrad;
  at::embedding_renorm_(weight, indices, c.number(2), c.number(3));
  return c.undefined();
}

// embeddingBag(weight, indices, offsets, scaleGradByFreq, mode (0 sum, 1 mean, 2 max), sparse,
//              perSampleWeights?, includeLastOffset, paddingIdx?) -> the bags only
FLODL_OP(embeddingBag) {
  auto bags = at::embedding_bag(c.tensor(0), c.tensor(1), c.tensor(2), c.flag(3), c.integer(4), c.flag(5),
                                optionalTensor(c, 6), c.flag(7), c.optionalInteger(8));
  return c.result(std::get<0>(bags));
}

// ---- activations missing from the Tensor API ----

FLODL_OP(selu) { return c.result(at::selu(c.tensor(0))); }
FLODL_OP(mish) { return c.result(at::mish(c.tensor(0))); }
FLODL_OP(hardswish) { return c.result(at::hardswish(c.tensor(0))); }
FLODL_OP(hardsigmoid) { return c.result(at::hardsigmoid(c.tensor(0))); }
FLODL_OP(prelu) { return c.result(at::prelu(c.tensor(0), c.tensor(1))); }

// ---- padding and resampling ----

// pad(input, pad, mode: constant | reflect | replicate | circular, value?)
FLODL_OP(pad) {
  const at::Tensor& input = c.tensor(0);
  const std::vector<int64_t> padding = c.integers(1);
  const std::string mode = c.string(2);
  c10::optional<double> value;
  if (!c.isAbsent(3)) value = c.number(3);
  return c.result(at::pad(input, padding, mode, value));
}

// interpolate(input, mode, size?, scaleFactors?, alignCorners): exactly one of size and
// scaleFactors; the input's rank picks the 1d, 2d or 3d kernel.
FLODL_OP(interpolate) {
  const at::Tensor& input = c.tensor(0);
  const std::string mode = c.string(1);
  c10::optional<std::vector<int64_t>> sizeStorage;
  c10::optional<std::vector<double>> scaleStorage;
  if (!c.isAbsent(2)) sizeStorage = c.integers(2);
  if (!c.isAbsent(3)) scaleStorage = numbers(c, 3);
  const bool alignCorners = c.flag(4);
  const at::OptionalIntArrayRef size =
      sizeStorage.has_value() ? at::OptionalIntArrayRef(at::IntArrayRef(*sizeStorage)) : at::OptionalIntArrayRef();
  const c10::optional<at::ArrayRef<double>> scales =
      scaleStorage.has_value() ? c10::optional<at::ArrayRef<double>>(at::ArrayRef<double>(*scaleStorage))
                               : c10::nullopt;
  const int64_t rank = input.dim();
  if (mode == "nearest") {
    if (rank == 3) return c.result(at::upsample_nearest1d(input, size, scales));
    if (rank == 4) return c.result(at::upsample_nearest2d(input, size, scales));
    if (rank == 5) return c.result(at::upsample_nearest3d(input, size, scales));
  } else if (mode == "nearest-exact") {
    if (rank == 3) return c.result(at::_upsample_nearest_exact1d(input, size, scales));
    if (rank == 4) return c.result(at::_upsample_nearest_exact2d(input, size, scales));
    if (rank == 5) return c.result(at::_upsample_nearest_exact3d(input, size, scales));
  } else if (mode == "linear" && rank == 3) {
    return c.result(at::upsample_linear1d(input, size, alignCorners, scales));
  } else if (mode == "bilinear" && rank == 4) {
    return c.result(at::upsample_bilinear2d(input, size, alignCorners, scales));
  } else if (mode == "bicubic" && rank == 4) {
    return c.result(at::upsample_bicubic2d(input, size, alignCorners, scales));
  } else if (mode == "trilinear" && rank == 5) {
    return c.result(at::upsample_trilinear3d(input, size, alignCorners, scales));
  }
  c.invalid(1, "a mode that fits the input's rank (nearest, nearest-exact: 3-5; linear: 3; bilinear, bicubic: 4; trilinear: 5)");
}

FLODL_OP(pixelShuffle) { return c.result(at::pixel_shuffle(c.tensor(0), c.integer(1))); }
FLODL_OP(pixelUnshuffle) { return c.result(at::pixel_unshuffle(c.tensor(0), c.integer(1))); }

// im2col(input, kernelSize, dilation, padding, stride): F.unfold
FLODL_OP(im2col) {
  return c.result(at::im2col(c.tensor(0), c.integers(1), c.integers(2), c.integers(3), c.integers(4)));
}
// col2im(input, outputSize, kernelSize, dilation, padding, stride): F.fold
FLODL_OP(col2im) {
  return c.result(at::col2im(c.tensor(0), c.integers(1), c.integers(2), c.integers(3), c.integers(4), c.integers(5)));
}

}  // namespace

void registerNnOps(Registry& r) {
  FLODL_REGISTER(r, linear);
  FLODL_REGISTER(r, bilinear);
  FLODL_REGISTER(r, conv);
  FLODL_REGISTER(r, convTranspose);
  FLODL_REGISTER(r, maxPool);
  FLODL_REGISTER(r, avgPool);
  FLODL_REGISTER(r, adaptiveAvgPool);
  FLODL_REGISTER(r, adaptiveMaxPool);
  FLODL_REGISTER(r, batchNorm);
  FLODL_REGISTER(r, instanceNorm);
  FLODL_REGISTER(r, layerNorm);
  FLODL_REGISTER(r, groupNorm);
  FLODL_REGISTER(r, rmsNorm);
  FLODL_REGISTER(r, dropout);
  FLODL_REGISTER(r, featureDropout);
  FLODL_REGISTER(r, alphaDropout);
  FLODL_REGISTER(r, embedding);
  FLODL_REGISTER(r, embeddingRenorm_);
  FLODL_REGISTER(r, embeddingBag);
  FLODL_REGISTER(r, selu);
  FLODL_REGISTER(r, mish);
  FLODL_REGISTER(r, hardswish);
  FLODL_REGISTER(r, hardsigmoid);
  FLODL_REGISTER(r, prelu);
  FLODL_REGISTER(r, pad);
  FLODL_REGISTER(r, interpolate);
  FLODL_REGISTER(r, pixelShuffle);
  FLODL_REGISTER(r, pixelUnshuffle);
  FLODL_REGISTER(r, im2col);
  FLODL_REGISTER(r, col2im);
}

}  // namespace flodl

// 2-d max pooling on contiguous CPU tensors: see maxpool-cpu.h. The window arithmetic, the
// comparison (`value > best || isnan(value)`, so the first largest value wins and a NaN wins over
// any number, the last NaN over earlier ones) and the index (row * width + column within the
// plane) are libtorch's own, so values and indices equal at::max_pool2d_with_indices's.
#include "maxpool-cpu.h"

#include <ATen/Parallel.h>
#include <ATen/native/Pool.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace flodl {
namespace {

struct Planes {
  int64_t count, height, width, outHeight, outWidth;
};

// One plane, any window: libtorch's loop, window by window.
template <typename T>
void poolPlane(const T* in, T* out, int64_t* indices, const Planes& p, const PoolWindow2d& w) {
  const int64_t kH = w.kernel[0], kW = w.kernel[1], sH = w.stride[0], sW = w.stride[1];
  const int64_t pH = w.padding[0], pW = w.padding[1], dH = w.dilation[0], dW = w.dilation[1];
  for (int64_t oh = 0; oh < p.outHeight; ++oh) {
    int64_t ih0 = oh * sH - pH;
    const int64_t ih1 = std::min(ih0 + (kH - 1) * dH + 1, p.height);
    while (ih0 < 0) ih0 += dH;
    for (int64_t ow = 0; ow < p.outWidth; ++ow) {
      int64_t iw0 = ow * sW - pW;
      const int64_t iw1 = std::min(iw0 + (kW - 1) * dW + 1, p.width);
      while (iw0 < 0) iw0 += dW;
      int64_t bestIndex = ih0 * p.width + iw0;
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t ih = ih0; ih < ih1; ih += dH) {
        for (int64_t iw = iw0; iw < iw1; iw += dW) {
          const int64_t index = ih * p.width + iw;
          const double value = static_cast<double>(in[index]);
          const bool take = (value > best) | (value != value);
          best = take ? value : best;
          bestIndex = take ? index : bestIndex;
        }
      }
      const int64_t at = oh * p.outWidth + ow;
      out[at] = static_cast<T>(best);
      if (indices != nullptr) indices[at] = bestIndex;
    }
  }
}

// The 2x2 window at stride 2 over outputs [from, to) of one output row: the four candidates
// in libtorch's order (top left, top right, bottom left, bottom right), each taking over when
// larger or NaN. Writes the value and which candidate won (0-3).
template <typename T>
void pool2x2Scalar(const T* top, const T* bottom, T* out, int32_t* which, int64_t from, int64_t to) {
  for (int64_t ow = from; ow < to; ++ow) {
    const T candidates[4] = {top[2 * ow], top[2 * ow + 1], bottom[2 * ow], bottom[2 * ow + 1]};
    T best = candidates[0];
    int32_t winner = 0;
    for (int32_t k = 1; k < 4; ++k) {
      if (candidates[k] > best || std::isnan(candidates[k])) {
        best = candidates[k];
        winner = k;
      }
    }
    out[ow] = best;
    which[ow] = winner;
  }
}

#if defined(__SSE2__)
// The same with SSE2 selects, four float outputs a step: which candidate wins is a coin toss per
// window on real data, and a mispredicted branch costs more than the window's arithmetic.
int64_t pool2x2Simd(const float* top, const float* bottom, float* out, int32_t* which, int64_t count) {
  int64_t ow = 0;
  for (; ow + 4 <= count; ow += 4) {
    const __m128 top0 = _mm_loadu_ps(top + 2 * ow), top1 = _mm_loadu_ps(top + 2 * ow + 4);
    const __m128 bottom0 = _mm_loadu_ps(bottom + 2 * ow), bottom1 = _mm_loadu_ps(bottom + 2 * ow + 4);
    const __m128 candidates[4] = {_mm_shuffle_ps(top0, top1, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm_shuffle_ps(top0, top1, _MM_SHUFFLE(3, 1, 3, 1)),
                                  _mm_shuffle_ps(bottom0, bottom1, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm_shuffle_ps(bottom0, bottom1, _MM_SHUFFLE(3, 1, 3, 1))};
    __m128 best = candidates[0];
    __m128i winner = _mm_setzero_si128();
    for (int k = 1; k < 4; ++k) {
      const __m128 take = _mm_or_ps(_mm_cmpgt_ps(candidates[k], best), _mm_cmpunord_ps(candidates[k], candidates[k]));
      best = _mm_or_ps(_mm_and_ps(take, candidates[k]), _mm_andnot_ps(take, best));
      const __m128i mask = _mm_castps_si128(take);
      winner = _mm_or_si128(_mm_and_si128(mask, _mm_set1_epi32(k)), _mm_andnot_si128(mask, winner));
    }
    _mm_storeu_ps(out + ow, best);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(which + ow), winner);
  }
  return ow;
}

// Two double outputs a step.
int64_t pool2x2Simd(const double* top, const double* bottom, double* out, int32_t* which, int64_t count) {
  int64_t ow = 0;
  for (; ow + 2 <= count; ow += 2) {
    const __m128d top0 = _mm_loadu_pd(top + 2 * ow), top1 = _mm_loadu_pd(top + 2 * ow + 2);
    const __m128d bottom0 = _mm_loadu_pd(bottom + 2 * ow), bottom1 = _mm_loadu_pd(bottom + 2 * ow + 2);
    const __m128d candidates[4] = {_mm_unpacklo_pd(top0, top1), _mm_unpackhi_pd(top0, top1),
                                   _mm_unpacklo_pd(bottom0, bottom1), _mm_unpackhi_pd(bottom0, bottom1)};
    __m128d best = candidates[0];
    int32_t winners[2] = {0, 0};
    for (int k = 1; k < 4; ++k) {
      const __m128d take =
          _mm_or_pd(_mm_cmpgt_pd(candidates[k], best), _mm_cmpunord_pd(candidates[k], candidates[k]));
      best = _mm_or_pd(_mm_and_pd(take, candidates[k]), _mm_andnot_pd(take, best));
      const int bits = _mm_movemask_pd(take);
      winners[0] = (bits & 1) ? k : winners[0];
      winners[1] = (bits & 2) ? k : winners[1];
    }
    _mm_storeu_pd(out + ow, best);
    which[ow] = winners[0];
    which[ow + 1] = winners[1];
  }
  return ow;
}
#else
template <typename T>
int64_t pool2x2Simd(const T*, const T*, T*, int32_t*, int64_t) {
  return 0;
}
#endif

// One plane, the 2x2 window at stride 2 without padding or dilation (the common MaxPool2d(2)),
// row by row: the winners' indices follow from which candidate won.
template <typename T>
void poolPlane2x2(const T* in, T* out, int64_t* indices, const Planes& p, int32_t* which) {
  for (int64_t oh = 0; oh < p.outHeight; ++oh) {
    const int64_t row = 2 * oh * p.width;
    const T* top = in + row;
    const T* bottom = top + p.width;
    T* outRow = out + oh * p.outWidth;
    const int64_t done = pool2x2Simd(top, bottom, outRow, which, p.outWidth);
    pool2x2Scalar(top, bottom, outRow, which, done, p.outWidth);
    if (indices == nullptr) continue;
    int64_t* indexRow = indices + oh * p.outWidth;
    for (int64_t ow = 0; ow < p.outWidth; ++ow) {
      const int64_t winner = which[ow];
      indexRow[ow] = row + (winner >> 1) * p.width + 2 * ow + (winner & 1);
    }
  }
}

bool isPlain2x2(const PoolWindow2d& w) {
  return w.kernel[0] == 2 && w.kernel[1] == 2 && w.stride[0] == 2 && w.stride[1] == 2 && w.padding[0] == 0 &&
         w.padding[1] == 0 && w.dilation[0] == 1 && w.dilation[1] == 1;
}

// The values (and indices) of every plane, planes split over the intra-op threads.
template <typename T>
void poolPlanes(const at::Tensor& input, at::Tensor& output, at::Tensor* indices, const Planes& p,
                const PoolWindow2d& w) {
  const T* in = input.data_ptr<T>();
  T* out = output.data_ptr<T>();
  int64_t* index = indices == nullptr ? nullptr : indices->data_ptr<int64_t>();
  const int64_t planeIn = p.height * p.width, planeOut = p.outHeight * p.outWidth;
  // A ceil-mode window that runs past the input's edge takes the general loop.
  const bool plain = isPlain2x2(w) && 2 * p.outHeight <= p.height && 2 * p.outWidth <= p.width;
  const int64_t grain = std::max<int64_t>(1, at::internal::GRAIN_SIZE / std::max<int64_t>(1, planeOut));
  at::parallel_for(0, p.count, grain, [&](int64_t begin, int64_t end) {
    std::vector<int32_t> which(plain ? p.outWidth : 0);
    for (int64_t k = begin; k < end; ++k) {
      int64_t* planeIndices = index == nullptr ? nullptr : index + k * planeOut;
      if (plain) {
        poolPlane2x2(in + k * planeIn, out + k * planeOut, planeIndices, p, which.data());
      } else {
        poolPlane(in + k * planeIn, out + k * planeOut, planeIndices, p, w);
      }
    }
  });
}

std::vector<int64_t> outputShape(const at::Tensor& input, const Planes& p) {
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end() - 2);
  shape.push_back(p.outHeight);
  shape.push_back(p.outWidth);
  return shape;
}

Planes planesOf(const at::Tensor& input, const PoolWindow2d& w) {
  const int64_t dims = input.dim();
  Planes p{};
  p.height = input.size(dims - 2);
  p.width = input.size(dims - 1);
  p.count = input.numel() / (p.height * p.width);
  p.outHeight =
      at::native::pooling_output_shape<int64_t>(p.height, w.kernel[0], w.padding[0], w.stride[0], w.dilation[0], w.ceil);
  p.outWidth =
      at::native::pooling_output_shape<int64_t>(p.width, w.kernel[1], w.padding[1], w.stride[1], w.dilation[1], w.ceil);
  return p;
}

// Values and indices without autograd.
std::tuple<at::Tensor, at::Tensor> poolValues(const at::Tensor& input, const PoolWindow2d& w, bool withIndices) {
  const Planes p = planesOf(input, w);
  const std::vector<int64_t> shape = outputShape(input, p);
  at::Tensor output = at::empty(shape, input.options());
  at::Tensor indices = withIndices ? at::empty(shape, input.options().dtype(at::kLong)) : at::Tensor();
  AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "flodl_max_pool2d", [&] {
    poolPlanes<scalar_t>(input, output, withIndices ? &indices : nullptr, p, w);
  });
  return {output, indices};
}

// The autograd node: forward by our kernel, backward by libtorch's on the saved indices (itself
// differentiable in the incoming gradient, so a second derivative goes through as libtorch's).
struct MaxPool2dCpuFunction : public torch::autograd::Function<MaxPool2dCpuFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                                                const PoolWindow2d& window) {
    auto [output, indices] = poolValues(input, window, true);
    ctx->save_for_backward({input, indices});
    ctx->saved_data["kernel"] = window.kernel;
    ctx->saved_data["stride"] = window.stride;
    ctx->saved_data["padding"] = window.padding;
    ctx->saved_data["dilation"] = window.dilation;
    ctx->saved_data["ceil"] = window.ceil;
    ctx->mark_non_differentiable({indices});
    return {output, indices};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    at::Tensor gradInput;
    if (grads[0].defined()) {
      gradInput = at::max_pool2d_with_indices_backward(
          grads[0], saved[0], ctx->saved_data["kernel"].toIntVector(), ctx->saved_data["stride"].toIntVector(),
          ctx->saved_data["padding"].toIntVector(), ctx->saved_data["dilation"].toIntVector(),
          ctx->saved_data["ceil"].toBool(), saved[1]);
    }
    return {gradInput, at::Tensor()};
  }
};

}  // namespace

bool maxPool2dCpuTakes(const at::Tensor& input, const PoolWindow2d& w) {
  if (!input.is_cpu() || input.layout() != at::kStrided || input.is_mkldnn()) return false;
  if (input.scalar_type() != at::kFloat && input.scalar_type() != at::kDouble) return false;
  if ((input.dim() != 3 && input.dim() != 4) || input.numel() == 0 || !input.is_contiguous()) return false;
  if (w.kernel.size() != 2 || w.stride.size() != 2 || w.padding.size() != 2 || w.dilation.size() != 2) return false;
  for (int k = 0; k < 2; ++k) {
    if (w.kernel[k] < 1 || w.stride[k] < 1 || w.dilation[k] < 1 || w.padding[k] < 0) return false;
    if (w.padding[k] > w.kernel[k] / 2) return false;
  }
  // Only windows that produce at least one output per dimension; libtorch reports the others.
  const Planes p = planesOf(input, w);
  return p.outHeight >= 1 && p.outWidth >= 1;
}

std::tuple<at::Tensor, std::optional<at::Tensor>> maxPool2dCpu(const at::Tensor& input, const PoolWindow2d& window,
                                                               bool withIndices) {
  if (input.requires_grad() && at::GradMode::is_enabled()) {
    torch::autograd::variable_list outputs = MaxPool2dCpuFunction::apply(input, window);
    if (withIndices) return {outputs[0], outputs[1]};
    return {outputs[0], std::nullopt};
  }
  auto [output, indices] = poolValues(input, window, withIndices);
  if (withIndices) return {output, indices};
  return {output, std::nullopt};
}

}  // namespace flodl

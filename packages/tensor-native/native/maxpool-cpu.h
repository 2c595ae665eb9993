// 2-d max pooling on contiguous CPU tensors in our own kernel (libtorch 1.13's NCHW kernel takes
// 16-20 ns per output on random data, ours 3-5 with the output's allocation): the values and
// indices libtorch's kernel gives, element for element, and libtorch's own backward kernel
// through a custom autograd node.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>
#include <vector>

namespace flodl {

// The window of a 2-d max pool, each list of two (height, width), as @flodl/autograd validated it.
struct PoolWindow2d {
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil;
};

// Whether maxPool2dCpu takes this input: a contiguous float32 or float64 CPU tensor of 3 or 4
// dimensions with at least one element (anything else goes to libtorch).
bool maxPool2dCpuTakes(const at::Tensor& input, const PoolWindow2d& window);

// The pooled values and, when `withIndices`, the int64 indices into each input plane (the first
// position of a window's largest value, a NaN winning over any number), as
// at::max_pool2d_with_indices; differentiable in `input` when it requires a gradient (the
// backward is at::max_pool2d_with_indices_backward on the saved indices).
std::tuple<at::Tensor, std::optional<at::Tensor>> maxPool2dCpu(const at::Tensor& input, const PoolWindow2d& window,
                                                               bool withIndices);

}  // namespace flodl

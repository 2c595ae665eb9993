// Float32 linear maps on the CPU by oneDNN's sgemm, where the process has it: Debian's libtorch
// links libdnnl dynamically (it runs libtorch's CPU convolutions) but does its matrix products
// through the reference BLAS, 4-7.5 GFLOP/s on one core where oneDNN reaches 50-240 on the same
// shapes (`pnpm bench:sgemm`). Other libtorch builds (MKL, OpenBLAS, oneDNN linked in statically)
// keep libtorch's own path: no oneDNN symbol is found there. The forward and the input and weight
// gradients are oneDNN products, the bias gradient libtorch's sum; a backward that builds a graph
// (create_graph) takes libtorch's differentiable ops.
#pragma once

#include <ATen/ATen.h>

namespace flodl {

// True when oneDNN's sgemm was found in the process (resolved once).
bool oneDnnGemmAvailable();

// The switch (backends.cpu.oneDnnLinear): on by default when available, off with
// FLODL_GEMM=libtorch in the environment. Setting it on without oneDNN is refused by the caller.
bool oneDnnGemmEnabled();
void setOneDnnGemmEnabled(bool enabled);

// Whether linearCpu takes this call: the switch on; float32, strided, contiguous CPU input (one
// or more dimensions) and weight [out, in] (bias [out] if given), none of them empty, no
// forward-mode gradients, CPU autocast off.
bool linearCpuTakes(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias);

// input · weightᵀ + bias, shaped [..., out] as at::linear; differentiable in every argument that
// requires a gradient.
at::Tensor linearCpu(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias);

}  // namespace flodl

// Float32 linear maps and matrix products on the CPU by oneDNN's sgemm, where the process has it: Debian's libtorch
// links libdnnl dynamically (it runs libtorch's CPU convolutions) but does its matrix products
// through the reference BLAS, 4-7.5 GFLOP/s on one core where oneDNN reaches 50-240 on the same
// shapes (`pnpm bench:sgemm`). Other libtorch builds (MKL, OpenBLAS, oneDNN linked in statically)
// keep libtorch's own path: no oneDNN symbol is found there. The forward and the input and weight
// gradients are oneDNN products, the bias gradient libtorch's sum; a backward that builds a graph
// (create_graph) takes libtorch's differentiable ops. The CPU kernels of aten::mm, aten::addmm
// and aten::bmm are replaced too (matmul-cpu.cc), so every float32 product in the process takes
// oneDNN: matmul, libtorch's own RNN cells, attention, the backward of all of them.
#pragma once

#include <ATen/ATen.h>

namespace flodl {

// True when oneDNN's sgemm was found in the process (resolved once).
bool oneDnnGemmAvailable();

// The switch (backends.cpu.oneDnnLinear, for the linear maps and the products alike): on by
// default when available, off with FLODL_GEMM=libtorch in the environment. Setting it on
// without oneDNN is refused by the caller.
bool oneDnnGemmEnabled();
void setOneDnnGemmEnabled(bool enabled);

// Whether linearCpu takes this call: the switch on; float32, strided, contiguous CPU input (one
// or more dimensions) and weight [out, in] (bias [out] if given), none of them empty, no
// forward-mode gradients, CPU autocast off.
bool linearCpuTakes(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias);

// input · weightᵀ + bias, shaped [..., out] as at::linear; differentiable in every argument that
// requires a gradient.
at::Tensor linearCpu(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias);

// C[m×n] = alpha · op(A) · op(B) + beta · C by oneDNN's sgemm (row-major; 'N' or 'T' per
// operand, leading dimensions as stored), asynchronous signals held while it runs. Throws on a
// failed call. Only when oneDnnGemmAvailable().
void oneDnnProduct(char transA, char transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Replaces the CPU kernels of aten::mm, aten::addmm and aten::bmm with oneDNN's for float32
// operands in a layout sgemm reads (either strides order, no copy), libtorch's kernels for
// everything else or with the switch off. Once per process; nothing without oneDNN.
void registerOneDnnMatmul();

// The CPU kernel of aten::mm as registered by registerOneDnnMatmul (libtorch's where oneDNN
// does not take the call), for callers that skip the dispatcher.
at::Tensor mmCpu(const at::Tensor& self, const at::Tensor& mat2);

}  // namespace flodl

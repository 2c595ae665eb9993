// oneDNN's row-major sgemm (C = alpha · op(A) · op(B) + beta · C, 'N' or 'T' per operand; 0 on
// success), looked up in the libraries already in the process: libtorch's dependencies are loaded
// with local scope under Node, so they are asked for by name as well as globally. Null when no
// library in the process has it (PyTorch's own builds link oneDNN statically and hide it).
#pragma once

#include <dlfcn.h>

#include <cstdint>

namespace flodl {

using DnnlSgemm = int (*)(char transA, char transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

inline DnnlSgemm findDnnlSgemm() {
  void* symbol = dlsym(RTLD_DEFAULT, "dnnl_sgemm");
  for (const char* library : {"libdnnl.so.3", "libdnnl.so.2"}) {
    if (symbol != nullptr) break;
    void* handle = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
    if (handle != nullptr) symbol = dlsym(handle, "dnnl_sgemm");
  }
  return reinterpret_cast<DnnlSgemm>(symbol);
}

}  // namespace flodl

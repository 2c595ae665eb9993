// Float32 matrix products on the CPU by oneDNN's sgemm, for every caller in the process: the
// CPU kernels of aten::mm, aten::addmm and aten::bmm are replaced (see gemm-cpu.h for why).
#include <ATen/ATen.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/bmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <torch/version.h>

#include <cstring>
#include <mutex>
#include <string>

#include "gemm-cpu.h"

namespace flodl {
namespace {

// How one operand is laid out in memory for sgemm: 'N' row-major (rows × cols, leading
// dimension the row stride), 'T' the transpose of a row-major cols × rows block.
struct Operand {
  char trans;
  int64_t leading;
};

// The operand's layout, or false when it has neither (then libtorch's kernel takes the call).
bool layoutOf(const at::Tensor& matrix, int64_t rowStride, int64_t colStride, Operand* out) {
  const int64_t rows = matrix.size(-2), cols = matrix.size(-1);
  if (colStride == 1 && (rows == 1 || rowStride >= std::max<int64_t>(cols, 1))) {
    *out = {'N', rows == 1 ? std::max<int64_t>(cols, 1) : rowStride};
    return true;
  }
  if (rowStride == 1 && (cols == 1 || colStride >= std::max<int64_t>(rows, 1))) {
    *out = {'T', cols == 1 ? std::max<int64_t>(rows, 1) : colStride};
    return true;
  }
  return false;
}

bool plainFloat(const at::Tensor& t) {
  return t.layout() == at::kStrided && t.scalar_type() == at::kFloat && !t.is_conj() && !t.is_neg();
}

// Below this many multiply-adds per matrix libtorch's kernel is the quicker: oneDNN's sgemm
// call and the signal mask around it cost about 0.7 µs more than libtorch's product of two 8×8
// matrices, and the two break even near 12×12×12 (Debian's libtorch, one thread).
constexpr int64_t kSmallestProduct = 2048;

// Whether oneDNN takes a product of a [m, k] and b [k, n] (2-d matrices, or the batch of bmm).
bool takes(const at::Tensor& a, const at::Tensor& b, int64_t dims, Operand* left, Operand* right) {
  if (!oneDnnGemmEnabled() || a.dim() != dims || b.dim() != dims || !plainFloat(a) || !plainFloat(b)) return false;
  if (a.size(-1) != b.size(-2)) return false;  // libtorch reports the mismatch
  if (a.numel() == 0 || b.numel() == 0) return false;
  if (a.size(-2) * a.size(-1) * b.size(-1) < kSmallestProduct) return false;
  if (dims == 3 && a.size(0) != b.size(0)) return false;
  return layoutOf(a, a.stride(-2), a.stride(-1), left) && layoutOf(b, b.stride(-2), b.stride(-1), right);
}

}  // namespace

at::Tensor mmCpu(const at::Tensor& self, const at::Tensor& mat2) {
  Operand a, b;
  if (!takes(self, mat2, 2, &a, &b)) return at::cpu::mm(self, mat2);
  const int64_t m = self.size(0), k = self.size(1), n = mat2.size(1);
  at::Tensor result = at::empty({m, n}, self.options());
  oneDnnProduct(a.trans, b.trans, m, n, k, 1.0f, self.data_ptr<float>(), a.leading, mat2.data_ptr<float>(),
                b.leading, 0.0f, result.data_ptr<float>(), n);
  return result;
}

namespace {

at::Tensor addmmKernel(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                       const at::Scalar& beta, const at::Scalar& alpha) {
  Operand a, b;
  if (!takes(mat1, mat2, 2, &a, &b) || !plainFloat(self) || self.dim() > 2) {
    return at::cpu::addmm(self, mat1, mat2, beta, alpha);
  }
  const int64_t m = mat1.size(0), k = mat1.size(1), n = mat2.size(1);
  std::vector<int64_t> selfShape = self.sizes().vec();
  while (selfShape.size() < 2) selfShape.insert(selfShape.begin(), 1);
  if ((selfShape[0] != 1 && selfShape[0] != m) || (selfShape[1] != 1 && selfShape[1] != n)) {
    return at::cpu::addmm(self, mat1, mat2, beta, alpha);  // libtorch reports the shape
  }
  const float betaValue = beta.toFloat(), alphaValue = alpha.toFloat();
  at::Tensor result = at::empty({m, n}, mat1.options());
  // beta 0 ignores self (its NaNs included), as libtorch does; otherwise sgemm adds it in place.
  if (betaValue != 0.0f) result.copy_(self.expand({m, n}));
  oneDnnProduct(a.trans, b.trans, m, n, k, alphaValue, mat1.data_ptr<float>(), a.leading, mat2.data_ptr<float>(),
                b.leading, betaValue, result.data_ptr<float>(), n);
  return result;
}

at::Tensor bmmKernel(const at::Tensor& self, const at::Tensor& mat2) {
  Operand a, b;
  if (!takes(self, mat2, 3, &a, &b)) return at::cpu::bmm(self, mat2);
  const int64_t batch = self.size(0), m = self.size(1), k = self.size(2), n = mat2.size(2);
  at::Tensor result = at::empty({batch, m, n}, self.options());
  const float* left = self.data_ptr<float>();
  const float* right = mat2.data_ptr<float>();
  float* out = result.data_ptr<float>();
  for (int64_t index = 0; index < batch; ++index) {
    oneDnnProduct(a.trans, b.trans, m, n, k, 1.0f, left + index * self.stride(0), a.leading,
                  right + index * mat2.stride(0), b.leading, 0.0f, out + index * m * n, n);
  }
  return result;
}

// Drops the dispatcher's one warning for a kernel that replaces a registered one (ours do, by
// design) while they are registered; anything else goes to the handler that was there.
class OverrideQuiet : public c10::WarningHandler {
 public:
  explicit OverrideQuiet(c10::WarningHandler* next) : next_(next) {}
  c10::WarningHandler* next() const { return next_; }
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("Overriding a previously registered kernel") != std::string::npos) return;
    next_->process(warning);
  }
#else
  void process(const c10::SourceLocation& where, const std::string& message, const bool verbatim) override {
    if (message.find("Overriding a previously registered kernel") != std::string::npos) return;
    next_->process(where, message, verbatim);
  }
#endif

 private:
  c10::WarningHandler* next_;
};

}  // namespace

void registerOneDnnMatmul() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!oneDnnGemmAvailable()) return;
#if TORCH_VERSION_MAJOR >= 2
    namespace warnings = c10::WarningUtils;
#else
    namespace warnings = c10::Warning;
#endif
    OverrideQuiet quiet(warnings::get_warning_handler());
    warnings::set_warning_handler(&quiet);
    struct Restore {
      c10::WarningHandler* previous;
      ~Restore() { warnings::set_warning_handler(previous); }
    } restore{quiet.next()};
    // Kept for the process's lifetime: the kernels stay registered until it exits.
    auto* library = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    library->impl("mm", TORCH_FN(mmCpu));
    library->impl("addmm", TORCH_FN(addmmKernel));
    library->impl("bmm", TORCH_FN(bmmKernel));
  });
}

}  // namespace flodl

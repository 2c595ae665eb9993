// Float32 linear maps on the CPU by oneDNN's sgemm (see gemm-cpu.h for when and why).
#include "gemm-cpu.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/version.h>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dnnl-sgemm.h"

namespace flodl {
namespace {

DnnlSgemm sgemm() {
  static const DnnlSgemm found = findDnnlSgemm();
  return found;
}

bool enabledByEnvironment() {
  const char* choice = std::getenv("FLODL_GEMM");
  return choice == nullptr || std::string(choice) != "libtorch";
}

std::atomic<bool>& enabledFlag() {
  static std::atomic<bool> enabled{sgemm() != nullptr && enabledByEnvironment()};
  return enabled;
}

// Holds the thread's asynchronous signals for its lifetime. oneDNN's generated f32 GEMM kernels
// (up to 3.11) point the stack pointer into a heap workspace while they run: a signal delivered
// then writes its frame over that heap memory, and the process aborts later in malloc or free.
// Node's CPU profiler (SIGPROF, many times a second), a child's SIGCHLD or a user's SIGINT can
// all land there; held, they are delivered as the product returns.
class SignalsHeld {
 public:
  SignalsHeld() { pthread_sigmask(SIG_BLOCK, &asynchronous(), &previous_); }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  // Every signal but the synchronous ones (a fault in the product is reported, not held).
  static const sigset_t& asynchronous() {
    static const sigset_t set = [] {
      sigset_t all;
      sigfillset(&all);
      for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP}) sigdelset(&all, synchronous);
      return all;
    }();
    return set;
  }

  sigset_t previous_;
};

// C[m×n] = op(A) · op(B) (+ C when accumulate), row-major, leading dimensions as stored.
void product(char transA, char transB, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, bool accumulate, float* c, int64_t ldc) {
  oneDnnProduct(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f, c, ldc);
}

// input [..., in] · weightᵀ [in, out] + bias, into a fresh [..., out] tensor.
at::Tensor linearValues(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  const int64_t in = weight.size(1), out = weight.size(0), rows = input.numel() / in;
  std::vector<int64_t> shape = input.sizes().vec();
  shape.back() = out;
  at::Tensor result = at::empty(shape, input.options());
  float* values = result.data_ptr<float>();
  if (bias.defined()) {
    const float* b = bias.data_ptr<float>();
    for (int64_t row = 0; row < rows; ++row) std::memcpy(values + row * out, b, sizeof(float) * out);
  }
  product('N', 'T', rows, out, in, input.data_ptr<float>(), in, weight.data_ptr<float>(), in, bias.defined(),
          values, out);
  return result;
}

// The autograd node. Without a graph to build, the input's and weight's gradients are two
// oneDNN products and the bias's a sum; with one (create_graph), libtorch's ops, so that a
// second derivative goes through.
struct LinearCpuFunction : public torch::autograd::Function<LinearCpuFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias) {
    ctx->save_for_backward({input, weight});
    ctx->saved_data["bias"] = bias.has_value();
    return linearValues(input, weight, bias.has_value() ? *bias : at::Tensor());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    at::Tensor gradInput, gradWeight, gradBias;
    if (!grads[0].defined()) return {gradInput, gradWeight, gradBias};
    const int64_t in = weight.size(1), out = weight.size(0), rows = input.numel() / in;
    const at::Tensor grad = grads[0].contiguous();
    const at::Tensor grad2d = grad.reshape({rows, out});
    if (at::GradMode::is_enabled()) {
      if (ctx->needs_input_grad(0)) gradInput = grad.matmul(weight);
      if (ctx->needs_input_grad(1)) gradWeight = grad2d.t().mm(input.reshape({rows, in}));
    } else {
      if (ctx->needs_input_grad(0)) {
        gradInput = at::empty(input.sizes(), input.options());
        product('N', 'N', rows, in, out, grad.data_ptr<float>(), out, weight.data_ptr<float>(), in, false,
                gradInput.data_ptr<float>(), in);
      }
      if (ctx->needs_input_grad(1)) {
        gradWeight = at::empty(weight.sizes(), weight.options());
        product('T', 'N', out, in, rows, grad.data_ptr<float>(), out, input.data_ptr<float>(), in, false,
                gradWeight.data_ptr<float>(), in);
      }
    }
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) gradBias = grad2d.sum(0);
    return {gradInput, gradWeight, gradBias};
  }
};

bool cpuAutocastOn() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

bool plainFloatCpu(const at::Tensor& t) {
  return t.is_cpu() && t.layout() == at::kStrided && !t.is_mkldnn() && t.scalar_type() == at::kFloat &&
         t.is_contiguous() && t.numel() > 0 && !t._fw_grad(0).defined();
}

}  // namespace

void oneDnnProduct(char transA, char transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  int status;
  {
    const SignalsHeld held;
    status = sgemm()(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  if (status != 0) throw std::runtime_error("oneDNN sgemm failed with status " + std::to_string(status));
}

bool oneDnnGemmAvailable() { return sgemm() != nullptr; }

bool oneDnnGemmEnabled() { return enabledFlag().load(std::memory_order_relaxed); }

void setOneDnnGemmEnabled(bool enabled) { enabledFlag().store(enabled && oneDnnGemmAvailable()); }

bool linearCpuTakes(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  if (!oneDnnGemmEnabled() || cpuAutocastOn()) return false;
  if (input.dim() < 1 || weight.dim() != 2 || !plainFloatCpu(input) || !plainFloatCpu(weight)) return false;
  if (input.size(-1) != weight.size(1)) return false;  // libtorch reports the mismatch
  if (bias.has_value() && bias->defined()) {
    if (bias->dim() != 1 || bias->size(0) != weight.size(0) || !plainFloatCpu(*bias)) return false;
  }
  return true;
}

at::Tensor linearCpu(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
  const bool withBias = bias.has_value() && bias->defined();
  const bool tracked = at::GradMode::is_enabled() &&
                       (input.requires_grad() || weight.requires_grad() || (withBias && bias->requires_grad()));
  if (tracked) return LinearCpuFunction::apply(input, weight, withBias ? bias : c10::nullopt);
  return linearValues(input, weight, withBias ? *bias : at::Tensor());
}

}  // namespace flodl

// The two passes of a collective averaging round around its allReduce: packing every tensor of
// a bucket, scaled by the rank's mass, into one flat buffer (so the allReduce needs no gather
// and no scatter), and unpacking the reduced buffer: each tensor overwritten by its share
// divided by the total, with the divergence norms (‖pre‖², ‖pre − post‖², ‖post‖²) summed in
// float64 on the way. On the CPU both are one loop over the memory (float32 and float64);
// elsewhere (CUDA, half precisions) they are libtorch ops on the device.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <array>

#include "call.h"

namespace flodl {
namespace {

// The flat buffer of a bucket: 1-D, contiguous, one dtype and device with every member, and
// exactly as long as the members together.
void checkBucket(Call& c, const std::vector<at::Tensor>& members, const at::Tensor& flat, size_t flatArg) {
  if (flat.dim() != 1 || !flat.is_contiguous()) c.invalid(flatArg, "a contiguous 1-D tensor");
  int64_t total = 0;
  for (const at::Tensor& member : members) {
    if (member.scalar_type() != flat.scalar_type() || member.device() != flat.device()) {
      c.invalid(0, "tensors of the flat buffer's dtype and device");
    }
    total += member.numel();
  }
  if (total != flat.numel()) c.invalid(flatArg, "as many elements as the tensors together");
}

// A member the CPU loops handle: contiguous float32 or float64 in host memory.
bool loopable(const at::Tensor& member) {
  return member.device().is_cpu() && member.is_contiguous() &&
         (member.scalar_type() == at::ScalarType::Float || member.scalar_type() == at::ScalarType::Double);
}

template <typename T>
void packLoop(const at::Tensor& member, T* out, double mass) {
  const T scale = static_cast<T>(mass);  // rounded to T first, as libtorch's mul by a number is
  const T* in = member.data_ptr<T>();
  const int64_t count = member.numel();
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] * scale;
}

// Sums of x² over four interleaved lanes, added up in a fixed order at the end: the same bits
// on every run, with four additions in flight.
struct Squares {
  std::array<double, 4> pre{}, diff{}, post{};
  static double total(const std::array<double, 4>& lanes) { return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]); }
};

template <typename T>
void unpackLoop(const at::Tensor& member, const T* in, double divisor, Squares* sums) {
  const T by = static_cast<T>(divisor);  // libtorch's div by a number rounds it to T too
  T* target = member.data_ptr<T>();
  const int64_t count = member.numel();
  if (sums == nullptr) {
    for (int64_t i = 0; i < count; ++i) target[i] = in[i] / by;
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const T average = in[i] / by;
    const double pre = static_cast<double>(target[i]);
    const double post = static_cast<double>(average);
    const double diff = pre - post;
    const size_t lane = static_cast<size_t>(i & 3);
    sums->pre[lane] += pre * pre;
    sums->diff[lane] += diff * diff;
    sums->post[lane] += post * post;
    target[i] = average;
  }
}

// averagePack(tensors[], flat, mass): flat := the tensors, in order, each times mass.
FLODL_OP(averagePack) {
  const std::vector<at::Tensor> members = c.tensors(0);
  at::Tensor& flat = c.tensor(1);
  const double mass = c.number(2);
  checkBucket(c, members, flat, 1);
  at::NoGradGuard noGrad;
  int64_t offset = 0;
  for (const at::Tensor& member : members) {
    if (loopable(member) && member.scalar_type() == at::ScalarType::Float) {
      packLoop<float>(member, flat.data_ptr<float>() + offset, mass);
    } else if (loopable(member)) {
      packLoop<double>(member, flat.data_ptr<double>() + offset, mass);
    } else {
      at::Tensor slot = flat.narrow(0, offset, member.numel()).view(member.sizes());
      at::mul_out(slot, member, at::Scalar(mass));
    }
    offset += member.numel();
  }
  return c.undefined();
}

// averageUnpack(tensors[], flat, divisor, norms) -> Tensor | undefined: each tensor := its share
// of flat / divisor; with norms, a float64 tensor [Σ pre², Σ (pre − post)², Σ post²] over every
// element, on the buffer's device (one read for the caller).
FLODL_OP(averageUnpack) {
  const std::vector<at::Tensor> members = c.tensors(0);
  const at::Tensor& flat = c.tensor(1);
  const double divisor = c.number(2);
  const bool norms = c.flag(3);
  checkBucket(c, members, flat, 1);
  if (!(divisor > 0)) c.invalid(2, "a divisor > 0");
  at::NoGradGuard noGrad;
  Squares sums;
  at::Tensor onDevice;  // the norms of the members the loops do not handle
  int64_t offset = 0;
  for (const at::Tensor& member : members) {
    if (loopable(member) && member.scalar_type() == at::ScalarType::Float) {
      unpackLoop<float>(member, flat.data_ptr<float>() + offset, divisor, norms ? &sums : nullptr);
    } else if (loopable(member)) {
      unpackLoop<double>(member, flat.data_ptr<double>() + offset, divisor, norms ? &sums : nullptr);
    } else {
      const at::Tensor average =
          flat.narrow(0, offset, member.numel()).view(member.sizes()).div(at::Scalar(divisor));
      if (norms) {
        const at::Tensor pre = member.to(at::ScalarType::Double);
        const at::Tensor post = average.to(at::ScalarType::Double);
        const at::Tensor squares = at::stack({pre.square().sum(), (pre - post).square().sum(), post.square().sum()});
        onDevice = onDevice.defined() ? onDevice.add_(squares) : squares;
      }
      member.copy_(average);
    }
    offset += member.numel();
  }
  if (!norms) return c.undefined();
  at::Tensor host = at::empty({3}, at::TensorOptions().dtype(at::ScalarType::Double));
  double* values = host.data_ptr<double>();
  values[0] = Squares::total(sums.pre);
  values[1] = Squares::total(sums.diff);
  values[2] = Squares::total(sums.post);
  if (!onDevice.defined()) return c.result(host);
  return c.result(onDevice.add_(host.to(onDevice.device())));
}

}  // namespace

void registerAveragingOps(Registry& r) {
  FLODL_REGISTER(r, averagePack);
  FLODL_REGISTER(r, averageUnpack);
}

}  // namespace flodl

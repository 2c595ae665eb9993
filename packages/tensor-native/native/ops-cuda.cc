// CUDA streams and events: pool streams, a scoped current-stream switch, events to order
// work across streams and to time it, and record_stream for tensors used on another stream.
// CUDA graphs: capture and replay. A CPU-only build registers the same entries; they refuse
// with ERR_DEVICE.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <vector>

#include "call.h"

#ifdef FLODL_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <mutex>
// Graph-safe generator states (libtorch 2.4+): a failed capture can put the default CUDA
// generator back as it was (libtorch leaves it capturing when capture_end throws).
#define FLODL_GRAPHSAFE_RNG 1
#endif
#endif

namespace flodl {
namespace {

#ifdef FLODL_CUDA
// Streams and events live for the environment; ids index these lists (never reused).
struct CudaObjects {
  std::vector<c10::cuda::CUDAStream> streams;
  std::vector<std::unique_ptr<at::cuda::CUDAEvent>> events;
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs;
#ifdef FLODL_GRAPHSAFE_RNG
  // Per graph: the default generator's state before its capture began (and its device).
  std::vector<std::pair<c10::intrusive_ptr<c10::GeneratorImpl>, c10::DeviceIndex>> rngBefore;
#endif
};

CudaObjects& objects(Call& c) {
  static thread_local CudaObjects perThread;  // one JS environment per thread
  (void)c;
  return perThread;
}

c10::cuda::CUDAStream& streamAt(Call& c, size_t i) {
  const int64_t id = c.integer(i);
  auto& list = objects(c).streams;
  if (id < 0 || static_cast<size_t>(id) >= list.size()) c.invalid(i, "a stream");
  return list[static_cast<size_t>(id)];
}

at::cuda::CUDAEvent& eventAt(Call& c, size_t i) {
  const int64_t id = c.integer(i);
  auto& list = objects(c).events;
  if (id < 0 || static_cast<size_t>(id) >= list.size() || !list[static_cast<size_t>(id)]) c.invalid(i, "an event");
  return *list[static_cast<size_t>(id)];
}

// The current stream of `device` as an id (registered once per distinct stream).
double idOf(Call& c, const c10::cuda::CUDAStream& stream) {
  auto& list = objects(c).streams;
  for (size_t k = 0; k < list.size(); ++k) {
    if (list[k] == stream) return static_cast<double>(k);
  }
  list.push_back(stream);
  return static_cast<double>(list.size() - 1);
}

// streamCreate(device, highPriority) -> id: a stream from libtorch's pool.
FLODL_OP(streamCreate) {
  const auto device = static_cast<c10::DeviceIndex>(c.integer(0));
  auto stream = c10::cuda::getStreamFromPool(c.flag(1), device);
  objects(c).streams.push_back(stream);
  return Napi::Number::New(c.env, static_cast<double>(objects(c).streams.size() - 1));
}

// streamCurrent(device) -> id
FLODL_OP(streamCurrent) {
  return Napi::Number::New(c.env, idOf(c, c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(c.integer(0)))));
}

// streamSetCurrent(id) -> id of the stream it replaced (on that stream's device)
FLODL_OP(streamSetCurrent) {
  const auto stream = streamAt(c, 0);
  const double previous = idOf(c, c10::cuda::getCurrentCUDAStream(stream.device_index()));
  c10::cuda::setCurrentCUDAStream(stream);
  return Napi::Number::New(c.env, previous);
}

FLODL_OP(streamSynchronize) {
  streamAt(c, 0).synchronize();
  return c.undefined();
}

FLODL_OP(streamQuery) { return Napi::Boolean::New(c.env, streamAt(c, 0).query()); }

// eventCreate(enableTiming) -> id
FLODL_OP(eventCreate) {
  const unsigned int flags = c.flag(0) ? cudaEventDefault : cudaEventDisableTiming;
  objects(c).events.push_back(std::make_unique<at::cuda::CUDAEvent>(flags));
  return Napi::Number::New(c.env, static_cast<double>(objects(c).events.size() - 1));
}

// eventRecord(event, stream)
FLODL_OP(eventRecord) {
  eventAt(c, 0).record(streamAt(c, 1));
  return c.undefined();
}

// eventWait(event, stream): work queued on `stream` afterwards waits for the event.
FLODL_OP(eventWait) {
  eventAt(c, 0).block(streamAt(c, 1));
  return c.undefined();
}

FLODL_OP(eventSynchronize) {
  eventAt(c, 0).synchronize();
  return c.undefined();
}

FLODL_OP(eventQuery) { return Napi::Boolean::New(c.env, eventAt(c, 0).query()); }

// eventElapsed(start, end) -> milliseconds
FLODL_OP(eventElapsed) { return Napi::Number::New(c.env, eventAt(c, 0).elapsed_time(eventAt(c, 1))); }

FLODL_OP(eventDestroy) {
  const int64_t id = c.integer(0);
  auto& list = objects(c).events;
  if (id >= 0 && static_cast<size_t>(id) < list.size()) list[static_cast<size_t>(id)].reset();
  return c.undefined();
}

// recordStream(tensor, stream): the caching allocator keeps the memory until that stream's work is done.
FLODL_OP(recordStream) {
  c.tensor(0).record_stream(streamAt(c, 1));
  return c.undefined();
}

// --- CUDA graphs: capture the work queued on the current (non-default) stream once, replay it.
at::cuda::CUDAGraph& graphAt(Call& c, size_t i) {
  const int64_t id = c.integer(i);
  auto& list = objects(c).graphs;
  if (id < 0 || static_cast<size_t>(id) >= list.size() || !list[static_cast<size_t>(id)]) c.invalid(i, "a CUDA graph");
  return *list[static_cast<size_t>(id)];
}

// graphCreate() -> id
FLODL_OP(graphCreate) {
  objects(c).graphs.push_back(std::make_unique<at::cuda::CUDAGraph>());
#ifdef FLODL_GRAPHSAFE_RNG
  objects(c).rngBefore.resize(objects(c).graphs.size());
#endif
  return Napi::Number::New(c.env, static_cast<double>(objects(c).graphs.size() - 1));
}

// graphCaptureBegin(graph, poolOf, mode): starts capturing the current stream. poolOf: -1, or a
// graph whose private memory pool this capture shares; mode: 0 global, 1 thread-local, 2 relaxed.
FLODL_OP(graphCaptureBegin) {
  auto& graph = graphAt(c, 0);
  const int64_t poolOf = c.integer(1);
  // The pool id's type moved between releases; the graph's own accessor names it.
  decltype(graph.pool()) pool{0, 0};
  if (poolOf >= 0) pool = graphAt(c, 1).pool();
  const int64_t mode = c.integer(2);
  if (mode < 0 || mode > 2) c.invalid(2, "a capture mode in [0, 2]");
#ifdef FLODL_GRAPHSAFE_RNG
  {
    const c10::DeviceIndex device = c10::cuda::current_device();
    at::Generator generator = at::cuda::detail::getDefaultCUDAGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    auto* impl = at::check_generator<at::CUDAGeneratorImpl>(generator);
    objects(c).rngBefore[static_cast<size_t>(c.integer(0))] = {impl->clone()->graphsafe_get_state(), device};
  }
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  const auto captureMode = mode == 0   ? cudaStreamCaptureModeGlobal
                           : mode == 1 ? cudaStreamCaptureModeThreadLocal
                                       : cudaStreamCaptureModeRelaxed;
  graph.capture_begin(pool, captureMode);
#else
  if (mode != 0) c.state.fail("ERR_CUDA_GRAPH", c.op, "this libtorch captures in the global error mode only");
  graph.capture_begin(pool);
#endif
  return c.undefined();
}

// graphCaptureEnd(graph): ends the capture. When libtorch refuses it (an invalidated capture),
// the default generator gets its state from before the capture back, so random ops outside a
// capture work again.
FLODL_OP(graphCaptureEnd) {
  auto& graph = graphAt(c, 0);
#ifdef FLODL_GRAPHSAFE_RNG
  auto& saved = objects(c).rngBefore[static_cast<size_t>(c.integer(0))];
  try {
    graph.capture_end();
  } catch (...) {
    if (saved.first) {
      at::Generator generator = at::cuda::detail::getDefaultCUDAGenerator(saved.second);
      std::lock_guard<std::mutex> lock(generator.mutex());
      at::check_generator<at::CUDAGeneratorImpl>(generator)->graphsafe_set_state(saved.first);
    }
    saved = {};
    throw;
  }
  saved = {};
#else
  graph.capture_end();
#endif
  return c.undefined();
}

FLODL_OP(graphReplay) {
  graphAt(c, 0).replay();
  return c.undefined();
}

// graphDestroy(graph): frees the graph and its executable (its private pool is released once no
// graph shares it and no tensor allocated from it is alive).
FLODL_OP(graphDestroy) {
  const int64_t id = c.integer(0);
  auto& list = objects(c).graphs;
  if (id >= 0 && static_cast<size_t>(id) < list.size()) list[static_cast<size_t>(id)].reset();
  return c.undefined();
}

// graphCapturing(device) -> whether the current stream of `device` is being captured.
FLODL_OP(graphCapturing) {
  const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(c.integer(0)));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t error = cudaStreamIsCapturing(stream.stream(), &status);
  if (error != cudaSuccess) c.state.fail("ERR_NATIVE", c.op, cudaGetErrorString(error));
  return Napi::Boolean::New(c.env, status != cudaStreamCaptureStatusNone);
}
#else
#define NO_CUDA(NAME) \
  FLODL_OP(NAME) { c.state.fail("ERR_DEVICE", c.op, "CUDA is not available in this build"); }
NO_CUDA(streamCreate)
NO_CUDA(streamCurrent)
NO_CUDA(streamSetCurrent)
NO_CUDA(streamSynchronize)
NO_CUDA(streamQuery)
NO_CUDA(eventCreate)
NO_CUDA(eventRecord)
NO_CUDA(eventWait)
NO_CUDA(eventSynchronize)
NO_CUDA(eventQuery)
NO_CUDA(eventElapsed)
NO_CUDA(eventDestroy)
NO_CUDA(recordStream)
NO_CUDA(graphCreate)
NO_CUDA(graphCaptureBegin)
NO_CUDA(graphCaptureEnd)
NO_CUDA(graphReplay)
NO_CUDA(graphDestroy)
NO_CUDA(graphCapturing)
#endif

}  // namespace

void registerCudaOps(Registry& r) {
  FLODL_REGISTER(r, streamCreate);
  FLODL_REGISTER(r, streamCurrent);
  FLODL_REGISTER(r, streamSetCurrent);
  FLODL_REGISTER(r, streamSynchronize);
  FLODL_REGISTER(r, streamQuery);
  FLODL_REGISTER(r, eventCreate);
  FLODL_REGISTER(r, eventRecord);
  FLODL_REGISTER(r, eventWait);
  FLODL_REGISTER(r, eventSynchronize);
  FLODL_REGISTER(r, eventQuery);
  FLODL_REGISTER(r, eventElapsed);
  FLODL_REGISTER(r, eventDestroy);
  FLODL_REGISTER(r, recordStream);
  FLODL_REGISTER(r, graphCreate);
  FLODL_REGISTER(r, graphCaptureBegin);
  FLODL_REGISTER(r, graphCaptureEnd);
  FLODL_REGISTER(r, graphReplay);
  FLODL_REGISTER(r, graphDestroy);
  FLODL_REGISTER(r, graphCapturing);
}

}  // namespace flodl

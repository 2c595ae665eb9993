// libtorch's c10d collectives: a TCPStore rendezvous, a Gloo (CPU) or NCCL (CUDA) process
// group over it, and the blocking collectives. Every wait is bounded by the group's timeout
// and a failed or timed-out collective leaves the group marked unusable.
#include <ATen/ATen.h>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "call.h"
#include "distributed-table.h"

namespace flodl {

std::shared_ptr<DistributedTable> createDistributedTable() { return std::make_shared<DistributedTable>(); }

namespace {

FLODL_OP(distInfo) {
  Napi::Object out = Napi::Object::New(c.env);
  out.Set("c10d", Napi::Boolean::New(c.env, FLODL_HAS_C10D != 0));
  out.Set("gloo", Napi::Boolean::New(c.env, FLODL_HAS_GLOO != 0));
  out.Set("nccl", Napi::Boolean::New(c.env, FLODL_HAS_NCCL != 0));
  return out;
}

FLODL_OP(distLiveCount) {
  Napi::Object out = Napi::Object::New(c.env);
  out.Set("stores", Napi::Number::New(c.env, static_cast<double>(c.state.distributed().liveStores())));
  out.Set("groups", Napi::Number::New(c.env, static_cast<double>(c.state.distributed().liveGroups())));
  return out;
}

#if FLODL_HAS_C10D

std::string lowerCase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return text;
}

bool mentions(const std::string& lowered, std::initializer_list<const char*> needles) {
  for (const char* needle : needles) {
    if (lowered.find(needle) != std::string::npos) return true;
  }
  return false;
}

bool isTimeoutText(const std::string& lowered) {
  return mentions(lowered, {"timed out", "timeout", "deadline"});
}

bool isPeerFailureText(const std::string& lowered) {
  return mentions(lowered, {"peer", "connection reset", "broken pipe", "connection refused", "connection closed",
                            "socket closed"});
}

std::string describeException(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const c10::Error& error) {
    return error.what_without_backtrace();
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "unknown native exception";
  }
}

// The backend's own timeout should fire first (it names the stuck operation); this is the backstop.
std::chrono::milliseconds backstop(std::chrono::milliseconds timeout) {
  return timeout + std::min(timeout, std::chrono::milliseconds(5000));
}

std::string describeGroup(const GroupEntry& group) {
  return "rank " + std::to_string(group.rank) + " of " + std::to_string(group.size) + " (" + group.backendName +
         ")";
}

StoreEntry& storeArgument(Call& c, size_t i) {
  StoreEntry* found = c.state.distributed().store(c.number(i));
  if (found == nullptr) c.state.fail("ERR_DISPOSED", c.op, "the rendezvous store was freed");
  return *found;
}

GroupEntry& groupArgument(Call& c, size_t i) {
  GroupEntry* found = c.state.distributed().group(c.number(i));
  if (found == nullptr) {
    c.state.fail("ERR_DISPOSED", c.op, "the process group was destroyed; create a new one with createProcessGroup");
  }
  if (!found->failure.empty()) {
    c.state.fail("ERR_RANK_FAILED", c.op,
                 "the process group failed earlier and is unusable (" + found->failure +
                     "); destroy() it and create a new one");
  }
  return *found;
}

#if FLODL_HAS_NCCL
void abortNccl(GroupEntry& group) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
  if (group.nccl) group.nccl->abort();
#endif
}
#endif

// Blocks until the collective finishes, fails, or the backstop passes; a failure marks the group
// unusable and becomes ERR_TIMEOUT or ERR_RANK_FAILED.
void awaitWork(Call& c, GroupEntry& group, const char* what, const c10::intrusive_ptr<c10d::Work>& work) {
  const std::chrono::milliseconds limit = backstop(group.timeout);
  std::exception_ptr failure;
  bool gaveUp = false;
  try {
#if FLODL_HAS_NCCL
    if (group.nccl) {
      // NCCL's wait() only orders streams unless blocking-wait is on: poll for completion instead.
      const auto deadline = std::chrono::steady_clock::now() + limit;
      while (!work->isCompleted()) {
        if (std::chrono::steady_clock::now() >= deadline) {
          gaveUp = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      if (!gaveUp) work->wait();
    } else if (!work->wait(limit)) {
      failure = std::make_exception_ptr(std::runtime_error("the collective was aborted"));
    }
#else
    if (!work->wait(limit)) failure = std::make_exception_ptr(std::runtime_error("the collective was aborted"));
#endif
  } catch (...) {
    failure = std::current_exception();
    gaveUp = !work->isCompleted();
  }
  if (!failure && !gaveUp) return;

  const std::string detail = failure ? describeException(failure) : "no completion";
  const std::string lowered = lowerCase(detail);
  group.workInFlight = gaveUp;
#if FLODL_HAS_NCCL
  if (gaveUp) abortNccl(group);
#endif
  const std::string where = std::string(what) + " on " + describeGroup(group);
  if (gaveUp || isTimeoutText(lowered)) {
    group.failure = what + std::string(" timed out");
    c.state.fail("ERR_TIMEOUT", c.op,
                 where + " did not complete within " + std::to_string(group.timeout.count()) +
                     " ms: a peer rank is stuck, gone, or calling a different collective. The group is unusable "
                     "now: destroy() it; raise timeoutMs if the ranks are only slow (libtorch: " +
                     detail + ")");
  }
  group.failure = what + std::string(" failed: ") + detail;
  c.state.fail("ERR_RANK_FAILED", c.op,
               where + " failed: " +
                   (isPeerFailureText(lowered) ? "a peer closed its connection, so a rank probably died"
                                               : "the backend reported an error") +
                   ". The group is unusable now: destroy() it (libtorch: " + detail + ")");
}

// One bucket of `tensors`: the tensors of one device and dtype (`members`, indices into
// `tensors`) and the buffer that travels for them, the tensor itself when it is the only,
// contiguous member (`inPlace`), else a flat copy of them all.
struct Bucket {
  at::Tensor buffer;
  std::vector<size_t> members;
  bool inPlace;
};

// The buckets of `tensors`, in first-seen order (the same on every rank that passes the same
// list); empty ones are left out (every rank skips them alike).
std::vector<Bucket> bucketsOf(std::vector<at::Tensor>& tensors) {
  std::vector<Bucket> buckets;
  std::vector<bool> taken(tensors.size(), false);
  for (size_t first = 0; first < tensors.size(); ++first) {
    if (taken[first]) continue;
    std::vector<size_t> members;
    for (size_t k = first; k < tensors.size(); ++k) {
      if (!taken[k] && tensors[k].device() == tensors[first].device() &&
          tensors[k].scalar_type() == tensors[first].scalar_type()) {
        taken[k] = true;
        members.push_back(k);
      }
    }
    int64_t total = 0;
    for (size_t k : members) total += tensors[k].numel();
    if (total == 0) continue;
    if (members.size() == 1 && tensors[first].is_contiguous()) {
      buckets.push_back({tensors[first], std::move(members), true});
      continue;
    }
    std::vector<at::Tensor> flat;
    flat.reserve(members.size());
    for (size_t k : members) flat.push_back(tensors[k].reshape({-1}));
    buckets.push_back({at::cat(flat), std::move(members), false});
  }
  return buckets;
}

// Writes a flat bucket's buffer back into its members (an in-place bucket already is them).
void copyBack(std::vector<at::Tensor>& tensors, const Bucket& bucket) {
  if (bucket.inPlace) return;
  int64_t offset = 0;
  for (size_t k : bucket.members) {
    const int64_t count = tensors[k].numel();
    tensors[k].copy_(bucket.buffer.narrow(0, offset, count).view(tensors[k].sizes()));
    offset += count;
  }
}

// Runs `issue` on each bucket of `tensors` in turn (see bucketsOf), copying each flat buffer back
// into its tensors after its collective when `copyBackAfter`.
template <typename Issue>
void forEachBucket(std::vector<at::Tensor>& tensors, bool copyBackAfter, Issue issue) {
  for (Bucket& bucket : bucketsOf(tensors)) {
    issue(bucket.buffer);
    if (copyBackAfter) copyBack(tensors, bucket);
  }
}

c10d::ReduceOp reduceOpArgument(Call& c, size_t i, bool* average) {
  const std::string name = c.string(i);
  *average = name == "avg";
  if (name == "sum") return c10d::ReduceOp(c10d::ReduceOp::SUM);
  if (name == "avg") return c10d::ReduceOp(c10d::ReduceOp::SUM);  // AVG itself is chosen per backend
  if (name == "min") return c10d::ReduceOp(c10d::ReduceOp::MIN);
  if (name == "max") return c10d::ReduceOp(c10d::ReduceOp::MAX);
  if (name == "product") return c10d::ReduceOp(c10d::ReduceOp::PRODUCT);
  c.invalid(i, "'sum', 'avg', 'min', 'max' or 'product'");
}

// Timeouts and dead peers during rendezvous surface as typed errors; anything else is libtorch's.
[[noreturn]] void failCreation(Call& c, const std::string& what, const std::string& detail) {
  const std::string lowered = lowerCase(detail);
  if (isTimeoutText(lowered)) {
    c.state.fail("ERR_TIMEOUT", c.op,
                 what + " timed out: not every rank joined in time; start all ranks with the same host, port and "
                        "worldSize, or raise timeoutMs (libtorch: " +
                     detail + ")");
  }
  if (mentions(lowered, {"address already in use"})) {
    c.state.fail("ERR_IO", c.op, what + " failed: the port is in use; pick a free port (libtorch: " + detail + ")");
  }
  if (isPeerFailureText(lowered)) {
    c.state.fail("ERR_RANK_FAILED", c.op,
                 what + " failed: a peer closed its connection during rendezvous (libtorch: " + detail + ")");
  }
  c.state.fail("ERR_NATIVE", c.op, detail);
}

// Waits, in 10 ms steps and at most until `deadline`, until something accepts TCP connections
// at host:port; false when nothing did (true too when the host does not resolve: the TCPStore
// then says why). A TCPStore client whose first connect is refused (the server rank not yet up)
// sleeps a whole second before it tries again, so the ranks that start before rank 0 would
// each lose up to a second at every rendezvous; the probe's connection is closed unused (the
// server drops it, as it drops a client that died).
bool awaitListener(const std::string& host, int64_t port, std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return true;
  for (;;) {
    for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
      const int fd = socket(address->ai_family, address->ai_socktype, address->ai_protocol);
      if (fd < 0) continue;
      // Non-blocking, so a host that drops the packets costs at most the time left (and 1 s).
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
      bool accepted = connect(fd, address->ai_addr, address->ai_addrlen) == 0;
      if (!accepted && errno == EINPROGRESS) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd waiting{fd, POLLOUT, 0};
        int error = 0;
        socklen_t length = sizeof(error);
        accepted = poll(&waiting, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000))) == 1 &&
                   getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
      }
      close(fd);
      if (accepted) {
        freeaddrinfo(found);
        return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  freeaddrinfo(found);
  return false;
}

// distStoreCreate(host, port, worldSize, isServer, timeoutMs) -> store id. The server (rank 0)
// waits for all worldSize members to connect, everyone at most timeoutMs rounded up to seconds.
FLODL_OP(distStoreCreate) {
  const std::string host = c.string(0);
  const int64_t port = c.integer(1);
  const int64_t worldSize = c.integer(2);
  const bool isServer = c.flag(3);
  const int64_t timeoutMs = c.integer(4);
  if (host.empty()) c.invalid(0, "a host name or address");
  if (port < 1 || port > 65535) c.invalid(1, "a port in [1, 65535]");
  if (worldSize < 1) c.invalid(2, "a world size >= 1");
  if (timeoutMs < 1) c.invalid(4, "a timeout >= 1 ms");
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = isServer;
  options.numWorkers = static_cast<std::size_t>(worldSize);
  options.waitWorkers = true;
  // c10d's socket connect counts whole seconds (1.13 truncates 500 ms to 0 s and fails at once).
  options.timeout = std::chrono::milliseconds((timeoutMs + 999) / 1000 * 1000);
  const std::string rendezvous = "the TCPStore rendezvous at " + host + ":" + std::to_string(port);
  if (!isServer && !awaitListener(host, port, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs))) {
    failCreation(c, rendezvous, "timed out: no server (rank 0) accepted connections within " +
                                    std::to_string(timeoutMs) + " ms");
  }
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(host, options);
  } catch (const c10::Error& error) {
    failCreation(c, rendezvous, error.what_without_backtrace());
  } catch (const std::exception& error) {
    failCreation(c, rendezvous, error.what());
  }
  return Napi::Number::New(c.env, c.state.distributed().addStore(StoreEntry{std::move(store), host}));
}

FLODL_OP(distStoreFree) {
  return Napi::Boolean::New(c.env, c.state.distributed().eraseStore(c.number(0)));
}

#if FLODL_HAS_GLOO
bool isLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// GLOO_SOCKET_IFNAME picks the interface as in PyTorch; a loopback rendezvous keeps the whole
// group on loopback; otherwise Gloo binds the address this machine's hostname resolves to.
std::shared_ptr<::gloo::transport::Device> glooDevice(const std::string& storeHost) {
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0') {
    std::string first(interface);
    first = first.substr(0, first.find(','));
    return c10d::ProcessGroupGloo::createDeviceForInterface(first);
  }
  if (isLoopback(storeHost)) return c10d::ProcessGroupGloo::createDeviceForHostname(storeHost);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}
#endif

#if FLODL_HAS_NCCL
// Without these, a timed-out NCCL collective makes libtorch's watchdog kill the process
// (2.2+ default); CleanUpOnly aborts the communicators and lets the wait report the failure.
void preferRecoverableNcclErrors() {
  setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2", 0);
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 2)
  // The name before 2.2 (later releases warn that it is deprecated).
  setenv("NCCL_ASYNC_ERROR_HANDLING", "2", 0);
#endif
}
#endif

// distGroupCreate(storeId, backend, rank, worldSize, timeoutMs, prefix, deviceIndex) -> group id.
// Blocks until every rank has joined (bounded by timeoutMs).
FLODL_OP(distGroupCreate) {
  StoreEntry& store = storeArgument(c, 0);
  const std::string backend = c.string(1);
  const int64_t rank = c.integer(2);
  const int64_t worldSize = c.integer(3);
  const int64_t timeoutMs = c.integer(4);
  const std::string prefix = c.string(5);
  const int64_t deviceIndex = c.isAbsent(6) ? -1 : c.integer(6);
  if (worldSize < 1) c.invalid(3, "a world size >= 1");
  if (rank < 0 || rank >= worldSize) c.invalid(2, "a rank in [0, worldSize)");
  if (timeoutMs < 1) c.invalid(4, "a timeout >= 1 ms");

  auto entry = std::make_unique<GroupEntry>();
  entry->backendName = backend;
  entry->rank = static_cast<int>(rank);
  entry->size = static_cast<int>(worldSize);
  entry->timeout = std::chrono::milliseconds(timeoutMs);
  entry->deviceIndex = deviceIndex;
  const c10::intrusive_ptr<c10d::Store> scoped = c10::make_intrusive<c10d::PrefixStore>(prefix, store.store);
  const std::string what = "creating the process group (" + describeGroup(*entry) + ")";
  std::string failure;
  try {
    if (backend == "gloo") {
#if FLODL_HAS_GLOO
      auto options = c10d::ProcessGroupGloo::Options::create(entry->timeout);
      options->devices.push_back(glooDevice(store.host));
      entry->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(scoped, entry->rank, entry->size, options);
#else
      c.state.fail("ERR_INVALID_ARGUMENT", c.op, "this build of the addon has no Gloo backend (buildInfo().gloo)");
#endif
    } else if (backend == "nccl") {
#if FLODL_HAS_NCCL
      if (deviceIndex < 0) c.invalid(6, "the CUDA device index of this rank");
      preferRecoverableNcclErrors();
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = entry->timeout;
      entry->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(scoped, entry->rank, entry->size, options);
      entry->backend = entry->nccl;
#else
      c.state.fail("ERR_INVALID_ARGUMENT", c.op,
                   "this build of the addon has no NCCL backend (buildInfo().nccl): build it against a CUDA "
                   "PyTorch with nccl.h on the include path");
#endif
    } else {
      c.invalid(1, "'gloo' or 'nccl'");
    }
  } catch (const Napi::Error&) {
    throw;
  } catch (const c10::Error& error) {
    failure = error.what_without_backtrace();
  } catch (const std::exception& error) {
    failure = error.what();
  }
  if (!failure.empty()) failCreation(c, what, failure);
  return Napi::Number::New(c.env, c.state.distributed().addGroup(std::move(entry)));
}

// Asserts what TS validated: one device the backend takes, dtypes it can carry (Gloo checks
// dtypes only inside the collective, where a refusal would look like a failed group).
void checkTensors(Call& c, const GroupEntry& group, const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    const at::ScalarType type = tensor.scalar_type();
    if (group.backendName == "gloo" &&
        (type == at::kBool || (type == at::kBFloat16 && TORCH_VERSION_MAJOR < 2))) {
      c.state.fail("ERR_DTYPE", c.op, std::string("gloo cannot reduce ") + c10::toString(type) + " tensors");
    }
    if (group.backendName == "nccl" &&
        (!tensor.is_cuda() || tensor.device().index() != static_cast<c10::DeviceIndex>(group.deviceIndex))) {
      c.state.fail("ERR_DEVICE", c.op,
                   "the nccl group of " + describeGroup(group) + " takes tensors on cuda:" +
                       std::to_string(group.deviceIndex) + ", got one on " + tensor.device().str());
    }
    if (group.backendName == "gloo" && !tensor.is_cpu() && !tensor.is_cuda()) {
      c.state.fail("ERR_DEVICE", c.op, "gloo takes CPU (or CUDA) tensors, got one on " + tensor.device().str());
    }
  }
}

// distAllReduce(groupId, tensors, op): in place on every tensor.
FLODL_OP(distAllReduce) {
  GroupEntry& group = groupArgument(c, 0);
  std::vector<at::Tensor> tensors = c.tensors(1);
  bool average = false;
  c10d::ReduceOp reduceOp = reduceOpArgument(c, 2, &average);
  checkTensors(c, group, tensors);
  const bool nativeAverage = average && group.backendName == "nccl";  // Gloo has no AVG: SUM, then divide
  if (nativeAverage) reduceOp = c10d::ReduceOp(c10d::ReduceOp::AVG);
  for (const at::Tensor& tensor : tensors) {
    if (average && !at::isFloatingType(tensor.scalar_type())) {
      c.state.fail("ERR_DTYPE", c.op,
                   std::string("op 'avg' needs floating-point tensors, got ") + c10::toString(tensor.scalar_type()));
    }
  }
  at::NoGradGuard noGrad;
  // Every bucket's allReduce is issued before the first is awaited: the backend runs them
  // together, so a call of several dtypes (a model's parameters and its float64 masses) costs
  // about one collective's latency, not one per bucket. Every rank issues them in one order.
  std::vector<Bucket> buckets = bucketsOf(tensors);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  works.reserve(buckets.size());
  for (Bucket& bucket : buckets) {
    std::vector<at::Tensor> one{bucket.buffer};
    c10d::AllreduceOptions options;
    options.reduceOp = reduceOp;
    options.timeout = group.timeout;
    works.push_back(group.backend->allreduce(one, options));
  }
  for (size_t i = 0; i < buckets.size(); ++i) {
    awaitWork(c, group, "allReduce", works[i]);
    if (average && !nativeAverage) buckets[i].buffer.div_(group.size);
    copyBack(tensors, buckets[i]);
  }
  return c.undefined();
}

// distBroadcast(groupId, tensors, root): root's values into every rank's tensors.
FLODL_OP(distBroadcast) {
  GroupEntry& group = groupArgument(c, 0);
  std::vector<at::Tensor> tensors = c.tensors(1);
  const int64_t root = c.integer(2);
  if (root < 0 || root >= group.size) c.invalid(2, "a root rank in [0, worldSize)");
  checkTensors(c, group, tensors);
  at::NoGradGuard noGrad;
  forEachBucket(tensors, group.rank != root, [&](at::Tensor& bucket) {
    std::vector<at::Tensor> one{bucket};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.rootTensor = 0;
    options.timeout = group.timeout;
    awaitWork(c, group, "broadcast", group.backend->broadcast(one, options));
  });
  return c.undefined();
}

// distAllGather(groupId, tensor) -> Tensor[worldSize]: every rank's tensor, in rank order.
FLODL_OP(distAllGather) {
  GroupEntry& group = groupArgument(c, 0);
  at::Tensor& source = c.tensor(1);
  checkTensors(c, group, {source});
  at::NoGradGuard noGrad;
  std::vector<at::Tensor> inputs{source.contiguous()};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int k = 0; k < group.size; ++k) outputs[0].push_back(at::empty(inputs[0].sizes(), inputs[0].options()));
  if (source.numel() != 0) {
    c10d::AllgatherOptions options;
    options.timeout = group.timeout;
    awaitWork(c, group, "allGather", group.backend->allgather(outputs, inputs, options));
  }
  return c.result(outputs[0]);
}

// distBarrier(groupId): returns once every rank has arrived.
FLODL_OP(distBarrier) {
  GroupEntry& group = groupArgument(c, 0);
  c10d::BarrierOptions options;
  options.timeout = group.timeout;
  if (group.deviceIndex >= 0) options.device_ids = {group.deviceIndex};
  awaitWork(c, group, "barrier", group.backend->barrier(options));
  return c.undefined();
}

// distGroupDestroy(groupId, abort) -> false when it was already destroyed. `abort` tears the
// NCCL communicators down without waiting for them; a group whose collective is still in
// flight is finished off on a background thread so the caller never waits on a dead peer.
FLODL_OP(distGroupDestroy) {
  std::unique_ptr<GroupEntry> entry = c.state.distributed().takeGroup(c.number(0));
  if (!entry) return Napi::Boolean::New(c.env, false);
  [[maybe_unused]] const bool abort = c.flag(1);
#if FLODL_HAS_NCCL
  if (abort || !entry->failure.empty()) abortNccl(*entry);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  else if (entry->nccl) entry->nccl->shutdown();
#endif
#endif
  if (entry->workInFlight) {
    c.state.distributed().retire(std::move(entry));
  } else {
    entry.reset();
  }
  return Napi::Boolean::New(c.env, true);
}

#else  // no c10d in this libtorch

[[noreturn]] void noC10d(Call& c) {
  c.state.fail("ERR_INVALID_ARGUMENT", c.op, "this libtorch was built without torch.distributed (c10d)");
}
FLODL_OP(distStoreCreate) { noC10d(c); }
FLODL_OP(distStoreFree) { return Napi::Boolean::New(c.env, false); }
FLODL_OP(distGroupCreate) { noC10d(c); }
FLODL_OP(distAllReduce) { noC10d(c); }
FLODL_OP(distBroadcast) { noC10d(c); }
FLODL_OP(distAllGather) { noC10d(c); }
FLODL_OP(distBarrier) { noC10d(c); }
FLODL_OP(distGroupDestroy) { return Napi::Boolean::New(c.env, false); }

#endif

}  // namespace

void registerDistributedOps(Registry& r) {
  FLODL_REGISTER(r, distInfo);
  FLODL_REGISTER(r, distLiveCount);
  FLODL_REGISTER(r, distStoreCreate);
  FLODL_REGISTER(r, distStoreFree);
  FLODL_REGISTER(r, distGroupCreate);
  FLODL_REGISTER(r, distAllReduce);
  FLODL_REGISTER(r, distBroadcast);
  FLODL_REGISTER(r, distAllGather);
  FLODL_REGISTER(r, distBarrier);
  FLODL_REGISTER(r, distGroupDestroy);
}

}  // namespace flodl

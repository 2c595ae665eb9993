// Live c10d rendezvous stores and process groups of one JS environment. JS holds integer ids,
// never pointers, and an id is never reused, so a stale or forged id is refused here.
//
// The c10d C++ API moved between libtorch 1.13 and 2.x: in 1.13 ProcessGroupGloo/NCCL derive
// from c10d::ProcessGroup; from 2.0 on they derive from c10d::Backend (ProcessGroup became a
// facade that dispatches to backends). Both expose the same virtual collectives, so we hold
// the backend directly through `CollectiveBackend` and never build the 2.x facade.
#pragma once

#include <torch/version.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if __has_include(<torch/csrc/distributed/c10d/TCPStore.hpp>)
#define FLODL_HAS_C10D 1
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#else
#define FLODL_HAS_C10D 0
#endif

#if FLODL_HAS_C10D && defined(USE_C10D_GLOO) && __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#define FLODL_HAS_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#else
#define FLODL_HAS_GLOO 0
#endif

// PyTorch wheels ship ProcessGroupNCCL.hpp but not nccl.h (that comes with the nvidia-nccl
// package): without it on the include path the NCCL backend is left out, not the whole build.
#if FLODL_HAS_C10D && defined(USE_C10D_NCCL) && defined(FLODL_CUDA) && \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>) && __has_include(<nccl.h>)
#define FLODL_HAS_NCCL 1
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#else
#define FLODL_HAS_NCCL 0
#endif

namespace flodl {

#if FLODL_HAS_C10D

#if TORCH_VERSION_MAJOR >= 2
using CollectiveBackend = c10d::Backend;
#else
using CollectiveBackend = c10d::ProcessGroup;
#endif

struct StoreEntry {
  c10::intrusive_ptr<c10d::Store> store;
  std::string host;
};

struct GroupEntry {
  std::string backendName;  // "gloo" | "nccl"
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<CollectiveBackend> backend;
#if FLODL_HAS_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // the same object as `backend`, for abort()
#endif
  int64_t deviceIndex = -1;  // the CUDA device of an nccl group
  std::string failure;       // why the group became unusable; empty while it is healthy
  bool workInFlight = false;  // a wait gave up before the backend finished the collective
};

class DistributedTable {
 public:
  DistributedTable() = default;
  DistributedTable(const DistributedTable&) = delete;
  DistributedTable& operator=(const DistributedTable&) = delete;
  // Environment teardown: groups first (their backends hold the stores), then the groups
  // that abort() handed to a background thread.
  ~DistributedTable() {
    groups_.clear();
    stores_.clear();
    for (std::thread& thread : retiring_) thread.join();
  }

  double addStore(StoreEntry entry) {
    const double id = nextId();
    stores_.emplace(id, std::move(entry));
    return id;
  }
  StoreEntry* store(double id) {
    auto found = stores_.find(id);
    return found == stores_.end() ? nullptr : &found->second;
  }
  bool eraseStore(double id) { return stores_.erase(id) != 0; }

  double addGroup(std::unique_ptr<GroupEntry> entry) {
    const double id = nextId();
    groups_.emplace(id, std::move(entry));
    return id;
  }
  GroupEntry* group(double id) {
    auto found = groups_.find(id);
    return found == groups_.end() ? nullptr : found->second.get();
  }
  std::unique_ptr<GroupEntry> takeGroup(double id) {
    auto found = groups_.find(id);
    if (found == groups_.end()) return nullptr;
    std::unique_ptr<GroupEntry> entry = std::move(found->second);
    groups_.erase(found);
    return entry;
  }

  // Destroys a group on a background thread: its backend's destructor joins worker threads
  // that may still sit in a collective until the backend's own timeout expires.
  void retire(std::unique_ptr<GroupEntry> entry) {
    retiring_.emplace_back([doomed = std::shared_ptr<GroupEntry>(std::move(entry))]() mutable { doomed.reset(); });
  }

  size_t liveStores() const { return stores_.size(); }
  size_t liveGroups() const { return groups_.size(); }

 private:
  double nextId() { return static_cast<double>(++lastId_); }

  int64_t lastId_ = 0;
  std::map<double, StoreEntry> stores_;
  std::map<double, std::unique_ptr<GroupEntry>> groups_;
  std::vector<std::thread> retiring_;
};

#else

class DistributedTable {
 public:
  size_t liveStores() const { return 0; }
  size_t liveGroups() const { return 0; }
};

#endif

}  // namespace flodl

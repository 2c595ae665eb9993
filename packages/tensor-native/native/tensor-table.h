// Per-environment table of live tensors. JS holds a handle (a double that encodes a
// slot index and a generation), never a pointer, so a stale or forged handle is caught
// here instead of crashing the process, and creating a tensor costs no V8 allocation.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace flodl {

class TensorTable {
 public:
  static constexpr uint64_t kSlotBits = 24;
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  // 24 slot bits + 7 generation bits keep every handle a small integer (a V8 Smi: no heap
  // number is allocated per result).
  static constexpr uint64_t kGenerationMask = (uint64_t{1} << 7) - 1;

  // Stores the tensor and returns its handle. `externalBytes` is what was reported to V8.
  double insert(at::Tensor tensor, int64_t externalBytes) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(entries_.size());
      if (slot > kSlotMask) throw std::length_error("too many live tensors (16M); dispose tensors or use tidy()");
      entries_.emplace_back();
    }
    Entry& entry = entries_[slot];
    entry.tensor = std::move(tensor);
    entry.externalBytes = externalBytes;
    entry.live = true;
    ++live_;
    return static_cast<double>((uint64_t{entry.generation} << kSlotBits) | slot);
  }

  // Returns the tensor of a live handle, or nullptr for a disposed / unknown one.
  at::Tensor* find(double handle) {
    if (!(handle >= 0 && handle < 9007199254740992.0)) return nullptr;
    const uint64_t bits = static_cast<uint64_t>(handle);
    const uint64_t slot = bits & kSlotMask;
    if (slot >= entries_.size()) return nullptr;
    Entry& entry = entries_[slot];
    if (!entry.live || entry.generation != (bits >> kSlotBits)) return nullptr;
    return &entry.tensor;
  }

  // Frees a handle. Returns the external bytes to un-report, or -1 when it was not live.
  int64_t erase(double handle) {
    if (find(handle) == nullptr) return -1;
    const uint64_t slot = static_cast<uint64_t>(handle) & kSlotMask;
    Entry& entry = entries_[slot];
    entry.tensor = at::Tensor();
    entry.live = false;
    entry.generation = (entry.generation + 1) & kGenerationMask;
    free_.push_back(static_cast<uint32_t>(slot));
    --live_;
    const int64_t bytes = entry.externalBytes;
    entry.externalBytes = 0;
    return bytes;
  }

  // Frees the tensor of a handle that the JS garbage-collection safety net still watches,
  // but keeps its slot out of reuse until `reclaim`: the stale handle the safety net holds
  // can then never name another tensor. Returns the external bytes, or -1.
  int64_t retire(double handle) {
    if (find(handle) == nullptr) return -1;
    Entry& entry = entries_[static_cast<uint64_t>(handle) & kSlotMask];
    entry.tensor = at::Tensor();
    entry.live = false;
    entry.retired = true;
    --live_;
    const int64_t bytes = entry.externalBytes;
    entry.externalBytes = 0;
    return bytes;
  }

  // The safety net's callback: frees a still-live handle (its JS object was collected without
  // dispose) or returns a retired slot to reuse. Returns the external bytes freed, or -1.
  int64_t reclaim(double handle) {
    if (!(handle >= 0 && handle < 9007199254740992.0)) return -1;
    const uint64_t bits = static_cast<uint64_t>(handle);
    const uint64_t slot = bits & kSlotMask;
    if (slot >= entries_.size()) return -1;
    Entry& entry = entries_[slot];
    if (entry.generation != (bits >> kSlotBits)) return -1;
    if (entry.live) return erase(handle);
    if (!entry.retired) return -1;
    entry.retired = false;
    entry.generation = (entry.generation + 1) & kGenerationMask;
    free_.push_back(static_cast<uint32_t>(slot));
    return 0;
  }

  int64_t live() const { return live_; }

 private:
  struct Entry {
    at::Tensor tensor;
    int64_t externalBytes = 0;
    uint32_t generation = 0;
    bool live = false;
    bool retired = false;
  };
  std::vector<Entry> entries_;
  std::vector<uint32_t> free_;
  int64_t live_ = 0;
};

}  // namespace flodl

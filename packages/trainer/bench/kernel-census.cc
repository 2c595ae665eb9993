// The counter behind `pnpm bench:kernels`: a CUDA injection library (loaded by the CUDA driver
// from CUDA_INJECTION64_PATH at initialization, in whichever process it is) that records every
// kernel, memcpy and memset the process runs through CUPTI's activity API and, at exit, writes
// one line per name: count, summed GPU nanoseconds, name (tab-separated), to
// $FLODL_KERNEL_CENSUS.<pid>. The same library counts the flodl process and the Python one, so
// the two sides are counted by one instrument.
//
// Built by bench/kernels.mjs with the machine's g++ against its CUPTI; KERNEL_RECORD names the
// newest CUpti_ActivityKernel struct of that CUPTI's headers (read from them at build time).
#include <cupti.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace {

struct Tally {
  long count = 0;
  unsigned long long nanoseconds = 0;
};

std::map<std::string, Tally> tallies;
std::mutex tallyLock;
constexpr size_t kBufferBytes = 16 << 20;

void add(const std::string& name, unsigned long long start, unsigned long long end) {
  Tally& tally = tallies[name];
  tally.count++;
  tally.nanoseconds += end - start;
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* maxRecords) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = *buffer == nullptr ? 0 : kBufferBytes;
  *maxRecords = 0;
}

void CUPTIAPI bufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t validBytes) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> guard(tallyLock);
  while (cuptiActivityGetNextRecord(buffer, validBytes, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* kernel = reinterpret_cast<const KERNEL_RECORD*>(record);
        add(std::string("kernel ") + kernel->name, kernel->start, kernel->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy5*>(record);
        add("memcpy (kind " + std::to_string(copy->copyKind) + ")", copy->start, copy->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* set = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        add("memset", set->start, set->end);
        break;
      }
      default:
        break;
    }
  }
  free(buffer);
}

void writeTallies() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* prefix = getenv("FLODL_KERNEL_CENSUS");
  if (prefix == nullptr) return;
  const std::string path = std::string(prefix) + "." + std::to_string(getpid());
  FILE* file = fopen(path.c_str(), "w");
  if (file == nullptr) return;
  std::lock_guard<std::mutex> guard(tallyLock);
  for (const auto& [name, tally] : tallies) fprintf(file, "%ld\t%llu\t%s\n", tally.count, tally.nanoseconds, name.c_str());
  fclose(file);
}

}  // namespace

extern "C" int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted) != CUPTI_SUCCESS) return 0;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  atexit(writeTallies);
  return 1;
}

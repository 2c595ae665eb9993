// The C++ floor of the dispatch benchmark: the same ops called from a tight C++ loop on the
// same libtorch, with no language boundary at all. Prints JSON: op name -> ns per op, each
// result freed at once; and under "held", the same with the results kept 100 at a time and
// then freed together, the lifetime a tidy() scope gives them (holding them costs the
// allocator more: its per-thread caches only hold a few freed blocks of each size).
// Arguments: iterations, device (cpu or cuda; on cuda each timing ends with a synchronizing
// read), repeats (the best of this many timings is kept; default 3).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 200000;
  const bool cuda = argc > 2 && std::string(argv[2]) != "cpu";
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  const at::Device device = cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  at::set_num_threads(1);
  at::manual_seed(0);
  const at::Tensor x = at::rand({64}).to(device);
  const at::Tensor y = at::rand({64}).to(device);
  const at::Tensor m = at::rand({8, 8}).to(device);
  const at::Tensor n = at::rand({8, 8}).to(device);
  const at::Tensor index = at::arange(1, 6, 2, at::kLong).to(device);
  const at::Tensor w = at::rand({64}).to(device).set_requires_grad(true);
  // Waits for the queued kernels (a read orders after them on the stream); nothing on the CPU.
  const auto sync = [&] {
    if (cuda) (void)x.sum().item<float>();
  };
  std::vector<std::pair<std::string, std::function<at::Tensor()>>> cases = {
      {"add", [&] { return at::add(x, y); }},
      {"mul", [&] { return at::mul(x, y); }},
      {"relu", [&] { return at::relu(x); }},
      {"sum", [&] { return x.sum(); }},
      {"matmul 8x8", [&] { return at::matmul(m, n); }},
      {"reshape", [&] { return x.reshape({8, 8}); }},
      {"select m[3]", [&] { return m.select(0, 3); }},
      {"narrow", [&] { return m.narrow(0, 2, 3); }},
      {"index_select", [&] { return m.index_select(0, index); }},
      {"add (grad)", [&] { return at::add(w, y); }},
  };
  std::vector<at::Tensor> held;
  held.reserve(100);
  const long batches = (iterations + 99) / 100;
  std::vector<std::pair<double, double>> best(cases.size(), {1e30, 1e30});
  for (size_t k = 0; k < cases.size(); ++k) {
    auto& fn = cases[k].second;
    for (int warm = 0; warm < 2000; ++warm) fn();
    sync();
    for (int round = 0; round < repeats; ++round) {
      auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < iterations; ++i) fn();
      sync();
      double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      best[k].first = std::min(best[k].first, ns / iterations);
      start = std::chrono::steady_clock::now();
      for (long b = 0; b < batches; ++b) {
        for (int i = 0; i < 100; ++i) held.push_back(fn());
        held.clear();
      }
      sync();
      ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      best[k].second = std::min(best[k].second, ns / (batches * 100));
    }
  }
  std::printf("{");
  for (size_t k = 0; k < cases.size(); ++k)
    std::printf("%s\"%s\": %.1f", k == 0 ? "" : ", ", cases[k].first.c_str(), best[k].first);
  std::printf(", \"held\": {");
  for (size_t k = 0; k < cases.size(); ++k)
    std::printf("%s\"%s\": %.1f", k == 0 ? "" : ", ", cases[k].first.c_str(), best[k].second);
  std::printf("}}\n");
  return 0;
}

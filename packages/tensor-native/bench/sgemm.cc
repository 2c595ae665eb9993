// The float32 products of a linear layer's training step, timed two ways on the same libtorch:
// libtorch's own (at::mm, on whatever BLAS libtorch links) and oneDNN's dnnl_sgemm as the addon
// finds it (gemm-cpu.cc). Prints one JSON line: per shape, the best time of each over repeats.
// Usage: sgemm THREADS REPEATS
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../native/dnnl-sgemm.h"

// The BLAS libraries mapped into this process, as a JSON array of paths.
static std::string mappedBlas() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> paths;
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (name.rfind("libblas", 0) == 0 || name.rfind("libopenblas", 0) == 0 || name.rfind("libmkl", 0) == 0 ||
        name.rfind("libblis", 0) == 0) {
      paths.insert(path);
    }
  }
  std::string out = "[";
  for (const std::string& path : paths) out += (out.size() > 1 ? ",\"" : "\"") + path + "\"";
  return out + "]";
}

// Seconds per call of fn: calls until 0.1 s have passed, best of `repeats` such runs.
template <typename Fn>
static double timed(Fn fn, int repeats) {
  double best = 1e9;
  for (int r = 0; r < repeats; ++r) {
    int64_t calls = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 0.1);
    best = std::min(best, elapsed / static_cast<double>(calls));
  }
  return best;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  at::set_num_threads(threads);
  const flodl::DnnlSgemm sgemm = flodl::findDnnlSgemm();
  // (rows, out, in) of y = x·Wᵀ and what its step computes: forward, input gradient, weight gradient.
  struct Layer {
    const char* name;
    int64_t rows, out, in;
  };
  const std::vector<Layer> layers{{"mlp64 hidden", 32, 64, 64}, {"mlp64 head", 32, 10, 64},
                                  {"mlp input", 256, 1024, 784}, {"mlp hidden", 256, 1024, 1024}};
  std::string json = "{\"oneDnn\":" + std::string(sgemm != nullptr ? "true" : "false") + ",\"blas\":" + mappedBlas() + ",\"threads\":" +
                     std::to_string(at::get_num_threads()) + ",\"products\":[";
  bool first = true;
  for (const Layer& l : layers) {
    at::manual_seed(1);
    const at::Tensor x = at::randn({l.rows, l.in}), w = at::randn({l.out, l.in}), g = at::randn({l.rows, l.out});
    struct Product {
      const char* what;
      int64_t m, n, k;
      std::function<void()> libtorch, oneDnn;
    };
    at::Tensor y = at::empty({l.rows, l.out}), gx = at::empty({l.rows, l.in}), gw = at::empty({l.out, l.in});
    const std::vector<Product> products{
        {"forward", l.rows, l.out, l.in, [&] { at::mm_out(y, x, w.t()); },
         [&] { sgemm('N', 'T', l.rows, l.out, l.in, 1, x.data_ptr<float>(), l.in, w.data_ptr<float>(), l.in, 0,
                     y.data_ptr<float>(), l.out); }},
        {"input gradient", l.rows, l.in, l.out, [&] { at::mm_out(gx, g, w); },
         [&] { sgemm('N', 'N', l.rows, l.in, l.out, 1, g.data_ptr<float>(), l.out, w.data_ptr<float>(), l.in, 0,
                     gx.data_ptr<float>(), l.in); }},
        {"weight gradient", l.out, l.in, l.rows, [&] { at::mm_out(gw, g.t(), x); },
         [&] { sgemm('T', 'N', l.out, l.in, l.rows, 1, g.data_ptr<float>(), l.out, x.data_ptr<float>(), l.in, 0,
                     gw.data_ptr<float>(), l.in); }},
    };
    for (const Product& p : products) {
      const double libtorch = timed(p.libtorch, repeats);
      const double oneDnn = sgemm != nullptr ? timed(p.oneDnn, repeats) : -1;
      char entry[256];
      std::snprintf(entry, sizeof entry,
                    "%s{\"layer\":\"%s\",\"product\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"libtorch\":%.9g,"
                    "\"oneDnn\":%.9g}",
                    first ? "" : ",", l.name, p.what, static_cast<long long>(p.m), static_cast<long long>(p.n),
                    static_cast<long long>(p.k), libtorch, oneDnn);
      json += entry;
      first = false;
    }
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
}

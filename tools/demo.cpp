// `tilejit demo` — the main job: vector add and softmax end to end.
#include "tools/demo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "examples/attention/flash_decode.hpp"
#include "examples/attention/flash_fwd.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tilejit::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string kernel, shape;
  double ms = 0, tbs = 0, frac = 0, jit_ms = 0;
  std::string cache;
  bool ok = false;
  double err = 0;
};

std::string cache_word(const JitInfo& j) {
  if (!j.compiled) return "loaded";
  switch (j.source) {
    case runtime::KernelCache::Source::compiled: return "miss";
    case runtime::KernelCache::Source::disk: return "disk hit";
    case runtime::KernelCache::Source::memory: return "memory hit";
  }
  return "?";
}

std::vector<float> random_vec(std::size_t n, std::mt19937& g, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// Median of `iters` event-timed runs of `fn`, in ms.
double median_ms(const Device& dev, int iters, const std::function<void()>& fn) {
  std::vector<double> t;
  fn();  // warm-up
  dev.synchronize();
  for (int i = 0; i < iters; ++i) t.push_back(dev.time_ms({}, fn));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Buffer {
  const Device& dev;
  void* p;
  Buffer(const Device& d, std::size_t bytes) : dev(d), p(d.alloc(bytes)) {}
  ~Buffer() { dev.free(p); }
  float* f() const { return static_cast<float*>(p); }
};

double max_rel_softmax_error(const std::vector<float>& x, const std::vector<float>& y, long long rows, int w) {
  double worst = 0;
  for (long long r = 0; r < rows; ++r) {
    const float* xr = &x[static_cast<std::size_t>(r * w)];
    double m = *std::max_element(xr, xr + w), s = 0;
    for (int c = 0; c < w; ++c) s += std::exp(static_cast<double>(xr[c]) - m);
    for (int c = 0; c < w; ++c) {
      double ref = std::exp(static_cast<double>(xr[c]) - m) / s;
      worst = std::max(worst, std::fabs(y[static_cast<std::size_t>(r * w + c)] - ref) / std::max(ref, 1e-30));
    }
  }
  return worst;
}

void print_table(const std::vector<Row>& rows, bool gpu) {
  if (gpu)
    fmt::print("\n{:<14} {:>16} {:>10} {:>8} {:>10} {:>9} {:>11} {:>9}\n", "kernel", "shape", "time ms", "TB/s", "of copy", "JIT ms",
               "cache", "check");
  else
    fmt::print("\n{:<14} {:>16} {:>16} {:>9}\n", "kernel", "shape", "interpreter ms", "check");
  for (const auto& r : rows) {
    std::string check = r.ok ? fmt::format("ok {:.0e}", r.err) : "FAILED";
    if (gpu)
      fmt::print("{:<14} {:>16} {:>10.3f} {:>8.2f} {:>9.0f}% {:>9.1f} {:>11} {:>9}\n", r.kernel, r.shape, r.ms, r.tbs, 100 * r.frac, r.jit_ms, r.cache,
                 check);
    else
      fmt::print("{:<14} {:>16} {:>16.1f} {:>9}\n", r.kernel, r.shape, r.ms, check);
  }
}

template <class K>
Row run_vector_add(const Device& dev, long long n, int iters, double copy_tbs, std::mt19937& g) {
  constexpr int kBlock = 1024;
  Row row{"vector_add", fmt::format("[{}]", n)};
  auto x = random_vec(static_cast<std::size_t>(n), g, -4, 4), y = random_vec(static_cast<std::size_t>(n), g, -4, 4);
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  Buffer dx(dev, bytes), dy(dev, bytes), dout(dev, bytes);
  dev.copy_to_device(dx.p, x.data(), bytes);
  dev.copy_to_device(dy.p, y.data(), bytes);
  dev.memset(dout.p, 0xff, bytes);  // poison: NaN everywhere
  auto k = compile<K>(dev, {.num_warps = 4});
  const auto t0 = Clock::now();
  k.launch(Grid{cdiv(n, kBlock)}, dx.f(), dy.f(), dout.f(), n);
  dev.synchronize();
  row.jit_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  row.cache = cache_word(k.last_jit());
  if (dev.backend() == Backend::interpreter) row.ms = row.jit_ms, row.jit_ms = 0, row.cache = "-";
  std::vector<float> out(static_cast<std::size_t>(n));
  dev.copy_to_host(out.data(), dout.p, bytes);
  row.ok = true;
  for (long long i = 0; i < n; ++i)
    if (out[static_cast<std::size_t>(i)] != x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)]) { row.ok = false; break; }
  if (dev.backend() != Backend::interpreter) {
    row.ms = median_ms(dev, iters, [&] { k.launch(Grid{cdiv(n, kBlock)}, dx.f(), dy.f(), dout.f(), n); });
    row.tbs = 3.0 * static_cast<double>(bytes) / (row.ms * 1e-3) / 1e12;
    row.frac = row.tbs / copy_tbs;
  }
  return row;
}

template <int BM, int W>
Row run_softmax(const Device& dev, long long rows, int nw, int iters, double copy_tbs, std::mt19937& g) {
  Row row{"softmax", fmt::format("[{},{}]", rows, W)};
  const std::size_t n = static_cast<std::size_t>(rows) * W, bytes = n * sizeof(float);
  auto x = random_vec(n, g, -8, 8);
  Buffer dx(dev, bytes), dy(dev, bytes);
  dev.copy_to_device(dx.p, x.data(), bytes);
  dev.memset(dy.p, 0xff, bytes);
  auto k = compile<examples::Softmax<BM, W>>(dev, {.num_warps = nw});
  const auto t0 = Clock::now();
  k.launch(Grid{cdiv(rows, BM)}, dx.f(), dy.f(), rows);
  dev.synchronize();
  row.jit_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  row.cache = cache_word(k.last_jit());
  if (dev.backend() == Backend::interpreter) row.ms = row.jit_ms, row.jit_ms = 0, row.cache = "-";
  std::vector<float> y(n);
  dev.copy_to_host(y.data(), dy.p, bytes);
  // Check a sample of rows on a GPU (all of them in the interpreter).
  const long long check_rows = std::min<long long>(rows, dev.backend() == Backend::interpreter ? rows : 4096);
  row.err = max_rel_softmax_error(x, y, check_rows, W);
  row.ok = row.err < 1e-4 && std::all_of(y.begin(), y.end(), [](float v) { return v >= 0 && v <= 1; });
  if (dev.backend() != Backend::interpreter) {
    row.ms = median_ms(dev, iters, [&] { k.launch(Grid{cdiv(rows, BM)}, dx.f(), dy.f(), rows); });
    row.tbs = 2.0 * static_cast<double>(bytes) / (row.ms * 1e-3) / 1e12;
    row.frac = row.tbs / copy_tbs;
  }
  return row;
}

template <class K>
void compile_row(const char* label, const char* arch, int nw, int stages = 3) {
  try {
    auto r = compile_for_arch<K>(arch, {.num_warps = nw, .num_stages = stages});
    fmt::print("  {:<28} {:<7} {:>8.1f} ms  {:>7} bytes\n", label, arch, r.compile_ms, r.binary.bytes.size());
  } catch (const Error& e) {
    std::string msg = e.what();
    fmt::print("  {:<28} {:<7} FAILED: {}\n", label, arch, msg.substr(0, msg.find('\n')));
  }
}

}  // namespace

int run_demo(const DemoOptions& o) {
  std::mt19937 g(std::random_device{}());
  Device dev = o.force_cpu ? Device::interpreter() : Device::best();
  std::vector<Row> rows;
  const bool gpu = dev.backend() != Backend::interpreter;
  if (gpu) {
    fmt::print("device: {} ({}), driver {}, {} SMs\n", dev.name(), dev.arch(), dev.driver_version(), dev.num_sms());
    const std::size_t copy_bytes = static_cast<std::size_t>(o.gib * (1ull << 30));
    double copy_tbs = 0;
    {
      Buffer a(dev, copy_bytes), b(dev, copy_bytes);
      dev.memset(a.p, 1, copy_bytes);
      dev.time_copies(b.p, a.p, copy_bytes, 3);  // warm-up
      std::vector<double> t;
      for (int i = 0; i < 5; ++i) t.push_back(dev.time_copies(b.p, a.p, copy_bytes, 10) / 10);
      std::sort(t.begin(), t.end());
      copy_tbs = 2.0 * static_cast<double>(copy_bytes) / (t[2] * 1e-3) / 1e12;
    }
    fmt::print("device-to-device copy: {:.2f} TB/s (bytes read + written, {:.2f} GiB buffers)\n", copy_tbs, o.gib);
    const long long n = static_cast<long long>(o.gib * (1ull << 30) / sizeof(float));
    rows.push_back(run_vector_add<examples::VecAdd<1024>>(dev, n, o.iters, copy_tbs, g));
    rows.push_back(run_softmax<32, 96>(dev, n / 96, 4, o.iters, copy_tbs, g));
    rows.push_back(run_softmax<4, 768>(dev, n / 768, 4, o.iters, copy_tbs, g));
    rows.push_back(run_softmax<2, 3072>(dev, n / 3072, 8, o.iters, copy_tbs, g));
    rows.push_back(run_softmax<1, 12288>(dev, n / 12288, 16, o.iters, copy_tbs, g));
  } else {
    std::string why = Device::cuda_unavailable_reason();
    fmt::print("no GPU: {}\nrunning the same kernels through the CPU interpreter at small sizes\n", why.empty() ? "TILEJIT_INTERPRET or --cpu" : why);
    rows.push_back(run_vector_add<examples::VecAdd<1024>>(dev, 100'000, 1, 1, g));
    rows.push_back(run_softmax<32, 96>(dev, 333, 4, 1, 1, g));
    rows.push_back(run_softmax<4, 768>(dev, 41, 4, 1, 1, g));
    rows.push_back(run_softmax<2, 3072>(dev, 9, 8, 1, 1, g));
    rows.push_back(run_softmax<1, 12288>(dev, 3, 16, 1, 1, g));
  }
  print_table(rows, gpu);
  if (!gpu) {
    fmt::print("\ncompiling every kernel (compile time of this process; NVRTC for sm_90a, the HIP compiler for gfx942):\n");
    for (const char* arch : {"sm_90a", "gfx942"}) {
      compile_row<examples::VecAdd<1024>>("vector_add<1024>", arch, 4);
      compile_row<examples::Softmax<32, 96>>("softmax<32,96>", arch, 4);
      compile_row<examples::Softmax<4, 768>>("softmax<4,768>", arch, 4);
      compile_row<examples::Softmax<2, 3072>>("softmax<2,3072>", arch, 8);
      compile_row<examples::Softmax<1, 12288>>("softmax<1,12288>", arch, arch[0] == 'g' ? 8 : 16);
      // sm_90a: TMA ring + wgmma (HGMMA / QGMMA); gfx942: masked loads + MFMA.
      compile_row<examples::MatmulV5<128, 256, bf16>>("gemm v5 bf16 128x256", arch, 8, 4);
      compile_row<examples::MatmulV5<64, 96, bf16>>("gemm v5 bf16 64x96 (NPOT)", arch, 4, 6);
      if (arch[0] == 's') compile_row<examples::MatmulV5<128, 256, f8e4m3>>("gemm v5 f8e4m3 128x256", arch, 8, 4);
      compile_row<examples::FlashAttnFwd<64, 64, 96, true, bf16>>("attention fwd D=96 causal", arch, 4);
      compile_row<examples::FlashDecodeSplit<64, 128, bf16>>("decode split D=128", arch, arch[0] == 'g' ? 1 : 4);
    }
  }
  const bool all_ok = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.ok; });
  fmt::print("\n{}\n", all_ok ? "all checks passed" : "SOME CHECKS FAILED");
  return all_ok ? 0 : 1;
}

}  // namespace tilejit::tools

// Row-wise kernels and JIT latency on the device (Google Benchmark).
//
// Registered in one binary so one run prints ours beside the ceiling:
//   BM_Copy            device-to-device copy, the bandwidth ceiling (TB/s, read + write)
//   BM_VectorAdd       out = x + y over 1 GiB per operand
//   BM_Softmax/W       row softmax, W in {96, 768, 3072, 12288}, 1 GiB in
//   BM_ReshapeCopy/*   a copy of 1 GiB in [32, 96] blocks, each read in one shape and stored in another: plain (no
//                      reshape), relabel ([32, 96] as [96, 32]: registers) and fallback ([96, 32] as [32, 96]: the
//                      digit order forbids it, one round trip through shared memory)
//   BM_DequantInt4     examples::DequantInt4 (tj::interleave): 512 MiB of 4-bit weights to 1 GiB of f16
//   BM_Exp2Split/K     exp2 throughput with one register in K on the FMA pipe (tj::exp2_split; 0: all on the SFU):
//                      v = exp2_split(v, K) - 1 repeated in registers, 4096 times per element, bound by the pipes
//   BM_JitColdProcess  first call of vector add in a fresh process, compile included
//   BM_JitRepeat       NVRTC compile + load again in the same process (caches bypassed)
//   BM_JitDiskHit      a new process's view: memory cache empty, entry on disk
//   BM_LaunchOverhead  host time per launch of a tiny kernel
// Without a GPU every benchmark reports "no GPU" and is skipped.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "examples/dequant_int4.hpp"
#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace {

constexpr std::size_t kBytes = std::size_t{1} << 30;
std::string g_self;

tj::Device& gpu() {
  static tj::Device d = tj::Device::best();
  return d;
}
bool need_gpu(benchmark::State& st) {
  if (gpu().backend() == tj::Backend::cuda) return true;
  st.SkipWithError("no GPU");
  return false;
}

/// `bytes` of device memory holding f32 values uniform in [lo, hi).
void* random_buffer(std::size_t bytes, float lo = -8, float hi = 8) {
  std::vector<float> h(bytes / sizeof(float));
  std::mt19937 g(std::random_device{}());
  std::uniform_real_distribution<float> d(lo, hi);
  for (auto& v : h) v = d(g);
  void* p = gpu().alloc(bytes);
  gpu().copy_to_device(p, h.data(), bytes);
  return p;
}

template <class F>
void timed(benchmark::State& st, double bytes_moved, F&& fn) {
  fn();
  gpu().synchronize();
  for (auto _ : st) st.SetIterationTime(gpu().time_ms({}, fn) / 1e3);
  st.counters["TB/s"] = benchmark::Counter(bytes_moved / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Copy(benchmark::State& st) {
  if (!need_gpu(st)) return;
  void* a = random_buffer(kBytes);
  void* b = gpu().alloc(kBytes);
  timed(st, 2.0 * kBytes, [&] { gpu().copy_device_to_device(b, a, kBytes); });
  gpu().free(a), gpu().free(b);
}

void BM_VectorAdd(benchmark::State& st) {
  if (!need_gpu(st)) return;
  const long long n = kBytes / sizeof(float);
  auto* x = static_cast<float*>(random_buffer(kBytes));
  auto* y = static_cast<float*>(random_buffer(kBytes));
  auto* o = static_cast<float*>(gpu().alloc(kBytes));
  auto k = tj::compile<examples::VecAdd<1024>>(gpu(), {.num_warps = 4});
  timed(st, 3.0 * kBytes, [&] { k.launch(tj::Grid{tj::cdiv(n, 1024)}, x, y, o, n); });
  gpu().free(x), gpu().free(y), gpu().free(o);
}

template <int BM, int W, int NW>
void BM_Softmax(benchmark::State& st) {
  if (!need_gpu(st)) return;
  const long long rows = kBytes / sizeof(float) / W;
  const std::size_t bytes = static_cast<std::size_t>(rows) * W * sizeof(float);
  auto* x = static_cast<float*>(random_buffer(bytes));
  auto* y = static_cast<float*>(gpu().alloc(bytes));
  auto k = tj::compile<examples::Softmax<BM, W>>(gpu(), {.num_warps = NW});
  timed(st, 2.0 * bytes, [&] { k.launch(tj::Grid{tj::cdiv(rows, BM)}, x, y, rows); });
  st.SetLabel("BLOCK_M=" + std::to_string(BM) + " num_warps=" + std::to_string(NW));
  gpu().free(x), gpu().free(y);
}

/// y = x, each program's A·B elements loaded as a row-major [A, B] block and stored as a row-major [C, D] one.
template <int A, int B, int C, int D>
struct ReshapeCopy {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto base = tj::program_id(0) * (A * B);
    auto v = tj::load(x + base + tj::expand_dims<1>(tj::arange<A>()) * B + tj::expand_dims<0>(tj::arange<B>()));
    tj::store(y + base + tj::expand_dims<1>(tj::arange<C>()) * D + tj::expand_dims<0>(tj::arange<D>()), tj::reshape<C, D>(v));
  }
};

template <int A, int B, int C, int D>
void BM_ReshapeCopy(benchmark::State& st) {
  if (!need_gpu(st)) return;
  const long long blocks = kBytes / sizeof(float) / (A * B);
  const std::size_t bytes = static_cast<std::size_t>(blocks) * A * B * sizeof(float);
  auto* x = static_cast<float*>(random_buffer(bytes));
  auto* y = static_cast<float*>(gpu().alloc(bytes));
  auto k = tj::compile<ReshapeCopy<A, B, C, D>>(gpu(), {.num_warps = 4});
  timed(st, 2.0 * bytes, [&] { k.launch(tj::Grid{blocks}, x, y); });
  std::string path = "plain";
  for (const auto& d : tj::compile_for_arch<ReshapeCopy<A, B, C, D>>(gpu().arch(), {.num_warps = 4}).diagnostics)
    if (d.find("reshape %") != std::string::npos && d.find(" to ") != std::string::npos)
      path = d.find("shared memory") != std::string::npos ? "shared memory" : "registers";
  st.SetLabel(path);
  gpu().free(x), gpu().free(y);
}

void BM_DequantInt4(benchmark::State& st) {
  if (!need_gpu(st)) return;
  constexpr int kBlock = 1024;
  const long long n_bytes = kBytes / 4;  // 2^28 packed bytes -> 2^29 f16 outputs (1 GiB)
  auto* w = static_cast<std::uint8_t*>(random_buffer(static_cast<std::size_t>(n_bytes)));
  auto* scale = static_cast<float*>(random_buffer(static_cast<std::size_t>(2 * n_bytes / 128 * 4)));
  auto* out = gpu().alloc(static_cast<std::size_t>(4 * n_bytes));
  auto k = tj::compile<examples::DequantInt4<kBlock, 128>>(gpu(), {.num_warps = 4});
  timed(st, static_cast<double>(n_bytes) * 5 + 2.0 * n_bytes / 128 * 4,
        [&] { k.launch(tj::Grid{tj::cdiv(n_bytes, kBlock)}, w, scale, static_cast<tj::f16*>(out), static_cast<int>(n_bytes)); });
  gpu().free(w), gpu().free(scale), gpu().free(out);
}

/// In a child process: first call of vector add (trace, codegen, NVRTC or
/// cache, load, launch, sync); prints milliseconds.
int jit_child() {
  auto& dev = gpu();
  auto* p = static_cast<float*>(dev.alloc(1 << 20));
  const auto t0 = std::chrono::steady_clock::now();
  auto k = tj::compile<examples::VecAdd<1024>>(dev, {.num_warps = 4});
  k.launch(tj::Grid{256}, p, p, p, 256 * 1024);
  dev.synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto& j = k.last_jit();
  std::printf("%.4f\n", ms);
  std::fprintf(stderr, "first call %.3f ms: codegen %.3f, compile %.3f (%s), module load %.3f\n", ms, j.codegen_ms, j.compile_ms,
               j.source == tj::runtime::KernelCache::Source::compiled ? "NVRTC" : "disk cache", j.load_ms);
  dev.free(p);
  return 0;
}

double run_child(const std::string& cache_dir) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    setenv("TILEJIT_CACHE_DIR", cache_dir.c_str(), 1);
    execl(g_self.c_str(), g_self.c_str(), "--jit-child", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  char buf[64] = {};
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return n > 0 ? std::atof(buf) : -1;
}

void BM_JitColdProcess(benchmark::State& st) {
  if (!need_gpu(st)) return;
  for (auto _ : st) {
    auto dir = std::filesystem::temp_directory_path() / ("tj-cold-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    double ms = run_child(dir.string());
    std::filesystem::remove_all(dir);
    if (ms < 0) { st.SkipWithError("child failed"); return; }
    st.SetIterationTime(ms / 1e3);
  }
}

void BM_JitDiskHitProcess(benchmark::State& st) {
  if (!need_gpu(st)) return;
  auto dir = std::filesystem::temp_directory_path() / ("tj-warm-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  run_child(dir.string());  // fills the disk cache
  for (auto _ : st) {
    double ms = run_child(dir.string());
    if (ms < 0) { st.SkipWithError("child failed"); return; }
    st.SetIterationTime(ms / 1e3);
  }
  std::filesystem::remove_all(dir);
}

void BM_JitRepeatInProcess(benchmark::State& st) {
  if (!need_gpu(st)) return;
  for (auto _ : st) {
    auto r = tj::compile_for_arch<examples::VecAdd<1024>>(gpu().arch(), {.num_warps = 4});
    st.SetIterationTime(r.compile_ms / 1e3);
  }
}

/// v = exp2_split(v, K) − 1, `iters` times over each program's 1024 registers (8 a thread at 4 warps): independent
/// chains, enough of them resident to keep the SFU (and for K > 0 the FMA pipe) busy.
template <int K>
struct Exp2Loop {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Size iters) const {
    auto o = tj::program_id(0) * 1024 + tj::arange<1024>();
    auto v = tj::for_range(0, iters, 1, tj::load(x + o), [&](tj::Int, auto t) { return tj::exp2_split(t, K) - 1.0f; });
    tj::store(y + o, v);
  }
};

template <int K>
void BM_Exp2Split(benchmark::State& st) {
  if (!need_gpu(st)) return;
  constexpr int kIters = 4096;
  const long long programs = 64LL * gpu().num_sms();  // 16 programs of 128 threads resident per SM, 4 waves
  const std::size_t bytes = static_cast<std::size_t>(programs) * 1024 * sizeof(float);
  auto* x = static_cast<float*>(random_buffer(bytes, -1, 0));  // v stays in (-1, 0]: exp2(v) - 1 maps it there
  auto* y = static_cast<float*>(gpu().alloc(bytes));
  auto k = tj::compile<Exp2Loop<K>>(gpu(), {.num_warps = 4});
  const double results = static_cast<double>(programs) * 1024 * kIters;
  k.launch(tj::Grid{programs}, x, y, kIters);
  gpu().synchronize();
  for (auto _ : st) st.SetIterationTime(gpu().time_ms({}, [&] { k.launch(tj::Grid{programs}, x, y, kIters); }) / 1e3);
  st.counters["Gexp2/s"] = benchmark::Counter(results / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["per SM per ns"] = benchmark::Counter(results / 1e9 / gpu().num_sms(), benchmark::Counter::kIsIterationInvariantRate);
  gpu().free(x), gpu().free(y);
}

void BM_LaunchOverhead(benchmark::State& st) {
  if (!need_gpu(st)) return;
  auto* p = static_cast<float*>(gpu().alloc(4096));
  auto k = tj::compile<examples::VecAdd<1024>>(gpu(), {.num_warps = 4});
  k.launch(tj::Grid{1}, p, p, p, 1024);
  gpu().synchronize();
  int i = 0;
  for (auto _ : st) {
    k.launch(tj::Grid{1}, p, p, p, 1024);
    if (++i % 4096 == 0) {
      st.PauseTiming();
      gpu().synchronize();
      st.ResumeTiming();
    }
  }
  gpu().synchronize();
  gpu().free(p);
}

}  // namespace

BENCHMARK(BM_Copy)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VectorAdd)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax<32, 96, 4>)->Name("BM_Softmax/96")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax<4, 768, 4>)->Name("BM_Softmax/768")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax<2, 3072, 8>)->Name("BM_Softmax/3072")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax<1, 12288, 16>)->Name("BM_Softmax/12288")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReshapeCopy<32, 96, 32, 96>)->Name("BM_ReshapeCopy/plain")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReshapeCopy<32, 96, 96, 32>)->Name("BM_ReshapeCopy/relabel")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReshapeCopy<96, 32, 32, 96>)->Name("BM_ReshapeCopy/fallback")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DequantInt4)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Exp2Split<0>)->Name("BM_Exp2Split/0")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Exp2Split<8>)->Name("BM_Exp2Split/8")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Exp2Split<4>)->Name("BM_Exp2Split/4")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Exp2Split<3>)->Name("BM_Exp2Split/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Exp2Split<2>)->Name("BM_Exp2Split/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Exp2Split<1>)->Name("BM_Exp2Split/1")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_JitColdProcess)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_JitRepeatInProcess)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);
BENCHMARK(BM_JitDiskHitProcess)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_LaunchOverhead)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  g_self = std::filesystem::canonical("/proc/self/exe").string();
  if (argc > 1 && std::strcmp(argv[1], "--jit-child") == 0) return jit_child();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

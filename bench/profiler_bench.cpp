// Profiler overhead on the device (Google Benchmark, wall time): the same
// work with no session, with a CUPTI session (launch hook on, every kernel
// attributed), and with periodic flushing every 100 steps.
//
//   BM_TinyLaunches/*   100,000 launches of a one-program vector add (CPU-bound)
//   BM_GemmLoop/*/n     n GEMMs 4096³ (examples/gemm rung 4, GPU-bound), n = 50 and 500
// Targets (issue 6): GPU-bound < 1% overhead, tiny launches < 1.3×, flushing < 2%.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "examples/gemm/matmul_v4.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace tp = tilejit::profiler;
namespace {

tj::Device& gpu() {
  static tj::Device d = tj::Device::best();
  return d;
}

enum Mode { kPlain = 0, kProfiled = 1, kFlushing = 2 };

/// Runs `step(i)` n times under the given profiling mode; returns when the GPU
/// is idle. Session start (CUPTI subscription) and finalize (the last flush,
/// the file write) are excluded from the timing: this measures the steady
/// state of a long job. They are reported on their own by BM_SessionStartStop.
template <class F>
void under(benchmark::State& st, int mode, int n, F&& step) {
  if (mode == kPlain) {
    for (int i = 0; i < n; ++i) step(i);
    gpu().synchronize();
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench";
  std::filesystem::create_directories(dir);
  tp::Options o;
  o.backend = "cupti";
  o.hook = "launch";
  if (mode == kFlushing) o.mode = "periodic_flushing";
  st.PauseTiming();
  const auto s = tp::start((dir / "run").string(), o);
  st.ResumeTiming();
  {
    tp::Scope top("loop");
    for (int i = 0; i < n; ++i) {
      step(i);
      if (mode == kFlushing && i % 100 == 99) tp::advance_phase(s);
    }
    gpu().synchronize();
  }
  st.PauseTiming();
  tp::finalize(s);
  std::filesystem::remove_all(dir);
  st.ResumeTiming();
}

void BM_SessionStartStop(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench_ss";
  std::filesystem::create_directories(dir);
  for (auto _ : st) {
    tp::Options o;
    o.backend = "cupti";
    o.hook = "launch";
    tp::finalize(tp::start((dir / "run").string(), o));
  }
  std::filesystem::remove_all(dir);
}

void BM_TinyLaunches(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  auto* p = static_cast<float*>(gpu().alloc(4096));
  auto k = tj::compile<examples::VecAdd<1024>>(gpu(), {.num_warps = 4});
  k.launch(tj::Grid{1}, p, p, p, 1024);
  gpu().synchronize();
  const int mode = static_cast<int>(st.range(0));
  for (auto _ : st) under(st, mode, 100000, [&](int) { k.launch(tj::Grid{1}, p, p, p, 1024); });
  st.SetLabel(mode == kPlain ? "no session" : mode == kProfiled ? "cupti + launch hook" : "cupti + hook + flush every 100");
  gpu().free(p);
}

void BM_GemmLoop(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const int M = 4096;
  std::vector<tj::bf16> h(static_cast<std::size_t>(M) * M, tj::bf16(0.5f));
  auto* a = static_cast<tj::bf16*>(gpu().alloc(h.size() * 2));
  auto* b = static_cast<tj::bf16*>(gpu().alloc(h.size() * 2));
  auto* c = static_cast<float*>(gpu().alloc(h.size() * 4));
  gpu().copy_to_device(a, h.data(), h.size() * 2);
  gpu().copy_to_device(b, h.data(), h.size() * 2);
  auto k = tj::compile<examples::MatmulV4<128, 192, tj::bf16>>(gpu(), {.num_warps = 8});
  const tj::Grid grid{tj::cdiv(M, 128), tj::cdiv(M, 192)};
  k.launch(grid, a, b, c, M, M, M);
  gpu().synchronize();
  const int mode = static_cast<int>(st.range(0));
  const int n = static_cast<int>(st.range(1));
  for (auto _ : st) under(st, mode, n, [&](int) { k.launch(grid, a, b, c, M, M, M); });
  st.counters["ms/GEMM"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.SetLabel(mode == kPlain ? "no session" : mode == kProfiled ? "cupti + launch hook" : "cupti + hook + flush every 100");
  gpu().free(a), gpu().free(b), gpu().free(c);
}

}  // namespace

BENCHMARK(BM_TinyLaunches)->Arg(kPlain)->Arg(kProfiled)->Arg(kFlushing)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_GemmLoop)->Args({kPlain, 50})->Args({kProfiled, 50})->Args({kFlushing, 50})->Args({kPlain, 500})->Args({kProfiled, 500})
    ->Args({kFlushing, 500})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_SessionStartStop)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK_MAIN();

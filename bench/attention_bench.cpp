// Attention forward (examples/attention/flash_fwd.hpp) on the device,
// B=4, H=32, S=4096, bf16; TFLOP/s counts 4·B·H·S²·D, halved for causal
// (the convention of ../shared/ANCHORS.md). Baselines (torch SDPA flash and
// cuDNN backends) come from bench/attention_baselines.py in the same call.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "examples/attention/flash_fwd.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace {

tj::Device& gpu() {
  static tj::Device d = tj::Device::best();
  return d;
}

template <int D, bool CAUSAL>
void BM_FlashFwd(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const int B = 4, H = 32, S = 4096;
  const std::size_t n = static_cast<std::size_t>(B) * H * S * D;
  std::vector<tj::bf16> h(n);
  std::mt19937 g(std::random_device{}());
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : h) x = tj::bf16(u(g));
  auto up = [&] {
    auto* p = static_cast<tj::bf16*>(gpu().alloc(n * 2));
    gpu().copy_to_device(p, h.data(), n * 2);
    return p;
  };
  tj::bf16 *q = up(), *k = up(), *v = up(), *o = up();
  auto* lse = static_cast<float*>(gpu().alloc(static_cast<std::size_t>(B) * H * S * 4));
  auto kern = tj::compile<examples::FlashAttnFwd<64, 64, D, CAUSAL, tj::bf16>>(gpu(), {.num_warps = 4});
  const float scale = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  auto run = [&] { kern.launch(tj::Grid{S / 64, B * H}, q, k, v, o, lse, S, 1, scale); };
  run();
  gpu().synchronize();
  for (auto _ : st) st.SetIterationTime(gpu().time_ms({}, run) / 1e3);
  const double flops = 4.0 * B * H * double(S) * S * D / (CAUSAL ? 2 : 1);
  st.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  gpu().free(q), gpu().free(k), gpu().free(v), gpu().free(o), gpu().free(lse);
}

}  // namespace

BENCHMARK(BM_FlashFwd<64, false>)->Name("BM_FlashFwd/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<64, true>)->Name("BM_FlashFwd/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<96, false>)->Name("BM_FlashFwd/D96/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<96, true>)->Name("BM_FlashFwd/D96/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<128, false>)->Name("BM_FlashFwd/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<128, true>)->Name("BM_FlashFwd/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();

// bench/predict/sweep_v1.cpp — GEMM rung 1 (loads straight to registers) over tile shapes and warps (see sweep.hpp).
#include <fmt/format.h>

#include <tuple>

#include "bench/predict/sweep.hpp"
#include "examples/gemm/matmul_v1.hpp"

namespace sweep {
namespace {

template <int BM, int BN, int BK>
tj::CandidateFor<examples::MatmulV1<BM, BN, BK, tj::bf16>> cand(int nw) {
  return tj::cand<examples::MatmulV1<BM, BN, BK, tj::bf16>>(tj::Config{{{"BM", BM}, {"BN", BN}, {"BK", BK}}, nw, 1});
}

}  // namespace

void matmul_v1(Context& c) {
  std::vector<std::tuple<long long, long long, long long>> list{{4096, 4096, 4096}, {2048, 2048, 2048}, {8192, 96, 8192},
                                                                {8192, 192, 8192},  {1024, 4096, 4096}, {4096, 1024, 1024},
                                                                {512, 512, 8192},   {3072, 3072, 1024}};
  if (c.quick) list.resize(2);
  pr::Recorder rec;
  tj::Autotuner tuner("matmul_v1_bf16",
                      {cand<64, 64, 32>(4), cand<64, 96, 32>(4), cand<64, 128, 32>(4), cand<64, 192, 32>(8),
                       cand<128, 64, 32>(4), cand<128, 96, 32>(8), cand<128, 128, 32>(8), cand<128, 192, 32>(8),
                       cand<64, 64, 64>(4), cand<64, 128, 64>(4), cand<128, 128, 64>(8), cand<128, 64, 64>(8),
                       cand<32, 64, 32>(2), cand<32, 128, 32>(4), cand<64, 256, 32>(8), cand<256, 64, 32>(8)},
                      c.options(rec, "matmul_v1_bf16"));
  long long most_a = 0, most_b = 0, most_c = 0;
  for (auto [M, N, K] : list) most_a = std::max(most_a, M * K), most_b = std::max(most_b, N * K), most_c = std::max(most_c, M * N);
  auto* a = c.random<tj::bf16>(static_cast<std::size_t>(most_a));
  auto* b = c.random<tj::bf16>(static_cast<std::size_t>(most_b));
  auto* out = static_cast<float*>(c.dev.alloc(static_cast<std::size_t>(most_c) * sizeof(float)));
  for (auto [M, N, K] : list) {
    const tj::TuneKey key{{"M", M}, {"N", N}, {"K", K}};
    auto grid = [M = M, N = N](const tj::Config& cfg) { return tj::Grid{tj::cdiv(M, cfg.param("BM")), tj::cdiv(N, cfg.param("BN"))}; };
    try {
      c.add(rec, "matmul_v1_bf16", tuner.tune(key, grid, a, b, out, M, N, K));
    } catch (const std::exception& e) {
      c.say(fmt::format("matmul_v1 {}x{}x{}: {}", M, N, K, e.what()));
    }
  }
  c.dev.free(a), c.dev.free(b), c.dev.free(out);
}

}  // namespace sweep

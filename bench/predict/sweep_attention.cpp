// bench/predict/sweep_attention.cpp — the FlashAttention forward written in the DSL (examples/attention/flash_fwd.hpp:
// pointer loads, one program per BLOCK_M query rows) over BLOCK_M, BLOCK_N and warps, full and causal (causal's key
// range depends on the program: its flops and bytes are not derivable statically, the features' missing values).
#include <fmt/format.h>

#include <cmath>
#include <tuple>

#include "bench/predict/sweep.hpp"
#include "examples/attention/flash_fwd.hpp"

namespace sweep {
namespace {

template <int BM, int BN, int D, bool CAUSAL>
tj::CandidateFor<examples::FlashAttnFwd<BM, BN, D, CAUSAL, tj::bf16>> cand(int nw) {
  return tj::cand<examples::FlashAttnFwd<BM, BN, D, CAUSAL, tj::bf16>>(tj::Config{{{"BLOCK_M", BM}, {"BLOCK_N", BN}}, nw, 1});
}

template <int D, bool CAUSAL>
void race(Context& c, const char* family) {
  pr::Recorder rec;
  tj::Autotuner tuner(fmt::format("{}_d{}", family, D),
                      {cand<64, 32, D, CAUSAL>(4), cand<64, 64, D, CAUSAL>(4), cand<64, 128, D, CAUSAL>(4), cand<128, 32, D, CAUSAL>(8),
                       cand<128, 64, D, CAUSAL>(8), cand<128, 128, D, CAUSAL>(8), cand<64, 64, D, CAUSAL>(8), cand<128, 64, D, CAUSAL>(4),
                       cand<32, 64, D, CAUSAL>(2), cand<32, 128, D, CAUSAL>(4)},
                      c.options(rec, family));
  // (B·H, S): 32 heads at 1K and 4K tokens, 128 heads at 1K.
  std::vector<std::tuple<long long, long long>> keys{{32, 1024}, {32, 4096}, {128, 1024}, {8, 2048}};
  if (c.quick) keys.resize(1);
  long long most = 0;
  for (auto [bh, s] : keys) most = std::max(most, bh * s * D);
  auto* q = c.random<tj::bf16>(static_cast<std::size_t>(most));
  auto* k = c.random<tj::bf16>(static_cast<std::size_t>(most));
  auto* v = c.random<tj::bf16>(static_cast<std::size_t>(most));
  auto* o = static_cast<tj::bf16*>(c.dev.alloc(static_cast<std::size_t>(most) * sizeof(tj::bf16)));
  auto* lse = static_cast<float*>(c.dev.alloc(static_cast<std::size_t>(most / D) * sizeof(float)));
  const float scale_log2e = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(D)));
  for (auto [bh, S] : keys) {
    const tj::TuneKey key{{"BH", bh}, {"S", S}, {"D", D}};
    auto grid = [bh = bh, S = S](const tj::Config& cfg) { return tj::Grid{tj::cdiv(S, cfg.param("BLOCK_M")), bh}; };
    try {
      c.add(rec, family, tuner.tune(key, grid, q, k, v, o, lse, S, 1, scale_log2e));
    } catch (const std::exception& e) {
      c.say(fmt::format("{} D {} BH {} S {}: {}", family, D, bh, S, e.what()));
    }
  }
  c.dev.free(q), c.dev.free(k), c.dev.free(v), c.dev.free(o), c.dev.free(lse);
}

}  // namespace

void attention(Context& c) {
  race<64, false>(c, "attn_fwd_bf16");
  race<128, false>(c, "attn_fwd_bf16");
  race<64, true>(c, "attn_fwd_causal_bf16");
  race<128, true>(c, "attn_fwd_causal_bf16");
}

}  // namespace sweep

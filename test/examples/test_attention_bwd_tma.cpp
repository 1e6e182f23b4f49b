// The Hopper backward (examples/attention/flash_bwd_tma.hpp): dQ, dK, dV
// against the f64 gradients on fresh random inputs — in the interpreter
// (descriptor loads lowered to masked loads) and, on a GPU, through the sm_90a
// TMA + wgmma path; and the shape of the sm_90a code (K, V or Q, dO resident,
// the other pair pipelined, every product on wgmma, register-A for Pᵀ·dO,
// dSᵀ·Q and dS·K with their B read MN-major).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/text.hpp"
#include "examples/attention/attention.hpp"
#include "examples/attention/flash_bwd_tma.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

/// Forward through the library (O, LSE), delta, then FlashBwdKVTma and FlashBwdQTma — or, `fused`,
/// FlashBwdFusedTma (dQ by atomics into a zeroed f32 accumulator) and FlashBwdDqConvert.
template <int BM, int BN, int HD, bool CAUSAL, class T>
void bwd_tma_case(const tj::Device& dev, int B, int Hq, int Hkv, int S, int stages, bool kv_ws = false, bool q_ws = false,
                  bool fused = false) {
  CAPTURE(fused);
  CAPTURE(HD);
  CAPTURE(kv_ws);
  CAPTURE(q_ws);
  CAPTURE(S);
  CAPTURE(CAUSAL);
  CAPTURE(Hq);
  CAPTURE(Hkv);
  CAPTURE(testing::fresh_seed());
  const int group = Hq / Hkv;
  const std::size_t nq = static_cast<std::size_t>(B) * Hq * S * HD, nk = static_cast<std::size_t>(B) * Hkv * S * HD;
  auto q = testing::random_tensor<T>(nq, 41), k = testing::random_tensor<T>(nk, 42), v = testing::random_tensor<T>(nk, 43), d_o = testing::random_tensor<T>(nq, 44);
  std::vector<T> o(nq), dq(nq), dk(nk), dv(nk);
  std::memset(static_cast<void*>(dq.data()), 0xff, nq * sizeof(T));  // poison (NaN): every element must be written
  std::memset(static_cast<void*>(dk.data()), 0xff, nk * sizeof(T));
  std::memset(static_cast<void*>(dv.data()), 0xff, nk * sizeof(T));
  std::vector<float> lse(static_cast<std::size_t>(B) * Hq * S), delta(lse.size());
  const examples::AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = S, .head_dim = HD, .causal = CAUSAL};
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  std::vector<void*> allocs;
  auto up = [&](auto& h) {
    using E = typename std::decay_t<decltype(h)>::value_type;
    if (!gpu) return h.data();
    auto* p = static_cast<E*>(dev.alloc(h.size() * sizeof(E)));
    dev.copy_to_device(p, h.data(), h.size() * sizeof(E));
    allocs.push_back(p);
    return p;
  };
  auto down = [&](auto& h, const auto* p) {
    if (gpu) dev.copy_to_host(h.data(), p, h.size() * sizeof(h[0]));
  };
  auto *pq = up(q), *pk = up(k), *pv = up(v), *po = up(o), *pdo = up(d_o), *pdq = up(dq), *pdk = up(dk), *pdv = up(dv);
  auto *pl = up(lse), *pdl = up(delta);
  // The fused accumulator: [B·Hq, S rounded up to BM, D], zeros.
  std::vector<float> acc(fused ? static_cast<std::size_t>(B) * Hq * examples::dq_acc_rows<BM>(S) * HD : 0);
  float* pacc = fused ? up(acc) : nullptr;
  examples::Attention<T> attn(dev);
  attn.forward(pq, pk, pv, po, pl, s);
  const double scale = s.softmax_scale();
  const float sc = static_cast<float>(scale), sc2 = static_cast<float>(scale * 1.4426950408889634);
  auto pre = tj::compile<examples::FlashBwdPreprocess<64, HD, T>>(dev, {.num_warps = 4});
  pre.launch(tj::Grid{tj::cdiv(S, 64), B * Hq}, po, pdo, pdl, S);
  const tj::DType dt = tj::dtype_v<T>;
  // Rank 3: [heads, S, D], bounds per head.
  auto desc = [&](T* p, long long heads, int block) { return D(dev, p, dt, {heads, S, HD}, {static_cast<long long>(S) * HD, HD, 1}, {1, block, HD}); };
  const long long hq = static_cast<long long>(B) * Hq, hk = static_cast<long long>(B) * Hkv;
  if (fused) {
    const D dk_d = desc(pk, hk, BN), dv_d = desc(pv, hk, BN), dq_d = desc(pq, hq, BM), ddo_d = desc(pdo, hq, BM);
    auto kv = tj::compile<examples::FlashBwdFusedTma<BM, BN, HD, CAUSAL, T>>(dev, {.num_warps = BN / 16, .num_stages = stages, .warp_specialize = kv_ws});
    kv.launch(tj::Grid{tj::cdiv(S, BN), B * Hkv}, dk_d, dv_d, dq_d, ddo_d, pl, pdl, pdk, pdv, pacc, S, group, sc, sc2);
    auto cvt = tj::compile<examples::FlashBwdDqConvert<BM, HD, T>>(dev, {.num_warps = 4});
    cvt.launch(tj::Grid{tj::cdiv(S, BM), B * Hq}, pacc, pdq, S, sc);
  } else {
    {
      const D dk_d = desc(pk, hk, BN), dv_d = desc(pv, hk, BN), dq_d = desc(pq, hq, BM), ddo_d = desc(pdo, hq, BM);
      auto kv = tj::compile<examples::FlashBwdKVTma<BM, BN, HD, CAUSAL, T>>(dev, {.num_warps = BN / 16, .num_stages = stages, .warp_specialize = kv_ws});
      kv.launch(tj::Grid{tj::cdiv(S, BN), B * Hkv}, dk_d, dv_d, dq_d, ddo_d, pl, pdl, pdk, pdv, S, group, sc, sc2);
    }
    const D dq_d = desc(pq, hq, BN), ddo_d = desc(pdo, hq, BN), dk_d = desc(pk, hk, BM), dv_d = desc(pv, hk, BM);
    // The dQ kernel's query block is BN rows (BN / 16 warps) and its key block BM: the roles swap.
    auto qk = tj::compile<examples::FlashBwdQTma<BN, BM, HD, CAUSAL, T>>(dev, {.num_warps = BN / 16, .num_stages = stages, .warp_specialize = q_ws});
    qk.launch(tj::Grid{tj::cdiv(S, BN), B * Hq}, dq_d, ddo_d, dk_d, dv_d, pl, pdl, pdq, S, group, sc, sc2);
  }
  down(dq, pdq), down(dk, pdk), down(dv, pdv);
  for (void* p : allocs) dev.free(p);
  const auto gg = testing::grouped_grads(q, k, v, d_o, dq, dk, dv, B * Hkv, group, S, HD, CAUSAL, scale);
  const auto &ref_dq = gg.ref_dq, &ref_dk = gg.ref_dk, &ref_dv = gg.ref_dv, &got_dq = gg.got_dq, &got_dk = gg.got_dk, &got_dv = gg.got_dv;
  CHECK(testing::rel_error(got_dq, ref_dq) < 5e-2);
  CHECK(testing::rel_error(got_dk, ref_dk) < 5e-2);
  CHECK(testing::rel_error(got_dv, ref_dv) < 5e-2);
  // Max-norm too: a lost or unwritten row (e.g. the last ragged one) shows in full here.
  CHECK(testing::max_rel(got_dq, ref_dq) < 5e-2);
  CHECK(testing::max_rel(got_dk, ref_dk) < 5e-2);
  CHECK(testing::max_rel(got_dv, ref_dv) < 5e-2);
}

using testing::occurrences;

}  // namespace

TEST_CASE("attention_bwd_tma_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  bwd_tma_case<64, 64, 64, false, tj::bf16>(dev, 1, 2, 1, 80, 2);  // ragged S: blocks run into the next head
  bwd_tma_case<64, 64, 96, true, tj::bf16>(dev, 1, 2, 2, 70, 2);   // D = 96 exact, causal
  bwd_tma_case<64, 64, 64, true, tj::f16>(dev, 1, 4, 2, 64, 3);    // GQA: dK, dV summed over the group
}

TEST_CASE("attention_bwd_fused_interpreter_matches_f64") {
  // FlashBwdFusedTma: dQ's shares from every key block's program added up by atomics, then rounded.
  auto dev = tj::Device::interpreter();
  bwd_tma_case<64, 64, 64, false, tj::bf16>(dev, 1, 2, 1, 80, 2, false, false, true);  // ragged S, GQA: two heads' atomics
  bwd_tma_case<64, 64, 96, true, tj::bf16>(dev, 1, 2, 2, 70, 2, false, false, true);   // D = 96 exact, causal
  bwd_tma_case<32, 64, 64, true, tj::f16>(dev, 2, 4, 2, 96, 2, false, false, true);    // query blocks smaller than key blocks
}

TEST_CASE("attention_bwd_fused_dq_adds_are_vector_reductions_on_sm90a") {
  // dq_acc_offset puts a thread's two accumulator columns side by side: each pair of dQ's share is one
  // red.global.add.v2.f32 (the launch specialises dq_acc to 16-byte alignment, as the workspace is). [64, D] over
  // the two consumer warp groups (256 threads): D / 8 pairs a thread. Off sm_90, D / 4 scalar atomics.
  auto gen = [](auto kernel, const char* arch) {
    const auto k = tj::trace(decltype(kernel){});
    tj::ir::Specialization spec;
    spec.flags.assign(k.params.size(), tj::ir::Specialization::kDiv16);
    return tj::codegen::generate(k, spec, tj::codegen::target_for(arch), {.num_warps = 8, .num_stages = 2}).source;
  };
  const auto d64 = gen(examples::FlashBwdFusedTma<64, 128, 64, true, tj::bf16>{}, "sm_90a");
  const auto d128 = gen(examples::FlashBwdFusedTma<64, 128, 128, false, tj::bf16>{}, "sm_90a");
  CHECK(occurrences(d64, "tj_red_add_v2(v") == 64 / 8);
  CHECK(occurrences(d128, "tj_red_add_v2(v") == 128 / 8);
  CHECK(occurrences(d128, "tj_atomic_add(v") == 0);
  testing::compiles_for_sm90a(d128, "bwd_fused.cu");
  const auto sm80 = gen(examples::FlashBwdFusedTma<64, 128, 128, false, tj::bf16>{}, "sm_80");
  CHECK(occurrences(sm80, "tj_red_add_v2(v") == 0);
  CHECK(occurrences(sm80, "tj_atomic_add(v") == 128 / 4);
}

TEST_CASE("attention_bwd_tma_sm90a_code_uses_tma_and_wgmma_for_every_product") {
  for (int hd : {64, 96, 128}) {
    CAPTURE(hd);
    auto gen = [&](auto kernel) {
      return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 2});
    };
    const auto kv = hd == 64 ? gen(examples::FlashBwdKVTma<64, 128, 64, true, tj::bf16>{})
                  : hd == 96 ? gen(examples::FlashBwdKVTma<64, 128, 96, false, tj::bf16>{})
                             : gen(examples::FlashBwdKVTma<64, 128, 128, true, tj::bf16>{});
    const auto qk = hd == 64 ? gen(examples::FlashBwdQTma<128, 64, 64, true, tj::bf16>{})
                  : hd == 96 ? gen(examples::FlashBwdQTma<128, 64, 96, false, tj::bf16>{})
                             : gen(examples::FlashBwdQTma<128, 64, 128, true, tj::bf16>{});
    for (const auto* g : {&kv, &qk}) {
      CHECK(g->tma_params == std::vector<int>{0, 1, 2, 3});
      CHECK(occurrences(g->source, "copied once by TMA") == 2);     // K, V (dK/dV kernel) or Q, dO (dQ kernel)
      CHECK(occurrences(g->source, "\"r\"(tj_pa") > 0);             // register-A products
      // The pipelined blocks read MN-major too (D = 96: rows of three 64-byte slabs, the 64B-swizzle descriptor).
      CHECK(occurrences(g->source, hd == 96 ? "tj_wgmma_desc_mn_sw((tj_ring" : "tj_wgmma_desc_mn((tj_ring") > 0);
      CHECK(g->source.find("from L") == std::string::npos);  // no conversion through shared memory
      CHECK(testing::has_diagnostic(*g, "TMA pipeline of 2 stage(s)"));
    }
    // dK/dV kernel: 4 products per iteration; register-A on two of them (Pᵀ·dO over K = 64, dSᵀ·Q).
    CHECK(occurrences(kv.source, "\"r\"(tj_pa") == static_cast<std::size_t>(2 * 4 * (64 / 16)));
    CHECK(occurrences(qk.source, "\"r\"(tj_pa") == static_cast<std::size_t>(4 * (64 / 16)));
    for (const auto* g : {&kv, &qk}) testing::compiles_for_sm90a(g->source, "bwd_tma.cu");
  }
}

TEST_CASE("attention_bwd_tma_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  bwd_tma_case<64, 128, 64, false, tj::bf16>(dev, 1, 4, 1, 300, 2);
  bwd_tma_case<64, 128, 96, true, tj::bf16>(dev, 1, 4, 2, 257, 2);
  bwd_tma_case<64, 128, 128, true, tj::bf16>(dev, 2, 4, 4, 256, 2);
  bwd_tma_case<64, 128, 128, false, tj::f16>(dev, 1, 2, 1, 200, 3);
  // With a producer warp group: dK/dV's pipelined loop sits in the loop over the group's query heads (the producer
  // walks both; its ring runs on across heads), dQ's loop is top-level.
  bwd_tma_case<64, 128, 64, false, tj::bf16>(dev, 1, 4, 1, 300, 2, true, true);
  bwd_tma_case<64, 128, 128, true, tj::bf16>(dev, 2, 4, 2, 256, 2, true, true);
  bwd_tma_case<64, 64, 96, true, tj::f16>(dev, 1, 4, 4, 200, 3, true, false);
  bwd_tma_case<64, 128, 128, false, tj::bf16>(dev, 1, 2, 1, 129, 2, false, true);
  // Fused (dQ by atomics), with and without a producer warp group.
  bwd_tma_case<64, 64, 64, false, tj::bf16>(dev, 1, 4, 1, 300, 3, false, false, true);
  bwd_tma_case<64, 128, 96, true, tj::bf16>(dev, 1, 4, 2, 257, 2, false, false, true);
  bwd_tma_case<64, 128, 128, true, tj::bf16>(dev, 2, 4, 2, 256, 2, true, false, true);
  bwd_tma_case<64, 128, 128, false, tj::f16>(dev, 1, 2, 1, 129, 2, true, false, true);
}

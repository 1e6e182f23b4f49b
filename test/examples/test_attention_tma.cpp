// The Hopper attention forward (examples/attention/flash_fwd_tma.hpp): the
// interpreter (descriptor loads lowered to masked loads) and, on a GPU, the
// sm_90a TMA + wgmma path against an f64 reference on fresh random inputs;
// and the shape of the generated sm_90a code — Q copied once, K and V in the
// TMA pipeline, S = Q·Kᵀ from shared memory, P·V with P in registers and V
// read MN-major, no layout conversion through shared memory.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/text.hpp"
#include "examples/attention/attention.hpp"
#include "examples/attention/flash_fwd_tma.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

template <int BM, int BN, int HD, bool CAUSAL, class T, template <int, int, int, bool, class> class Kernel = examples::FlashAttnFwdTma>
void check_tma(const tj::Device& dev, int B, int Hq, int group, int S, int warps, int stages, double tol, bool ws = false,
               bool pingpong = false, const std::string& arch = {}) {
  CAPTURE(arch);
  CAPTURE(HD);
  CAPTURE(CAUSAL);
  CAPTURE(S);
  CAPTURE(group);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(testing::fresh_seed());
  const int BH = B * Hq, BHkv = B * (Hq / group);
  auto gen = [&](int n, unsigned salt) { return testing::random_tensor<T>(static_cast<std::size_t>(n), salt, -2, 2); };
  auto q = gen(BH * S * HD, 11), k = gen(BHkv * S * HD, 12), v = gen(BHkv * S * HD, 13);
  const double scale = 1.0 / std::sqrt(static_cast<double>(HD));
  // Reference per query head.
  std::vector<double> ref_o, ref_lse;
  auto head = [&](const std::vector<T>& x, int h) {
    std::vector<double> out(static_cast<std::size_t>(S) * HD);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[static_cast<std::size_t>(h) * S * HD + i]);
    return out;
  };
  for (int bh = 0; bh < BH; ++bh) {
    const auto r = testing::attention_ref(head(q, bh), head(k, bh / group), head(v, bh / group), S, S, HD, CAUSAL, scale);
    ref_o.insert(ref_o.end(), r.o.begin(), r.o.end());
    ref_lse.insert(ref_lse.end(), r.lse.begin(), r.lse.end());
  }
  std::vector<T> o(q.size());
  std::vector<float> lse(static_cast<std::size_t>(BH) * S);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  T *dq = q.data(), *dk = k.data(), *dv = v.data(), *dout = o.data();
  float* dl = lse.data();
  std::memset(static_cast<void*>(o.data()), 0xff, o.size() * sizeof(T));  // poison: NaN in bf16 / f16
  if (gpu) {
    auto up = [&](std::vector<T>& h) {
      auto* p = static_cast<T*>(dev.alloc(h.size() * sizeof(T)));
      dev.copy_to_device(p, h.data(), h.size() * sizeof(T));
      return p;
    };
    dq = up(q), dk = up(k), dv = up(v), dout = up(o);
    dl = static_cast<float*>(dev.alloc(lse.size() * 4));
  }
  const tj::DType dt = tj::dtype_v<T>;
  const long long rows_q = static_cast<long long>(BH) * S, rows_kv = static_cast<long long>(BHkv) * S;
  D dqd(dev, dq, dt, {rows_q, HD}, {HD, 1}, {BM, HD});
  D dkd(dev, dk, dt, {rows_kv, HD}, {HD, 1}, {BN, HD});
  D dvd(dev, dv, dt, {rows_kv, HD}, {HD, 1}, {BN, HD});
  auto kern = tj::compile<Kernel<BM, BN, HD, CAUSAL, T>>(
      dev, {.num_warps = warps, .num_stages = stages, .arch = arch, .warp_specialize = ws, .pingpong = pingpong});
  kern.launch(tj::Grid{tj::cdiv(S, BM), BH}, dqd, dkd, dvd, dout, dl, S, group, static_cast<float>(scale * 1.4426950408889634));
  if (gpu) {
    dev.copy_to_host(o.data(), dout, o.size() * sizeof(T));
    dev.copy_to_host(lse.data(), dl, lse.size() * 4);
    dev.free(dq), dev.free(dk), dev.free(dv), dev.free(dout), dev.free(dl);
  }
  std::vector<double> got(o.size());
  double worst = 0, scale_ref = 0;
  for (std::size_t i = 0; i < o.size(); ++i) {
    got[i] = static_cast<float>(o[i]);
    REQUIRE(std::isfinite(got[i]));  // every element written (the poison is NaN)
    worst = std::max(worst, std::fabs(got[i] - ref_o[i]));
    scale_ref = std::max(scale_ref, std::fabs(ref_o[i]));
  }
  CHECK(worst / scale_ref < tol);
  CHECK(testing::rel_error(got, ref_o) < tol / 2);
  CHECK(testing::rel_error(lse, ref_lse) < 1e-3);
}

tj::codegen::Generated sm90(int warps, int stages, auto kernel, bool ws = false, bool pingpong = false) {
  return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = warps, .num_stages = stages, .warp_specialize = ws, .pingpong = pingpong});
}

using testing::compiles_for_sm90a;
using testing::has_diagnostic;
using testing::occurrences;

}  // namespace

TEST_CASE("attention_tma_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  check_tma<64, 64, 64, false, tj::bf16>(dev, 1, 2, 1, 100, 4, 2, 2e-2);  // ragged S: blocks run into the next head
  check_tma<64, 32, 96, true, tj::bf16>(dev, 1, 2, 2, 70, 4, 2, 2e-2);    // D = 96 exact, causal, GQA
  check_tma<64, 64, 128, true, tj::f16>(dev, 2, 2, 1, 64, 4, 3, 1e-2);
}

TEST_CASE("attention_tma_sm90a_code_keeps_q_resident_p_in_registers_and_reads_v_mn_major") {
  for (int hd : {64, 96, 128}) {
    CAPTURE(hd);
    const auto g = hd == 64 ? sm90(8, 2, examples::FlashAttnFwdTma<128, 128, 64, true, tj::bf16>{})
                 : hd == 96 ? sm90(8, 2, examples::FlashAttnFwdTma<128, 128, 96, false, tj::bf16>{})
                            : sm90(8, 2, examples::FlashAttnFwdTma<128, 128, 128, true, tj::f16>{});
    const std::string& src = g.source;
    CHECK(g.tma_params == std::vector<int>{0, 1, 2});
    // 128-byte slabs; D = 96 (192-byte rows): three 64-byte slabs with the 64B swizzle, nothing past the head copied.
    const int box = hd == 96 ? 32 : 64;
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{128, box}, {128, box}, {128, box}});
    CHECK(occurrences(src, "copied once by TMA") == 1);                                             // Q
    CHECK(src.find("TMA pipeline") == std::string::npos);                                    // (a diagnostic, not in the source)
    const std::string ty = hd == 128 ? "f16" : "bf16";
    // S = Q·Kᵀ: descriptors for both; P·V: four A registers and the transpose immediate on B.
    const int ksteps_s = hd / 16, ksteps_pv = 128 / 16;
    CHECK(occurrences(src, fmt::format("m64n128k16.f32.{0}.{0} {{", ty)) == static_cast<std::size_t>(ksteps_s + (hd == 128 ? ksteps_pv : 0)));
    CHECK(occurrences(src, fmt::format("m64n{1}k16.f32.{0}.{0} {{", ty, hd)) == static_cast<std::size_t>(ksteps_pv + (hd == 128 ? ksteps_s : 0)));
    CHECK(occurrences(src, hd == 96 ? "tj_wgmma_desc_mn_sw((tj_ring" : "tj_wgmma_desc_mn((tj_ring") == 1u);  // V, MN-major: once
    CHECK(occurrences(src, "tj_wgmma_desc_at(tj_db") >= static_cast<std::size_t>(ksteps_pv - 1));  // its k16 steps
    CHECK(occurrences(src, "\"r\"(tj_pa") == static_cast<std::size_t>(4 * ksteps_pv));           // P: register A
    CHECK(src.find("from L") == std::string::npos);  // no layout conversion through shared memory
    // P is packed for the register-A wgmma straight from its f32 values (one cvt per pair), and exp2 is one SFU op.
    CHECK(occurrences(src, hd == 128 ? "tj_pack_f16x2(v" : "tj_pack_bf16x2(v") == static_cast<std::size_t>(4 * ksteps_pv));
    CHECK(src.find("ex2.approx.ftz.f32") != std::string::npos);
    CHECK(has_diagnostic(g, "TMA pipeline of 2 stage(s)"));
    compiles_for_sm90a(src, "attn_tma.cu");
  }
}

TEST_CASE("attention_tma_compiles_off_hopper_with_a_cp_async_ring") {
  // Off Hopper: Q (loaded once) is a masked load; K (read through trans) and V (read MN-major) are copied per key
  // block by a cp.async ring and read by mma.sync from shared memory.
  const auto g = tj::codegen::generate(tj::trace(examples::FlashAttnFwdTma<64, 64, 96, true, tj::bf16>{}), {},
                                       tj::codegen::target_for("sm_80"), {.num_warps = 4});
  CHECK(g.tma_params.empty());
  CHECK(occurrences(g.source, "tj_cp_block<2, 64, 96, 128, 32704u>(") == 2);
  CHECK(has_diagnostic(g, "cp.async pipeline of 3 stage(s)"));
  CHECK(g.source.find("tj_ldsm_x4_t(tj_sa") != std::string::npos);  // V read MN-major: ldmatrix .trans
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTma<64, 64, 96, true, tj::bf16>>("sm_80", {.num_warps = 4}));
}

TEST_CASE("attention_tma_cp_async_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 80) {
    MESSAGE("no NVIDIA GPU of sm_80 or newer: skipping");
    return;
  }
  const std::string arch = "sm_" + std::to_string(dev.compute_capability());  // (no "a": mma.sync and the cp.async ring)
  check_tma<64, 64, 96, true, tj::bf16>(dev, 1, 4, 2, 257, 4, 3, 2e-2, false, false, arch);
  check_tma<64, 64, 128, false, tj::f16>(dev, 1, 2, 1, 200, 4, 2, 1e-2, false, false, arch);
  check_tma<64, 64, 64, true, tj::bf16>(dev, 2, 2, 1, 130, 4, 1, 2e-2, false, false, arch);  // one stage
}

TEST_CASE("attention_tma_overlap_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  check_tma<64, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaOverlap>(dev, 1, 2, 1, 100, 4, 2, 2e-2);
  check_tma<64, 32, 96, true, tj::bf16, examples::FlashAttnFwdTmaOverlap>(dev, 1, 2, 2, 70, 4, 2, 2e-2);
  check_tma<64, 64, 128, true, tj::f16, examples::FlashAttnFwdTmaOverlap>(dev, 2, 2, 1, 64, 4, 3, 1e-2);
}

TEST_CASE("attention_tma_overlap_sm90a_code_runs_the_softmax_while_the_next_scores_are_in_flight") {
  const auto g = sm90(8, 2, examples::FlashAttnFwdTmaOverlap<128, 64, 128, false, tj::bf16>{});
  const std::string& src = g.source;
  CHECK(occurrences(src, "copied once by TMA") == 2);  // Q and the first K block
  // In the loop: the next S is committed, then the exp2 of this block's softmax, and only then a wait.
  const auto loop = src.find("tj_mbar_wait(tj_bar");  // the top of the K loop: wait for this stage
  REQUIRE(loop != std::string::npos);
  const auto commit = src.find("wgmma.commit_group", loop);
  REQUIRE(commit != std::string::npos);
  const auto exp2 = src.find("tj_exp2(", commit);
  const auto wait = src.find("wgmma.wait_group", commit);
  REQUIRE(exp2 != std::string::npos);
  REQUIRE(wait != std::string::npos);
  CHECK(exp2 < wait);
  CHECK(src.find("deferred wgmma complete") != std::string::npos);
  compiles_for_sm90a(src, "attn_overlap.cu");
}

TEST_CASE("attention_tma_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_tma<128, 128, 64, false, tj::bf16>(dev, 1, 4, 1, 300, 8, 2, 2e-2);
  check_tma<128, 128, 96, true, tj::bf16>(dev, 1, 4, 2, 257, 8, 2, 2e-2);
  check_tma<128, 128, 128, true, tj::bf16>(dev, 2, 4, 4, 256, 8, 2, 2e-2);
  check_tma<128, 64, 128, false, tj::f16>(dev, 1, 2, 1, 200, 8, 3, 1e-2);
  check_tma<128, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaOverlap>(dev, 1, 4, 1, 300, 8, 2, 2e-2);
  check_tma<128, 64, 96, true, tj::bf16, examples::FlashAttnFwdTmaOverlap>(dev, 1, 4, 2, 257, 8, 3, 2e-2);
  check_tma<128, 64, 128, true, tj::bf16, examples::FlashAttnFwdTmaOverlap>(dev, 2, 4, 4, 256, 8, 2, 2e-2);
}

TEST_CASE("attention_tma_pingpong_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  check_tma<64, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 2, 1, 100, 4, 2, 2e-2);  // ragged S
  check_tma<64, 32, 96, true, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 2, 2, 70, 4, 2, 2e-2);    // causal, GQA
  check_tma<64, 64, 128, true, tj::f16, examples::FlashAttnFwdTmaPingPong>(dev, 2, 2, 1, 64, 4, 3, 1e-2);
  check_tma<64, 64, 64, true, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 1, 1, 1, 4, 2, 2e-2);     // one key
  // No key masked: S a multiple of BLOCK_N, full attention.
  check_tma<64, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEvenN>(dev, 1, 2, 1, 128, 4, 2, 2e-2);
  check_tma<64, 32, 96, false, tj::f16, examples::FlashAttnFwdTmaPingPongEvenN>(dev, 1, 4, 2, 96, 4, 2, 1e-2);  // GQA
}

TEST_CASE("attention_tma_edge_mask_interpreter_matches_f64") {
  // Only the blocks that can hold a masked key are masked: ragged S (the last block), causal with BLOCK_M = BLOCK_N
  // (the diagonal block), causal with BLOCK_M > BLOCK_N (two masked blocks, one of them wholly masked for half the
  // rows), BLOCK_M < BLOCK_N, GQA, one key, S a multiple of BLOCK_N (no block masked for full attention).
  auto dev = tj::Device::interpreter();
  check_tma<64, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 2, 1, 100, 4, 2, 2e-2);
  check_tma<64, 64, 64, true, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 2, 1, 130, 4, 2, 2e-2);
  check_tma<64, 32, 96, true, tj::f16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 4, 2, 70, 4, 2, 1e-2);
  check_tma<64, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 2, 1, 128, 4, 2, 2e-2);
  check_tma<64, 64, 64, true, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 1, 1, 1, 4, 2, 2e-2);
  check_tma<64, 64, 128, true, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 2, 2, 1, 150, 4, 2, 2e-2);
  check_tma<64, 32, 64, true, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 1, 2, 1, 97, 4, 2, 2e-2);
  check_tma<32, 64, 96, true, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 1, 2, 2, 75, 2, 2, 2e-2);
  check_tma<64, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 1, 4, 4, 90, 4, 2, 2e-2);
  check_tma<64, 112, 64, true, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 2, 1, 300, 4, 2, 2e-2);  // 16 x 7 keys
  check_tma<64, 96, 64, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 2, 2, 250, 4, 2, 2e-2);  // 32 x 3 keys
}

TEST_CASE("attention_tma_edge_mask_masks_behind_a_uniform_branch") {
  // The edge kernels carry the same per-score mask as the masked kernel, but inside a loop of zero or one
  // iteration (`for (int sN = max(n0, edge); sN < n0 + 1; ...)`) nested in the K loop, so it runs on edge blocks only.
  const auto masked = sm90(8, 2, examples::FlashAttnFwdTmaPingPong<128, 128, 128, true, tj::bf16>{}, true);
  const auto edge = sm90(8, 2, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, true, tj::bf16>{}, true);
  const auto plain = sm90(8, 2, examples::FlashAttnFwdTmaEdge<128, 128, 128, true, tj::bf16>{}, true);
  CHECK(occurrences(edge.source, " ? ") >= 64);  // the mask is still there (the select per score) ...
  for (const auto* g : {&masked, &edge, &plain}) CHECK(g->threads == 384);
  // ... in a loop of its own: inside the key loop, and before it for block 0 (fa3_keys peels it), so two more
  // `for (int` than the masked kernel; FlashAttnFwdTmaEdge (no peel) one more.
  CHECK(occurrences(edge.source, "for (int s") == occurrences(masked.source, "for (int s") + 2);
  CHECK(occurrences(plain.source, "for (int s") == occurrences(masked.source, "for (int s") + 1);
  CHECK(has_diagnostic(edge, "warp specialised: 8 consumer warp(s)"));
  compiles_for_sm90a(edge.source, "attn_edge.cu");
  compiles_for_sm90a(plain.source, "attn_edge_plain.cu");
}

TEST_CASE("attention_tma_pv_wgmma_stays_in_flight_during_the_softmax") {
  // FlashAttention-3's order issues S_j = Q·K_jᵀ, then O += P_{j-1}·V_{j-1} (A = P in registers). With
  // overlap_register_wgmma (the default) the softmax's first read of S_j waits for S_j alone (wait_group 1: the
  // P·V group stays in flight) and P·V is waited for where O is rescaled; without it P·V is waited for at once.
  auto gen = [](bool overlap) {
    return tj::codegen::generate(tj::trace(examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, false, tj::bf16>{}), {},
                                 tj::codegen::target_for("sm_90a"),
                                 {.num_warps = 8, .num_stages = 2, .warp_specialize = true, .overlap_register_wgmma = overlap});
  };
  const auto on = gen(true), off = gen(false);
  const std::string one = "wgmma.wait_group.sync.aligned 1;\" ::: \"memory\");  // deferred";
  CHECK(occurrences(on.source, one) >= 1);
  CHECK(occurrences(off.source, one) == 0);
  // In the loop, between S_j's wait and the next wgmma.fence, on.source runs the softmax's exp2 with P·V in flight.
  const auto w = on.source.find(one);
  REQUIRE(w != std::string::npos);
  const auto next_wait = on.source.find("wgmma.wait_group.sync.aligned 0;", w);
  REQUIRE(next_wait != std::string::npos);
  CHECK(on.source.substr(w, next_wait - w).find("tj_exp2(") != std::string::npos);
  compiles_for_sm90a(on.source, "attn_overlap.cu");
}

TEST_CASE("attention_tma_fa3_order_reads_no_v_row_of_another_head_when_s_is_a_multiple_of_block_n") {
  // Two KV heads, S = 128 = 2 blocks of 64: head 0's V is NaN in its last block. FlashAttention-3's order reads
  // a V block at j = 0 with P_{-1} = 0; it must be head 1's own first block, not head 0's last (0·NaN = NaN).
  auto dev = tj::Device::interpreter();
  constexpr int S = 128, HD = 64, BM = 64, BN = 64;
  auto gen = [&](unsigned salt) { return testing::random_tensor<tj::bf16>(2 * S * HD, salt, -2, 2); };
  auto q = gen(91), k = gen(92), v = gen(93);
  for (int r = S - BN; r < S; ++r)
    for (int d = 0; d < HD; ++d) v[static_cast<std::size_t>(r) * HD + d] = tj::bf16(std::nanf(""));
  std::vector<tj::bf16> o(q.size());
  std::vector<float> lse(2 * S);
  const long long rows = 2 * S;
  D dq(dev, q.data(), tj::DType::bf16, {rows, HD}, {HD, 1}, {BM, HD});
  D dk(dev, k.data(), tj::DType::bf16, {rows, HD}, {HD, 1}, {BN, HD});
  D dv(dev, v.data(), tj::DType::bf16, {rows, HD}, {HD, 1}, {BN, HD});
  const double scale = 1.0 / 8.0;
  auto head1 = [&](const std::vector<tj::bf16>& x) {
    std::vector<double> out(static_cast<std::size_t>(S) * HD);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[static_cast<std::size_t>(S) * HD + i]);
    return out;
  };
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    const auto ref = testing::attention_ref(head1(q), head1(k), head1(v), S, S, HD, causal, scale);
    auto run = [&]<class K>() {
      std::fill(o.begin(), o.end(), tj::bf16(0.0f));
      tj::compile<K>(dev, {.num_warps = 4, .num_stages = 2}).launch(tj::Grid{S / BM, 2}, dq, dk, dv, o.data(), lse.data(), S, 1,
                                                                    static_cast<float>(scale * 1.4426950408889634));
      std::vector<double> got(static_cast<std::size_t>(S) * HD);
      for (std::size_t i = 0; i < got.size(); ++i) {
        got[i] = static_cast<float>(o[static_cast<std::size_t>(S) * HD + i]);
        REQUIRE(std::isfinite(got[i]));
      }
      CHECK(testing::rel_error(got, ref.o) < 2e-2);
    };
    if (causal) {
      run.template operator()<examples::FlashAttnFwdTmaPingPongEdge<BM, BN, HD, true, tj::bf16>>();
    } else {
      run.template operator()<examples::FlashAttnFwdTmaPingPongEdge<BM, BN, HD, false, tj::bf16>>();
      run.template operator()<examples::FlashAttnFwdTmaPingPongEvenN<BM, BN, HD, false, tj::bf16>>();
    }
  }
}

TEST_CASE("attention_tma_nan_in_q_gives_nan_in_its_row_only") {
  // NaN in one query row: that row's O and LSE are NaN (as torch's are), not the zeros of a row with no key;
  // every other row is finite. Full and causal, edge-masked FA3 order.
  auto dev = tj::Device::interpreter();
  constexpr int S = 100, HD = 64, BM = 64, BN = 64, bad = 70;
  auto q = testing::random_tensor<tj::bf16>(S * HD, 95, -2, 2), k = testing::random_tensor<tj::bf16>(S * HD, 96, -2, 2),
       v = testing::random_tensor<tj::bf16>(S * HD, 97, -2, 2);
  q[static_cast<std::size_t>(bad) * HD + 3] = tj::bf16(std::nanf(""));
  D dq(dev, q.data(), tj::DType::bf16, {S, HD}, {HD, 1}, {BM, HD});
  D dk(dev, k.data(), tj::DType::bf16, {S, HD}, {HD, 1}, {BN, HD});
  D dv(dev, v.data(), tj::DType::bf16, {S, HD}, {HD, 1}, {BN, HD});
  std::vector<tj::bf16> o(q.size());
  std::vector<float> lse(S);
  auto run = [&]<class K>() {
    tj::compile<K>(dev, {.num_warps = 4, .num_stages = 2}).launch(tj::Grid{2, 1}, dq, dk, dv, o.data(), lse.data(), S, 1, 0.18f);
    for (int r = 0; r < S; ++r) {
      CAPTURE(r);
      CHECK(std::isnan(lse[r]) == (r == bad));
      for (int d = 0; d < HD; ++d) CHECK(std::isnan(static_cast<float>(o[static_cast<std::size_t>(r) * HD + d])) == (r == bad));
    }
  };
  run.template operator()<examples::FlashAttnFwdTmaPingPongEdge<BM, BN, HD, false, tj::bf16>>();
  run.template operator()<examples::FlashAttnFwdTmaPingPongEdge<BM, BN, HD, true, tj::bf16>>();
}

TEST_CASE("attention_tma_even_n_emits_no_key_mask") {
  const auto masked = sm90(8, 2, examples::FlashAttnFwdTmaPingPong<128, 128, 128, false, tj::bf16>{}, true);
  const auto even = sm90(8, 2, examples::FlashAttnFwdTmaPingPongEvenN<128, 128, 128, false, tj::bf16>{}, true);
  // The masked kernel has one and (column and row conditions) and one select per score register (64 per thread
  // at 128 x 128 over two warp groups); the EvenN kernel has neither.
  CHECK(occurrences(masked.source, " & ") >= occurrences(even.source, " & ") + 64);
  CHECK(occurrences(masked.source, " ? ") >= occurrences(even.source, " ? ") + 64);
  compiles_for_sm90a(even.source, "attn_even.cu");
}

TEST_CASE("attention_tma_warp_specialised_sm90a_code_has_a_producer_warp_and_takes_turns") {
  for (int hd : {64, 96, 128}) {
    CAPTURE(hd);
    const auto g = hd == 64 ? sm90(8, 2, examples::FlashAttnFwdTmaPingPong<128, 64, 64, false, tj::bf16>{}, true, true)
                 : hd == 96 ? sm90(8, 2, examples::FlashAttnFwdTmaPingPong<128, 64, 96, true, tj::bf16>{}, true, true)
                            : sm90(8, 2, examples::FlashAttnFwdTmaPingPong<128, 64, 128, false, tj::f16>{}, true, true);
    const std::string& src = g.source;
    CHECK(g.threads == 384);  // 8 consumer warps + the producer warp group
    CHECK(src.find("__maxnreg__(168)") != std::string::npos);  // the pool setmaxnreg redistributes: 168 x 384
    CHECK(src.find("setmaxnreg.dec.sync.aligned.u32 24;") != std::string::npos);
    CHECK(src.find("setmaxnreg.inc.sync.aligned.u32 240;") != std::string::npos);
    CHECK(has_diagnostic(g, "warp specialised: 8 consumer warp(s) with 240 registers each and a producer warp group"));
    CHECK(has_diagnostic(g, "pingpong: the warp groups take turns"));
    // The producer branch comes first and issues every pipelined copy; the consumers never touch the CTA barrier
    // after the preamble and release stages through the "empty" mbarriers.
    const auto prod = src.find("if (tj_warp >= 8) {");
    REQUIRE(prod != std::string::npos);
    CHECK(occurrences(src, "__syncthreads()") == 1);          // the barrier after mbarrier initialisation
    CHECK(src.find("__syncthreads()") < prod);
    CHECK(occurrences(src, "tj_issue") == 2);                  // defined and called by the producer only
    CHECK(src.find("tj_issue", prod) < src.find("return;", prod));
    CHECK(occurrences(src, "tj_mbar_arrive(tj_empty") == 1);
    CHECK(occurrences(src, "tj_mbar_wait(tj_empty") == 1);
    // Ping-pong: group 1 hands group 0 the first turn; each iteration's wgmma sit between bar.sync and bar.arrive.
    const auto hand = src.find("bar.arrive 2, 256;");
    const auto turn = src.find("bar.sync %0, 256;");
    const auto give = src.find("bar.arrive %0, 256;");
    REQUIRE(hand != std::string::npos);
    REQUIRE(turn != std::string::npos);
    REQUIRE(give != std::string::npos);
    CHECK(hand < turn);
    CHECK(turn < src.find("wgmma.mma_async", turn));
    CHECK(occurrences(src.substr(turn, give - turn), "wgmma.commit_group") == 2);  // S = Q·Kᵀ and O += P·V
    CHECK(src.find("bar.sync 2, 256;", give) != std::string::npos);                  // group 0 takes the last turn
    compiles_for_sm90a(src, "attn_pingpong.cu");
  }
}

TEST_CASE("attention_tma_warp_specialisation_falls_back_visibly") {
  // Without pingpong: a producer warp and the plain loop.
  const auto ws = sm90(8, 3, examples::FlashAttnFwdTma<128, 64, 128, false, tj::bf16>{}, true, false);
  CHECK(ws.threads == 384);
  CHECK(ws.source.find("bar.sync %0") == std::string::npos);
  compiles_for_sm90a(ws.source, "attn_ws.cu");
  // pingpong needs two consumer warp groups, and warp specialisation.
  const auto four = sm90(4, 2, examples::FlashAttnFwdTmaPingPong<64, 64, 64, false, tj::bf16>{}, true, true);
  CHECK(has_diagnostic(four, "pingpong not applied: it needs two consumer warp groups (num_warps = 8), not 4"));
  CHECK(four.threads == 256);
  CHECK(four.source.find("bar.sync %0") == std::string::npos);
  const auto alone = sm90(8, 2, examples::FlashAttnFwdTmaPingPong<128, 64, 64, false, tj::bf16>{}, false, true);
  CHECK(has_diagnostic(alone, "pingpong ignored: it needs warp_specialize"));
  CHECK(alone.threads == 256);
  // Off Hopper the pipeline is a cp.async ring every thread copies into: no producer warp, a diagnostic.
  const auto off = tj::codegen::generate(tj::trace(examples::FlashAttnFwdTmaPingPong<64, 64, 64, false, tj::bf16>{}), {},
                                         tj::codegen::target_for("sm_80"), {.num_warps = 4, .warp_specialize = true});
  CHECK(off.threads == 128);
  CHECK(has_diagnostic(off, "warp specialisation not applied: target sm_80 has no TMA"));
  const auto off_masked = tj::codegen::generate(tj::trace(examples::FlashAttnFwdTmaPingPong<64, 64, 64, false, tj::bf16>{}), {},
                                                tj::codegen::target_for("sm_80"),
                                                {.num_warps = 4, .warp_specialize = true, .cp_async = false});
  CHECK(has_diagnostic(off_masked, "warp specialisation not applied: no loop has a TMA pipeline"));
}

TEST_CASE("attention_tma_warp_specialised_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_tma<128, 64, 64, false, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 4, 1, 300, 8, 2, 2e-2, true, true);
  check_tma<128, 64, 96, true, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 4, 2, 257, 8, 2, 2e-2, true, true);
  check_tma<128, 64, 128, true, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 2, 4, 4, 256, 8, 3, 2e-2, true, true);
  check_tma<128, 128, 128, false, tj::f16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 2, 1, 1000, 8, 2, 1e-2, true, true);
  check_tma<128, 64, 128, false, tj::bf16>(dev, 1, 4, 1, 300, 8, 3, 2e-2, true, false);  // producer warp, no ping-pong
  check_tma<128, 64, 64, true, tj::bf16, examples::FlashAttnFwdTmaPingPong>(dev, 1, 2, 1, 1, 8, 2, 2e-2, true, true);  // one key
  check_tma<128, 128, 128, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEvenN>(dev, 1, 4, 1, 1024, 8, 2, 2e-2, true);
  check_tma<128, 128, 96, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEvenN>(dev, 2, 4, 2, 256, 8, 2, 2e-2, true);
  // Only the edge blocks masked: ragged and round S, causal and full, GQA, BLOCK_M > BLOCK_N.
  check_tma<128, 128, 128, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 4, 1, 1000, 8, 2, 2e-2, true);
  check_tma<128, 128, 128, true, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 4, 2, 1024, 8, 2, 2e-2, true);
  check_tma<128, 128, 96, true, tj::f16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 2, 2, 1, 333, 8, 2, 1e-2, true);
  check_tma<128, 128, 64, true, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 1, 4, 4, 777, 8, 2, 2e-2, true);
  check_tma<128, 64, 128, true, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 1, 2, 1, 300, 8, 3, 2e-2, true);
  check_tma<128, 128, 64, false, tj::bf16, examples::FlashAttnFwdTmaEdge>(dev, 1, 2, 1, 1, 8, 2, 2e-2, true);  // one key
  // BLOCK_N = 112 (16 x 7) and 96 (32 x 3) at D = 128: exact mixed-radix key blocks.
  check_tma<128, 112, 128, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 4, 1, 1000, 8, 2, 2e-2, true);
  check_tma<128, 112, 128, true, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 4, 2, 1024, 8, 2, 2e-2, true);
  check_tma<128, 96, 128, true, tj::f16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 2, 2, 1, 333, 8, 3, 1e-2, true);
  check_tma<128, 96, 128, false, tj::bf16, examples::FlashAttnFwdTmaPingPongEdge>(dev, 1, 2, 1, 4096, 8, 2, 2e-2, true);
}

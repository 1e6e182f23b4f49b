// examples/attention/flash_fwd.hpp — FlashAttention-style forward pass in the
// tilejit DSL, written as a user would: one program per BLOCK_M query rows of
// one head; K and V walked in BLOCK_N steps with the online softmax (running
// max and sum in registers, exp2 with the scale folded in); O = P·V
// accumulated in f32; the log-sum-exp saved for a backward pass.
//
// Shapes (row-major, contiguous): q, o [B·Hq, S, D]; k, v [B·Hkv, S, D];
// lse [B·Hq, S] (natural log). Grouped-query attention: Hq = group·Hkv, query
// head h reads KV head h / group. HEAD_DIM may be NPOT (96 is exact: a
// mixed-radix layout, no padding to 128). `scale_log2e` = softmax scale ·
// log2(e). Rows whose keys are all masked give O = 0 and lse = -1e30.
// Source of the algorithm: Dao et al., FlashAttention (arXiv 2205.14135) and
// FlashAttention-2 (arXiv 2307.08691).
//
// `attend` is the loop the forward, the variable-length forward
// (flash_fwd_varlen.hpp) and the decode kernel (flash_decode.hpp) share.
#pragma once
#include <tilejit/tilejit.hpp>

#include <tuple>

namespace examples {
namespace tj = tilejit;

inline constexpr float kAttnRescaleThreshold = 8.0f;  // log2 units: p ≤ 2^8 (softmax_of_masked)
inline constexpr float kAttnNegBig = -1e30f;          // "minus infinity" that keeps exp2 and max finite
inline constexpr float kAttnLn2 = 0.6931471805599453f;
#ifndef TILEJIT_ATTN_EXP2_SPLIT
#define TILEJIT_ATTN_EXP2_SPLIT 0
#endif
/// One probability register in kAttnExp2Split of each thread takes the FMA pipe's exp2 (tj::exp2_split,
/// FlashAttention-4's software exponential), the others the SFU's; 0: all on the SFU. 0, because on the H200 the
/// forward's softmax waits on instruction issue, not on the SFU: with 4 the library forward lost 4–12% at every
/// head dim (docs/perf.md v0.34). The macro is there to build that comparison (scripts/device_v34a.sh). With a
/// split, p of the row max is 0.99993 rather than 1 on the FMA form, so l ≥ 1 − 7.2e-5 rather than l ≥ 1.
inline constexpr int kAttnExp2Split = TILEJIT_ATTN_EXP2_SPLIT;

/// The raw scores Q·Kᵀ [BLOCK_M, BLOCK_N] of keys n0 .. n0 + BLOCK_N for query
/// rows `rm` (positions in the same sequence) with the keys at or past hi (and,
/// causal, key j > row i) set to exactly -1e30.
template <int BLOCK_N, bool CAUSAL, class Scores, class Rows>
auto mask_scores(const Scores& scores, const Rows& rm, const tj::Int& n0, const tj::Int& hi) {
  auto rn = n0 + tj::arange<BLOCK_N>();
  auto col_ok = tj::expand_dims<0>(rn < hi);
  auto mask = CAUSAL ? (col_ok & (tj::expand_dims<1>(rm) >= tj::expand_dims<0>(rn))) : (col_ok & (tj::expand_dims<1>(rm) >= 0));
  return tj::where(mask, scores, kAttnNegBig);
}

/// mask_scores for the blocks that need it, a uniform branch for the rest:
/// the block of keys n0 .. n0 + BLOCK_N is masked only when n0 >= edge (the
/// caller's promise: every key of a block starting below `edge` is visible to
/// every row, e.g. edge = S − BLOCK_N + 1 for full attention, start_m −
/// BLOCK_N + 2 for causal). Written as a loop of zero or one iteration over the
/// scores, so the compare, and and select per score run on the edge blocks
/// only (FlashAttention-3 masks only its diagonal and last blocks, too).
template <int BLOCK_N, bool CAUSAL, class Scores, class Rows>
auto mask_scores_from(const Scores& scores, const Rows& rm, const tj::Int& n0, const tj::Int& hi, const tj::Int& edge) {
  return tj::for_range(tj::maximum(n0, edge), n0 + 1, 1, scores,
                       [&](tj::Int, auto s) { return mask_scores<BLOCK_N, CAUSAL>(s, rm, n0, hi); });
}

/// The softmax of one block of masked scores `s` [BLOCK_M, BLOCK_N] (see
/// online_softmax_step): (m_new, p, alpha) with p = exp2(s·scale − m_new) and
/// alpha = exp2(m_i − m_new). The scale is applied per row to the max and fused
/// into exp2's argument (one FMA per score: s·scale − m), as FlashAttention
/// does; scale_log2e > 0. A row with no visible key yet keeps m = -1e30 and
/// subtracts 0, so exp2(-1e30·scale) = 0 for each of its scores and masked
/// scores need no second select.
/// THRESHOLD: the running max m is raised only when a block's max exceeds it by
/// more than kAttnRescaleThreshold (FlashAttention-4's conditional rescaling,
/// Dao et al. 2025): p ≤ 2^8 — f32 and bf16 / f16 hold it without loss — and
/// alpha is exactly 1 for most blocks, so tj::rescale leaves the accumulator
/// untouched (see correct_rows). m is still one of the row's scaled scores, so
/// l ≥ 1 and m + log2(l) is the row's log-sum-exp as before.
template <bool THRESHOLD = false, class Scores, class M>
auto softmax_of_masked(const Scores& s, const tj::Scalar<float>& scale_log2e, const M& m_i) {
  auto s_max = tj::max<1>(s);
  auto m_blk = s_max * scale_log2e;  // log2 units
  auto raised = [&] {
    if constexpr (THRESHOLD)
      return tj::where(m_blk > m_i + kAttnRescaleThreshold, m_blk, m_i);
    else
      return tj::maximum(m_i, m_blk);
  };
  auto m_new = tj::where(s_max > kAttnNegBig, raised(), m_i);
  auto m_use = tj::where(m_new > kAttnNegBig, m_new, 0.0f);
  auto p = tj::exp2_split(s * scale_log2e - tj::expand_dims<1>(m_use), kAttnExp2Split);
  auto alpha = tj::exp2(m_i - m_new);
  return std::tuple{m_new, p, alpha};
}

/// The softmax of one block (see online_softmax_step): mask_scores, then
/// softmax_of_masked. MASK = false (only for full attention whose key count is
/// a multiple of BLOCK_N, which the caller guarantees): no key is masked, and
/// the compare, and and select per score are not emitted.
template <int BLOCK_N, bool CAUSAL, bool MASK = true, class Scores, class Rows, class M>
auto softmax_block(const Scores& scores, const Rows& rm, const tj::Int& n0, const tj::Int& hi, const tj::Scalar<float>& scale_log2e,
                   const M& m_i) {
  static_assert(MASK || !CAUSAL, "causal attention masks its diagonal block");
  if constexpr (MASK)
    return softmax_of_masked(mask_scores<BLOCK_N, CAUSAL>(scores, rm, n0, hi), scale_log2e, m_i);
  else
    return softmax_of_masked(scores, scale_log2e, m_i);
}

/// Which key blocks a forward kernel masks (mask_scores): every block; only the
/// blocks that can hold a masked key (mask_scores_from, with the edge the
/// kernel computes); or none (full attention with S a multiple of BLOCK_N,
/// the caller's promise — like Triton's EVEN_N).
enum class KeyMask { every_block, edge_blocks, none };

/// `scores` masked as KeyMask MASK says (`edge` is read for edge_blocks only).
template <int BLOCK_N, bool CAUSAL, KeyMask MASK, class Scores, class Rows>
auto mask_scores_as(const Scores& scores, const Rows& rm, const tj::Int& n0, const tj::Int& hi, const tj::Int& edge) {
  static_assert(MASK != KeyMask::none || !CAUSAL, "causal attention masks its diagonal block");
  if constexpr (MASK == KeyMask::every_block)
    return mask_scores<BLOCK_N, CAUSAL>(scores, rm, n0, hi);
  else if constexpr (MASK == KeyMask::edge_blocks)
    return mask_scores_from<BLOCK_N, CAUSAL>(scores, rm, n0, hi, edge);
  else
    return scores;
}

/// Whether the accumulator type Acc [BLOCK_M, HEAD_DIM] takes the conditional rescale: from HEAD_DIM = 256, where a
/// thread's correction is 128 multiplies a 64-key block. There softmax_of_masked<true> keeps alpha at exactly 1 for
/// most blocks and correct_rows skips them: +7% for the full D = 256 forward on the H200. Below 256 the plain update:
/// the branch and the threshold cost more than the multiplies they skip (D = 64 −2 to −7%; docs/perf.md v0.28).
template <class Acc>
inline constexpr bool kConditionalRescale = Acc::shape::dims[1] >= 256;

/// acc [BLOCK_M, HEAD_DIM] · alpha [BLOCK_M] per row, the online softmax's correction of the accumulator: through
/// tj::rescale where kConditionalRescale<Acc>, else a plain multiply.
template <class Acc, class Alpha>
auto correct_rows(const Acc& acc, const Alpha& alpha) {
  if constexpr (kConditionalRescale<Acc>)
    return tj::rescale(acc, tj::expand_dims<1>(alpha));
  else
    return acc * tj::expand_dims<1>(alpha);
}

/// One step of the online softmax on masked scores `s` [BLOCK_M, BLOCK_N] (keys n0 .. n0 + BLOCK_N):
/// the updated (m, l, acc), acc += P·v_block() with V [BLOCK_N, HEAD_DIM] (loaded where the product needs it).
template <class T, class Scores, class M, class L, class Acc, class VBlock>
auto online_softmax_masked(const Scores& s, const tj::Scalar<float>& scale_log2e, const M& m_i, const L& l_i, const Acc& acc,
                           VBlock v_block) {
  auto [m_new, p, alpha] = softmax_of_masked<kConditionalRescale<Acc>>(s, scale_log2e, m_i);
  auto acc_new = tj::dot(tj::cast<T>(p), v_block(), correct_rows(acc, alpha));
  return std::tuple{m_new, l_i * alpha + tj::sum<1>(p), acc_new};
}

/// One step of the online softmax. `scores` are the raw Q·Kᵀ [BLOCK_M, BLOCK_N] of keys n0 .. n0 + BLOCK_N
/// for query rows `rm`, masked by mask_scores. Returns the updated (m, l, acc), acc += P·load_v(n0) with
/// V [BLOCK_N, HEAD_DIM]. MASK = false: no key is masked (the caller guarantees every key is visible).
template <int BLOCK_N, bool CAUSAL, class T, bool MASK = true, class Scores, class Rows, class M, class L, class Acc, class LoadV>
auto online_softmax_step(const Scores& scores, const Rows& rm, const tj::Int& n0, const tj::Int& hi,
                         const tj::Scalar<float>& scale_log2e, const M& m_i, const L& l_i, const Acc& acc, LoadV load_v) {
  static_assert(MASK || !CAUSAL, "causal attention masks its diagonal block");
  auto s = [&] {
    if constexpr (MASK)
      return mask_scores<BLOCK_N, CAUSAL>(scores, rm, n0, hi);
    else
      return scores;
  }();
  return online_softmax_masked<T>(s, scale_log2e, m_i, l_i, acc, [&] { return load_v(n0); });
}

/// The online-softmax state before any key: (m, l, acc) = (-1e30, 0, 0).
template <int BLOCK_M, int HEAD_DIM>
auto attend_init() {
  return std::tuple{tj::full<float, BLOCK_M>(kAttnNegBig), tj::zeros<float, BLOCK_M>(), tj::zeros<float, BLOCK_M, HEAD_DIM>()};
}

/// The online-softmax loop over keys [lo, hi) of one sequence, for query rows
/// `rm` (see online_softmax_step for the masking), continuing from the state
/// `init` ((m, l, acc) as attend returns them; attend_init() before any key).
/// load_kt(n0) gives Kᵀ [HEAD_DIM, BLOCK_N] (keys n0 .. n0 + BLOCK_N; out-of-range
/// keys may hold anything finite), load_v(n0) gives V [BLOCK_N, HEAD_DIM].
/// Returns (m, l, acc): the running max in log2 units, the sum of exp2, and
/// the unnormalised output [BLOCK_M, HEAD_DIM] in f32. MASK = false: the
/// caller guarantees that every block is whole (hi - lo a multiple of BLOCK_N,
/// not causal), and no key is masked.
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, bool MASK = true, class Init, class LoadKT, class LoadV>
auto attend_from(const Init& init, const tj::Tile<T, BLOCK_M, HEAD_DIM>& q_tile, const tj::Tile<std::int32_t, BLOCK_M>& rm,
                 const tj::Int& lo, const tj::Int& hi, const tj::Scalar<float>& scale_log2e, LoadKT load_kt, LoadV load_v) {
  return tj::for_range(lo, hi, BLOCK_N, init, [&](tj::Int n0, auto m_i, auto l_i, auto acc) {
    return online_softmax_step<BLOCK_N, CAUSAL, T, MASK>(tj::dot(q_tile, load_kt(n0)), rm, n0, hi, scale_log2e, m_i, l_i, acc, load_v);
  });
}

/// attend_from(attend_init(), ...): the loop over keys [lo, hi) from the start.
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, class LoadKT, class LoadV>
auto attend(const tj::Tile<T, BLOCK_M, HEAD_DIM>& q_tile, const tj::Tile<std::int32_t, BLOCK_M>& rm, const tj::Int& lo,
            const tj::Int& hi, const tj::Scalar<float>& scale_log2e, LoadKT load_kt, LoadV load_v) {
  return attend_from<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T>(attend_init<BLOCK_M, HEAD_DIM>(), q_tile, rm, lo, hi, scale_log2e, load_kt,
                                                           load_v);
}

/// O = acc / l (0 for rows with no key) and the natural-log LSE (-1e30 for them). A row whose scores held a
/// NaN (NaN in q or k) has l = NaN: its O and LSE are NaN, as torch's are — not the zeros of an empty row.
template <int BLOCK_M, int HEAD_DIM>
auto attend_finish(const tj::Tile<float, BLOCK_M>& m_i, const tj::Tile<float, BLOCK_M>& l_i,
                   const tj::Tile<float, BLOCK_M, HEAD_DIM>& acc) {
  auto has = l_i != 0.0f;  // l >= 0: false only for a row with no key; true for NaN
  auto safe_l = tj::where(has, l_i, 1.0f);
  // One reciprocal per row and a multiply per element (FlashAttention's epilogue), not an IEEE divide per element.
  auto out = tj::where(tj::expand_dims<1>(has), acc * tj::expand_dims<1>(1.0f / safe_l), 0.0f);
  auto lse = tj::where(has, m_i * kAttnLn2 + tj::log(safe_l), kAttnNegBig);
  return std::tuple{out, lse};
}

/// What one forward launch amounts to, for the profiler's launch hook (tj::LaunchCost): 4·S²·D flops per query
/// head (halved when causal, as the benchmarks and FlashAttention count them), Q and O once per query head, K and V
/// once per KV head, and the LSE. The IR alone cannot total a causal key range (it depends on the program).
inline tj::LaunchCost fwd_launch_cost(long long heads_q, long long group, long long S, int head_dim, bool causal, int elem_bytes) {
  const long long per_head = S * head_dim * elem_bytes;
  return {.flops = 4 * heads_q * S * S * head_dim / (causal ? 2 : 1),
          .flops_width = elem_bytes * 8,
          .bytes = 2 * heads_q * per_head + 2 * (heads_q / std::max(group, 1LL)) * per_head + heads_q * S * 4};
}

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashAttnFwd {
  /// Grid (cdiv(S, BLOCK_M), B·Hq): see fwd_launch_cost.
  tj::LaunchCost launch_cost(const tj::Grid& g, const auto&, const auto&, const auto&, const auto&, const auto&, long long S,
                             long long group, float) const {
    return fwd_launch_cost(g.y, group, S, HEAD_DIM, CAUSAL, sizeof(T));
  }
  void operator()(tj::Ptr<T> q, tj::Ptr<T> k, tj::Ptr<T> v, tj::Ptr<T> o, tj::Ptr<float> lse, tj::Size S, tj::Size group,
                  tj::Scalar<float> scale_log2e) const {
    auto start_m = tj::program_id(0) * BLOCK_M;
    auto bh = tj::program_id(1);
    auto q_base = bh * S * HEAD_DIM;
    auto kv_base = (bh / group) * S * HEAD_DIM;
    auto rm = start_m + tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto row_ok = rm < S;
    auto q_tile = tj::load(q + q_base + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(row_ok), 0.0f);
    auto hi = CAUSAL ? tj::minimum(S, start_m + BLOCK_M) : tj::Int(S);
    auto [m_i, l_i, acc] = attend<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T>(
        q_tile, rm, tj::scalar<std::int32_t>(0), hi, scale_log2e,
        [&](const tj::Int& n0) {  // Kᵀ tile [D, BLOCK_N] straight from K [S, D] by pointer arithmetic
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::load(k + kv_base + tj::expand_dims<0>(rn) * HEAD_DIM + tj::expand_dims<1>(rd), tj::expand_dims<0>(rn < S), 0.0f);
        },
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::load(v + kv_base + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(rn < S), 0.0f);
        });
    auto [out, lse_row] = attend_finish<BLOCK_M, HEAD_DIM>(m_i, l_i, acc);
    tj::store(o + q_base + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd), tj::cast<T>(out), tj::expand_dims<1>(row_ok));
    tj::store(lse + bh * S + rm, lse_row, row_ok);
  }
};

}  // namespace examples

// examples/attention/flash_fwd_tma.hpp — the attention forward of
// flash_fwd.hpp with Q, K and V read through tensor descriptors: the Hopper
// path. The body is the same `attend` loop; only where the tiles come from
// differs, and that is what lets the sm_90a code generator keep everything
// in shared memory and tensor cores:
//
//   - the Q block, loaded once before the loop, is copied by TMA into shared
//     memory once and stays there (a "resident" block);
//   - K and V blocks, loaded at the loop's induction variable, join the TMA
//     pipeline of the K loop (num_stages stages, one mbarrier each);
//   - S = Q·Kᵀ is a wgmma with both operands in shared memory (Kᵀ as the
//     trans of the K block: K-major B); O += P·V is a wgmma whose A operand
//     P comes from registers — the S accumulator layout is the wgmma A
//     fragment layout, so P never leaves registers — and whose B operand V is
//     read MN-major (the transpose immediate), so V is never transposed.
//
// Off sm_90a (the interpreter, sm_80, HIP) the descriptor loads become masked
// loads and the same kernel runs as flash_fwd.hpp does.
//
// Shapes: q, o [B·Hq, S, D]; k, v [B·Hkv, S, D] (row-major, contiguous);
// lse [B·Hq, S] (natural log). The descriptors see q as a 2-D [B·Hq·S, D]
// tensor with block [BLOCK_M, HEAD_DIM], k and v as [B·Hkv·S, D] with block
// [BLOCK_N, HEAD_DIM]. A block that runs past its head's S rows reads the
// next head's rows (or TMA's zero fill past the tensor): those query rows are
// not stored and those keys are masked (their probabilities are exactly 0),
// so the result is that of flash_fwd.hpp — as long as those V rows are finite
// (0·NaN = NaN). With KV_RANK = 3 the kernels take k and v as rank-3
// descriptors [B·Hkv, S, D] with [1, BLOCK_N, HEAD_DIM] blocks instead: a
// block past S reads TMA's zero fill (or the masked load's), never the next
// head's rows, so any V works (FlashAttention-3's layout; the library's form).
// HEAD_DIM 96 is exact: the 96-wide tiles are held in two 128-byte slabs (the
// second half used), and every product runs over 96, not 128.
#pragma once
#include <type_traits>

#include "examples/attention/flash_fwd.hpp"

namespace examples {

/// What every forward kernel of this file computes per program before and after
/// its loop: its query rows and head, the first row of its KV head in the 2-D
/// view of k and v, the end of its key range (`hi`), and the epilogue (O and LSE
/// of the rows < S, stored by pointer). The members are traced in this order,
/// as each kernel used to write them.
/// HEAVY_FIRST (causal): program 0 takes the last query block, the one with the most keys, so the longest
/// programs start first and the short ones fill the tail (longest-processing-time-first, as FlashAttention's
/// causal schedulers do); full attention is unaffected.
template <int BLOCK_M, int HEAD_DIM, bool CAUSAL, bool HEAVY_FIRST = false>
struct FwdRows {
  tj::Int start_m, bh, kv_row;
  tj::Tile<std::int32_t, BLOCK_M> rm;
  tj::Tile<std::int32_t, HEAD_DIM> rd;
  tj::Tile<bool, BLOCK_M> row_ok;
  static tj::Int block_m() {
    if constexpr (CAUSAL && HEAVY_FIRST)
      return tj::num_programs(0) - 1 - tj::program_id(0);
    else
      return tj::program_id(0);
  }
  FwdRows(const tj::Size& S, const tj::Size& group)
      : start_m(block_m() * BLOCK_M), bh(tj::program_id(1)), kv_row((bh / group) * S),
        rm(start_m + tj::arange<BLOCK_M>()), rd(tj::arange<HEAD_DIM>()), row_ok(rm < S) {}
  /// The rows of query block `block_m` of query head `head` (a persistent kernel's work item).
  FwdRows(const tj::Size& S, const tj::Size& group, const tj::Int& block_m, const tj::Int& head)
      : start_m(block_m * BLOCK_M), bh(head), kv_row((bh / group) * S), rm(start_m + tj::arange<BLOCK_M>()), rd(tj::arange<HEAD_DIM>()),
        row_ok(rm < S) {}
  /// This head's K and V in their descriptors: the first row of the 2-D view [B·Hkv·S, D] (KV_RANK = 2), or the
  /// KV head's index in [B·Hkv, S, D] (3).
  template <int KV_RANK>
  tj::Int kv_at(const tj::Size& group) const {
    if constexpr (KV_RANK == 3)
      return bh / group;
    else
      return kv_row;
  }
  /// The Q block of these rows (a descriptor over [B·Hq·S, D]).
  template <class Q>
  auto load_q(const Q& q, const tj::Size& S) const { return q.load(bh * S + start_m, 0); }
  /// One past the last key these rows see: S, or (causal) the end of the diagonal block; >= 1 as start_m < S.
  tj::Int hi(const tj::Size& S) const { return CAUSAL ? tj::minimum(S, start_m + BLOCK_M) : tj::Int(S); }
  /// The first key block start that can hold a key some row must not see (mask_scores_from's edge): a block
  /// n0 .. n0 + BLOCK_N is all visible when n0 + BLOCK_N <= S (full) or n0 + BLOCK_N - 1 <= start_m (causal).
  template <int BLOCK_N>
  tj::Int mask_edge(const tj::Size& S) const { return CAUSAL ? start_m - (BLOCK_N - 2) : S - (BLOCK_N - 1); }
  /// O = acc / l into o [B·Hq, S, D] and the natural-log LSE into lse [B·Hq, S] (attend_finish).
  template <class T, class M, class L, class Acc>
  void store(const tj::Ptr<T>& o, const tj::Ptr<float>& lse, const tj::Size& S, const M& m_i, const L& l_i, const Acc& acc) const {
    auto [out, lse_row] = attend_finish<BLOCK_M, HEAD_DIM>(m_i, l_i, acc);
    auto q_base = bh * S * HEAD_DIM;
    tj::store(o + q_base + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd), tj::cast<T>(out), tj::expand_dims<1>(row_ok));
    tj::store(lse + bh * S + rm, lse_row, row_ok);
  }
};

/// K and V descriptor parameters: 2-D over [B·Hkv·S, D] with [BLOCK_N, D] blocks (KV_RANK = 2), or rank 3 over
/// [B·Hkv, S, D] with [1, BLOCK_N, D] blocks (KV_RANK = 3: bounds per head). See the file comment.
template <class T, int BLOCK_N, int HEAD_DIM, int KV_RANK>
using KvDesc = std::conditional_t<KV_RANK == 3, tj::Desc<T, 1, BLOCK_N, HEAD_DIM>, tj::Desc<T, BLOCK_N, HEAD_DIM>>;

/// The key (or value) block at key n of KV head `kv` through descriptor d: `kv` is that head's first row of the
/// 2-D view (FwdRows::kv_row), or its index for a rank-3 descriptor (FwdRows::kv_at).
template <class Dk>
auto kv_block(const Dk& d, const tj::Int& kv, const tj::Int& n) {
  if constexpr (Dk::rank == 3)
    return d.load(kv, n, 0);
  else
    return d.load(kv + n, 0);
}

/// One KV head of one sequence in packed (varlen) K / V descriptors over [total, Hkv, D] with [BLOCK_N, 1, D]
/// blocks: the sequence's first token `seq0` and the KV head `head` (flash_fwd_varlen.hpp).
struct KvVarlen {
  tj::Int seq0, head;
};
template <class Dk>
auto kv_block(const Dk& d, const KvVarlen& kv, const tj::Int& n) {
  static_assert(Dk::rank == 3 && Dk::row_dim == 0, "varlen K / V: [total, Hkv, D] with [BLOCK_N, 1, D] blocks");
  return d.load(kv.seq0 + n, kv.head, 0);
}

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, int KV_RANK = 2>
struct FlashAttnFwdTma {
  void operator()(tj::Desc<T, BLOCK_M, HEAD_DIM> q, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> k, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> v,
                  tj::Ptr<T> o, tj::Ptr<float> lse, tj::Size S, tj::Size group, tj::Scalar<float> scale_log2e) const {
    const FwdRows<BLOCK_M, HEAD_DIM, CAUSAL> p(S, group);
    auto q_tile = p.load_q(q, S);
    auto hi = p.hi(S);
    const tj::Int kv = p.template kv_at<KV_RANK>(group);  // this head's K and V: first row in the 2-D view, or index
    auto [m_i, l_i, acc] = attend<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T>(
        q_tile, p.rm, tj::scalar<std::int32_t>(0), hi, scale_log2e,
        [&](const tj::Int& n0) { return tj::trans(kv_block(k, kv, n0)); },
        [&](const tj::Int& n0) { return kv_block(v, kv, n0); });
    p.store(o, lse, S, m_i, l_i, acc);
  }
};


/// FlashAttnFwdTma masking only the key blocks that need it (mask_scores_from):
/// the diagonal block(s) for causal attention, the last block when S is not a
/// multiple of BLOCK_N; the other blocks skip the compare, and and select per
/// score behind a uniform branch. Causal programs run heaviest first
/// (FwdRows' HEAVY_FIRST). Same shapes, descriptors and results; KV_RANK as FlashAttnFwdTma's. What the library
/// runs off Hopper (sm_80 .. sm_89: mma.sync reading K and V from a cp.async ring).
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, int KV_RANK = 2>
struct FlashAttnFwdTmaEdge {
  void operator()(tj::Desc<T, BLOCK_M, HEAD_DIM> q, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> k, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> v,
                  tj::Ptr<T> o, tj::Ptr<float> lse, tj::Size S, tj::Size group, tj::Scalar<float> scale_log2e) const {
    const FwdRows<BLOCK_M, HEAD_DIM, CAUSAL, true> p(S, group);
    auto q_tile = p.load_q(q, S);
    auto hi = p.hi(S);
    auto edge = p.template mask_edge<BLOCK_N>(S);
    const tj::Int kv = p.template kv_at<KV_RANK>(group);  // this head's K and V: first row in the 2-D view, or index
    auto [m_i, l_i, acc] = tj::for_range(0, hi, BLOCK_N, attend_init<BLOCK_M, HEAD_DIM>(), [&](tj::Int n0, auto m_i, auto l_i, auto acc) {
      auto s = mask_scores_from<BLOCK_N, CAUSAL>(tj::dot(q_tile, tj::trans(kv_block(k, kv, n0))), p.rm, n0, hi, edge);
      return online_softmax_masked<T>(s, scale_log2e, m_i, l_i, acc, [&] { return kv_block(v, kv, n0); });
    });
    p.store(o, lse, S, m_i, l_i, acc);
  }
};

}  // namespace examples

namespace examples {

/// FlashAttnFwdTma with the next block's scores in flight during this block's
/// softmax (FlashAttention-3's intra-warp-group overlap, written in the DSL):
/// the loop carries the raw scores S_j; iteration j first issues S_{j+1} =
/// Q·K_{j+1}ᵀ (both operands in shared memory, so the code generator defers
/// its wait to the end of the iteration), then runs the softmax of S_j on the
/// CUDA cores and the SFU while the tensor cores compute S_{j+1}, then P_j·V_j.
/// The first block's scores come from a K block copied before the loop; the
/// last iteration computes one block past `hi` (read from the next head's rows
/// or TMA's zero fill) and drops it. Same shapes, descriptors and results as
/// FlashAttnFwdTma.
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashAttnFwdTmaOverlap {
  void operator()(tj::Desc<T, BLOCK_M, HEAD_DIM> q, tj::Desc<T, BLOCK_N, HEAD_DIM> k, tj::Desc<T, BLOCK_N, HEAD_DIM> v, tj::Ptr<T> o,
                  tj::Ptr<float> lse, tj::Size S, tj::Size group, tj::Scalar<float> scale_log2e) const {
    const FwdRows<BLOCK_M, HEAD_DIM, CAUSAL> p(S, group);
    auto q_tile = p.load_q(q, S);
    auto hi = p.hi(S);
    const auto& kv_row = p.kv_row;  // first row of this head's K and V in the 2-D view
    auto s_first = tj::dot(q_tile, tj::trans(k.load(kv_row, 0)));  // raw scores of keys [0, BLOCK_N)
    auto init = std::tuple{tj::full<float, BLOCK_M>(kAttnNegBig), tj::zeros<float, BLOCK_M>(), tj::zeros<float, BLOCK_M, HEAD_DIM>(),
                           s_first};
    auto [m_i, l_i, acc, s_last] = tj::for_range(0, hi, BLOCK_N, init, [&](tj::Int n0, auto m_i, auto l_i, auto acc, auto s_cur) {
      auto s_next = tj::dot(q_tile, tj::trans(k.load(kv_row + n0 + BLOCK_N, 0)));  // in flight during the softmax below
      auto [m_new, l_new, acc_new] = online_softmax_step<BLOCK_N, CAUSAL, T>(
          s_cur, p.rm, n0, hi, scale_log2e, m_i, l_i, acc, [&](const tj::Int& n) { return v.load(kv_row + n, 0); });
      return std::tuple{m_new, l_new, acc_new, s_next};
    });
    (void)s_last;
    p.store(o, lse, S, m_i, l_i, acc);
  }
};

}  // namespace examples

namespace examples {

/// FlashAttention-3's schedule written in the DSL: iteration j issues
/// S_j = Q·K_jᵀ and the previous block's O += P_{j-1}·V_{j-1} back to back
/// (V_{j-1} is copied with K_j into the same pipeline stage), then runs the
/// softmax of S_j on the CUDA cores; O is rescaled by alpha_j after the product
/// that used the previous scale. Compiled with CompileOptions{.num_warps = 8,
/// .warp_specialize = true, .pingpong = true}, a producer warp issues the copies
/// and the two warp groups take turns over the two products, so one group's
/// softmax runs under the other's tensor-core work. The loop carries P (packed
/// as T); block 0's scores and softmax run before the loop (fa3_keys; at
/// D = 256 the loop starts at block 0 with P_{-1} = 0, multiplied by this
/// head's first V block); the last block's P·V runs after the loop on a V block
/// copied before it. Same shapes, descriptors and results as FlashAttnFwdTma. With
/// KV_RANK = 2, V must be finite where it is read: with S not a multiple of
/// BLOCK_N the last block holds rows of the next KV head (or TMA's zero fill),
/// multiplied by P = 0, and a NaN or Inf there gives NaN (0·NaN) in this
/// head's output; KV_RANK = 3 reads zeros there. Source: Shah et al.,
/// FlashAttention-3 (arXiv 2407.08608), §3.1 (ping-pong) and Algorithm 1.
/// One step of FlashAttention-3's key loop at key block n0: issues S_j = Q·K_jᵀ and O += P_{j-1}·V_{j-1} (acc: O
/// before that product, p_prev: P_{j-1}), then the softmax of S_j, masked as MASK says. Returns (m, l, O rescaled, P_j).
/// The softmax of one key block's raw scores `s` (block n0, masked as MASK says; `edge`: see mask_scores_from) against
/// the running max m_i: returns (m_new, prob, alpha) as softmax_of_masked, with the correction skipped where it is 1
/// when the accumulator type Acc allows (kConditionalRescale). fa3_step and fa3_keys' peeled block 0 share it.
template <int BLOCK_N, bool CAUSAL, KeyMask MASK, class Acc, class S, class Rows, class M>
auto fa3_softmax(const S& s, const Rows& rm, const tj::Int& n0, const tj::Int& hi, const tj::Int& edge, const tj::Scalar<float>& scale_log2e,
                 const M& m_i) {
  return softmax_of_masked<kConditionalRescale<Acc>>(mask_scores_as<BLOCK_N, CAUSAL, MASK>(s, rm, n0, hi, edge), scale_log2e, m_i);
}

template <int BLOCK_N, bool CAUSAL, class T, KeyMask MASK, class QTile, class KDesc, class VDesc, class KV, class Rows, class M, class L,
          class Acc, class P>
auto fa3_step(const QTile& q_tile, const KDesc& k, const VDesc& v, const KV& kv, const Rows& rm, const tj::Int& hi,
              const tj::Int& edge, const tj::Scalar<float>& scale_log2e, const tj::Int& n0, const M& m_i, const L& l_i, const Acc& acc,
              const P& p_prev) {
  auto s = tj::dot(q_tile, tj::trans(kv_block(k, kv, n0)));
  // P_{-1} = 0: at j = 0 any V block gives 0, as long as it is finite — so read this head's first block, not
  // the previous head's last one (a NaN or Inf there would make 0·NaN = NaN here).
  auto o_prev = tj::dot(p_prev, kv_block(v, kv, tj::maximum(n0 - BLOCK_N, 0)), acc);
  auto [m_new, prob, alpha] = fa3_softmax<BLOCK_N, CAUSAL, MASK, Acc>(s, rm, n0, hi, edge, scale_log2e, m_i);
  return std::tuple{m_new, l_i * alpha + tj::sum<1>(prob), correct_rows(o_prev, alpha), tj::cast<T>(prob)};
}

/// Whether fa3_keys peels its first key block out of the loop: at D = 96 and 128, and at D = 64 for causal attention.
/// On the H200 (docs/perf.md v0.31 call 1, two rounds against the loop from block 0, short runs at boost clock)
/// D = 128 full +2.6%, causal and D = 96 within ±0.6%, and the D = 64 library kernel (192-row items) −2.6% full,
/// equal causal. At the 700 W power cap (v0.36 call 3, 3 s a row, two rounds) the D = 64 library kernel gained 1.6%
/// causal (192 × 96 items: 387.4 / 387.0 → 393.5 / 394.1 TFLOP/s) and was equal full, so D = 64 full keeps the loop
/// from block 0. At D = 256 (64-key blocks, 224 KiB of shared memory already) the first K block's own buffer does not
/// fit. Where not peeled the loop multiplies P_{-1} = 0 by a V block once per item and warp group.
template <int HEAD_DIM, bool CAUSAL>
inline constexpr bool kFa3PeelFirstBlock = (HEAD_DIM > 64 || CAUSAL) && HEAD_DIM <= 128;

/// FlashAttention-3's loop over the keys [0, hi) of one head (FlashAttnFwdTmaPingPongBody): iteration j issues
/// S_j = Q·K_jᵀ and O += P_{j-1}·V_{j-1}, then the softmax of S_j, masked as MASK says (`edge`: see
/// mask_scores_from). Returns (m, l, acc, P of the last block): the last block's P·V is the caller's.
/// Where kFa3PeelFirstBlock, block 0 runs before the loop (S_0 and its softmax; O starts at 0), as FlashAttention-3
/// does: otherwise iteration 0 issues a P·V whose P is 0 — one product in vain per item and warp group, 1 product in
/// 65 on a 32-block item, 1 in 34 on a causal head's average item at S = 4096 and 128-key blocks. The
/// first K block then has a shared-memory buffer of its own (per item in the persistent kernel).
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, KeyMask MASK, class QTile, class KDesc, class VDesc, class KV,
          class Rows>
auto fa3_keys(const QTile& q_tile, const KDesc& k, const VDesc& v, const KV& kv, const Rows& rm, const tj::Int& hi,
              const tj::Int& edge, const tj::Scalar<float>& scale_log2e) {
  auto step = [&](tj::Int n0, auto m_i, auto l_i, auto acc, auto p_prev) {
    return fa3_step<BLOCK_N, CAUSAL, T, MASK>(q_tile, k, v, kv, rm, hi, edge, scale_log2e, n0, m_i, l_i, acc, p_prev);
  };
  auto acc0 = tj::zeros<float, BLOCK_M, HEAD_DIM>();
  const auto m0 = tj::full<float, BLOCK_M>(kAttnNegBig);
  if constexpr (kFa3PeelFirstBlock<HEAD_DIM, CAUSAL>) {
    // Block 0: m = its max, l = its sum, P_0 carried; no product with O yet. (A varlen program past its sequence's
    // end has hi = 0 and runs it too: its rows are not stored.)
    const tj::Int n0 = tj::scalar<std::int32_t>(0);
    auto s = tj::dot(q_tile, tj::trans(kv_block(k, kv, n0)));
    auto [m_1, prob, alpha] = fa3_softmax<BLOCK_N, CAUSAL, MASK, decltype(acc0)>(s, rm, n0, hi, edge, scale_log2e, m0);
    (void)alpha;  // 0 (m_0 = -1e30), or 1 for a row with nothing visible yet: l and O are 0 either way
    return tj::for_range(BLOCK_N, hi, BLOCK_N, std::tuple{m_1, tj::sum<1>(prob), acc0, tj::cast<T>(prob)}, step);
  } else {
    // P is carried across the back edge as T (the code generator packs a 16-bit tile that only a dot reads two
    // elements per register: 32 registers per thread at 128 × 128, not 64).
    return tj::for_range(0, hi, BLOCK_N, std::tuple{m0, tj::zeros<float, BLOCK_M>(), acc0, tj::zeros<T, BLOCK_M, BLOCK_N>()}, step);
  }
}

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, KeyMask MASK = KeyMask::every_block, int KV_RANK = 2>
struct FlashAttnFwdTmaPingPongBody {
  /// Q's descriptor holds B·Hq·S rows: see fwd_launch_cost.
  tj::LaunchCost launch_cost(const tj::Grid&, const tj::TensorDescriptor& q, const auto&, const auto&, const auto&, const auto&,
                             long long S, long long group, float) const {
    return fwd_launch_cost(q.shape()[0] / std::max(S, 1LL), group, S, HEAD_DIM, CAUSAL, sizeof(T));
  }
  void operator()(tj::Desc<T, BLOCK_M, HEAD_DIM> q, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> k, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> v,
                  tj::Ptr<T> o, tj::Ptr<float> lse, tj::Size S, tj::Size group, tj::Scalar<float> scale_log2e) const {
    const FwdRows<BLOCK_M, HEAD_DIM, CAUSAL, MASK == KeyMask::edge_blocks> p(S, group);
    auto q_tile = p.load_q(q, S);
    auto hi = p.hi(S);
    const tj::Int kv = p.template kv_at<KV_RANK>(group);  // this head's K and V: first row in the 2-D view, or index
    auto edge = MASK == KeyMask::edge_blocks ? p.template mask_edge<BLOCK_N>(S) : hi;
    auto v_last = kv_block(v, kv, (hi - 1) / BLOCK_N * BLOCK_N);  // the last block's V, copied once
    auto [m_i, l_i, acc, p_last] = fa3_keys<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T, MASK>(q_tile, k, v, kv, p.rm, hi, edge, scale_log2e);
    auto acc_all = tj::dot(p_last, v_last, acc);
    p.store(o, lse, S, m_i, l_i, acc_all);
  }
};

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashAttnFwdTmaPingPong : FlashAttnFwdTmaPingPongBody<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T> {};

/// FlashAttnFwdTmaPingPong masking only the key blocks that need it (see
/// FlashAttnFwdTmaEdge): any S, causal or not; causal programs heaviest first.
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, int KV_RANK = 2>
struct FlashAttnFwdTmaPingPongEdge : FlashAttnFwdTmaPingPongBody<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T, KeyMask::edge_blocks, KV_RANK> {};

/// FlashAttnFwdTmaPingPong for full attention when S is a multiple of BLOCK_N
/// (the caller's promise, like Triton's EVEN_N): no score is masked, which
/// saves a compare, an and and a select per score. Not for causal attention.
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, int KV_RANK = 2>
struct FlashAttnFwdTmaPingPongEvenN : FlashAttnFwdTmaPingPongBody<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T, KeyMask::none, KV_RANK> {
  static_assert(!CAUSAL, "FlashAttnFwdTmaPingPongEvenN is for full attention");
};

}  // namespace examples

// examples/attention/flash_bwd_tma.hpp — the backward pass of flash_bwd.hpp
// with Q, K, V and dO read through tensor descriptors: the Hopper path, on the
// machinery of flash_fwd_tma.hpp. Launch 1 (delta = rowsum(dO ∘ O)) is
// FlashBwdPreprocess of flash_bwd.hpp, unchanged. `Attention<T>::backward`
// (attention.hpp) runs these on compute capability 9.0 with the tiles of
// FlashBwdTmaConfig<D> when q, k, v and d_o are 16-byte aligned.
//
//   FlashBwdKVTma, grid (cdiv(S, BLOCK_N), B·Hkv), BLOCK_N / 16 warps:
//     K and V blocks resident (copied once); per query head of the group and
//     query block, Q and dO blocks through the TMA pipeline, and four wgmma:
//       Sᵀ  = K·Qᵀ        (both from shared memory; Qᵀ as the trans of the Q block)
//       dV += Pᵀ·dO       (Pᵀ from registers; dO read MN-major)
//       dPᵀ = V·dOᵀ       (both from shared memory)
//       dK += dSᵀ·Q       (dSᵀ from registers; Q read MN-major)
//   FlashBwdQTma, grid (cdiv(S, BLOCK_M), B·Hq), BLOCK_M / 16 warps:
//     Q and dO resident; per key block, K and V through the pipeline:
//       S = Q·Kᵀ, dP = dO·Vᵀ (shared memory), dQ += dS·K (dS from registers, K MN-major).
//   or, in place of FlashBwdQTma, one launch for all three gradients:
//   FlashBwdFusedTma, grid and tiles of FlashBwdKVTma: its four products and a fifth,
//       dQ += dS·K        (dS converted from dSᵀ; K the resident block)
//     added to an f32 dQ accumulator by atomics; FlashBwdDqConvert rounds it to T.
//
// Each Q / dO (resp. K) block is read twice by the tensor cores, once K-major
// through `trans` and once MN-major, from the same shared-memory copy.
// Descriptors (rank 3, bounds per head): q, d_o over [B·Hq, S, D]; k, v over
// [B·Hkv, S, D]; blocks [1, BLOCK_M, D] for q and d_o, [1, BLOCK_N, D] for k
// and v. A block that runs past its head's S rows reads zeros (TMA's fill,
// or the masked load's), never the next head's rows: a NaN or Inf there
// would otherwise reach this head's gradients through dS = P ∘ (dP − δ) and
// the products with K, Q and dO (0 · NaN = NaN). Those rows' lse and delta
// are loaded masked, their probabilities are masked to 0, and rows past S are
// not stored. Off sm_90a the descriptor loads become masked loads. Source: Dao, FlashAttention-2 (arXiv
// 2307.08691), Algorithm 2; the Hopper mapping as in FlashAttention-3 (arXiv
// 2407.08608) without its warp specialisation.
#pragma once
#include "examples/attention/flash_bwd.hpp"

namespace examples {

/// The tiles `Attention<T>::backward` runs on Hopper, one warp group per 64
/// resident rows. dK/dV: kv_block_n keys resident (kv_block_n / 16 warps),
/// kv_block_m-row Q and dO blocks through a kv_stages-deep TMA pipeline; dQ:
/// q_block_m queries resident (q_block_m / 16 warps), q_block_n-row K and V
/// blocks, q_stages deep. Measured on the H200 (B=4, H=32, S=4096, bf16,
/// BM_FlashBwdTma): 240.6 / 228.2 TFLOP/s at D = 64 full / causal, 306.2 /
/// 279.5 at D = 128. At D = 128: 247 / 189 registers (255 / 173 as the
/// benchmark specialises them), no spills.
/// The sweeps' winners (H200, full attention, kv / q launch ms): D = 64 takes dK/dV 64 x 64 with 3 stages
/// (2.85 ms against 4.11 for 64 x 128 / 2); at D = 128 that tile is slower (6.24 against 5.17) and 64 x 128 / 2
/// stays. dQ runs 3 stages at every D (D = 64: 1.48 against 1.67; D = 128: 2.75 against 3.79).
template <int HEAD_DIM>
struct FlashBwdTmaConfig {
  static constexpr bool d64 = HEAD_DIM <= 64;
  static constexpr int kv_block_m = 64, kv_block_n = d64 ? 64 : 128, kv_stages = d64 ? 3 : 2, kv_warps = kv_block_n / 16;
  static constexpr int q_block_m = 128, q_block_n = 64, q_stages = 3, q_warps = q_block_m / 16;
  /// A producer warp group for both kernels above D = 64 (v0.6 on the H200, D128: +13% full, +6% causal; at D64
  /// it made dK/dV 1.6x slower: its 4 consumer warps wait on the producer more than they gain).
  static constexpr bool kv_ws = !d64, q_ws = !d64;
};

/// The body of FlashBwdKVTma and FlashBwdFusedTma: `dq_sink(bh, rm, row_ok, dst, k_tile)` is called in every
/// iteration with the query head bh, the block's query rows rm and their bound check [BLOCK_M], dSᵀ rounded to T
/// [BLOCK_N, BLOCK_M] and the resident K block [BLOCK_N, D].
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, class DqSink>
void bwd_kv_tma_body(const tj::Desc<T, 1, BLOCK_N, HEAD_DIM>& k, const tj::Desc<T, 1, BLOCK_N, HEAD_DIM>& v,
                     const tj::Desc<T, 1, BLOCK_M, HEAD_DIM>& q, const tj::Desc<T, 1, BLOCK_M, HEAD_DIM>& d_o, const tj::Ptr<float>& lse,
                     const tj::Ptr<float>& delta, const tj::Ptr<T>& dk, const tj::Ptr<T>& dv, const tj::Size& S, const tj::Size& group,
                     const tj::Scalar<float>& scale, const tj::Scalar<float>& scale_log2e, DqSink dq_sink) {
  constexpr float kLog2e = 1.4426950408889634f;
  auto start_n = tj::program_id(0) * BLOCK_N;
  auto bkv = tj::program_id(1);
  auto rn = start_n + tj::arange<BLOCK_N>();
  auto rd = tj::arange<HEAD_DIM>();
  auto key_ok = rn < S;
  const tj::Int key_past = tj::maximum(start_n + BLOCK_N - S, 0);  // > 0: this key block runs past S
  auto k_tile = k.load(bkv, start_n, 0);  // resident
  auto v_tile = v.load(bkv, start_n, 0);
  // Causal: query rows before this key block see none of it.
  auto m_lo = CAUSAL ? start_n / BLOCK_M * BLOCK_M : tj::scalar<std::int32_t>(0);
  auto init = std::tuple{tj::zeros<float, BLOCK_N, HEAD_DIM>(), tj::zeros<float, BLOCK_N, HEAD_DIM>()};
  auto [dk_acc, dv_acc] = tj::for_range(0, group, 1, init, [&](tj::Int g, auto dk_g, auto dv_g) {
    auto bh = bkv * group + g;  // a query head of this KV head
    return tj::for_range(m_lo, S, BLOCK_M, std::tuple{dk_g, dv_g}, [&](tj::Int m0, auto dk_acc, auto dv_acc) {
      auto rm = m0 + tj::arange<BLOCK_M>();
      auto row_ok = rm < S;
      auto q_blk = q.load(bh, m0, 0);
      auto do_blk = d_o.load(bh, m0, 0);
      auto lse_l2 = tj::load(lse + bh * S + rm, row_ok, 0.0f) * kLog2e;
      auto dlt = tj::load(delta + bh * S + rm, row_ok, 0.0f);
      auto dpt_of = [&] { return tj::dot(v_tile, tj::trans(do_blk)); };  // after dV's product: one score tile live
      auto ds_sink = [&](const auto& dst) { dq_sink(bh, rm, row_ok, dst, k_tile); };
      // Mask only the blocks that can hold a hidden score: causal, the query rows before the diagonal's end
      // (m0 < start_n + BLOCK_N − 1); rows past S (m0 + BLOCK_M > S); every block when this program's keys pass S.
      const tj::Int causal_part = CAUSAL ? tj::maximum(start_n + (BLOCK_N - 1) - m0, 0) : tj::scalar<std::int32_t>(0);
      const MaskWhen masker{tj::minimum(causal_part + tj::maximum(m0 + BLOCK_M - S, 0) + key_past, 1)};
      return bwd_kv_step<CAUSAL, T>(tj::dot(k_tile, tj::trans(q_blk)), dpt_of, rn, rm, key_ok, row_ok,
                                    lse_l2, dlt, scale_log2e, do_blk, q_blk, dk_acc, dv_acc, ds_sink, masker);
    });
  });
  auto kv_ptrs = bkv * S * HEAD_DIM + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd);
  tj::store(dk + kv_ptrs, tj::cast<T>(dk_acc * scale), tj::expand_dims<1>(key_ok));
  tj::store(dv + kv_ptrs, tj::cast<T>(dv_acc), tj::expand_dims<1>(key_ok));
}

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashBwdKVTma {
  void operator()(tj::Desc<T, 1, BLOCK_N, HEAD_DIM> k, tj::Desc<T, 1, BLOCK_N, HEAD_DIM> v, tj::Desc<T, 1, BLOCK_M, HEAD_DIM> q,
                  tj::Desc<T, 1, BLOCK_M, HEAD_DIM> d_o, tj::Ptr<float> lse, tj::Ptr<float> delta, tj::Ptr<T> dk, tj::Ptr<T> dv,
                  tj::Size S, tj::Size group, tj::Scalar<float> scale, tj::Scalar<float> scale_log2e) const {
    bwd_kv_tma_body<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T>(k, v, q, d_o, lse, delta, dk, dv, S, group, scale, scale_log2e,
                                                          [](const auto&...) {});
  }
};

/// Where dQ's element (r, c) of a [BLOCK_M, D] query block sits in the fused backward's f32 accumulator, relative to
/// the block's start: the block is stored as its 16 x 8 pieces in order, each piece as 2 runs of 32 pairs — run h
/// holding, for lanes 0..31, the pair of columns that lane holds in row l/4 + 8h of a tensor-core accumulator
/// fragment (mma.sync m16n8, and each 16 x 8 piece of a wgmma accumulator: lane l holds rows l/4 and l/4 + 8,
/// columns 2(l%4) and 2(l%4) + 1, in consecutive registers). So a thread's two columns are adjacent — one 8-byte
/// vector reduction on sm_90 (`red.global.add.v2.f32`) — and each warp's adds cover 256 contiguous bytes instead of
/// 8 rows' scattered pairs (FlashAttention-2 permutes its dQaccum for the same reason). A bijection of
/// [0, BLOCK_M · D); FlashBwdDqConvert reads it back. BLOCK_M a multiple of 16, D of 8.
template <int BLOCK_M, int HEAD_DIM, class R, class C>
auto dq_acc_offset(const R& r, const C& c) {
  static_assert(BLOCK_M % 16 == 0 && HEAD_DIM % 8 == 0, "dq_acc_offset: 16 x 8 pieces");
  auto rr = tj::expand_dims<1>(r % 16), cc = tj::expand_dims<0>(c % 8);
  auto piece = tj::expand_dims<1>(r / 16) * (HEAD_DIM / 8) + tj::expand_dims<0>(c / 8);
  auto lane = (rr % 8) * 4 + cc / 2;
  return ((piece * 2 + rr / 8) * 32 + lane) * 2 + cc % 2;
}

/// Rows per query head in the fused backward's dQ accumulator: S rounded up to a whole BLOCK_M block, so every
/// block is whole (rows past S are masked out of the atomics, stay zero and are never stored to dq). One definition
/// for the kernels (S a tj::Size) and the host that sizes the buffer (S an integer).
template <int BLOCK_M, class S_>
auto dq_acc_rows(const S_& S) {
  return (S + (BLOCK_M - 1)) / BLOCK_M * BLOCK_M;
}

/// Where query block m0 (a multiple of BLOCK_M) of head bh starts in the dQ accumulator f32 [B·Hq, dq_acc_rows(S),
/// D]: element (m0 + r, c) sits at dq_acc_block(bh, m0, S) + dq_acc_offset(r, c). FlashBwdFusedTma writes through
/// it and FlashBwdDqConvert reads through it; their agreement is what dQ's correctness rests on.
template <int BLOCK_M, int HEAD_DIM, class BH, class M0, class S_>
auto dq_acc_block(const BH& bh, const M0& m0, const S_& S) {
  return (bh * dq_acc_rows<BLOCK_M>(S) + m0) * HEAD_DIM;
}

/// dK, dV and dQ in one launch, as FlashAttention-2's Algorithm 2 is written (and FlashAttention-3's backward):
/// FlashBwdKVTma, plus in every iteration dQ's share dS·K [BLOCK_M, D] (unscaled; K the resident block, dS read
/// from dSᵀ through a layout conversion) added to dq_acc by f32 atomics — no second pass over the keys recomputing
/// S and dP, at the price of B·Hq·S·D·cdiv(S, BLOCK_N) atomic adds (about half that causal). dq_acc: f32
/// [B·Hq, dq_acc_rows(S), D], each [BLOCK_M, D] block in dq_acc_offset's order (dq_acc_block), zeroed before the launch;
/// FlashBwdDqConvert<BLOCK_M, ...> then writes dq = T(scale · dq_acc). Same grid, tiles and other arguments as
/// FlashBwdKVTma. The atomics' order varies from run to run, so dQ's last bits do too.
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashBwdFusedTma {
  void operator()(tj::Desc<T, 1, BLOCK_N, HEAD_DIM> k, tj::Desc<T, 1, BLOCK_N, HEAD_DIM> v, tj::Desc<T, 1, BLOCK_M, HEAD_DIM> q,
                  tj::Desc<T, 1, BLOCK_M, HEAD_DIM> d_o, tj::Ptr<float> lse, tj::Ptr<float> delta, tj::Ptr<T> dk, tj::Ptr<T> dv,
                  tj::Ptr<float> dq_acc, tj::Size S, tj::Size group, tj::Scalar<float> scale, tj::Scalar<float> scale_log2e) const {
    auto r = tj::arange<BLOCK_M>();
    auto off = dq_acc_offset<BLOCK_M, HEAD_DIM>(r, tj::arange<HEAD_DIM>());
    auto dq_sink = [&](const auto& bh, const auto& rm, const auto& row_ok, const auto& dst, const auto& k_tile) {
      auto dq_part = tj::dot(tj::trans(dst), k_tile);  // dS·K [BLOCK_M, D]
      // The block's start as a column of its rows' m0 = rm − r, not the loop's scalar m0: with the scalar, the
      // generated D = 64 kernel ran 17% slower on the H200 (docs/perf.md v0.26 call 4).
      auto block = dq_acc_block<BLOCK_M, HEAD_DIM>(bh, tj::expand_dims<1>(rm - r), S);
      tj::atomic_add(dq_acc + block + off, dq_part, tj::expand_dims<1>(row_ok));
    };
    bwd_kv_tma_body<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T>(k, v, q, d_o, lse, delta, dk, dv, S, group, scale, scale_log2e, dq_sink);
  }
};

/// The fused backward's last launch, grid (cdiv(S, BLOCK_M), B·Hq): dq [B·Hq, S, D] = T(scale · dq_acc) from the
/// accumulator FlashBwdFusedTma<BLOCK_M, ...> filled (dq_acc_offset's order per block).
template <int BLOCK_M, int HEAD_DIM, class T>
struct FlashBwdDqConvert {
  void operator()(tj::Ptr<float> dq_acc, tj::Ptr<T> dq, tj::Size S, tj::Scalar<float> scale) const {
    auto m0 = tj::program_id(0) * BLOCK_M;
    auto bh = tj::program_id(1);
    auto r = tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto acc = tj::load(dq_acc + dq_acc_block<BLOCK_M, HEAD_DIM>(bh, m0, S) + dq_acc_offset<BLOCK_M, HEAD_DIM>(r, rd));
    auto ok = tj::expand_dims<1>(m0 + r < S);
    tj::store(dq + (bh * S + tj::expand_dims<1>(m0 + r)) * HEAD_DIM + tj::expand_dims<0>(rd), tj::cast<T>(acc * scale), ok);
  }
};

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashBwdQTma {
  void operator()(tj::Desc<T, 1, BLOCK_M, HEAD_DIM> q, tj::Desc<T, 1, BLOCK_M, HEAD_DIM> d_o, tj::Desc<T, 1, BLOCK_N, HEAD_DIM> k,
                  tj::Desc<T, 1, BLOCK_N, HEAD_DIM> v, tj::Ptr<float> lse, tj::Ptr<float> delta, tj::Ptr<T> dq, tj::Size S,
                  tj::Size group, tj::Scalar<float> scale, tj::Scalar<float> scale_log2e) const {
    constexpr float kLog2e = 1.4426950408889634f;
    auto start_m = tj::program_id(0) * BLOCK_M;
    auto bh = tj::program_id(1);
    auto rm = start_m + tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto row_ok = rm < S;
    const tj::Int rows_past = tj::maximum(start_m + BLOCK_M - S, 0);  // > 0: this query block runs past S
    auto q_blk = q.load(bh, start_m, 0);  // resident
    auto do_blk = d_o.load(bh, start_m, 0);
    auto lse_l2 = tj::load(lse + bh * S + rm, row_ok, 0.0f) * kLog2e;
    auto dlt = tj::load(delta + bh * S + rm, row_ok, 0.0f);
    auto kv_head = bh / group;
    auto hi = CAUSAL ? tj::minimum(S, start_m + BLOCK_M) : tj::Int(S);
    auto dq_acc = tj::for_range(0, hi, BLOCK_N, tj::zeros<float, BLOCK_M, HEAD_DIM>(), [&](tj::Int n0, auto dq_acc) {
      auto rn = n0 + tj::arange<BLOCK_N>();
      auto key_ok = rn < S;
      auto k_blk = k.load(kv_head, n0, 0);
      auto v_blk = v.load(kv_head, n0, 0);
      auto dp_of = [&] { return tj::dot(do_blk, tj::trans(v_blk)); };
      // Mask only the blocks that can hold a hidden score: causal, the keys past the block's first row
      // (n0 + BLOCK_N − 1 > start_m); keys past S; every block when this program's rows pass S.
      const tj::Int causal_part = CAUSAL ? tj::maximum(n0 + (BLOCK_N - 1) - start_m, 0) : tj::scalar<std::int32_t>(0);
      const MaskWhen masker{tj::minimum(causal_part + tj::maximum(n0 + BLOCK_N - S, 0) + rows_past, 1)};
      return bwd_q_step<CAUSAL, T>(tj::dot(q_blk, tj::trans(k_blk)), dp_of, rm, rn, row_ok, key_ok, lse_l2,
                                   dlt, scale_log2e, k_blk, dq_acc, masker);
    });
    auto q_ptrs = bh * S * HEAD_DIM + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd);
    tj::store(dq + q_ptrs, tj::cast<T>(dq_acc * scale), tj::expand_dims<1>(row_ok));
  }
};

}  // namespace examples

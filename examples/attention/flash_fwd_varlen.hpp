// examples/attention/flash_fwd_varlen.hpp — the forward pass over a batch of
// sequences of different lengths packed end to end (FlashAttention's varlen
// API): sequence b owns tokens [cu_seqlens[b], cu_seqlens[b + 1]).
//
// Shapes (row-major): q, o [total, Hq, D]; k, v [total, Hkv, D]; lse [total, Hq]
// (natural log); cu_seqlens [B + 1] i32, cu_seqlens[0] = 0, non-decreasing
// (checked on the host by examples/attention/attention.hpp). Grid
// (cdiv(max_seqlen, BLOCK_M), Hq, B): programs past their sequence's end
// store nothing. Same loop and masking as flash_fwd.hpp (`attend`).
//
// FlashAttnFwdVarlenTma is the Hopper form: FlashAttnFwdTmaPingPongEdge's
// loop (FlashAttention-3's order, only the edge key blocks masked) with Q, K
// and V read through rank-3 descriptors over the packed tensors — q [total,
// Hq, D] in [BLOCK_M, 1, D] blocks at (seq0 + start_m, h, 0), k and v
// [total, Hkv, D] in [BLOCK_N, 1, D] blocks at (seq0 + n0, kv head, 0): the
// rows run along the token dim, one head per block. A key block past the
// sequence's end holds the next sequence's tokens (or TMA's zero fill past
// the last): their scores are masked, so they weigh exactly 0 (as in
// FlashAttnFwdTma, such V rows must be finite). Programs past their
// sequence's end run no key block and store nothing.
#pragma once
#include "examples/attention/flash_fwd.hpp"
#include "examples/attention/flash_fwd_tma.hpp"

namespace examples {

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashAttnFwdVarlen {
  void operator()(tj::Ptr<T> q, tj::Ptr<T> k, tj::Ptr<T> v, tj::Ptr<T> o, tj::Ptr<float> lse, tj::Ptr<std::int32_t> cu_seqlens,
                  tj::Size Hq, tj::Size group, tj::Scalar<float> scale_log2e) const {
    auto start_m = tj::program_id(0) * BLOCK_M;
    auto h = tj::program_id(1);
    auto b = tj::program_id(2);
    auto seq0 = tj::load(cu_seqlens + b);
    auto len = tj::load(cu_seqlens + b + 1) - seq0;
    auto q_row = Hq * HEAD_DIM;                 // elements between tokens of q / o
    auto kv_row = (Hq / group) * HEAD_DIM;      // of k / v
    auto kv_col = (h / group) * HEAD_DIM;       // this head's KV head
    auto rm = start_m + tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto row_ok = rm < len;
    auto q_ptrs = tj::expand_dims<1>(seq0 + rm) * q_row + h * HEAD_DIM + tj::expand_dims<0>(rd);
    auto q_tile = tj::load(q + q_ptrs, tj::expand_dims<1>(row_ok), 0.0f);
    auto hi = CAUSAL ? tj::minimum(len, start_m + BLOCK_M) : len;
    auto [m_i, l_i, acc] = attend<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T>(
        q_tile, rm, tj::scalar<std::int32_t>(0), hi, scale_log2e,
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::load(k + tj::expand_dims<0>(seq0 + rn) * kv_row + kv_col + tj::expand_dims<1>(rd), tj::expand_dims<0>(rn < len), 0.0f);
        },
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::load(v + tj::expand_dims<1>(seq0 + rn) * kv_row + kv_col + tj::expand_dims<0>(rd), tj::expand_dims<1>(rn < len), 0.0f);
        });
    auto [out, lse_row] = attend_finish<BLOCK_M, HEAD_DIM>(m_i, l_i, acc);
    tj::store(o + q_ptrs, tj::cast<T>(out), tj::expand_dims<1>(row_ok));
    tj::store(lse + (seq0 + rm) * Hq + h, lse_row, row_ok);
  }
};

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashAttnFwdVarlenTma {
  void operator()(tj::Desc<T, BLOCK_M, 1, HEAD_DIM> q, tj::Desc<T, BLOCK_N, 1, HEAD_DIM> k, tj::Desc<T, BLOCK_N, 1, HEAD_DIM> v,
                  tj::Ptr<T> o, tj::Ptr<float> lse, tj::Ptr<std::int32_t> cu_seqlens, tj::Size Hq, tj::Size group,
                  tj::Scalar<float> scale_log2e) const {
    auto start_m = tj::program_id(0) * BLOCK_M;
    auto h = tj::program_id(1);
    auto b = tj::program_id(2);
    const tj::Int seq0 = tj::load(cu_seqlens + b);
    const tj::Int len = tj::load(cu_seqlens + b + 1) - seq0;
    auto rm = start_m + tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto row_ok = rm < len;
    auto q_tile = q.load(seq0 + start_m, h, 0);
    // Keys [0, hi): none for a program past its sequence's end.
    const tj::Int hi = tj::where(start_m < len, CAUSAL ? tj::minimum(len, start_m + BLOCK_M) : len, tj::scalar<std::int32_t>(0));
    const tj::Int edge = CAUSAL ? start_m - (BLOCK_N - 2) : len - (BLOCK_N - 1);  // FwdRows::mask_edge
    const KvVarlen kv{seq0, h / group};
    auto v_last = kv_block(v, kv, tj::maximum(hi - 1, 0) / BLOCK_N * BLOCK_N);  // the last block's V, copied once
    auto [m_i, l_i, acc, p_last] =
        fa3_keys<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T, KeyMask::edge_blocks>(q_tile, k, v, kv, rm, hi, edge, scale_log2e);
    auto [out, lse_row] = attend_finish<BLOCK_M, HEAD_DIM>(m_i, l_i, tj::dot(p_last, v_last, acc));
    auto q_ptrs = tj::expand_dims<1>(seq0 + rm) * (Hq * HEAD_DIM) + h * HEAD_DIM + tj::expand_dims<0>(rd);
    tj::store(o + q_ptrs, tj::cast<T>(out), tj::expand_dims<1>(row_ok));
    tj::store(lse + (seq0 + rm) * Hq + h, lse_row, row_ok);
  }
};

}  // namespace examples

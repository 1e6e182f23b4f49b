// examples/attention/flash_bwd.hpp — FlashAttention-2's backward pass in the
// DSL, without atomics: three launches.
//
//   1. FlashBwdPreprocess, grid (cdiv(S, BLOCK_M), B·Hq):   delta = rowsum(dO ∘ O)            [B·Hq, S] f32
//   2. FlashBwdKV,         grid (cdiv(S, BLOCK_N), B·Hkv):  per block of keys, over every query
//      head of its group and every query block: Pᵀ = exp(Sᵀ − lse), dV += Pᵀ·dO,
//      dPᵀ = V·dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − delta), dK += dSᵀ·Q · scale.
//   3. FlashBwdQ,          grid (cdiv(S, BLOCK_M), B·Hq):   per block of queries, over the keys:
//      P = exp(S − lse), dP = dO·Vᵀ, dS = P ∘ (dP − delta), dQ += dS·K · scale.
//
// Every product is computed in the orientation it is needed (Sᵀ = K·Qᵀ with Qᵀ
// loaded transposed by pointer arithmetic), so no tile is transposed in
// registers; P and dS are rounded to the input type for the tensor cores, as
// FlashAttention does. Shapes as flash_fwd.hpp: q, k, v, o, do and the
// gradients row-major [B·H, S, D]; lse and delta [B·Hq, S]; `scale` is the
// softmax scale, `scale_log2e` = scale · log2(e). Source: Dao,
// FlashAttention-2 (arXiv 2307.08691), Algorithm 2.
#pragma once
#include "examples/attention/flash_fwd.hpp"

namespace examples {

/// How a backward step masks its probabilities. MaskEvery: every block (the pointer kernels). MaskWhen: only the
/// blocks whose `trip` is 1 — a loop of 0 or 1 iterations around the compares and the select, as the forward's
/// mask_scores_from — where trip 0 promises every score of the block is visible (its rows and keys < S and, causal,
/// no key after a row). `mask_of()` builds the mask inside the loop, so a block that needs none skips it entirely.
struct MaskEvery {
  template <class MaskOf, class P>
  auto operator()(MaskOf mask_of, const P& p) const {
    return tj::where(mask_of(), p, 0.0f);
  }
};
struct MaskWhen {
  tj::Int trip;
  template <class MaskOf, class P>
  auto operator()(MaskOf mask_of, const P& p) const {
    return tj::for_range(0, trip, 1, p, [&](tj::Int, auto q) { return tj::where(mask_of(), q, 0.0f); });
  }
};

/// One query block's share of a key block's gradients (FlashAttention-2,
/// Algorithm 2, transposed): from the raw Sᵀ = K·Qᵀ [BLOCK_N, BLOCK_M] of keys
/// rn and queries rm and dPᵀ = V·dOᵀ = dpt_of() (called after dV's product, so
/// only one score tile is live at a time), Pᵀ = exp2(Sᵀ·scale − lse) (0 where
/// masked: a key past S or, causal, a key after its query), dV += Pᵀ·dO,
/// dSᵀ = Pᵀ ∘ (dPᵀ − delta), dK += dSᵀ·Q (unscaled). lse_l2 is the LSE in log2
/// units; do_op and q_op are dO and Q [BLOCK_M, D] in whatever form the
/// caller holds them (registers or TMA blocks). `ds_sink` is called with dSᵀ
/// rounded to T [BLOCK_N, BLOCK_M] after dK's product (the fused backward adds
/// its dQ share there; NoDsSink does nothing). Returns (dK, dV).
struct NoDsSink {
  template <class X>
  void operator()(const X&) const {}
};
template <bool CAUSAL, class T, class St, class DptOf, class Rn, class Rm, class KeyOk, class RowOk, class Lse, class Dlt, class DoOp,
          class QOp, class Acc, class DsSink = NoDsSink, class Masker = MaskEvery>
auto bwd_kv_step(const St& st, DptOf dpt_of, const Rn& rn, const Rm& rm, const KeyOk& key_ok, const RowOk& row_ok,
                 const Lse& lse_l2, const Dlt& dlt, const tj::Scalar<float>& scale_log2e, const DoOp& do_op, const QOp& q_op,
                 const Acc& dk_acc, const Acc& dv_acc, DsSink ds_sink = {}, Masker masker = {}) {
  auto mask_of = [&] {
    auto ok = tj::expand_dims<1>(key_ok) & tj::expand_dims<0>(row_ok);
    if constexpr (CAUSAL)
      return ok & (tj::expand_dims<1>(rn) <= tj::expand_dims<0>(rm));
    else
      return ok;
  };
  auto pt = masker(mask_of, tj::exp2(st * scale_log2e - tj::expand_dims<0>(lse_l2)));
  auto dv_new = tj::dot(tj::cast<T>(pt), do_op, dv_acc);
  auto dst = tj::cast<T>(pt * (dpt_of() - tj::expand_dims<0>(dlt)));
  auto dk_new = tj::dot(dst, q_op, dk_acc);
  ds_sink(dst);
  return std::tuple{dk_new, dv_new};
}

/// One key block's share of a query block's dQ: from the raw S = Q·Kᵀ
/// [BLOCK_M, BLOCK_N] and dP = dO·Vᵀ = dp_of() (called after P is formed),
/// P = exp2(S·scale − lse) (masked as above),
/// dS = P ∘ (dP − delta), dQ += dS·K (unscaled); k_op is K [BLOCK_N, D].
template <bool CAUSAL, class T, class Sc, class DpOf, class Rm, class Rn, class RowOk, class KeyOk, class Lse, class Dlt, class KOp,
          class Acc, class Masker = MaskEvery>
auto bwd_q_step(const Sc& s, DpOf dp_of, const Rm& rm, const Rn& rn, const RowOk& row_ok, const KeyOk& key_ok, const Lse& lse_l2,
                const Dlt& dlt, const tj::Scalar<float>& scale_log2e, const KOp& k_op, const Acc& dq_acc, Masker masker = {}) {
  auto mask_of = [&] {
    auto ok = tj::expand_dims<1>(row_ok) & tj::expand_dims<0>(key_ok);
    if constexpr (CAUSAL)
      return ok & (tj::expand_dims<1>(rm) >= tj::expand_dims<0>(rn));
    else
      return ok;
  };
  auto p = masker(mask_of, tj::exp2(s * scale_log2e - tj::expand_dims<1>(lse_l2)));
  auto ds = p * (dp_of() - tj::expand_dims<1>(dlt));
  return tj::dot(tj::cast<T>(ds), k_op, dq_acc);
}

template <int BLOCK_M, int HEAD_DIM, class T>
struct FlashBwdPreprocess {
  void operator()(tj::Ptr<T> o, tj::Ptr<T> d_o, tj::Ptr<float> delta, tj::Size S) const {
    auto bh = tj::program_id(1);
    auto rm = tj::program_id(0) * BLOCK_M + tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto ptrs = bh * S * HEAD_DIM + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd);
    auto ok = tj::expand_dims<1>(rm < S);
    auto prod = tj::cast<float>(tj::load(o + ptrs, ok, 0.0f)) * tj::cast<float>(tj::load(d_o + ptrs, ok, 0.0f));
    tj::store(delta + bh * S + rm, tj::sum<1>(prod), rm < S);
  }
};

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashBwdKV {
  void operator()(tj::Ptr<T> q, tj::Ptr<T> k, tj::Ptr<T> v, tj::Ptr<T> d_o, tj::Ptr<float> lse, tj::Ptr<float> delta,
                  tj::Ptr<T> dk, tj::Ptr<T> dv, tj::Size S, tj::Size group, tj::Scalar<float> scale,
                  tj::Scalar<float> scale_log2e) const {
    constexpr float kLog2e = 1.4426950408889634f;
    auto start_n = tj::program_id(0) * BLOCK_N;
    auto bkv = tj::program_id(1);
    auto rn = start_n + tj::arange<BLOCK_N>();
    auto rd = tj::arange<HEAD_DIM>();
    auto kv_ptrs = bkv * S * HEAD_DIM + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd);
    auto key_ok = rn < S;
    auto k_tile = tj::load(k + kv_ptrs, tj::expand_dims<1>(key_ok), 0.0f);
    auto v_tile = tj::load(v + kv_ptrs, tj::expand_dims<1>(key_ok), 0.0f);
    // Causal: query rows before this key block see none of it.
    auto m_lo = CAUSAL ? start_n / BLOCK_M * BLOCK_M : tj::scalar<std::int32_t>(0);
    auto init = std::tuple{tj::zeros<float, BLOCK_N, HEAD_DIM>(), tj::zeros<float, BLOCK_N, HEAD_DIM>()};
    auto [dk_acc, dv_acc] = tj::for_range(0, group, 1, init, [&](tj::Int g, auto dk_g, auto dv_g) {
      auto bh = bkv * group + g;  // a query head of this KV head
      return tj::for_range(m_lo, S, BLOCK_M, std::tuple{dk_g, dv_g}, [&](tj::Int m0, auto dk_acc, auto dv_acc) {
        auto rm = m0 + tj::arange<BLOCK_M>();
        auto row_ok = rm < S;
        auto base = bh * S * HEAD_DIM;
        auto qt = tj::load(q + base + tj::expand_dims<0>(rm) * HEAD_DIM + tj::expand_dims<1>(rd), tj::expand_dims<0>(row_ok), 0.0f);
        auto dot_t = tj::load(d_o + base + tj::expand_dims<0>(rm) * HEAD_DIM + tj::expand_dims<1>(rd), tj::expand_dims<0>(row_ok), 0.0f);
        auto q_tile = tj::load(q + base + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(row_ok), 0.0f);
        auto do_tile = tj::load(d_o + base + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(row_ok), 0.0f);
        auto lse_l2 = tj::load(lse + bh * S + rm, row_ok, 0.0f) * kLog2e;
        auto dlt = tj::load(delta + bh * S + rm, row_ok, 0.0f);
        auto dpt_of = [&] { return tj::dot(v_tile, dot_t); };
        return bwd_kv_step<CAUSAL, T>(tj::dot(k_tile, qt), dpt_of, rn, rm, key_ok, row_ok, lse_l2, dlt, scale_log2e,
                                      do_tile, q_tile, dk_acc, dv_acc);
      });
    });
    tj::store(dk + kv_ptrs, tj::cast<T>(dk_acc * scale), tj::expand_dims<1>(key_ok));
    tj::store(dv + kv_ptrs, tj::cast<T>(dv_acc), tj::expand_dims<1>(key_ok));
  }
};

template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T>
struct FlashBwdQ {
  void operator()(tj::Ptr<T> q, tj::Ptr<T> k, tj::Ptr<T> v, tj::Ptr<T> d_o, tj::Ptr<float> lse, tj::Ptr<float> delta,
                  tj::Ptr<T> dq, tj::Size S, tj::Size group, tj::Scalar<float> scale, tj::Scalar<float> scale_log2e) const {
    constexpr float kLog2e = 1.4426950408889634f;
    auto start_m = tj::program_id(0) * BLOCK_M;
    auto bh = tj::program_id(1);
    auto rm = start_m + tj::arange<BLOCK_M>();
    auto rd = tj::arange<HEAD_DIM>();
    auto row_ok = rm < S;
    auto q_ptrs = bh * S * HEAD_DIM + tj::expand_dims<1>(rm) * HEAD_DIM + tj::expand_dims<0>(rd);
    auto q_tile = tj::load(q + q_ptrs, tj::expand_dims<1>(row_ok), 0.0f);
    auto do_tile = tj::load(d_o + q_ptrs, tj::expand_dims<1>(row_ok), 0.0f);
    auto lse_l2 = tj::load(lse + bh * S + rm, row_ok, 0.0f) * kLog2e;
    auto dlt = tj::load(delta + bh * S + rm, row_ok, 0.0f);
    auto kv_base = (bh / group) * S * HEAD_DIM;
    auto hi = CAUSAL ? tj::minimum(S, start_m + BLOCK_M) : tj::Int(S);
    auto dq_acc = tj::for_range(0, hi, BLOCK_N, tj::zeros<float, BLOCK_M, HEAD_DIM>(), [&](tj::Int n0, auto dq_acc) {
      auto rn = n0 + tj::arange<BLOCK_N>();
      auto key_ok = rn < S;
      auto kt_ptrs = kv_base + tj::expand_dims<0>(rn) * HEAD_DIM + tj::expand_dims<1>(rd);
      auto kt = tj::load(k + kt_ptrs, tj::expand_dims<0>(key_ok), 0.0f);
      auto vt = tj::load(v + kt_ptrs, tj::expand_dims<0>(key_ok), 0.0f);
      auto k_tile = tj::load(k + kv_base + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(key_ok), 0.0f);
      auto dp_of = [&] { return tj::dot(do_tile, vt); };
      return bwd_q_step<CAUSAL, T>(tj::dot(q_tile, kt), dp_of, rm, rn, row_ok, key_ok, lse_l2, dlt, scale_log2e, k_tile,
                                   dq_acc);
    });
    tj::store(dq + q_ptrs, tj::cast<T>(dq_acc * scale), tj::expand_dims<1>(row_ok));
  }
};

}  // namespace examples

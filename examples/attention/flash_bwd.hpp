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
        auto st = tj::dot(k_tile, qt) * scale_log2e;  // Sᵀ [BLOCK_N, BLOCK_M], log2 units
        auto ok = tj::expand_dims<1>(key_ok) & tj::expand_dims<0>(row_ok);
        auto mask = CAUSAL ? (ok & (tj::expand_dims<1>(rn) <= tj::expand_dims<0>(rm))) : ok;
        auto pt = tj::where(mask, tj::exp2(st - tj::expand_dims<0>(lse_l2)), 0.0f);
        auto dv_new = tj::dot(tj::cast<T>(pt), do_tile, dv_acc);
        auto dpt = tj::dot(v_tile, dot_t);  // dPᵀ [BLOCK_N, BLOCK_M]
        auto dst = pt * (dpt - tj::expand_dims<0>(dlt));
        auto dk_new = tj::dot(tj::cast<T>(dst), q_tile, dk_acc);
        return std::tuple{dk_new, dv_new};
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
      auto s = tj::dot(q_tile, kt) * scale_log2e;
      auto ok = tj::expand_dims<1>(row_ok) & tj::expand_dims<0>(key_ok);
      auto mask = CAUSAL ? (ok & (tj::expand_dims<1>(rm) >= tj::expand_dims<0>(rn))) : ok;
      auto p = tj::where(mask, tj::exp2(s - tj::expand_dims<1>(lse_l2)), 0.0f);
      auto dp = tj::dot(do_tile, vt);
      auto ds = p * (dp - tj::expand_dims<1>(dlt));
      return tj::dot(tj::cast<T>(ds), k_tile, dq_acc);
    });
    tj::store(dq + q_ptrs, tj::cast<T>(dq_acc * scale), tj::expand_dims<1>(row_ok));
  }
};

}  // namespace examples

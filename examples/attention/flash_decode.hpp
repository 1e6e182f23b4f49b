// examples/attention/flash_decode.hpp — decode attention (one query token per
// sequence against a long KV cache), split along the cache (flash-decoding:
// Dao et al., "Flash-Decoding for long-context inference", 2023).
//
// Launch 1, FlashDecodeSplit, grid (B·Hkv, splits): a program takes the
// `group` query heads that share one KV head as the rows of its tile (padded
// to ROWS = 16, the smallest mma tile; extra rows are masked), so each KV
// element is read once for the whole group, and runs the forward's online
// softmax (`attend`) over its chunk [split·chunk, min(len, (split+1)·chunk)) of
// the cache. K and V tiles are read as row-major [BLOCK_N, D] blocks (16-byte
// loads along D; Kᵀ is the K tile transposed in registers) and converted to
// the mma operand layouts through shared memory (ir/layout_plan.hpp). It
// writes the partial (m, l) and the unnormalised O of each head.
// Launch 2, FlashDecodeReduce, grid (B·Hq): merges the splits of one head —
// m* = max m_s, l = Σ l_s·2^(m_s − m*), O = Σ O_s·2^(m_s − m*) / l — and writes
// O and the natural-log LSE (-1e30 and O = 0 for an empty cache).
//
// Shapes: q, o [B, Hq, D]; k, v [B, Hkv, S_max, D] (the cache, row-major);
// seqlens [B] i32 (tokens in each cache, <= S_max); o_part [splits, B·Hq, D]
// f32, ml_part [splits, B·Hq, 2] f32 (m in log2 units, l).
#pragma once
#include "examples/attention/flash_fwd.hpp"

namespace examples {

template <int BLOCK_N, int HEAD_DIM, class T, int ROWS = 16>
struct FlashDecodeSplit {
  void operator()(tj::Ptr<T> q, tj::Ptr<T> k, tj::Ptr<T> v, tj::Ptr<std::int32_t> seqlens, tj::Ptr<float> o_part,
                  tj::Ptr<float> ml_part, tj::Size Hq, tj::Size group, tj::Size S_max, tj::Size chunk,
                  tj::Scalar<float> scale_log2e) const {
    auto bkv = tj::program_id(0);  // b · Hkv + kv head
    auto split = tj::program_id(1);
    auto Hkv = Hq / group;
    auto b = bkv / Hkv;
    auto len = tj::load(seqlens + b);
    auto lo = split * chunk;
    auto hi = tj::minimum(len, lo + chunk);
    auto r = tj::arange<ROWS>();            // row r = query head (bkv % Hkv) · group + r
    auto head = b * Hq + (bkv % Hkv) * group + r;
    auto row_ok = r < group;
    auto rd = tj::arange<HEAD_DIM>();
    auto q_tile = tj::load(q + tj::expand_dims<1>(head) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(row_ok), 0.0f);
    auto kv_base = bkv * S_max * HEAD_DIM;
    // Non-causal: the one new token sees the whole cache; rows are heads, not positions. Both cache tiles are
    // read row-major, [BLOCK_N, D] with D contiguous (16-byte loads); Kᵀ is the K tile transposed in registers.
    auto [m_i, l_i, acc] = attend<ROWS, BLOCK_N, HEAD_DIM, false, T>(
        q_tile, r, lo, hi, scale_log2e,
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::trans(tj::load(k + kv_base + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd),
                                    tj::expand_dims<1>(rn < hi), 0.0f));
        },
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::load(v + kv_base + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(rn < hi), 0.0f);
        });
    auto BHq = tj::num_programs(0) / Hkv * Hq;  // B · Hq
    auto slot = split * BHq + head;
    tj::store(o_part + tj::expand_dims<1>(slot) * HEAD_DIM + tj::expand_dims<0>(rd), acc, tj::expand_dims<1>(row_ok));
    tj::store(ml_part + slot * 2, m_i, row_ok);
    tj::store(ml_part + slot * 2 + 1, l_i, row_ok);
  }
};

template <int HEAD_DIM, class T>
struct FlashDecodeReduce {
  void operator()(tj::Ptr<float> o_part, tj::Ptr<float> ml_part, tj::Ptr<T> o, tj::Ptr<float> lse, tj::Size splits) const {
    auto bh = tj::program_id(0);
    auto BHq = tj::num_programs(0);
    auto rd = tj::arange<HEAD_DIM>();
    auto init = std::tuple{tj::scalar<float>(kAttnNegBig), tj::scalar<float>(0), tj::zeros<float, HEAD_DIM>()};
    auto [m, l, acc] = tj::for_range(0, splits, 1, init, [&](tj::Int s, auto m, auto l, auto acc) {
      auto slot = s * BHq + bh;
      auto m_s = tj::load(ml_part + slot * 2);
      auto l_s = tj::load(ml_part + slot * 2 + 1);
      auto m_new = tj::maximum(m, m_s);
      auto a = tj::exp2(m - m_new), a_s = tj::exp2(m_s - m_new);
      return std::tuple{m_new, l * a + l_s * a_s, acc * a + tj::load(o_part + slot * HEAD_DIM + rd) * a_s};
    });
    auto has = l > 0.0f;
    auto safe_l = tj::where(has, l, 1.0f);
    tj::store(o + bh * HEAD_DIM + rd, tj::cast<T>(tj::where(has, acc / safe_l, 0.0f)));
    tj::store(lse + bh, tj::where(has, m * kAttnLn2 + tj::log(safe_l), kAttnNegBig));
  }
};

}  // namespace examples

// examples/attention/flash_decode.hpp — decode attention (one or a few query
// tokens per sequence against a long KV cache), split along the cache
// (flash-decoding: Dao et al., "Flash-Decoding for long-context inference", 2023).
//
// Launch 1, FlashDecodeSplit, grid (B·Hkv, splits): a program takes the
// `group` query heads that share one KV head, for each of the `tokens` new
// query tokens, as the rows of its tile (row r = token r / group, head
// r % group; padded to ROWS, 16 or 64; extra rows are masked), so each KV
// element is read once for all of them, and runs the forward's online softmax
// (`attend`) over its chunk [split·chunk, min(len, (split+1)·chunk)) of the
// cache. The new tokens' keys and values are already in the cache: token t sits
// at position len − tokens + t and sees keys [0, len − tokens + t] (causal,
// aligned to the cache's end, as FlashAttention's flash_attn_with_kvcache
// does); with one token that is the whole cache. K and V tiles are read as
// row-major [BLOCK_N, D] blocks (16-byte loads along D; Kᵀ is the K tile
// transposed in registers) and converted to the mma operand layouts through
// shared memory (ir/layout_plan.hpp). It writes the partial (m, l) and the
// unnormalised O of each row.
// On Hopper, FlashDecodeSplitTma is launch 1 instead: the same grid, rows and
// partials, with 64 rows (one warp group's wgmma M) and the cache streamed by
// TMA into wgmma with no register round trip (see its comment).
// Launch 2, FlashDecodeReduce, grid (B·tokens·Hq): merges the splits of one row —
// m* = max m_s, l = Σ l_s·2^(m_s − m*), O = Σ O_s·2^(m_s − m*) / l — and writes
// O and the natural-log LSE (-1e30 and O = 0 for a row that sees no key: an
// empty cache, or a token whose position is negative because len < tokens).
//
// Shapes: q, o [B, tokens, Hq, D]; k, v [B, Hkv, S_max, D] (the cache,
// row-major); seqlens [B] i32 (tokens in each cache, the new ones included,
// <= S_max); o_part [splits, B·tokens·Hq, D] f32, ml_part [splits,
// B·tokens·Hq, 2] f32 (m in log2 units, l).
#pragma once
#include "examples/attention/flash_fwd.hpp"

namespace examples {

/// What both split kernels compute per program before and after their loops:
/// the KV head and split, the key range [lo, hi) of this split (hi < lo for a
/// split past the cache's length: nothing to read), the rows (token × query
/// head of the group, padded to ROWS), each row's position in the sequence
/// (`pos`: it sees keys <= pos) and the partials' epilogue. Traced in this order.
/// MULTI = false: one token per sequence (the caller's promise, tokens = 1):
/// row r is query head r of the group and sees the whole cache, so no row
/// index is divided by the group size — a division the code generator cannot
/// rematerialise, which would send the row vectors through shared memory.
template <int ROWS, int HEAD_DIM, bool MULTI = true>
struct DecodeRows {
  tj::Int bkv, split, Hkv, b, len, lo, hi;
  tj::Tile<std::int32_t, ROWS> r, head;   // row r = token r / group, query head (bkv % Hkv) · group + r % group;
                                          // head: its row in q [B·tokens·Hq, D]
  tj::Tile<bool, ROWS> row_ok;            // r < group · tokens
  tj::Tile<std::int32_t, ROWS> pos;       // len − tokens + r / group (MULTI only; else r)
  tj::Tile<std::int32_t, HEAD_DIM> rd;
  DecodeRows(const tj::Ptr<std::int32_t>& seqlens, const tj::Size& Hq, const tj::Size& group, const tj::Size& chunk,
             const tj::Size& tokens)
      : bkv(tj::program_id(0)),  // b · Hkv + kv head
        split(tj::program_id(1)), Hkv(Hq / group), b(bkv / Hkv), len(tj::load(seqlens + b)), lo(split * chunk),
        hi(tj::minimum(len, lo + chunk)), r(tj::arange<ROWS>()),
        head(MULTI ? (b * tokens + r / group) * Hq + (bkv % Hkv) * group + r % group : b * Hq + (bkv % Hkv) * group + r),
        row_ok(MULTI ? r < group * tokens : r < group), pos(MULTI ? len - tokens + r / group : r), rd(tj::arange<HEAD_DIM>()) {}
  /// The rows the masks compare keys against: positions (keys <= pos) when MULTI, else the rows themselves (>= 0:
  /// every key below hi).
  const tj::Tile<std::int32_t, ROWS>& mask_rows() const { return MULTI ? pos : r; }
  /// The rows of q [B·tokens·Hq, D] (rows >= group · tokens read as 0).
  template <class T>
  auto load_q(const tj::Ptr<T>& q) const {
    return tj::load(q + tj::expand_dims<1>(head) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(row_ok), 0.0f);
  }
  /// The rows' partial (m, l) and unnormalised O into ml_part and o_part (rows < group · tokens only).
  template <class M, class L, class Acc>
  void store(const tj::Ptr<float>& o_part, const tj::Ptr<float>& ml_part, const tj::Size& Hq, const tj::Size& tokens, const M& m_i,
             const L& l_i, const Acc& acc) const {
    auto rows = tj::num_programs(0) / Hkv * tokens * Hq;  // B · tokens · Hq
    auto slot = split * rows + head;
    tj::store(o_part + tj::expand_dims<1>(slot) * HEAD_DIM + tj::expand_dims<0>(rd), acc, tj::expand_dims<1>(row_ok));
    tj::store(ml_part + slot * 2, m_i, row_ok);
    tj::store(ml_part + slot * 2 + 1, l_i, row_ok);
  }
};

/// MULTI = false: tokens = 1 (the caller's promise; see DecodeRows).
template <int BLOCK_N, int HEAD_DIM, class T, int ROWS = 16, bool MULTI = true>
struct FlashDecodeSplit {
  void operator()(tj::Ptr<T> q, tj::Ptr<T> k, tj::Ptr<T> v, tj::Ptr<std::int32_t> seqlens, tj::Ptr<float> o_part,
                  tj::Ptr<float> ml_part, tj::Size Hq, tj::Size group, tj::Size S_max, tj::Size chunk, tj::Size tokens,
                  tj::Scalar<float> scale_log2e) const {
    const DecodeRows<ROWS, HEAD_DIM, MULTI> p(seqlens, Hq, group, chunk, tokens);
    const auto& rd = p.rd;
    const auto& hi = p.hi;
    auto q_tile = p.load_q(q);
    auto kv_base = p.bkv * S_max * HEAD_DIM;
    // Causal by position: row r sees keys <= pos[r] (with one token, pos = len − 1: the whole cache). Both cache
    // tiles are read row-major, [BLOCK_N, D] with D contiguous (16-byte loads); Kᵀ is the K tile transposed in
    // registers.
    auto [m_i, l_i, acc] = attend<ROWS, BLOCK_N, HEAD_DIM, MULTI, T>(
        q_tile, p.mask_rows(), p.lo, hi, scale_log2e,
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::trans(tj::load(k + kv_base + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd),
                                    tj::expand_dims<1>(rn < hi), 0.0f));
        },
        [&](const tj::Int& n0) {
          auto rn = n0 + tj::arange<BLOCK_N>();
          return tj::load(v + kv_base + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(rd), tj::expand_dims<1>(rn < hi), 0.0f);
        });
    p.store(o_part, ml_part, Hq, tokens, m_i, l_i, acc);
  }
};

/// FlashDecodeSplit on Hopper: the same grid, rows, partials and results, with
/// the cache streamed by TMA and read in place by wgmma.
///
/// k_desc and v_desc see the caches as 2-D [B·Hkv·S_max, D] tensors with
/// [BLOCK_N, D] blocks; this program's rows start at bkv·S_max.
///   - The whole blocks of its range that every row sees entirely, keys [lo,
///     whole) with whole = lo + ⌊(vis − lo) / BLOCK_N⌋·BLOCK_N and vis =
///     min(hi, len − tokens + 1) (the first token's last key + 1), run through
///     `attend_from` with descriptor loads at the loop's induction variable: on
///     sm_90a a num_stages TMA + mbarrier ring (filled by a producer warp group
///     with CompileOptions::warp_specialize), S = Q·Kᵀ with Q in registers
///     (wgmma's register-A form) and Kᵀ the K-major trans of the K block, O +=
///     P·V with P in registers and V read MN-major. No key of a whole block is
///     masked.
///   - The tail, keys [whole, hi) (fewer than 2·BLOCK_N, as tokens <= 64 =
///     BLOCK_N; fewer than BLOCK_N with one token; only in the split that holds
///     the cache's end), is two more online-softmax steps (one without MULTI),
///     at whole and whole + BLOCK_N, run first by every
///     program: each K block is copied once by TMA (from row −BLOCK_N, wholly
///     out of bounds and so TMA's zero fill, when the step has no key), keys >=
///     hi or past a row's position are masked, and V rows are masked pointer
///     loads from v (the cache itself, [B, Hkv, S_max, D]).
/// So no V row at or past seqlens[b] is ever read: cache slots past a
/// sequence's length may hold anything, NaN included, as with
/// FlashDecodeSplit. (A TMA V block reaching past hi would feed them to P·V,
/// where 0·NaN = NaN; K rows past hi are harmless, their scores are replaced.)
///
/// ROWS = 64, the wgmma M of one warp group (num_warps = 4); rows >= group ·
/// tokens are zero queries whose results are not stored. `chunk` should be a
/// multiple of BLOCK_N, so that only the split holding the cache's end has a
/// tail. MULTI = false (the caller's promise that tokens = 1: DecodeRows; the
/// tail is then shorter than a block) runs one tail step: the second costs
/// 1-2% of the decode's time on the H200 (docs/perf.md v0.12). Off sm_90a (the
/// interpreter, sm_80, HIP) the descriptor loads are masked loads and the
/// kernel computes the same.
template <int BLOCK_N, int HEAD_DIM, class T, int ROWS = 64, bool MULTI = true>
struct FlashDecodeSplitTma {
  void operator()(tj::Ptr<T> q, tj::Desc<T, BLOCK_N, HEAD_DIM> k_desc, tj::Desc<T, BLOCK_N, HEAD_DIM> v_desc, tj::Ptr<T> v,
                  tj::Ptr<std::int32_t> seqlens, tj::Ptr<float> o_part, tj::Ptr<float> ml_part, tj::Size Hq, tj::Size group,
                  tj::Size S_max, tj::Size chunk, tj::Size tokens, tj::Scalar<float> scale_log2e) const {
    const DecodeRows<ROWS, HEAD_DIM, MULTI> p(seqlens, Hq, group, chunk, tokens);
    const auto& hi = p.hi;
    auto q_tile = p.load_q(q);
    auto kv_row = p.bkv * S_max;  // this KV head's first row in the 2-D view
    auto vis = MULTI ? tj::maximum(tj::minimum(hi, p.len - tokens + 1), p.lo) : tj::maximum(hi, p.lo);  // seen by every row
    auto whole = p.lo + (vis - p.lo) / BLOCK_N * BLOCK_N;               // end of the whole, unmasked blocks
    // The tail first (the online softmax does not care about the order of its blocks): Q is converted to the
    // wgmma operand layout once, before the loop, for both products that read it.
    auto state = attend_init<ROWS, HEAD_DIM>();
    for (int step = 0; step < (MULTI ? 2 : 1); ++step) {
      auto n0 = whole + step * BLOCK_N;
      auto k_row = tj::where(n0 < hi, kv_row + n0, -BLOCK_N);
      state = online_softmax_step<BLOCK_N, MULTI, T>(
          tj::dot(q_tile, tj::trans(k_desc.load(k_row, 0))), p.mask_rows(), n0, hi, scale_log2e, std::get<0>(state), std::get<1>(state),
          std::get<2>(state), [&](const tj::Int& n) {
            auto rn = n + tj::arange<BLOCK_N>();
            return tj::load(v + kv_row * HEAD_DIM + tj::expand_dims<1>(rn) * HEAD_DIM + tj::expand_dims<0>(p.rd),
                            tj::expand_dims<1>(rn < hi), 0.0f);
          });
    }
    auto [m_i, l_i, acc] = attend_from<ROWS, BLOCK_N, HEAD_DIM, false, T, /*MASK=*/false>(
        state, q_tile, p.r, p.lo, whole, scale_log2e,
        [&](const tj::Int& n0) { return tj::trans(k_desc.load(kv_row + n0, 0)); },
        [&](const tj::Int& n0) { return v_desc.load(kv_row + n0, 0); });
    p.store(o_part, ml_part, Hq, tokens, m_i, l_i, acc);
  }
};

/// The tiles Attention<T>::decode runs FlashDecodeSplitTma with (num_warps = 4): 64-key blocks, a ring of 4
/// stages filled by a producer warp group (one program per SM: 170 KB of shared memory at D = 96 / 128).
struct FlashDecodeTmaConfig {
  static constexpr int block_n = 64, stages = 4;
  static constexpr bool warp_specialize = true;
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
    auto has = l != 0.0f;  // false only for an empty cache; NaN (NaN in q or the cache) stays NaN
    auto safe_l = tj::where(has, l, 1.0f);
    tj::store(o + bh * HEAD_DIM + rd, tj::cast<T>(tj::where(has, acc / safe_l, 0.0f)));
    tj::store(lse + bh, tj::where(has, m * kAttnLn2 + tj::log(safe_l), kAttnNegBig));
  }
};

}  // namespace examples

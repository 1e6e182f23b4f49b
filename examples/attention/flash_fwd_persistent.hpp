// examples/attention/flash_fwd_persistent.hpp — the Hopper forward of
// flash_fwd_tma.hpp (FlashAttention-3's order, edge-masked) as a persistent
// kernel: one program per SM, each walking a list of work items, an item being
// one query block of one head.
//
// Why: at 128 x 128 tiles with a producer warp group only one program fits on
// an SM, so with one program per item every item's prologue (the Q copy, the
// ring's first K and V copies) and epilogue (O and LSE stores) leave the tensor
// cores idle. Here the producer warp group walks the same items as the
// consumers: the next item's Q block and first K/V blocks are copied while the
// consumers finish this item (its last P·V, the epilogue). The code generator
// gives the item loop's own blocks (Q, and the last V block that
// FlashAttention-3's order multiplies after the key loop) one shared-memory
// buffer each, copied once per item and released after their last reader
// (codegen, "ItemBlock"); the key loop keeps its TMA ring, which runs on across
// items.
//
// Item order (FwdItems):
//   - causal: heaviest first — the query blocks with the longest key ranges
//     first (longest-processing-time order, as FlashAttention-3's causal
//     scheduler does), within sections of heads whose K and V fit in 32 MiB of
//     L2 (FlashAttention-3 sizes its sections the same way); program p takes
//     items p, p + P, p + 2P, ... of that list (P programs);
//   - full: head by head (query blocks of one head consecutive), so the
//     programs running together share a few KV heads in L2.
// The schedule is static (no atomic counter): a program's items are known
// from its id, which the producer warp group needs to walk them on its own.
//
// Same arguments, shapes and results as FlashAttnFwdTmaPingPongEdge
// (flash_fwd_tma.hpp): q, o [B·Hq, S, D]; k, v [B·Hkv, S, D]; lse [B·Hq, S];
// descriptors over q as [B·Hq·S, D] (the head count is read from it: its rows
// / S) and k, v as [B·Hkv·S, D]; any S; GQA (group = Hq / Hkv); causal or not.
// Grid: fwd_persistent_grid() (one dimension, min(items, SMs) programs); any
// other positive number of programs also gives the right result. Compiled with
// CompileOptions{.num_warps = 8, .num_stages = 2, .warp_specialize = true} at
// 128 x 128 (a producer warp group, two consumer warp groups of 64 rows).
// V must be finite where it is read, as for FlashAttnFwdTmaPingPongBody (with
// S a multiple of BLOCK_N every V row read is the item's own head's).
#pragma once
#include <algorithm>

#include "examples/attention/flash_fwd_tma.hpp"

namespace examples {

/// The K and V elements a causal section's heads may hold: 32 MiB, as FlashAttention-3 sizes its sections for the
/// 50 MB L2 of an H100 (the H200 has the same L2).
template <class T>
inline constexpr int kFwdSectionElems = (32 << 20) / static_cast<int>(sizeof(T));

/// The work items of a persistent forward: query block `block_m` of query head `bh`, item t of the order in the
/// file comment. The counts are computed once per program (outside the item loop); at() is a few integer
/// operations per item.
/// L2_ELEMS: the K and V elements of one KV head times the KV heads of a section may reach it (at least one KV
/// head per section).
template <int BLOCK_M, int HEAD_DIM, bool CAUSAL, class T, int L2_ELEMS = kFwdSectionElems<T>>
struct FwdItems {
  static constexpr int kL2Elems = L2_ELEMS / 2;  // elements of K (as many of V)
  tj::Int num_m, heads, count;
  tj::Int sec_heads;  ///< query heads per section (causal): whole groups, at least one KV head
  FwdItems(const tj::Int& q_rows, const tj::Size& S, const tj::Size& group)
      : num_m((S + (BLOCK_M - 1)) / BLOCK_M), heads(q_rows / S), count(num_m * heads),
        sec_heads(tj::maximum(kL2Elems / (S * HEAD_DIM), 1) * group) {}
  /// Item t: (query block, query head).
  std::pair<tj::Int, tj::Int> at(const tj::Int& t) const {
    if constexpr (CAUSAL) {
      const tj::Int per_sec = sec_heads * num_m;
      const tj::Int first = t / per_sec * sec_heads;                    // the section's first head
      const tj::Int n = tj::minimum(heads - first, sec_heads);         // its heads (the last one may have fewer)
      const tj::Int r = t % per_sec;                                    // < n · num_m
      return {num_m - 1 - r / n, first + r % n};                        // longest key range first, then head
    } else {
      return {t % num_m, t / num_m};
    }
  }
};

/// The persistent grid: one program per SM, never more programs than items (cdiv(S, block_m) · B·Hq).
inline tj::Grid fwd_persistent_grid(long long S, long long heads_q_total, int block_m, int programs) {
  const long long items = tj::cdiv(S, block_m) * heads_q_total;
  return tj::Grid{static_cast<int>(std::max(1LL, std::min<long long>(items, programs)))};
}

/// See the file comment. MASK: edge_blocks (any S), or none (full attention with S a multiple of BLOCK_N, the
/// caller's promise, as FlashAttnFwdTmaPingPongEvenN). L2_ELEMS: FwdItems' section size (tests make it small).
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, KeyMask MASK = KeyMask::edge_blocks,
          int L2_ELEMS = kFwdSectionElems<T>>
struct FlashAttnFwdTmaPersistent {
  static_assert(MASK != KeyMask::none || !CAUSAL, "causal attention masks its diagonal block");
  void operator()(tj::Desc<T, BLOCK_M, HEAD_DIM> q, tj::Desc<T, BLOCK_N, HEAD_DIM> k, tj::Desc<T, BLOCK_N, HEAD_DIM> v, tj::Ptr<T> o,
                  tj::Ptr<float> lse, tj::Size S, tj::Size group, tj::Scalar<float> scale_log2e) const {
    const FwdItems<BLOCK_M, HEAD_DIM, CAUSAL, T, L2_ELEMS> items(q.rows(), S, group);
    tj::for_range(tj::program_id(0), items.count, tj::num_programs(0), [&](tj::Int t) {
      const auto [block_m, bh] = items.at(t);
      const FwdRows<BLOCK_M, HEAD_DIM, CAUSAL> p(S, group, block_m, bh);
      auto q_tile = p.load_q(q, S);  // one buffer, copied per item (before the item's first K block)
      auto hi = p.hi(S);
      auto edge = MASK == KeyMask::edge_blocks ? p.template mask_edge<BLOCK_N>(S) : hi;
      auto [m_i, l_i, acc, p_last] =
          fa3_keys<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T, MASK>(q_tile, k, v, p.kv_row, p.rm, hi, edge, scale_log2e);
      // The last block's V, loaded after the key loop: the producer copies it after the item's K and V blocks, so
      // the next item's Q and first K / V copies are not held behind this item's last product.
      auto v_last = v.load(p.kv_row + (hi - 1) / BLOCK_N * BLOCK_N, 0);
      p.store(o, lse, S, m_i, l_i, tj::dot(p_last, v_last, acc));
    });
  }
};

}  // namespace examples

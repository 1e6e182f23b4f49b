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
// Which items each program runs (FwdItemTable, built on the host; the
// kernel reads it from memory):
//   - the list: causal — heaviest first (the query blocks with the longest key
//     ranges first, longest-processing-time order as FlashAttention-3's causal
//     scheduler), within sections of heads whose K and V fit in 8 MiB of L2
//     (FlashAttention-3 sizes its sections by L2 too, at 32 MiB, which on the
//     H200 re-read K and V from DRAM); the sections are made equal, so the
//     last one is not a sliver of heavy items at the end, and of the sizes
//     between the bound and half of it the builder keeps the one whose
//     assignment (below) ends most evenly;
//     full — head by head, so the programs running together share a few KV
//     heads in L2;
//   - the assignment: each item of the list, in order, to the program with the
//     least work so far (its key blocks plus one block for the item's prologue
//     and epilogue) — what a dynamic scheduler's atomic counter hands out when
//     the costs are right, computed once on the host. The producer warp group
//     walks the same list as the consumers (the table is read-only, so the
//     code generator lets the producer load it). Full attention's items are
//     equal, so the assignment is round robin, which the kernel computes from
//     its program id instead of loading (any grid then works; the table is
//     not read).
// Simulated at B·H = 128, S = 4096, 132 programs (busiest / average work):
// round robin over the old list 1.03 (D64, D128) and 1.10 (D96); this table
// 1.004–1.005.
//
// Same arguments, shapes and results as FlashAttnFwdTmaPingPongEdge
// (flash_fwd_tma.hpp), plus the table: q, o [B·Hq, S, D]; k, v [B·Hkv, S, D];
// lse [B·Hq, S]; items: FwdItemTable::data on the device; descriptors over q as
// [B·Hq·S, D] and k, v as [B·Hkv·S, D]; any S; GQA (group = Hq / Hkv); causal
// or not. Grid: FwdItemTable::grid() (its programs, min(items, SMs) for the
// library) — a table is valid for exactly the grid it was built for. Compiled
// with CompileOptions{.num_warps = 8, .num_stages = 2, .warp_specialize = true}
// at 128 x 128 (a producer warp group, two consumer warp groups of 64 rows).
// V must be finite where it is read, as for FlashAttnFwdTmaPingPongBody (with
// S a multiple of BLOCK_N every V row read is the item's own head's).
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "examples/attention/flash_fwd_tma.hpp"

namespace examples {

/// The K and V bytes of a causal section's heads: 8 MiB. FlashAttention-3 sizes its sections at 32 MiB for the
/// 50 MB L2 of an H100 (the H200 has the same L2); on the H200 that let the D = 128 causal forward read 632 MB from
/// DRAM where Q, K and V are 403 MB, because the programs at a section's end overlap the next section's heaviest
/// items. At 8 MiB it reads the 403 MB once: +2% D = 128 causal and +1.5% D = 64 at the 700 W power cap, D = 96
/// unchanged (docs/perf.md v0.35).
inline constexpr long long kFwdSectionBytes = 8LL << 20;

/// The problem a persistent forward's schedule is built for. heads_q: B·Hq (query heads of the whole batch);
/// group: Hq / Hkv; elem_bytes: sizeof(T); section_bytes: the K and V bytes a causal section may hold (tests make it
/// small); programs: the grid (0 is an error; the library passes the SM count).
struct FwdItemShape {
  long long seqlen = 1, heads_q = 1, group = 1;
  int head_dim = 64, block_m = 128, block_n = 128, elem_bytes = 2;
  bool causal = false;
  int programs = 1;
  long long section_bytes = kFwdSectionBytes;
};

/// A persistent forward's schedule (see the file comment). data: programs + 1 offsets, then the item list;
/// program p runs the items data[programs + 1 + j] for j in [data[p], data[p + 1]), in that order; an item is
/// head · num_m + block_m (num_m = cdiv(S, block_m)). Built once per shape on the host, uploaded by the caller.
struct FwdItemTable {
  int programs = 0;
  long long num_m = 0, heads_per_section = 0;
  std::vector<std::int32_t> data;
  tj::Grid grid() const { return tj::Grid{programs}; }
  /// The key blocks item `item` reads (its work, without the per-item block of the cost model).
  static long long key_blocks(const FwdItemShape& s, long long block_m) {
    const long long hi = s.causal ? std::min(s.seqlen, (block_m + 1) * s.block_m) : s.seqlen;
    return tj::cdiv(hi, static_cast<long long>(s.block_n));
  }
};

/// Builds the schedule of FlashAttnFwdTmaPersistent for `s`: min(items, s.programs) programs. Throws
/// InvalidArgument for extents < 1, a group that does not divide heads_q, or a table past 2^31 entries.
inline FwdItemTable fwd_item_table(const FwdItemShape& s) {
  auto bad = [](const std::string& why) { throw tj::InvalidArgument("fwd_item_table: " + why); };
  if (s.seqlen < 1 || s.heads_q < 1 || s.group < 1 || s.programs < 1 || s.block_m < 1 || s.block_n < 1 || s.head_dim < 1 ||
      s.elem_bytes < 1)
    bad(fmt::format("seqlen = {}, heads_q = {}, group = {}, programs = {}, block {} x {}, head_dim = {}, elem_bytes = {}: each "
                    "must be >= 1", s.seqlen, s.heads_q, s.group, s.programs, s.block_m, s.block_n, s.head_dim, s.elem_bytes));
  if (s.heads_q % s.group != 0) bad(fmt::format("heads_q = {} is not a multiple of group = {}", s.heads_q, s.group));
  FwdItemTable t;
  t.num_m = tj::cdiv(s.seqlen, static_cast<long long>(s.block_m));
  const long long count = t.num_m * s.heads_q;
  if (count + s.programs + 1 > 2147483647LL) bad(fmt::format("{} items: the table's 32-bit entries hold at most 2^31 - 1", count));
  t.programs = static_cast<int>(std::min<long long>(count, s.programs));
  // The list for sections of `hps` query heads (causal), or head by head (full).
  auto make_list = [&](long long hps) {
    std::vector<std::int32_t> list;
    list.reserve(static_cast<std::size_t>(count));
    if (s.causal) {
      for (long long first = 0; first < s.heads_q; first += hps)
        for (long long m = t.num_m - 1; m >= 0; --m)
          for (long long h = first; h < std::min(s.heads_q, first + hps); ++h) list.push_back(static_cast<std::int32_t>(h * t.num_m + m));
    } else {
      for (long long i = 0; i < count; ++i) list.push_back(static_cast<std::int32_t>(i));
    }
    return list;
  };
  // The assignment: each item of `list` to the least-loaded program (the lowest id among equals); returns the
  // busiest program's work.
  std::vector<std::vector<std::int32_t>> per;
  auto assign = [&](const std::vector<std::int32_t>& list) {
    using Load = std::pair<long long, int>;
    std::priority_queue<Load, std::vector<Load>, std::greater<>> least;
    for (int p = 0; p < t.programs; ++p) least.push({0, p});
    per.assign(static_cast<std::size_t>(t.programs), {});
    long long busiest = 0;
    for (const std::int32_t item : list) {
      auto [load, p] = least.top();
      least.pop();
      per[static_cast<std::size_t>(p)].push_back(item);
      load += FwdItemTable::key_blocks(s, item % t.num_m) + 1;
      busiest = std::max(busiest, load);
      least.push({load, p});
    }
    return busiest;
  };
  if (s.causal) {
    // Sections of whole groups, at most `most` heads (their K and V within section_bytes), made equal so the last is
    // not a sliver. How evenly the greedy assignment ends depends on how a section's items divide among the programs,
    // so the sizes from `most` down to half of it are tried and the best balanced is kept (the largest among equals).
    const long long kv_head_bytes = 2 * s.seqlen * s.head_dim * s.elem_bytes;  // K and V of one KV head
    const long long most = std::max(s.section_bytes / kv_head_bytes, 1LL) * s.group;
    long long best = -1, tried = -1;
    std::vector<std::vector<std::int32_t>> best_per;
    for (long long bound = most; bound >= s.group && 2 * bound >= most; bound -= s.group) {
      const long long sections = tj::cdiv(s.heads_q, bound);
      const long long hps = tj::cdiv(tj::cdiv(s.heads_q, sections), s.group) * s.group;
      if (hps == tried) continue;
      tried = hps;
      const long long busiest = assign(make_list(hps));
      if (best < 0 || busiest < best) best = busiest, t.heads_per_section = hps, best_per = std::move(per);
    }
    per = std::move(best_per);
  } else {
    t.heads_per_section = s.heads_q;
    assign(make_list(s.heads_q));
  }
  t.data.reserve(static_cast<std::size_t>(t.programs + 1 + count));
  std::int32_t at = 0;
  for (const auto& items : per) {
    t.data.push_back(at);
    at += static_cast<std::int32_t>(items.size());
  }
  t.data.push_back(at);
  for (const auto& items : per) t.data.insert(t.data.end(), items.begin(), items.end());
  return t;
}

/// See the file comment. MASK: edge_blocks (any S), or none (full attention with S a multiple of BLOCK_N, the
/// caller's promise, as FlashAttnFwdTmaPingPongEvenN).
template <int BLOCK_M, int BLOCK_N, int HEAD_DIM, bool CAUSAL, class T, KeyMask MASK = KeyMask::edge_blocks, int KV_RANK = 2>
struct FlashAttnFwdTmaPersistent {
  static_assert(MASK != KeyMask::none || !CAUSAL, "causal attention masks its diagonal block");
  /// Q's descriptor holds B·Hq·S rows: see fwd_launch_cost.
  tj::LaunchCost launch_cost(const tj::Grid&, const tj::TensorDescriptor& q, const auto&, const auto&, const auto&, const auto&,
                             const auto&, long long S, long long group, float) const {
    return fwd_launch_cost(q.shape()[0] / std::max(S, 1LL), group, S, HEAD_DIM, CAUSAL, sizeof(T));
  }
  void operator()(tj::Desc<T, BLOCK_M, HEAD_DIM> q, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> k, KvDesc<T, BLOCK_N, HEAD_DIM, KV_RANK> v,
                  tj::Ptr<T> o, tj::Ptr<float> lse, tj::Ptr<std::int32_t> items, tj::Size S, tj::Size group,
                  tj::Scalar<float> scale_log2e) const {
    const tj::Int num_m = (S + (BLOCK_M - 1)) / BLOCK_M;
    auto run_item = [&](const tj::Int& block_m, const tj::Int& bh) {
      const FwdRows<BLOCK_M, HEAD_DIM, CAUSAL> p(S, group, block_m, bh);
      auto q_tile = p.load_q(q, S);  // one buffer, copied per item (before the item's first K block)
      auto hi = p.hi(S);
      auto edge = MASK == KeyMask::edge_blocks ? p.template mask_edge<BLOCK_N>(S) : hi;
      const tj::Int kv = p.template kv_at<KV_RANK>(group);
      auto [m_i, l_i, acc, p_last] = fa3_keys<BLOCK_M, BLOCK_N, HEAD_DIM, CAUSAL, T, MASK>(q_tile, k, v, kv, p.rm, hi, edge, scale_log2e);
      // The last block's V, loaded after the key loop: the producer copies it after the item's K and V blocks, so
      // the next item's Q and first K / V copies are not held behind this item's last product.
      auto v_last = kv_block(v, kv, (hi - 1) / BLOCK_N * BLOCK_N);
      p.store(o, lse, S, m_i, l_i, tj::dot(p_last, v_last, acc));
    };
    if constexpr (CAUSAL) {
      const tj::Int list = tj::num_programs(0) + 1;  // the item list follows the programs' offsets
      const tj::Int begin = tj::load(items + tj::program_id(0)), end = tj::load(items + tj::program_id(0) + 1);
      // Each item's entry is loaded one item ahead (carried): the load's latency hides behind an item's key loop
      // instead of stalling the consumers at every item's start (measured 1-4% on the H200 without it).
      const tj::Int first = tj::load(items + list + begin, begin < end, 0);
      tj::for_range(begin, end, 1, first, [&](tj::Int j, tj::Int item) {
        const tj::Int next = tj::load(items + list + j + 1, j + 1 < end, 0);
        run_item(item % num_m, item / num_m);
        return next;
      });
    } else {
      // Equal items: the table's greedy assignment is round robin over the list (head by head), computed here from
      // the program id rather than loaded (the loads cost the D = 64 kernel 2-6% on the H200; the table is unused).
      const tj::Int count = num_m * (q.rows() / S);
      tj::for_range(tj::program_id(0), count, tj::num_programs(0), [&](tj::Int t) { run_item(t % num_m, t / num_m); });
    }
  }
};

}  // namespace examples

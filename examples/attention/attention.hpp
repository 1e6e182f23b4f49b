// examples/attention/attention.hpp — attention as library calls, with the
// argument checks a user needs before anything reaches the device.
//
//   examples::Attention<tj::bf16> attn(dev);
//   attn.forward(q, k, v, o, lse, {.batch = 4, .heads_q = 32, .heads_kv = 8, .seqlen = 4096, .head_dim = 128, .causal = true});
//   attn.backward(q, k, v, o, d_o, lse, delta, dq, dk, dv, shape);
//   attn.forward_varlen(q, k, v, o, lse, cu_seqlens, total_tokens, shape);  // packed sequences
//   attn.decode(q, k_cache, v_cache, seqlens, o, lse, shape, s_max);   // one token per sequence
//   attn.decode(q, k_cache, v_cache, seqlens, o, lse, shape, s_max, 0, 4);  // four (draft) tokens, causal
//
// Head dims 64, 96 (exact, no padding), 128 and 256 (backward: up to 128).
// The forward runs flash_fwd_tma.hpp (TMA + wgmma) on Hopper for every head dim
// (64-key blocks at D = 256) with 16-byte aligned q, k, v — one program per (query block, head), or
// flash_fwd_persistent.hpp's persistent programs (FwdSchedule); on other GPUs from sm_80 (or with
// set_mma_sync_path) the same flash_fwd_tma.hpp compiled without wgmma for D <= 128 with 16-byte aligned q, k, v
// (a cp.async ring feeding mma.sync); flash_fwd.hpp otherwise; the backward runs
// flash_bwd_tma.hpp on Hopper with 16-byte aligned q, k, v, d_o, and
// flash_bwd.hpp otherwise; decode runs FlashDecodeSplitTma (TMA + wgmma) on
// Hopper for D <= 128 with 16-byte aligned caches, FlashDecodeSplit otherwise.
// Layouts are those of flash_fwd.hpp,
// flash_fwd_varlen.hpp, flash_decode.hpp and flash_bwd.hpp.
// Every rule broken is an InvalidArgument naming the value and the rule:
// extents >= 1; heads_q a multiple of heads_kv (grouped-query attention needs
// whole groups); a supported head dim; a scale in [1e-20, 1e20] (0: 1/sqrt(D)); tensors
// below 2^31 elements (32-bit offsets; the products are checked without
// overflowing); varlen batches of at most 65535 sequences (the grid's z
// extent) and heads_q, batch x heads_q (forward, backward) at most 65535 (the
// grid's y extent); non-null pointers; cu_seqlens starting
// at 0, non-decreasing, within the token buffer and max_seqlen; decode lengths
// within [0, s_max]. Rows whose keys are all masked (an empty sequence or
// cache) give O = 0 and lse = -1e30, never NaN. Pointers must be non-null and
// aligned to their element size; all of this is checked before any launch.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <typeindex>
#include <utility>
#include <vector>

#include "examples/attention/flash_bwd.hpp"
#include "examples/attention/flash_bwd_tma.hpp"
#include "examples/attention/flash_decode.hpp"
#include "examples/attention/flash_fwd.hpp"
#include "examples/attention/flash_fwd_persistent.hpp"
#include "examples/attention/flash_fwd_tma.hpp"
#include "examples/attention/flash_fwd_varlen.hpp"

namespace examples {

struct AttnShape {
  long long batch = 1, heads_q = 1, heads_kv = 1;
  long long seqlen = 1;    ///< S (forward / backward); for varlen: the longest sequence (max_seqlen)
  long long head_dim = 64;
  bool causal = false;
  double scale = 0;        ///< softmax scale; 0 = 1/sqrt(head_dim). A score whose scaled value (q·k · scale · log2 e)
                           ///< falls below −1e30 counts as masked (check() keeps scale within [1e-20, 1e20])
  double softmax_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim)); }
};

template <class T>
class Attention {
 public:
  explicit Attention(tj::Device dev) : dev_(std::move(dev)) {}

  /// How the Hopper forward schedules its (query block, head) items: one program per item (flash_fwd_tma.hpp),
  /// or one persistent program per SM walking them, causal heaviest first (flash_fwd_persistent.hpp). Same
  /// results either way. `automatic` (the default) takes persistent_by_default's choice.
  enum class FwdSchedule { automatic, per_item, persistent };
  void set_forward_schedule(FwdSchedule s) { schedule_ = s; }
  /// Run every call as a GPU without wgmma does (on Hopper: the kernels of other GPUs, compiled for sm_90, not
  /// sm_90a — an A100's path): for tests and benchmarks of that path on a Hopper GPU. Kernels compiled before are
  /// dropped.
  void set_mma_sync_path(bool on) {
    mma_sync_ = on;
    kernels_.clear();
  }
  FwdSchedule forward_schedule() const { return schedule_; }
  /// What `automatic` runs: the schedule measured faster on the H200 (docs/perf.md, v0.10): persistent for causal
  /// attention (its schedule table balances the programs: +12% / +3% / +3% over one program per item at D = 64 / 96 /
  /// 128; D = 256 +0.6% and +1.1% at the 700 W power cap, v0.35 call 6 and v0.36 call 4) and for full attention at
  /// D = 64, 128 and 256 (D = 256: +1.5-2.5% in four rounds, docs/perf.md v0.31); one program per item for full D = 96
  /// (persistent measured 1% slower).
  static constexpr bool persistent_by_default(int head_dim, bool causal) {
    return causal || head_dim != 96;
  }
  /// The shortest sequence for which the persistent forward at D = 64 takes items of 192 query rows (three consumer
  /// warp groups) instead of 128: from here a ragged last item adds at most 1/6 to the rows a head computes (S = 1153:
  /// 1344 rows), 1/8 for full attention, which takes them only where S is a multiple of 128.
  static constexpr long long kTallItemsMinSeqlen = 1024;

  /// How `backward` computes dQ on the descriptor paths (Hopper, and sm_80+ off Hopper). `two_pass`: a second
  /// kernel, a program per query block, recomputes S and dP (seven products per pair of blocks; the same bits every
  /// run). `fused`: the dK/dV kernel adds each dS·K to an f32 accumulator by atomics, then one more launch rounds it
  /// (five products, FlashAttention-2's Algorithm 2 as written; dQ's last bits vary from run to run with the order of
  /// the atomic adds). `automatic` (the default) takes fused_by_default's choice. The pointer kernels (misaligned
  /// operands, GPUs before sm_80) are always two-pass.
  enum class BwdSchedule { automatic, two_pass, fused };
  void set_backward_schedule(BwdSchedule s) { bwd_schedule_ = s; }
  BwdSchedule backward_schedule() const { return bwd_schedule_; }
  /// What `automatic` runs: the schedule measured faster on the H200 (docs/perf.md v0.25, B = 4, H = 32, S = 4096).
  /// Fused for full attention at D = 64 (+5% off Hopper, +4% on Hopper) and, off Hopper, causal D = 128 (+11%);
  /// two-pass elsewhere: within 2% off Hopper at D = 64 causal and D = 128 full, 5% slower at D = 96 full, and on
  /// Hopper at D = 128 0.63-0.71x two-pass (v0.26: dQ's product now runs on wgmma split between the two consumer warp
  /// groups, but its atomics and the dS conversion cost more than the two recomputed products they save).
  static constexpr bool fused_by_default(bool hopper, int head_dim, bool causal) {
    return head_dim == 64 ? !causal : !hopper && head_dim == 128 && causal;
  }

  /// The common rules (see the file comment). `min_seqlen` is 0 for varlen (max_seqlen 0: every sequence empty).
  static void check(const AttnShape& s, long long min_seqlen = 1) {
    for (auto [v, what] : {std::pair{s.batch, "batch"}, std::pair{s.heads_q, "heads_q"}, std::pair{s.heads_kv, "heads_kv"}})
      if (v < 1) throw tj::InvalidArgument(fmt::format("attention: {} = {}: must be >= 1", what, v));
    if (s.seqlen < min_seqlen) throw tj::InvalidArgument(fmt::format("attention: seqlen = {}: must be >= {}", s.seqlen, min_seqlen));
    if (!(s.scale >= 0) || !std::isfinite(s.scale))
      throw tj::InvalidArgument(fmt::format("attention: scale = {}: must be > 0 and finite (or 0 for 1/sqrt(head_dim))", s.scale));
    if (s.heads_q % s.heads_kv != 0)
      throw tj::InvalidArgument(fmt::format("attention: heads_q = {} is not a multiple of heads_kv = {}: grouped-query attention "
                                            "shares each KV head among a whole group of query heads", s.heads_q, s.heads_kv));
    if (s.head_dim != 64 && s.head_dim != 96 && s.head_dim != 128 && s.head_dim != 256)
      throw tj::InvalidArgument(fmt::format("attention: head_dim = {} is not supported: 64, 96, 128 or 256", s.head_dim));
    // Masked scores are a -1e30 sentinel in raw score units and the running max starts at -1e30 in scaled units:
    // far outside [1e-20, 1e20] a masked key's scaled score meets real ones (tiny scales: future keys seen) or real
    // scaled scores fall below the start (huge scales: rows zeroed) — a review measured both. (The kernels' f32
    // scale and scale·log2(e) are finite and > 0 throughout this range.)
    if (const double d = s.softmax_scale(); !(d >= kMinScale && d <= kMaxScale))
      throw tj::InvalidArgument(fmt::format("attention: scale = {}: must be in [1e-20, 1e20] (masks are a -1e30 sentinel in score "
                                            "units: scale * |score| must stay far below 1e30, and 1e30 * scale far above every "
                                            "score)", s.scale));
  }
  /// One grid row (grid.y) per `what` (batch × heads, or heads): at most 65535 of them. Factors checked one by one
  /// first, so the product cannot wrap.
  static void fits_grid_y(long long a, long long b, const char* what) {
    if (a > 65535 || b > 65535 || a * b > 65535)
      throw tj::InvalidArgument(fmt::format("attention: {} = {} x {}: at most 65535 (the grid's y extent, one program row each); "
                                            "split the batch", what, a, b));
  }
  /// The kernels index with 32-bit offsets: a tensor of `elems` elements must stay below 2^31.
  static void fits_i32(long long elems, const char* what) {
    if (elems > 2147483647LL)
      throw tj::InvalidArgument(fmt::format("attention: {} has {} elements: the kernels use 32-bit offsets, at most 2^31 - 1; "
                                            "split the batch", what, elems));
  }
  /// The same for a tensor whose extents are `factors` (each >= 0): their product is checked without overflowing
  /// (a product past 2^63 would be undefined, and could wrap to a small or negative count that passes).
  static void fits_i32(std::initializer_list<long long> factors, const char* what) {
    long long elems = 1;
    bool over = false;
    for (long long f : factors)
      if (f == 0) return;  // an empty tensor fits
    for (long long f : factors) over = over || __builtin_mul_overflow(elems, f, &elems) || elems > 2147483647LL;
    if (!over) return;
    std::string dims;
    for (long long f : factors) dims += (dims.empty() ? "" : " x ") + std::to_string(f);
    throw tj::InvalidArgument(fmt::format("attention: {} has {} elements, more than 2^31 - 1: the kernels use 32-bit offsets; "
                                          "split the batch", what, dims));
  }
  /// A tensor argument: its pointer, its name, and its element size (the alignment every kernel needs).
  struct PtrArg {
    const void* p;
    const char* what;
    std::size_t elem;
    template <class E>
    PtrArg(const E* ptr, const char* name) : p(ptr), what(name), elem(sizeof(E)) {}
  };
  /// Every pointer non-null and aligned to its element size — checked before any launch, so a bad argument
  /// never leaves an output half written.
  static void not_null(std::initializer_list<PtrArg> ps) {
    for (const PtrArg& a : ps) {
      if (!a.p) throw tj::InvalidArgument(fmt::format("attention: {} is a null pointer", a.what));
      if (reinterpret_cast<std::uintptr_t>(a.p) % a.elem != 0)
        throw tj::InvalidArgument(fmt::format("attention: {} = {} is not aligned to its element size ({} bytes)", a.what, a.p, a.elem));
    }
  }
  /// A device buffer for no_overlap: its first byte, its size in bytes and its name in the error.
  struct Span {
    const void* p;
    long long bytes;
    const char* what;
  };
  /// Throws InvalidArgument when an output overlaps an input or another output: the kernels read inputs while other
  /// programs write outputs, so an alias gives wrong numbers (or NaN), not an error. In-place use (o = q) included:
  /// whether it happens to work depends on the kernel and the GPU. Sizes are the extents the call reads and writes.
  static void no_overlap(const char* call, std::initializer_list<Span> outputs, std::initializer_list<Span> inputs) {
    auto lo = [](const Span& a) { return reinterpret_cast<std::uintptr_t>(a.p); };
    auto hi = [&](const Span& a) { return lo(a) + static_cast<std::uintptr_t>(a.bytes); };
    auto meet = [&](const Span& a, const Span& b) { return a.bytes > 0 && b.bytes > 0 && lo(a) < hi(b) && lo(b) < hi(a); };
    for (auto out = outputs.begin(); out != outputs.end(); ++out) {
      for (const Span& in : inputs)
        if (meet(*out, in))
          throw tj::InvalidArgument(fmt::format("attention {}: {} ({} bytes at {}) overlaps input {} ({} bytes at {}): an output may not "
                                                "alias an input",
                                                call, out->what, out->bytes, out->p, in.what, in.bytes, in.p));
      for (auto other = outputs.begin(); other != out; ++other)
        if (meet(*out, *other))
          throw tj::InvalidArgument(fmt::format("attention {}: outputs {} ({} bytes at {}) and {} ({} bytes at {}) overlap", call,
                                                other->what, other->bytes, other->p, out->what, out->bytes, out->p));
    }
  }
  /// cu_seqlens (host copy, batch + 1 entries) against the rules; returns the longest sequence.
  static long long check_cu_seqlens(const std::vector<std::int32_t>& cu, long long total_tokens, long long max_seqlen) {
    if (cu.empty() || cu[0] != 0)
      throw tj::InvalidArgument(fmt::format("attention: cu_seqlens[0] = {}: must be 0", cu.empty() ? -1 : cu[0]));
    long long longest = 0;
    for (std::size_t b = 1; b < cu.size(); ++b) {
      if (cu[b] < cu[b - 1])
        throw tj::InvalidArgument(fmt::format("attention: cu_seqlens[{}] = {} < cu_seqlens[{}] = {}: offsets must be non-decreasing",
                                              b, cu[b], b - 1, cu[b - 1]));
      longest = std::max<long long>(longest, cu[b] - cu[b - 1]);
    }
    if (cu.back() > total_tokens)
      throw tj::InvalidArgument(fmt::format("attention: cu_seqlens[{}] = {} exceeds the buffer of {} tokens", cu.size() - 1,
                                            cu.back(), total_tokens));
    if (longest > max_seqlen)
      throw tj::InvalidArgument(fmt::format("attention: a sequence of {} tokens is longer than max_seqlen = {}", longest, max_seqlen));
    return longest;
  }

  /// q, o [B·Hq, S, D]; k, v [B·Hkv, S, D]; lse [B·Hq, S]. K and V are read through rank-3 descriptors
  /// [B·Hkv, S, D] on the descriptor paths (Hopper, and sm_80+ off Hopper): a key block past S reads zeros, never
  /// the next head's rows, so NaN or Inf anywhere outside a head's own rows does not reach its output. (Where no key
  /// block passes S — the persistent Hopper kernel without edge masks — the rank-2 view [B·Hkv·S, D] reads the same
  /// rows.)
  void forward(const T* q, const T* k, const T* v, T* o, float* lse, const AttnShape& s) {
    check(s);
    fits_i32({s.batch, s.heads_q, s.seqlen, s.head_dim}, "q [B·Hq, S, D]");
    fits_i32({s.batch, s.heads_kv, s.seqlen, s.head_dim}, "k [B·Hkv, S, D]");
    fits_grid_y(s.batch, s.heads_q, "batch x heads_q");
    not_null({{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {lse, "lse"}});
    {
      const long long qb = s.batch * s.heads_q * s.seqlen * s.head_dim * static_cast<long long>(sizeof(T)),
                      kb = s.batch * s.heads_kv * s.seqlen * s.head_dim * static_cast<long long>(sizeof(T)),
                      lb = s.batch * s.heads_q * s.seqlen * 4;
      no_overlap("forward", {{o, qb, "o"}, {lse, lb, "lse"}}, {{q, qb, "q"}, {k, kb, "k"}, {v, kb, "v"}});
    }
    with_dim(s, [&]<int D, bool C>() {
      const float scale_log2e = static_cast<float>(s.softmax_scale() * kLog2e);
      {
        auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };  // TMA's rule
        if (hopper() && aligned(q) && aligned(k) && aligned(v)) {  // Hopper: flash_fwd_tma.hpp
          // The configuration measured fastest on the H200 for every head dim and mask (docs/perf.md, v0.6): a
          // producer warp group (warp_specialize) and 128 x 128 tiles in FlashAttention-3's order, masking only
          // the edge key blocks (no block at all for full attention when S is a multiple of BLOCK_N). D = 256
          // takes 64-key blocks: O alone is 128 registers per consumer thread, and Q (64 KiB) with two stages of
          // K and V (128 KiB) and the last V block (32 KiB) fill the 227 KiB of shared memory.
          using Desc = tj::TensorDescriptor;
          constexpr bool ws = true;
          // The persistent kernel at D = 96 takes 3 stages: its K and V are held exactly (three 64-byte slabs per
          // row, 48 KiB a stage), so a third stage fits; as fast as 2 (docs/perf.md v0.16) and it compiles without
          // the 16-24 bytes of spill the 2-stage build now has.
          constexpr int BM = 128, BN = D > 128 ? 64 : 128, stages = 2, persistent_stages = D == 96 ? 3 : 2;
          const long long rq = s.batch * s.heads_q * s.seqlen;
          const long long hkv = s.batch * s.heads_kv;  // KV heads (flash_fwd_tma.hpp, KV_RANK)
          const bool persistent = schedule_ == FwdSchedule::persistent ||
                                  (schedule_ == FwdSchedule::automatic && persistent_by_default(D, C));
          const long long group = s.heads_q / s.heads_kv;
          // Q's blocks of `rows` rows; K's or V's blocks of `keys` keys through a descriptor of rank 3 ([B·Hkv, S, D],
          // bounds per head: a key block past S reads zeros) or 2 ([B·Hkv·S, D]: the same rows where no block passes S).
          auto q_desc = [&](int rows) { return Desc(dev_, const_cast<T*>(q), tj::dtype_v<T>, {rq, D}, {D, 1}, {rows, D}); };
          auto kv_desc = [&](const T* p, int rank, int keys) {
            return rank == 3 ? Desc(dev_, const_cast<T*>(p), tj::dtype_v<T>, {hkv, s.seqlen, D}, {s.seqlen * D, D, 1}, {1, keys, D})
                             : Desc(dev_, const_cast<T*>(p), tj::dtype_v<T>, {hkv * s.seqlen, D}, {D, 1}, {keys, D});
          };
          // The persistent kernel for items of PBM query rows (PBM / 64 consumer warp groups) and PBN-key blocks, K and V
          // through descriptors of rank KVR: 3 wherever a key block may pass S; 2 where none does (MASK none: S a
          // multiple of PBN), where 192-row items measured 6% faster with it (docs/perf.md v0.30 call 4; 128-row items:
          // equal).
          auto run_persistent = [&]<int PBM, int PBN, KeyMask MASK, int ST, int KVR = 3>() {
            static_assert(KVR == 3 || MASK == KeyMask::none, "a rank-2 K / V view lets a key block past S read the next head");
            const Desc pq = q_desc(PBM), pk = kv_desc(k, KVR, PBN), pv = kv_desc(v, KVR, PBN);
            const auto [grid, items] = item_table({.seqlen = s.seqlen, .heads_q = s.batch * s.heads_q, .group = group, .head_dim = D,
                                                   .block_m = PBM, .block_n = PBN, .elem_bytes = sizeof(T), .causal = C,
                                                   .programs = dev_.num_sms()});
            kernel<FlashAttnFwdTmaPersistent<PBM, PBN, D, C, T, MASK, KVR>>(PBM / 16, ST, ws)
                .launch(grid, pq, pk, pv, o, lse, items, s.seqlen, group, scale_log2e);
          };
          if (persistent) {
            // D = 64, S >= 1024: items of 192 rows (three consumer warp groups, num_warps = 12), FlashAttention-3's
            // D = 64 tile: +12% full (128-key blocks, S a multiple of 128) and +2% causal (96-key blocks) over 128-row
            // items on the H200 (docs/perf.md v0.30). Both compile without a spill since v0.29's descriptors left the
            // vector registers; a ragged full S keeps 128-row items (192 x 128 with edge masks spills 584 bytes). The
            // threshold bounds the rows a ragged last item computes for nothing (kTallItemsMinSeqlen).
            if constexpr (D == 64) {
              if (s.seqlen >= kTallItemsMinSeqlen) {
                if constexpr (C) {
                  run_persistent.template operator()<192, 96, KeyMask::edge_blocks, 2>();
                  return;
                } else if (s.seqlen % 128 == 0) {
                  run_persistent.template operator()<192, 128, KeyMask::none, 2, 2>();
                  return;
                }
              }
            }
            if constexpr (!C) {
              if (s.seqlen % BN == 0) {
                run_persistent.template operator()<BM, BN, KeyMask::none, persistent_stages>();
                return;
              }
            }
            run_persistent.template operator()<BM, BN, KeyMask::edge_blocks, persistent_stages>();
            return;
          }
          const Desc dq = q_desc(BM), dk = kv_desc(k, 3, BN), dv = kv_desc(v, 3, BN);
          const tj::Grid grid{tj::cdiv(s.seqlen, BM), s.batch * s.heads_q};
          auto run = [&]<class K>(tj::Kernel<K>& kern) { kern.launch(grid, dq, dk, dv, o, lse, s.seqlen, group, scale_log2e); };
          if (!C && s.seqlen % BN == 0)
            run(kernel<FlashAttnFwdTmaPingPongEvenN<BM, BN, D, false, T, 3>>(8, stages, ws));
          else
            run(kernel<FlashAttnFwdTmaPingPongEdge<BM, BN, D, C, T, 3>>(8, stages, ws));
          return;
        }
      }
      if constexpr (D <= 128) {
        auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };  // descriptors' rule
        if (dev_.compute_capability() >= 80 && aligned(q) && aligned(k) && aligned(v)) {
          // sm_80 .. sm_89 (and Hopper with set_mma_sync_path): flash_fwd_tma.hpp compiled without wgmma — K and V
          // blocks through a cp.async ring of 2 stages (the next block's copies issued at the top of an iteration,
          // in flight during its math), read by mma.sync with ldmatrix (.trans for V), every warp on whole rows,
          // 4 warps. FlashAttnFwdTmaEdge: only the last key block of a ragged S, or the diagonal blocks, masked.
          // Tiles 128 x 64 for full attention at D = 64 (32 rows a warp), 64 x 64 otherwise — the fastest of 5–7
          // swept per shape on the H200 compiled for sm_90 (docs/perf.md v0.23).
          using Desc = tj::TensorDescriptor;
          constexpr int BM = D == 64 && !C ? 128 : 64, BN = 64;
          const long long rq = s.batch * s.heads_q * s.seqlen, hkv = s.batch * s.heads_kv;
          const Desc dq(dev_, const_cast<T*>(q), tj::dtype_v<T>, {rq, D}, {D, 1}, {BM, D});
          const Desc dk(dev_, const_cast<T*>(k), tj::dtype_v<T>, {hkv, s.seqlen, D}, {s.seqlen * D, D, 1}, {1, BN, D});
          const Desc dv(dev_, const_cast<T*>(v), tj::dtype_v<T>, {hkv, s.seqlen, D}, {s.seqlen * D, D, 1}, {1, BN, D});
          kernel<FlashAttnFwdTmaEdge<BM, BN, D, C, T, 3>>(4, 2).launch(tj::Grid{tj::cdiv(s.seqlen, BM), s.batch * s.heads_q}, dq, dk, dv,
                                                                      o, lse, s.seqlen, s.heads_q / s.heads_kv, scale_log2e);
          return;
        }
      }
      constexpr int BM = D > 128 ? 64 : 128, BN = D > 128 ? 32 : 64;
      auto& kern = kernel<FlashAttnFwd<BM, BN, D, C, T>>(D > 128 ? 4 : 8);
      kern.launch(tj::Grid{tj::cdiv(s.seqlen, BM), s.batch * s.heads_q}, q, k, v, o, lse, s.seqlen, s.heads_q / s.heads_kv, scale_log2e);
    });
  }

  /// Packed sequences: q, o [total, Hq, D]; k, v [total, Hkv, D]; lse [total, Hq]; cu_seqlens [batch + 1] (device
  /// memory, read back once to check it); s.seqlen is max_seqlen. On compute capability 9.0 with q, k, v 16-byte
  /// aligned: FlashAttnFwdVarlenTma (TMA, wgmma, a producer warp group; a key block past a sequence's end holds the
  /// next sequence's tokens, weighted by exactly 0, so v must be finite there: a NaN or Inf in one sequence's K or V
  /// reaches the sequence before it. Rows past the last sequence, up to total_tokens, are never read: the
  /// descriptors end at cu_seqlens[batch]); elsewhere FlashAttnFwdVarlen's masked pointer loads.
  void forward_varlen(const T* q, const T* k, const T* v, T* o, float* lse, const std::int32_t* cu_seqlens, long long total_tokens,
                      const AttnShape& s) {
    check(s, 0);
    not_null({{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {lse, "lse"}, {cu_seqlens, "cu_seqlens"}});
    if (total_tokens < 0) throw tj::InvalidArgument(fmt::format("attention: total_tokens = {}: must be >= 0", total_tokens));
    fits_i32({total_tokens, s.heads_q, s.head_dim}, "q [total, Hq, D]");
    if (s.batch > 65535)  // before cu_seqlens' host copy of batch + 1 entries is allocated
      throw tj::InvalidArgument(fmt::format("attention varlen: batch = {}: at most 65535 sequences (the grid's z extent, one "
                                            "program row per sequence)", s.batch));
    {
      const long long qb = total_tokens * s.heads_q * s.head_dim * static_cast<long long>(sizeof(T)),
                      kb = total_tokens * s.heads_kv * s.head_dim * static_cast<long long>(sizeof(T)), lb = total_tokens * s.heads_q * 4;
      no_overlap("forward_varlen", {{o, qb, "o"}, {lse, lb, "lse"}},
                 {{q, qb, "q"}, {k, kb, "k"}, {v, kb, "v"}, {cu_seqlens, (s.batch + 1) * 4, "cu_seqlens"}});
    }
    std::vector<std::int32_t> cu(static_cast<std::size_t>(s.batch + 1));
    dev_.copy_to_host(cu.data(), cu_seqlens, cu.size() * 4);
    fits_grid_y(1, s.heads_q, "heads_q");
    // Every sequence empty (max_seqlen may still be larger): no token to attend from, and no descriptor to build.
    const long long longest = check_cu_seqlens(cu, total_tokens, s.seqlen);
    if (longest == 0 || s.seqlen == 0) return;
    // The grid covers the longest sequence, not max_seqlen (a generous bound would launch programs with no rows).
    with_dim(s, [&]<int D, bool C>() {
      auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };  // TMA's rule
      if (hopper() && aligned(q) && aligned(k) && aligned(v)) {
        // Hopper: FlashAttnFwdVarlenTma (flash_fwd_varlen.hpp) — the dense forward's FlashAttention-3 loop with a
        // producer warp group, Q, K and V through rank-3 descriptors over the packed [total, H, D] tensors.
        using Desc = tj::TensorDescriptor;
        constexpr int BM = 128, BN = D > 128 ? 64 : 128, stages = 2;
        const long long hkv = s.heads_kv;
        // The descriptors end at the last sequence's last token (cu_seqlens[B]), not at total_tokens: a key block
        // past it reads TMA's zeros, so rows a buffer keeps to spare (NaN, or never written) reach no output.
        const long long used = cu.back();
        const Desc dq(dev_, const_cast<T*>(q), tj::dtype_v<T>, {used, s.heads_q, D}, {s.heads_q * D, D, 1}, {BM, 1, D});
        const Desc dk(dev_, const_cast<T*>(k), tj::dtype_v<T>, {used, hkv, D}, {hkv * D, D, 1}, {BN, 1, D});
        const Desc dv(dev_, const_cast<T*>(v), tj::dtype_v<T>, {used, hkv, D}, {hkv * D, D, 1}, {BN, 1, D});
        kernel<FlashAttnFwdVarlenTma<BM, BN, D, C, T>>(8, stages, true)
            .launch(tj::Grid{tj::cdiv(longest, BM), s.heads_q, s.batch}, dq, dk, dv, o, lse, cu_seqlens, s.heads_q,
                    s.heads_q / s.heads_kv, static_cast<float>(s.softmax_scale() * kLog2e));
        return;
      }
      constexpr int BM = D > 128 ? 64 : 128, BN = D > 128 ? 32 : 64;
      auto& kern = kernel<FlashAttnFwdVarlen<BM, BN, D, C, T>>(D > 128 ? 4 : 8);
      kern.launch(tj::Grid{tj::cdiv(longest, BM), s.heads_q, s.batch}, q, k, v, o, lse, cu_seqlens, s.heads_q,
                  s.heads_q / s.heads_kv, static_cast<float>(s.softmax_scale() * kLog2e));
    });
  }

  /// `tokens` new query tokens per sequence (1: plain decode; more: speculative decoding's draft tokens, a
  /// chunked prefill's last chunk): q, o [B, tokens, Hq, D]; caches k, v [B, Hkv, s_max, D]; seqlens [B] (device
  /// memory, read back to check): tokens in each cache, the new ones' keys and values included; lse [B, tokens, Hq].
  /// Token t of sequence b sits at position seqlens[b] − tokens + t and sees keys [0, that position] (causal,
  /// aligned to the cache's end, as FlashAttention's flash_attn_with_kvcache); a token whose position is negative
  /// (seqlens[b] < tokens; an empty cache) sees no key: O = 0, lse = −1e30. The cache is split into chunks of
  /// `chunk` keys (0: automatic). group · tokens must be <= 64 (the rows of one tile); s.seqlen is not read.
  ///
  /// On compute capability 9.0 with D <= 128 and k, v 16-byte aligned (TMA's rule; rows of 64, 96 or 128
  /// elements are multiples of 16 bytes) the splits run FlashDecodeSplitTma with FlashDecodeTmaConfig's tiles:
  /// the cache streamed by TMA and read in place by wgmma; the automatic chunk gives at most one program per SM
  /// when B·Hkv allows (each holds a deep TMA ring, and one fits per SM). Elsewhere FlashDecodeSplit (pointer
  /// loads, 16-row tiles, 64 when group · tokens > 16) with enough splits for two programs per SM.
  /// FlashDecodeReduce merges the splits. No V slot at or past seqlens[b] is read (K slots there may be, and their
  /// scores are replaced), so the cache past a sequence's length may hold anything, NaN included.
  /// Throws InvalidArgument (naming the value and the rule) for bad shapes, tokens, s_max, chunk or seqlens.
  void decode(const T* q, const T* k, const T* v, const std::int32_t* seqlens, T* o, float* lse, const AttnShape& s,
              long long s_max, long long chunk = 0, long long tokens = 1) {
    AttnShape one = s;
    one.seqlen = 1;  // s.seqlen is not used here
    check(one);
    not_null({{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {lse, "lse"}, {seqlens, "seqlens"}});
    if (s_max < 1) throw tj::InvalidArgument(fmt::format("attention decode: s_max = {}: must be >= 1", s_max));
    if (chunk < 0) throw tj::InvalidArgument(fmt::format("attention decode: chunk = {}: must be >= 0 (0 = automatic)", chunk));
    if (tokens < 1) throw tj::InvalidArgument(fmt::format("attention decode: tokens = {}: must be >= 1", tokens));
    fits_i32({s.batch, s.heads_kv, s_max, s.head_dim}, "the KV cache [B, Hkv, s_max, D]");
    fits_i32({s.batch, tokens, s.heads_q, s.head_dim}, "q [B, tokens, Hq, D]");  // bounds B before seqlens' host copy
    const long long group = s.heads_q / s.heads_kv;
    if (group * tokens > 64)
      throw tj::InvalidArgument(fmt::format("attention decode: {} query heads per KV head x {} tokens = {} rows: at most 64 (one "
                                            "tile of rows)", group, tokens, group * tokens));
    std::vector<std::int32_t> len(static_cast<std::size_t>(s.batch));
    dev_.copy_to_host(len.data(), seqlens, len.size() * 4);
    for (std::size_t b = 0; b < len.size(); ++b)
      if (len[b] < 0 || len[b] > s_max)
        throw tj::InvalidArgument(fmt::format("attention decode: seqlens[{}] = {}: must be in [0, s_max = {}]", b, len[b], s_max));
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };  // TMA's rule
    const bool tma = hopper() && s.head_dim <= 128 && aligned(k) && aligned(v);
    const long long programs = s.batch * s.heads_kv;
    if (chunk <= 0) {
      using Cfg = FlashDecodeTmaConfig;
      // TMA: at most one program per SM, each streaming a long chunk (a program's start and end are not
      // overlapped by another's); pointers: enough programs for two per SM.
      const long long splits = tma ? std::max<long long>(1, std::min<long long>(64, dev_.num_sms() / programs))
                                   : std::max<long long>(1, std::min<long long>(64, tj::cdiv(2LL * dev_.num_sms(), programs)));
      const long long step = tma ? Cfg::block_n : 64;
      chunk = std::max<long long>(step, tj::cdiv(tj::cdiv(s_max, splits), step) * step);
    }
    chunk = std::min(chunk, s_max);  // one split holds the whole cache at most (and the kernels take chunk as i32)
    const long long splits = std::max<long long>(1, tj::cdiv(s_max, chunk));
    if (splits > 65535)
      throw tj::InvalidArgument(fmt::format("attention decode: chunk = {} splits s_max = {} into {} chunks: at most 65535 (the "
                                            "grid's y extent, one program row per chunk); use chunk >= {} or 0 (automatic)",
                                            chunk, s_max, splits, tj::cdiv(s_max, 65535LL)));
    {
      const long long qb = s.batch * tokens * s.heads_q * s.head_dim * static_cast<long long>(sizeof(T)),
                      kb = s.batch * s.heads_kv * s_max * s.head_dim * static_cast<long long>(sizeof(T)), lb = s.batch * tokens * s.heads_q * 4;
      no_overlap("decode", {{o, qb, "o"}, {lse, lb, "lse"}}, {{q, qb, "q"}, {k, kb, "k"}, {v, kb, "v"}, {seqlens, s.batch * 4, "seqlens"}});
    }
    const long long rows = s.batch * tokens * s.heads_q;  // query rows: one partial per row and split
    fits_i32({splits, rows, s.head_dim}, "the split workspace [splits, B·tokens·Hq, D]");
    const std::size_t need = static_cast<std::size_t>(splits * rows) * (s.head_dim + 2) * 4;
    float* o_part = workspace(need);
    float* ml_part = o_part + splits * rows * s.head_dim;
    const float scale_log2e = static_cast<float>(s.softmax_scale() * kLog2e);
    const tj::Grid grid{programs, splits};
    with_dim(s, [&]<int D, bool C>() {
      bool done = false;
      if constexpr (D <= 128) {
        if (tma) {  // Hopper: flash_decode.hpp's FlashDecodeSplitTma
          using Cfg = FlashDecodeTmaConfig;
          const long long kv_rows = s.batch * s.heads_kv * s_max;
          const tj::TensorDescriptor dk(dev_, const_cast<T*>(k), tj::dtype_v<T>, {kv_rows, D}, {D, 1}, {Cfg::block_n, D});
          const tj::TensorDescriptor dv(dev_, const_cast<T*>(v), tj::dtype_v<T>, {kv_rows, D}, {D, 1}, {Cfg::block_n, D});
          auto run = [&]<class K>(tj::Kernel<K>& kern) {
            kern.launch(grid, q, dk, dv, v, seqlens, o_part, ml_part, s.heads_q, group, s_max, chunk, tokens, scale_log2e);
          };
          if (tokens == 1)  // rows are heads, no position mask, a tail shorter than a block
            run(kernel<FlashDecodeSplitTma<Cfg::block_n, D, T, 64, false>>(4, Cfg::stages, Cfg::warp_specialize));
          else
            run(kernel<FlashDecodeSplitTma<Cfg::block_n, D, T, 64, true>>(4, Cfg::stages, Cfg::warp_specialize));
          done = true;
        }
      }
      if (!done) {
        if (tokens == 1 && group <= 16)
          kernel<FlashDecodeSplit<64, D, T, 16, false>>(4).launch(grid, q, k, v, seqlens, o_part, ml_part, s.heads_q, group, s_max,
                                                                  chunk, tokens, scale_log2e);
        else if (tokens == 1)  // 17..64 query heads per KV head: a 64-row tile (16 rows left heads 16.. uncomputed)
          kernel<FlashDecodeSplit<64, D, T, 64, false>>(4).launch(grid, q, k, v, seqlens, o_part, ml_part, s.heads_q, group, s_max,
                                                                  chunk, tokens, scale_log2e);
        else if (group * tokens <= 16)
          kernel<FlashDecodeSplit<64, D, T>>(4).launch(grid, q, k, v, seqlens, o_part, ml_part, s.heads_q, group, s_max, chunk,
                                                       tokens, scale_log2e);
        else
          kernel<FlashDecodeSplit<64, D, T, 64>>(4).launch(grid, q, k, v, seqlens, o_part, ml_part, s.heads_q, group, s_max, chunk,
                                                           tokens, scale_log2e);
      }
      kernel<FlashDecodeReduce<D, T>>(1).launch(tj::Grid{rows}, o_part, ml_part, o, lse, splits);
    });
  }

  /// Gradients from the saved lse: dq like q, dk and dv like k (summed over each KV head's query heads);
  /// delta [B·Hq, S] f32 is scratch the caller provides. Head dims 64, 96, 128.
  ///
  /// Three launches: delta = rowsum(dO ∘ O) (FlashBwdPreprocess), dK and dV over a grid of (key blocks, B·Hkv) — each
  /// program loops over its KV head's `group` query heads — and dQ over (query blocks, B·Hq). On compute capability 9.0
  /// with q, k, v and d_o 16-byte aligned (TMA's rule) these are flash_bwd_tma.hpp's FlashBwdKVTma and FlashBwdQTma
  /// with the tiles of FlashBwdTmaConfig<D>: rank-3 descriptors over q, d_o as [B·Hq, S, D] and k, v as
  /// [B·Hkv, S, D], so a block that runs past a head's S rows reads TMA's zero fill, never the next head's rows (a
  /// NaN there cannot reach this head's gradients); those rows are masked out of every product and never stored
  /// (dq, dk, dv are written row by row for rows < S only). On compute capability 8.x (or with set_mma_sync_path)
  /// with the same alignment, the same two kernels compiled without wgmma: their loops' blocks through 2-stage
  /// cp.async rings read by mma.sync, 64 x 64 tiles on 4 warps. With the fused schedule (BwdSchedule; automatic:
  /// fused_by_default) the dK/dV kernel is FlashBwdFusedTma instead, dQ summed by atomics in a workspace of
  /// B·Hq·S·D floats (S rounded up to a block), then FlashBwdDqConvert: four launches and a memset, no dQ kernel.
  /// Elsewhere flash_bwd.hpp's pointer kernels (64 x 64, 4 warps).
  void backward(const T* q, const T* k, const T* v, const T* o, const T* d_o, const float* lse, float* delta, T* dq, T* dk, T* dv,
                const AttnShape& s) {
    check(s);
    fits_i32({s.batch, s.heads_q, s.seqlen, s.head_dim}, "q [B·Hq, S, D]");
    fits_i32({s.batch, s.heads_kv, s.seqlen, s.head_dim}, "k [B·Hkv, S, D]");
    fits_grid_y(s.batch, s.heads_q, "batch x heads_q");
    not_null({{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {d_o, "d_o"}, {lse, "lse"}, {delta, "delta"}, {dq, "dq"}, {dk, "dk"}, {dv, "dv"}});
    if (s.head_dim > 128) throw tj::InvalidArgument(fmt::format("attention backward: head_dim = {}: 64, 96 or 128", s.head_dim));
    {
      const long long qb = s.batch * s.heads_q * s.seqlen * s.head_dim * static_cast<long long>(sizeof(T)),
                      kb = s.batch * s.heads_kv * s.seqlen * s.head_dim * static_cast<long long>(sizeof(T)),
                      lb = s.batch * s.heads_q * s.seqlen * 4;
      no_overlap("backward", {{delta, lb, "delta"}, {dq, qb, "dq"}, {dk, kb, "dk"}, {dv, kb, "dv"}},
                 {{q, qb, "q"}, {k, kb, "k"}, {v, kb, "v"}, {o, qb, "o"}, {d_o, qb, "d_o"}, {lse, lb, "lse"}});
    }
    const float sc = static_cast<float>(s.softmax_scale()), sl2 = static_cast<float>(s.softmax_scale() * kLog2e);
    const long long group = s.heads_q / s.heads_kv;
    with_dim(s, [&]<int D, bool C>() {
      kernel<FlashBwdPreprocess<64, D, T>>(4).launch(tj::Grid{tj::cdiv(s.seqlen, 64), s.batch * s.heads_q}, o, d_o, delta, s.seqlen);
      if constexpr (D <= 128) {
        auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };  // descriptors' rule
        using Desc = tj::TensorDescriptor;
        const long long rq = s.batch * s.heads_q, rkv = s.batch * s.heads_kv;  // heads: [heads, S, D] each
        auto desc = [&](const T* p, long long heads, int block) {
          return Desc(dev_, const_cast<T*>(p), tj::dtype_v<T>, {heads, s.seqlen, D}, {s.seqlen * D, D, 1}, {1, block, D});
        };
        const bool fused = bwd_schedule_ == BwdSchedule::fused || (bwd_schedule_ == BwdSchedule::automatic && fused_by_default(hopper(), D, C));
        // dK, dV (a program per key block, KV_N keys resident, KV_M-row Q / dO blocks), then dQ (a program per query
        // block, Q_M queries resident, Q_N-row K / V blocks) — or, fused, dQ's shares added up by the dK/dV kernel.
        auto run = [&]<int KV_M, int KV_N, int Q_M, int Q_N>(int kv_warps, int kv_stages, bool kv_ws, int q_warps, int q_stages, bool q_ws,
                                                             bool resident = false) {
          {
            const Desc dk_d = desc(k, rkv, KV_N), dv_d = desc(v, rkv, KV_N), dq_d = desc(q, rq, KV_M), ddo_d = desc(d_o, rq, KV_M);
            const tj::Grid grid{tj::cdiv(s.seqlen, KV_N), s.batch * s.heads_kv};
            if (fused) {  // dQ accumulated in f32, [B·Hq, S rounded up to KV_M, D]
              const long long s_pad = dq_acc_rows<KV_M>(static_cast<long long>(s.seqlen));
              fits_i32({s.batch, s.heads_q, s_pad, D}, "the fused backward's dQ accumulator [B·Hq, S rounded up to a block, D]");
              const std::size_t bytes = static_cast<std::size_t>(s.batch * s.heads_q * s_pad) * D * 4;
              float* acc = workspace(bytes);
              dev_.memset(acc, 0, bytes);
              kernel<FlashBwdFusedTma<KV_M, KV_N, D, C, T>>(kv_warps, kv_stages, kv_ws, resident)
                  .launch(grid, dk_d, dv_d, dq_d, ddo_d, lse, delta, dk, dv, acc, s.seqlen, group, sc, sl2);
              kernel<FlashBwdDqConvert<KV_M, D, T>>(4).launch(tj::Grid{tj::cdiv(s.seqlen, KV_M), s.batch * s.heads_q}, acc, dq,
                                                              s.seqlen, sc);
              return;
            }
            kernel<FlashBwdKVTma<KV_M, KV_N, D, C, T>>(kv_warps, kv_stages, kv_ws, resident)
                .launch(grid, dk_d, dv_d, dq_d, ddo_d, lse, delta, dk, dv, s.seqlen, group, sc, sl2);
          }
          const Desc dq_d = desc(q, rq, Q_M), ddo_d = desc(d_o, rq, Q_M), dk_d = desc(k, rkv, Q_N), dv_d = desc(v, rkv, Q_N);
          kernel<FlashBwdQTma<Q_M, Q_N, D, C, T>>(q_warps, q_stages, q_ws, resident)
              .launch(tj::Grid{tj::cdiv(s.seqlen, Q_M), s.batch * s.heads_q}, dq_d, ddo_d, dk_d, dv_d, lse, delta, dq, s.seqlen, group,
                      sc, sl2);
        };
        if (dev_.compute_capability() >= 80 && aligned(q) && aligned(k) && aligned(v) && aligned(d_o)) {
          if (hopper()) {  // TMA, wgmma
            using Cfg = FlashBwdTmaConfig<D>;
            run.template operator()<Cfg::kv_block_m, Cfg::kv_block_n, Cfg::q_block_m, Cfg::q_block_n>(
                Cfg::kv_warps, Cfg::kv_stages, Cfg::kv_ws, Cfg::q_warps, Cfg::q_stages, Cfg::q_ws);
          } else {
            // sm_80 .. sm_89 (and Hopper with set_mma_sync_path): the same kernels compiled without wgmma — the
            // blocks of their loops through 2-stage cp.async rings, the blocks loaded once (K, V; Q, dO) copied once
            // to shared memory (cp_async_resident), mma.sync — 64 x 64 tiles on 4 warps: 3.8–8.3x the pointer
            // kernels below on the H200 compiled for sm_90 (docs/perf.md v0.24).
            // Fused: 128-key blocks on 8 warps, so dQ's share is [BLOCK_M, D] / 256 threads — 64-row query blocks
            // at D = 64, 32-row above (ptxas: 0 / 16 / 52 bytes of spill at D = 64 / 96 / 128, where 64 rows
            // spill 460-700 above D = 64).
            if (fused) run.template operator()<(D == 64 ? 64 : 32), 128, 64, 64>(8, 2, false, 4, 2, false, true);
            else run.template operator()<64, 64, 64, 64>(4, 2, false, 4, 2, false, true);
          }
          return;
        }
      }
      kernel<FlashBwdKV<64, 64, D, C, T>>(4).launch(tj::Grid{tj::cdiv(s.seqlen, 64), s.batch * s.heads_kv}, q, k, v, d_o, lse,
                                                    delta, dk, dv, s.seqlen, group, sc, sl2);
      kernel<FlashBwdQ<64, 64, D, C, T>>(4).launch(tj::Grid{tj::cdiv(s.seqlen, 64), s.batch * s.heads_q}, q, k, v, d_o, lse,
                                                   delta, dq, s.seqlen, group, sc, sl2);
    });
  }

  ~Attention() {
    if (ws_) dev_.free(ws_);
    if (table_) dev_.free(table_);
  }
  Attention(const Attention&) = delete;
  Attention& operator=(const Attention&) = delete;

 private:
  static constexpr double kLog2e = 1.4426950408889634;
  static constexpr double kMinScale = 1e-20, kMaxScale = 1e20;  ///< the softmax scales check() accepts

  template <class F>
  static void with_dim(const AttnShape& s, F&& f) {
    auto go = [&]<int D>() {
      if (s.causal) f.template operator()<D, true>();
      else f.template operator()<D, false>();
    };
    switch (s.head_dim) {
      case 64: go.template operator()<64>(); break;
      case 96: go.template operator()<96>(); break;
      case 128: go.template operator()<128>(); break;
      default: go.template operator()<256>(); break;
    }
  }
  /// The persistent forward's schedule for `shape` on the device (fwd_item_table), rebuilt and uploaded only when the
  /// shape changes: its grid and the device copy of its table.
  std::pair<tj::Grid, const std::int32_t*> item_table(const FwdItemShape& shape) {
    auto key = [](const FwdItemShape& x) {
      return std::tuple{x.seqlen, x.heads_q, x.group, x.head_dim, x.block_m, x.block_n, x.elem_bytes, x.causal, x.programs,
                        x.section_bytes};
    };
    if (table_programs_ == 0 || key(shape) != key(table_shape_)) {
      const FwdItemTable t = fwd_item_table(shape);
      const std::size_t bytes = t.data.size() * sizeof(std::int32_t);
      if (bytes > table_bytes_) {
        std::int32_t* fresh = static_cast<std::int32_t*>(dev_.alloc(bytes));
        if (table_) dev_.free(table_);
        table_ = fresh;
        table_bytes_ = bytes;
      }
      table_programs_ = 0;  // (no valid table until the copy is done)
      dev_.copy_to_device(table_, t.data.data(), bytes);
      table_shape_ = shape;
      table_programs_ = t.programs;
    }
    return {tj::Grid{table_programs_}, table_};
  }
  /// K compiled once per Attention object (the kernel cache keeps the machine code across objects).
  template <class K>
  tj::Kernel<K>& kernel(int warps, int stages = 3, bool warp_specialize = false, bool cp_async_resident = false) {
    auto& slot = kernels_[std::type_index(typeid(K))];
    if (!slot)
      slot = std::make_shared<tj::Kernel<K>>(
          dev_, K{},
          tj::CompileOptions{.num_warps = warps, .num_stages = stages, .arch = mma_sync_ && dev_.compute_capability() == 90 ? "sm_90" : "",
                             .warp_specialize = warp_specialize, .cp_async_resident = cp_async_resident});
    return *static_cast<tj::Kernel<K>*>(slot.get());
  }

  tj::Device dev_;
  FwdSchedule schedule_ = FwdSchedule::automatic;
  bool mma_sync_ = false;  // set_mma_sync_path
  /// The Hopper kernels apply (TMA, wgmma): an sm_90 device, not told to run as another GPU.
  bool hopper() const { return dev_.compute_capability() == 90 && !mma_sync_; }
  std::map<std::type_index, std::shared_ptr<void>> kernels_;
  /// The f32 scratch of decode's splits and the fused backward's dQ accumulator: at least `bytes`, grown as needed.
  float* workspace(std::size_t bytes) {
    if (ws_bytes_ < bytes) {
      // Forget the old workspace before allocating the new one: if alloc throws, the object stays valid (no
      // workspace) rather than holding a freed pointer that a later call would write to and ~Attention free again.
      float* old = std::exchange(ws_, nullptr);
      ws_bytes_ = 0;
      dev_.free(old);
      ws_ = static_cast<float*>(dev_.alloc(bytes));
      ws_bytes_ = bytes;
    }
    return ws_;
  }
  BwdSchedule bwd_schedule_ = BwdSchedule::automatic;
  float* ws_ = nullptr;
  std::size_t ws_bytes_ = 0;
  FwdItemShape table_shape_{};  ///< the shape table_ holds the schedule of
  std::int32_t* table_ = nullptr;
  std::size_t table_bytes_ = 0;
  int table_programs_ = 0;       ///< 0: no valid table
};

}  // namespace examples

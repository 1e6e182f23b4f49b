// examples/gemm/gemm.hpp — rungs 5 and 6 as a library call: an autotuned GEMM.
//
//   examples::Gemm<tj::bf16> gemm(dev);
//   gemm(a, b, c, M, N, K);   // C[M, N] (f32) = A[M, K] · B[N, K]ᵀ, device pointers, row-major
//   examples::Gemm<tj::bf16, tj::bf16> gemm16(dev);
//   gemm16(a, b, c16, M, N, K);   // C[M, N] (bf16) = A · Bᵀ rounded once from the f32 accumulator
//
// C is f32 (Out = float) or the input type (Out = T: bf16 / f16). With Out = T the tuned path races
// store_candidates() instead: the same rungs storing C through a descriptor, by TMA from a 128B-swizzled shared
// staging tile on sm_90a (CompileOptions::tma_store), drained while the next tile's K loop runs — when C is 16-byte
// aligned and its rows are whole 16-byte chunks (N · sizeof(Out) % 16 == 0: TMA writes whole chunks); otherwise,
// the f32 result goes through a workspace and SplitKReduce rounds it into C; on the small-M path the kernel rounds
// its sums into C (one split) or SplitKReduce rounds the splits' sum.
//
// Two paths, chosen by the shape alone (path_for):
//  - small M (decode: M <= 16, or M <= 128 with few output tiles; small_m_for): the swap-AB kernel of
//    matmul_small_m.hpp, Cᵀ tiles with N on wgmma's 64-row side and M on its N side (8 to 128), K split over
//    enough programs to stream B from every SM; the splits are summed by SplitKReduce in a second launch;
//  - everything else races 16 candidates (candidates()): 11 configs of rung 5 (MatmulV5, one program per output
//    tile; power-of-two and NPOT BLOCK_N side by side: 64, 96, 128, 192, 256), 3 of rung 6 (MatmulV6, a
//    persistent grid of min(tiles, SMs) programs with a producer warp group; 128x256, 256x128, 128x192) and 2 of rung 7
//    (MatmulV7Persistent: rung 6 in clusters of two programs that share B's block by TMA multicast) — and stores the winner on disk per device and key {M, N, K, dtype, cands}; later calls — in this
//    process or another — launch the stored winner. Configs that cannot run (shared memory, registers) are
//    skipped with their reason in the tuner's report.
// run_narrow_n runs a narrow-N split-K plan (narrow_n_for) on request; the call never takes it by itself: on the
// H200 it lost to the race's rung-5 64x96 and 64x192 tiles (264 / 449 vs 293 / 523 TFLOP/s at M = K = 8192,
// N = 96 / 192; docs/perf.md v0.7).
//
// One call at a time per Gemm object (it keeps a workspace and the last call's descriptors); use one object per
// thread, or serialise the calls.
//
// Rules checked before anything reaches the device (InvalidArgument naming
// the value and the rule): M, N, K >= 1; M x N < 2^31 (32-bit offsets into C; A and
// B are checked likewise by their descriptors), K < 2^31; K x element size a multiple of 16
// bytes (TMA row strides); A and B 16-byte aligned (TMA base addresses), C
// aligned to its element size (4 bytes f32, 2 bf16 / f16); no pointer null; C not overlapping A or B (the kernel reads
// A and B while it writes C).
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "examples/gemm/matmul_small_m.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "examples/gemm/matmul_v7.hpp"
#include "tilejit/runtime/autotune.hpp"

namespace examples {

template <class T, class Out = float>
class Gemm {
  static_assert(std::is_same_v<Out, float> || (std::is_same_v<Out, T> && (std::is_same_v<T, tj::bf16> || std::is_same_v<T, tj::f16>)),
                "Gemm<T, Out>: C is f32, or bf16 / f16 when the inputs are");
  static constexpr bool kNarrowOut = !std::is_same_v<Out, float>;
  /// Rung 5: one program per output tile, CTA-barrier pipeline of `stages` stages.
  template <int BM, int BN>
  static auto rung5(int stages) {
    return tj::cand<MatmulV5<BM, BN, T>>(tj::Config{{{"BM", BM}, {"BN", BN}}, BM / 16, stages});
  }
  /// Rung 6: persistent (grid() launches min(tiles, SMs) programs), with a producer warp group. PERSISTENT and WS
  /// name it in the config (and in the stored winner); grid() reads PERSISTENT.
  template <int BM, int BN>
  static auto rung6_ws(int stages) {
    return tj::cand<MatmulV6<BM, BN, T>>(tj::Config{{{"BM", BM}, {"BN", BN}, {"PERSISTENT", 1}, {"WS", 1}}, BM / 16, stages},
                                         {.warp_specialize = true});
  }
  /// Rung 7 persistent: rung 6 in clusters of CLUSTER programs sharing B's block by TMA multicast. CLUSTER names it
  /// in the config; grid() launches whole clusters.
  template <int BM, int BN, int CLUSTER>
  static auto rung7p(int stages) {
    return tj::cand<MatmulV7Persistent<BM, BN, T, CLUSTER>>(
        tj::Config{{{"BM", BM}, {"BN", BN}, {"PERSISTENT", 1}, {"WS", 1}, {"CLUSTER", CLUSTER}}, BM / 16, stages},
        {.warp_specialize = true, .num_ctas = CLUSTER});
  }
  using Sig = tj::signature_t<MatmulV5<128, 128, T>>;
  static_assert(std::is_same_v<Sig, tj::signature_t<MatmulV6<128, 256, T>>>, "rungs 5 and 6 take the same arguments");
  /// Rung 6 storing cast<Out>(A·Bᵀ) through C's descriptor, by TMA on sm_90a (STORE names it in the config).
  template <int BM, int BN>
  static auto rung6_store(int stages) {
    return tj::cand<MatmulV6Store<BM, BN, T, Out>>(
        tj::Config{{{"BM", BM}, {"BN", BN}, {"PERSISTENT", 1}, {"WS", 1}, {"STORE", 1}}, BM / 16, stages},
        {.warp_specialize = true, .tma_store = true});
  }
  /// Rung 7 persistent storing through C's descriptor likewise.
  template <int BM, int BN, int CLUSTER>
  static auto rung7p_store(int stages) {
    return tj::cand<MatmulV7PersistentStore<BM, BN, T, Out, CLUSTER>>(
        tj::Config{{{"BM", BM}, {"BN", BN}, {"PERSISTENT", 1}, {"WS", 1}, {"CLUSTER", CLUSTER}, {"STORE", 1}}, BM / 16, stages},
        {.warp_specialize = true, .num_ctas = CLUSTER, .tma_store = true});
  }
  using StoreSig = tj::signature_t<MatmulV6Store<128, 256, T, Out>>;
  static_assert(std::is_same_v<StoreSig, tj::signature_t<MatmulV7PersistentStore<128, 256, T, Out, 2>>>,
                "the store race's kernels take the same arguments");

 public:
  static constexpr int BLOCK_K = MatmulV5<128, 128, T>::BLOCK_K;
  /// The version of candidates(), part of every tuning key: bump it whenever the list changes, so that a winner
  /// stored by an older process (chosen from another race) is not reused. 1: the 16 rung-5 configs (no "cands"
  /// in the key); 2: 11 rung-5 configs + 5 rung-6 persistent warp-specialised ones; 3: 11 rung 5, 3 rung 6, 2 rung 7
  /// persistent in clusters of 2.
  static constexpr int CANDIDATES_VERSION = 3;

  /// The 16 configs. Rung 5 (11): BLOCK_M 64 (one warp group) or 128 (two), BLOCK_N from 64 to 256 including the
  /// NPOT 96 and 192, 3 to 8 stages. The configs docs/gemm.md records as H200 winners or best fixed configs are kept
  /// (128x256/4 on the large shapes, 128x192/4 on gate+up, 64x96/6 and 64x192/6 on narrow N, 64x96 and 128x128 at
  /// M = 128 — the latter's stage count was not recorded, /4 is kept); dropped from the first list of 16, each a
  /// second stage count of a tile that stays: 128x192/3, 128x128/5, 64x256/3, 64x192/4, 64x128/5. Rung 6 (3), with a
  /// producer warp group: 128x256/4, 256x128/4 (four consumer warp groups), the NPOT 128x192/4; rung 7 persistent
  /// (2), clusters of 2 with B multicast: 128x256/4 and 256x128/4 (they replaced rung 6's 128x256/3 and 128x128/4,
  /// which never won on the H200).
  static std::vector<tj::Candidate<Sig>> candidates() {
    return {rung5<128, 256>(3),    rung5<128, 256>(4),    rung5<128, 192>(4),    rung5<128, 128>(4),
            rung5<128, 96>(5),     rung5<128, 64>(6),     rung5<64, 256>(4),     rung5<64, 192>(6),
            rung5<64, 128>(6),     rung5<64, 96>(6),      rung5<64, 64>(8),      rung6_ws<128, 256>(4),
            rung6_ws<256, 128>(4), rung6_ws<128, 192>(4), rung7p<128, 256, 2>(4), rung7p<256, 128, 2>(4)};
  }
  /// The version of store_candidates(), part of the store race's keys (as CANDIDATES_VERSION). 1: the first list
  /// (C staged whole); 2: 128x256 with 4 stages (C staged slab by slab in 32 KiB); 3: 64x96 with 8 stages (was 6:
  /// +4% at M = K = 8192, N = 96 on the H200, docs/perf.md v0.11); 4: 64x192 with 6 stages (was 5: +6-8% at N = 192).
  static constexpr int STORE_CANDIDATES_VERSION = 4;
  /// The store race (Out = T, C through a descriptor; 12 configs). Every tile persistent with a producer warp group
  /// and stored by TMA from shared memory: tiles of more than two 128-byte slabs (BLOCK_N > 128 for bf16) are staged
  /// slab by slab through two slab buffers (BM x 256 bytes), narrower ones whole, and each ring is as deep as
  /// fits beside its staging in 227 KiB: 128x256/4 and /3, 256x128/3 (64 KiB of staging), 128x192/4, 128x128/4,
  /// 64x256/4, 64x192/6, 64x128/6, the NPOT 64x96/8 (its 192-byte rows are not whole 128-byte slabs: it keeps the
  /// masked store, with a diagnostic), 64x64/8; rung 7 persistent in clusters of 2: 128x256/4, 256x128/3.
  /// Power-of-two and NPOT BLOCK_N side by side (96, 192).
  static std::vector<tj::Candidate<StoreSig>> store_candidates() {
    return {rung6_store<128, 256>(4), rung6_store<128, 256>(3), rung6_store<256, 128>(3), rung6_store<128, 192>(4),
            rung6_store<128, 128>(4), rung6_store<64, 256>(4),  rung6_store<64, 192>(6),  rung6_store<64, 128>(6),
            rung6_store<64, 96>(8),   rung6_store<64, 64>(8),   rung7p_store<128, 256, 2>(4), rung7p_store<256, 128, 2>(3)};
  }
  /// True for a rung-6 (persistent) config.
  static bool persistent(const tj::Config& c) { return c.params.contains("PERSISTENT"); }

  explicit Gemm(tj::Device dev, tj::TuneOptions opt = {})
      : dev_(dev), stream_(opt.stream), tuner_("gemm_tn_" + std::string(tj::name(tj::dtype_v<T>)), candidates(), with_device(opt, dev)) {
    if constexpr (kNarrowOut)
      store_tuner_.emplace("gemm_tn_" + std::string(tj::name(tj::dtype_v<T>)) + "_out_" + std::string(tj::name(tj::dtype_v<Out>)),
                           store_candidates(), with_device(std::move(opt), dev));
  }

  /// C[M, N] (Out) = A[M, K] · B[N, K]ᵀ on the tuner's stream (TuneOptions::stream). See the file comment for the
  /// rules and the paths (path_for; with Out = T also stores_by_descriptor).
  void operator()(const T* a, const T* b, Out* c, long long M, long long N, long long K) {
    check(a, b, c, M, N, K);
    const int sms = dev_.num_sms();
    if (SmallM p = small_m_for(M, N, K, sms); p.block_m) {
      // AMD's MFMA tiles are 16 wide at the least: no [64 x 8] accumulator there.
      if (p.block_m < 16 && dev_.backend() == tj::Backend::hip) p = small_m_plan(M, N, K, 16, p.splits);
      return small_m(a, b, c, M, N, K, p);
    }
    const Call& l = tuned_call(a, b, c, M, N, K);
    if constexpr (kNarrowOut) {
      if (l.dc) {
        store_tuner_->launch(l.key, grid(M, N, sms), l.da, l.db, *l.dc, M, N, K);
      } else {
        float* acc = workspace(M * N);
        tuner_.launch(l.key, grid(M, N, sms), l.da, l.db, acc, M, N, K);
        reduce(acc, c, M * N, 1);
      }
    } else {
      tuner_.launch(l.key, grid(M, N, sms), l.da, l.db, c, M, N, K);
    }
  }
  /// With Out = T, whether the tuned path stores C through a descriptor (the store race): C 16-byte aligned and
  /// N · sizeof(Out) a multiple of 16 bytes; else the f32 race into a workspace and a rounding pass.
  static bool stores_by_descriptor(const Out* c, long long N) {
    return kNarrowOut && reinterpret_cast<std::uintptr_t>(c) % 16 == 0 && N * static_cast<long long>(sizeof(Out)) % 16 == 0;
  }
  /// The tuning report of a shape already run (the store race's when it ran the shape). Throws InvalidArgument for
  /// a shape that runs a fixed kernel (the small-M path: never tuned; path_for tells which).
  const tj::TuneReport& report(long long M, long long N, long long K) const {
    if (const std::string fixed = describe(M, N, K, dev_.num_sms()); !fixed.empty())
      throw tj::InvalidArgument(fmt::format("gemm: M = {}, N = {}, K = {} runs {}, a fixed kernel: it has no tuning report", M, N, K, fixed));
    if constexpr (kNarrowOut) {
      if (const tj::TuneReport* r = store_tuner_->find(store_key(M, N, K))) return *r;
    }
    return tuner_.report(key(M, N, K));  // the f32 race's report (or its error)
  }
  tj::Autotuner<Sig>& tuner() { return tuner_; }
  /// The store race's tuner (Out = T only).
  tj::Autotuner<StoreSig>& store_tuner() requires kNarrowOut { return *store_tuner_; }

  /// Which kernel a shape runs: the small-M path or the race's winner.
  enum class Path { tuned, small_m };
  static Path path_for(long long M, long long N, long long K, int sms) {
    return small_m_for(M, N, K, sms).block_m ? Path::small_m : Path::tuned;
  }

  /// A small-M kernel (matmul_small_m.hpp, B tiles of SMALL_M_BLOCK_N rows): wgmma's N side BLOCK_M, its ring's
  /// stages, and how many of its programs fit on one Hopper SM (228 KiB of shared memory, 1 KiB of it reserved per
  /// program; the ring is stages x (8 KiB of B + BLOCK_M x 128 bytes of A), plus its barriers and 1 KiB of alignment).
  struct SmallMKernel {
    int block_m, stages, per_sm;
  };
  static constexpr int SMALL_M_BLOCK_N = 64;  // one warp group: the most programs for a given N
  /// 8 / 8 stages (74 KiB), 16 / 7 (72 KiB), 32 / 6 (74 KiB), 64 / 4 (66 KiB): three programs per SM; 128 / 4 (98 KiB): two.
  static constexpr std::array<SmallMKernel, 5> SMALL_M_KERNELS{{{8, 8, 3}, {16, 7, 3}, {32, 6, 3}, {64, 4, 3}, {128, 4, 2}}};

  /// The small-M plan: MatmulSmallM<SMALL_M_BLOCK_N, block_m, T> on `tiles` tiles of Cᵀ, each summed over K by
  /// `splits` programs (k_split elements of K each, a multiple of BLOCK_K); SplitKReduce adds the splits when there
  /// are several. block_m = 0: not taken.
  struct SmallM {
    int block_m = 0, stages = 0, per_sm = 0;
    long long tiles = 0, splits = 1, k_split = 0;
  };
  /// Taken for M <= 16 always (the race's tiles have 64 rows at least), and for 16 < M <= 128 where the former
  /// split-K path went, which this kernel replaces: while [64 x 128] tiles would fill at most half the SMs and K is
  /// long enough to split (more tiles than that: the race's one-program-per-tile kernels fill the machine,
  /// 1.01-1.02x cuBLAS at M = 128 on the H200). block_m is the
  /// smallest kernel's BLOCK_M >= M. Splits: enough for two programs per SM (2 x sms, ceil), no more than fit at
  /// once (per_sm x sms), at most 16 of at least 4 K steps each, and the partial sums [splits, M, N] f32 within
  /// max(B's bytes / 8, 8 MiB) (written and read once more; a few per cent of B at M <= 16) and 32-bit offsets.
  /// K's steps are shared evenly (small_m_plan).
  static SmallM small_m_for(long long M, long long N, long long K, int sms) {
    if (M > 128 || sms < 1) return {};
    if (M > 16 && tj::cdiv(M, 64) * tj::cdiv(N, 128) * 2 > sms) return {};
    int block_m = SMALL_M_KERNELS.back().block_m, per_sm = 1;
    for (const SmallMKernel& k : SMALL_M_KERNELS)
      if (k.block_m >= M) {
        block_m = k.block_m, per_sm = k.per_sm;
        break;
      }
    const long long tiles = tj::cdiv(M, block_m) * tj::cdiv(N, SMALL_M_BLOCK_N);
    const long long steps = tj::cdiv(K, BLOCK_K), slots = per_sm * static_cast<long long>(sms);
    const long long ws_cap = std::max(N * K * static_cast<long long>(sizeof(T)) / 8, 8LL << 20);
    long long max_s = std::max(1LL, std::min(16LL, steps / 4));
    while (max_s > 1 && (max_s * M * N * 4 > ws_cap || max_s * M * N > 2147483647LL)) --max_s;
    long long s = std::min(max_s, tj::cdiv(2LL * sms, tiles));
    if (tiles * s > slots) s = std::max(1LL, std::min(s, slots / tiles));
    const SmallM p = small_m_plan(M, N, K, block_m, s);
    if (M > 16 && p.splits < 2) return {};
    return p;
  }
  /// The small-M plan with BLOCK_M = block_m (one of SMALL_M_KERNELS; InvalidArgument otherwise) and K's steps shared
  /// evenly by `splits` programs per tile (fewer when K has fewer steps; the last split is the short one).
  static SmallM small_m_plan(long long M, long long N, long long K, int block_m, long long splits) {
    SmallM p;
    for (const SmallMKernel& k : SMALL_M_KERNELS)
      if (k.block_m == block_m) p.block_m = k.block_m, p.stages = k.stages, p.per_sm = k.per_sm;
    if (!p.block_m) throw tj::InvalidArgument(fmt::format("gemm: small-M BLOCK_M = {}: must be 8, 16, 32, 64 or 128", block_m));
    p.tiles = tj::cdiv(M, p.block_m) * tj::cdiv(N, SMALL_M_BLOCK_N);
    std::tie(p.splits, p.k_split) = even_splits(K, splits);
    return p;
  }

  /// A narrow-N kernel: rung 5's split-K kernel MatmulV5SplitK<NARROW_N_BLOCK_M, block_n, T> (two consumer warp
  /// groups) and its ring's stages: 64 / 8, 96 / 7, 128 / 6, 192 / 5 — 192 to 202 KiB, one program per SM.
  struct NarrowNKernel {
    int block_n, stages;
  };
  static constexpr int NARROW_N_BLOCK_M = 128;
  static constexpr std::array<NarrowNKernel, 4> NARROW_N_KERNELS{{{64, 8}, {96, 7}, {128, 6}, {192, 5}}};
  /// The narrow-N plan: `tiles` blocks of NARROW_N_BLOCK_M rows by block_n (>= N: one block column), `splits`
  /// programs per block over K, SplitKReduce. block_n = 0: not taken.
  struct NarrowN {
    int block_n = 0, stages = 0;
    long long tiles = 0, splits = 1, k_split = 0;
  };
  /// For run_narrow_n (never taken by operator(): measured slower than the race, see the file comment). Given for
  /// N <= 192 (not small M) while the 128-row blocks fill at most half the SMs. The idea: at M = K = 8192, N = 96
  /// rung 5's best (64 x 96, 6 stages) runs 128 programs, one per SM, each with 5 x 8 KiB of A in flight, and reads
  /// A at ~3.1 TB/s (43 us; 49 us at N = 192 with twice the multiplies): bound, we read it, by A's copies in flight
  /// (docs/gemm.md, "Side rung"). 128-row
  /// blocks with a ring of 5-8 stages hold 64-112 KiB of A in flight per SM, and splitting K gives back the
  /// programs: splits = SMs / blocks (one wave), at most 16 of at least 8 K steps, the partial sums within a
  /// quarter of A's bytes and 32-bit offsets, and at least 2 (else the race).
  static NarrowN narrow_n_for(long long M, long long N, long long K, int sms) {
    if (N > 192 || sms < 1 || small_m_for(M, N, K, sms).block_m) return {};
    const long long tiles = tj::cdiv(M, NARROW_N_BLOCK_M);
    if (tiles * 2 > sms) return {};
    const long long steps = tj::cdiv(K, BLOCK_K);
    long long s = std::min({sms / tiles, 16LL, steps / 8});
    while (s > 1 && (s * M * N * 4 > M * K * static_cast<long long>(sizeof(T)) / 4 || s * M * N > 2147483647LL)) --s;
    if (s < 2) return {};
    for (const NarrowNKernel& k : NARROW_N_KERNELS)
      if (k.block_n >= N) return narrow_n_plan(M, N, K, k.block_n, s);
    return {};
  }
  /// The narrow-N plan with BLOCK_N = block_n (one of NARROW_N_KERNELS; InvalidArgument otherwise), `splits` as in
  /// small_m_plan.
  static NarrowN narrow_n_plan(long long M, long long N, long long K, int block_n, long long splits) {
    NarrowN p;
    for (const NarrowNKernel& k : NARROW_N_KERNELS)
      if (k.block_n == block_n) p.block_n = k.block_n, p.stages = k.stages;
    if (!p.block_n) throw tj::InvalidArgument(fmt::format("gemm: narrow-N BLOCK_N = {}: must be 64, 96, 128 or 192", block_n));
    p.tiles = tj::cdiv(M, NARROW_N_BLOCK_M) * tj::cdiv(N, p.block_n);
    std::tie(p.splits, p.k_split) = even_splits(K, splits);
    return p;
  }

  /// Runs a given small-M plan (small_m_for's or small_m_plan's): the path operator() takes for small M, forced —
  /// for tests and benchmarks. The rules of operator(), plus a plan that matches the shape (InvalidArgument).
  void run_small_m(const T* a, const T* b, Out* c, long long M, long long N, long long K, const SmallM& p) {
    check(a, b, c, M, N, K);
    check_plan(small_m_plan(M, N, K, p.block_m, p.splits), p, M * N, K, "small-M");
    small_m(a, b, c, M, N, K, p);
  }
  /// Runs a given narrow-N plan, as run_small_m.
  void run_narrow_n(const T* a, const T* b, Out* c, long long M, long long N, long long K, const NarrowN& p) {
    check(a, b, c, M, N, K);
    check_plan(narrow_n_plan(M, N, K, p.block_n, p.splits), p, M * N, K, "narrow-N");
    narrow_n(a, b, c, M, N, K, p);
  }

  /// The fixed kernel a shape runs, in words ("" when it runs the race's winner): report()'s error, bench labels.
  static std::string describe(long long M, long long N, long long K, int sms) {
    if (const SmallM p = small_m_for(M, N, K, sms); p.block_m)
      return fmt::format("the small-M kernel (swap AB: [{} x {}] tiles of C^T, {} stages; {})", SMALL_M_BLOCK_N, p.block_m, p.stages,
                         p.splits > 1 ? fmt::format("split-K {} x {} + reduce", p.splits, p.k_split) : std::string("no split"));
    return {};
  }

  static tj::TuneKey key(long long M, long long N, long long K) {
    return tj::TuneKey{{"M", M}, {"N", N}, {"K", K}, {"dtype", std::string(tj::name(tj::dtype_v<T>))}, {"cands", CANDIDATES_VERSION}};
  }
  /// The store race's key: key()'s properties with C's type and the store list's version.
  static tj::TuneKey store_key(long long M, long long N, long long K) {
    return tj::TuneKey{{"M", M},         {"N", N},
                       {"K", K},         {"dtype", std::string(tj::name(tj::dtype_v<T>))},
                       {"out", std::string(tj::name(tj::dtype_v<Out>))}, {"cands", STORE_CANDIDATES_VERSION}};
  }
  /// The launch grid of a config: one program per [BM, BN] tile (rung 5), or min(tiles, sms) programs that walk
  /// the tiles (rung 6; `sms` = the device's SM count).
  static auto grid(long long M, long long N, int sms) {
    return [M, N, sms](const tj::Config& c) {
      const long long bm = c.param("BM"), bn = c.param("BN");
      if (c.params.contains("CLUSTER"))
        return cluster_persistent_grid(M, N, static_cast<int>(bm), static_cast<int>(bn), static_cast<int>(c.param("CLUSTER")), sms);
      if (persistent(c)) return persistent_grid(M, N, static_cast<int>(bm), static_cast<int>(bn), sms);
      return tj::Grid{tj::cdiv(M, bm) * tj::cdiv(N, bn)};
    };
  }

  static void check(const T* a, const T* b, const Out* c, long long M, long long N, long long K) {
    if (M < 1 || N < 1 || K < 1)
      throw tj::InvalidArgument(fmt::format("gemm: M = {}, N = {}, K = {}: every extent must be >= 1", M, N, K));
    constexpr long long kMax = 2147483647LL;
    if (M > kMax || N > kMax || M * N > kMax)  // M, N checked alone first: their product may not wrap
      throw tj::InvalidArgument(fmt::format("gemm: C [{}, {}] has {} elements: the kernels index C with 32-bit offsets, at most "
                                            "2^31 - 1 elements; split the product along M", M, N,
                                            M > kMax || N > kMax ? std::string("more than 2^31 - 1") : std::to_string(M * N)));
    if (K > kMax)
      throw tj::InvalidArgument(fmt::format("gemm: K = {}: A [M, K] and B [N, K] are indexed with 32-bit offsets, K is at most "
                                            "2^31 - 1", K));
    // A's and B's descriptors span at most 2^31 - 1 elements (the kernels' 32-bit offsets). Checked here so the error
    // names the operand: the small-M kernels take B first (swap AB), and their argument numbers would mislead.
    for (auto [rows, what] : {std::pair{M, "A [M, K]"}, std::pair{N, "B [N, K]"}})
      if (rows * K > kMax)  // both <= 2^31 - 1: no wrap
        throw tj::InvalidArgument(fmt::format("gemm: {} = [{}, {}] has {} elements: its descriptor's offsets are 32-bit, at most "
                                              "2^31 - 1 elements; split the product along {}", what, rows, K, rows * K,
                                              what[0] == 'A' ? "M" : "N"));
    if (K * static_cast<long long>(sizeof(T)) % 16 != 0)
      throw tj::InvalidArgument(fmt::format("gemm: K = {} gives rows of {} bytes: K x element size must be a multiple of 16 bytes "
                                            "(TMA row strides); pad K to a multiple of {}", K, K * sizeof(T), 16 / sizeof(T)));
    auto addr = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    for (auto [p, what] : {std::pair{static_cast<const void*>(a), "A"}, std::pair{static_cast<const void*>(b), "B"}})
      if (!p || addr(p) % 16 != 0)
        throw tj::InvalidArgument(fmt::format("gemm: {} = {}: must be a non-null, 16-byte aligned device pointer (TMA base)", what, p));
    if (!c || addr(c) % sizeof(Out) != 0)
      throw tj::InvalidArgument(fmt::format("gemm: C = {}: must be a non-null pointer aligned to its element size ({} bytes)",
                                            static_cast<const void*>(c), sizeof(Out)));
    const auto c0 = addr(c), c1 = c0 + static_cast<std::uintptr_t>(M * N) * sizeof(Out);
    auto overlaps = [&](const void* p, long long elems) {
      const auto p0 = addr(p), p1 = p0 + static_cast<std::uintptr_t>(elems) * sizeof(T);
      return p0 < c1 && c0 < p1;
    };
    if (overlaps(a, M * K)) throw tj::InvalidArgument(fmt::format("gemm: C [{}, {}] at {} overlaps A: the output may not alias an input", M, N, static_cast<const void*>(c)));
    if (overlaps(b, N * K)) throw tj::InvalidArgument(fmt::format("gemm: C [{}, {}] at {} overlaps B: the output may not alias an input", M, N, static_cast<const void*>(c)));
  }

 private:
  /// `splits` programs sharing K's BLOCK_K steps evenly: (splits, k_split), splits clamped to [1, steps].
  static std::pair<long long, long long> even_splits(long long K, long long splits) {
    const long long steps = tj::cdiv(K, BLOCK_K);
    const long long k_split = tj::cdiv(steps, std::clamp(splits, 1LL, steps)) * BLOCK_K;
    return {tj::cdiv(K, k_split), k_split};
  }
  template <class Plan>
  static void check_plan(const Plan& want, const Plan& p, long long mn, long long K, const char* what) {
    if (want.tiles != p.tiles || want.splits != p.splits || want.k_split != p.k_split)
      throw tj::InvalidArgument(fmt::format("gemm: {} plan with {} tiles, {} splits of {} does not fit this shape (K = {}): "
                                            "{} tiles, {} splits of {}; build it with the plan functions",
                                            what, p.tiles, p.splits, p.k_split, K, want.tiles, want.splits, want.k_split));
    if (p.splits * mn > 2147483647LL)
      throw tj::InvalidArgument(fmt::format("gemm: {} plan: {} splits of C's {} elements: the partial sums are indexed with "
                                            "32-bit offsets, at most 2^31 - 1 elements; use fewer splits", what, p.splits, mn));
  }
  /// What a tuned-path call builds on the host — A's and B's descriptors (C's for the store race) and the tuning
  /// key — kept for the next call with the same operands and shape: building a descriptor encodes a tensor map
  /// in the driver, host time during which the GPU may idle between back-to-back GEMMs.
  struct Call {
    const T* a;
    const T* b;
    const Out* c;
    long long M, N, K;
    tj::TensorDescriptor da, db;
    std::optional<tj::TensorDescriptor> dc;  // the store race's C; none: C written through a pointer
    tj::TuneKey key;
  };
  const Call& tuned_call(const T* a, const T* b, Out* c, long long M, long long N, long long K) {
    if (last_ && last_->a == a && last_->b == b && last_->c == c && last_->M == M && last_->N == N && last_->K == K) return *last_;
    using D = tj::TensorDescriptor;
    // Block [64, BLOCK_K] here; each config's kernel re-encodes the blocks it loads (once per tensor).
    D da(dev_, const_cast<T*>(a), tj::dtype_v<T>, {M, K}, {K, 1}, {64, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    D db(dev_, const_cast<T*>(b), tj::dtype_v<T>, {N, K}, {K, 1}, {64, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    std::optional<D> dc;
    // Any block here: each kernel re-encodes C with the box it stores (128-byte slabs).
    if (stores_by_descriptor(c, N))
      dc.emplace(dev_, c, tj::dtype_v<Out>, std::vector<std::int64_t>{M, N}, std::vector<std::int64_t>{N, 1},
                 std::vector<std::int64_t>{64, 128 / static_cast<std::int64_t>(sizeof(Out))}, D::Options{.swizzle = D::Swizzle::b128});
    tj::TuneKey k = dc ? store_key(M, N, K) : key(M, N, K);
    last_.emplace(Call{a, b, c, M, N, K, std::move(da), std::move(db), std::move(dc), std::move(k)});
    return *last_;
  }
  /// The split-K workspace [splits, M, N], grown as needed (kept: decode calls the same shapes again and again).
  float* workspace(long long elems) {
    const std::size_t need = static_cast<std::size_t>(elems) * 4;
    if (ws_bytes_ < need) {
      if (ws_) dev_.free(ws_);
      ws_ = nullptr, ws_bytes_ = 0;
      ws_ = static_cast<float*>(dev_.alloc(need));
      ws_bytes_ = need;
    }
    return ws_;
  }
  /// The rounding pass (Out = T) or split-K's sum: c[i] = Out(Σ_s ws[s · n + i]).
  void reduce(const float* ws, Out* c, long long n, long long splits) {
    reduce_.launch(stream_, tj::Grid{tj::cdiv(n, 1024)}, ws, c, n, splits);
  }
  void small_m(const T* a, const T* b, Out* c, long long M, long long N, long long K, const SmallM& p) {
    using D = tj::TensorDescriptor;
    // The kernels' own blocks and swizzle: no re-encoding at launch.
    D db(dev_, const_cast<T*>(b), tj::dtype_v<T>, {N, K}, {K, 1}, {SMALL_M_BLOCK_N, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    D da(dev_, const_cast<T*>(a), tj::dtype_v<T>, {M, K}, {K, 1}, {p.block_m, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    const tj::Grid g{p.tiles, p.splits};
    if constexpr (kNarrowOut) {
      if (p.splits == 1)  // one split: the kernel rounds its sums into C itself
        return with_small_kernel<true>(p.block_m, [&](auto& kernel) { kernel.launch(stream_, g, db, da, c, M, N, K, p.k_split); });
    }
    float* out = nullptr;
    if constexpr (kNarrowOut)
      out = workspace(p.splits * M * N);  // several splits here
    else
      out = p.splits > 1 ? workspace(p.splits * M * N) : c;
    with_small_kernel<false>(p.block_m, [&](auto& kernel) { kernel.launch(stream_, g, db, da, out, M, N, K, p.k_split); });
    if (p.splits > 1) reduce(out, c, M * N, p.splits);
  }
  /// f(the small-M kernel of BLOCK_M = block_m): the one writing Out (OUT) or f32 partial sums.
  template <bool OUT, class F>
  void with_small_kernel(int block_m, F&& f) {
    auto pick = [&](auto& to_out, auto& to_f32) {
      if constexpr (OUT)
        f(to_out);
      else
        f(to_f32);
    };
    switch (block_m) {
      case 8: return pick(small8_out_, small8_);
      case 16: return pick(small16_out_, small16_);
      case 32: return pick(small32_out_, small32_);
      case 64: return pick(small64_out_, small64_);
      default: return pick(small128_out_, small128_);
    }
  }
  void narrow_n(const T* a, const T* b, Out* c, long long M, long long N, long long K, const NarrowN& p) {
    using D = tj::TensorDescriptor;
    D da(dev_, const_cast<T*>(a), tj::dtype_v<T>, {M, K}, {K, 1}, {NARROW_N_BLOCK_M, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    D db(dev_, const_cast<T*>(b), tj::dtype_v<T>, {N, K}, {K, 1}, {p.block_n, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    float* ws = workspace(p.splits * M * N);
    const tj::Grid g{p.tiles, p.splits};
    auto go = [&](auto& kernel) { kernel.launch(stream_, g, da, db, ws, M, N, K, p.k_split); };
    switch (p.block_n) {
      case 64: go(narrow64_); break;
      case 96: go(narrow96_); break;
      case 128: go(narrow128_); break;
      default: go(narrow192_); break;
    }
    reduce(ws, c, M * N, p.splits);
  }
  static tj::TuneOptions with_device(tj::TuneOptions o, const tj::Device& d) {  // by value: the store race takes a copy too
    if (!o.device) o.device = d;
    return o;
  }
  static constexpr int small_stages(int block_m) {
    for (const SmallMKernel& k : SMALL_M_KERNELS)
      if (k.block_m == block_m) return k.stages;
    return 0;
  }
  static constexpr int narrow_stages(int block_n) {
    for (const NarrowNKernel& k : NARROW_N_KERNELS)
      if (k.block_n == block_n) return k.stages;
    return 0;
  }
  template <int BM, class O = float>
  using SmallKernel = tj::Kernel<MatmulSmallM<SMALL_M_BLOCK_N, BM, T, O>>;
  template <int BN>
  using NarrowKernel = tj::Kernel<MatmulV5SplitK<NARROW_N_BLOCK_M, BN, T>>;
  static tj::CompileOptions small_options(int block_m) { return {.num_warps = SMALL_M_BLOCK_N / 16, .num_stages = small_stages(block_m)}; }
  static tj::CompileOptions narrow_options(int block_n) { return {.num_warps = NARROW_N_BLOCK_M / 16, .num_stages = narrow_stages(block_n)}; }

  tj::Device dev_;
  tj::Stream stream_;
  tj::Autotuner<Sig> tuner_;
  std::optional<tj::Autotuner<StoreSig>> store_tuner_;  // Out = T only
  // Traced here, compiled at their first launch (through the kernel cache).
  SmallKernel<8> small8_{dev_, {}, small_options(8)};
  SmallKernel<16> small16_{dev_, {}, small_options(16)};
  SmallKernel<32> small32_{dev_, {}, small_options(32)};
  SmallKernel<64> small64_{dev_, {}, small_options(64)};
  SmallKernel<128> small128_{dev_, {}, small_options(128)};
  // Out = T, one split: C written by the kernel (none for an f32 C: the kernels above write it).
  template <int BM>
  using SmallOutKernel = std::conditional_t<kNarrowOut, SmallKernel<BM, Out>, std::monostate>;
  template <int BM>
  SmallOutKernel<BM> small_out_kernel() {
    if constexpr (kNarrowOut)
      return SmallKernel<BM, Out>{dev_, {}, small_options(BM)};
    else
      return {};
  }
  SmallOutKernel<8> small8_out_ = small_out_kernel<8>();
  SmallOutKernel<16> small16_out_ = small_out_kernel<16>();
  SmallOutKernel<32> small32_out_ = small_out_kernel<32>();
  SmallOutKernel<64> small64_out_ = small_out_kernel<64>();
  SmallOutKernel<128> small128_out_ = small_out_kernel<128>();
  NarrowKernel<64> narrow64_{dev_, {}, narrow_options(64)};
  NarrowKernel<96> narrow96_{dev_, {}, narrow_options(96)};
  NarrowKernel<128> narrow128_{dev_, {}, narrow_options(128)};
  NarrowKernel<192> narrow192_{dev_, {}, narrow_options(192)};
  tj::Kernel<SplitKReduce<1024, Out>> reduce_{dev_, {}, {.num_warps = 4}};
  float* ws_ = nullptr;
  std::size_t ws_bytes_ = 0;
  std::optional<Call> last_;  // the last tuned-path call (tuned_call)

 public:
  ~Gemm() {
    if (ws_) dev_.free(ws_);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
};

}  // namespace examples

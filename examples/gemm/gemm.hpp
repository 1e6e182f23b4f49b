// examples/gemm/gemm.hpp — rungs 5 and 6 as a library call: an autotuned GEMM.
//
//   examples::Gemm<tj::bf16> gemm(dev);
//   gemm(a, b, c, M, N, K);   // C[M, N] (f32) = A[M, K] · B[N, K]ᵀ, device pointers, row-major
//
// The first call for a shape races 16 candidates (candidates()): 11 configs of
// rung 5 (MatmulV5, one program per output tile; power-of-two and NPOT
// BLOCK_N side by side: 64, 96, 128, 192, 256) and 5 of rung 6 (MatmulV6, a
// persistent grid of min(tiles, SMs) programs with a producer warp group;
// 128x256, 256x128, 128x192, 128x128) — and stores the winner on disk per
// device and key {M, N, K, dtype, cands}; later calls — in this process or
// another — launch the stored winner. Configs that cannot run (shared memory,
// registers) are skipped with their reason in the tuner's report. Small M
// (decode) with few output tiles instead splits K over more programs and sums
// the partial products in a second launch (MatmulV5SplitK + SplitKReduce).
//
// Rules checked before anything reaches the device (InvalidArgument naming
// the value and the rule): M, N, K >= 1; M x N < 2^31 (32-bit offsets into C; A and
// B are checked likewise by their descriptors); K x element size a multiple of 16
// bytes (TMA row strides); A and B 16-byte aligned (TMA base addresses), C
// 4-byte aligned; no pointer null; C not overlapping A or B (the kernel reads
// A and B while it writes C).
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "examples/gemm/matmul_v5.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "tilejit/runtime/autotune.hpp"

namespace examples {

template <class T>
class Gemm {
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
  using Sig = tj::signature_t<MatmulV5<128, 128, T>>;
  static_assert(std::is_same_v<Sig, tj::signature_t<MatmulV6<128, 256, T>>>, "rungs 5 and 6 take the same arguments");

 public:
  static constexpr int BLOCK_K = MatmulV5<128, 128, T>::BLOCK_K;
  /// The version of candidates(), part of every tuning key: bump it whenever the list changes, so that a winner
  /// stored by an older process (chosen from another race) is not reused. 1: the 16 rung-5 configs (no "cands"
  /// in the key); 2: 11 rung-5 configs + 5 rung-6 persistent warp-specialised ones.
  static constexpr int CANDIDATES_VERSION = 2;

  /// The 16 configs. Rung 5 (11): BLOCK_M 64 (one warp group) or 128 (two), BLOCK_N from 64 to 256 including the
  /// NPOT 96 and 192, 3 to 8 stages. The configs docs/gemm.md records as H200 winners or best fixed configs are kept
  /// (128x256/4 on the large shapes, 128x192/4 on gate+up, 64x96/6 and 64x192/6 on narrow N, 64x96 and 128x128 at
  /// M = 128 — the latter's stage count was not recorded, /4 is kept); dropped from the first list of 16, each a
  /// second stage count of a tile that stays: 128x192/3, 128x128/5, 64x256/3, 64x192/4, 64x128/5. Rung 6 (5), with a
  /// producer warp group: 128x256/4 and /3, 256x128/4 (four consumer warp groups), the NPOT 128x192/4, 128x128/4.
  static std::vector<tj::Candidate<Sig>> candidates() {
    return {rung5<128, 256>(3),   rung5<128, 256>(4),   rung5<128, 192>(4),    rung5<128, 128>(4),
            rung5<128, 96>(5),    rung5<128, 64>(6),    rung5<64, 256>(4),     rung5<64, 192>(6),
            rung5<64, 128>(6),    rung5<64, 96>(6),     rung5<64, 64>(8),      rung6_ws<128, 256>(4),
            rung6_ws<128, 256>(3), rung6_ws<256, 128>(4), rung6_ws<128, 192>(4), rung6_ws<128, 128>(4)};
  }
  /// True for a rung-6 (persistent) config.
  static bool persistent(const tj::Config& c) { return c.params.contains("PERSISTENT"); }

  explicit Gemm(tj::Device dev, tj::TuneOptions opt = {}) : dev_(dev), tuner_("gemm_tn_" + std::string(tj::name(tj::dtype_v<T>)), candidates(), with_device(std::move(opt), dev)) {}

  /// C[M, N] (f32) = A[M, K] · B[N, K]ᵀ on the tuner's stream (TuneOptions::stream). See the file comment for the rules.
  /// Small M with few output tiles takes the split-K path (split_k_for).
  void operator()(const T* a, const T* b, float* c, long long M, long long N, long long K) {
    check(a, b, c, M, N, K);
    if (const SplitK sk = split_k_for(M, N, K, dev_.num_sms()); sk.splits > 1) return split_k(a, b, c, M, N, K, sk);
    using D = tj::TensorDescriptor;
    // Block [64, BLOCK_K] here; each config's kernel re-encodes the blocks it loads (once per tensor).
    D da(dev_, const_cast<T*>(a), tj::dtype_v<T>, {M, K}, {K, 1}, {64, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    D db(dev_, const_cast<T*>(b), tj::dtype_v<T>, {N, K}, {K, 1}, {64, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    tuner_.launch(key(M, N, K), grid(M, N, dev_.num_sms()), da, db, c, M, N, K);
  }
  /// The tuning report of a shape already run. Throws InvalidArgument for a shape that takes the split-K path
  /// (small M: a fixed kernel, never tuned; split_k_for tells which).
  const tj::TuneReport& report(long long M, long long N, long long K) const {
    if (const SplitK sk = split_k_for(M, N, K, dev_.num_sms()); sk.splits > 1)
      throw tj::InvalidArgument(fmt::format("gemm: M = {}, N = {}, K = {} runs split-K ({} splits of {}), a fixed kernel: it has no "
                                            "tuning report", M, N, K, sk.splits, sk.k_split));
    return tuner_.report(key(M, N, K));
  }
  tj::Autotuner<Sig>& tuner() { return tuner_; }

  /// Split-K plan for small M, on [64 x 128] tiles: the number of K splits (each a multiple of
  /// BLOCK_K with at least 4 steps, at most 16 splits) that best fills the last wave of programs
  /// (two per SM) — kept only when it beats no split by 5 points of occupancy. Taken for M <= 16
  /// (the partial sums are tiny), and for M <= 128 only while the tiles fill at most half the SMs.
  /// splits = 1: no split.
  struct SplitK {
    long long splits = 1, k_split = 0;
  };
  static SplitK split_k_for(long long M, long long N, long long K, int sms) {
    const long long tiles = tj::cdiv(M, 64) * tj::cdiv(N, 128);
    if (M > 128 || (M > 16 && tiles * 2 > sms) || sms < 1) return {};
    const long long max_splits = std::min<long long>(16, K / (4 * BLOCK_K));
    const long long slots = 2LL * sms;  // the split kernel (4 stages, 96 KiB) fits two programs per SM
    auto occupancy = [&](long long s) { return double(tiles * s) / double(tj::cdiv(tiles * s, slots) * slots); };
    long long best = 1;
    for (long long s = 2; s <= max_splits; ++s)
      if (occupancy(s) > occupancy(best) + 0.05) best = s;
    if (best < 2) return {};
    const long long k_split = tj::cdiv(tj::cdiv(K, best), BLOCK_K) * BLOCK_K;
    return {tj::cdiv(K, k_split), k_split};
  }

  static tj::TuneKey key(long long M, long long N, long long K) {
    return tj::TuneKey{{"M", M}, {"N", N}, {"K", K}, {"dtype", std::string(tj::name(tj::dtype_v<T>))}, {"cands", CANDIDATES_VERSION}};
  }
  /// The launch grid of a config: one program per [BM, BN] tile (rung 5), or min(tiles, sms) programs that walk
  /// the tiles (rung 6; `sms` = the device's SM count).
  static auto grid(long long M, long long N, int sms) {
    return [M, N, sms](const tj::Config& c) {
      const long long bm = c.param("BM"), bn = c.param("BN");
      if (persistent(c)) return persistent_grid(M, N, static_cast<int>(bm), static_cast<int>(bn), sms);
      return tj::Grid{tj::cdiv(M, bm) * tj::cdiv(N, bn)};
    };
  }

  static void check(const T* a, const T* b, const float* c, long long M, long long N, long long K) {
    if (M < 1 || N < 1 || K < 1)
      throw tj::InvalidArgument(fmt::format("gemm: M = {}, N = {}, K = {}: every extent must be >= 1", M, N, K));
    if (M * N > 2147483647LL)
      throw tj::InvalidArgument(fmt::format("gemm: C [{}, {}] has {} elements: the kernels index C with 32-bit offsets, at most "
                                            "2^31 - 1 elements; split the product along M", M, N, M * N));
    if (K * static_cast<long long>(sizeof(T)) % 16 != 0)
      throw tj::InvalidArgument(fmt::format("gemm: K = {} gives rows of {} bytes: K x element size must be a multiple of 16 bytes "
                                            "(TMA row strides); pad K to a multiple of {}", K, K * sizeof(T), 16 / sizeof(T)));
    auto addr = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    for (auto [p, what] : {std::pair{static_cast<const void*>(a), "A"}, std::pair{static_cast<const void*>(b), "B"}})
      if (!p || addr(p) % 16 != 0)
        throw tj::InvalidArgument(fmt::format("gemm: {} = {}: must be a non-null, 16-byte aligned device pointer (TMA base)", what, p));
    if (!c || addr(c) % 4 != 0) throw tj::InvalidArgument(fmt::format("gemm: C = {}: must be a non-null, 4-byte aligned pointer", static_cast<const void*>(c)));
    const auto c0 = addr(c), c1 = c0 + static_cast<std::uintptr_t>(M * N) * 4;
    auto overlaps = [&](const void* p, long long elems) {
      const auto p0 = addr(p), p1 = p0 + static_cast<std::uintptr_t>(elems) * sizeof(T);
      return p0 < c1 && c0 < p1;
    };
    if (overlaps(a, M * K)) throw tj::InvalidArgument(fmt::format("gemm: C [{}, {}] at {} overlaps A: the output may not alias an input", M, N, static_cast<const void*>(c)));
    if (overlaps(b, N * K)) throw tj::InvalidArgument(fmt::format("gemm: C [{}, {}] at {} overlaps B: the output may not alias an input", M, N, static_cast<const void*>(c)));
  }

 private:
  void split_k(const T* a, const T* b, float* c, long long M, long long N, long long K, SplitK sk) {
    using D = tj::TensorDescriptor;
    const std::size_t need = static_cast<std::size_t>(sk.splits * M * N) * 4;
    if (ws_bytes_ < need) {
      if (ws_) dev_.free(ws_);
      ws_ = static_cast<float*>(dev_.alloc(need));
      ws_bytes_ = need;
    }
    D da(dev_, const_cast<T*>(a), tj::dtype_v<T>, {M, K}, {K, 1}, {64, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    D db(dev_, const_cast<T*>(b), tj::dtype_v<T>, {N, K}, {K, 1}, {128, BLOCK_K}, {.swizzle = D::Swizzle::b128});
    split_.launch(tj::Grid{tj::cdiv(M, 64) * tj::cdiv(N, 128), sk.splits}, da, db, ws_, M, N, K, sk.k_split);
    reduce_.launch(tj::Grid{tj::cdiv(M * N, 1024)}, ws_, c, M * N, sk.splits);
  }
  static tj::TuneOptions with_device(tj::TuneOptions o, const tj::Device& d) {
    if (!o.device) o.device = d;
    return o;
  }
  tj::Device dev_;
  tj::Autotuner<Sig> tuner_;
  tj::Kernel<MatmulV5SplitK<64, 128, T>> split_{dev_, {}, {.num_warps = 4, .num_stages = 4}};
  tj::Kernel<SplitKReduce<1024>> reduce_{dev_, {}, {.num_warps = 4}};
  float* ws_ = nullptr;
  std::size_t ws_bytes_ = 0;

 public:
  ~Gemm() {
    if (ws_) dev_.free(ws_);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
};

}  // namespace examples

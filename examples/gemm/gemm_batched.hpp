// examples/gemm/gemm_batched.hpp — the batched GEMM as a library call.
//
//   examples::GemmBatched<tj::bf16> bmm(dev);
//   bmm(a, b, c, batch, M, N, K);   // C[z] (f32) = A[z] · B[z]ᵀ for z < batch, device pointers
//   examples::GemmBatched<tj::bf16, tj::bf16> bmm16(dev);  // C rounded to bf16 once from the f32 accumulator
//
// A [batch, M, K] and B [batch, N, K] (K-major: B stored as nn.Linear weights are, one matrix per batch entry) and
// C [batch, M, N], row-major and contiguous, are each one rank-3 tensor descriptor (matmul_batched.hpp): a tile
// past M or N of one batch entry reads zeros and stores nothing, never touching the next entry.
//
// The plan, by device (plan() names the last one):
//  - compute capability 9.0: MatmulBatchedPersistent 128x256, 4 stages, a producer warp group, one program per SM
//    over the tiles of every batch entry, C stored by TMA from swizzled shared memory. On the H200 0.99–1.12x cublasGemmStridedBatchedEx with an f32 C,
//    0.96–1.16x with a bf16 C (docs/gemm.md, "Side rung: batched");
//  - compute capability 8.x (and 9.0 with set_mma_sync_path): MatmulBatched 128x128, 8 warps, its blocks through a
//    cp.async ring of 3 stages, read by mma.sync (97 KiB of shared memory: fits the 99 KiB of sm_86 / sm_89);
//  - elsewhere (the interpreter; HIP: MFMA): MatmulBatched 64x64, 4 warps, masked loads.
//  The last two launch one program row per batch entry: a batch of more than 65535 entries (grid.y's limit) runs
//  as several launches of at most 65535.
//
// Rules checked before anything reaches the device (InvalidArgument naming the value and the rule): batch, M, N,
// K >= 1; every extent below 2^31 and each operand's element count (batch x rows x cols) below 2^31 (32-bit
// offsets off Hopper's TMA path); K x element size and N x sizeof(Out) multiples of 16 bytes (descriptor row
// strides); A, B and C 16-byte aligned (descriptor bases); no pointer null; C not overlapping A or B. T is bf16 or f16 (128-byte K blocks of 64 elements); Out is f32 or T.
//
// One call at a time per object (it keeps its compiled kernels); use one object per thread.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "examples/gemm/matmul_batched.hpp"

namespace examples {

template <class T, class Out = float>
class GemmBatched {
  static_assert(std::is_same_v<T, tj::bf16> || std::is_same_v<T, tj::f16>, "GemmBatched<T, Out>: T is bf16 or f16");
  static_assert(std::is_same_v<Out, float> || std::is_same_v<Out, T>, "GemmBatched<T, Out>: C is f32, or the input type");

 public:
  explicit GemmBatched(tj::Device dev) : dev_(std::move(dev)) {}

  /// Run the sm_80 plan (cp.async + mma.sync) on a compute capability 9.0 device too: for tests and benches.
  void set_mma_sync_path(bool on) { mma_sync_ = on; }

  /// C[z] = A[z] · B[z]ᵀ (see the file comment). Throws InvalidArgument for a broken rule; launches on the
  /// device's default stream and returns without waiting.
  void operator()(const T* a, const T* b, Out* c, long long batch, long long M, long long N, long long K) {
    check(a, b, c, batch, M, N, K);
    using D = tj::TensorDescriptor;
    // Entries [z0, z0 + count) of a [batch, rows, cols] operand of `dt` at `p`, in [1, br, bc] blocks.
    auto desc = [&](const void* p, tj::DType dt, long long z0, long long count, long long rows, long long cols, long long br,
                    long long bc) {
      const auto* base = static_cast<const unsigned char*>(p) + z0 * rows * cols * size_bytes(dt);
      return D(dev_, const_cast<unsigned char*>(base), dt, {count, rows, cols}, {rows * cols, cols, 1}, {1, br, bc});
    };
    const tj::DType dt = tj::dtype_v<T>, dc = tj::dtype_v<Out>;
    constexpr long long kOutSlab = 128 / static_cast<long long>(sizeof(Out));  // one 128-byte slab of C's columns
    if (dev_.backend() == tj::Backend::cuda && dev_.compute_capability() == 90 && !mma_sync_) {
      const D da = desc(a, dt, 0, batch, M, K, 128, 64), db = desc(b, dt, 0, batch, N, K, 256, 64),
              dcd = desc(c, dc, 0, batch, M, N, 128, kOutSlab);
      auto& k = kernel<MatmulBatchedPersistent<128, 256, T, Out>>(
          {.num_warps = 8, .num_stages = 4, .warp_specialize = true, .tma_store = true});
      k.launch(persistent_batched_grid(batch, M, N, 128, 256, dev_.num_sms()), da, db, dcd, M, N, K);
      plan_ = "persistent 128x256/4, producer warp group, C by TMA";
      return;
    }
    // One program row (grid.y) per batch entry: at most 65535 per launch, so a larger batch takes several.
    const bool mma = dev_.backend() == tj::Backend::cuda && dev_.compute_capability() >= 80;
    const int bm = mma ? 128 : 64, bn = bm;
    for (const auto& [z0, count] : batch_chunks(batch)) {
      const D da = desc(a, dt, z0, count, M, K, bm, 64), db = desc(b, dt, z0, count, N, K, bn, 64),
              dcd = desc(c, dc, z0, count, M, N, bm, kOutSlab);
      const tj::Grid grid{tj::cdiv(M, bm) * tj::cdiv(N, bn), count};
      if (mma)
        kernel<MatmulBatched<128, 128, T, Out>>({.num_warps = 8, .num_stages = 3, .arch = dev_.compute_capability() == 90 ? "sm_90" : ""})
            .launch(grid, da, db, dcd, N, K);
      else
        kernel<MatmulBatched<64, 64, T, Out>>({.num_warps = 4, .num_stages = 2}).launch(grid, da, db, dcd, N, K);
    }
    plan_ = mma ? "128x128, 8 warps, cp.async ring of 3 stages, mma.sync" : "64x64, 4 warps";
  }

  /// The launches of a one-program-row-per-entry plan: (first entry, entries) in runs of at most 65535 (grid.y).
  static std::vector<std::pair<long long, long long>> batch_chunks(long long batch) {
    std::vector<std::pair<long long, long long>> out;
    for (long long z0 = 0; z0 < batch; z0 += 65535) out.emplace_back(z0, std::min<long long>(65535, batch - z0));
    return out;
  }

  /// The plan of the last call ("" before the first).
  const std::string& plan() const { return plan_; }

  /// The rules of operator() (see the file comment); throws InvalidArgument naming the broken one.
  static void check(const T* a, const T* b, const Out* c, long long batch, long long M, long long N, long long K) {
    if (batch < 1 || M < 1 || N < 1 || K < 1)
      throw tj::InvalidArgument(
          fmt::format("gemm batched: batch = {}, M = {}, N = {}, K = {}: every extent must be >= 1", batch, M, N, K));
    constexpr long long kMax = 2147483647LL;
    for (auto [rows, cols, what] : {std::tuple{M, K, "A [batch, M, K]"}, std::tuple{N, K, "B [batch, N, K]"}, std::tuple{M, N, "C [batch, M, N]"}})
      if (batch > kMax || rows > kMax || cols > kMax || batch * rows > kMax || batch * rows * cols > kMax)  // no product wraps
        throw tj::InvalidArgument(fmt::format("gemm batched: {} = [{}, {}, {}] has more than 2^31 - 1 elements: the kernels index "
                                              "it with 32-bit offsets; split the batch", what, batch, rows, cols));
    if (K * static_cast<long long>(sizeof(T)) % 16 != 0)
      throw tj::InvalidArgument(fmt::format("gemm batched: K = {} gives rows of {} bytes: K x element size must be a multiple of 16 "
                                            "bytes (descriptor row strides); pad K to a multiple of {}", K, K * sizeof(T), 16 / sizeof(T)));
    if (N * static_cast<long long>(sizeof(Out)) % 16 != 0)
      throw tj::InvalidArgument(fmt::format("gemm batched: N = {} gives C rows of {} bytes: N x sizeof(C's element) must be a multiple "
                                            "of 16 bytes (descriptor row strides); pad N to a multiple of {}", N, N * sizeof(Out),
                                            16 / sizeof(Out)));
    auto addr = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    for (auto [p, what] : {std::pair{static_cast<const void*>(a), "A"}, std::pair{static_cast<const void*>(b), "B"},
                           std::pair{static_cast<const void*>(c), "C"}})
      if (!p || addr(p) % 16 != 0)
        throw tj::InvalidArgument(fmt::format("gemm batched: {} = {}: must be a non-null, 16-byte aligned device pointer (descriptor "
                                              "base)", what, p));
    const auto c0 = addr(c), c1 = c0 + static_cast<std::uintptr_t>(batch * M * N) * sizeof(Out);
    auto overlaps = [&](const void* p, long long elems) {
      const auto p0 = addr(p), p1 = p0 + static_cast<std::uintptr_t>(elems) * sizeof(T);
      return p0 < c1 && c0 < p1;
    };
    for (auto [p, elems, what] : {std::tuple{static_cast<const void*>(a), batch * M * K, "A"}, std::tuple{static_cast<const void*>(b), batch * N * K, "B"}})
      if (overlaps(p, elems))
        throw tj::InvalidArgument(fmt::format("gemm batched: C [{}, {}, {}] at {} overlaps {}: the output may not alias an input", batch,
                                              M, N, static_cast<const void*>(c), what));
  }

 private:
  /// K compiled with `opt`, kept per kernel type (each type is compiled with one set of options here).
  template <class K>
  tj::Kernel<K>& kernel(tj::CompileOptions opt) {
    auto& slot = kernels_[std::type_index(typeid(K))];
    if (!slot) slot = std::make_shared<tj::Kernel<K>>(dev_, K{}, std::move(opt));
    return *static_cast<tj::Kernel<K>*>(slot.get());
  }

  tj::Device dev_;
  bool mma_sync_ = false;
  std::string plan_;
  std::map<std::type_index, std::shared_ptr<void>> kernels_;
};

}  // namespace examples

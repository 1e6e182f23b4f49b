// Scalar loads the TMA producer repeats on its own (codegen: producer_scalar): a K-block index read inside a
// pipelined loop from a table the kernel never writes (a block-sparse GEMM, C = Σ_j A[:, kb_j]·B[:, kb_j]ᵀ over
// the table's blocks kb_j, repeats allowed). The producer — thread 0 issuing the ring ahead of the loop body, or a
// producer warp group — loads the index of the iteration it copies for. In the interpreter and, on a GPU, compiled
// for sm_90a with and without a producer warp group, against f64 with C poisoned first. (The persistent attention
// forward, test_attention_persistent.cpp, covers a table read in a loop over work items.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

template <int BM, int BN, int BK = 64>
struct BlockSparse {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Ptr<std::int32_t> kblocks, tj::Size M,
                  tj::Size N, tj::Size nk) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    auto acc = tj::for_range(0, nk, 1, tj::zeros<float, BM, BN>(), [&](tj::Int j, auto acc) {
      const tj::Int kb = tj::load(kblocks + j) * BK;
      return tj::dot(a.load(m0, kb), tj::trans(b.load(n0, kb)), acc);
    });
    auto rm = m0 + tj::arange<BM>();
    auto rn = n0 + tj::arange<BN>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
              tj::expand_dims<1>(rm < M) & tj::expand_dims<0>(rn < N));
  }
};

/// C = A·Bᵀ with the K offset carried by the K loop (off += BK each iteration) instead of computed from its
/// induction variable. INNER: the K loop also runs a nested loop whose descriptor block is no wgmma operand (a plain
/// masked load, so the K loop stays a ring of its own).
template <int BM, int BN, bool INNER = false, int BK = 64>
struct CarriedOffset {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Desc<bf, 64, 64> e, tj::Ptr<float> c, tj::Ptr<float> d,
                  tj::Size N, tj::Size K) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    auto [acc, off] = tj::for_range(0, K, BK, std::tuple{tj::zeros<float, BM, BN>(), tj::scalar<std::int32_t>(0)},
                                    [&](tj::Int k0, auto acc, auto off) {
                                      if constexpr (INNER)
                                        tj::for_range(0, 2, 1, [&](tj::Int j) {
                                          auto r = tj::arange<64>();
                                          tj::store(d + tj::expand_dims<1>(r) * 64 + tj::expand_dims<0>(r),
                                                    tj::cast<float>(e.load(j * 64 + k0, 0)));
                                        });
                                      return std::tuple{tj::dot(a.load(m0, off), tj::trans(b.load(n0, off)), acc), off + BK};
                                    });
    (void)off;
    auto rm = m0 + tj::arange<BM>();
    auto rn = n0 + tj::arange<BN>();
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc,
              tj::expand_dims<1>(rm < N) & tj::expand_dims<0>(rn < N));
  }
};

/// M x N (ragged) over K = 8 blocks of 64; the table picks 6 of them, one twice, out of order.
void check_block_sparse(const tj::Device& dev, const tj::CompileOptions& o) {
  constexpr int BM = 128, BN = 64, BK = 64, M = 200, N = 150, K = 512;
  CAPTURE(o.num_warps);
  CAPTURE(o.num_stages);
  CAPTURE(o.warp_specialize);
  CAPTURE(testing::fresh_seed());
  auto a = testing::random_tensor<bf>(static_cast<std::size_t>(M) * K, 71, -2, 2);
  auto b = testing::random_tensor<bf>(static_cast<std::size_t>(N) * K, 72, -2, 2);
  std::vector<std::int32_t> table{5, 1, 7, 1, 0, 3};
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  {
    testing::Mirror m{dev, {}};
    bf *da = m.up(a), *db = m.up(b);
    float* dc = m.up(c);
    std::int32_t* dt = m.up(table);
    const tj::TensorDescriptor ad(dev, da, tj::DType::bf16, {M, K}, {K, 1}, {BM, BK});
    const tj::TensorDescriptor bd(dev, db, tj::DType::bf16, {N, K}, {K, 1}, {BN, BK});
    auto kern = tj::compile<BlockSparse<BM, BN, BK>>(dev, o);
    kern.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, ad, bd, dc, dt, M, N, static_cast<int>(table.size()));
    m.down();
  }
  std::vector<double> ref(c.size(), 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (const int kb : table)
        for (int kk = kb * BK; kk < (kb + 1) * BK; ++kk)
          s += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(m) * K + kk])) *
               static_cast<float>(b[static_cast<std::size_t>(n) * K + kk]);
      ref[static_cast<std::size_t>(m) * N + n] = s;
    }
  for (const float x : c) REQUIRE(std::isfinite(x));  // every element written (the poison is NaN)
  CHECK(testing::rel_error(c, ref) < 1e-5);             // bf16 products are exact in f32; f32 sums over 384 terms
}

}  // namespace

TEST_CASE("producer_loads_block_sparse_gemm_sm90a_code") {
  // The producer (warp group or thread 0) reads the table inside the function that issues one iteration's copies.
  for (const bool ws : {false, true}) {
    CAPTURE(ws);
    const auto g = tj::codegen::generate(tj::trace(BlockSparse<128, 64>{}), {}, tj::codegen::target_for("sm_90a"),
                                         {.num_warps = 8, .num_stages = 3, .warp_specialize = ws});
    CHECK(testing::has_diagnostic(g, "TMA pipeline of 3 stage(s)"));
    CHECK(testing::has_diagnostic(g, "warp specialised") == ws);
    const std::size_t issue = g.source.find("coordinates of block %");
    REQUIRE(issue != std::string::npos);
    CHECK(g.source.find(" = *s", issue) < g.source.find("tj_tma_load_2d", issue));
    testing::compiles_for_sm90a(g.source, ws ? "block_sparse_ws.cu" : "block_sparse.cu");
  }
}

TEST_CASE("producer_loads_block_sparse_gemm_interpreter_matches_f64") {
  check_block_sparse(tj::Device::interpreter(), {.num_warps = 4});
}

TEST_CASE("producer_loads_block_sparse_gemm_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  for (const int stages : {2, 3})
    for (const bool ws : {false, true}) check_block_sparse(dev, {.num_warps = 8, .num_stages = stages, .warp_specialize = ws});
}

TEST_CASE("producer_loads_a_coordinate_the_pipelined_loop_carries_is_not_copied_ahead") {
  // A TMA ring issues the copies of iteration i + stages - 1 at iteration i (and the first stages - 1 before the
  // loop) from the induction variable alone; a scalar the loop carries holds iteration i's value there, so those
  // copies would read the wrong K blocks (every prologue copy the initial offset). Blocks at such coordinates stay
  // plain loads, with or without a producer warp group; a loop over work items (whose own blocks are copied once
  // per iteration, where the program loads them) may still carry them (test_attention_persistent.cpp).
  for (const bool inner : {false, true})
    for (const bool ws : {false, true}) {
      CAPTURE(inner);
      CAPTURE(ws);
      const auto g = inner ? tj::codegen::generate(tj::trace(CarriedOffset<128, 64, true>{}), {}, tj::codegen::target_for("sm_90a"),
                                                   {.num_warps = 8, .num_stages = 3, .warp_specialize = ws})
                           : tj::codegen::generate(tj::trace(CarriedOffset<128, 64, false>{}), {}, tj::codegen::target_for("sm_90a"),
                                                   {.num_warps = 8, .num_stages = 3, .warp_specialize = ws});
      CHECK(!testing::has_diagnostic(g, "TMA pipeline of"));
      CHECK(g.source.find("coordinates of block %") == std::string::npos);
      testing::compiles_for_sm90a(g.source, inner ? "carried_offset_inner.cu" : "carried_offset.cu");
    }
}

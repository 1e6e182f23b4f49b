// 16-bit stores from mma / wgmma accumulators, transposed within each quad (codegen emit_quad_transposed_store):
// lane c of a quad holds column pairs 2c of every 8-column block, so a plain store writes 4 bytes per pair and two
// store instructions share each 32-byte sector. The quad swaps 4 x 4 words by two shfl.xor rounds and each lane then
// writes 16 contiguous bytes. Checked here: which stores take the path (16-bit accumulator layouts with pointers
// contiguous and aligned along the tile's rows and a mask constant along them; not f32, not a column mask, not
// 16-wide tiles), the text compiles for sm_90a, sm_80 and gfx942, and on a GPU every element lands where it belongs
// (C poisoned with NaN; rows past M untouched) against a host reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

/// C[64 pid + i, j] = Out(A[64 pid + i, :] · B[:, j]) for rows < M: A [M, 64], B [64, N], C [M, PITCH] (row-major, f16
/// inputs, f32 accumulation; K = 64, so sm_90a lowers the product to wgmma). COL_MASK: the store also masks
/// columns j < n (a mask that varies along the columns). TRANSPOSED: C is stored column-major instead (element
/// (i, j) at j · 128 + i: pointers not contiguous along the tile's rows).
template <int N, class Out, bool COL_MASK = false, int PITCH = N, bool TRANSPOSED = false>
struct QuadStore {
  void operator()(tj::Ptr<tj::f16> a, tj::Ptr<tj::f16> b, tj::Ptr<Out> c, tj::Size M, tj::Size n) const {
    auto rows = tj::program_id(0) * 64 + tj::arange<64>();
    auto k = tj::arange<64>();
    auto cols = tj::arange<N>();
    auto row_ok = tj::expand_dims<1>(rows < M);
    auto at = tj::load(a + tj::expand_dims<1>(rows) * 64 + tj::expand_dims<0>(k), row_ok, 0.f);
    auto bt = tj::load(b + tj::expand_dims<1>(k) * N + tj::expand_dims<0>(cols));
    auto acc = tj::dot(at, bt, tj::zeros<float, 64, N>());
    auto where = [&] {
      if constexpr (TRANSPOSED)
        return tj::expand_dims<0>(cols) * 128 + tj::expand_dims<1>(rows);
      else
        return tj::expand_dims<1>(rows) * PITCH + tj::expand_dims<0>(cols);
    }();
    if constexpr (COL_MASK)
      tj::store(c + where, tj::cast<Out>(acc), row_ok & tj::expand_dims<0>(cols < n));
    else
      tj::store(c + where, tj::cast<Out>(acc), row_ok);
  }
};

template <class K>
tj::codegen::Generated gen(const char* arch, int warps = 4) {
  const auto k = tj::trace(K{});
  return tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for(arch), {.num_warps = warps});
}

constexpr const char* kPath = "transposed in each quad and stored as 16-byte vectors";

/// QuadStore<N, Out> on `dev` over M = 100 rows (two programs, the second ragged), compiled for `arch` ("" = the
/// device's own; "sm_90" on an H200 = mma.sync, as a GPU without wgmma runs): C poisoned with NaN in a buffer of
/// 128 rows; rows < M within bf16 / f16 rounding of the f64 reference, rows >= M still NaN.
template <int N, class Out>
void check_on(const tj::Device& dev, const std::string& arch = "") {
  const int M = 100, rows = 128;
  const auto af = testing::random_floats(static_cast<std::size_t>(M) * 64, -1.f, 1.f, 301);
  const auto bf = testing::random_floats(static_cast<std::size_t>(64) * N, -1.f, 1.f, 302);
  std::vector<tj::f16> a(af.begin(), af.end()), b(bf.begin(), bf.end());
  auto c = testing::poisoned<Out>(static_cast<std::size_t>(rows) * N);
  {
    testing::Mirror m{dev, {}};
    auto* da = m.up(a);
    auto* db = m.up(b);
    auto* dc = m.up(c);
    tj::compile<QuadStore<N, Out>>(dev, {.num_warps = 4, .arch = arch}).launch(tj::Grid{2}, da, db, dc, M, N);
    m.down();
  }
  const double tol = std::is_same_v<Out, tj::bf16> ? 1.0 / 128 : 1.0 / 1024;
  int bad = 0, written_past_m = 0;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < N; ++j) {
      const float got = static_cast<float>(c[static_cast<std::size_t>(i) * N + j]);
      if (i >= M) {
        written_past_m += !std::isnan(got);
        continue;
      }
      double ref = 0;
      for (int x = 0; x < 64; ++x)
        ref += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(i) * 64 + x])) *
               static_cast<float>(b[static_cast<std::size_t>(x) * N + j]);
      if (!(std::abs(got - ref) <= tol * std::abs(ref) + 1e-3)) ++bad;
    }
  CHECK(bad == 0);
  CHECK(written_past_m == 0);
}

}  // namespace

TEST_CASE("quad_store_takes_16_byte_vectors_from_wgmma_and_mma_accumulators") {
  // wgmma m64nN with 4 warps: each thread holds rows r and r + 8 of its warp; the quad's pairs step by 8 and 16
  // columns, so a quad writes 64 contiguous bytes: N = 96 has three such groups a row.
  const auto w96 = gen<QuadStore<96, tj::bf16>>("sm_90a");
  const auto w64 = gen<QuadStore<64, tj::f16>>("sm_90a");
  CHECK(testing::has_diagnostic(w96, "6 groups of 4 x 4 words (column steps 8 and 16)"));
  CHECK(testing::has_diagnostic(w64, "4 groups of 4 x 4 words (column steps 8 and 16)"));
  CHECK(w96.source.find("tj_shfl_xor(tj_q0_") != std::string::npos);
  CHECK(w96.source.find("*(tj_v16*)(") != std::string::npos);
  testing::compiles_for_sm90a_without_spills(w96.source, "quad_store_96_sm90a.cu");
  testing::compiles_for_sm90a(w64.source, "quad_store_64_sm90a.cu");
  // mma.sync with warps [2, 2] interleaves the warps at 8 columns: a thread's pairs step by 16 and 32 (16-byte halves
  // of sectors). At N = 96 a warp's six 8-column blocks take a radix-3 digit, so only one step is radix 2: no path.
  const auto m64 = gen<QuadStore<64, tj::f16>>("sm_80");
  const auto m96 = gen<QuadStore<96, tj::bf16>>("sm_80");
  CHECK(testing::has_diagnostic(m64, "(column steps 16 and 32), transposed in each quad"));
  CHECK_FALSE(testing::has_diagnostic(m96, kPath));
  testing::compiles_for(m64.source, "sm_80", "quad_store_64_sm80.cu");
  // The same mma.sync layout on a Hopper GPU told to run as one without wgmma (sm_90): what the GPU case runs.
  CHECK(testing::has_diagnostic(gen<QuadStore<64, tj::f16>>("sm_90"), "(column steps 16 and 32), transposed in each quad"));
  CHECK(testing::has_diagnostic(gen<QuadStore<128, tj::bf16>>("sm_90"), "(column steps 16 and 32), transposed in each quad"));
  testing::compiles_for(m96.source, "sm_80", "quad_store_96_sm80.cu");
}

TEST_CASE("quad_store_leaves_other_stores_alone") {
  // f32 already stores 8 bytes per pair; a column mask may differ within a 16-byte vector; a 16-column tile has no
  // 16-column register step to swap with; a row pitch of 100 elements leaves odd rows 8 bytes into a 16-byte chunk;
  // column-major C has no contiguous row.
  for (const char* arch : {"sm_90a", "sm_80"}) {
    CAPTURE(arch);
    CHECK_FALSE(testing::has_diagnostic(gen<QuadStore<64, float>>(arch), kPath));
    CHECK_FALSE(testing::has_diagnostic(gen<QuadStore<64, tj::bf16, true>>(arch), kPath));
    CHECK_FALSE(testing::has_diagnostic(gen<QuadStore<16, tj::bf16>>(arch), kPath));
    CHECK_FALSE(testing::has_diagnostic(gen<QuadStore<64, tj::bf16, false, 100>>(arch), kPath));
    CHECK_FALSE(testing::has_diagnostic(gen<QuadStore<64, tj::bf16, false, 64, true>>(arch), kPath));
  }
  // A pitch of 72 elements (144 bytes) keeps every row 16-byte aligned: the path holds.
  CHECK(testing::has_diagnostic(gen<QuadStore<64, tj::bf16, false, 72>>("sm_90a"), kPath));
  // 16-bit integers take it too (each low half cut to 16 bits before the high one is or-ed in).
  const auto i16 = gen<QuadStore<64, std::int16_t>>("sm_90a");
  CHECK(testing::has_diagnostic(i16, kPath));
  testing::compiles_for_sm90a(i16.source, "quad_store_i16_sm90a.cu");
  // Without the launch's alignment (no specialisation) the pointers are not provably 16-byte aligned.
  const auto k = tj::trace(QuadStore<64, tj::bf16>{});
  CHECK_FALSE(testing::has_diagnostic(tj::codegen::generate(k, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 4}), kPath));
  // gfx942's MFMA accumulators step one column per lane, so the path does not apply there; the HIP text compiles.
  const auto h96 = gen<QuadStore<96, tj::bf16>>("gfx942");
  CHECK_FALSE(testing::has_diagnostic(h96, kPath));
  testing::compiles_for_gfx942(h96.source, "quad_store_96_gfx942.hip");
}

TEST_CASE("quad_store_interpreter_matches_reference") {
  // The interpreter runs the IR, not the generated text: this pins the kernel and the reference the GPU case uses.
  auto dev = tj::Device::interpreter();
  check_on<96, tj::bf16>(dev);
  check_on<64, tj::f16>(dev);
}

TEST_CASE("quad_store_gpu_matches_reference") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  // The device's own path (wgmma on an H200: column steps 8 and 16), then on a Hopper GPU the mma.sync path compiled
  // for sm_90 (warps interleaved at 8 columns: steps 16 and 32) — both checked above to take the transposed store.
  check_on<96, tj::bf16>(dev);
  check_on<64, tj::f16>(dev);
  check_on<128, tj::bf16>(dev);
  if (dev.compute_capability() == 90) {
    REQUIRE(testing::has_diagnostic(gen<QuadStore<64, tj::f16>>("sm_90"), "(column steps 16 and 32)"));
    check_on<64, tj::f16>(dev, "sm_90");
    check_on<128, tj::bf16>(dev, "sm_90");
  }
}

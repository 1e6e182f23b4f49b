// num_warps beyond powers of two (codegen::valid_num_warps: 12, 20, 24, 28 — whole warp groups): the warp index is
// then written in mixed radix (12 = 2·2·3) like any other layout digit. Checked here: the rule and its error; the
// generated coordinates of a radix-3 warp digit and the copies' owner predicate; a reduction across such a digit
// (each warp reads its 3 siblings' partials from shared memory: NVRTC compiles it, and the generated code run on
// the CPU by the host emulator matches a CPU reference); the 192-row attention forward over three consumer warp
// groups (sm_90a text, NVRTC); and on a GPU, blocked 1-D / 2-D kernels with 12 and 24 warps against a CPU reference.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "examples/attention/flash_fwd_persistent.hpp"
#include "examples/vector_add.hpp"
#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

/// y = 2x over [R, C] and the row sums of x (a reduction along dim 1, which the warps do not split here).
template <int R, int C>
struct RowSums {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Ptr<float> sums, tj::Size rows) const {
    auto rr = tj::program_id(0) * R + tj::arange<R>();
    auto cc = tj::arange<C>();
    auto ok = tj::expand_dims<1>(rr < rows);
    auto offs = tj::expand_dims<1>(rr) * C + tj::expand_dims<0>(cc);
    auto v = tj::load(x + offs, ok, 0.0f);
    tj::store(y + offs, v * 2.0f, ok);
    tj::store(sums + rr, tj::sum<1>(v), rr < rows);
  }
};

/// Column sums of [R, C]: a reduction along dim 0, across the warps.
template <int R, int C>
struct ColSums {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> sums) const {
    auto offs = tj::expand_dims<1>(tj::arange<R>()) * C + tj::expand_dims<0>(tj::arange<C>());
    tj::store(sums + tj::arange<C>(), tj::sum<0>(tj::load(x + offs)));
  }
};

}  // namespace

TEST_CASE("npot_warps_rule") {
  for (int n : {1, 2, 4, 8, 16, 32, 12, 20, 24, 28}) CHECK(tj::codegen::valid_num_warps(n));
  for (int n : {0, -4, 3, 6, 10, 36, 64, 44}) CHECK(!tj::codegen::valid_num_warps(n));
  auto dev = tj::Device::interpreter();
  CHECK_NOTHROW(tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 12}));
  CHECK_THROWS_WITH_AS(tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 6}), doctest::Contains("num_warps = 6"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::codegen::generate(tj::trace(examples::VecAdd<96>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 10}),
                       doctest::Contains("whole warp groups"), tj::InvalidArgument);
}

TEST_CASE("npot_warps_coordinates_and_owners") {
  // [96, 64] f32 over 12 warps: 16 lanes x 4 elements along a row, 2 rows per warp, the 12 warps over 24 rows
  // (digits 2·2·3), repeated 4 times by registers: the radix-3 digit's coordinate is (tj_warp / 4) % 3 times 8 rows.
  const auto g = tj::codegen::generate(tj::trace(RowSums<96, 64>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 12});
  CHECK(testing::has_diagnostic(g, "blocked [96,64] size_per_thread 4 lanes [2,16] warps [12,1] registers [4,1]"));
  CHECK(g.source.find("((tj_warp >> 0) & 3) * 2 + ((tj_warp / 4) % 3) * 8") != std::string::npos);
  testing::compiles_for(g.source, "sm_80", "rowsums_w12.cu");
  // [64] over 12 warps: 2 warps hold it, the other digits (2·3) are copies; only copy 0 stores.
  const auto v = tj::codegen::generate(tj::trace(examples::VecAdd<64>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 12});
  CHECK(v.source.find("(tj_warp / 4) % 3 == 0") != std::string::npos);
  testing::compiles_for(v.source, "sm_80", "vecadd64_w12.cu");
  // [96] over 12 warps: 32 lanes x 3 warps hold it (the radix-3 digit first, stride 1), the radix-2 digits above it
  // (strides 3 and 6: no bit field of tj_warp) are copies. (A bit mask there let warps 1 to 7 skip their stores: a
  // GPU run found the unwritten elements.)
  const auto w = tj::codegen::generate(tj::trace(examples::VecAdd<96>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 12});
  CHECK(w.source.find("((tj_warp / 1) % 3) * 32") != std::string::npos);
  CHECK(w.source.find("(tj_warp / 3) % 2 == 0 && (tj_warp / 6) % 2 == 0") != std::string::npos);
  CHECK(w.source.find("tj_warp & ") == std::string::npos);
  testing::compiles_for(w.source, "sm_80", "vecadd96_w12.cu");
}

namespace {
std::vector<double> column_sums(const std::vector<float>& x, int rows, int cols) {
  std::vector<double> s(static_cast<std::size_t>(cols), 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) s[static_cast<std::size_t>(c)] += x[static_cast<std::size_t>(r * cols + c)];
  return s;
}
}  // namespace

TEST_CASE("npot_warps_reduction_across_a_radix_3_digit") {
  const auto k = tj::trace(ColSums<96, 64>{});
  const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_80"), {.num_warps = 12});
  CHECK(g.source.find("((tj_warp / 4) % 3) * 4") != std::string::npos);  // the base warp of a radix-3 digit of stride 4
  CHECK(g.source.find("(tj_w") != std::string::npos);
  testing::compiles_for(g.source, "sm_80", "colsums_w12.cu");
  CAPTURE(testing::fresh_seed());
  const auto x = testing::random_floats(96 * 64, -2, 2, 7);
  const auto want = column_sums(x, 96, 64);
  for (int warps : {12, 24}) {
    CAPTURE(warps);
    const auto hk = testing::HostKernel::compile(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx1100"), {.num_warps = warps}));
    if (!hk) break;
    std::vector<float> sums(64, std::nanf(""));
    hk->launch({1, 1, 1}, const_cast<float*>(x.data()), sums.data());
    for (int c = 0; c < 64; ++c) CHECK(std::fabs(sums[static_cast<std::size_t>(c)] - want[static_cast<std::size_t>(c)]) < 1e-4 * (1 + std::fabs(want[static_cast<std::size_t>(c)])));
  }
}

TEST_CASE("npot_warps_attention_192_rows_sm90a") {
  // Three consumer warp groups of 64 rows each and a producer group: 512 threads, 128 registers at launch, 160 per
  // consumer after setmaxnreg; each group's wgmma reads its 64 rows of Q (tj_wgu * 8192 bytes in).
  const auto g = tj::codegen::generate(tj::trace(examples::FlashAttnFwdTmaPersistent<192, 128, 64, true, tj::bf16>{}), {},
                                       tj::codegen::target_for("sm_90a"), {.num_warps = 12, .num_stages = 2, .warp_specialize = true});
  CHECK(testing::has_diagnostic(g, "wgmma m64n128k16 accumulator [192,128] over 3 warp groups"));
  CHECK(testing::has_diagnostic(g, "warp specialised: 12 consumer warp(s) with 160 registers"));
  CHECK(g.source.find("if (tj_warp >= 12) {") != std::string::npos);
  CHECK(g.source.find("__maxnreg__(128)") != std::string::npos);
  CHECK(g.source.find("((tj_warp / 4) % 3) * 64") != std::string::npos);
  CHECK(g.source.find("tj_wgu * 8192u") != std::string::npos);  // the warp group's index, broadcast from lane 0
  CHECK(std::regex_search(g.source, std::regex(R"(tj_mbar_init\(tj_empty\d+ \+ 8 \* s, 12\))")));  // 12 consumer warps release a stage
  testing::compiles_for_sm90a(g.source, "attn_192_w12.cu");
}

TEST_CASE("npot_warps_gpu_blocked_kernels_match_the_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  CAPTURE(testing::fresh_seed());
  for (int warps : {12, 24}) {
    CAPTURE(warps);
    // 1-D: a tile larger, smaller and ragged against the program (copies stored once), tiles of 96 and 64.
    for (int n : {1000, 50, 384}) {
      CAPTURE(n);
      auto x = testing::random_floats(static_cast<std::size_t>(n), -2, 2, 1), y = testing::random_floats(static_cast<std::size_t>(n), -2, 2, 2);
      auto run = [&]<int B>() {
        CAPTURE(B);
        std::vector<float> out(x.size(), std::nanf(""));
        {
          testing::Mirror m{dev, {}};
          float *dx = m.up(x), *dy = m.up(y), *dout = m.up(out);
          tj::compile<examples::VecAdd<B>>(dev, {.num_warps = warps}).launch(tj::Grid{tj::cdiv(n, B)}, dx, dy, dout, n);
          m.down();
        }
        for (int i = 0; i < n; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)]);
      };
      run.template operator()<96>();
      run.template operator()<64>();
    }
    // 2-D: [96, 64] blocks, ragged rows, row sums.
    const int rows = 250;
    auto x = testing::random_floats(static_cast<std::size_t>(rows) * 64, -2, 2, 3);
    std::vector<float> y(x.size(), std::nanf("")), sums(static_cast<std::size_t>(rows), std::nanf(""));
    {
      testing::Mirror m{dev, {}};
      float *dx = m.up(x), *dy = m.up(y), *ds = m.up(sums);
      tj::compile<RowSums<96, 64>>(dev, {.num_warps = warps}).launch(tj::Grid{tj::cdiv(rows, 96)}, dx, dy, ds, rows);
      m.down();
    }
    for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == 2 * x[i]);
    for (int r = 0; r < rows; ++r) {
      double s = 0;
      for (int c = 0; c < 64; ++c) s += x[static_cast<std::size_t>(r) * 64 + c];
      CHECK(std::fabs(sums[static_cast<std::size_t>(r)] - s) < 1e-4 * (1 + std::fabs(s)));
    }
    // Column sums of [96, 64]: a reduction across the mixed-radix warp digits.
    std::vector<float> cols(64, std::nanf(""));
    {
      testing::Mirror m{dev, {}};
      float *dx = m.up(x), *dc = m.up(cols);
      tj::compile<ColSums<96, 64>>(dev, {.num_warps = warps}).launch(tj::Grid{1}, dx, dc);
      m.down();
    }
    const auto want = column_sums(x, 96, 64);
    for (int c = 0; c < 64; ++c) CHECK(std::fabs(cols[static_cast<std::size_t>(c)] - want[static_cast<std::size_t>(c)]) < 1e-4 * (1 + std::fabs(want[static_cast<std::size_t>(c)])));
  }
}

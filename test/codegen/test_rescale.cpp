// tj::rescale(x, factor): x · factor with the factor broadcast, where a thread whose factor values are all exactly 1
// keeps x's registers (the online softmax's correction; FlashAttention-4's conditional rescaling). Checked: the
// result equals x * factor exactly on the interpreter, on the generated HIP text run on the CPU (wave32 and wave64;
// the blocked tile only, as the emulator runs no MFMA) and on the GPU, for factors that are all 1, none 1, and 1 in
// some rows only (a thread then multiplies or not by its own rows); the generated code tests one value per row a
// thread holds (not one per register) and compiles for sm_90a, sm_80 and gfx942; a factor that differs per register
// is a plain multiply.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

constexpr int kM = 32, kN = 64, kAlpha = 4096, kLen = kAlpha + kM;  // x: values, then M factors at kAlpha

/// y[0 .. M·N) = rescale(x [M, N], expand_dims<1>(x[kAlpha .. kAlpha + M))): a blocked [32, 64] tile.
struct RescaleTile {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto r = tj::expand_dims<1>(tj::arange<kM>());
    auto c = tj::expand_dims<0>(tj::arange<kN>());
    auto alpha = tj::load(x + kAlpha + tj::arange<kM>());
    tj::store(y + r * kN + c, tj::rescale(tj::load(x + r * kN + c), tj::expand_dims<1>(alpha)));
  }
};

/// The same on a dot accumulator (mma / wgmma / MFMA layouts: a thread holds few rows, many columns of each):
/// y = rescale(a · b, alpha) with a [M, 32] and b [32, N] rounded to bf16 from x.
struct RescaleDot {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto r = tj::expand_dims<1>(tj::arange<kM>());
    auto c = tj::expand_dims<0>(tj::arange<kN>());
    auto k = tj::arange<32>();
    auto a = tj::cast<tj::bf16>(tj::load(x + r * 32 + tj::expand_dims<0>(k)));
    auto b = tj::cast<tj::bf16>(tj::load(x + kM * 32 + tj::expand_dims<1>(k) * kN + c));
    auto alpha = tj::load(x + kAlpha + tj::arange<kM>());
    tj::store(y + r * kN + c, tj::rescale(tj::dot(a, b), tj::expand_dims<1>(alpha)));
  }
};

/// A factor of the tile's own shape: every register its own value, so a plain multiply.
struct RescaleFull {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto o = tj::arange<256>();
    tj::store(y + o, tj::rescale(tj::load(x + o), tj::load(x + 256 + o)));
  }
};

/// x: values in [-1, 1) (RescaleTile's [M, N] at 0; RescaleDot's a [M, 32] at 0 and b [32, N] at M·32), then M
/// factors at kAlpha: `ones` says which rows get exactly 1 (0: none, 1: all, 2: every third row), the others random
/// in [0.25, 1).
std::vector<float> input(int ones, unsigned salt) {
  std::vector<float> x = testing::random_floats(kLen, -1, 1, salt);
  const auto f = testing::random_floats(kM, 0.25, 1, salt + 1);
  for (int i = 0; i < kM; ++i) {
    const bool one = ones == 1 || (ones == 2 && i % 3 == 0);
    x[static_cast<std::size_t>(kAlpha + i)] = one ? 1.0f : f[static_cast<std::size_t>(i)];
  }
  return x;
}

float bf16_round(float v) { return static_cast<float>(tj::bf16(v)); }

/// dot: also RescaleDot (not on the host emulator, which runs no MFMA; its text is compiled for gfx942 above).
template <class Run>
void check_all(const Run& on, unsigned salt, bool dot = true) {
  CAPTURE(testing::fresh_seed());
  for (int nw : {1, 4}) {
    for (int ones : {0, 1, 2}) {
      CAPTURE(nw);
      CAPTURE(ones);
      const auto x = input(ones, salt + static_cast<unsigned>(ones));
      const auto alpha = [&](int i) { return x[static_cast<std::size_t>(kAlpha + i)]; };
      const auto y = on.template run<RescaleTile>(x, nw);
      if (y.empty()) return;  // no host compiler for the emulator
      for (int i = 0; i < kM; ++i)
        for (int j = 0; j < kN; ++j) {
          const float want = x[static_cast<std::size_t>(i * kN + j)] * alpha(i);  // exact: the same f32 product
          CHECK(std::memcmp(&y[static_cast<std::size_t>(i * kN + j)], &want, 4) == 0);
        }
      if (!dot) continue;
      const auto yd = on.template run<RescaleDot>(x, nw);
      for (int i = 0; i < kM; ++i)
        for (int j = 0; j < kN; ++j) {
          double dot = 0;
          for (int k = 0; k < 32; ++k)
            dot += static_cast<double>(bf16_round(x[static_cast<std::size_t>(i * 32 + k)])) *
                   bf16_round(x[static_cast<std::size_t>(kM * 32 + k * kN + j)]);
          const double want = dot * alpha(i);
          CHECK(std::abs(yd[static_cast<std::size_t>(i * kN + j)] - want) <= 1e-5 * (1.0 + std::abs(want)));
        }
    }
  }
  const auto x = testing::random_floats(2048, -1, 1, salt + 9);
  const auto y = on.template run<RescaleFull>(x, 2);
  for (int i = 0; i < 256; ++i) {
    const float want = x[static_cast<std::size_t>(i)] * x[static_cast<std::size_t>(256 + i)];
    CHECK(std::memcmp(&y[static_cast<std::size_t>(i)], &want, 4) == 0);
  }
}

/// The number of `== 1.0f` tests in the generated branch, or -1 when the code has no rescale branch.
int unit_tests(const std::string& src) {
  const std::size_t at = src.find("every factor this thread holds is 1");
  if (at == std::string::npos) return -1;
  const std::size_t begin = src.rfind("if (", at);
  int n = 0;
  for (std::size_t p = src.find("== 1.0f", begin); p != std::string::npos && p < at; p = src.find("== 1.0f", p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("rescale_tests_one_value_per_row_and_compiles_everywhere") {
  auto gen = [](const auto& kernel, const char* arch, int nw) {
    return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for(arch), {.num_warps = nw}).source;
  };
  // [32, 64] over 4 warps: 16 registers a thread, blocked or as a dot accumulator (mma.sync / MFMA), in at most
  // 4 rows a thread: at most 4 tests, not 16.
  for (const char* arch : {"sm_90a", "sm_80", "gfx942"}) {
    CAPTURE(arch);
    const std::string tile = gen(RescaleTile{}, arch, 4), dot = gen(RescaleDot{}, arch, 4), full = gen(RescaleFull{}, arch, 2);
    CHECK(unit_tests(tile) >= 1);
    CHECK(unit_tests(tile) <= 4);
    CHECK(unit_tests(dot) >= 1);
    CHECK(unit_tests(dot) <= 4);
    CHECK(unit_tests(full) == -1);  // a plain multiply
    if (std::string(arch) != "gfx942") {
      testing::compiles_for(tile, arch, "RescaleTile");
      testing::compiles_for(dot, arch, "RescaleDot");
    } else {
      testing::compiles_for_gfx942(tile, "RescaleTile");
      testing::compiles_for_gfx942(dot, "RescaleDot");
    }
  }
  // The IR keeps the flag; the interpreter multiplies as for `*`.
  CHECK(tj::ir::print(tj::trace(RescaleTile{})).find("mul") != std::string::npos);
}

TEST_CASE("rescale_interpreter_matches_multiply") { check_all(testing::OnDevice{tj::Device::interpreter()}, 910); }

TEST_CASE("rescale_generated_code_runs_on_the_host_emulator_as_multiply") {
  check_all(testing::OnHost{"gfx1100"}, 920, false);  // wave32
  check_all(testing::OnHost{"gfx942"}, 930, false);   // wave64
}

TEST_CASE("rescale_gpu_matches_multiply") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_all(testing::OnDevice{dev}, 940);
}

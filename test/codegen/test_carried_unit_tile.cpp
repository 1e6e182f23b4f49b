// A loop-carried [1] tile added to each [96] block of a loop (the running total of the blocks before it): the [1]
// carry and the [96] values meet elementwise, so they share a 1-D layout class, which took its layout from the
// carry's size and fit none of the [96] values ("does not match the extent of the layout it is a slice of"; a
// review found it writing a chunked cumsum). Checked: every target generates and compiles; the interpreter and the
// generated HIP text on the CPU (host emulator) match a CPU reference, with and without a scan in the body.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

/// y[96k + i] = x[96k + i] (its cumsum within the block, Scan) + the sum of blocks 0..k-1; y[384] = the total.
template <bool Scan>
struct RunningTotal {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto total = tj::for_range(0, 4, 1, tj::zeros<float, 1>(), [&](tj::Int k, auto carry) {
      auto o = k * 96 + tj::arange<96>();
      auto v = tj::load(x + o);
      if constexpr (Scan) tj::store(y + o, tj::cumsum<0>(v) + carry);
      else tj::store(y + o, v + carry);
      return carry + tj::sum<0>(v);
    });
    tj::store(y + 384 + tj::arange<1>(), total);
  }
};

template <bool Scan>
std::vector<double> reference(const std::vector<float>& x) {
  std::vector<double> y(385);
  double before = 0;
  for (int k = 0; k < 4; ++k) {
    double in_block = 0;
    for (int i = 0; i < 96; ++i) {
      const double v = x[static_cast<std::size_t>(96 * k + i)];
      in_block += v;
      y[static_cast<std::size_t>(96 * k + i)] = (Scan ? in_block : v) + before;
    }
    before += in_block;
  }
  y[384] = before;
  return y;
}

template <bool Scan>
void check(const std::vector<float>& y, const std::vector<float>& x) {
  const auto want = reference<Scan>(x);
  int wrong = 0;
  for (std::size_t i = 0; i < want.size(); ++i) wrong += !(std::abs(y[i] - want[i]) <= 1e-4 * (1 + std::abs(want[i])));
  CHECK(wrong == 0);
}

template <bool Scan>
void check_all() {
  CAPTURE(Scan);
  CAPTURE(testing::fresh_seed());
  const auto k = tj::trace(RunningTotal<Scan>{});
  const auto x = testing::random_floats(384, -1, 1, Scan ? 41 : 42);
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    for (const char* arch : {"sm_90a", "sm_80"})
      testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw}).source, arch, k.name);
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
    std::vector<float> y(385, NAN);
    tj::compile<RunningTotal<Scan>>(tj::Device::interpreter(), {.num_warps = nw}).launch(tj::Grid{1}, const_cast<float*>(x.data()), y.data());
    check<Scan>(y, x);
    for (const char* arch : {"gfx1100", "gfx942"}) {
      CAPTURE(arch);
      const auto hk = testing::HostKernel::compile(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw}));
      if (!hk) return;
      std::vector<float> h(385, NAN);
      hk->launch({1, 1, 1}, const_cast<float*>(x.data()), h.data());
      check<Scan>(h, x);
    }
  }
}

}  // namespace

TEST_CASE("carried_unit_tile_meets_block_values") {
  check_all<false>();
  check_all<true>();
}

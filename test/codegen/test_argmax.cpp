// tj::argmax / tj::argmin (composed from a reduction, a compare and a min of indices): the first index among equal
// extrema, NaN counted as the extremum, along either axis of 2-D tiles and of 1-D tiles, NPOT extents, integers
// with many ties. Checked on the interpreter, the generated HIP text on the CPU (host emulator, wave32 and wave64),
// NVRTC / hiprtc compiles, and the GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

/// x [16, 96]: o[0..16) argmax along dim 1, o[16..112) argmin along dim 0, o[112] argmax of row 0 as a 1-D tile.
template <class T>
struct Args {
  void operator()(tj::Ptr<T> x, tj::Ptr<std::int32_t> o) const {
    auto v = tj::load(x + tj::expand_dims<1>(tj::arange<16>()) * 96 + tj::expand_dims<0>(tj::arange<96>()));
    tj::store(o + tj::arange<16>(), tj::argmax<1>(v));
    tj::store(o + 16 + tj::arange<96>(), tj::argmin<0>(v));
    tj::store(o + 112, tj::argmax<0>(tj::load(x + tj::arange<96>())));
  }
};

template <class T>
bool before(T a, T b, bool max) {  // a strictly more extreme than b, NaN the most extreme
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(b)) return false;
    if (std::isnan(a)) return true;
  }
  return max ? a > b : a < b;
}

template <class T>
std::vector<std::int32_t> reference(const std::vector<T>& x) {
  std::vector<std::int32_t> o(113);
  for (int r = 0; r < 16; ++r) {
    int best = 0;
    for (int c = 1; c < 96; ++c)
      if (before(x[static_cast<std::size_t>(r * 96 + c)], x[static_cast<std::size_t>(r * 96 + best)], true)) best = c;
    o[static_cast<std::size_t>(r)] = best;
  }
  for (int c = 0; c < 96; ++c) {
    int best = 0;
    for (int r = 1; r < 16; ++r)
      if (before(x[static_cast<std::size_t>(r * 96 + c)], x[static_cast<std::size_t>(best * 96 + c)], false)) best = r;
    o[16 + static_cast<std::size_t>(c)] = best;
  }
  o[112] = o[0];
  return o;
}

template <class T>
std::vector<T> inputs(unsigned salt) {
  std::vector<T> x;
  for (float f : testing::random_floats(16 * 96, -1, 1, salt)) {
    if constexpr (std::is_floating_point_v<T>) x.push_back(static_cast<T>(f));
    else x.push_back(static_cast<T>(std::lround(f * 5)));  // 11 values: many ties
  }
  if constexpr (std::is_floating_point_v<T>) {
    x[3 * 96 + 40] = std::numeric_limits<T>::quiet_NaN();  // row 3's argmax and column 40's argmin
    x[7 * 96 + 5] = x[7 * 96 + 70] = 2;                     // row 7: two equal maxima, the first wins
  }
  return x;
}

template <class T, class Run>
void check(const Run& run, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  auto x = inputs<T>(salt);
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    std::vector<std::int32_t> o(113, -1);
    if (!run.template operator()<Args<T>>(x, o, nw)) return;
    CHECK(o == reference(x));
  }
}

struct OnDevice {
  const tj::Device& dev;
  template <class K, class T>
  bool operator()(std::vector<T>& x, std::vector<std::int32_t>& o, int nw) const {
    testing::Mirror m{dev, {}};
    tj::compile<K>(dev, {.num_warps = nw}).launch(tj::Grid{1}, m.up(x), m.up(o));
    m.down();
    return true;
  }
};

struct OnHost {
  const char* arch;
  template <class K, class T>
  bool operator()(std::vector<T>& x, std::vector<std::int32_t>& o, int nw) const {
    const auto hk = testing::HostKernel::compile(tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {.num_warps = nw}));
    if (!hk) return false;
    hk->launch({1, 1, 1}, x.data(), o.data());
    return true;
  }
};

}  // namespace

TEST_CASE("argmax_compiles_everywhere") {
  const auto k = tj::trace(Args<float>{});
  for (const char* arch : {"sm_90a", "sm_80"})
    testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 4}).source, arch, k.name);
  testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 4}).source, k.name);
}

TEST_CASE("argmax_interpreter_matches_cpu") {
  const OnDevice on{tj::Device::interpreter()};
  check<float>(on, 61);
  check<std::int32_t>(on, 62);
}

TEST_CASE("argmax_generated_code_runs_on_the_host_emulator") {
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    check<float>(OnHost{arch}, 63);
    check<std::int32_t>(OnHost{arch}, 64);
  }
}

TEST_CASE("argmax_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check<float>(OnDevice{dev}, 65);
  check<std::int32_t>(OnDevice{dev}, 66);
}

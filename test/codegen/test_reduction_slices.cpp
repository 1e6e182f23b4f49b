// Reductions of different layout families whose results meet: a row sum added to the column sum of the transpose,
// a column sum added to the row sum of the transpose, and reductions of two separately loaded tiles. The 1-D class
// they share takes one slice; the other reduction used to fail in codegen ("converting reduction results is not
// supported yet"). Now it is computed in its source's slice and converted for its users. Checked: the plan says so,
// the code compiles for sm_90a, sm_80 and gfx942, and the interpreter and the GPU match a CPU reference.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

/// x [32, 64] row-major; y[0..32): row sums + the column sums of xᵀ (= row sums again, so 2·rowsum);
/// y[32..96): column sums of (x − row max) + row sums of its transpose (2·Σ_r (x[r, c] − max_r));
/// y[96..128): row maxima of x + column maxima of z, z [64, 32] loaded on its own from x + 2048.
struct Slices {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto v = tj::load(x + tj::expand_dims<1>(tj::arange<32>()) * 64 + tj::expand_dims<0>(tj::arange<64>()));
    tj::store(y + tj::arange<32>(), tj::sum<1>(v) + tj::sum<0>(tj::trans(v)));
    auto w = v - tj::expand_dims<1>(tj::max<1>(v));
    tj::store(y + 32 + tj::arange<64>(), tj::sum<0>(w) + tj::sum<1>(tj::trans(w)));
    auto z = tj::load(x + 2048 + tj::expand_dims<1>(tj::arange<64>()) * 32 + tj::expand_dims<0>(tj::arange<32>()));
    tj::store(y + 96 + tj::arange<32>(), tj::max<1>(v) + tj::max<0>(z));
  }
};

std::vector<double> reference(const std::vector<float>& x) {
  std::vector<double> y(128, 0.0);
  auto at = [&](int r, int c) { return static_cast<double>(x[static_cast<std::size_t>(r * 64 + c)]); };
  std::vector<double> rmax(32, -1e300);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 64; ++c) {
      y[static_cast<std::size_t>(r)] += 2 * at(r, c);
      rmax[static_cast<std::size_t>(r)] = std::max(rmax[static_cast<std::size_t>(r)], at(r, c));
    }
  for (int c = 0; c < 64; ++c)
    for (int r = 0; r < 32; ++r) y[32 + static_cast<std::size_t>(c)] += 2 * (at(r, c) - rmax[static_cast<std::size_t>(r)]);
  for (int c = 0; c < 32; ++c) {
    double m = -1e300;
    for (int r = 0; r < 64; ++r) m = std::max(m, static_cast<double>(x[2048 + static_cast<std::size_t>(r * 32 + c)]));
    y[96 + static_cast<std::size_t>(c)] = rmax[static_cast<std::size_t>(c)] + m;
  }
  return y;
}

void check_on(const tj::Device& dev, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  const auto x = testing::random_floats(4096, -4, 4, salt);
  const auto want = reference(x);
  std::vector<float> y(128);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  float *dx = const_cast<float*>(x.data()), *dy = y.data();
  if (gpu) {
    dx = static_cast<float*>(dev.alloc(x.size() * 4));
    dy = static_cast<float*>(dev.alloc(y.size() * 4));
    dev.copy_to_device(dx, x.data(), x.size() * 4);
  }
  for (int nw : {1, 4, 8}) {
    CAPTURE(nw);
    std::fill(y.begin(), y.end(), NAN);
    if (gpu) dev.copy_to_device(dy, y.data(), y.size() * 4);
    tj::compile<Slices>(dev, {.num_warps = nw}).launch(tj::Grid{1}, dx, dy);
    if (gpu) dev.copy_to_host(y.data(), dy, y.size() * 4);
    int wrong = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const bool bad = !(std::abs(y[i] - want[i]) <= 1e-4 * (64 + std::abs(want[i])));  // f32 sums of at most 64 terms
      if (bad && wrong++ < 3) MESSAGE("element ", i, ": got ", y[i], ", want ", want[i]);
    }
    CHECK(wrong == 0);
  }
  if (gpu) {
    dev.free(dx);
    dev.free(dy);
  }
}

}  // namespace

TEST_CASE("reduction_slices_of_different_families_meet_compile_everywhere") {
  const auto k = tj::trace(Slices{});
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    for (const char* arch : {"sm_90a", "sm_80"}) {
      const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw});
      int converted = 0;
      for (const auto& d : g.diagnostics) converted += d.find("computed in its source's slice") != std::string::npos;
      CHECK(converted >= 2);
      testing::compiles_for(g.source, arch, k.name);
    }
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
  }
}

TEST_CASE("reduction_slices_interpreter_matches_cpu") { check_on(tj::Device::interpreter(), 91); }

TEST_CASE("reduction_slices_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_on(dev, 92);
}

// The generated conversions themselves (registers and shared memory), run on the CPU for wave32 and wave64.
TEST_CASE("reduction_slices_generated_code_runs_on_the_host_emulator") {
  CAPTURE(testing::fresh_seed());
  const auto x = testing::random_floats(4096, -4, 4, 93);
  const auto want = reference(x);
  for (const char* arch : {"gfx1100", "gfx942"})
    for (int nw : {1, 4, 8}) {
      CAPTURE(arch);
      CAPTURE(nw);
      const auto hk = testing::HostKernel::compile(
          tj::codegen::generate(tj::trace(Slices{}), {}, tj::codegen::target_for(arch), {.num_warps = nw}));
      if (!hk) return;
      std::vector<float> y(128, NAN);
      hk->launch({1, 1, 1}, const_cast<float*>(x.data()), y.data());
      int wrong = 0;
      for (std::size_t i = 0; i < y.size(); ++i) wrong += !(std::abs(y[i] - want[i]) <= 1e-4 * (64 + std::abs(want[i])));
      CHECK(wrong == 0);
    }
}

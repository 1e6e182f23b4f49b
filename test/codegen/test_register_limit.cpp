// A value of more than codegen's 4096 elements per thread is refused with the reason: every register is unrolled,
// so an elementwise [210, 210] tile at 4 warps — 11,025 elements in each of 4 distinct threads, since only the dims'
// factors of 2 spread over lanes and warps — made 5.3 MB of CUDA that NVRTC did not finish in 300 s (a user review
// found it). The interpreter, which generates no code, still runs it.
#include <doctest/doctest.h>

#include <vector>

#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

template <int R, int C>
struct Twice {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto off = tj::expand_dims<1>(tj::arange<R>()) * C + tj::expand_dims<0>(tj::arange<C>());
    tj::store(y + off, tj::load(x + off) * 2.0f);
  }
};

}  // namespace

TEST_CASE("codegen_refuses_values_of_more_than_4096_registers_per_thread_naming_why") {
  const auto k = tj::trace(Twice<210, 210>{});
  for (const char* arch : {"sm_90a", "gfx942"}) {
    CAPTURE(arch);
    CHECK_THROWS_WITH_AS(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 4}),
                         doctest::Contains("would hold 11025 elements in every thread (4 distinct of"), tj::Unsupported);
  }
  // The same dims with more factors of 2 spread over every thread: 224 x 224 at 4 warps is 392 per thread.
  CHECK_NOTHROW(tj::codegen::generate(tj::trace(Twice<224, 224>{}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 4}));
  // Below the limit code is still generated: [256, 256] at 1 warp is 2048 per thread.
  CHECK_NOTHROW(tj::codegen::generate(tj::trace(Twice<256, 256>{}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 1}));
}

TEST_CASE("codegen_register_limit_leaves_the_interpreter_alone") {
  const auto x = testing::random_floats(210 * 210, -4, 4, 7);
  std::vector<float> y(x.size(), 0.f);
  tj::compile<Twice<210, 210>>(tj::Device::interpreter(), {.num_warps = 4}).launch(tj::Grid{1}, x.data(), y.data());
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == 2 * x[i]);
}

// Arch strings are checked the same way everywhere: codegen::target_for, CompileOptions::arch on every backend
// (the interpreter used to accept "bogus"), and compile_for_arch (which used to accept "sm_90a " and ignore a
// CompileOptions::arch that named another target).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

TEST_CASE("arch_strings_target_for_accepts_only_the_documented_forms") {
  for (const char* good : {"sm_80", "sm_90", "sm_90a", "sm_100a", "gfx90a", "gfx942", "gfx1100", "gfx942:xnack-",
                           "gfx90a:sramecc+:xnack-"}) {
    CAPTURE(good);
    CHECK_NOTHROW(tj::codegen::target_for(good));
  }
  CHECK(tj::codegen::target_for("gfx942:xnack-").warp_size == 64);
  CHECK(tj::codegen::target_for("gfx1100").warp_size == 32);
  for (const char* bad : {"bogus", "", "sm_90a ", " sm_90a", "sm_9", "sm_xyz", "sm_90b", "sm_90aa", "SM_90A", "gfx9",
                          "gfx942 ", "gfxzzz", "gfx942:", "gfx942:xnack", "compute_90a"}) {
    CAPTURE(bad);
    const std::string want = "target arch '" + std::string(bad) + "' is not a target";
    CHECK_THROWS_WITH_AS(tj::codegen::target_for(bad), doctest::Contains(want.c_str()), tj::InvalidArgument);
  }
  CHECK_THROWS_WITH_AS(tj::codegen::target_for("sm_90a "), doctest::Contains("sm_NN or sm_NNa"), tj::InvalidArgument);
}

TEST_CASE("arch_strings_compile_options_arch_is_checked_on_the_interpreter") {
  const auto dev = tj::Device::interpreter();
  CHECK_THROWS_WITH_AS(tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1, .arch = "bogus"}),
                       doctest::Contains("target arch 'bogus' is not a target"), tj::InvalidArgument);
  CHECK_THROWS_AS(tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1, .arch = "sm_90a "}), tj::InvalidArgument);
  // Valid targets still work: the interpreter runs the IR and generates text for that target on request.
  auto k = tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1, .arch = "gfx942"});
  std::vector<float> x(96, 1.f), y(96, 2.f), out(96, 0.f);
  k.launch(tj::Grid{1}, x.data(), y.data(), out.data(), 96);
  for (float v : out) CHECK(v == 3.f);
}

TEST_CASE("arch_strings_compile_for_arch_checks_its_arch_and_the_options_arch") {
  CHECK_THROWS_WITH_AS(tj::compile_for_arch<examples::VecAdd<96>>("sm_90a ", {.num_warps = 1}),
                       doctest::Contains("target arch 'sm_90a ' is not a target"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::compile_for_arch<examples::VecAdd<96>>("sm_90a", {.num_warps = 1, .arch = "sm_80"}),
                       doctest::Contains("CompileOptions::arch = 'sm_80' differs from the arch argument 'sm_90a'"), tj::InvalidArgument);
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("NVRTC not available, skipping the compiles: ", why);
    return;
  }
  CHECK_NOTHROW(tj::compile_for_arch<examples::VecAdd<96>>("sm_80", {.num_warps = 1, .arch = "sm_80"}));
}

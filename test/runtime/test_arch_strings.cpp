// Arch strings are checked the same way everywhere: codegen::target_for, CompileOptions::arch on every backend
// (the interpreter used to accept "bogus"), and compile_for_arch (which used to accept "sm_90a " and ignore a
// CompileOptions::arch that named another target).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "examples/gemm/matmul_v7.hpp"
#include "examples/vector_add.hpp"
#include "test/common/codegen.hpp"
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

// compile_for_arch used to return only the compiler's result: why pingpong, warp specialisation or a cluster was
// not applied was invisible to its caller. Its result now carries the code generator's diagnostics (and is still a
// runtime::JitResult for the callers that take one).
TEST_CASE("compile_for_arch_returns_the_code_generators_diagnostics") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("NVRTC not available, skipping the compiles: ", why);
    return;
  }
  using Kern = examples::MatmulV7<128, 256, tj::bf16, 2>;
  const tj::CompileOptions o{.num_warps = 8, .num_stages = 4, .pingpong = true, .num_ctas = 2};  // no warp_specialize
  const tj::ArchCompileResult r = tj::compile_for_arch<Kern>("sm_90a", o);
  const auto g = tj::codegen::generate(tj::trace(Kern{}), {}, tj::codegen::target_for("sm_90a"), tj::codegen_options(o));
  CHECK(r.diagnostics == g.diagnostics);
  CHECK(testing::has_diagnostic(g, "num_ctas = 2 not applied: clusters need warp specialisation"));
  CHECK(std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const std::string& d) {
          return d.find("num_ctas = 2 not applied") != std::string::npos;
        }) != r.diagnostics.end());
  CHECK(r.num_ctas == 1);
  CHECK(r.kernel_name == g.kernel_name);
  CHECK(r.threads == g.threads);
  CHECK_FALSE(r.binary.bytes.empty());
  const tj::runtime::JitResult& base = r;  // existing callers keep their type
  CHECK(base.binary.format == "cubin");
  // Applied: the diagnostic says the cluster is used.
  const auto ws = tj::compile_for_arch<Kern>("sm_90a", {.num_warps = 8, .num_stages = 4, .warp_specialize = true, .num_ctas = 2});
  CHECK(ws.num_ctas == 2);
  CHECK(std::any_of(ws.diagnostics.begin(), ws.diagnostics.end(),
                    [](const std::string& d) { return d.find("clusters of 2 programs along x") != std::string::npos; }));
}

// Generated text: deterministic, self-contained, and accepted by NVRTC
// (sm_80, sm_90a) and the HIP compiler (gfx90a, gfx942) for every example.
#include <doctest/doctest.h>

#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "test/common/kernels.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

template <class K>
std::string gen(const std::string& arch, int nw) {
  return tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {nw}).source;
}

bool is_elf(const std::vector<std::uint8_t>& b) {
  return b.size() > 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

template <class K>
void compiles_everywhere(int nw) {
  for (std::string arch : {"sm_80", "sm_90a", "gfx90a", "gfx942"}) {
    CAPTURE(arch);
    auto t = tj::codegen::target_for(arch);
    auto c = t.dialect == tj::codegen::Dialect::cuda ? tj::runtime::Compiler::nvrtc : tj::runtime::Compiler::hiprtc;
    std::string why;
    if (!tj::runtime::compiler_available(c, &why)) {
      MESSAGE("skipping ", arch, ": ", why);
      continue;
    }
    try {
      auto r = tj::compile_for_arch<K>(arch, {.num_warps = nw});
      CHECK(is_elf(r.binary.bytes));
    } catch (const tj::CompileError& e) {
      FAIL_CHECK((std::string("compile failed for ") + arch + ": " + e.what()));
    }
  }
}

}  // namespace

TEST_CASE("codegen_is_deterministic_and_self_contained") {
  auto a = gen<examples::Softmax<4, 96>>("sm_90a", 4);
  auto b = gen<examples::Softmax<4, 96>>("sm_90a", 4);
  CHECK(a == b);
  CHECK(a.find("#include") == std::string::npos);
  CHECK(a.find("__launch_bounds__(128)") != std::string::npos);
  auto h = gen<examples::Softmax<4, 96>>("gfx942", 4);
  CHECK(h.find("#include") == std::string::npos);
  CHECK(h.find("__launch_bounds__(256)") != std::string::npos);  // wave64: 4 warps of 64 lanes
}

TEST_CASE("codegen_rejects_bad_targets_and_options") {
  CHECK_THROWS_AS(tj::codegen::target_for("x86"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gen<examples::VecAdd<96>>("sm_90a", 3), doctest::Contains("num_warps = 3"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(gen<examples::VecAdd<96>>("gfx942", 32), doctest::Contains("at most 1024"), tj::InvalidArgument);
}

TEST_CASE("codegen_layout_of_96_is_exact") {
  // 96 elements over 32 lanes: 3 registers per lane and no padding to 128.
  const auto full = gen<examples::VecAdd<96>>("sm_90a", 1);
  const auto src = full.substr(full.find("extern \"C\""));  // the kernel, not the prelude
  CHECK(src.find("[4];") == std::string::npos);  // no 4th register
  CHECK(src.find("[3];") != std::string::npos);
  CHECK(full.find("r3(") != std::string::npos);  // a radix-3 register digit (in the layout comment)
}

TEST_CASE("compile_vector_add_all_targets") {
  compiles_everywhere<examples::VecAdd<96>>(1);
  compiles_everywhere<examples::VecAdd<1024>>(4);
  compiles_everywhere<examples::VecAdd<96, tj::f16>>(1);
  compiles_everywhere<examples::VecAdd<96, tj::bf16>>(1);
}

TEST_CASE("compile_softmax_all_targets") {
  compiles_everywhere<examples::Softmax<16, 96>>(4);
  compiles_everywhere<examples::Softmax<4, 768>>(4);
  compiles_everywhere<examples::Softmax<1, 3072>>(8);
  compiles_everywhere<examples::Softmax<1, 12288>>(16);
  compiles_everywhere<examples::Softmax<16, 96, tj::bf16>>(4);
  compiles_everywhere<examples::Softmax<4, 768, tj::f16>>(4);
}

TEST_CASE("compile_all_ops_all_targets") {
  compiles_everywhere<testing::AllOps<8, 96, float>>(4);
  compiles_everywhere<testing::AllOps<32, 64, float>>(8);
  compiles_everywhere<testing::AllOps<16, 48, tj::f16>>(2);
  compiles_everywhere<testing::AllOps<16, 96, tj::bf16>>(4);
  compiles_everywhere<testing::AllOps<2, 12, float>>(4);
}

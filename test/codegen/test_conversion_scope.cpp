// A value converted to another layout (e.g. a dot operand) is converted once
// and the converted registers (`x<value>_<n>`) are reused by later nodes that
// need the same layout — only where their declaration is in scope. A
// conversion needed inside a loop of a value computed before the loop is made
// before the loop (the value is loop-invariant), so a use after the loop sees
// it — unless the value's own registers stay live too (then it is converted in
// the loop body, where it is needed, and again after the loop).
//
// The kernel is the shape that broke FlashDecodeSplitTma (whose tail block now
// runs before its loop): Q loaded by pointer before a loop, read by a wgmma
// (register A, sm_90a) inside the loop with K from a descriptor, and by a dot
// after the loop. NVRTC said `identifier "x<id>_0" is undefined`.
#include <doctest/doctest.h>

#include <string>

#include "test/common/codegen.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

/// out = Q·Kᵀ summed over the blocks of k_desc in [0, n), plus Q·K_0ᵀ once more after the loop.
template <int M, int N, int D>
struct ConvertedInLoopReadAfter {
  void operator()(tj::Ptr<bf> q, tj::Desc<bf, N, D> k_desc, tj::Ptr<float> out, tj::Size n) const {
    auto rm = tj::arange<M>();
    auto rd = tj::arange<D>();
    auto q_tile = tj::load(q + tj::expand_dims<1>(rm) * D + tj::expand_dims<0>(rd));
    auto acc = tj::for_range(0, n, N, tj::zeros<float, M, N>(),
                             [&](tj::Int n0, auto acc) { return tj::dot(q_tile, tj::trans(k_desc.load(n0, 0)), acc); });
    auto s = tj::dot(q_tile, tj::trans(k_desc.load(0, 0)), acc);
    tj::store(out + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(tj::arange<N>()), s);
  }
};

/// The same with Q also stored as loaded after the loop: its own registers stay live, so its conversion is not
/// hoisted (that would hold both copies across the loop) but made in the loop body, and again for the dot after it.
template <int M, int N, int D>
struct ConvertedInLoopAndAfter {
  void operator()(tj::Ptr<bf> q, tj::Desc<bf, N, D> k_desc, tj::Ptr<float> out, tj::Ptr<bf> q_out, tj::Size n) const {
    auto rm = tj::arange<M>();
    auto rd = tj::arange<D>();
    auto q_tile = tj::load(q + tj::expand_dims<1>(rm) * D + tj::expand_dims<0>(rd));
    auto acc = tj::for_range(0, n, N, tj::zeros<float, M, N>(),
                             [&](tj::Int n0, auto acc) { return tj::dot(q_tile, tj::trans(k_desc.load(n0, 0)), acc); });
    auto s = tj::dot(q_tile, tj::trans(k_desc.load(0, 0)), acc);
    tj::store(out + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(tj::arange<N>()), s);
    tj::store(q_out + tj::expand_dims<1>(rm) * D + tj::expand_dims<0>(rd), q_tile);
  }
};

template <class K>
void compiles_on_every_target(const tj::CompileOptions& o) {
  for (std::string arch : {"sm_90a", "sm_80", "gfx942"}) {
    CAPTURE(arch);
    const auto t = tj::codegen::target_for(arch);
    const auto c = t.dialect == tj::codegen::Dialect::cuda ? tj::runtime::Compiler::nvrtc : tj::runtime::Compiler::hiprtc;
    std::string why;
    if (!tj::runtime::compiler_available(c, &why)) {
      MESSAGE("skipping ", arch, ": ", why);
      continue;
    }
    try {
      CHECK(!tj::compile_for_arch<K>(arch, o).binary.bytes.empty());
    } catch (const tj::CompileError& e) {
      FAIL_CHECK((std::string("compile failed for ") + arch + ": " + e.what()));
    }
  }
}

}  // namespace

TEST_CASE("codegen: a conversion made for a loop is in scope after the loop") {
  using K = ConvertedInLoopReadAfter<64, 64, 64>;
  for (bool ws : {false, true}) {
    CAPTURE(ws);
    compiles_on_every_target<K>({.num_warps = 4, .num_stages = 3, .warp_specialize = ws});
  }
  // sm_90a: Q is converted once, before the loop (no shared-memory round trip per iteration), and both dots read it.
  const auto g = tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for("sm_90a"), {4});
  const std::string& src = g.source;
  CHECK(testing::has_diagnostic(g, "is loop-invariant"));
  const auto conv = src.find("// convert %");
  const auto dot_in_loop = src.find("// dot %");
  REQUIRE(conv != std::string::npos);
  REQUIRE(dot_in_loop != std::string::npos);
  CHECK(conv < dot_in_loop);
  CHECK(src.find("// convert %", conv + 1) == std::string::npos);
  CHECK(src.find("// dot %", dot_in_loop + 1) != std::string::npos);
}

TEST_CASE("codegen: a conversion made in a loop body is not read after the loop") {
  using K = ConvertedInLoopAndAfter<64, 64, 64>;
  compiles_on_every_target<K>({.num_warps = 4, .num_stages = 3});
  // sm_90a: converted in the loop (before its first dot) and once more after it, for the second dot.
  const auto g = tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for("sm_90a"), {4});
  const std::string& src = g.source;
  CHECK(!testing::has_diagnostic(g, "is loop-invariant"));
  const auto conv = src.find("// convert %");
  const auto dot_in_loop = src.find("// dot %");
  REQUIRE(conv != std::string::npos);
  REQUIRE(dot_in_loop != std::string::npos);
  CHECK(conv < dot_in_loop);
  const auto dot_after = src.find("// dot %", dot_in_loop + 1);
  const auto conv_after = src.find("// convert %", conv + 1);
  REQUIRE(dot_after != std::string::npos);
  REQUIRE(conv_after != std::string::npos);
  CHECK(dot_in_loop < conv_after);
  CHECK(conv_after < dot_after);
}

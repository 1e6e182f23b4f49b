// Two dots sharing one accumulator must lower alike on sm_90a: a loop of wgmma over TMA blocks followed by one more
// product whose operands come from registers and are too large to stage for wgmma (it would be mma.sync, which
// needs another accumulator layout). Before, code generation failed deep inside the wgmma emitter ("wgmma register
// d4 has no register in the accumulator layout"); now the layout plan refuses it naming both dots and the fix.
#include <doctest/doctest.h>

#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

/// acc = Σ_k A_k·B_kᵀ (TMA blocks), then acc += X·Y with X, Y [128, 128] from pointer loads (DESC_Y: Y a TMA block).
template <bool DESC_Y>
struct SharedAccumulator {
  void operator()(tj::Desc<bf, 128, 64> a, tj::Desc<bf, 128, 64> b, tj::Ptr<bf> x, tj::Ptr<bf> y, tj::Desc<bf, 128, 128> yd,
                  tj::Ptr<float> c, tj::Size K) const {
    auto acc = tj::for_range(0, K, 64, tj::zeros<float, 128, 128>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(0, k0), tj::trans(b.load(0, k0)), acc); });
    auto r = tj::arange<128>();
    auto offs = tj::expand_dims<1>(r) * 128 + tj::expand_dims<0>(r);
    if constexpr (DESC_Y) acc = tj::dot(tj::load(x + offs), yd.load(0, 0), acc);
    else acc = tj::dot(tj::load(x + offs), tj::load(y + offs), acc);
    tj::store(c + offs, acc);
  }
};

tj::codegen::Generated gen(auto kernel) {
  return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 2});
}

}  // namespace

TEST_CASE("mixed_dots_sharing_an_accumulator_are_refused_with_the_rule") {
  CHECK_THROWS_WITH_AS(gen(SharedAccumulator<false>{}), doctest::Contains("share an accumulator, but dot %"), tj::Unsupported);
  CHECK_THROWS_WITH_AS(gen(SharedAccumulator<false>{}), doctest::Contains("66560 bytes of shared memory, over 48 KiB"), tj::Unsupported);
  // The fix the message names: Y through a descriptor, read in place by a register-A wgmma.
  CHECK_NOTHROW(gen(SharedAccumulator<true>{}));
  // Off Hopper both are mma.sync: nothing to reconcile.
  CHECK_NOTHROW(tj::codegen::generate(tj::trace(SharedAccumulator<false>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 8}));
}

// examples::Compact (a scan for places, an atomic ticket per program for blocks) against plain C++: the survivors
// as a multiset, each program's block in index order, the count; on the interpreter, the generated HIP text on the
// CPU (host emulator, wave32 and wave64, real threads racing for tickets) and the GPU. Blocks of 96 (exact: 32
// lanes x 3 registers) and 1024, ragged n, 1 and 4 warps.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "examples/compact.hpp"
#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

/// out[0..count) must be x's values above t, each program's (block of BLOCK inputs) survivors contiguous and in order.
template <int BLOCK>
void check_result(const std::vector<float>& x, int n, float t, const std::vector<float>& out, int count) {
  std::vector<std::vector<float>> blocks;
  std::size_t total = 0;
  for (int b = 0; b * BLOCK < n; ++b) {
    blocks.emplace_back();
    for (int i = b * BLOCK; i < std::min(n, (b + 1) * BLOCK); ++i)
      if (x[static_cast<std::size_t>(i)] > t) blocks.back().push_back(x[static_cast<std::size_t>(i)]);
    total += blocks.back().size();
  }
  REQUIRE(count == static_cast<int>(total));
  // Each non-empty block appears once, contiguous and in order, somewhere in out.
  std::vector<char> used(total, 0);
  for (const auto& blk : blocks) {
    if (blk.empty()) continue;
    bool found = false;
    for (std::size_t s = 0; s + blk.size() <= total && !found; ++s)
      if (!used[s] && std::equal(blk.begin(), blk.end(), out.begin() + static_cast<std::ptrdiff_t>(s))) {
        found = true;
        std::fill(used.begin() + static_cast<std::ptrdiff_t>(s), used.begin() + static_cast<std::ptrdiff_t>(s + blk.size()), 1);
      }
    CHECK(found);
  }
  CHECK(std::all_of(used.begin(), used.end(), [](char c) { return c != 0; }));
}

template <int BLOCK, class Run>
void check(const Run& run, int n, unsigned salt) {
  CAPTURE(BLOCK);
  CAPTURE(n);
  CAPTURE(testing::fresh_seed());
  auto x = testing::random_floats(static_cast<std::size_t>(n), -1, 1, salt);
  const float t = 0.25f;
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    std::vector<float> out(static_cast<std::size_t>(n), -9.0f);
    std::vector<int> count{0};
    if (!run.template operator()<examples::Compact<BLOCK>>(x, out, count, n, t, nw, static_cast<unsigned>(tj::cdiv(n, BLOCK)))) return;
    check_result<BLOCK>(x, n, t, out, count[0]);
  }
}

struct OnDevice {
  const tj::Device& dev;
  template <class K>
  bool operator()(std::vector<float>& x, std::vector<float>& out, std::vector<int>& count, int n, float t, int nw, unsigned grid) const {
    testing::Mirror m{dev, {}};
    tj::compile<K>(dev, {.num_warps = nw}).launch(tj::Grid{grid}, m.up(x), m.up(out), m.up(count), n, t);
    m.down();
    return true;
  }
};

struct OnHost {
  const char* arch;
  template <class K>
  bool operator()(std::vector<float>& x, std::vector<float>& out, std::vector<int>& count, int n, float t, int nw, unsigned grid) const {
    const auto hk = testing::HostKernel::compile(tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {.num_warps = nw}));
    if (!hk) return false;
    hk->launch({grid, 1, 1}, x.data(), out.data(), count.data(), n, t);
    return true;
  }
};

}  // namespace

TEST_CASE("compact_compiles_everywhere") {
  const auto k = tj::trace(examples::Compact<96>{});
  for (const char* arch : {"sm_90a", "sm_80"})
    testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 4}).source, arch, k.name);
  testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 4}).source, k.name);
}

TEST_CASE("compact_interpreter_matches_cpu") {
  const OnDevice on{tj::Device::interpreter()};
  check<96>(on, 1000, 11);
  check<1024>(on, 5000, 12);
}

TEST_CASE("compact_generated_code_runs_on_the_host_emulator") {
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    check<96>(OnHost{arch}, 1000, 21);
    check<1024>(OnHost{arch}, 3000, 22);
  }
}

TEST_CASE("compact_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check<96>(OnDevice{dev}, 100000, 31);
  check<1024>(OnDevice{dev}, 1000003, 32);
}

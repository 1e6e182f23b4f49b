// Review of nested ping-pong (fda15a0) and arch-planned rematerialisation (204518c).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "examples/attention/flash_fwd_persistent.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "examples/gemm/matmul_v7.hpp"
#include "test/common/codegen.hpp"
#include "test/common/text.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {
tj::codegen::Generated pp_gen(const tj::ir::Kernel& k, int stages = 2, int ctas = 1, bool tma_store = false) {
  return tj::codegen::generate(k, tma_store ? testing::all_div16(k) : tj::ir::Specialization{}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = 8, .num_stages = stages, .warp_specialize = true, .pingpong = true, .num_ctas = ctas,
                                .tma_store = tma_store});
}
}  // namespace


#include "examples/attention/flash_bwd.hpp"
#include "examples/attention/flash_decode.hpp"
#include "examples/attention/flash_fwd.hpp"
#include "examples/attention/flash_fwd_varlen.hpp"
#include "examples/gemm/matmul_small_m.hpp"
#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v4.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "tilejit/ir/lower_descriptors.hpp"
#include "tilejit/ir/remat.hpp"

TEST_CASE("review_remat_with_arch_never_adds_conversions") {
  // 204518c: rematerialisation plans with the target arch. Over the generic kernels on sm_80 / sm_90a / gfx942 at 4
  // and 8 warps it never left more conversions through shared memory than planning without it (surveyed); on gfx942
  // at 4 warps the generic forward loses all of its three.
  const auto count = [](const tj::ir::Kernel& k, const std::string& arch, int warps, bool remat) {
    const auto g = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for(arch), {.num_warps = warps, .rematerialize = remat});
    return testing::occurrences(g.source, "through shared memory");
  };
  const auto fwd = tj::trace(examples::FlashAttnFwd<128, 64, 64, false, bf>{});
  CHECK(count(fwd, "gfx942", 4, true) == 0);
  CHECK(count(fwd, "gfx942", 4, false) == 4);
  for (const auto& k : {fwd, tj::trace(examples::FlashBwdKV<64, 64, 64, true, bf>{}), tj::trace(examples::MatmulV4<128, 128, bf>{})})
    for (const std::string arch : {"sm_80", "sm_90a", "gfx942"})
      for (int w : {4, 8}) {
        CAPTURE(k.name);
        CAPTURE(arch);
        CAPTURE(w);
        CHECK(count(k, arch, w, true) <= count(k, arch, w, false));
      }
}

namespace {
/// The consumers' part of `src` (after the producer warp group's `return;`).
std::string consumers(const std::string& src) {
  const std::size_t r = src.find("  return;\n  }\n");
  REQUIRE(r != std::string::npos);
  return src.substr(r);
}
/// The ping-pong protocol of a persistent kernel, per warp group over the whole kernel: group 1 arrives at barrier 2
/// once before the tile loop and once per inner iteration, group 0 syncs it once per inner iteration and once after
/// the tile loop (and symmetrically barrier 3, per inner iteration); no barrier of every consumer thread between a
/// group's turn barrier and its hand-over (text order in the loop body).
void check_persistent_turns(const tj::codegen::Generated& g, const std::string& name) {
  CAPTURE(name);
  REQUIRE(testing::has_diagnostic(g, "continuing across loop %"));
  const std::string c = consumers(g.source);
  const std::size_t first = c.find("warp group 0 issues first"), last = c.find("the last hand-off");
  const std::size_t turn = c.find("this warp group's turn"), over = c.find("the other group's turn");
  REQUIRE(first != std::string::npos);
  REQUIRE(last != std::string::npos);
  CHECK(testing::occurrences(c, "bar.arrive 2, 256") == 1);
  CHECK(testing::occurrences(c, "bar.sync 2, 256") == 1);
  CHECK(testing::occurrences(c, "this warp group's turn") == 1);
  CHECK(testing::occurrences(c, "the other group's turn") == 1);
  // Order: first turn, the outer loop, the inner loop with the turn, the outer loop closes, the last hand-off.
  const std::size_t outer = c.find("for (int s", first);
  CHECK(first < outer);
  CHECK(outer < turn);
  CHECK(turn < over);
  CHECK(over < last);
  CHECK(c.substr(turn, over - turn).find("bar.sync 1,") == std::string::npos);
  CHECK(c.substr(turn, over - turn).find("__syncthreads") == std::string::npos);
  CHECK(c.substr(last).find("for (int s") == std::string::npos);  // after every loop
  testing::compiles_for_sm90a(g.source, "review_" + name + ".cu");
}
}  // namespace

TEST_CASE("review_pingpong_persistent_gemm_turns_balance") {
  // MatmulV6 (masked stores), MatmulV6Store with a TMA store epilogue (bar.sync 1, 256 per tile, outside the turns),
  // MatmulV7Persistent in clusters of 2 (tj_cluster_sync after the last hand-off).
  check_persistent_turns(pp_gen(tj::trace(examples::MatmulV6<128, 128, bf>{}), 3), "v6");
  const auto st = pp_gen(tj::trace(examples::MatmulV6Store<128, 128, bf>{}), 3, 1, true);
  CHECK(testing::occurrences(consumers(st.source), "bar.sync 1, 256") > 0);  // the epilogue's barriers
  check_persistent_turns(st, "v6store");
  const auto v7 = pp_gen(tj::trace(examples::MatmulV7Persistent<128, 128, bf, 2>{}), 3, 2);
  check_persistent_turns(v7, "v7p_c2");
  CHECK(v7.source.find("the last hand-off") < v7.source.rfind("tj_cluster_sync()"));
  check_persistent_turns(pp_gen(tj::trace(examples::MatmulV7PersistentStore<128, 128, bf, bf, 2>{}), 3, 2, true), "v7ps_c2");
  check_persistent_turns(pp_gen(tj::trace(examples::FlashAttnFwdTmaPersistent<128, 128, 64, true, bf>{})), "attn_causal_d64");
}

// Every GEMM and attention kernel written for Hopper (descriptors, producer warp groups, clusters, TMA stores)
// still compiles for the targets without those features: sm_80 (mma.sync, descriptor loads lowered to masked
// pointer loads) and gfx942 (MFMA through hiprtc). The options that only Hopper honours (warp_specialize, num_ctas,
// tma_store) are passed as the library passes them: the code generator drops them with a diagnostic.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include <fmt/format.h>

#include "examples/attention/attention.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "examples/gemm/matmul_v7.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using namespace examples;

namespace {

/// Compiles K for sm_80 and gfx942 (each where its compiler is present) and checks machine code came back.
template <class K>
void compiles_everywhere(const char* what, tj::CompileOptions o) {
  for (const char* arch : {"sm_80", "gfx942"}) {
    const bool amd = std::string(arch) == "gfx942";
    std::string why;
    if (!tj::runtime::compiler_available(amd ? tj::runtime::Compiler::hiprtc : tj::runtime::Compiler::nvrtc, &why)) {
      MESSAGE("skipping ", arch, ": ", why);
      continue;
    }
    CAPTURE(what);
    CAPTURE(arch);
    tj::ArchCompileResult r;
    CHECK_NOTHROW(r = tj::compile_for_arch<K>(arch, o));
    CHECK(r.binary.format == (amd ? "hsaco" : "cubin"));
    CHECK(r.binary.bytes.size() > 1000);
    CHECK(r.num_ctas == 1);  // no clusters off Hopper
  }
}

}  // namespace

TEST_CASE("gemm_hopper_rungs_compile_for_sm80_and_gfx942") {
  compiles_everywhere<MatmulV6<128, 128, tj::bf16>>("MatmulV6", {.num_warps = 8, .num_stages = 4, .warp_specialize = true});
  compiles_everywhere<MatmulV6Fused<128, 128, tj::bf16, Act::gelu_tanh>>("MatmulV6Fused", {.num_warps = 8, .warp_specialize = true});
  compiles_everywhere<MatmulV6Store<128, 96, tj::bf16>>("MatmulV6Store", {.num_warps = 4, .warp_specialize = true, .tma_store = true});
  compiles_everywhere<MatmulV7<128, 128, tj::bf16>>("MatmulV7", {.num_warps = 8, .warp_specialize = true, .num_ctas = 2});
  compiles_everywhere<MatmulV7Persistent<128, 128, tj::bf16>>("MatmulV7Persistent", {.num_warps = 8, .warp_specialize = true, .num_ctas = 2});
  compiles_everywhere<MatmulV7PersistentStore<64, 192, tj::f16>>("MatmulV7PersistentStore",
                                                                  {.num_warps = 4, .warp_specialize = true, .num_ctas = 2, .tma_store = true});
  compiles_everywhere<MatmulV5SplitK<128, 128, tj::bf16>>("MatmulV5SplitK", {.num_warps = 4});
  compiles_everywhere<SplitKReduce<256>>("SplitKReduce", {.num_warps = 4});
  compiles_everywhere<MatmulV5Scaled<128, 128, tj::f16>>("MatmulV5Scaled", {.num_warps = 4});
}

TEST_CASE("attention_kernels_compile_for_sm80_and_gfx942") {
  compiles_everywhere<FlashBwdPreprocess<64, 128, tj::bf16>>("FlashBwdPreprocess", {.num_warps = 4});
  compiles_everywhere<FlashBwdQ<64, 64, 128, true, tj::bf16>>("FlashBwdQ", {.num_warps = 4});
  compiles_everywhere<FlashBwdKVTma<64, 64, 96, true, tj::bf16>>("FlashBwdKVTma", {.num_warps = 4, .warp_specialize = true});
  compiles_everywhere<FlashBwdQTma<64, 64, 128, false, tj::f16>>("FlashBwdQTma", {.num_warps = 4});
  compiles_everywhere<FlashBwdFusedTma<64, 128, 128, true, tj::bf16>>("FlashBwdFusedTma", {.num_warps = 8, .cp_async_resident = true});
  compiles_everywhere<FlashBwdDqConvert<64, 96, tj::f16>>("FlashBwdDqConvert", {.num_warps = 4});
  compiles_everywhere<FlashDecodeSplitTma<64, 128, tj::bf16>>("FlashDecodeSplitTma", {.num_warps = 4, .warp_specialize = true});
  compiles_everywhere<FlashDecodeReduce<128, tj::bf16>>("FlashDecodeReduce", {.num_warps = 1});
  compiles_everywhere<FlashAttnFwdTma<128, 64, 64, true, tj::bf16>>("FlashAttnFwdTma", {.num_warps = 8});
  // The library's Hopper forward tiles (128 x 128): their layout conversions take up to
  // 64 KiB of static shared memory on gfx942 (its LDS), more than the 48 KiB CUDA allows statically.
  compiles_everywhere<FlashAttnFwdTmaPingPongEdge<128, 128, 96, true, tj::bf16>>("FlashAttnFwdTmaPingPongEdge",
                                                                                {.num_warps = 8, .warp_specialize = true});
  compiles_everywhere<FlashAttnFwdTmaPersistent<128, 128, 128, true, tj::bf16>>("FlashAttnFwdTmaPersistent",
                                                                               {.num_warps = 8, .warp_specialize = true});
  // D = 256's 128 x 64 tiles need 96 KiB there: 64 x 64.
  compiles_everywhere<FlashAttnFwdTmaPingPongEvenN<64, 64, 256, false, tj::f16>>("FlashAttnFwdTmaPingPongEvenN D256",
                                                                                {.num_warps = 4, .warp_specialize = true});
}

namespace {
/// A 256 x 256 product whose result meets a tile loaded in another layout: one of them goes through shared memory
/// (128-256 KiB), past every target's static limit.
struct BigConversion {
  void operator()(tj::Ptr<tj::bf16> a, tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto r = tj::arange<256>();
    auto off = tj::expand_dims<1>(r) * 256 + tj::expand_dims<0>(r);
    auto d = tj::dot(tj::load(a + off), tj::load(a + off), tj::zeros<float, 256, 256>());
    tj::store(y + off, tj::exp(d) * tj::load(x + tj::expand_dims<1>(r) * 256 + tj::expand_dims<0>(r) * 2));
  }
};
}  // namespace

TEST_CASE("static_shared_memory_past_the_target_s_limit_is_a_typed_error_naming_it") {
  for (const auto& [arch, kib] : {std::pair{"sm_80", 48}, std::pair{"gfx942", 64}}) {
    CAPTURE(arch);
    try {
      (void)tj::codegen::generate(tj::trace(BigConversion{}), {}, tj::codegen::target_for(arch), tj::codegen_options({.num_warps = 4}));
      FAIL("generated a kernel past the static shared-memory limit");
    } catch (const tj::Unsupported& e) {
      const std::string m = e.what();
      CHECK(m.find(fmt::format("at most {} KiB of static shared memory", kib)) != std::string::npos);
      CHECK(m.find(arch) != std::string::npos);
    }
  }
}

// Contiguity-aware anchoring (ir/layout_plan.hpp): a dot operand loaded in
// the dot's loop from contiguous pointers is planned in a blocked layout and
// loaded with 16-byte vectors (converted to the mma operand layout at the
// dot), not loaded straight into the mma.sync operand layout 2 or 4 bytes at
// a time. Checked on the generated CUDA of a small GEMM and of the decode
// kernel (the bf16 vector and scalar global loads codegen writes), plus the
// cases that stay anchored (a load outside the dot's loop, pointers with no
// contiguity), the dim-0 option, NVRTC's register/spill report and hiprtc.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "examples/attention/flash_decode.hpp"
#include "examples/attention/flash_fwd.hpp"
#include "examples/gemm/matmul_v1.hpp"
#include "test/common/text.hpp"
#include "tilejit/ir/axis_info.hpp"
#include "tilejit/ir/layout_plan.hpp"
#include "tilejit/ir/remat.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using testing::occurrences;

namespace {

/// Generated source as a launch with 16-byte aligned pointers and sizes divisible by 16 gets it.
tj::codegen::Generated generate(const tj::ir::Kernel& k, const std::string& arch, int warps) {
  tj::ir::Specialization spec;
  spec.flags.assign(k.params.size(), tj::ir::Specialization::kDiv16);
  return tj::codegen::generate(k, spec, tj::codegen::target_for(arch), {.num_warps = warps});
}
/// Global loads codegen writes one 16-bit element at a time, and as 4- and 16-byte vectors.
std::size_t scalar_loads(const std::string& src) {
  return occurrences(src, "tj_bf16_to_f32(*") + occurrences(src, "tj_f16_to_f32(*");
}
std::size_t v4_loads(const std::string& src) { return occurrences(src, "*(const tj_v4*)("); }
std::size_t v16_loads(const std::string& src) { return occurrences(src, "*(const tj_v16*)("); }
bool any_contains(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

/// C [64, 64] = A [64, K] · B [K, cols]: B's columns gathered through an index vector, so B's pointers are
/// contiguous along neither dim and no layout loads it in vectors: its family stays anchored.
struct GatheredColumnsGemm {
  void operator()(tj::Ptr<tj::bf16> a, tj::Ptr<tj::bf16> b, tj::Ptr<std::int32_t> cols, tj::Ptr<float> c, tj::Size K,
                  tj::Size ldb) const {
    auto rm = tj::arange<64>();
    auto rn = tj::arange<64>();
    auto cn = tj::load(cols + rn);
    auto acc = tj::for_range(0, K, 32, tj::zeros<float, 64, 64>(), [&](tj::Int k0, auto acc) {
      auto rk = k0 + tj::arange<32>();
      auto at = tj::load(a + tj::expand_dims<1>(rm) * K + tj::expand_dims<0>(rk));
      auto bt = tj::load(b + tj::expand_dims<1>(rk) * ldb + tj::expand_dims<0>(cn));
      return tj::dot(at, bt, acc);
    });
    tj::store(c + tj::expand_dims<1>(rm) * 64 + tj::expand_dims<0>(rn), acc);
  }
};

struct Ptxas {
  int registers = -1, spill_stores = -1, spill_loads = -1;
};
Ptxas nvrtc_ptxas(const tj::codegen::Generated& g, const std::string& arch) {
  tj::runtime::JitRequest req;
  req.source = g.source;
  req.name = g.kernel_name + ".cu";
  req.arch = arch;
  req.options = {"--ptxas-options=-v"};
  const auto res = tj::runtime::compile(req);
  Ptxas r;
  std::smatch m;
  if (std::regex_search(res.log, m, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)")))
    r.spill_stores = std::stoi(m[1]), r.spill_loads = std::stoi(m[2]);
  if (std::regex_search(res.log, m, std::regex(R"(Used (\d+) registers)"))) r.registers = std::stoi(m[1]);
  MESSAGE(g.kernel_name, " ", arch, ": ", r.registers, " registers, spill stores ", r.spill_stores, " B, spill loads ",
          r.spill_loads, " B");
  return r;
}

}  // namespace

TEST_CASE("coalesce_gemm_operands_loaded_in_the_k_loop") {
  // BLOCK_K = 32: mma.sync on sm_80 and on sm_90a (not a wgmma K).
  for (std::string arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    const auto g = generate(tj::trace(examples::MatmulV1<64, 64, 32, tj::bf16>{}), arch, 4);
    CAPTURE(g.diagnostics);
    CHECK(scalar_loads(g.source) == 0u);
    CHECK(v4_loads(g.source) == 0u);
    // A [64, 32] and B [32, 64] over 128 threads: 16 elements each, two 16-byte loads per thread per tile.
    CHECK(v16_loads(g.source) == 4u);
    CHECK(any_contains(g.diagnostics, "operand a of dot"));
    CHECK(any_contains(g.diagnostics, "operand b of dot"));
    CHECK(occurrences(g.source, "through shared memory") == 2u);  // each tile converted for the dot
    CHECK_FALSE(any_contains(g.diagnostics, "anchored to"));
  }
}

TEST_CASE("coalesce_decode_cache_tiles") {
  auto check = [](const tj::ir::Kernel& k, const std::string& arch, int d) {
    CAPTURE(arch);
    CAPTURE(d);
    const auto g = generate(k, arch, 4);
    CAPTURE(g.diagnostics);
    // K and V [64, D] per step: D/2 elements per thread each, in 16-byte vectors; no scalar cache load.
    CHECK(scalar_loads(g.source) == 0u);
    CHECK(v16_loads(g.source) == static_cast<std::size_t>(2 * (64 * d / 128) / 8));
    // Q [16, D] is read once, before the loop: it stays in the operand A layout (4-byte pairs; every warp holds
    // all 16 rows: D/2 elements per thread), not converted in every iteration.
    CHECK(any_contains(g.diagnostics, "anchored to the mma.sync operand A layout"));
    CHECK(v4_loads(g.source) == static_cast<std::size_t>(d / 4));
    CHECK(any_contains(g.diagnostics, "instead (coalesced)"));
  };
  for (std::string arch : {"sm_80", "sm_90a"}) {
    check(tj::trace(examples::FlashDecodeSplit<64, 128, tj::bf16, 16, false>{}), arch, 128);
    check(tj::trace(examples::FlashDecodeSplit<64, 96, tj::bf16, 16, false>{}), arch, 96);
  }
}

TEST_CASE("anchor_kept_when_no_layout_vectorises_the_load") {
  const auto g = generate(tj::trace(GatheredColumnsGemm{}), "sm_80", 4);
  CAPTURE(g.diagnostics);
  CHECK(any_contains(g.diagnostics, "anchored to the mma.sync operand B layout"));  // gathered: 2 bytes either way
  CHECK(any_contains(g.diagnostics, "is used outside itself only as operand a of dot"));  // A: blocked
  CHECK(v16_loads(g.source) == 2u);                                                  // A [64, 32]: two per thread
  // The interpreter computes the reference (layouts change nothing there).
  const int K = 64, ldb = 80;  // K a multiple of BLOCK_K: the kernel has no masks
  std::vector<tj::bf16> a, b;
  for (int i = 0; i < 64 * K; ++i) a.push_back(tj::bf16(static_cast<float>((i * 7) % 13) - 6.0f));
  for (int i = 0; i < K * ldb; ++i) b.push_back(tj::bf16(static_cast<float>((i * 5) % 11) - 5.0f));
  std::vector<std::int32_t> cols(64);
  for (int j = 0; j < 64; ++j) cols[static_cast<std::size_t>(j)] = (j * 37) % ldb;
  std::vector<float> c(64 * 64, -1.0f);
  tj::compile<GatheredColumnsGemm>(tj::Device::interpreter(), {.num_warps = 4})
      .launch(tj::Grid{1}, a.data(), b.data(), cols.data(), c.data(), K, ldb);
  for (int i : {0, 17, 63})
    for (int j : {0, 5, 63}) {
      double want = 0;
      for (int kk = 0; kk < K; ++kk)
        want += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(i * K + kk)])) *
                static_cast<float>(b[static_cast<std::size_t>(kk * ldb + cols[static_cast<std::size_t>(j)])]);
      CHECK(c[static_cast<std::size_t>(i * 64 + j)] == doctest::Approx(want));
    }
}

TEST_CASE("vector_any_dim_runs_blocked_lanes_along_the_contiguous_dim") {
  // Kᵀ [D, BLOCK_N] read from a row-major K is contiguous along dim 0. Today's codegen vectorises the last dim
  // only, so by default the plan keeps the last dim minor; with vector_any_dim the family runs along dim 0 and
  // its load moves 16 bytes per access there.
  const auto k = tj::trace(examples::FlashAttnFwd<64, 64, 64, false, tj::bf16>{});
  const auto plain = tj::ir::assign_layouts(k, 4, 32, "sm_80");
  CHECK_FALSE(any_contains(plain.diagnostics, "along dim0"));
  const auto any = tj::ir::assign_layouts(k, 4, 32, "sm_80", /*vector_any_dim=*/true);
  CAPTURE(any.diagnostics);
  CHECK(any_contains(any.diagnostics, "along dim0 (its loads are contiguous there)"));
  tj::ir::Specialization usual;
  usual.flags.assign(k.params.size(), tj::ir::Specialization::kDiv16);
  const auto axes = tj::ir::analyze_axes(k, usual);
  int checked = 0;
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const auto& n = k.nodes[id];
    if (n.op != tj::ir::Op::load || n.type.rank != 2) continue;
    const auto& ptr = axes[static_cast<std::size_t>(n.args[0])];
    if (ptr.contiguity[0] <= 1) continue;  // the Kᵀ load: contiguous along dim 0
    const auto& t = any.values[id];
    const auto* mask = n.args[1] >= 0 ? &axes[static_cast<std::size_t>(n.args[1])] : nullptr;
    CHECK(tj::ir::vector_elements(any.layouts[static_cast<std::size_t>(t.layout)], t, n.type, ptr, mask, 0) == 8);
    const auto& t0 = plain.values[id];
    CHECK(tj::ir::vector_elements(plain.layouts[static_cast<std::size_t>(t0.layout)], t0, n.type, ptr, mask, 0) < 8);
    ++checked;
  }
  CHECK(checked == 1);
}

TEST_CASE("coalesced_kernels_compile_without_spills") {
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    for (std::string arch : {"sm_80", "sm_90a"}) {
      CAPTURE(arch);
      for (const auto& g : {generate(tj::trace(examples::FlashDecodeSplit<64, 128, tj::bf16, 16, false>{}), arch, 4),
                            generate(tj::trace(examples::FlashDecodeSplit<64, 96, tj::bf16, 16, false>{}), arch, 4),
                            generate(tj::trace(examples::MatmulV1<64, 64, 32, tj::bf16>{}), arch, 4)}) {
        const auto r = nvrtc_ptxas(g, arch);
        CHECK(r.registers > 0);
        CHECK(r.spill_stores == 0);
        CHECK(r.spill_loads == 0);
      }
    }
  } else {
    MESSAGE("skipping NVRTC: ", why);
  }
  if (tj::runtime::compiler_available(tj::runtime::Compiler::hiprtc, &why)) {
    // MFMA dots stage their operands from blocked layouts (no anchoring); the decode kernel's K tile is now
    // read row-major and transposed in registers.
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashDecodeSplit<64, 128, tj::bf16, 16, false>>("gfx942", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashDecodeSplit<64, 64, tj::f16, 16, false>>("gfx942", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<64, 64, 32, tj::bf16>>("gfx942", {.num_warps = 4}));
  } else {
    MESSAGE("skipping HIP: ", why);
  }
}

// Rematerialisation plans against the target's layouts: on gfx942 the decode
// kernel's dots lower to MFMA, whose operand layouts differ from mma.sync's,
// so a plan made without the arch picks the wrong chains to clone and leaves
// conversions through shared memory (two barriers each) in the kernel.
TEST_CASE("remat_plans_layouts_for_the_target_arch") {
  const auto ir = tj::trace(examples::FlashDecodeSplit<64, 128, tj::bf16, 16, false>{});
  const tj::ir::Specialization spec;  // unaligned: the kernel's loads stay scalar and its layouts anchored
  const auto t = tj::codegen::target_for("gfx942");
  const auto with = [&](const std::string& plan_arch) {
    const auto rm = tj::ir::rematerialize(ir, 1, t.warp_size, plan_arch);
    return tj::codegen::generate(rm.kernel, spec, t, {.num_warps = 1, .rematerialize = false}).source;
  };
  CHECK(occurrences(with(""), "through shared memory") > 0);  // planned for no tensor cores: wrong clones
  CHECK(occurrences(with("gfx942"), "through shared memory") == 0);
  // generate() runs the pass itself with its target.
  CHECK(occurrences(tj::codegen::generate(ir, spec, t, {.num_warps = 1}).source, "through shared memory") == 0);
}

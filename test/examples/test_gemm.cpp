// GEMM rungs 1 and 2: the interpreter against an f64 reference (incl. N = 96
// and ragged M/N/K), NVRTC compiles (rung 2: no spills in the ptxas report),
// and (on a GPU) the device against the reference. Rung 2's compiler side:
// rematerialisation of 1-D index chains (ir/remat.hpp) and the layouts of
// dot operand families (ir/layout_plan.hpp: anchored to the mma operand
// layouts, or blocked when that gives wider loads).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <vector>

#include "test/common/text.hpp"
#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v2.hpp"
#include "test/common/random.hpp"
#include "tilejit/ir/remat.hpp"

namespace tj = tilejit;

namespace {

template <class T>
struct Problem {
  int M, N, K;
  std::vector<T> a, b;
  std::vector<double> ref;
  Problem(int m, int n, int k, unsigned salt) : M(m), N(n), K(k) {
    auto af = testing::random_floats(static_cast<std::size_t>(m) * k, -1, 1, salt);
    auto bf = testing::random_floats(static_cast<std::size_t>(k) * n, -1, 1, salt + 1);
    for (float x : af) a.push_back(T(x));
    for (float x : bf) b.push_back(T(x));
    ref.assign(static_cast<std::size_t>(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
      for (int kk = 0; kk < k; ++kk) {
        const double x = static_cast<float>(a[static_cast<std::size_t>(i) * k + kk]);
        for (int j = 0; j < n; ++j) ref[static_cast<std::size_t>(i) * n + j] += x * static_cast<float>(b[static_cast<std::size_t>(kk) * n + j]);
      }
  }
};

template <int BM, int BN, int BK, class T>
void interp_gemm(int M, int N, int K) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  Problem<T> p(M, N, K, static_cast<unsigned>(M * 7 + N));
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  auto k = tj::compile<examples::MatmulV1<BM, BN, BK, T>>(tj::Device::interpreter(), {.num_warps = 4});
  k.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, p.a.data(), p.b.data(), c.data(), M, N, K);
  for (float v : c) REQUIRE(!std::isnan(v));  // every element written
  CHECK(testing::rel_error(c, p.ref) < 1e-6);  // exact products, f32 sums
}

}  // namespace

TEST_CASE("gemm_v1_interpreter_matches_f64") {
  interp_gemm<32, 32, 32, tj::bf16>(64, 64, 64);
  interp_gemm<32, 96, 32, tj::bf16>(40, 96 * 2, 70);  // N = 96 tiles, ragged M and K
  interp_gemm<64, 48, 16, tj::f16>(70, 50, 33);        // ragged everything
}

TEST_CASE("gemm_v1_compiles_with_nvrtc") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  for (std::string arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<64, 64, 32, tj::bf16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<64, 96, 32, tj::f16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<128, 192, 32, tj::bf16>>(arch, {.num_warps = 8}));
  }
}

TEST_CASE("gemm_v1_hip_lowers_dot_to_mfma") {
  // gfx942: MFMA 32x32x8 (bf16 `_1k`); an arch without MFMA says so.
  const auto g = tj::codegen::generate(tj::trace(examples::MatmulV1<64, 64, 32, tj::bf16>{}), {},
                                       tj::codegen::target_for("gfx942"), {4});
  CHECK(g.source.find("__builtin_amdgcn_mfma_f32_32x32x8bf16_1k") != std::string::npos);
  CHECK_THROWS_WITH_AS(tj::codegen::generate(tj::trace(examples::MatmulV1<64, 64, 32, tj::bf16>{}), {},
                                             tj::codegen::target_for("gfx1100"), {4}),
                       doctest::Contains("MFMA on gfx90a and gfx94x only"), tj::Unsupported);
}

namespace {
template <class Kern, int BM, int BN, int WARPS, class T>
struct Variant {
  using kernel = Kern;
  using elem = T;
  static constexpr int bm = BM, bn = BN, warps = WARPS;
};
template <class V>
void gpu_gemm(const tj::Device& dev, int M, int N, int K, double tol) {
  using T = typename V::elem;
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  Problem<T> p(M, N, K, static_cast<unsigned>(M + N + K));
  auto* da = static_cast<T*>(dev.alloc(p.a.size() * sizeof(T)));
  auto* db = static_cast<T*>(dev.alloc(p.b.size() * sizeof(T)));
  auto* dc = static_cast<float*>(dev.alloc(static_cast<std::size_t>(M) * N * 4));
  dev.copy_to_device(da, p.a.data(), p.a.size() * sizeof(T));
  dev.copy_to_device(db, p.b.data(), p.b.size() * sizeof(T));
  dev.memset(dc, 0xff, static_cast<std::size_t>(M) * N * 4);  // NaN poison
  auto k = tj::compile<typename V::kernel>(dev, {.num_warps = V::warps});
  k.launch(tj::Grid{tj::cdiv(M, V::bm), tj::cdiv(N, V::bn)}, da, db, dc, M, N, K);
  std::vector<float> c(static_cast<std::size_t>(M) * N);
  dev.copy_to_host(c.data(), dc, c.size() * 4);
  for (float v : c) REQUIRE(!std::isnan(v));
  CHECK(testing::rel_error(c, p.ref) < tol);
  dev.free(da), dev.free(db), dev.free(dc);
}
}  // namespace

TEST_CASE("gemm_v1_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  gpu_gemm<Variant<examples::MatmulV1<64, 64, 32, tj::bf16>, 64, 64, 4, tj::bf16>>(dev, 256, 256, 256, 1e-5);
  gpu_gemm<Variant<examples::MatmulV1<64, 96, 32, tj::f16>, 64, 96, 4, tj::f16>>(dev, 200, 96 * 3, 100, 1e-5);
  gpu_gemm<Variant<examples::MatmulV1<128, 192, 32, tj::bf16>, 128, 192, 8, tj::bf16>>(dev, 300, 192 * 2, 520, 1e-5);
}

// ---- rung 2 ------------------------------------------------------------------

namespace {

/// Rung 2's IR: the traced kernel with its 1-D index chains rematerialised
/// (a no-op once codegen runs the pass itself).
template <class K>
tj::ir::Kernel rung2_ir(int num_warps) {
  return tj::ir::rematerialize(tj::trace(K{}), num_warps, 32).kernel;
}

using testing::occurrences;
bool any_contains(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& x : v)
    if (x.find(what) != std::string::npos) return true;
  return false;
}

/// Launch a GEMM-shaped IR (a, b, c, M, N, K) on `dev` through a KernelCore.
template <class T>
void launch_ir(const tj::Device& dev, const tj::ir::Kernel& ir, int warps, tj::Grid g, const T* a, const T* b, float* c, int M,
               int N, int K) {
  tj::runtime::KernelCore core(dev, ir, {.num_warps = warps});
  std::array<tj::runtime::ArgSlot, 6> slots{};
  const void* ptrs[3] = {a, b, c};
  for (int i = 0; i < 3; ++i) {
    slots[static_cast<std::size_t>(i)].kind = tj::runtime::ArgSlot::Kind::pointer;
    slots[static_cast<std::size_t>(i)].v.p = const_cast<void*>(ptrs[i]);
  }
  const int sizes[3] = {M, N, K};
  for (int i = 0; i < 3; ++i) {
    slots[static_cast<std::size_t>(3 + i)].kind = tj::runtime::ArgSlot::Kind::i32;
    slots[static_cast<std::size_t>(3 + i)].v.i32 = sizes[i];
  }
  core.launch(g, tj::Stream{}, slots);
}

/// One 1-D index vector `r` (with its mask `r < n`) expanded into two
/// families of different extents: dim 1 of a [32,64] tile and dim 0 of a
/// [64,16] tile, whose blocked layouts slice differently.
struct ArangeTwoFamilies {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Ptr<float> out, tj::Size n) const {
    auto r = tj::program_id(0) * 64 + tj::arange<64>();
    auto rows = tj::arange<32>();
    auto cols = tj::arange<16>();
    auto mx = tj::expand_dims<0>(r < n) & tj::expand_dims<1>(rows < 32);
    auto xt = tj::load(x + tj::expand_dims<1>(rows) * n + tj::expand_dims<0>(r), mx, 0.0f);
    tj::store(out + tj::expand_dims<1>(rows) * n + tj::expand_dims<0>(r), xt * 2.0f, mx);
    auto my = tj::expand_dims<1>(r < n) & tj::expand_dims<0>(cols < 16);
    auto yt = tj::load(y + tj::expand_dims<1>(r) * 16 + tj::expand_dims<0>(cols), my, 0.0f);
    tj::store(out + 32 * n + tj::expand_dims<1>(r) * 16 + tj::expand_dims<0>(cols), yt + 1.0f, my);
  }
};
/// The same, but the index vector is loaded: not cheap, stays converted.
struct LoadedIndexTwoFamilies {
  void operator()(tj::Ptr<int> idx, tj::Ptr<float> x, tj::Ptr<float> out) const {
    auto r = tj::load(idx + tj::arange<64>());
    auto xt = tj::load(x + tj::expand_dims<1>(tj::arange<32>()) * 64 + tj::expand_dims<0>(r));
    tj::store(out + tj::expand_dims<1>(tj::arange<32>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), xt);
    auto yt = tj::load(x + tj::expand_dims<1>(r) * 16 + tj::expand_dims<0>(tj::arange<16>()));
    tj::store(out + 2048 + tj::expand_dims<1>(tj::arange<64>()) * 16 + tj::expand_dims<0>(tj::arange<16>()), yt);
  }
};
/// A dot whose A tile is also reduced: the A family leaves itself through a
/// reduction too, so it is not anchored (blocked, converted for the dot).
struct DotAndRowSum {
  void operator()(tj::Ptr<tj::f16> a, tj::Ptr<tj::f16> b, tj::Ptr<float> c, tj::Ptr<float> rowsum) const {
    auto r64 = tj::arange<64>();
    auto r32 = tj::arange<32>();
    auto at = tj::load(a + tj::expand_dims<1>(r64) * 32 + tj::expand_dims<0>(r32));
    auto bt = tj::load(b + tj::expand_dims<1>(r32) * 64 + tj::expand_dims<0>(r64));
    tj::store(c + tj::expand_dims<1>(r64) * 64 + tj::expand_dims<0>(r64), tj::dot(at, bt));
    tj::store(rowsum + r64, tj::sum<1>(tj::cast<float>(at)));
  }
};

// Generated source without generate()'s own rematerialisation, so the tests see
// the conversions the pass removes.
std::string cuda_source(const tj::ir::Kernel& k, int warps, std::vector<std::string>* diag = nullptr) {
  auto g = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_80"), {warps, /*rematerialize=*/false});
  if (diag) *diag = g.diagnostics;
  return g.source;
}

}  // namespace

TEST_CASE("remat_clones_a_1d_arange_feeding_two_families") {
  const auto ir = tj::trace(ArangeTwoFamilies{});
  const auto before = cuda_source(ir, 4);
  CHECK(occurrences(before, "through shared memory") == 2);  // r and r < n, converted for the second family
  const auto rm = tj::ir::rematerialize(ir, 4, 32);
  CAPTURE(tj::ir::print(rm.kernel));
  REQUIRE_NOTHROW(tj::ir::verify(rm.kernel));
  CHECK(rm.cloned_nodes > 0);
  REQUIRE(rm.diagnostics.size() == 1);
  CHECK(rm.diagnostics[0].find("instead of converted through shared memory") != std::string::npos);
  std::vector<std::string> diag;
  const auto after = cuda_source(rm.kernel, 4, &diag);
  CHECK(occurrences(after, "through shared memory") == 0);
  CHECK(occurrences(after, "__syncthreads") == 0);
  CHECK_FALSE(any_contains(diag, "converted"));
  // A second pass finds nothing left to do.
  const auto again = tj::ir::rematerialize(rm.kernel, 4, 32);
  CHECK(again.cloned_nodes == 0);
  CHECK(again.kernel.nodes.size() == rm.kernel.nodes.size());

  // The interpreter computes the same bits from both kernels.
  const int n = 100;
  auto x = testing::random_floats(32 * n, -1, 1, 3), y = testing::random_floats(static_cast<std::size_t>(n) * 16, -1, 1, 4);
  std::vector<float> out0(static_cast<std::size_t>(48 * n), -7.0f), out1 = out0;
  auto run = [&](const tj::ir::Kernel& k, std::vector<float>& out) {
    tj::runtime::KernelCore core(tj::Device::interpreter(), k, {.num_warps = 4});
    std::array<tj::runtime::ArgSlot, 4> s{};
    void* p[3] = {x.data(), y.data(), out.data()};
    for (int i = 0; i < 3; ++i) s[static_cast<std::size_t>(i)].kind = tj::runtime::ArgSlot::Kind::pointer, s[static_cast<std::size_t>(i)].v.p = p[i];
    s[3].kind = tj::runtime::ArgSlot::Kind::i32;
    s[3].v.i32 = n;
    core.launch(tj::Grid{tj::cdiv(n, 64)}, tj::Stream{}, s);
  };
  run(ir, out0);
  run(rm.kernel, out1);
  CHECK(std::memcmp(out0.data(), out1.data(), out0.size() * sizeof(float)) == 0);
  CHECK(out1[5] == 2.0f * x[5]);
}

TEST_CASE("remat_clones_stay_in_the_loop_body_of_their_use") {
  // Rung 1's kernel at 8 warps: rk (in the K loop) feeds A and B, rm and rn
  // (before the loop) feed an operand and the accumulator after it.
  const auto ir = tj::trace(examples::MatmulV1<128, 128, 32, tj::bf16>{});
  const auto rm = tj::ir::rematerialize(ir, 8, 32);
  CAPTURE(tj::ir::print(rm.kernel));
  REQUIRE_NOTHROW(tj::ir::verify(rm.kernel));
  CHECK(rm.diagnostics.size() == 3);  // rk for B in the loop; rm and rn for the accumulator after it
  CHECK(occurrences(rm.diagnostics[0], "in the loop at") == 1);
  auto aranges_in_loop = [](const tj::ir::Kernel& k) {
    int n = 0, depth = 0;
    for (const auto& node : k.nodes) {
      depth += node.op == tj::ir::Op::loop_begin ? 1 : node.op == tj::ir::Op::loop_end ? -1 : 0;
      n += depth > 0 && node.op == tj::ir::Op::arange;
    }
    return n;
  };
  CHECK(aranges_in_loop(ir) == 1);
  CHECK(aranges_in_loop(rm.kernel) == 2);  // rk and its clone for B; rm's and rn's clones sit after the loop
  // The A and B tiles are loaded blocked (16-byte vectors) and converted for the dot (ir/layout_plan.hpp:
  // contiguity-aware anchoring): two conversions through shared memory with or without remat. Without remat,
  // six more, of 1-D index values (rk for A and B, rm and rn for the accumulator, and their masks).
  CHECK(occurrences(cuda_source(ir, 8), "through shared memory") == 8);
  CHECK(occurrences(cuda_source(rm.kernel, 8), "through shared memory") == 2);
}

TEST_CASE("remat_leaves_a_loaded_index_converted") {
  const auto rm = tj::ir::rematerialize(tj::trace(LoadedIndexTwoFamilies{}), 4, 32);
  CHECK(rm.cloned_nodes == 0);
  REQUIRE(rm.diagnostics.size() == 1);
  CHECK(rm.diagnostics[0].find("not cheap to recompute") != std::string::npos);
  CHECK(rm.diagnostics[0].find("(load)") != std::string::npos);
  CHECK(occurrences(cuda_source(rm.kernel, 4), "through shared memory") == 1);
}

TEST_CASE("layout_plan_blocks_contiguously_loaded_dot_operand_families") {
  // Both tiles are loaded in the K loop from contiguous rows: blocked (16-byte loads) rather than anchored to the
  // mma operand layouts (4-byte A pairs, 2-byte B scalars), converted at the dot. Where anchoring still applies:
  // test/ir/test_layout_plan_coalesce.cpp.
  const auto plan = tj::ir::assign_layouts(rung2_ir<examples::MatmulV2<128, 128, 32, tj::bf16>>(8), 8, 32);
  CAPTURE(plan.diagnostics);
  CHECK(any_contains(plan.diagnostics, "accumulator [128,128] warps [4,2]"));
  CHECK(any_contains(plan.diagnostics, "would move 4 bytes per access in the operand layout (16 in a blocked one)"));  // A
  CHECK(any_contains(plan.diagnostics, "would move 2 bytes per access in the operand layout (16 in a blocked one)"));  // B
  CHECK_FALSE(any_contains(plan.diagnostics, "anchored to"));
  std::vector<std::string> diag;
  const auto src = cuda_source(rung2_ir<examples::MatmulV2<128, 128, 32, tj::bf16>>(8), 8, &diag);
  CHECK(occurrences(src, "through shared memory") == 2);
  CHECK(occurrences(src, "__syncthreads") == 4);
  CHECK(occurrences(src, "tj_mma_bf16(") == 2 * 2 * 8);  // 2 k steps x (2 x 8) tiles of 16x8 per warp (the prelude defines it by macro)
}

TEST_CASE("layout_plan_mma_warps_minimise_operand_registers") {
  auto warps_of = [](auto kernel, int nw) {
    const auto plan = tj::ir::assign_layouts(tj::trace(kernel), nw, 32);
    for (const auto& d : plan.diagnostics) {
      const auto p = d.find("accumulator");
      if (p != std::string::npos) return d.substr(d.find("warps", p));
    }
    return std::string("none");
  };
  CHECK(warps_of(examples::MatmulV2<128, 128, 32, tj::bf16>{}, 8) == "warps [4,2]");
  CHECK(warps_of(examples::MatmulV2<128, 128, 32, tj::bf16>{}, 4) == "warps [2,2]");
  CHECK(warps_of(examples::MatmulV2<128, 96, 32, tj::bf16>{}, 8) == "warps [4,2]");
  CHECK(warps_of(examples::MatmulV2<128, 192, 32, tj::bf16>{}, 8) == "warps [2,4]");  // 64 + 48 beats 32 + 96
  CHECK(warps_of(examples::MatmulV2<64, 96, 32, tj::bf16>{}, 4) == "warps [2,2]");
  CHECK(warps_of(examples::MatmulV2<16, 64, 16, tj::bf16>{}, 4) == "warps [1,4]");  // M = 16: one warp row
  // Fewer m16n8 tiles than warps: the most warps that divide the accumulator compute it, the rest copy it.
  CHECK(warps_of(examples::MatmulV2<16, 16, 16, tj::bf16>{}, 8) == "warps [1,2] x 4 copies");
  CHECK(warps_of(examples::MatmulV2<32, 16, 16, tj::bf16>{}, 8) == "warps [2,2] x 2 copies");
  CHECK_THROWS_WITH_AS(tj::ir::assign_layouts(tj::trace(examples::MatmulV2<24, 16, 16, tj::bf16>{}), 4, 32),
                       doctest::Contains("does not fit mma.sync"), tj::Unsupported);
}

TEST_CASE("layout_plan_does_not_anchor_a_family_that_is_also_reduced") {
  std::vector<std::string> diag;
  const auto src = cuda_source(rung2_ir<DotAndRowSum>(4), 4, &diag);
  CAPTURE(diag);
  CHECK(any_contains(diag, "is used outside itself only as operand b of dot"));  // B: blocked for 16-byte loads
  CHECK_FALSE(any_contains(diag, "operand a of dot"));                           // A: also reduced, no anchor candidate
  CHECK_FALSE(any_contains(diag, "anchored to the mma.sync operand A"));
  CHECK(any_contains(diag, "for %") );  // the A tile converted for the dot
  CHECK(occurrences(src, "through shared memory") >= 1);
  // The interpreter still computes the reference (the layouts change nothing there).
  std::vector<tj::f16> a, b;
  for (float v : testing::random_floats(64 * 32, -1, 1, 5)) a.push_back(tj::f16(v));
  for (float v : testing::random_floats(32 * 64, -1, 1, 6)) b.push_back(tj::f16(v));
  std::vector<float> c(64 * 64), rs(64);
  auto k = tj::compile<DotAndRowSum>(tj::Device::interpreter(), {.num_warps = 4});
  k.launch(tj::Grid{1}, a.data(), b.data(), c.data(), rs.data());
  double want = 0;
  for (int j = 0; j < 32; ++j) want += static_cast<float>(a[static_cast<std::size_t>(3 * 32 + j)]);
  CHECK(rs[3] == doctest::Approx(want).epsilon(1e-5));
}

namespace {
template <int BM, int BN, int BK, class T>
void interp_gemm_v2(int M, int N, int K) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  Problem<T> p(M, N, K, static_cast<unsigned>(M * 5 + N));
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf("")), c2 = c;
  auto k = tj::compile<examples::MatmulV2<BM, BN, BK, T>>(tj::Device::interpreter(), {.num_warps = 8});
  k.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, p.a.data(), p.b.data(), c.data(), M, N, K);
  for (float v : c) REQUIRE(!std::isnan(v));
  CHECK(testing::rel_error(c, p.ref) < 1e-6);
  // The rematerialised IR computes the same bits.
  launch_ir(tj::Device::interpreter(), rung2_ir<examples::MatmulV2<BM, BN, BK, T>>(8), 8, tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)},
            p.a.data(), p.b.data(), c2.data(), M, N, K);
  CHECK(std::memcmp(c.data(), c2.data(), c.size() * sizeof(float)) == 0);
}

struct PtxasReport {
  int registers = -1, spill_stores = -1, spill_loads = -1;
};
PtxasReport ptxas_report(const std::string& log) {
  PtxasReport r;
  std::smatch m;
  if (std::regex_search(log, m, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)")))
    r.spill_stores = std::stoi(m[1]), r.spill_loads = std::stoi(m[2]);
  if (std::regex_search(log, m, std::regex(R"(Used (\d+) registers)"))) r.registers = std::stoi(m[1]);
  return r;
}
/// NVRTC + ptxas -v for rung 2's IR, unspecialised or specialised as a launch
/// with 16-aligned pointers and sizes divisible by 16 is (vector loads).
template <class K>
PtxasReport compile_v2(const std::string& arch, int warps, bool div16) {
  tj::ir::Specialization spec;
  if (div16) spec.flags.assign(6, tj::ir::Specialization::kDiv16);
  auto g = tj::codegen::generate(rung2_ir<K>(warps), spec, tj::codegen::target_for(arch), {warps});
  tj::runtime::JitRequest req;
  req.source = g.source;
  req.name = g.kernel_name + ".cu";
  req.arch = arch;
  req.options = {"--ptxas-options=-v"};
  const auto res = tj::runtime::compile(req);
  const auto r = ptxas_report(res.log);
  MESSAGE(g.kernel_name, " ", arch, " ", warps, std::string(div16 ? " warps (div16)" : " warps"), ": ", r.registers, " registers, spill stores ",
          r.spill_stores, " B, spill loads ", r.spill_loads, " B");
  return r;
}
}  // namespace

TEST_CASE("gemm_v2_interpreter_matches_f64") {
  interp_gemm_v2<64, 64, 32, tj::bf16>(64, 64, 64);
  interp_gemm_v2<64, 96, 32, tj::bf16>(70, 96 * 2, 70);  // N = 96 tiles, ragged M and K
  interp_gemm_v2<64, 96, 32, tj::f16>(40, 96, 96);
  interp_gemm_v2<128, 64, 16, tj::f16>(130, 50, 33);     // ragged everything
}

TEST_CASE("gemm_v2_compiles_with_nvrtc_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  for (std::string arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    for (bool div16 : {false, true}) {
      CAPTURE(div16);
      const auto big = compile_v2<examples::MatmulV2<128, 128, 32, tj::bf16>>(arch, 8, div16);
      CHECK(big.registers > 0);
      CHECK(big.spill_stores == 0);
      CHECK(big.spill_loads == 0);
      const auto narrow = compile_v2<examples::MatmulV2<128, 96, 32, tj::bf16>>(arch, 8, div16);
      CHECK(narrow.registers > 0);
      CHECK(narrow.spill_stores == 0);
      CHECK(narrow.spill_loads == 0);
      // Reported, not asserted: ptxas may cap this one near 168 registers and spill a word.
      CHECK(compile_v2<examples::MatmulV2<64, 96, 32, tj::bf16>>(arch, 4, div16).registers > 0);
    }
    // Through the ordinary path too (codegen without the remat pass).
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV2<128, 192, 32, tj::bf16>>(arch, {.num_warps = 8}));
  }
}

TEST_CASE("gemm_v2_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  auto run = [&](auto kernel, int bm, int bn, int warps, int M, int N, int K) {
    using K_ = decltype(kernel);
    using T = std::conditional_t<std::is_same_v<K_, examples::MatmulV2<64, 96, 32, tj::f16>>, tj::f16, tj::bf16>;
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    CAPTURE(warps);
    CAPTURE(testing::fresh_seed());
    Problem<T> p(M, N, K, static_cast<unsigned>(M + 3 * N + K));
    auto* da = static_cast<T*>(dev.alloc(p.a.size() * sizeof(T)));
    auto* db = static_cast<T*>(dev.alloc(p.b.size() * sizeof(T)));
    auto* dc = static_cast<float*>(dev.alloc(static_cast<std::size_t>(M) * N * 4));
    dev.copy_to_device(da, p.a.data(), p.a.size() * sizeof(T));
    dev.copy_to_device(db, p.b.data(), p.b.size() * sizeof(T));
    dev.memset(dc, 0xff, static_cast<std::size_t>(M) * N * 4);  // NaN poison
    launch_ir(dev, rung2_ir<K_>(warps), warps, tj::Grid{tj::cdiv(M, bm), tj::cdiv(N, bn)}, da, db, dc, M, N, K);
    std::vector<float> c(static_cast<std::size_t>(M) * N);
    dev.copy_to_host(c.data(), dc, c.size() * 4);
    for (float v : c) REQUIRE(!std::isnan(v));
    CHECK(testing::rel_error(c, p.ref) < 1e-5);
    dev.free(da), dev.free(db), dev.free(dc);
  };
  run(examples::MatmulV2<128, 128, 32, tj::bf16>{}, 128, 128, 8, 512, 384, 256);
  run(examples::MatmulV2<128, 128, 32, tj::bf16>{}, 128, 128, 8, 300, 200, 520);  // ragged M, N, K
  run(examples::MatmulV2<128, 96, 32, tj::bf16>{}, 128, 96, 8, 260, 96 * 3, 100);
  run(examples::MatmulV2<64, 96, 32, tj::f16>{}, 64, 96, 4, 200, 96 * 2, 72);
  run(examples::MatmulV2<128, 192, 32, tj::bf16>{}, 128, 192, 8, 300, 192 * 2, 520);
}

#include "examples/gemm/matmul_v3.hpp"

TEST_CASE("gemm_v3_lowers_to_wgmma_on_sm90a") {
  auto src = [](auto kern, const char* arch) {
    return tj::codegen::generate(tj::trace(kern), {}, tj::codegen::target_for(arch), {8}).source;
  };
  const auto s128 = src(examples::MatmulV3<128, 128, tj::bf16>{}, "sm_90a");
  CHECK(s128.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") != std::string::npos);
  const auto s96 = src(examples::MatmulV3<128, 96, tj::bf16>{}, "sm_90a");
  CHECK(s96.find("m64n96k16") != std::string::npos);  // NPOT N: exact, 48 accumulator registers
  const auto s80 = src(examples::MatmulV3<128, 96, tj::bf16>{}, "sm_80");
  CHECK(s80.find("wgmma.mma_async") == std::string::npos);  // no wgmma before Hopper: mma.sync
  CHECK(s80.find("mma.sync") != std::string::npos);
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping NVRTC: ", why);
    return;
  }
  CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV3<128, 128, tj::bf16>>("sm_90a", {.num_warps = 8}));
  CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV3<128, 96, tj::f16>>("sm_90a", {.num_warps = 8}));
  CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV3<64, 192, tj::bf16>>("sm_90a", {.num_warps = 4}));
}

TEST_CASE("gemm_v3_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  gpu_gemm<Variant<examples::MatmulV3<128, 128, tj::bf16>, 128, 128, 8, tj::bf16>>(dev, 256, 256, 256, 1e-5);
  gpu_gemm<Variant<examples::MatmulV3<128, 96, tj::f16>, 128, 96, 8, tj::f16>>(dev, 300, 96 * 3, 320, 1e-5);   // ragged M, K
  gpu_gemm<Variant<examples::MatmulV3<64, 192, tj::bf16>, 64, 192, 4, tj::bf16>>(dev, 200, 192 * 2, 500, 1e-5);
}

#include "examples/gemm/matmul_v4.hpp"

TEST_CASE("gemm_v4_interpreter_matches_f64") {
  CAPTURE(testing::fresh_seed());
  const int M = 70, N = 96 * 2, K = 200;  // ragged M and K; the last prefetch reads past K (masked)
  Problem<tj::bf16> p(M, N, K, 17);
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  auto k = tj::compile<examples::MatmulV4<64, 96, tj::bf16>>(tj::Device::interpreter(), {.num_warps = 4});
  k.launch(tj::Grid{tj::cdiv(M, 64), tj::cdiv(N, 96)}, p.a.data(), p.b.data(), c.data(), M, N, K);
  for (float v : c) REQUIRE(!std::isnan(v));
  CHECK(testing::rel_error(c, p.ref) < 1e-6);
}

TEST_CASE("gemm_v4_compiles_and_stages_a_with_16_byte_stores") {
  const auto g = tj::codegen::generate(tj::trace(examples::MatmulV4<128, 192, tj::bf16>{}), {}, tj::codegen::target_for("sm_90a"), {8});
  CHECK(g.source.find("m64n192k16") != std::string::npos);
  CHECK(g.source.find("*(tj_v16*)(tj_smem + ") != std::string::npos);
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) return;
  CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV4<128, 192, tj::bf16>>("sm_90a", {.num_warps = 8}));
  CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV4<64, 96, tj::bf16>>("sm_90a", {.num_warps = 4}));
}

TEST_CASE("gemm_v4_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  gpu_gemm<Variant<examples::MatmulV4<128, 192, tj::bf16>, 128, 192, 8, tj::bf16>>(dev, 300, 192 * 2, 520, 1e-5);
  gpu_gemm<Variant<examples::MatmulV4<64, 96, tj::f16>, 64, 96, 4, tj::f16>>(dev, 200, 96 * 3, 100, 1e-5);
  gpu_gemm<Variant<examples::MatmulV3<128, 128, tj::bf16>, 128, 128, 8, tj::bf16>>(dev, 256, 256, 640, 1e-5);  // rung 3 with vector staging
}

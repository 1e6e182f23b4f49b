// GEMM rung 5 (examples/gemm/matmul_v5.hpp): tensor descriptors in the DSL
// (desc.load, trans), the descriptor lowering used off sm_90a, the TMA +
// mbarrier pipeline on sm_90a, and launch-time descriptor checks.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <vector>

#include "examples/gemm/matmul_v5.hpp"
#include "test/common/random.hpp"
#include "tilejit/ir/lower_descriptors.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

/// C = A·Bᵀ with A [M, K] and B [N, K], reference in f64 over the rounded inputs.
template <class T>
struct ProblemTN {
  int M, N, K;
  std::vector<T> a, b;
  std::vector<double> ref;
  ProblemTN(int m, int n, int k, unsigned salt) : M(m), N(n), K(k) {
    for (float x : testing::random_floats(static_cast<std::size_t>(m) * k, -1, 1, salt)) a.push_back(T(x));
    for (float x : testing::random_floats(static_cast<std::size_t>(n) * k, -1, 1, salt + 1)) b.push_back(T(x));
    ref.assign(static_cast<std::size_t>(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int kk = 0; kk < k; ++kk)
          s += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(i) * k + kk])) *
               static_cast<float>(b[static_cast<std::size_t>(j) * k + kk]);
        ref[static_cast<std::size_t>(i) * n + j] = s;
      }
  }
};

template <int BM, int BN, class T>
void run_v5(const tj::Device& dev, int M, int N, int K, int stages, double tol) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(stages);
  CAPTURE(testing::fresh_seed());
  ProblemTN<T> p(M, N, K, static_cast<unsigned>(M * 3 + N + K));
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  const std::size_t cbytes = static_cast<std::size_t>(M) * N * 4;
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  T* da = p.a.data();
  T* db = p.b.data();
  float* dc = c.data();
  if (gpu) {
    da = static_cast<T*>(dev.alloc(p.a.size() * sizeof(T)));
    db = static_cast<T*>(dev.alloc(p.b.size() * sizeof(T)));
    dc = static_cast<float*>(dev.alloc(cbytes));
    dev.copy_to_device(da, p.a.data(), p.a.size() * sizeof(T));
    dev.copy_to_device(db, p.b.data(), p.b.size() * sizeof(T));
    dev.memset(dc, 0xff, cbytes);  // NaN poison: every element must be written
  }
  const tj::DType dt = tj::dtype_v<T>;
  D a(dev, da, dt, {M, K}, {K, 1}, {BM, 64}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, dt, {N, K}, {K, 1}, {BN, 64}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV5<BM, BN, T>>(dev, {.num_warps = BM / 16, .num_stages = stages});
  k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, a, b, dc, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, cbytes);
    dev.free(da), dev.free(db), dev.free(dc);
  }
  for (float v : c) REQUIRE(!std::isnan(v));
  CHECK(testing::rel_error(c, p.ref) < tol);
}

std::string sm90_source(int stages) {
  auto ir = tj::trace(examples::MatmulV5<128, 256, tj::bf16>{});
  return tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = stages}).source;
}

}  // namespace

TEST_CASE("desc_load_lowers_to_masked_loads_and_trans_folds_into_them") {
  auto ir = tj::trace(examples::MatmulV5<64, 96, tj::bf16>{});
  int desc_loads = 0, trans = 0;
  for (const auto& n : ir.nodes) desc_loads += n.op == tj::ir::Op::desc_load, trans += n.op == tj::ir::Op::trans;
  CHECK(desc_loads == 2);
  CHECK(trans == 1);
  const auto low = tj::ir::lower_descriptors(ir);
  int loads = 0, left = 0;
  for (const auto& n : low.nodes) {
    loads += n.op == tj::ir::Op::load;
    left += n.op == tj::ir::Op::desc_load || n.op == tj::ir::Op::trans;
    if (n.op == tj::ir::Op::load) CHECK(n.args[1] >= 0);  // masked: out-of-bounds elements are zero
  }
  CHECK(loads == 2);
  CHECK(left == 0);  // the trans was folded into B's (transposed) pointer tile
  tj::ir::verify(low);
  // Keeping a load leaves it (and its trans) in place.
  const auto kept = tj::ir::lower_descriptors(ir, [&](int id) { return ir.nodes[static_cast<std::size_t>(id)].op == tj::ir::Op::desc_load; });
  CHECK(kept.nodes.size() == ir.nodes.size());
}

TEST_CASE("gemm_v5_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_v5<64, 64, tj::bf16>(dev, 64, 64, 64, 3, 1e-6);
  run_v5<64, 96, tj::bf16>(dev, 70, 96 * 2 - 30, 136, 3, 1e-6);  // N = 96 blocks, ragged M, N and K (K % 64 = 8)
  run_v5<64, 48, tj::f16>(dev, 130, 50, 72, 2, 1e-6);           // NPOT 48, ragged everything
  run_v5<128, 192, tj::bf16>(dev, 129, 200, 64, 4, 1e-6);
}

TEST_CASE("gemm_v5_sm90a_uses_tma_and_async_wgmma") {
  const std::string src = sm90_source(4);
  CHECK(src.find("cp.async.bulk.tensor.2d") != std::string::npos);
  CHECK(src.find("tj_tma_load_2d(") != std::string::npos);
  CHECK(src.find("mbarrier.try_wait.parity") != std::string::npos);
  CHECK(src.find("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") != std::string::npos);
  CHECK(src.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos);  // one group left in flight
  CHECK(src.find("const __grid_constant__ tj_desc arg0") != std::string::npos);
  // No register staging of operands: no 16-byte shared stores, no per-element loads of A or B.
  CHECK(src.find("*(tj_v16*)(tj_smem") == std::string::npos);
  auto ir = tj::trace(examples::MatmulV5<128, 256, tj::bf16>{});
  const auto g = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 4});
  CHECK(g.dynamic_shared_bytes >= 4 * 48 * 1024);
  CHECK(g.dynamic_shared_bytes <= 227 * 1024);
  CHECK(g.tma_params == std::vector<int>{0, 1});
  bool said = false;
  for (const auto& d : g.diagnostics) said |= d.find("TMA pipeline of 4 stage(s)") != std::string::npos;
  CHECK(said);
  // Too many stages for shared memory: a clear error, not a launch failure.
  CHECK_THROWS_WITH_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 5}),
                       doctest::Contains("227 KiB"), tj::Unsupported);
  CHECK_THROWS_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 0}),
                  tj::InvalidArgument);
  // One stage: no prefetch; each iteration issues its own copies.
  CHECK(sm90_source(1).find("if (tj_tid == 0) tj_issue") != std::string::npos);
}

TEST_CASE("gemm_v5_compiles_with_nvrtc_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto ptxas = [](const std::string& src, const std::string& arch) {
    tj::runtime::JitRequest req;
    req.source = src;
    req.name = "v5.cu";
    req.arch = arch;
    req.options = {"--ptxas-options=-v"};
    const auto res = tj::runtime::compile(req);
    CHECK(!res.binary.bytes.empty());
    std::smatch m;
    REQUIRE(std::regex_search(res.log, m, std::regex(R"((\d+) bytes spill stores)")));
    CHECK(std::stoi(m[1]) == 0);
    CHECK(res.log.find("wgmma.mma_async instructions are serialized") == std::string::npos);
  };
  ptxas(sm90_source(4), "sm_90a");
  for (auto [bm, bn, nw] : {std::tuple{64, 96, 4}, std::tuple{128, 192, 8}}) {
    CAPTURE(bm);
    CAPTURE(bn);
    const auto ir = bn == 96 ? tj::trace(examples::MatmulV5<64, 96, tj::bf16>{}) : tj::trace(examples::MatmulV5<128, 192, tj::bf16>{});
    ptxas(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = nw, .num_stages = 4}).source, "sm_90a");
  }
  // sm_80: no TMA; the descriptor blocks are masked loads and the dot is mma.sync.
  const auto ir80 = tj::trace(examples::MatmulV5<64, 96, tj::f16>{});
  const auto g80 = tj::codegen::generate(ir80, {}, tj::codegen::target_for("sm_80"), {.num_warps = 4, .num_stages = 3});
  CHECK(g80.source.find("cp.async.bulk") == std::string::npos);
  CHECK(g80.tma_params.empty());
  CHECK(g80.dynamic_shared_bytes == 0);
  tj::runtime::JitRequest req;
  req.source = g80.source;
  req.name = "v5_sm80.cu";
  req.arch = "sm_80";
  CHECK(!tj::runtime::compile(req).binary.bytes.empty());
}

TEST_CASE("desc_arguments_are_checked_at_launch") {
  const auto dev = tj::Device::interpreter();
  std::vector<tj::bf16> a(64 * 64, tj::bf16(1.0f)), b(64 * 64, tj::bf16(1.0f));
  std::vector<float> c(64 * 64);
  auto k = tj::compile<examples::MatmulV5<64, 64, tj::bf16>>(dev, {.num_warps = 4});
  D good(dev, a.data(), tj::DType::bf16, {64, 64}, {64, 1}, {64, 64});
  D wrong_block(dev, b.data(), tj::DType::bf16, {64, 64}, {64, 1}, {32, 64});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, good, wrong_block, c.data(), 64, 64, 64), doctest::Contains("block_shape [32, 64]"),
                       tj::InvalidArgument);
  D wrong_type(dev, b.data(), tj::DType::f16, {64, 64}, {64, 1}, {64, 64});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, good, wrong_type, c.data(), 64, 64, 64), doctest::Contains("f16 elements"),
                       tj::InvalidArgument);
  using Small = examples::MatmulV5<64, 64, tj::bf16>;
  CHECK_THROWS_WITH_AS(tj::compile<Small>(dev, {.num_warps = 4, .num_stages = 9}), doctest::Contains("num_stages = 9"),
                       tj::InvalidArgument);
  k.launch(tj::Grid{1}, good, good, c.data(), 64, 64, 64);
  CHECK(c[0] == doctest::Approx(64.0));
}

TEST_CASE("gemm_v5_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  run_v5<128, 256, tj::bf16>(dev, 512, 512, 1024, 4, 1e-5);
  run_v5<128, 256, tj::bf16>(dev, 300, 700, 200, 3, 1e-5);  // ragged M, N, K: TMA zero fill + masked store
  run_v5<128, 192, tj::f16>(dev, 256, 192 * 3, 512, 4, 1e-5);
  run_v5<64, 96, tj::bf16>(dev, 1000, 96 * 2, 8192, 6, 1e-5);
  run_v5<128, 128, tj::bf16>(dev, 1024, 1024, 64, 1, 1e-5);  // one stage, one K step
  run_v5<128, 128, tj::bf16>(dev, 256, 256, 64 * 7, 2, 1e-5);
  // A descriptor without the 128B swizzle cannot feed wgmma: a typed error before the launch.
  std::vector<float> host(64 * 64);
  auto* p = static_cast<tj::bf16*>(dev.alloc(128 * 64 * 2));
  auto* q = static_cast<float*>(dev.alloc(128 * 128 * 4));
  D a(dev, p, tj::DType::bf16, {128, 64}, {64, 1}, {128, 64});
  auto k = tj::compile<examples::MatmulV5<128, 128, tj::bf16>>(dev, {.num_warps = 8});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, a, a, q, 128, 128, 64), doctest::Contains("Swizzle::b128"), tj::InvalidArgument);
  dev.free(p), dev.free(q);
}

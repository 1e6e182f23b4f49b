// GEMM rung 7 (examples/gemm/matmul_v7.hpp) and thread-block clusters (CompileOptions::num_ctas,
// Desc::load_multicast): the interpreter against f64 on ragged shapes (a cluster tile past M), the sm_90a code
// of a cluster (__cluster_dims__, one multicast copy per cluster, stage releases in every program, cluster
// barriers at start and exit), NVRTC + ptxas with no spills, the rules (num_ctas 1/2/4, grid.x a multiple),
// and the GPU against f64 with poisoned outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <type_traits>
#include <vector>

#include "examples/gemm/matmul_v7.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;
using testing::on_device;

namespace {

/// Rung 7 with clusters of CL on `dev` (warp-specialised, as the library compiles it), checked against f64;
/// PERSISTENT: MatmulV7Persistent on `programs` programs (0: cluster_persistent_grid on the device's SMs).
template <int BM, int BN, class T, int CL, bool PERSISTENT = false>
void run_v7(const tj::Device& dev, int M, int N, int K, int stages = 4, bool ws = true, int programs = 0) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(CL);
  CAPTURE(ws);
  CAPTURE(testing::fresh_seed());
  testing::GemmTN<T> p(M, N, K, static_cast<unsigned>(M * 5 + N * 7 + K));
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  T* da = on_device(dev, p.a);
  T* db = on_device(dev, p.b);
  float* dc = on_device(dev, c);
  using Kern = std::conditional_t<PERSISTENT, examples::MatmulV7Persistent<BM, BN, T, CL>, examples::MatmulV7<BM, BN, T, CL>>;
  CAPTURE(PERSISTENT);
  D a(dev, da, tj::dtype_v<T>, {M, K}, {K, 1}, {BM, Kern::BLOCK_K}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::dtype_v<T>, {N, K}, {K, 1}, {BN, Kern::BLOCK_K}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<Kern>(dev, {.num_warps = BM / 16, .num_stages = stages, .warp_specialize = ws, .num_ctas = CL});
  const tj::Grid grid = !PERSISTENT ? tj::Grid{examples::cluster_grid<BM, BN, CL>(M, N)}
                        : programs > 0 ? tj::Grid{programs}
                                       : examples::cluster_persistent_grid(M, N, BM, BN, CL, dev.num_sms());
  CAPTURE(grid.x);
  k.launch(grid, a, b, dc, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(float));
    dev.free(da), dev.free(db), dev.free(dc);
  }
  p.check(c, 1e-5);
}

tj::codegen::Generated sm90(auto kernel, int warps, int stages, bool ws, int ctas) {
  return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = warps, .num_stages = stages, .warp_specialize = ws, .num_ctas = ctas});
}

bool gpu_or_skip(const tj::Device& dev) {
  if (dev.backend() == tj::Backend::cuda && dev.compute_capability() >= 90) return true;
  MESSAGE("no Hopper GPU: skipping");
  return false;
}

}  // namespace

TEST_CASE("gemm_v7_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  // 3 block rows of 64 in clusters of 2: the second cluster tile's second program lies wholly past M.
  run_v7<64, 64, tj::bf16, 2>(dev, 64 * 3 - 5, 130, 136);
  // NPOT BLOCK_N 96, ragged N and K, clusters of 4 over 2 cluster-tile rows.
  run_v7<64, 96, tj::bf16, 4>(dev, 64 * 5 + 1, 96 * 2 - 7, 72);
  // Clusters of 1 (rung 5's order with multicast loads that are ordinary loads).
  run_v7<64, 64, tj::f16, 1>(dev, 100, 64, 64);
  // Persistent: 3 x 3 cluster tiles on 2 clusters of 2; 2 x 2 on 4 clusters (two own none); 8 block rows by 2 block
  // columns in clusters of 4 on 1 cluster (grouped order across more rows than GROUP_M).
  run_v7<64, 64, tj::bf16, 2, true>(dev, 64 * 6 - 9, 64 * 3 - 1, 72, 4, true, 4);
  run_v7<64, 96, tj::bf16, 2, true>(dev, 200, 150, 136, 4, true, 8);
  run_v7<64, 64, tj::bf16, 4, true>(dev, 64 * 8, 100, 64, 4, true, 4);
}

TEST_CASE("gemm_v7_cluster_grid_counts_whole_clusters") {
  CHECK(examples::cluster_grid<128, 256, 2>(4096, 4096) == 32 * 16);
  CHECK(examples::cluster_grid<128, 256, 2>(129, 256) == 2);    // one cluster tile: 2 programs, the second past M
  CHECK(examples::cluster_grid<128, 256, 2>(257, 257) == 8);    // 2 cluster-tile rows x 2 block columns x 2
  CHECK(examples::cluster_grid<64, 96, 4>(64 * 5 + 1, 96) == 8);
}

TEST_CASE("gemm_v7_cluster_persistent_grid_is_whole_clusters_at_most_one_per_sm") {
  CHECK(examples::cluster_persistent_grid(8192, 8192, 128, 256, 2, 132).x == 132);
  CHECK(examples::cluster_persistent_grid(8192, 8192, 128, 256, 4, 132).x == 132);
  CHECK(examples::cluster_persistent_grid(8192, 8192, 128, 256, 4, 130).x == 128);
  CHECK(examples::cluster_persistent_grid(300, 300, 128, 256, 2, 132).x == 8);  // 2 x 2 cluster tiles
  CHECK(examples::cluster_persistent_grid(300, 200, 128, 256, 4, 132).x == 4);  // 1 cluster tile
  CHECK(examples::cluster_persistent_grid(1, 1, 128, 256, 2, 132).x == 2);
}

TEST_CASE("gemm_v7_persistent_sm90a_walks_cluster_tiles_and_releases_the_last_stage_in_every_program") {
  const auto g = sm90(examples::MatmulV7Persistent<128, 256, tj::bf16, 2>{}, 8, 4, true, 2);
  CHECK(g.num_ctas == 2);
  CHECK(testing::has_diagnostic(g, "the ring's stages and phases continue across loop"));
  CHECK(testing::occurrences(g.source, "tj_tma_load_2d_multicast(tj_ring") == 1);
  CHECK(g.source.find("if (tj_lane < 2) tj_mbar_arrive_remote(tj_empty") != std::string::npos);  // the run's last stage
  testing::compiles_for_sm90a_without_spills(g.source, "matmul_v7p_128x256_c2.cu");
}

TEST_CASE("gemm_v7_sm90a_cluster_multicasts_b_once_and_releases_stages_in_every_program") {
  const auto g = sm90(examples::MatmulV7<128, 256, tj::bf16, 2>{}, 8, 4, true, 2);
  const std::string& src = g.source;
  CHECK(g.num_ctas == 2);
  CHECK(testing::has_diagnostic(g, "clusters of 2 programs along x: 1 pipelined block(s) multicast"));
  CHECK(src.find("__global__ void __cluster_dims__(2, 1, 1) __maxnreg__(") != std::string::npos);
  // B: each program copies its half (rows 128·rank ..) to both programs (mask 3), the TMA box halved; A: an
  // ordinary copy in every program.
  CHECK(testing::occurrences(src, "tj_tma_load_2d_multicast(tj_ring") == 1);
  CHECK(src.find(" + tj_crank * 16384u, &s1.map, (int)(c.w[0]) + 0, (int)(c.w[1]) + (int)tj_crank * 128, bar, 3); }") != std::string::npos);
  CHECK(testing::occurrences(src, "tj_tma_load_2d(tj_ring") == 1);
  REQUIRE(g.tma_params == std::vector<int>{0, 1});
  CHECK(g.tma_boxes[0] == std::array<int, 2>{128, 64});
  CHECK(g.tma_boxes[1] == std::array<int, 2>{128, 64});  // B's 256 rows in two slices
  // Each stage expects the whole stage's bytes in every program (A 16 KiB + B 32 KiB), and is released by the 8
  // consumer warps of both programs.
  CHECK(src.find("tj_mbar_expect_tx(bar, 49152u);") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(tj_mbar_init\(tj_empty(\d+) \+ 8 \* s, (\d+)\))")));
  CHECK(m[2] == "16");
  CHECK(src.find("if (tj_lane < 2 && tj_it" ) != std::string::npos);  // lanes 0 and 1: one arrival in each program
  CHECK(src.find(") tj_mbar_arrive_remote(tj_empty" + m[1].str()) != std::string::npos);
  CHECK(src.find("tj_mbar_arrive(tj_empty") == std::string::npos);
  // Cluster barriers: once after the barriers are initialised (no CTA barrier there), once before the consumers exit.
  CHECK(testing::occurrences(src, "tj_cluster_sync();  //") == 2);
  CHECK(src.rfind("tj_cluster_sync();") > src.rfind("tj_mbar_arrive_remote(tj_empty"));
  testing::compiles_for_sm90a_without_spills(src, "matmul_v7_128x256_c2.cu");
  // 48 rows in 4 slices of 12 break the swizzle's 8-row period: the first program copies the whole block.
  const auto whole = sm90(examples::MatmulV7<64, 48, tj::bf16, 4>{}, 4, 4, true, 4);
  CHECK(testing::occurrences(whole.source, "if (tj_crank == 0) { tj_tma_load_2d_multicast(tj_ring") == 1);
  CHECK(whole.source.find(", bar, 15); }") != std::string::npos);
  CHECK(whole.tma_boxes[1] == std::array<int, 2>{48, 64});
  testing::compiles_for_sm90a(whole.source, "matmul_v7_64x48_c4.cu");
  testing::compiles_for_sm90a_without_spills(sm90(examples::MatmulV7<128, 192, tj::bf16, 4>{}, 8, 4, true, 4).source,
                                             "matmul_v7_128x192_c4.cu");
}

TEST_CASE("gemm_v7_without_warp_specialisation_or_clusters_is_plain_code") {
  // num_ctas needs the producer's stage barriers: without warp_specialize, no cluster and a diagnostic.
  const auto g = sm90(examples::MatmulV7<128, 256, tj::bf16, 2>{}, 8, 4, false, 2);
  CHECK(g.num_ctas == 1);
  CHECK(testing::has_diagnostic(g, "num_ctas = 2 not applied: clusters need warp specialisation"));
  CHECK(g.source.find("__cluster_dims__") == std::string::npos);
  CHECK(g.source.find("tj_tma_load_2d_multicast(tj_ring") == std::string::npos);
  // num_ctas = 1: load_multicast is an ordinary copy, the generated code that of load().
  const auto one = sm90(examples::MatmulV7<128, 256, tj::bf16, 1>{}, 8, 4, true, 1);
  CHECK(one.source.find("tj_crank") == std::string::npos);
  CHECK(testing::occurrences(one.source, "tj_tma_load_2d(tj_ring") == 2);
  CHECK(one.source.find("tj_cluster_sync();  //") == std::string::npos);
}

TEST_CASE("num_ctas_rules") {
  using Small = examples::MatmulV7<64, 64, tj::bf16, 2>;
  const auto ir = tj::trace(Small{});
  for (int bad : {0, 3, 8}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_ctas = bad}),
                         doctest::Contains("a cluster is 1, 2 or 4 programs"), tj::InvalidArgument);
    CHECK_THROWS_WITH_AS(tj::compile<Small>(tj::Device::interpreter(), {.num_ctas = bad}),
                         doctest::Contains("a cluster is 1, 2 or 4 programs"), tj::InvalidArgument);
  }
  // grid.x must be whole clusters of the kernel that runs (checked before anything runs); the interpreter applies
  // the rule of the sm_90a kernel, so it accepts exactly the grids a GPU does.
  auto k = tj::compile<Small>(tj::Device::interpreter(), {.num_warps = 4, .warp_specialize = true, .num_ctas = 2});
  REQUIRE(k.source().num_ctas == 2);
  testing::GemmTN<tj::bf16> p(64, 64, 64, 5);
  std::vector<float> c(64 * 64, 0.0f);
  const auto dev = tj::Device::interpreter();
  D a(dev, p.a.data(), tj::DType::bf16, {64, 64}, {64, 1}, {64, 64});
  D b(dev, p.b.data(), tj::DType::bf16, {64, 64}, {64, 1}, {64, 64});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{3}, a, b, c.data(), 64, 64, 64), doctest::Contains("grid.x = 3: must be a multiple of num_ctas = 2"),
                       tj::InvalidArgument);
  CHECK(c[0] == 0.0f);  // nothing ran
  CHECK_NOTHROW(k.launch(tj::Grid{2}, a, b, c.data(), 64, 64, 64));
  p.check(c, 1e-5);
  // Where the cluster is not applied (here: no warp specialisation, a diagnostic says so), the kernel runs no
  // clusters and any grid.x is accepted: a grid of 1 program computes the whole 64x64 tile. (It used to demand
  // grid.x % 2 == 0 of a kernel compiled without __cluster_dims__.)
  for (const tj::CompileOptions& o : {tj::CompileOptions{.num_warps = 4, .num_ctas = 2},
                                      tj::CompileOptions{.num_warps = 4, .arch = "sm_80", .num_ctas = 2}}) {
    CAPTURE(o.arch);
    auto plain = tj::compile<Small>(dev, o);
    CHECK(plain.source().num_ctas == 1);
    CHECK(testing::has_diagnostic(plain.source(), "num_ctas = 2 not applied"));
    std::fill(c.begin(), c.end(), 0.0f);
    CHECK_NOTHROW(plain.launch(tj::Grid{1}, a, b, c.data(), 64, 64, 64));
    p.check(c, 1e-5);
  }
  // The IR names a multicast block.
  CHECK(tj::ir::print(ir).find("multicast") != std::string::npos);
}

TEST_CASE("gemm_v7_gpu_matches_f64") {
  const auto dev = tj::Device::best();
  if (!gpu_or_skip(dev)) return;
  run_v7<128, 256, tj::bf16, 2>(dev, 1000, 1200, 1000);  // ragged: the last cluster tile's second program past M
  run_v7<128, 256, tj::bf16, 2>(dev, 128 * 4, 256 * 3, 64 * 5, 3);
  run_v7<128, 192, tj::bf16, 2>(dev, 777, 96 * 5, 520);  // NPOT 192
  run_v7<128, 128, tj::f16, 4>(dev, 1100, 300, 256);     // clusters of 4
  run_v7<64, 48, tj::bf16, 4>(dev, 500, 150, 200);      // B copied whole by the first program of 4
  run_v7<128, 256, tj::bf16, 1>(dev, 300, 500, 200);
  run_v7<128, 256, tj::bf16, 2>(dev, 300, 500, 200, 4, false);  // num_ctas without warp specialisation: no cluster
  run_v7<128, 256, tj::bf16, 2, true>(dev, 1000, 1200, 1000);           // persistent, every SM
  run_v7<128, 256, tj::bf16, 2, true>(dev, 1000, 1200, 1000, 4, true, 6);  // persistent, 3 clusters for 20 cluster tiles
  run_v7<128, 128, tj::f16, 4, true>(dev, 1100, 300, 256, 3);
}

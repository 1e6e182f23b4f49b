// Edge cases of thread-block clusters (codegen::Options::num_ctas, Desc::load_multicast) and of the per-item TMA
// blocks of persistent kernels, on sm_90a without a GPU: the generated protocol (which program copies what, into
// which barrier, with how many bytes; who releases a stage where) and NVRTC + ptxas. Set TILEJIT_CLUSTER_DUMP=<dir>
// to write every generated source there.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "examples/attention/flash_fwd_persistent.hpp"
#include "examples/attention/flash_fwd_tma.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "examples/gemm/matmul_v7.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

template <class K>
tj::codegen::Generated gen(const K& kernel, int warps, int stages, bool ws, int ctas, bool pingpong = false, const char* arch = "sm_90a") {
  auto g = tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for(arch),
                                 {.num_warps = warps, .num_stages = stages, .warp_specialize = ws, .pingpong = pingpong, .num_ctas = ctas});
  if (const char* dir = std::getenv("TILEJIT_CLUSTER_DUMP")) {
    static int n = 0;  // (one counter per kernel type: the names differ anyway)
    const std::string base = fmt::format("{}/{:02}_{}_c{}", dir, n++, g.kernel_name, ctas);
    std::ofstream(base + ".cu") << g.source;
    std::ofstream d(base + ".diag");
    for (const auto& s : g.diagnostics) d << s << "\n";
  }
  return g;
}

template <int BM, int BN, class Acc>
void store_block(const tj::Ptr<float>& c, const tj::Int& m0, const tj::Int& n0, const tj::Size& N, const Acc& acc) {
  auto rm = m0 + tj::arange<BM>();
  auto rn = n0 + tj::arange<BN>();
  tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<0>(rn < N) & tj::expand_dims<1>(rm >= 0));
}

/// How the K loop's trip count or B's multicast coordinate depends on the program id.
enum class Pid {
  uniform,          // K - pid / C · 64 (the same in every program of a cluster of C)
  rank_trip,        // K - pid % 2 · 64: the programs of a cluster run different trip counts
  half_trip,        // K - pid / 2 · 64 with clusters of 4: differs within the cluster
  loaded_trip,      // K read from lens[pid]
  uniform_loaded,   // K read from lens[pid / C]
  rank_coord,       // B's multicast row pid · BN: the programs of a cluster want different blocks
};
template <int BM, int BN, int C, Pid P, int BK = 64>
struct PidGemm {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Ptr<std::int32_t> lens, tj::Size N,
                  tj::Size K) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    const tj::Int hi = [&]() -> tj::Int {
      if constexpr (P == Pid::rank_trip) return K - tj::program_id(0) % 2 * BK;
      else if constexpr (P == Pid::half_trip) return K - tj::program_id(0) / 2 * BK;
      else if constexpr (P == Pid::loaded_trip) return tj::load(lens + tj::program_id(0));
      else if constexpr (P == Pid::uniform_loaded) return tj::load(lens + tj::program_id(0) / C);
      else return K - tj::program_id(0) / C * BK;
    }();
    const tj::Int nb = P == Pid::rank_coord ? tj::program_id(0) * BN : n0;
    auto acc = tj::for_range(0, hi, BK, tj::zeros<float, BM, BN>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(m0, k0), tj::trans(b.load_multicast(nb, k0)), acc); });
    store_block<BM, BN>(c, m0, n0, N, acc);
  }
};

/// B loaded both multicast (columns n0) and not (columns n0 + BN) in one pipelined loop: two products.
template <int BM, int BN, int BK = 64>
struct MixedMulticast {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Size N, tj::Size K) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * 2 * BN;
    auto [acc0, acc1] = tj::for_range(0, K, BK, std::tuple{tj::zeros<float, BM, BN>(), tj::zeros<float, BM, BN>()},
                                      [&](tj::Int k0, auto acc0, auto acc1) {
                                        auto at = a.load(m0, k0);
                                        return std::tuple{tj::dot(at, tj::trans(b.load_multicast(n0, k0)), acc0),
                                                          tj::dot(at, tj::trans(b.load(n0 + BN, k0)), acc1)};
                                      });
    store_block<BM, BN>(c, m0, n0, N, acc0);
    store_block<BM, BN>(c, m0, n0 + BN, N, acc1);
  }
};

/// load_multicast of a block outside any loop (resident) and in the pipelined loop, of the same descriptor.
template <int BM, int BN, int D = 64>
struct ResidentMulticast {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Ptr<float> c, tj::Size N, tj::Size S) const {
    const tj::Int m0 = tj::program_id(0) / 2 * BM;
    auto qt = q.load_multicast(m0, 0);
    auto acc = tj::for_range(0, S, BN, tj::zeros<float, BM, BN>(),
                             [&](tj::Int n0, auto acc) { return tj::dot(qt, tj::trans(k.load_multicast(n0, 0)), acc); });
    store_block<BM, BN>(c, m0, tj::scalar<std::int32_t>(0), N, acc);
  }
};


/// Persistent over output tiles t = pid / C, pid / C + P / C, ... (uniform across a cluster of C): per tile a K loop
/// with B multicast and blocks the tile loop loads itself (item blocks), released at different anchors: X (read by a
/// product before the K loop), Y (read before and after it), Z (read after it), Q (read inside the K loop only: the
/// K loop may run zero times).
template <int BM, int BN, int C, int BK = 64>
struct ItemsAndCluster {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Desc<bf, BM, BK> a2, tj::Desc<bf, BN, BK> b2,
                  tj::Ptr<float> c, tj::Size M, tj::Size N, tj::Size K) const {
    const tj::Int num_n = (N + (BN - 1)) / BN;
    const tj::Int tiles = (M + (BM * C - 1)) / (BM * C) * num_n;
    tj::for_range(tj::program_id(0) / C, tiles, tj::num_programs(0) / C, [&](tj::Int t) {
      const tj::Int m0 = (t / num_n * C + tj::program_id(0) % C) * BM, n0 = t % num_n * BN;
      auto y = b2.load(n0, 0);
      auto corr = tj::dot(a2.load(m0, 0), tj::trans(y));
      auto q = a2.load(m0, BK);
      auto acc = tj::for_range(0, K, BK, corr, [&](tj::Int k0, auto acc) {
        return tj::dot(q, tj::trans(b.load_multicast(n0, k0)), tj::dot(a.load(m0, k0), tj::trans(b.load_multicast(n0, k0)), acc));
      });
      store_block<BM, BN>(c, m0, n0, N, tj::dot(a2.load(m0, 2 * BK), tj::trans(y), acc));
    });
  }
};


/// ItemsAndCluster<BM, BN, 2> on `dev` (warp-specialised, clusters of 2, `programs` programs) against f64 over M x N
/// (M a multiple of 2·BM: the kernel stores whole row blocks) and K (0: the K loop never runs, the block read only
/// inside it must still be released every tile). Outputs poisoned first.
template <int BM, int BN>
void run_items(const tj::Device& dev, int M, int N, int K, int programs) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(programs);
  CAPTURE(testing::fresh_seed());
  constexpr int BK = 64;
  const int Kd = std::max(K, 64);  // (a descriptor row of at least 16 bytes)
  auto a = testing::random_tensor<bf>(static_cast<std::size_t>(M) * Kd, 31);
  auto b = testing::random_tensor<bf>(static_cast<std::size_t>(N) * Kd, 32);
  auto a2 = testing::random_tensor<bf>(static_cast<std::size_t>(M) * 3 * BK, 33);
  auto b2 = testing::random_tensor<bf>(static_cast<std::size_t>(N) * BK, 34);
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  auto f = [](bf x) { return static_cast<double>(static_cast<float>(x)); };
  std::vector<double> ref(c.size()), mag(c.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0, m = 0;
      auto add = [&](double p) { s += p, m += std::abs(p); };
      for (int k = 0; k < K; ++k) {
        add(f(a[static_cast<std::size_t>(i) * Kd + k]) * f(b[static_cast<std::size_t>(j) * Kd + k]));
        add(f(a2[static_cast<std::size_t>(i) * 3 * BK + BK + k % BK]) * f(b[static_cast<std::size_t>(j) * Kd + k]));
      }
      for (int d = 0; d < BK; ++d)
        for (int part : {0, 2}) add(f(a2[static_cast<std::size_t>(i) * 3 * BK + part * BK + d]) * f(b2[static_cast<std::size_t>(j) * BK + d]));
      ref[static_cast<std::size_t>(i) * N + j] = s;
      mag[static_cast<std::size_t>(i) * N + j] = m;
    }
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  bf* da = testing::on_device(dev, a);
  bf* db = testing::on_device(dev, b);
  bf* da2 = testing::on_device(dev, a2);
  bf* db2 = testing::on_device(dev, b2);
  float* dc = testing::on_device(dev, c);
  using D = tj::TensorDescriptor;
  D da_(dev, da, tj::DType::bf16, {M, Kd}, {Kd, 1}, {BM, BK}, {.swizzle = D::Swizzle::b128});
  D db_(dev, db, tj::DType::bf16, {N, Kd}, {Kd, 1}, {BN, BK}, {.swizzle = D::Swizzle::b128});
  D da2_(dev, da2, tj::DType::bf16, {M, 3 * BK}, {3 * BK, 1}, {BM, BK}, {.swizzle = D::Swizzle::b128});
  D db2_(dev, db2, tj::DType::bf16, {N, BK}, {BK, 1}, {BN, BK}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<ItemsAndCluster<BM, BN, 2>>(dev, {.num_warps = BM / 16, .num_stages = 3, .warp_specialize = true, .num_ctas = 2});
  k.launch(tj::Grid{programs}, da_, db_, da2_, db2_, dc, M, N, K);
  if (gpu) {
    dev.synchronize();
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(float));
    for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(da2), static_cast<void*>(db2), static_cast<void*>(dc)})
      dev.free(p);
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.size(); ++i) bad += !(std::abs(c[i] - ref[i]) <= 1e-5 * mag[i] + 1e-6);  // NaN (unwritten) counts
  CHECK(bad == 0);
}

bool hopper_or_skip(const tj::Device& dev) {
  if (dev.backend() == tj::Backend::cuda && dev.compute_capability() >= 90) return true;
  MESSAGE("no Hopper GPU: skipping");
  return false;
}

}  // namespace

using testing::occurrences;
using testing::has_diagnostic;

// Was a bug (fixed: decide_cluster proves the trip counts and the multicast coordinates cluster-uniform, else no
// cluster and a diagnostic): every consumer warp releases a stage in every program of its cluster and a multicast copy
// completes in every program, so a program of the cluster that runs a pipelined loop fewer times than the others
// leaves their producers waiting for its releases (and their consumers for its slices of B) forever. num_ctas was
// applied to any warp-specialised kernel: rung 6, the persistent attention forward (programs striding from
// program_id(0)), a K bound of K - pid % 2 · 64, B's multicast row at pid · BN (each program read another's block),
// and a rung 7 kernel built for clusters of 2 compiled with num_ctas = 4 (pid / 2 is not uniform in a cluster of 4).
TEST_CASE("cluster_edges_refused_where_the_programs_of_a_cluster_may_diverge") {
  auto refused = [](auto kernel, int warps, int stages, int ctas, const std::string& why) {
    CAPTURE(why);
    const auto g = gen(kernel, warps, stages, true, ctas);
    const auto one = gen(kernel, warps, stages, true, 1);
    CHECK(g.num_ctas == 1);
    CHECK(has_diagnostic(g, fmt::format("num_ctas = {} not applied: {}", ctas, why)));
    CHECK(has_diagnostic(g, "warp specialised"));
    CHECK(g.source == one.source);  // the kernel of num_ctas = 1
  };
  const std::string trip = "the trip count of loop %", coord = "the coordinates of multicast block %";
  refused(PidGemm<128, 128, 2, Pid::rank_trip>{}, 8, 4, 2, trip);
  refused(PidGemm<128, 128, 4, Pid::half_trip>{}, 8, 4, 4, trip);
  refused(PidGemm<128, 128, 2, Pid::loaded_trip>{}, 8, 4, 2, trip);
  refused(PidGemm<128, 128, 2, Pid::rank_coord>{}, 8, 4, 2, coord);
  refused(examples::MatmulV7<128, 256, bf, 2>{}, 8, 4, 4, coord);
  refused(examples::MatmulV6<128, 256, bf>{}, 8, 4, 2, trip);
  refused(examples::FlashAttnFwdTmaPersistent<128, 128, 64, true, bf>{}, 8, 2, 2, trip);
  refused(examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, true, bf>{}, 8, 2, 2, trip);
  // Uniform: pid / C (or a multiple of C), loads at such addresses, bounds from parameters.
  auto applied = [](auto kernel, int warps, int stages, int ctas) {
    const auto g = gen(kernel, warps, stages, true, ctas);
    CHECK(g.num_ctas == ctas);
    CHECK(g.source.find(fmt::format("__cluster_dims__({}, 1, 1)", ctas)) != std::string::npos);
    return g;
  };
  applied(PidGemm<128, 128, 2, Pid::uniform>{}, 8, 4, 2);
  applied(PidGemm<128, 128, 4, Pid::uniform>{}, 8, 4, 4);
  applied(PidGemm<128, 128, 2, Pid::uniform_loaded>{}, 8, 4, 2);
  applied(examples::MatmulV7<128, 256, bf, 4>{}, 8, 4, 2);  // pid / 4 is uniform in clusters of 2
  applied(examples::MatmulV7Persistent<128, 256, bf, 2>{}, 8, 4, 2);
  applied(examples::MatmulV5<128, 256, bf>{}, 8, 4, 2);  // no multicast, every program the same K loop
  testing::compiles_for_sm90a(applied(PidGemm<128, 128, 2, Pid::uniform_loaded>{}, 8, 4, 2).source, "pid_gemm_uniform_loaded.cu");
}

TEST_CASE("cluster_edges_descriptor_loaded_multicast_and_not_and_resident") {
  // B multicast at n0 and loaded per program at n0 + BN in one stage: one box for both, so the first program copies
  // the multicast block whole; every program expects the stage's three blocks.
  const auto mixed = gen(MixedMulticast<128, 128>{}, 8, 3, true, 2);
  CHECK(mixed.num_ctas == 2);
  CHECK(occurrences(mixed.source, "if (tj_crank == 0) { tj_tma_load_2d_multicast(tj_ring") == 1);
  CHECK(occurrences(mixed.source, ", bar, 3); } }") == 1);
  CHECK(occurrences(mixed.source, "tj_tma_load_2d(tj_ring") == 2);
  CHECK(mixed.source.find("tj_mbar_expect_tx(bar, 49152u);") != std::string::npos);
  REQUIRE(mixed.tma_boxes.size() == 2);
  CHECK(mixed.tma_boxes[1] == std::array<int, 2>{128, 64});
  testing::compiles_for_sm90a_without_spills(mixed.source, "mixed_multicast_c2.cu");
  // load_multicast outside any loop is an ordinary copy (the resident Q); K in the loop is sliced.
  const auto res = gen(ResidentMulticast<128, 128>{}, 8, 3, true, 2);
  CHECK(res.num_ctas == 2);
  CHECK(res.source.find("tj_tma_load_2d(tj_res") != std::string::npos);
  CHECK(occurrences(res.source, "tj_tma_load_2d_multicast(tj_ring16 + st * 16384u + 0u + 0u + tj_crank * 8192u, &s1.map, (int)(c.w[0]) + 0, "
                                "(int)(c.w[1]) + (int)tj_crank * 64, bar, 3);") == 1);
  REQUIRE(res.tma_boxes.size() == 2);
  CHECK(res.tma_boxes[0] == std::array<int, 2>{128, 64});
  CHECK(res.tma_boxes[1] == std::array<int, 2>{64, 64});
  testing::compiles_for_sm90a(res.source, "resident_multicast_c2.cu");
}

TEST_CASE("cluster_edges_f8_tf32_and_npot_rows_slice_on_the_swizzle_period") {
  // Slices of R / C rows start at multiples of 1024 bytes (8 rows of 128 bytes): 96 / 2 = 48, 192 / 4 = 48, 48 / 2 = 24;
  // 48 / 4 = 12 is copied whole by the first program. The TMA box is the slice; every program expects the stage.
  struct Case {
    tj::codegen::Generated g;
    int b_rows, box_rows, slice_bytes, stage_bytes, mask;
  };
  const Case cases[] = {
      {gen(examples::MatmulV7<128, 96, tj::f8e4m3, 2>{}, 8, 4, true, 2), 96, 48, 6144, 28672, 3},
      {gen(examples::MatmulV7<128, 192, float, 4>{}, 8, 3, true, 4), 192, 48, 6144, 40960, 15},
      {gen(examples::MatmulV7<64, 48, float, 2>{}, 4, 3, true, 2), 48, 24, 3072, 14336, 3},
      {gen(examples::MatmulV7<64, 48, tj::f8e4m3, 4>{}, 4, 3, true, 4), 48, 48, 0, 14336, 15},
  };
  for (const Case& c : cases) {
    CAPTURE(c.g.kernel_name);
    CHECK(c.g.num_ctas > 1);
    REQUIRE(c.g.tma_boxes.size() == 2);
    CHECK(c.g.tma_boxes[1][0] == c.box_rows);
    CHECK(c.g.source.find(fmt::format("tj_mbar_expect_tx(bar, {}u);", c.stage_bytes)) != std::string::npos);
    if (c.slice_bytes)
      CHECK(c.g.source.find(fmt::format(" + tj_crank * {}u, &s1.map, (int)(c.w[0]) + 0, (int)(c.w[1]) + (int)tj_crank * {}, bar, {});",
                                        c.slice_bytes, c.box_rows, c.mask)) != std::string::npos);
    else
      CHECK(occurrences(c.g.source, "if (tj_crank == 0) { tj_tma_load_2d_multicast(") == 1);
    testing::compiles_for_sm90a(c.g.source, c.g.kernel_name + ".cu");
  }
}

TEST_CASE("cluster_edges_pingpong_releases_in_every_program") {
  // The warp groups' turns do not change who releases a stage: both programs, one iteration late, after the turn.
  const auto g = gen(examples::MatmulV7<128, 256, bf, 2>{}, 8, 4, true, 2, true);
  CHECK(g.num_ctas == 2);
  CHECK(has_diagnostic(g, "pingpong: the warp groups take turns"));
  const std::size_t turn_end = g.source.find("asm volatile(\"bar.arrive %0, 256;\" :: \"r\"(3 - tj_warp / 4)");
  const std::size_t rel = g.source.find("if (tj_lane < 2 && tj_it");
  REQUIRE(turn_end != std::string::npos);
  REQUIRE(rel != std::string::npos);
  CHECK(turn_end < rel);
  CHECK(g.source.find("tj_mbar_arrive(tj_empty") == std::string::npos);
  testing::compiles_for_sm90a_without_spills(g.source, "matmul_v7_pingpong_c2.cu");
}

TEST_CASE("cluster_edges_other_targets_ignore_num_ctas") {
  for (const char* arch : {"sm_80", "sm_90", "gfx942"}) {
    CAPTURE(arch);
    const auto g = gen(examples::MatmulV7<64, 64, bf, 2>{}, 4, 3, true, 2, false, arch);
    const auto one = gen(examples::MatmulV7<64, 64, bf, 2>{}, 4, 3, true, 1, false, arch);
    CHECK(g.num_ctas == 1);
    CHECK(g.source == one.source);
    CHECK(has_diagnostic(g, "num_ctas = 2 not applied"));
  }
}

TEST_CASE("cluster_edges_item_blocks_in_clusters_and_without_a_producer") {
  // Four blocks the tile loop loads itself, released at three anchors (after the product before the K loop, after
  // the K loop, after the product after it), each copied by this program alone (not multicast, one box of the whole
  // block) and released by its own 8 consumer warps; the ring is multicast and released in both programs.
  const auto g = gen(ItemsAndCluster<128, 128, 2>{}, 8, 3, true, 2);
  const std::string& src = g.source;
  CHECK(g.num_ctas == 2);
  std::vector<std::string> anchors;
  static const std::regex item(R"(desc_load %(\d+): copied by TMA once per iteration of loop %\d+ into one buffer of 16384 bytes, released after %(\d+))");
  for (const auto& d : g.diagnostics) {
    std::smatch m;
    if (std::regex_search(d, m, item)) {
      anchors.push_back(m[2]);
      const std::string x = m[1];
      CHECK(occurrences(src, fmt::format("tj_mbar_init(tj_ibar{} + 8u, 8);", x)) == 1);
      CHECK(occurrences(src, fmt::format("tj_mbar_expect_tx(tj_ibar{}, 16384u); tj_tma_load_2d(tj_item{} + 0u", x, x)) == 1);
      CHECK(occurrences(src, fmt::format("if (tj_lane == 0) tj_mbar_arrive(tj_ibar{} + 8u);", x)) == 1);
    }
  }
  REQUIRE(anchors.size() == 4);
  std::sort(anchors.begin(), anchors.end());
  CHECK(std::unique(anchors.begin(), anchors.end()) - anchors.begin() == 3);
  CHECK(src.find("tj_tma_load_2d_multicast(tj_item") == std::string::npos);
  CHECK(occurrences(src, "tj_tma_load_2d_multicast(tj_ring") == 2);
  CHECK(src.find("tj_mbar_arrive(tj_empty") == std::string::npos);  // ring stages: released in both programs
  REQUIRE(g.tma_boxes.size() == 4);
  CHECK(g.tma_boxes[1] == std::array<int, 2>{64, 64});   // B: slices
  CHECK(g.tma_boxes[3] == std::array<int, 2>{128, 64});  // B2: whole blocks
  testing::compiles_for_sm90a_without_spills(src, "items_and_cluster_c2.cu");
  // Without a producer: thread 0 copies each block where the program loads it, after the previous tile's release.
  const auto plain = gen(ItemsAndCluster<128, 128, 2>{}, 8, 3, false, 2);
  CHECK(plain.num_ctas == 1);
  CHECK(occurrences(plain.source, "if (tj_tid == 0) { if (tj_oit") == 4);
  testing::compiles_for_sm90a(plain.source, "items_plain.cu");
}

TEST_CASE("cluster_edges_item_blocks_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_items<64, 64>(dev, 256, 130, 192, 4);  // 6 cluster tiles on 2 clusters
  run_items<64, 64>(dev, 256, 130, 0, 4);    // the K loop never runs
  run_items<64, 64>(dev, 128, 64, 64, 8);    // 1 cluster tile on 4 clusters: three own none
}

// On the H200: the item blocks and the multicast ring in clusters (K loops of 0 and 3 iterations, clusters with no
// tile), and a kernel whose programs run different tile counts compiled with num_ctas = 2 (clusters refused: before,
// it hung).
TEST_CASE("cluster_edges_gpu_items_and_refused_clusters") {
  const auto dev = tj::Device::best();
  if (!hopper_or_skip(dev)) return;
  run_items<128, 128>(dev, 1024, 1000, 1000, 2 * 8);
  run_items<128, 128>(dev, 512, 300, 0, 2 * 3);
  run_items<128, 128>(dev, 256, 128, 192, 2 * 4);
  testing::GemmTN<bf> p(128 * 5, 128 * 3 - 7, 320, 41);  // 15 tiles on 4 programs: 4, 4, 4 and 3
  std::vector<float> c(static_cast<std::size_t>(p.M) * p.N, std::nanf(""));
  bf* da = testing::on_device(dev, p.a);
  bf* db = testing::on_device(dev, p.b);
  float* dc = testing::on_device(dev, c);
  using D = tj::TensorDescriptor;
  D a(dev, da, tj::DType::bf16, {p.M, p.K}, {p.K, 1}, {128, 64}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::DType::bf16, {p.N, p.K}, {p.K, 1}, {128, 64}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV6<128, 128, bf>>(dev, {.num_warps = 8, .num_stages = 4, .warp_specialize = true, .num_ctas = 2});
  CHECK(k.source().num_ctas == 1);
  k.launch(tj::Grid{4}, a, b, dc, p.M, p.N, p.K);
  dev.synchronize();
  dev.copy_to_host(c.data(), dc, c.size() * sizeof(float));
  p.check(c, 1e-5);
  // The compiled kernel runs no clusters: an odd grid is accepted (it used to need grid.x % 2 == 0) and correct.
  std::fill(c.begin(), c.end(), std::nanf(""));
  dev.copy_to_device(dc, c.data(), c.size() * sizeof(float));
  k.launch(tj::Grid{3}, a, b, dc, p.M, p.N, p.K);
  dev.synchronize();
  dev.copy_to_host(c.data(), dc, c.size() * sizeof(float));
  dev.free(da), dev.free(db), dev.free(dc);
  p.check(c, 1e-5);
}

TEST_CASE("cluster_edges_dump_examples") {
  if (!std::getenv("TILEJIT_CLUSTER_DUMP")) return;
  for (int c : {1, 2, 4}) {
    gen(examples::MatmulV7<128, 256, bf, 2>{}, 8, 4, true, c);
    gen(examples::MatmulV7<128, 256, bf, 2>{}, 8, 4, true, c, true);
    gen(examples::MatmulV7<128, 128, tj::f16, 4>{}, 8, 4, true, c);
    gen(examples::MatmulV7<64, 48, bf, 4>{}, 4, 4, true, c);
    gen(examples::MatmulV7<128, 192, bf, 4>{}, 8, 4, true, c);
    gen(examples::MatmulV7Persistent<128, 256, bf, 2>{}, 8, 4, true, c);
    gen(examples::MatmulV7Persistent<256, 128, bf, 2>{}, 16, 4, true, c);
    gen(examples::MatmulV7Persistent<128, 128, tj::f16, 4>{}, 8, 3, true, c);
    gen(examples::MatmulV6<128, 256, bf>{}, 8, 4, true, c);
    gen(examples::MatmulV5<128, 256, bf>{}, 8, 4, true, c);
    gen(examples::FlashAttnFwdTmaPersistent<128, 128, 64, true, bf>{}, 8, 2, true, c);
    gen(examples::FlashAttnFwdTmaPersistent<128, 128, 128, false, bf>{}, 8, 2, true, c);
    gen(examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, true, bf>{}, 8, 2, true, c, true);
    gen(examples::FlashAttnFwdTmaEdge<128, 128, 64, false, bf>{}, 8, 2, true, c);
  }
}

// The predictor's static facts and features (predict/summary.hpp, features.hpp): what a kernel is, what a launch
// amounts to, the device specs, and the feature vectors' rules. No GPU: kernels are traced and generated for sm_90a.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/predict/features.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace pr = tilejit::predict;

namespace {

/// Loads one [64] tile per iteration of a loop of program_id(0) + 1 iterations: its traffic depends on the program.
struct Triangular {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto acc = tj::for_range(0, tj::program_id(0) + 1, 1, tj::zeros<float, 64>(), [&](tj::Int i, auto acc) {
      return acc + tj::load(x + i * 64 + tj::arange<64>());
    });
    tj::store(y + tj::program_id(0) * 64 + tj::arange<64>(), acc);
  }
};

template <class K>
std::shared_ptr<tj::runtime::KernelCore> core(int num_warps, int num_stages = 1) {
  return tj::Kernel<K>(tj::Device::interpreter(), K{}, {.num_warps = num_warps, .num_stages = num_stages}).core();
}

pr::Point point(int threads, int shared, long long programs, double flops, double bytes) {
  pr::Point p;
  p.kernel.num_warps = threads / 32;
  p.kernel.threads = threads;
  p.kernel.shared_bytes = shared;
  p.kernel.codegen_ok = true;
  p.launch.programs = programs;
  p.launch.flops = flops;
  p.launch.bytes = bytes;
  p.launch.flops_width = flops > 0 ? 16 : 0;
  return p;
}

std::size_t index_of(const std::string& name) {
  const auto& n = pr::feature_names();
  const auto it = std::find(n.begin(), n.end(), name);
  REQUIRE(it != n.end());
  return static_cast<std::size_t>(it - n.begin());
}

}  // namespace

TEST_CASE("predict: the IR summary counts memory ops, loops, dots and the registers tiles hold") {
  const auto v = pr::summarize_ir(tj::trace(examples::VecAdd<1024>{}), 4, 1, 32);
  CHECK(v.loads == 2);
  CHECK(v.stores == 1);
  CHECK(v.dots == 0);
  CHECK(v.loops == 0);
  CHECK(v.dot_bits == 0);
  CHECK(v.carried_regs == 0);
  // The largest tiles are the [1024] pointer tiles: 8 bytes per element over 128 threads.
  CHECK(v.tile_regs == doctest::Approx(1024.0 * 8 / 4 / 128));

  const auto g = pr::summarize_ir(tj::trace(examples::MatmulV1<64, 96, 32, tj::bf16>{}), 4, 1, 32);
  CHECK(g.dots == 1);
  CHECK(g.dot_m == 64);
  CHECK(g.dot_n == 96);
  CHECK(g.dot_k == 32);
  CHECK(g.dot_bits == 16);
  CHECK(g.loops == 1);
  CHECK(g.loads == 2);
  CHECK(g.stores == 1);
  // The f32 accumulator [64, 96] is the only tile carried through the K loop: 64·96 / 128 registers per thread.
  CHECK(g.carried_regs == doctest::Approx(64.0 * 96 / 128));
  // Eight warps halve every per-thread figure.
  const auto g8 = pr::summarize_ir(tj::trace(examples::MatmulV1<64, 96, 32, tj::bf16>{}), 8, 1, 32);
  CHECK(g8.carried_regs == doctest::Approx(g.carried_regs / 2));
}

TEST_CASE("predict: summarize reads the generated code — block size, shared memory, wgmma and TMA — without compiling") {
  const auto v5 = pr::summarize(*core<examples::MatmulV5<128, 128, tj::bf16>>(8, 4));
  REQUIRE(v5.codegen_ok);
  CHECK(v5.codegen_error.empty());
  CHECK(v5.num_warps == 8);
  CHECK(v5.num_stages == 4);
  CHECK(v5.threads >= 256);
  CHECK(v5.wgmma);
  CHECK(v5.tma);
  // Four stages of a [128, 64] A block and a [128, 64] B block, bf16: at least 128 KiB.
  CHECK(v5.shared_bytes >= 4 * 2 * 128 * 64 * 2);
  const auto v5_2 = pr::summarize(*core<examples::MatmulV5<128, 128, tj::bf16>>(8, 2));
  CHECK(v5_2.shared_bytes < v5.shared_bytes);

  const auto add = pr::summarize(*core<examples::VecAdd<1024>>(4));
  REQUIRE(add.codegen_ok);
  CHECK(add.threads == 128);
  CHECK_FALSE(add.wgmma);
  CHECK_FALSE(add.tma);
  CHECK_FALSE(add.warp_specialized);
  CHECK(add.shared_bytes == 0);
}

TEST_CASE("predict: a launch summary is the IR's cost over the grid; NaN where the trip count depends on the program") {
  const auto k = core<examples::MatmulV1<64, 64, 32, tj::bf16>>(4);
  std::array<tj::runtime::ArgSlot, 6> a{};
  tj::bf16 dummy[1];
  float out[1];
  a[0] = tj::runtime::to_slot<tj::Ptr<tj::bf16>>(static_cast<tj::bf16*>(dummy));
  a[1] = tj::runtime::to_slot<tj::Ptr<tj::bf16>>(static_cast<tj::bf16*>(dummy));
  a[2] = tj::runtime::to_slot<tj::Ptr<float>>(static_cast<float*>(out));
  for (int i = 3; i < 6; ++i) a[static_cast<std::size_t>(i)] = tj::runtime::to_slot<tj::Size>(128);
  const auto l = pr::summarize_launch(*k, tj::Grid{2, 2}, a);
  CHECK(l.programs == 4);
  CHECK(l.flops == doctest::Approx(2.0 * 128 * 128 * 128));
  CHECK(l.flops_width == 16);
  // Per program and K step: a [64, 32] and a [32, 64] bf16 tile; then the [64, 64] f32 store.
  CHECK(l.bytes == doctest::Approx(4 * (4 * (64 * 32 * 2 * 2.0) + 64 * 64 * 4)));
  CHECK_THROWS_WITH_AS(pr::summarize_launch(*k, tj::Grid{0, 2}, a), doctest::Contains("grid.x = 0"), tj::InvalidArgument);

  const auto t = core<Triangular>(2);
  std::array<tj::runtime::ArgSlot, 2> b{};
  b[0] = tj::runtime::to_slot<tj::Ptr<float>>(static_cast<float*>(out));
  b[1] = tj::runtime::to_slot<tj::Ptr<float>>(static_cast<float*>(out));
  const auto lt = pr::summarize_launch(*t, tj::Grid{8}, b);
  CHECK(lt.programs == 8);
  CHECK(std::isnan(lt.flops));
  CHECK(std::isnan(lt.bytes));
}

TEST_CASE("predict: device specs by name and by device; an unknown name lists the known ones") {
  const auto h200 = pr::device_spec("H200");
  CHECK(h200.num_sms == 132);
  CHECK(h200.dram_bytes_per_s == doctest::Approx(4.8e12));
  CHECK(h200.flops_per_s_16 == doctest::Approx(989.4e12));
  CHECK(h200.flops_per_s_8 == doctest::Approx(2 * h200.flops_per_s_16).epsilon(0.01));
  CHECK(pr::device_spec("H100").dram_bytes_per_s < h200.dram_bytes_per_s);
  CHECK_THROWS_WITH_AS(pr::device_spec("B200"), doctest::Contains("'B200'"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::device_spec("B200"), doctest::Contains("known are H200, H100, A100, MI300X"), tj::InvalidArgument);
  const auto cpu = pr::device_spec(tj::Device::interpreter());
  CHECK(cpu.name == "interpreter");
  CHECK(cpu.num_sms == tj::Device::interpreter().num_sms());
}

TEST_CASE("predict: the roofline estimate is max(compute, memory) over the last wave's fill") {
  const auto d = pr::device_spec("H200");
  // 128 threads, no shared memory, no tiles: 16 programs per SM (the thread limit), 2112 slots on 132 SMs.
  const double one_us_bytes = d.dram_bytes_per_s * 1e-6;
  CHECK(pr::roofline_us(point(128, 0, 2112, 0, one_us_bytes), d) == doctest::Approx(1.0));
  // One program more starts a second wave that is nearly empty: the estimate almost doubles.
  CHECK(pr::roofline_us(point(128, 0, 2113, 0, one_us_bytes), d) == doctest::Approx(2.0).epsilon(0.001));
  // Compute-bound: 989.4 Gflop at the bf16 peak is 1 ms; 100 KiB of shared memory leaves 2 programs per SM.
  CHECK(pr::roofline_us(point(256, 100 * 1024, 264, 989.4e9, 1e6), d) == doctest::Approx(1000.0));
  auto unknown = point(128, 0, 2112, std::nan(""), std::nan(""));
  CHECK(std::isnan(pr::roofline_us(unknown, d)));
}

TEST_CASE("predict: group features have one value per name; relative features are against the group's best") {
  const auto d = pr::device_spec("H200");
  const double b = d.dram_bytes_per_s * 1e-6;
  std::vector<pr::Point> g{point(128, 0, 2112, 0, b), point(128, 0, 2112, 0, 4 * b), point(256, 64 * 1024, 1056, 0, b),
                           point(128, 0, 2112, std::nan(""), std::nan(""))};
  const auto x = pr::group_features(g, d);
  REQUIRE(x.size() == g.size());
  for (const auto& r : x) CHECK(r.size() == pr::feature_names().size());
  const std::size_t rel = index_of("rel_t_est"), progs = index_of("rel_programs"), warps = index_of("num_warps"),
                    shared = index_of("shared_kib"), est = index_of("log2_t_est_us");
  CHECK(x[0][rel] == doctest::Approx(0));
  CHECK(x[1][rel] == doctest::Approx(2));  // four times the bytes: log2 4
  CHECK(std::isnan(x[3][rel]));
  CHECK(std::isnan(x[3][est]));
  CHECK(x[2][progs] == doctest::Approx(-1));  // half the programs of the group's most
  CHECK(x[2][warps] == 8);
  CHECK(x[2][shared] == doctest::Approx(64));
  // Facts only the generated code knows are missing (NaN) when the code generator refused the kernel.
  g[0].kernel.codegen_ok = false;
  const auto y = pr::group_features(g, d);
  CHECK(std::isnan(y[0][shared]));
  CHECK(std::isnan(y[0][index_of("wgmma")]));
  CHECK(y[0][warps] == 4);
}

// examples::DequantInt4 (join / interleave in a real kernel): every output against a CPU reference on fresh random
// bytes and scales, with a ragged last program, on the interpreter, on the HIP text run on the CPU (host
// emulator), through NVRTC and hiprtc, and on the GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "examples/dequant_int4.hpp"
#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {

using Kernel = examples::DequantInt4<96, 64>;
constexpr int kBlock = 96, kGroup = 64;

struct Problem {
  std::vector<std::uint8_t> w;
  std::vector<float> scale;
  std::vector<tj::f16> want;
  int n_bytes = 0;
  explicit Problem(int n) : n_bytes(n) {
    std::mt19937 g(testing::fresh_seed());
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < n; ++i) w.push_back(static_cast<std::uint8_t>(byte(g)));
    scale = testing::random_floats(static_cast<std::size_t>((2 * n + kGroup - 1) / kGroup), 0.01f, 2.0f, 7);
    for (int j = 0; j < 2 * n; ++j) {
      const int q = j % 2 == 0 ? w[static_cast<std::size_t>(j / 2)] & 15 : w[static_cast<std::size_t>(j / 2)] >> 4;
      want.push_back(tj::f16(static_cast<float>(q - 8) * scale[static_cast<std::size_t>(j / kGroup)]));
    }
  }
  int programs() const { return (n_bytes + kBlock - 1) / kBlock; }
};

/// Every output bit for bit (the product is one f32 multiply rounded to f16 on both sides); none past the end written.
void check(const std::vector<tj::f16>& out, const Problem& p) {
  for (std::size_t j = 0; j < p.want.size(); ++j) {
    CAPTURE(j);
    CHECK(static_cast<float>(out[j]) == static_cast<float>(p.want[j]));
  }
  for (std::size_t j = p.want.size(); j < out.size(); ++j) CHECK(std::isnan(static_cast<float>(out[j])));
}

void run_on(const tj::Device& dev, int n) {
  CAPTURE(n);
  Problem p(n);
  std::vector<tj::f16> out(p.want.size() + 64, tj::f16(NAN));  // poisoned, with room past the end
  testing::Mirror m{dev, {}};
  auto* dw = m.up(p.w);
  auto* ds = m.up(p.scale);
  auto* dout = m.up(out);
  tj::compile<Kernel>(dev, {.num_warps = 2}).launch(tj::Grid{p.programs()}, dw, ds, dout, p.n_bytes);
  m.down();
  check(out, p);
}

}  // namespace

TEST_CASE("dequant_int4_interpreter_matches_cpu") {
  for (int n : {96, 1000}) run_on(tj::Device::interpreter(), n);
}

TEST_CASE("dequant_int4_generated_code_runs_on_the_host_emulator") {
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    Problem p(500);
    std::vector<tj::f16> out(p.want.size() + 64, tj::f16(NAN));
    const auto hk = testing::HostKernel::compile(tj::codegen::generate(tj::trace(Kernel{}), {}, tj::codegen::target_for(arch), {.num_warps = 2}));
    if (!hk) return;
    hk->launch({static_cast<unsigned>(p.programs()), 1, 1}, p.w.data(), p.scale.data(), out.data(), p.n_bytes);
    check(out, p);
  }
}

TEST_CASE("dequant_int4_compiles_everywhere") {
  const auto k = tj::trace(Kernel{});
  for (const char* arch : {"sm_90a", "sm_80"})
    testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 2}).source, arch, k.name);
  testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 2}).source, k.name);
  // interleave's reshape keeps every element in its thread: no shared memory.
  const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 2});
  CHECK(testing::has_diagnostic(g, "in registers: every thread keeps its elements"));
  CHECK_FALSE(testing::has_diagnostic(g, "through shared memory"));
}

TEST_CASE("dequant_int4_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  for (int n : {96, 1000, 1 << 20}) run_on(dev, n);
}

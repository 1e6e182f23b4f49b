// GEMM rung 6 (examples/gemm/matmul_v6.hpp): the persistent grid. The
// interpreter against f64 on ragged shapes with more tiles than programs (and
// programs with no tile), the warp-specialised sm_90a code of the tile loop
// (the producer walks (tile, K step) and keeps its ring across tiles), NVRTC +
// ptxas with no spills, and the GPU against f64 with poisoned outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <vector>

#include "examples/gemm/matmul_v6.hpp"
#include "test/common/activations.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

template <class T>
using Problem = testing::GemmTN<T>;

struct Run {
  int stages = 3;
  int programs = 0;  // 0: persistent_grid with the device's SM count
  bool ws = false;
};

using testing::on_device;

/// Rung 6 (plain epilogue) on `dev`: outputs poisoned (NaN), every element must be written and lie within
/// `elem` · Σ|a||b| (f32 accumulation of exact products: about K · 2^-24 at worst) of f64, and the relative
/// Frobenius error below `tol`.
template <int BM, int BN, class T>
void run_v6(const tj::Device& dev, int M, int N, int K, Run r, double tol = 1e-5, double elem = -1) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(r.stages);
  CAPTURE(r.ws);
  CAPTURE(testing::fresh_seed());
  Problem<T> p(M, N, K, static_cast<unsigned>(M * 7 + N * 3 + K));
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  T* da = on_device(dev, p.a);
  T* db = on_device(dev, p.b);
  float* dc = on_device(dev, c);
  using Kern = examples::MatmulV6<BM, BN, T>;
  D a(dev, da, tj::dtype_v<T>, {M, K}, {K, 1}, {BM, Kern::BLOCK_K}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::dtype_v<T>, {N, K}, {K, 1}, {BN, Kern::BLOCK_K}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<Kern>(dev, {.num_warps = BM / 16, .num_stages = r.stages, .warp_specialize = r.ws});
  const tj::Grid grid = r.programs > 0 ? tj::Grid{r.programs} : examples::persistent_grid(M, N, BM, BN, dev.num_sms());
  CAPTURE(grid.x);
  k.launch(grid, a, b, dc, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(float));
    dev.free(da), dev.free(db), dev.free(dc);
  }
  p.check(c, tol, elem);
}

using testing::act_ref;

/// MatmulV6Fused: y = act(alpha · A·Bᵀ + bias) cast to Out, checked per element (bf16 output: its rounding) and in
/// Frobenius norm.
template <int BM, int BN, examples::Act ACT, class Out>
void run_v6_fused(const tj::Device& dev, int M, int N, int K, Run r, float alpha = 0.5f) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(static_cast<int>(ACT));
  CAPTURE(r.ws);
  CAPTURE(testing::fresh_seed());
  Problem<tj::bf16> p(M, N, K, static_cast<unsigned>(M + N + K));
  auto bias = testing::random_floats(static_cast<std::size_t>(N), -1, 1, 99);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  std::vector<Out> c(static_cast<std::size_t>(M) * N, Out(std::nanf("")));
  tj::bf16* da = on_device(dev, p.a);
  tj::bf16* db = on_device(dev, p.b);
  float* dbias = on_device(dev, bias);
  Out* dc = on_device(dev, c);
  D a(dev, da, tj::DType::bf16, {M, K}, {K, 1}, {BM, 64}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::DType::bf16, {N, K}, {K, 1}, {BN, 64}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV6Fused<BM, BN, tj::bf16, ACT, Out>>(
      dev, {.num_warps = BM / 16, .num_stages = r.stages, .warp_specialize = r.ws});
  const tj::Grid grid = r.programs > 0 ? tj::Grid{r.programs} : examples::persistent_grid(M, N, BM, BN, dev.num_sms());
  k.launch(grid, a, b, dbias, dc, alpha, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(Out));
    dev.free(da), dev.free(db), dev.free(dbias), dev.free(dc);
  }
  const double rnd = std::is_same_v<Out, float> ? 1e-6 : 1.0 / 128;  // bf16 keeps 8 significant bits
  std::vector<double> got(c.size()), ref(c.size());
  std::size_t unwritten = 0, outside = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const std::size_t x = static_cast<std::size_t>(i) * N + j;
      got[x] = static_cast<float>(c[x]);
      ref[x] = act_ref(ACT, alpha * p.ref[x] + bias[static_cast<std::size_t>(j)]);
      if (std::isnan(got[x])) {
        ++unwritten;
        continue;
      }
      // activation slopes are below 1.2: the accumulation error passes through at most doubled
      outside += std::abs(got[x] - ref[x]) > rnd * std::abs(ref[x]) + 2 * alpha * (1e-6 + K * 6e-8) * p.mag[x] + 1e-5;
    }
  CHECK(unwritten == 0);
  CHECK(outside == 0);
  CHECK(testing::rel_error(got, ref) < (std::is_same_v<Out, float> ? 1e-5 : 1e-2));
}

tj::codegen::Generated sm90(auto kernel, int warps, int stages, bool ws) {
  return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = warps, .num_stages = stages, .warp_specialize = ws});
}

/// The text between `from` (inclusive) and the matching closing brace of the block it opens.
std::string block_at(const std::string& s, std::size_t from) {
  const std::size_t open = s.find('{', from);
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return s.substr(from, i + 1 - from);
  }
  return s.substr(from);
}

bool gpu_or_skip(const tj::Device& dev) {
  if (dev.backend() == tj::Backend::cuda && dev.compute_capability() >= 90) return true;
  MESSAGE("no Hopper GPU: skipping");
  return false;
}

/// out[i] = 2·i + 1 for i < n, written by a grid-stride loop with nothing carried: program p handles blocks
/// p, p + P, ... (the shape of rung 6's tile loop).
template <int BLOCK>
struct GridStride {
  void operator()(tj::Ptr<float> out, tj::Size n) const {
    tj::for_range(tj::program_id(0), (n + (BLOCK - 1)) / BLOCK, tj::num_programs(0), [&](tj::Int blk) {
      auto i = blk * BLOCK + tj::arange<BLOCK>();
      tj::store(out + i, tj::cast<float>(i) * 2.0f + 1.0f, i < n);
    });
  }
};

}  // namespace

TEST_CASE("for_range_without_carries_traces_and_runs") {
  const auto ir = tj::trace(GridStride<64>{});
  int begins = 0, ends = 0, carries = 0;
  for (const auto& n : ir.nodes) {
    begins += n.op == tj::ir::Op::loop_begin;
    ends += n.op == tj::ir::Op::loop_end;
    carries += n.op == tj::ir::Op::loop_carry || n.op == tj::ir::Op::loop_yield || n.op == tj::ir::Op::loop_result;
  }
  CHECK(begins == 1);
  CHECK(ends == 1);
  CHECK(carries == 0);
  CHECK_NOTHROW(tj::ir::verify(ir));
  for (int programs : {1, 3, 9}) {  // 9 programs for 5 blocks: four own none
    CAPTURE(programs);
    std::vector<float> out(300, -1.0f);
    auto k = tj::compile<GridStride<64>>(tj::Device::interpreter());
    k.launch(tj::Grid{programs}, out.data(), 300);
    for (int i = 0; i < 300; ++i) CHECK(out[static_cast<std::size_t>(i)] == 2.0f * i + 1.0f);
  }
  testing::compiles_for_sm90a(tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 2}).source, "grid_stride.cu");
}

TEST_CASE("gemm_v6_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  // Ragged M, N, K (none a multiple of its block), more tiles than programs: 3 x 4 = 12 tiles on 5 programs.
  run_v6<64, 64, tj::bf16>(dev, 130, 200, 136, {.programs = 5});
  // NPOT BLOCK_N 96; 2 x 3 = 6 tiles on 2 programs; K shorter than one block.
  run_v6<64, 96, tj::bf16>(dev, 70, 96 * 3 - 10, 40, {.programs = 2});
  // f16, NPOT 48: 3 x 2 tiles on 1 program (every tile in one program, in grouped order).
  run_v6<64, 48, tj::f16>(dev, 130, 50, 72, {.programs = 1});
  // More programs than tiles: programs 4..6 own no tile and must not write anything.
  run_v6<64, 64, tj::bf16>(dev, 100, 120, 64, {.programs = 7});
  // The grouped order over more block rows than GROUP_M (8): 10 x 2 tiles on 3 programs.
  run_v6<64, 64, tj::bf16>(dev, 64 * 10 - 3, 100, 80, {.programs = 3});
  // persistent_grid on the interpreter's "SM" count.
  run_v6<64, 64, tj::bf16>(dev, 150, 150, 104, {});
  // The fused epilogue.
  run_v6_fused<64, 96, examples::Act::gelu_tanh, tj::bf16>(dev, 70, 200, 72, {.programs = 3});
  run_v6_fused<64, 96, examples::Act::silu, float>(dev, 130, 96, 136, {.programs = 2}, 16.0f);
  run_v6_fused<64, 64, examples::Act::relu, tj::bf16>(dev, 64, 64, 64, {.programs = 4});
}

TEST_CASE("gemm_v6_persistent_grid_is_one_program_per_sm_at_most_one_per_tile") {
  CHECK(examples::persistent_grid(8192, 8192, 128, 256, 132).x == 132);
  CHECK(examples::persistent_grid(300, 300, 128, 256, 132).x == 6);
  CHECK(examples::persistent_grid(1, 1, 128, 256, 132).x == 1);
}

TEST_CASE("gemm_v6_sm90a_producer_walks_the_tile_loop_and_keeps_its_ring_across_tiles") {
  const auto g = sm90(examples::MatmulV6<128, 256, tj::bf16>{}, 8, 4, true);
  const std::string& src = g.source;
  REQUIRE(testing::has_diagnostic(g, "warp specialised: 8 consumer warp(s) with 240 registers"));
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(for \(int s(\d+) = (s\d+); s\d+ < (s\d+); s\d+ \+= (s\d+)\) \{  // loop %\d+, as the consumers walk it)")));
  const std::string O = m[1], lo = m[2], hi = m[3], step = m[4];
  CAPTURE(O);
  // The tile loop starts at the program id and steps by the number of programs.
  CHECK(src.find("const int " + lo + " = (int)blockIdx.x;") != std::string::npos);
  CHECK(src.find("const int " + step + " = (int)gridDim.x;") != std::string::npos);
  CHECK(testing::has_diagnostic(g, "inside loop %" + O + "; the ring's stages and phases continue across loop %" + O));
  const std::size_t prod = src.find("if (tj_warp >= 8) {");
  REQUIRE(prod != std::string::npos);
  const std::string P = block_at(src, prod), C = src.substr(prod + P.size());
  // Producer: the counter before the tile loop; inside it, per tile, the grouped order and the K walk.
  std::smatch im;
  REQUIRE(std::regex_search(P, im, std::regex(R"(unsigned tj_it(\d+) = 0;)")));
  const std::string L = im[1];
  const std::size_t pouter = P.find("for (int s" + O + " = ");
  CHECK(P.find("unsigned tj_it" + L + " = 0;") < pouter);
  const std::string pbody = block_at(P, pouter);
  CHECK(pbody.find("for (int s" + L + " = ") != std::string::npos);
  CHECK(pbody.find(", ++tj_it" + L + ") {") != std::string::npos);
  CHECK(pbody.find("tj_it" + L + " = ") == std::string::npos);
  CHECK(pbody.find("tj_min(") != std::string::npos);  // the group's row count, recomputed per tile
  CHECK(pbody.find("tj_mbar_wait(tj_empty" + L) != std::string::npos);
  CHECK(testing::occurrences(P, "tj_tma_load_2d(") == 2);  // A and B, issued in the one walk
  // Consumers: the same tile loop; per tile a snapshot of the kernel-wide counter, the K loop, its last stage
  // released after the final wgmma wait, then the epilogue's masked stores.
  const std::size_t couter = C.find("for (int s" + O + " = " + lo + "; s" + O + " < " + hi + "; s" + O + " += " + step + ") {");
  REQUIRE(couter != std::string::npos);
  const std::string cbody = block_at(C, couter);
  CHECK(cbody.find("const unsigned tj_it0" + L + " = tj_it" + L + ";") != std::string::npos);
  const std::size_t wait0 = cbody.find("wgmma.wait_group.sync.aligned 0;");
  const std::size_t last = cbody.find("if (tj_it" + L + " > tj_it0" + L + ") { __syncwarp(); if (tj_lane == 0) tj_mbar_arrive(tj_empty" + L);
  const std::size_t store = cbody.find("if (v");  // the first masked store
  REQUIRE(wait0 != std::string::npos);
  REQUIRE(last != std::string::npos);
  REQUIRE(store != std::string::npos);
  CHECK(wait0 < last);
  CHECK(last < store);
  CHECK(testing::occurrences(src, "__syncthreads") == 1);  // before the producer branch only
  CHECK(cbody.find("tj_tma_load_2d(") == std::string::npos);
  // Without warp specialisation: the same tile loop, thread 0 refilling the ring (its counter also runs on).
  const auto plain = sm90(examples::MatmulV6<128, 256, tj::bf16>{}, 8, 4, false);
  CHECK(plain.source.find("setmaxnreg") == std::string::npos);
  CHECK(testing::occurrences(plain.source, "unsigned tj_it" + L + " = 0;") == 1);
  CHECK(plain.source.find("(int)gridDim.x") != std::string::npos);
}

TEST_CASE("gemm_v6_compiles_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto ptxas = [](const tj::codegen::Generated& g, const std::string& what) {
    CAPTURE(what);
    testing::compiles_for_sm90a_without_spills(g.source, what + ".cu");
  };
  using examples::MatmulV6, examples::MatmulV6Fused, examples::Act;
  ptxas(sm90(MatmulV6<128, 256, tj::bf16>{}, 8, 4, true), "v6_128x256_s4_ws");
  ptxas(sm90(MatmulV6<128, 256, tj::bf16>{}, 8, 3, true), "v6_128x256_s3_ws");
  ptxas(sm90(MatmulV6<256, 128, tj::bf16>{}, 16, 4, true), "v6_256x128_s4_ws");
  ptxas(sm90(MatmulV6<128, 256, tj::bf16>{}, 8, 4, false), "v6_128x256_s4");
  ptxas(sm90(MatmulV6Fused<128, 256, tj::bf16, Act::gelu_tanh>{}, 8, 4, true), "v6_fused_gelu_128x256_s4_ws");
  ptxas(sm90(MatmulV6<128, 256, tj::f8e4m3>{}, 8, 4, true), "v6_f8_128x256_s4_ws");
}

TEST_CASE("gemm_v6_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (!gpu_or_skip(dev)) return;
  using bf = tj::bf16;
  for (bool ws : {true, false}) {
    // 4 x 3 tiles on 3 programs; 16 K steps.
    run_v6<128, 256, bf>(dev, 512, 768, 1024, {.stages = 4, .programs = 3, .ws = ws});
    // Ragged M, N, K; 4 K steps (the last partly zero-filled) per tile, 3 x 3 tiles on 2 programs.
    run_v6<128, 256, bf>(dev, 300, 700, 200, {.stages = 3, .programs = 2, .ws = ws});
    // One program for all 5 x 2 tiles; 5 K steps on 4 stages: the ring's phase moves across tiles.
    run_v6<128, 256, bf>(dev, 640, 512, 64 * 5, {.stages = 4, .programs = 1, .ws = ws});
    // Four consumer warp groups.
    run_v6<256, 128, bf>(dev, 512, 384, 64 * 9, {.stages = 4, .programs = 2, .ws = ws});
  }
  // Warp-specialised corner cases.
  run_v6<128, 128, bf>(dev, 256, 384, 64 * 7, {.stages = 1, .programs = 2, .ws = true});  // one stage: released after its own wait
  run_v6<128, 128, bf>(dev, 1024, 1024, 64, {.stages = 2, .programs = 70, .ws = true});   // one K step per tile, 64 tiles on 70
  run_v6<128, 128, bf>(dev, 200, 300, 64 * 3, {.stages = 4, .programs = 0, .ws = true});  // fewer K steps than stages
  run_v6<64, 128, bf>(dev, 200, 256, 64 * 5, {.stages = 3, .programs = 3, .ws = true});   // one consumer warp group
  run_v6<128, 192, tj::f16>(dev, 256, 192 * 3, 64 * 37, {.stages = 4, .programs = 0, .ws = true});
  run_v6<128, 64, bf>(dev, 256, 320, 64 * 6, {.stages = 3, .programs = 4, .ws = true});  // a light kernel
  // f8: Hopper's f8 wgmma adds with fewer mantissa bits than f32 (see test_gemm_v5.cpp): 2e-3, per element 4e-3·Σ|ab|.
  run_v6<128, 256, tj::f8e4m3>(dev, 512, 512, 1024, {.stages = 4, .programs = 2, .ws = true}, 2e-3, 4e-3);
  // The fused epilogue (bias + GELU, bf16 out) with and without the producer.
  run_v6_fused<128, 256, examples::Act::gelu_tanh, bf>(dev, 300, 700, 256, {.stages = 4, .programs = 2, .ws = true});
  run_v6_fused<128, 256, examples::Act::silu, float>(dev, 512, 512, 512, {.stages = 4, .programs = 3, .ws = false});
}

TEST_CASE("gemm_v6_gpu_small_for_the_sanitizers") {
  auto dev = tj::Device::best();
  if (!gpu_or_skip(dev)) return;
  // 2 x 2 tiles on 2 programs, 5 K steps on 3 stages.
  run_v6<128, 128, tj::bf16>(dev, 200, 130, 64 * 5, {.stages = 3, .programs = 2, .ws = true});
  run_v6<128, 128, tj::bf16>(dev, 200, 130, 64 * 5, {.stages = 3, .programs = 2, .ws = false});
}

// GEMM rung 6 with the TMA-store epilogue (examples::MatmulV6Store, CompileOptions::tma_store): the interpreter
// against f64 on ragged shapes (the store's masked lowering), the sm_90a text (staging writes at swizzled offsets,
// proxy fence, barrier, one bulk tensor store per 128-byte slab and a commit per tile, the buffer's previous store
// waited for (.read) before it is written again, every store waited for before exit; the C descriptor encoded
// with its box), the shared-memory rule, NVRTC + ptxas with no spills, and the GPU against f64 with poisoned
// outputs (skips without a GPU), including C whose rows end mid 16-byte chunk (kept masked: TMA stores write whole
// chunks).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <vector>

#include "examples/gemm/matmul_v6.hpp"
#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

using testing::on_device;

/// MatmulV6Store<BM, BN, bf16, Out> on `dev` with `programs` programs (0: persistent_grid): C poisoned (NaN), every
/// element written, within Out's rounding plus the f32 accumulation error of f64, and nothing written past C's
/// shape (C sits in a larger buffer whose pitch exceeds N).
template <int BM, int BN, class Out>
void run_store(const tj::Device& dev, int M, int N, int K, int stages, bool ws, int programs, bool pingpong = false) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(ws);
  CAPTURE(pingpong);
  testing::GemmTN<tj::bf16> p(M, N, K, static_cast<unsigned>(M * 5 + N + K));
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  const int ld = (N + 8 + 7) / 8 * 8, rows = M + 3;  // 16-byte aligned pitch, a pad of rows and columns
  std::vector<Out> c(static_cast<std::size_t>(rows) * ld, Out(std::nanf("")));
  tj::bf16* da = on_device(dev, p.a);
  tj::bf16* db = on_device(dev, p.b);
  Out* dc = on_device(dev, c);
  using Kern = examples::MatmulV6Store<BM, BN, tj::bf16, Out>;
  D a(dev, da, tj::DType::bf16, {M, K}, {K, 1}, {BM, 64}, {.swizzle = D::Swizzle::b128});
  D b(dev, db, tj::DType::bf16, {N, K}, {K, 1}, {BN, 64}, {.swizzle = D::Swizzle::b128});
  D cd(dev, dc, tj::dtype_v<Out>, {M, N}, {ld, 1}, {BM, 128 / static_cast<int>(sizeof(Out))}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<Kern>(dev, {.num_warps = BM / 16, .num_stages = stages, .warp_specialize = ws, .pingpong = pingpong, .tma_store = true});
  const tj::Grid grid = programs > 0 ? tj::Grid{programs} : examples::persistent_grid(M, N, BM, BN, dev.num_sms());
  k.launch(grid, a, b, cd, M, N, K);
  if (gpu) {
    dev.copy_to_host(c.data(), dc, c.size() * sizeof(Out));
    dev.free(da), dev.free(db), dev.free(dc);
  }
  const double rnd = std::is_same_v<Out, float> ? 1e-6 : 1.0 / 128;  // bf16 keeps 8 significant bits
  const auto r = testing::check_framed(c, rows, ld, M, N, [&](std::size_t x) { return p.ref[x]; }, [&](std::size_t x, double want) {
    return rnd * std::abs(want) + (1e-6 + K * 6e-8) * p.mag[x] + 1e-5;
  });
  CHECK(r.unwritten == 0);
  CHECK(r.outside == 0);
  CHECK(r.spilled == 0);
}

/// The sm_90a text of `kernel`; `c_rows_whole_chunks`: the specialisation a launch gets when C's rows are whole
/// 16-byte chunks (N x element size a multiple of 16: every parameter flagged kDiv16), else none.
tj::codegen::Generated sm90_store(auto kernel, int warps, int stages, bool ws, bool tma_store = true, bool c_rows_whole_chunks = true) {
  const tj::ir::Kernel k = tj::trace(kernel);
  return tj::codegen::generate(k, c_rows_whole_chunks ? testing::all_div16(k) : tj::ir::Specialization{}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = warps, .num_stages = stages, .warp_specialize = ws, .tma_store = tma_store});
}

bool gpu_or_skip(const tj::Device& dev) {
  if (dev.backend() == tj::Backend::cuda && dev.compute_capability() >= 90) return true;
  MESSAGE("skipping: needs an sm_90 CUDA device");
  return false;
}

}  // namespace

TEST_CASE("gemm_v6_store_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  // Ragged M and N (none a multiple of its block), 3 x 3 tiles on 4 programs; bf16 and f32 out.
  run_store<64, 64, tj::bf16>(dev, 150, 170, 72, 3, false, 4);
  run_store<64, 64, float>(dev, 130, 100, 136, 3, true, 2);
  // More programs than tiles.
  run_store<64, 64, tj::bf16>(dev, 60, 64, 64, 3, true, 3);
  // 192-row tiles (three consumer warp groups), ragged, 2 x 2 tiles on 3 programs.
  run_store<192, 192, tj::bf16>(dev, 250, 300, 72, 3, true, 3);
}

TEST_CASE("gemm_v6_store_sm90a_stages_the_tile_and_stores_it_with_tma") {
  // 256 x 128 bf16: two 128-byte slabs, staged whole (64 KiB) and stored as one bulk group per tile.
  const auto g = sm90_store(examples::MatmulV6Store<256, 128, tj::bf16>{}, 16, 3, true);
  const std::string& src = g.source;
  CAPTURE(src.size());
  REQUIRE(testing::has_diagnostic(g, "warp specialised"));
  REQUIRE(testing::has_diagnostic(g, "stored by TMA from 65536 bytes of shared memory (2 slab(s) of 128 bytes)"));
  // The C descriptor (parameter 2) is encoded with the box the store moves: 256 rows of 64 bf16 (128 bytes).
  REQUIRE(g.tma_params.size() == 3);
  CHECK(g.tma_params[2] == 2);
  CHECK(g.tma_boxes[2] == std::array<int, 2>{256, 64});
  // No masked global store is left; the staging writes are 4-byte (two bf16 columns) swizzled shared stores.
  CHECK(src.find("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") != std::string::npos);
  const std::size_t wait_read = src.find("if (tj_tid == 0) tj_bulk_wait_read();");
  const std::size_t first_write = src.find("*(tj_v4*)(tj_smem_raw + ");
  const std::size_t fence = src.find("tj_fence_proxy_async();  //");
  const std::size_t issue = src.find("if (tj_tid == 0) { tj_tma_store_2d(");
  const std::size_t exit_wait = src.find("if (tj_tid == 0) tj_bulk_wait();");
  REQUIRE(wait_read != std::string::npos);
  REQUIRE(first_write != std::string::npos);
  REQUIRE(fence != std::string::npos);
  REQUIRE(issue != std::string::npos);
  REQUIRE(exit_wait != std::string::npos);
  CHECK(wait_read < first_write);
  CHECK(first_write < fence);
  CHECK(fence < issue);
  CHECK(issue < exit_wait);
  // A consumer barrier after the .read wait (the buffer is free for every thread) and after the fence.
  const std::string bar = "asm volatile(\"bar.sync 1, 512;\" ::: \"memory\");";
  CHECK(src.find(bar, wait_read) < first_write);
  CHECK(src.find(bar, fence) < issue);
  // 256 x 128 bf16 over 512 threads: 64 elements each, 32 staging writes of two; two slabs, one bulk group per tile.
  CHECK(testing::occurrences(src, "*(tj_v4*)(tj_smem_raw + ") == 32);
  CHECK(testing::occurrences(src, "tj_tma_store_2d(&s") == 2);
  CHECK(testing::occurrences(src, "tj_bulk_commit(); }") == 1);
  CHECK(src.find("if (tj_tid == 0) tj_bulk_wait_read1();") == std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(tj_tma_store_2d\(&s\d+\.map, tj_stbuf\d+ \+ 32768u, \(int\)\(s\d+\) \+ 64, \(int\)\(s\d+\)\))")));
  // Without tma_store the epilogue is the masked store of the same block.
  const auto plain = sm90_store(examples::MatmulV6Store<256, 128, tj::bf16>{}, 16, 3, true, false);
  CHECK(plain.source.find("cp.async.bulk.tensor.2d.global") == std::string::npos);
  CHECK(plain.tma_params.size() == 2);
}

TEST_CASE("gemm_v6_store_sm90a_stages_wide_tiles_slab_by_slab") {
  // 128 x 256 bf16: four slabs through two slab buffers (32 KiB, not 64), one bulk group per slab; slab s >= 2 waits
  // until slab s - 2's store has read its buffer (read 1), slab 0 of the next tile until every store has (read 0).
  const auto g = sm90_store(examples::MatmulV6Store<128, 256, tj::bf16>{}, 8, 4, true);
  const std::string& src = g.source;
  REQUIRE(testing::has_diagnostic(g, "stored by TMA slab by slab through 32768 bytes of shared memory (two buffers of one 128-byte "
                                     "slab; 4 slabs)"));
  CHECK(g.dynamic_shared_bytes <= 227 * 1024);  // 4 stages of 48 KiB beside the staging
  CHECK(testing::occurrences(src, "*(tj_v4*)(tj_smem_raw + ") == 64);  // 16 per slab
  CHECK(testing::occurrences(src, "tj_tma_store_2d(&s") == 4);
  CHECK(testing::occurrences(src, "tj_bulk_commit(); }") == 4);
  CHECK(testing::occurrences(src, "if (tj_tid == 0) tj_bulk_wait_read1();") == 2);
  CHECK(testing::occurrences(src, "if (tj_tid == 0) tj_bulk_wait_read();") == 1);
  // Slab s is staged in buffer s % 2 (16384 bytes = 128 rows x 128 bytes apart) and stored from there at column 64 s.
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    const std::regex store(fmt::format(R"(tj_tma_store_2d\(&s\d+\.map, tj_stbuf\d+ \+ {}u, \(int\)\(s\d+\) \+ {}, )", s % 2 * 16384, 64 * s));
    CHECK(std::regex_search(src, store));
  }
  // Every staging write of slab s comes after the wait that frees its buffer and before slab s's store.
  const std::size_t w2 = src.find("tj_bulk_wait_read1();"), st1 = src.find("tj_tma_store_2d(&s", src.find("tj_tma_store_2d(&s") + 1);
  CHECK(st1 < w2);  // slab 1 stored before slab 2's wait
  CHECK(src.find(" - 256, 128)", w2) != std::string::npos);  // slab 2's writes (bytes 256-383 of a row) after it
}

TEST_CASE("gemm_v6_store_shared_memory_rule") {
  // f32 out, 256 x 128: 4 slabs staged through 64 KiB beside a 4-stage ring of 192 KiB does not fit in 227 KiB.
  CHECK_THROWS_WITH_AS(sm90_store(examples::MatmulV6Store<256, 128, tj::bf16, float>{}, 16, 4, true),
                       doctest::Contains("for TMA store staging"), tj::Unsupported);
  CHECK_THROWS_WITH_AS(sm90_store(examples::MatmulV6Store<256, 128, tj::bf16, float>{}, 16, 4, true),
                       doctest::Contains("stage(s) and blocks, 0 of scratch): sm_90a allows 227 KiB per program; lower num_stages or "
                                         "the block sizes, or turn tma_store off"),
                       tj::Unsupported);
  // Without TMA stores (8 stages of 48 KiB): the ring alone, and no word of staging.
  try {
    (void)sm90_store(examples::MatmulV6Store<256, 128, tj::bf16>{}, 16, 8, true, false);
    FAIL("8 stages of 48 KiB fit in 227 KiB?");
  } catch (const tj::Unsupported& e) {
    const std::string what = e.what();
    CHECK(what.find(" for 8 TMA pipeline stage(s), 0 of scratch): sm_90a allows 227 KiB per program; lower num_stages or the "
                    "block sizes") != std::string::npos);
    CHECK(what.find("staging") == std::string::npos);
    CHECK(what.find("tma_store") == std::string::npos);
  }
}

TEST_CASE("gemm_v6_store_keeps_masked_stores_where_c_rows_end_mid_chunk") {
  // TMA stores write whole 16-byte chunks: into C whose N x element size is not a multiple of 16 (N = 700 bf16) a
  // TMA store would write past column N - 1. Without the launch's kDiv16 flag on C the store stays masked, visibly.
  const auto g = sm90_store(examples::MatmulV6Store<128, 256, tj::bf16>{}, 8, 3, true, true, false);
  CHECK(g.source.find("cp.async.bulk.tensor.2d.global") == std::string::npos);
  CHECK(g.tma_params.size() == 2);
  CHECK(testing::has_diagnostic(g, "tma_store not applied to desc_store"));
  CHECK(testing::has_diagnostic(g, "descriptor arg2 is not known to hold whole 16-byte chunks per row"));
  // The loads still go through TMA and the ring is the same: only the epilogue differs.
  CHECK(testing::has_diagnostic(g, "warp specialised"));
}

TEST_CASE("gemm_v6_store_compiles_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  using examples::MatmulV6Store;
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<128, 256, tj::bf16>{}, 8, 3, true).source, "v6_store_128x256_s3_ws.cu");
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<128, 256, tj::bf16>{}, 8, 4, true).source, "v6_store_128x256_s4_ws.cu");
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<256, 128, tj::bf16>{}, 16, 3, true).source, "v6_store_256x128_s3_ws.cu");
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<128, 256, tj::bf16, float>{}, 8, 4, true).source,
                                             "v6_store_128x256_f32_s4_ws.cu");
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<128, 256, tj::bf16>{}, 8, 3, false).source, "v6_store_128x256_s3.cu");
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<128, 128, tj::bf16, float>{}, 8, 3, true).source,
                                             "v6_store_128x128_f32_s3_ws.cu");
  // Three consumer warp groups (num_warps = 12, 512 threads with the producer): 128 registers per thread at launch,
  // 160 per consumer after setmaxnreg; a 192-wide accumulator holds 96 of them. (192 x 256 does not compile: ptxas
  // stops at "Insufficient registers (128) to compile instruction" — an m64n256 wgmma holds 128 accumulators.)
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<192, 192, tj::bf16>{}, 12, 3, true).source, "v6_store_192x192_s3_ws.cu");
  testing::compiles_for_sm90a_without_spills(sm90_store(MatmulV6Store<192, 128, tj::bf16>{}, 12, 4, true).source, "v6_store_192x128_s4_ws.cu");
}

TEST_CASE("gemm_v6_store_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (!gpu_or_skip(dev)) return;
  using bf = tj::bf16;
  for (bool ws : {true, false}) {
    run_store<128, 256, bf>(dev, 512, 768, 1024, 3, ws, 3);   // 4 x 3 tiles on 3 programs: the buffer reused
    run_store<128, 256, bf>(dev, 300, 712, 200, 3, ws, 2);    // ragged M, N, K: TMA clips the edge tiles
    run_store<128, 256, bf>(dev, 300, 700, 200, 3, ws, 2);    // rows end mid 16-byte chunk: masked stores
    run_store<128, 256, bf>(dev, 640, 512, 64 * 5, 3, ws, 1); // one program for every tile
  }
  run_store<128, 128, float>(dev, 300, 260, 64 * 7, 3, true, 0);
  // Slab by slab: bf16 128 x 256 (4 slabs) with 4 stages, f32 128 x 256 (8 slabs), several tiles per program.
  run_store<128, 256, bf>(dev, 1000, 1800, 320, 4, true, 5);
  run_store<128, 256, float>(dev, 1000, 1800, 320, 4, true, 5);
  run_store<256, 128, bf>(dev, 1000, 1800, 320, 3, true, 5);  // two slabs, staged whole
  run_store<128, 256, bf>(dev, 2048, 2048, 2048, 3, true, 0);
  // Three consumer warp groups (192-row tiles, num_warps = 12): ragged edges, several tiles per program, and a
  // 192-wide tile staged slab by slab (three 128-byte slabs through two buffers).
  run_store<192, 192, bf>(dev, 1000, 1800, 320, 3, true, 5);
  run_store<192, 192, bf>(dev, 400, 200, 72, 3, true, 0);
  run_store<192, 128, bf>(dev, 1000, 1800, 320, 4, true, 5);
  run_store<192, 192, bf>(dev, 2304, 1536, 1024, 3, true, 0);
}

TEST_CASE("gemm_v6_store_gpu_pingpong_persistent_matches_f64") {
  // Review of fda15a0: the ping-pong turns continue across the tile loop, whose body ends in a TMA store epilogue with
  // barriers of every consumer thread (bar.sync 1, 256) outside the turns. Programs with many tiles, one tile, none
  // (more programs than tiles); one K block per tile.
  auto dev = tj::Device::best();
  if (!gpu_or_skip(dev)) return;
  using bf = tj::bf16;
  run_store<128, 128, bf>(dev, 512, 768, 1024, 3, true, 3, true);
  run_store<128, 128, bf>(dev, 300, 712, 200, 2, true, 2, true);
  run_store<128, 128, float>(dev, 300, 260, 64 * 7, 3, true, 0, true);
  run_store<128, 128, bf>(dev, 256, 256, 64, 3, true, 7, true);   // 4 tiles on 7 programs, one K block each
  run_store<128, 128, bf>(dev, 1000, 1800, 320, 4, true, 5, true);
}

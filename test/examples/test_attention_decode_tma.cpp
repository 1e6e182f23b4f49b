// The Hopper decode (examples/attention/flash_decode.hpp, FlashDecodeSplitTma):
// the interpreter (descriptor loads lowered to masked loads) against an f64
// reference on fresh random inputs, with NaN in every cache slot past a
// sequence's length; the shape of the generated sm_90a code (K and V in the TMA
// pipeline and read in place by wgmma, the tail's V by masked pointer loads)
// and NVRTC's register report; and, on a GPU, the library decode (which takes
// this kernel on compute capability 9.0) and the kernel's other configurations
// against f64, with poisoned outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "examples/attention/attention.hpp"
#include "examples/attention/flash_decode.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/codegen.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using examples::AttnShape;

namespace {

/// A decode problem: q [B, tokens, Hq, D], caches [B, Hkv, s_max, D] random in every slot below seqlens[b] and NaN
/// in every slot at or past it (none of which may reach the output), poisoned outputs (NaN O, 7 for lse). Token t
/// of sequence b sees keys [0, seqlens[b] − tokens + t].
template <class T>
struct DecodeProblem {
  std::vector<std::int32_t> lens;
  int B, Hq, Hkv, D, s_max, tokens;
  std::vector<T> q, k, v, o;
  std::vector<float> lse;
  DecodeProblem(std::vector<std::int32_t> lens_, int Hq_, int Hkv_, int D_, int s_max_, int tokens_ = 1)
      : lens(std::move(lens_)), B(static_cast<int>(lens.size())), Hq(Hq_), Hkv(Hkv_), D(D_), s_max(s_max_), tokens(tokens_) {
    const std::size_t nq = rows() * D, nkv = static_cast<std::size_t>(B) * Hkv * s_max * D;
    q = testing::random_tensor<T>(nq, 41);
    k = testing::random_tensor<T>(nkv, 42, -2, 2);
    v = testing::random_tensor<T>(nkv, 43, -2, 2);
    const T nan(std::numeric_limits<float>::quiet_NaN());
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < Hkv; ++h)
        for (int i = lens[static_cast<std::size_t>(b)]; i < s_max; ++i)
          for (int d = 0; d < D; ++d) {
            const std::size_t at = ((static_cast<std::size_t>(b) * Hkv + h) * s_max + i) * D + d;
            k[at] = nan, v[at] = nan;
          }
    poison();
  }
  std::size_t rows() const { return static_cast<std::size_t>(B) * tokens * Hq; }
  void poison() {
    o.resize(rows() * D);
    std::memset(static_cast<void*>(o.data()), 0xff, o.size() * sizeof(T));  // NaN in bf16 / f16
    lse.assign(rows(), 7.0f);
  }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(D)); }
  /// O and lse against f64; an empty cache gives O = 0 and lse = -1e30.
  void check() const {
    const int group = Hq / Hkv;
    std::vector<double> got_all, ref_all;
    for (int b = 0; b < B; ++b)
      for (int row = b * tokens * Hq; row < (b + 1) * tokens * Hq; ++row) {
        const int t = row / Hq % tokens, h = row % Hq;
        const int n = std::max(0, lens[static_cast<std::size_t>(b)] - tokens + t + 1), kvh = b * Hkv + h / group;  // keys seen
        std::vector<double> qd(static_cast<std::size_t>(D)), kd(static_cast<std::size_t>(n) * D), vd(kd.size()), got(qd.size());
        for (int d = 0; d < D; ++d) {
          qd[static_cast<std::size_t>(d)] = static_cast<float>(q[static_cast<std::size_t>(row) * D + d]);
          got[static_cast<std::size_t>(d)] = static_cast<float>(o[static_cast<std::size_t>(row) * D + d]);
        }
        for (std::size_t i = 0; i < kd.size(); ++i) {
          kd[i] = static_cast<float>(k[static_cast<std::size_t>(kvh) * s_max * D + i]);
          vd[i] = static_cast<float>(v[static_cast<std::size_t>(kvh) * s_max * D + i]);
        }
        const float l = lse[static_cast<std::size_t>(row)];
        CAPTURE(b);
        CAPTURE(t);
        CAPTURE(h);
        for (double g : got) REQUIRE(std::isfinite(g));  // written, and no NaN from past the cache's end
        if (n == 0) {
          for (double g : got) CHECK(g == 0.0);
          CHECK(l == -1e30f);
          continue;
        }
        const auto ref = testing::attention_ref(qd, kd, vd, 1, n, D, false, scale());
        got_all.insert(got_all.end(), got.begin(), got.end());
        ref_all.insert(ref_all.end(), ref.o.begin(), ref.o.end());
        CHECK(l == doctest::Approx(ref.lse[0]).epsilon(1e-3));
      }
    double worst = 0, big = 1e-30;
    for (std::size_t i = 0; i < ref_all.size(); ++i)
      worst = std::max(worst, std::fabs(got_all[i] - ref_all[i])), big = std::max(big, std::fabs(ref_all[i]));
    CHECK(worst / big < 2e-2);
    CHECK(testing::rel_error(got_all, ref_all) < 1e-2);
  }
};

/// FlashDecodeSplitTma (MULTI: several tokens) + FlashDecodeReduce launched directly (any device), `chunk` keys per split.
template <int BN, int D, class T, bool MULTI = true>
void run_kernels(const tj::Device& dev, DecodeProblem<T>& p, long long chunk, int stages, bool ws) {
  CAPTURE(D);
  CAPTURE(p.Hq);
  CAPTURE(p.Hkv);
  CAPTURE(chunk);
  CAPTURE(stages);
  CAPTURE(ws);
  CAPTURE(testing::fresh_seed());
  p.poison();
  CAPTURE(p.tokens);
  const long long splits = tj::cdiv(p.s_max, chunk), BHq = static_cast<long long>(p.rows());
  std::vector<float> o_part(static_cast<std::size_t>(splits * BHq * D), 3.0f), ml_part(static_cast<std::size_t>(splits * BHq * 2), 3.0f);
  {
    testing::Mirror m{dev, {}};
    auto *dq = m.up(p.q), *dk = m.up(p.k), *dv = m.up(p.v), *dout = m.up(p.o);
    auto *dl = m.up(p.lse), *dop = m.up(o_part), *dml = m.up(ml_part);
    auto* dlen = m.up(p.lens);
    const long long rows = static_cast<long long>(p.B) * p.Hkv * p.s_max;
    const tj::TensorDescriptor kd(dev, dk, tj::dtype_v<T>, {rows, D}, {D, 1}, {BN, D});
    const tj::TensorDescriptor vd(dev, dv, tj::dtype_v<T>, {rows, D}, {D, 1}, {BN, D});
    auto split = tj::compile<examples::FlashDecodeSplitTma<BN, D, T, 64, MULTI>>(dev, {.num_warps = 4, .num_stages = stages, .warp_specialize = ws});
    split.launch(tj::Grid{static_cast<long long>(p.B) * p.Hkv, splits}, dq, kd, vd, dv, dlen, dop, dml, p.Hq, p.Hq / p.Hkv, p.s_max,
                 chunk, p.tokens, static_cast<float>(p.scale() * 1.4426950408889634));
    auto reduce = tj::compile<examples::FlashDecodeReduce<D, T>>(dev, {.num_warps = 1});
    reduce.launch(tj::Grid{BHq}, dop, dml, dout, dl, splits);
    m.down();
  }
  p.check();
}

/// The library call on `dev` (k and v offset by `misalign` elements from 16-byte alignment: the pointer path).
template <class T>
void run_library(const tj::Device& dev, DecodeProblem<T>& p, long long chunk, int misalign = 0) {
  CAPTURE(p.D);
  CAPTURE(p.Hq);
  CAPTURE(p.Hkv);
  CAPTURE(chunk);
  CAPTURE(misalign);
  CAPTURE(p.tokens);
  CAPTURE(testing::fresh_seed());
  p.poison();
  const AttnShape s{.batch = p.B, .heads_q = p.Hq, .heads_kv = p.Hkv, .seqlen = 1, .head_dim = p.D};
  {
    testing::Mirror m{dev, {}};
    std::vector<T> k_pad(misalign), v_pad(misalign);
    k_pad.insert(k_pad.end(), p.k.begin(), p.k.end());
    v_pad.insert(v_pad.end(), p.v.begin(), p.v.end());
    auto *dq = m.up(p.q), *dk = m.up(k_pad), *dv = m.up(v_pad), *dout = m.up(p.o);
    auto* dl = m.up(p.lse);
    auto* dlen = m.up(p.lens);
    examples::Attention<T> attn(dev);
    attn.decode(dq, dk + misalign, dv + misalign, dlen, dout, dl, s, p.s_max, chunk, p.tokens);
    m.down();
  }
  p.check();
}

tj::codegen::Generated sm90(auto kernel, int stages, bool ws) {
  return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = 4, .num_stages = stages, .warp_specialize = ws});
}

using testing::compiles_for_sm90a;
using testing::has_diagnostic;
using testing::occurrences;

}  // namespace

TEST_CASE("attention_decode_tma_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  {  // Llama-3-8B-like GQA (group 4), D = 128: 3 splits of 128 keys, lengths not multiples of 64, an empty cache
    DecodeProblem<tj::bf16> p({300, 137, 0}, 8, 2, 128, 320);
    run_kernels<64, 128>(dev, p, 128, 3, false);
  }
  {  // Phi-3-mini-like MHA (group 1), D = 96 exact; 97 = one whole block + a 33-key tail; a cache of one key
    DecodeProblem<tj::bf16> p({97, 1}, 4, 4, 96, 128);
    run_kernels<64, 96>(dev, p, 128, 4, true);
    run_kernels<64, 96, tj::bf16, false>(dev, p, 128, 4, true);  // one token (what the library runs for it): one tail step
  }
  {  // f16, D = 64, a chunk that is not a multiple of the block (every split has a tail), the full cache
    DecodeProblem<tj::f16> p({200}, 4, 1, 64, 200);
    run_kernels<64, 64>(dev, p, 96, 2, false);
  }
  {  // 16 tokens at group 4 (all 64 rows): the tail spans two blocks (130 = 2·64 + 2 keys past the first token's
     // last whole block); a cache shorter than the tokens (positions below 0 see nothing); NaN past each length
    DecodeProblem<tj::bf16> p({130, 9, 64}, 8, 2, 128, 192, 16);
    run_kernels<64, 128>(dev, p, 192, 3, true);
  }
  {  // 3 tokens, group 1, splits of 64 keys: the tokens' keys straddle a split boundary
    DecodeProblem<tj::f16> p({129, 66}, 2, 2, 64, 192, 3);
    run_kernels<64, 64>(dev, p, 64, 2, false);
  }
}

TEST_CASE("attention_decode_tma_sm90a_code_streams_the_cache_through_tma_into_wgmma") {
  for (int hd : {96, 128}) {
    CAPTURE(hd);
    const auto g = hd == 96 ? sm90(examples::FlashDecodeSplitTma<64, 96, tj::bf16>{}, 4, true)
                            : sm90(examples::FlashDecodeSplitTma<64, 128, tj::bf16>{}, 4, true);
    const std::string& src = g.source;
    CAPTURE(g.diagnostics);
    CHECK(g.tma_params == std::vector<int>{1, 2});                                      // k_desc, v_desc
    // K and V of each step: 64 rows of 192 bytes (three 64-byte slabs) or 256 bytes each, exactly.
    CHECK(has_diagnostic(g, fmt::format("TMA pipeline of 4 stage(s) x {} bytes (2 block(s))", 2 * 64 * hd * 2)));
    CHECK(has_diagnostic(g, "warp specialised: 4 consumer warp(s)"));
    CHECK(occurrences(src, "copied once by TMA") == 2);  // the two tail steps' K blocks
    // In the loop: S = Q·Kᵀ with Q in registers and K read in place; O += P·V with P in registers and V MN-major.
    CHECK(occurrences(src, "straight from TMA blocks (a registers, b K-major") == 3);  // the loop's and the tail's two
    CHECK(occurrences(src, "straight from TMA blocks (a registers, b MN-major") == 1);
    // The only staged products are the tail steps' P·V (their V rows are masked pointer loads), before the loop.
    CHECK(occurrences(src, "operands staged in shared memory") == 2);
    CHECK(occurrences(src, "through shared memory") == 2);
    const auto loop = src.find("tj_mbar_wait(tj_bar");  // the consumers' loop: wait for a stage
    REQUIRE(loop != std::string::npos);
    CHECK(src.find("operands staged in shared memory") < loop);
    CHECK(src.find("through shared memory") < loop);
    compiles_for_sm90a(src, "decode_tma.cu");
  }
  // One token (the library's kernel for it): one tail step, so one tail copy and one staged product.
  const auto one = sm90(examples::FlashDecodeSplitTma<64, 128, tj::bf16, 64, false>{}, 4, true);
  CHECK(occurrences(one.source, "copied once by TMA") == 1);
  CHECK(occurrences(one.source, "straight from TMA blocks (a registers, b K-major") == 2);
  CHECK(occurrences(one.source, "operands staged in shared memory") == 1);
}

TEST_CASE("attention_decode_tma_compiles_for_sm90a_without_spills") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping NVRTC: ", why);
    return;
  }
  auto ptxas = [](const tj::codegen::Generated& g, const char* what) {
    testing::compiles_for_sm90a_without_spills(g.source, std::string(what) + ".cu");
  };

  using examples::FlashDecodeSplitTma;
  using Cfg = examples::FlashDecodeTmaConfig;
  ptxas(sm90(FlashDecodeSplitTma<Cfg::block_n, 128, tj::bf16>{}, Cfg::stages, Cfg::warp_specialize), "decode_tma_d128_library");
  ptxas(sm90(FlashDecodeSplitTma<Cfg::block_n, 96, tj::bf16>{}, Cfg::stages, Cfg::warp_specialize), "decode_tma_d96_library");
  ptxas(sm90(FlashDecodeSplitTma<Cfg::block_n, 64, tj::f16>{}, Cfg::stages, Cfg::warp_specialize), "decode_tma_d64_library");
  ptxas(sm90(FlashDecodeSplitTma<64, 128, tj::bf16>{}, 2, false), "decode_tma_d128_s2");
  ptxas(sm90(FlashDecodeSplitTma<64, 128, tj::bf16>{}, 3, false), "decode_tma_d128_s3");
  ptxas(sm90(FlashDecodeSplitTma<64, 96, tj::bf16>{}, 3, false), "decode_tma_d96_s3");
  ptxas(sm90(FlashDecodeSplitTma<64, 128, tj::bf16>{}, 5, true), "decode_tma_d128_s5_ws");
  // Off Hopper the descriptor loads are masked loads: it compiles for sm_80 too.
  CHECK_NOTHROW(tj::compile_for_arch<FlashDecodeSplitTma<64, 128, tj::bf16>>("sm_80", {.num_warps = 4}));
}

TEST_CASE("attention_decode_tma_library_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  if (dev.compute_capability() != 90) MESSAGE("not compute capability 9.0: the library call takes the pointer kernel");
  // The library call: the TMA path on an H200 (automatic split and a fixed one), NaN past every cache's end.
  {
    DecodeProblem<tj::bf16> p({4096, 1000, 0, 77}, 32, 8, 128, 4096);  // Llama-3-8B heads
    run_library(dev, p, 0);
  }
  {
    DecodeProblem<tj::bf16> p({2049, 64, 3000}, 32, 32, 96, 3000);  // Phi-3-mini heads, the full cache in one sequence
    run_library(dev, p, 512);
  }
  {
    DecodeProblem<tj::f16> p({500, 1}, 8, 2, 64, 640);
    run_library(dev, p, 0);
  }
  {  // k and v not 16-byte aligned: the pointer kernel
    DecodeProblem<tj::bf16> p({300, 129}, 8, 2, 128, 320);
    run_library(dev, p, 0, 1);
  }
  {  // a few draft tokens: 4 at Llama-3-8B's group of 4, 16 at group 2 (64 rows), and on the pointer kernel
    DecodeProblem<tj::bf16> p({4096, 1000, 2, 77}, 32, 8, 128, 4096, 4);
    run_library(dev, p, 0);
    DecodeProblem<tj::bf16> p16({3000, 130}, 4, 2, 96, 3000, 16);
    run_library(dev, p16, 512);
    run_library(dev, p16, 0, 1);
  }
}

TEST_CASE("attention_decode_tma_configs_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() != 90) {
    MESSAGE("no compute capability 9.0 GPU: skipping");
    return;
  }
  // The kernel's configurations beside the library's (bench/attention_bench.cpp's BM_DecodeTma rows s3 and s5ws).
  DecodeProblem<tj::bf16> p({1000, 4096, 63}, 32, 8, 128, 4096);
  run_kernels<64, 128>(dev, p, 1024, 3, false);
  run_kernels<64, 128>(dev, p, 2048, 5, true);
  DecodeProblem<tj::bf16> p96({1000, 4096}, 8, 8, 96, 4096);
  run_kernels<64, 96>(dev, p96, 1000, 5, true);  // a chunk that is not a multiple of the block: a tail in every split
}

// 16-bit float tiles carried across a loop's back edge, read only as a dot's A operand (FlashAttention-3's
// P_{j-1}), live packed: two elements per 32-bit register (codegen plan_packed). Checked here:
// - the generated sm_90a text: the carry and the loop's result declared packed, the register-A wgmma taking the
//   words as they are, the next value packed from its f32 source by one cvt per pair;
// - a carry also read element-wise stays in f32 registers, and so does one read by mma.sync (sm_80) or MFMA
//   (gfx942), which would unpack every element;
// - every target compiles it (NVRTC sm_90a and sm_80, hiprtc gfx942), and the interpreter and the GPU (sm_90a's
//   wgmma) match a CPU reference on fresh random inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

/// FlashAttention-3's carry without the softmax: iteration j issues S_j = Q·K_jᵀ and O += P_{j-1}·V_{j-1}, where
/// P_j = bf16(S_j) (ELEMENTWISE: bf16(S_j + P_{j-1}), a carry read element-wise) and P_{-1} = 0; after the loop
/// O += P_last·V_last. O is [BM, D] f32; Q [BM, D], K and V [S, D] bf16; S a multiple of BN.
template <int BM, int BN, int D, bool ELEMENTWISE>
struct CarriedP {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Desc<bf, BN, D> v, tj::Ptr<float> o, tj::Size S) const {
    auto q_tile = q.load(0, 0);
    auto init = std::tuple{tj::zeros<float, BM, D>(), tj::zeros<bf, BM, BN>()};
    auto [acc, p_last] = tj::for_range(0, S, BN, init, [&](tj::Int n0, auto acc, auto p_prev) {
      auto s = tj::dot(q_tile, tj::trans(k.load(n0, 0)));
      auto o_prev = tj::dot(p_prev, v.load(tj::maximum(n0 - BN, 0), 0), acc);
      if constexpr (ELEMENTWISE)
        return std::tuple{o_prev, tj::cast<bf>(s + tj::cast<float>(p_prev))};
      else
        return std::tuple{o_prev, tj::cast<bf>(s)};
    });
    auto out = tj::dot(p_last, v.load(S - BN, 0), acc);
    auto offs = tj::expand_dims<1>(tj::arange<BM>()) * D + tj::expand_dims<0>(tj::arange<D>());
    tj::store(o + offs, out);
  }
};

constexpr int BM = 64, BN = 64, D = 64, S = 256;

float round_bf16(double x) { return static_cast<float>(bf(static_cast<float>(x))); }

/// O of CarriedP in f64 from the bf16 inputs (P rounded to bf16 as the kernel rounds it).
template <bool ELEMENTWISE>
std::vector<double> reference(const std::vector<bf>& q, const std::vector<bf>& k, const std::vector<bf>& v) {
  std::vector<double> o(BM * D, 0.0);
  std::vector<float> p(BM * BN, 0.f);
  for (int n0 = 0; n0 < S; n0 += BN) {
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < BN; ++j) {
        double s = 0;
        for (int d = 0; d < D; ++d) s += static_cast<double>(static_cast<float>(q[i * D + d])) * static_cast<float>(k[(n0 + j) * D + d]);
        p[i * BN + j] = round_bf16(ELEMENTWISE ? s + p[i * BN + j] : s);
      }
    for (int i = 0; i < BM; ++i)
      for (int d = 0; d < D; ++d)
        for (int j = 0; j < BN; ++j) o[i * D + d] += static_cast<double>(p[i * BN + j]) * static_cast<float>(v[(n0 + j) * D + d]);
  }
  return o;
}

/// Runs CarriedP on `dev` (options `opt`) on fresh random inputs, O poisoned first, and compares with the reference.
template <bool ELEMENTWISE>
void matches_reference(const tj::Device& dev, tj::CompileOptions opt) {
  auto q = testing::random_tensor<bf>(BM * D, 71), k = testing::random_tensor<bf>(S * D, 72), v = testing::random_tensor<bf>(S * D, 73);
  std::vector<float> o(BM * D, std::nanf(""));
  auto *dq = testing::on_device(dev, q), *dk = testing::on_device(dev, k), *dv = testing::on_device(dev, v);
  auto* d_o = testing::on_device(dev, o);
  {
    const tj::TensorDescriptor tq(dev, dq, tj::DType::bf16, {BM, D}, {D, 1}, {BM, D});
    const tj::TensorDescriptor tk(dev, dk, tj::DType::bf16, {S, D}, {D, 1}, {BN, D});
    const tj::TensorDescriptor tv(dev, dv, tj::DType::bf16, {S, D}, {D, 1}, {BN, D});
    tj::compile<CarriedP<BM, BN, D, ELEMENTWISE>>(dev, opt).launch(tj::Grid{1}, tq, tk, tv, d_o, S);
  }
  if (dev.backend() != tj::Backend::interpreter) {
    dev.synchronize();
    dev.copy_to_host(o.data(), d_o, o.size() * sizeof(float));
    dev.free(dq), dev.free(dk), dev.free(dv), dev.free(d_o);
  }
  const auto ref = reference<ELEMENTWISE>(q, k, v);
  int unwritten = 0;
  for (float x : o) unwritten += std::isnan(x);
  CHECK(unwritten == 0);
  CHECK(testing::rel_error(o, ref) < 5e-3);
}

tj::codegen::Generated gen(auto kernel, const char* arch) {
  return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for(arch), {.num_warps = 4, .num_stages = 2});
}

}  // namespace

TEST_CASE("packed_carry_sm90a_text") {
  const auto g = gen(CarriedP<BM, BN, D, false>{}, "sm_90a");
  const std::string& src = g.source;
  // The carry and the loop's result: 64 × 64 bf16 over 128 threads is 32 elements, 16 words per thread.
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(unsigned v(\d+)\[16\];  // bf16 packed in pairs)")));
  const std::string carry = m[1];
  const std::string rest = m.suffix();
  REQUIRE(std::regex_search(rest, m, std::regex(R"(unsigned v(\d+)\[16\];  // bf16 packed in pairs)")));
  const std::string result = m[1];
  // The register-A wgmma of the loop and the one after it read the words as they are (no pack of unpacked halves).
  CHECK(std::regex_search(src, std::regex("tj_pa\\d+\\[0\\]\\[0\\] = v" + carry + "\\[0\\]; tj_pa\\d+\\[0\\]\\[1\\] = v" + carry + "\\[1\\];")));
  CHECK(std::regex_search(src, std::regex("tj_pa\\d+\\[0\\]\\[0\\] = v" + result + "\\[0\\];")));
  CHECK(src.find("tj_bf16x2_lo(v") == std::string::npos);  // nothing unpacks
  // The next value: one cvt.rn.bf16x2 per pair of S's f32 registers, into a packed temporary copied at the loop's end.
  CHECK(std::regex_search(src, std::regex("unsigned y" + carry + "\\[16\\];\\n  y" + carry + "\\[0\\] = tj_pack_bf16x2\\(v\\d+\\[0\\], v\\d+\\[1\\]\\);")));
  CHECK(src.find("v" + carry + "[15] = y" + carry + "[15];") != std::string::npos);
  testing::compiles_for_sm90a_without_spills(src, "packed_carry.cu");
}

TEST_CASE("packed_carry_read_elementwise_stays_f32") {
  // The carry is read by an add: 32 f32 registers. The loop's result, read by the last dot only, is still packed
  // (from those registers).
  const auto g = gen(CarriedP<BM, BN, D, true>{}, "sm_90a");
  const std::string& src = g.source;
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(unsigned v(\d+)\[16\];  // bf16 packed in pairs\n  v\d+\[0\] = tj_pack_bf16x2\(v(\d+)\[0\], v\d+\[1\]\);)")));
  CHECK(std::string(m.suffix()).find("packed in pairs") == std::string::npos);
  CHECK(src.find("float v" + m[2].str() + "[32];") != std::string::npos);
  CHECK(src.find("tj_bf16x2_lo(v") == std::string::npos);
  testing::compiles_for_sm90a(src, "packed_carry_elementwise.cu");
}

TEST_CASE("packed_carry_compiles_for_every_target") {
  for (const char* arch : {"sm_80", "sm_90a", "gfx942"}) {
    CAPTURE(arch);
    auto t = tj::codegen::target_for(arch);
    const auto c = t.dialect == tj::codegen::Dialect::cuda ? tj::runtime::Compiler::nvrtc : tj::runtime::Compiler::hiprtc;
    std::string why;
    if (!tj::runtime::compiler_available(c, &why)) {
      MESSAGE("skipping ", arch, ": ", why);
      continue;
    }
    const auto r = tj::compile_for_arch<CarriedP<BM, BN, D, false>>(arch, {.num_warps = 4, .num_stages = 2});
    CHECK(!r.binary.bytes.empty());
    const bool wgmma = std::string(arch) == "sm_90a";
    CHECK((gen(CarriedP<BM, BN, D, false>{}, arch).source.find("packed in pairs") != std::string::npos) == wgmma);
  }
}

TEST_CASE("packed_carry_interpreter_matches_reference") {
  matches_reference<false>(tj::Device::interpreter(), {.num_warps = 4});
  matches_reference<true>(tj::Device::interpreter(), {.num_warps = 4});
}

TEST_CASE("packed_carry_gpu_matches_reference") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  // sm_90a (the runtime runs only the device's own architecture: mma.sync's text, which packs nothing, is
  // compiled above).
  matches_reference<false>(dev, {.num_warps = 4, .num_stages = 2});
  matches_reference<true>(dev, {.num_warps = 4, .num_stages = 2});
}

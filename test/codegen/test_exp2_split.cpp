// tj::exp2_split(x, k): 2^x with one register in k of each thread on the FMA pipe (a Cody–Waite split and a degree-3
// minimax polynomial, prelude's tj_exp2_fma) and the others on the SFU (tj_exp2). Checked: the generated code calls
// the FMA form for exactly one register in k and compiles for sm_90a, sm_80 and gfx942; on the interpreter, on the
// generated HIP text run on the CPU (wave32 and wave64) and on the GPU, every element is 2^x within 1e-4 relative
// for x in [-125, 127), and the edges match exp2's: x <= -127 and -inf give 0, NaN gives NaN, x >= 128 and +inf
// give +inf; k = 1 (every register on the FMA pipe) also gives +inf from x >= 127.5 on (not the interpreter, which
// computes 2^x in double); a negative k throws while tracing.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

constexpr int kLen = 1024;

/// y[i] = exp2_split(x[i], K) over one [1024] tile.
template <int K>
struct Exp2Split {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto o = tj::arange<kLen>();
    tj::store(y + o, tj::exp2_split(tj::load(x + o), K));
  }
};

/// The same split on a dot accumulator (mma / wgmma layouts: many registers a thread, in pairs of columns).
struct Exp2SplitDot {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto r = tj::expand_dims<1>(tj::arange<64>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    auto k = tj::arange<16>();
    auto a = tj::cast<tj::bf16>(tj::load(x + r * 16 + tj::expand_dims<0>(k)));
    auto b = tj::cast<tj::bf16>(tj::load(x + 1024 + tj::expand_dims<1>(k) * 64 + c));
    tj::store(y + r * 64 + c, tj::exp2_split(tj::dot(a, b), 4));
  }
};

const float kInf = std::numeric_limits<float>::infinity();

/// The edge values first, then random exponents in [-40, 10) (an online softmax's are in [-inf, 8]).
std::vector<float> input(unsigned salt) {
  std::vector<float> x = testing::random_floats(kLen, -40, 10, salt);
  const float edges[] = {-kInf, -1e30f, -300.0f, -127.5f, -127.0f, -126.6f, -125.0f, -100.25f, -1.0f, -0.5f, -0.0f, 0.0f,
                         0.49f, 0.5f, 0.51f, 1.0f, 8.0f, 100.7f, 126.9f, 128.0f, 200.0f, kInf, std::nanf("")};
  for (std::size_t i = 0; i < std::size(edges); ++i) x[i] = edges[i];
  x[100] = 127.2f;  // [127, 127.5): finite on both pipes
  x[101] = 127.7f;  // [127.5, 128): +inf on the FMA pipe, finite on the SFU: only where k = 1
  return x;
}

/// Every element of y against 2^x (see the file comment); all_fma: every register took the FMA form.
void check(const std::vector<float>& x, const std::vector<float>& y, bool all_fma) {
  REQUIRE(y.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float v = x[i], got = y[i];
    CAPTURE(i);
    CAPTURE(v);
    CAPTURE(got);
    if (std::isnan(v)) {
      CHECK(std::isnan(got));
    } else if (v >= 128.0f) {
      CHECK(got == kInf);
    } else if (v >= 127.5f) {
      if (all_fma) CHECK(got == kInf);
      else CHECK((got == kInf || std::abs(got - std::exp2(static_cast<double>(v))) <= 1e-4 * std::exp2(static_cast<double>(v))));
    } else if (v <= -127.0f) {
      CHECK(got >= 0.0f);
      CHECK(got <= std::ldexp(1.0f, -126));  // 0 on the FMA pipe and ex2.approx.ftz; exp2f's subnormal elsewhere
    } else if (v < -125.0f) {
      CHECK(got >= 0.0f);
      CHECK(std::abs(got - std::exp2(static_cast<double>(v))) <= std::ldexp(1.0, -126));  // flushed or subnormal
    } else {
      const double want = std::exp2(static_cast<double>(v));
      CHECK(std::abs(got - want) <= 1e-4 * want);
    }
  }
}

/// fma_form: the target runs tj_exp2_fma (not the interpreter, which computes 2^x in double).
template <class Run>
void check_all(const Run& on, unsigned salt, bool fma_form = true) {
  CAPTURE(testing::fresh_seed());
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    const auto x = input(salt + static_cast<unsigned>(nw));
    const auto y1 = on.template run<Exp2Split<1>>(x, nw);
    if (y1.empty()) return;  // no host compiler for the emulator
    check(x, y1, fma_form);
    check(x, on.template run<Exp2Split<4>>(x, nw), false);
    check(x, on.template run<Exp2Split<3>>(x, nw), false);
  }
}

/// How many times the kernel's body (past the prelude's definitions) calls `fn(`.
int calls(const std::string& src, const std::string& fn) {
  const std::size_t body = src.rfind("__global__");
  int n = 0;
  for (std::size_t p = src.find(fn + "(", body); p != std::string::npos; p = src.find(fn + "(", p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("exp2_split_puts_one_register_in_k_on_the_fma_pipe_and_compiles_everywhere") {
  auto gen = [](const auto& kernel, const char* arch, int nw) {
    return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for(arch), {.num_warps = nw}).source;
  };
  for (const char* arch : {"sm_90a", "sm_80", "gfx942"}) {
    CAPTURE(arch);
    const int lanes = std::string(arch) == "gfx942" ? 64 : 32;
    const int regs = kLen / (4 * lanes);  // registers a thread holds at 4 warps
    for (int k : {1, 3, 4}) {
      CAPTURE(k);
      const std::string src = k == 1 ? gen(Exp2Split<1>{}, arch, 4) : k == 3 ? gen(Exp2Split<3>{}, arch, 4) : gen(Exp2Split<4>{}, arch, 4);
      CHECK(calls(src, "tj_exp2_fma") == regs / k);
      CHECK(calls(src, "tj_exp2") == regs - regs / k);
    }
    const std::string plain = gen(Exp2Split<0>{}, arch, 4), dot = gen(Exp2SplitDot{}, arch, 4);
    CHECK(calls(plain, "tj_exp2_fma") == 0);
    CHECK(calls(plain, "tj_exp2") == regs);
    const int dot_regs = 64 * 64 / (4 * lanes);
    CHECK(calls(dot, "tj_exp2_fma") == dot_regs / 4);
    CHECK(calls(dot, "tj_exp2") == dot_regs - dot_regs / 4);
    if (std::string(arch) != "gfx942") {
      testing::compiles_for(gen(Exp2Split<4>{}, arch, 4), arch, "Exp2Split4");
      testing::compiles_for(dot, arch, "Exp2SplitDot");
    } else {
      testing::compiles_for_gfx942(gen(Exp2Split<4>{}, arch, 4), "Exp2Split4");
      testing::compiles_for_gfx942(dot, "Exp2SplitDot");
    }
  }
  CHECK(tj::ir::print(tj::trace(Exp2Split<4>{})).find(" split=4") != std::string::npos);
  CHECK(tj::ir::print(tj::trace(Exp2Split<0>{})).find("split=") == std::string::npos);
  // In a combine's scalar code too (where only k = 1 reaches the FMA form: every value is register 0).
  struct InScan {
    void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
      auto o = tj::arange<64>();
      tj::store(y + o, tj::associative_scan<0>(tj::load(x + o), [](auto a, auto b) {
                  return tj::log2(tj::exp2_split(a, 1) + tj::exp2_split(b, 1));
                }));
    }
  };
  const std::string scan_ir = tj::ir::print(tj::trace(InScan{}));
  REQUIRE(scan_ir.find("combine 0") != std::string::npos);
  CHECK(scan_ir.find(" split=1", scan_ir.find("combine 0")) != std::string::npos);
  // The combine function sits before the kernel: count over the whole text, against the prelude's own mentions.
  auto all_calls = [](const std::string& src) {
    int n = 0;
    for (std::size_t p = src.find("tj_exp2_fma("); p != std::string::npos; p = src.find("tj_exp2_fma(", p + 1)) ++n;
    return n;
  };
  CHECK(all_calls(gen(InScan{}, "sm_90a", 4)) == all_calls(gen(Exp2Split<0>{}, "sm_90a", 4)) + 2);
}

TEST_CASE("exp2_split_refuses_a_negative_k") {
  struct Negative {
    void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
      auto o = tj::arange<32>();
      tj::store(y + o, tj::exp2_split(tj::load(x + o), -2));
    }
  };
  CHECK_THROWS_WITH_AS(tj::trace(Negative{}), doctest::Contains("every = -2 is negative"), tj::InvalidArgument);
}

TEST_CASE("exp2_split_interpreter_matches_exp2") { check_all(testing::OnDevice{tj::Device::interpreter()}, 1210, false); }

TEST_CASE("exp2_split_generated_code_runs_on_the_host_emulator") {
  check_all(testing::OnHost{"gfx1100"}, 1220);  // wave32
  check_all(testing::OnHost{"gfx942"}, 1230);   // wave64
}

TEST_CASE("exp2_split_gpu_matches_exp2") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_all(testing::OnDevice{dev}, 1240);
}

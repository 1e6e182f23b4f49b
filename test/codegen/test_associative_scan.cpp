// tj::associative_scan and tj::reduce: scans and reductions with a user's operator (Triton's tl.associative_scan
// and tl.reduce on one tile). The operators are
// chosen to catch the ways a lowering can go wrong: "first" and forward fill are not commutative (an operand order
// swapped anywhere shows), the magnitude pick breaks ties toward the earlier operand, "a + b + 1" reads a literal,
// and the f16 one casts inside the combine. Checked: the interpreter, the generated HIP text run on the host
// emulator (wave32 and wave64) and the GPU match a sequential CPU reference on fresh random inputs, in 1-D and 2-D
// layouts across registers, lanes and warps (96 = 32·3 and 12 warps: radix-3 digits); the code compiles for sm_90a,
// sm_80 and gfx942; a combine that reads a value from outside it, or makes a tile, is refused with the rule.
// Reductions take commutative operators (a + b + 1, f16 max) along either axis, over lanes and warps.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

enum class C { first, fill, magnitude, plus_one, f16_max, at_least };

/// The operator: a the earlier operand, b the later.
template <C Op>
struct Combine {
  template <class A>
  A operator()(A a, A b) const {
    if constexpr (Op == C::first) return a;
    else if constexpr (Op == C::fill) return tj::where(b != 0, b, a);  // the last non-zero value so far
    else if constexpr (Op == C::magnitude) return tj::where(tj::abs(b) > tj::abs(a), b, a);
    else if constexpr (Op == C::plus_one) return a + b + 1;
    else return tj::cast<tj::f16>(tj::maximum(tj::cast<float>(a), tj::cast<float>(b)));
  }
};

/// The operator a kernel passes, made while it is traced: C::at_least, max(a, b, 0.25), reads a literal made
/// outside the combine (copied into it).
template <C Op, class T>
auto combine_for() {
  if constexpr (Op == C::at_least) {
    auto floor = tj::scalar<T>(0.25);
    return [floor](auto a, auto b) { return tj::maximum(tj::maximum(a, b), floor); };
  } else {
    return Combine<Op>{};
  }
}

/// y[M, N] = associative_scan of x[M, N] along Axis with Combine<Op> (M = 1: a 1-D tile of N).
template <class T, int M, int N, int Axis, C Op, bool Rev>
struct AScan {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    if constexpr (M == 1) {
      auto o = tj::arange<N>();
      tj::store(y + o, tj::associative_scan<0, Rev>(tj::load(x + o), combine_for<Op, T>()));
    } else {
      auto o = tj::expand_dims<1>(tj::arange<M>()) * N + tj::expand_dims<0>(tj::arange<N>());
      tj::store(y + o, tj::associative_scan<Axis, Rev>(tj::load(x + o), combine_for<Op, T>()));
    }
  }
};

double as_double(float v) { return v; }
double as_double(std::int32_t v) { return v; }
double as_double(tj::f16 v) { return static_cast<float>(v); }

/// The operator on the host, in the order the scan applies it.
template <C Op>
double host_combine(double a, double b) {
  if constexpr (Op == C::first) return a;
  else if constexpr (Op == C::fill) return b != 0 ? b : a;
  else if constexpr (Op == C::magnitude) return std::abs(b) > std::abs(a) ? b : a;
  else if constexpr (Op == C::plus_one) return a + b + 1;
  else if constexpr (Op == C::at_least) return std::max({a, b, 0.25});
  else return std::max(a, b);
}

template <class T, int M, int N, int Axis, C Op, bool Rev, class Runner>
void check(const Runner& on, std::initializer_list<int> warps, unsigned salt) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(Axis);
  CAPTURE(static_cast<int>(Op));
  CAPTURE(Rev);
  CAPTURE(testing::fresh_seed());
  std::vector<T> x;
  for (float f : testing::random_floats(static_cast<std::size_t>(M) * N, -1, 1, salt)) {
    const bool zero = Op == C::fill && std::abs(f) < 0.7f;  // forward fill: most elements are 0
    if constexpr (std::is_integral_v<T>) x.push_back(zero ? 0 : static_cast<T>(std::lround(f * 1000)));
    else x.push_back(static_cast<T>(zero ? 0.0f : f));
  }
  const int axis = M == 1 ? 1 : Axis, len = axis == 1 ? N : M, lines = axis == 1 ? M : N;
  std::vector<double> want(x.size());
  for (int o = 0; o < lines; ++o) {
    double acc = 0;
    for (int jj = 0; jj < len; ++jj) {
      const int j = Rev ? len - 1 - jj : jj;
      const std::size_t e = static_cast<std::size_t>(axis == 1 ? o * N + j : j * N + o);
      const double v = as_double(x[e]);
      acc = jj == 0 ? v : Rev ? host_combine<Op>(v, acc) : host_combine<Op>(acc, v);
      want[e] = acc;
    }
  }
  for (int nw : warps) {
    CAPTURE(nw);
    const auto y = on.template run<AScan<T, M, N, Axis, Op, Rev>>(x, nw);
    if (y.empty()) return;  // (no host clang)
    int wrong = 0;
    for (std::size_t e = 0; e < want.size(); ++e)
      if (as_double(y[e]) != want[e] && wrong++ < 4) MESSAGE("element ", e, ": got ", as_double(y[e]), ", want ", want[e]);
    CHECK(wrong == 0);
  }
}

/// Every operator here is exact (it picks an operand, or adds integers), so results must equal the reference.
template <class Runner>
void check_all(const Runner& on, unsigned salt) {
  check<float, 1, 128, 0, C::first, false>(on, {1, 4}, salt + 1);
  check<float, 1, 128, 0, C::first, true>(on, {1, 4}, salt + 2);
  check<float, 1, 1024, 0, C::fill, false>(on, {1, 4, 8}, salt + 3);
  check<float, 1, 96, 0, C::fill, true>(on, {1, 4}, salt + 4);           // 96 = 32·3: a radix-3 register digit
  check<float, 1, 384, 0, C::magnitude, false>(on, {12}, salt + 5);      // a radix-3 warp digit
  check<std::int32_t, 16, 96, 1, C::plus_one, false>(on, {1, 4, 8}, salt + 6);
  check<std::int32_t, 64, 32, 0, C::fill, true>(on, {4, 8}, salt + 7);   // along the dim the warps split
  check<float, 96, 16, 0, C::magnitude, true>(on, {4, 12}, salt + 8);
  check<tj::f16, 1, 256, 0, C::f16_max, false>(on, {4}, salt + 9);
  check<float, 32, 96, 1, C::at_least, true>(on, {4}, salt + 10);       // a literal made outside the combine
}

/// y[lines] = tj::reduce of x[M, N] along Axis with Combine<Op> (M = 1: y[1] from a 1-D tile).
template <class T, int M, int N, int Axis, C Op>
struct AReduce {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    if constexpr (M == 1) {
      tj::store(y, tj::reduce<0>(tj::load(x + tj::arange<N>()), combine_for<Op, T>()));
    } else {
      auto v = tj::load(x + tj::expand_dims<1>(tj::arange<M>()) * N + tj::expand_dims<0>(tj::arange<N>()));
      tj::store(y + tj::arange<Axis == 1 ? M : N>(), tj::reduce<Axis>(v, combine_for<Op, T>()));
    }
  }
};

template <class T, int M, int N, int Axis, C Op, class Runner>
void check_reduce(const Runner& on, std::initializer_list<int> warps, unsigned salt) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(Axis);
  CAPTURE(static_cast<int>(Op));
  CAPTURE(testing::fresh_seed());
  std::vector<T> x;
  for (float f : testing::random_floats(static_cast<std::size_t>(M) * N, -1, 1, salt)) {
    if constexpr (std::is_integral_v<T>) x.push_back(static_cast<T>(std::lround(f * 1000)));
    else x.push_back(static_cast<T>(f));
  }
  const int axis = M == 1 ? 1 : Axis, len = axis == 1 ? N : M, lines = axis == 1 ? M : N;
  std::vector<double> want(static_cast<std::size_t>(lines));
  for (int o = 0; o < lines; ++o) {
    double acc = 0;
    for (int j = 0; j < len; ++j) {
      const double v = as_double(x[static_cast<std::size_t>(axis == 1 ? o * N + j : j * N + o)]);
      acc = j == 0 ? v : host_combine<Op>(acc, v);
    }
    want[static_cast<std::size_t>(o)] = acc;
  }
  for (int nw : warps) {
    CAPTURE(nw);
    auto y = on.template run<AReduce<T, M, N, Axis, Op>>(x, nw);  // (x's size: only the first `lines` are written)
    if (y.empty()) return;
    for (int o = 0; o < lines; ++o) CHECK(as_double(y[static_cast<std::size_t>(o)]) == want[static_cast<std::size_t>(o)]);
  }
}

/// Commutative operators only (tj::reduce's rule): exact, so results must equal the reference.
template <class Runner>
void check_reduce_all(const Runner& on, unsigned salt) {
  check_reduce<std::int32_t, 1, 1024, 0, C::plus_one>(on, {1, 4, 8}, salt + 1);
  check_reduce<std::int32_t, 16, 96, 1, C::plus_one>(on, {1, 4}, salt + 2);
  check_reduce<std::int32_t, 96, 16, 0, C::plus_one>(on, {4, 12}, salt + 3);  // across a radix-3 warp digit
  check_reduce<tj::f16, 64, 32, 0, C::f16_max>(on, {4, 8}, salt + 4);
  check_reduce<tj::f16, 1, 384, 0, C::f16_max>(on, {12}, salt + 5);
  check_reduce<float, 64, 32, 0, C::at_least>(on, {4}, salt + 6);
}

/// A combine that reads a tile traced outside it.
struct Captures {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto o = tj::arange<32>();
    auto v = tj::load(x + o);
    auto outside = tj::sum<0>(v);  // a scalar of the kernel, not of the combine
    tj::store(y + o, tj::associative_scan<0>(v, [&](auto a, auto b) { return a + b + outside; }));
  }
};

/// A combine that reads a scalar kernel argument.
struct CapturesAnArgument {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Scalar<float> s) const {
    auto o = tj::arange<32>();
    tj::store(y + o, tj::associative_scan<0>(tj::load(x + o), [&](auto a, auto b) { return a + b * s; }));
  }
};

/// A combine that reduces a tile traced outside it.
struct ReducesAnOutsideTile {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto o = tj::arange<32>();
    auto v = tj::load(x + o);
    tj::store(y + o, tj::associative_scan<0>(v, [&](auto a, auto b) { return a + b + tj::sum<0>(v); }));
  }
};

/// A combine that makes a tile.
struct MakesATile {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto o = tj::arange<32>();
    tj::store(y + o, tj::associative_scan<0>(tj::load(x + o), [](auto a, auto b) {
      return a + b + tj::cast<float>(tj::sum<0>(tj::arange<4>()));
    }));
  }
};

}  // namespace

TEST_CASE("associative_scan_compiles_everywhere") {
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    auto both = [&](const tj::ir::Kernel& k) {
      for (const char* arch : {"sm_90a", "sm_80"}) {
        const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw});
        CHECK(g.source.find("tj_comb0(") != std::string::npos);
        testing::compiles_for(g.source, arch, k.name);
      }
      testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
    };
    both(tj::trace(AScan<float, 1, 1024, 0, C::fill, true>{}));
    both(tj::trace(AScan<std::int32_t, 16, 96, 1, C::plus_one, false>{}));
    both(tj::trace(AScan<tj::f16, 1, 256, 0, C::f16_max, false>{}));
    both(tj::trace(AScan<float, 96, 16, 0, C::magnitude, true>{}));
    both(tj::trace(AReduce<std::int32_t, 96, 16, 0, C::plus_one>{}));
    both(tj::trace(AReduce<tj::f16, 1, 384, 0, C::f16_max>{}));
  }
}

TEST_CASE("associative_scan_ir_holds_the_combine") {
  const auto k = tj::trace(AScan<float, 1, 128, 0, C::fill, false>{});
  REQUIRE(k.combines.size() == 1);
  const std::string p = tj::ir::print(k);
  CHECK(p.find("scan_custom f32[128]") != std::string::npos);
  CHECK(p.find("combine=0") != std::string::npos);
  CHECK(p.find("combine 0 -> %") != std::string::npos);
  CHECK(p.find("combine_arg f32 #1") != std::string::npos);
  CHECK(p.find("= where f32") != std::string::npos);
  // The generated operator: a device function of the two operands.
  const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  CHECK(g.source.find("tj_comb0(float c0, float c1)") != std::string::npos);
}

TEST_CASE("associative_scan_refuses_combines_that_reach_outside_or_make_tiles") {
  CHECK_THROWS_WITH_AS(tj::trace(Captures{}), doctest::Contains("its combine (its add f32) reads a f32 reduce_sum computed before the combine"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(CapturesAnArgument{}), doctest::Contains("its combine (its mul f32) reads kernel argument arg2 (the kernel's parameter 2, from 0)"),
                       tj::InvalidArgument);
  // An outside tile reduced inside the combine is named as the outside value it is.
  CHECK_THROWS_WITH_AS(tj::trace(ReducesAnOutsideTile{}), doctest::Contains("(its reduce_sum f32) reads a f32[32] load computed before"),
                       tj::InvalidArgument);
  // A literal made outside is copied in: the combine holds it as a constant of its own.
  const auto lit = tj::trace(AScan<float, 1, 32, 0, C::at_least, false>{});
  REQUIRE(lit.combines.size() == 1);
  int constants = 0;
  for (const auto& n : lit.combines[0].nodes) constants += n.op == tj::ir::Op::constant && n.f == 0.25;
  CHECK(constants == 1);
  CHECK_THROWS_WITH_AS(tj::trace(MakesATile{}), doctest::Contains("may only compute on scalars"), tj::Unsupported);
  // A failed trace leaves this thread's tracing state as it was: the next trace works.
  CHECK(tj::trace(AScan<float, 1, 32, 0, C::first, false>{}).combines.size() == 1);
  // tj::reduce names itself in the same messages.
  struct ReduceCaptures {
    void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
      auto v = tj::load(x + tj::arange<32>());
      auto outside = tj::sum<0>(v);
      tj::store(y, tj::reduce<0>(v, [&](auto a, auto b) { return a + b + outside; }));
    }
  };
  CHECK_THROWS_WITH_AS(tj::trace(ReduceCaptures{}), doctest::Contains("reduce: its combine (its add f32) reads"), tj::InvalidArgument);
  CHECK(tj::ir::print(tj::trace(AReduce<std::int32_t, 16, 96, 1, C::plus_one>{})).find("reduce_custom i32[16]") != std::string::npos);
}

TEST_CASE("associative_scan_interpreter_matches_cpu") {
  check_all(testing::OnDevice{tj::Device::interpreter()}, 700);
  check_reduce_all(testing::OnDevice{tj::Device::interpreter()}, 750);
}

TEST_CASE("associative_scan_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_all(testing::OnDevice{dev}, 800);
  check_reduce_all(testing::OnDevice{dev}, 850);
}

TEST_CASE("associative_scan_generated_code_runs_on_the_host_emulator") {
  check_all(testing::OnHost{"gfx1100"}, 900);
  check_all(testing::OnHost{"gfx942"}, 1000);
  check_reduce_all(testing::OnHost{"gfx1100"}, 950);
  check_reduce_all(testing::OnHost{"gfx942"}, 1050);
}

// for_range: tracing, the interpreter against C++, NVRTC/HIP compiles, misuse.
#include <doctest/doctest.h>

#include <optional>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "test/common/host_emulator.hpp"
#include "test/common/loop_kernels.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {
/// out[i] = sum over s in [0, n) by `step` of (i + s): a step known only at run time.
/// Stores the loop's induction variable after the loop: refused while tracing.
struct LeaksInductionVariable {
  void operator()(tj::Ptr<std::int32_t> out, tj::Size n) const {
    std::optional<tj::Int> iv;
    tj::for_range(0, n, 1, [&](tj::Int i) { iv.emplace(i); });
    tj::store(out, *iv);
  }
};

struct RuntimeStep {
  void operator()(tj::Ptr<float> out, tj::Size n, tj::Int step) const {
    auto i = tj::arange<32>();
    auto acc = tj::for_range(0, n, step, tj::zeros<float, 32>(), [&](tj::Int s, auto acc) { return acc + tj::cast<float>(i + s); });
    tj::store(out + i, acc);
  }
};
/// The same with a constant step.
template <int STEP>
struct ConstantStep {
  void operator()(tj::Ptr<float> out, tj::Size n) const {
    auto i = tj::arange<32>();
    auto acc = tj::for_range(0, n, STEP, tj::zeros<float, 32>(), [&](tj::Int s, auto acc) { return acc + tj::cast<float>(i + s); });
    tj::store(out + i, acc);
  }
};

void row_stats_ref(const std::vector<float>& x, int rows, int cols, std::vector<double>& m, std::vector<double>& l) {
  m.assign(static_cast<std::size_t>(rows), -1e30);
  l.assign(static_cast<std::size_t>(rows), 0);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) m[r] = std::max(m[r], static_cast<double>(x[static_cast<std::size_t>(r) * cols + c]));
    for (int c = 0; c < cols; ++c) l[r] += std::exp(x[static_cast<std::size_t>(r) * cols + c] - m[r]);
  }
}
}  // namespace

TEST_CASE("loops_trace_into_structured_ir") {
  auto k = tj::trace(testing::RowStatsLoop<4, 96>{});
  int begins = 0, carries = 0, yields = 0, ends = 0, results = 0;
  for (const auto& n : k.nodes) {
    begins += n.op == tj::ir::Op::loop_begin;
    carries += n.op == tj::ir::Op::loop_carry;
    yields += n.op == tj::ir::Op::loop_yield;
    ends += n.op == tj::ir::Op::loop_end;
    results += n.op == tj::ir::Op::loop_result;
  }
  CHECK(begins == 1);
  CHECK(carries == 3);
  CHECK(yields == 3);
  CHECK(ends == 1);
  CHECK(results == 3);
  CHECK_NOTHROW(tj::ir::verify(k));
}

TEST_CASE("loops_interpreter_online_row_stats") {
  const int rows = 10, cols = 250;  // 250 is not a multiple of the 96-wide chunk: a masked tail
  CAPTURE(testing::fresh_seed());
  auto x = testing::random_floats(static_cast<std::size_t>(rows) * cols, -5, 5, 3);
  std::vector<float> out(static_cast<std::size_t>(rows) * 2, -1.f);
  std::vector<std::int32_t> chunks(3, -1);
  auto k = tj::compile<testing::RowStatsLoop<4, 96>>(tj::Device::interpreter());
  k.launch(tj::Grid{3}, x.data(), out.data(), chunks.data(), rows, cols);
  std::vector<double> m, l;
  row_stats_ref(x, rows, cols, m, l);
  for (int r = 0; r < rows; ++r) {
    CHECK(out[static_cast<std::size_t>(r) * 2] == doctest::Approx(m[r]).epsilon(1e-6));
    CHECK(out[static_cast<std::size_t>(r) * 2 + 1] == doctest::Approx(l[r]).epsilon(1e-5));
  }
  for (int c : chunks) CHECK(c == 3);  // ceil(250 / 96)
}

TEST_CASE("loops_zero_trip_returns_init_and_nesting_works") {
  std::vector<float> out(96, -1.f);
  auto k = tj::compile<testing::NestedLoops>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, out.data(), 0, 5);
  for (float v : out) CHECK(v == 0.f);
  k.launch(tj::Grid{1}, out.data(), 3, 4);
  for (int i = 0; i < 96; ++i) CHECK(out[static_cast<std::size_t>(i)] == doctest::Approx(12.0 * i + 18.0));  // sum_a sum_b (i + ab)
}

TEST_CASE("loops_values_from_inside_the_body_cannot_escape") {
  CHECK_THROWS_WITH_AS(tj::compile<testing::LeaksFromLoop>(tj::Device::interpreter()),
                       doctest::Contains("return it from the loop body"), tj::Unsupported);
  // The induction variable itself, kept past the loop (a review found the interpreter ran it while the generated
  // CUDA did not compile: the variable is out of scope after the loop's brace).
  CHECK_THROWS_WITH_AS(tj::compile<LeaksInductionVariable>(tj::Device::interpreter()),
                       doctest::Contains("the induction variable of that loop, outside the loop"), tj::Unsupported);
}

TEST_CASE("loops_compile_for_every_target") {
  for (std::string arch : {"sm_80", "sm_90a", "gfx90a", "gfx942"}) {
    CAPTURE(arch);
    std::string why;
    auto t = tj::codegen::target_for(arch);
    if (!tj::runtime::compiler_available(t.dialect == tj::codegen::Dialect::cuda ? tj::runtime::Compiler::nvrtc
                                                                                 : tj::runtime::Compiler::hiprtc, &why)) {
      MESSAGE("skipping ", arch, ": ", why);
      continue;
    }
    CHECK_NOTHROW(tj::compile_for_arch<testing::RowStatsLoop<4, 96>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<testing::NestedLoops>(arch, {.num_warps = 1}));
  }
}

TEST_CASE("loops_constant_step_must_be_positive_when_traced") {
  CHECK_THROWS_WITH_AS(tj::trace(ConstantStep<0>{}), doctest::Contains("for_range: step = 0: the step must be positive"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(ConstantStep<-2>{}), doctest::Contains("step = -2"), tj::InvalidArgument);
  CHECK_THROWS_AS(tj::compile<ConstantStep<0>>(tj::Device::interpreter()), tj::InvalidArgument);
  CHECK_THROWS_AS(tj::compile_for_arch<ConstantStep<-1>>("sm_90a", {.num_warps = 1}), tj::InvalidArgument);
  CHECK_NOTHROW(tj::trace(ConstantStep<3>{}));
}

TEST_CASE("loops_runtime_step_interpreter_rejects_non_positive_steps") {
  std::vector<float> out(32, -1.f);
  auto k = tj::compile<RuntimeStep>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{1}, out.data(), 10, 3);  // s = 0, 3, 6, 9
  for (int i = 0; i < 32; ++i) CHECK(out[static_cast<std::size_t>(i)] == doctest::Approx(4.0 * i + 18));
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, out.data(), 10, 0), doctest::Contains("for_range step is 0: it must be positive"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, out.data(), 10, -4), doctest::Contains("for_range step is -4"), tj::InvalidArgument);
}

namespace {
/// out = the number of iterations of for_range(lo, hi, step), all three known only at run time.
struct CountTrips {
  void operator()(tj::Ptr<std::int32_t> out, tj::Int lo, tj::Int hi, tj::Int step) const {
    tj::store(out, tj::for_range(lo, hi, step, tj::scalar<std::int32_t>(0), [&](tj::Int, auto n) { return n + 1; }));
  }
};
/// out = 1000·(n·ceil(m / 2)) + n(n-1)/2: two nested loops whose bounds are arguments, and an inner loop bounded by
/// the outer induction variable (a bound the kernel computes).
struct NestedTrips {
  void operator()(tj::Ptr<std::int32_t> out, tj::Int n, tj::Int m) const {
    auto t = tj::for_range(0, n, 1, tj::scalar<std::int32_t>(0), [&](tj::Int, auto a) {
      return tj::for_range(0, m, 2, a, [&](tj::Int, auto b) { return b + 1; });
    });
    auto u = tj::for_range(0, n, 1, tj::scalar<std::int32_t>(0), [&](tj::Int i, auto a) {
      return tj::for_range(0, i, 1, a, [&](tj::Int, auto b) { return b + 1; });
    });
    tj::store(out, t * 1000 + u);
  }
};

/// io[1] = the trips of for_range(0, io[0], 16): a bound loaded from memory, unknown at launch.
struct LoadedBound {
  void operator()(tj::Ptr<std::int32_t> io) const {
    tj::store(io + 1, tj::for_range(0, tj::load(io), 16, tj::scalar<std::int32_t>(0), [&](tj::Int, auto n) { return n + 1; }));
  }
};

}  // namespace

namespace {
/// for_range with C++ literals of other types than int as bounds and step.
template <auto LO, auto HI, auto STEP>
struct LiteralBounds {
  void operator()(tj::Ptr<std::int32_t> out) const {
    tj::store(out, tj::for_range(LO, HI, STEP, tj::scalar<std::int32_t>(0), [&](tj::Int, auto n) { return n + 1; }));
  }
};
}  // namespace

TEST_CASE("loops_literal_bounds_that_are_not_i32_are_typed_errors") {
  // 3e9 wrapped to a negative bound (0 iterations), 2^32 + 1 to a step of 1, 2.5 to 2: now each names the literal.
  CHECK_THROWS_WITH_AS(tj::trace(LiteralBounds<0, 3000000000LL, 1>{}), doctest::Contains("the literal 3000000000 does not fit an i32"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(LiteralBounds<0, 10, 4294967297LL>{}), doctest::Contains("the literal 4294967297"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(LiteralBounds<0, 10, 2.5>{}), doctest::Contains("the literal 2.5 is not a whole number"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(LiteralBounds<0, 10, 0.5>{}), doctest::Contains("the literal 0.5"), tj::InvalidArgument);
  // Whole numbers of other types that fit are fine.
  std::int32_t out = -1;
  tj::compile<LiteralBounds<0LL, 10u, 3.0>>(tj::Device::interpreter(), {.num_warps = 1}).launch(tj::Grid{1}, &out);
  CHECK(out == 4);
}

TEST_CASE("loops_whose_induction_could_pass_int32_max_are_refused_at_launch") {
  // s + step past 2^31 - 1 wrapped negative in the generated `s += step`, stayed below hi, and never ended the loop,
  // while the interpreter (counting in 64 bits) ended it. Now a launch whose arguments give hi + step - 1 > 2^31 - 1
  // is refused before it runs, on every backend; bounds the kernel computes are refused by the interpreter.
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  struct Case { std::int32_t lo, hi, step, trips; };
  const Case fine[] = {{0, 10, 3, 4}, {0, big - (1 << 30) + 1, 1 << 30, 1}, {0, big - (1 << 30), 1 << 29, 2}, {big - 7, big - 3, 4, 1},
                       {-5, 1, big, 1}, {std::numeric_limits<std::int32_t>::min(), 0, big, 2}, {5, 5, 1, 0}, {big, big, big, 0}};
  const Case refused[] = {{0, big, 1 << 30, 2}, {big - 7, big, 4, 2}, {big - 1, big, 2, 1}};
  auto k = tj::compile<CountTrips>(tj::Device::interpreter(), {.num_warps = 1});
  for (const Case& c : fine) {
    CAPTURE(c.lo);
    CAPTURE(c.hi);
    CAPTURE(c.step);
    std::int32_t out = -1;
    k.launch(tj::Grid{1}, &out, c.lo, c.hi, c.step);
    CHECK(out == c.trips);
  }
  for (const Case& c : refused) {
    CAPTURE(c.lo);
    CAPTURE(c.hi);
    CAPTURE(c.step);
    std::int32_t out = -1;
    const std::string want = fmt::format("kernel CountTrips: a for_range loop with lo = {}, hi = {} and step = {}", c.lo, c.hi, c.step);
    CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, &out, c.lo, c.hi, c.step), doctest::Contains(want.c_str()), tj::InvalidArgument);
    CHECK(out == -1);
  }
  // Nested loops whose bounds are arguments are checked too; a bound computed in the kernel (the outer induction
  // variable, a loaded value) is the interpreter's to refuse as it runs.
  {
    auto nk = tj::compile<NestedTrips>(tj::Device::interpreter(), {.num_warps = 1});
    std::int32_t out = -1;
    nk.launch(tj::Grid{1}, &out, 4, 3);
    CHECK(out == 8 * 1000 + 6);
    CHECK_THROWS_WITH_AS(nk.launch(tj::Grid{1}, &out, 2, big), doctest::Contains("hi = 2147483647 and step = 2"), tj::InvalidArgument);
    CHECK(out == 8 * 1000 + 6);
    auto lk = tj::compile<LoadedBound>(tj::Device::interpreter(), {.num_warps = 1});
    std::vector<std::int32_t> io{big, -1};
    CHECK_THROWS_WITH_AS(lk.launch(tj::Grid{1}, io.data()), doctest::Contains("for_range(0, 2147483647, 16): hi + step - 1 = 2147483662 passes"),
                         tj::InvalidArgument);
    io = {100, -1};
    lk.launch(tj::Grid{1}, io.data());
    CHECK(io[1] == 7);
  }
  // The generated code is the plain loop, and ends as the interpreter does for every accepted case.
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    const auto g = tj::codegen::generate(tj::trace(CountTrips{}), {}, tj::codegen::target_for(arch), {.num_warps = 1});
    const auto hk = testing::HostKernel::compile(g);
    if (!hk) {
      MESSAGE("no host compiler for the emulator: skipping the run");
      continue;
    }
    for (const Case& c : fine) {
      CAPTURE(c.lo);
      CAPTURE(c.hi);
      CAPTURE(c.step);
      std::int32_t out = -1;
      hk->launch({1, 1, 1}, &out, c.lo, c.hi, c.step);
      CHECK(out == c.trips);
    }
  }
}

TEST_CASE("loops_runtime_step_is_guarded_once_before_the_generated_loop") {
  for (std::string arch : {"sm_80", "sm_90a", "gfx90a", "gfx942"}) {
    CAPTURE(arch);
    const auto t = tj::codegen::target_for(arch);
    const std::string src = tj::codegen::generate(tj::trace(RuntimeStep{}), {}, t, {1}).source;
    // One scalar check outside the loop: a step <= 0 would never end `for (s = 0; s < n; s += step)` on a GPU.
    const auto guard = src.find("<= 0) tj_bad_step();");
    const auto loop = src.find("for (int s");
    REQUIRE(guard != std::string::npos);
    REQUIRE(loop != std::string::npos);
    CHECK(guard < loop);
    CHECK(src.find("<= 0) tj_bad_step(", guard + 1) == std::string::npos);
    // A constant positive step needs no guard.
    const std::string csrc = tj::codegen::generate(tj::trace(ConstantStep<4>{}), {}, t, {1}).source;
    CHECK(csrc.find("<= 0) tj_bad_step();") == std::string::npos);
    std::string why;
    if (!tj::runtime::compiler_available(t.dialect == tj::codegen::Dialect::cuda ? tj::runtime::Compiler::nvrtc
                                                                                 : tj::runtime::Compiler::hiprtc, &why)) {
      MESSAGE("skipping the compile for ", arch, ": ", why);
      continue;
    }
    CHECK_NOTHROW(tj::compile_for_arch<RuntimeStep>(arch, {.num_warps = 1}));
  }
}

// for_range: tracing, the interpreter against C++, NVRTC/HIP compiles, misuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "test/common/loop_kernels.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {
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

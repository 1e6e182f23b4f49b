// The example kernels without a dot (VecAdd, Softmax) as generated HIP text run on the CPU by the host emulator
// (test/common/host_emulator.hpp), wave32 (gfx1100) and wave64 (gfx942): their loads and stores, masks, row
// reductions through lane shuffles and exp, executed as the code generator wrote them, against plain C++.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

TEST_CASE("examples_vector_add_and_softmax_on_the_host_emulator") {
  CAPTURE(testing::fresh_seed());
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    {  // VecAdd<96>, ragged n
      const int n = 1000;
      auto x = testing::random_floats(n, -4, 4, 51), y = testing::random_floats(n, -4, 4, 52);
      std::vector<float> out(n + 5, -77.0f);
      const auto hk = testing::HostKernel::compile(
          tj::codegen::generate(tj::trace(examples::VecAdd<96>{}), {}, tj::codegen::target_for(arch), {.num_warps = 1}));
      if (!hk) return;
      hk->launch({static_cast<unsigned>(tj::cdiv(n, 96)), 1, 1}, x.data(), y.data(), out.data(), n);
      for (int i = 0; i < n; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)]);
      for (int i = n; i < n + 5; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == -77.0f);
    }
    {  // Softmax<4, 96>, ragged rows
      const int rows = 37, w = 96;
      auto x = testing::random_floats(static_cast<std::size_t>(rows) * w, -6, 6, 53);
      std::vector<float> y(x.size(), -1.0f);
      const auto hk = testing::HostKernel::compile(
          tj::codegen::generate(tj::trace(examples::Softmax<4, 96>{}), {}, tj::codegen::target_for(arch), {.num_warps = 4}));
      if (!hk) return;
      hk->launch({static_cast<unsigned>(tj::cdiv(rows, 4)), 1, 1}, x.data(), y.data(), rows);
      double worst = 0;
      for (int r = 0; r < rows; ++r) {
        const float* row = &x[static_cast<std::size_t>(r) * w];
        const double m = *std::max_element(row, row + w);
        double s = 0;
        for (int c = 0; c < w; ++c) s += std::exp(row[c] - m);
        for (int c = 0; c < w; ++c)
          worst = std::max(worst, std::abs(y[static_cast<std::size_t>(r) * w + c] - std::exp(row[c] - m) / s));
      }
      CHECK(worst < 1e-6);
    }
  }
}

// ir::plan_cost / ir::evaluate_cost: what a launch amounts to (the profiler's launch hook reports it).
#include <doctest/doctest.h>

#include <array>
#include <limits>
#include <optional>

#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/ir/cost.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace ir = tilejit::ir;

namespace {

/// Inputs with integer scalars at the given parameter indices and rank-2 descriptor shapes.
struct Inputs {
  std::array<std::optional<long long>, 12> scalars{};
  std::array<std::array<long long, 2>, 12> shapes{};
  ir::CostInputs make(std::array<long long, 3> grid) const {
    ir::CostInputs in;
    in.grid = grid;
    in.scalar = [this](int p) { return scalars.at(static_cast<std::size_t>(p)); };
    in.desc_shape = [this](int p, int d) -> std::optional<long long> { return shapes.at(static_cast<std::size_t>(p)).at(static_cast<std::size_t>(d)); };
    return in;
  }
};

template <class K>
std::optional<ir::LaunchCost> cost_of(const Inputs& x, std::array<long long, 3> grid) {
  const ir::Kernel k = tj::trace(K{});
  return ir::evaluate_cost(ir::plan_cost(k), k, x.make(grid));
}

/// A K loop whose trip count depends on the program (as causal attention's key range does).
struct ProgramDependentLoop {
  void operator()(tj::Ptr<float> a, tj::Ptr<float> c) const {
    auto r = tj::arange<16>();
    auto acc = tj::for_range(0, tj::program_id(0) * 16 + 16, 16, tj::zeros<float, 16, 16>(), [&](tj::Int k0, auto acc) {
      auto t = tj::load(a + k0 + tj::expand_dims<1>(r) * 16 + tj::expand_dims<0>(r));
      return tj::dot(t, t, acc);
    });
    tj::store(c + tj::expand_dims<1>(r) * 16 + tj::expand_dims<0>(r), acc);
  }
};

/// A program-dependent loop that counts nothing (scalar arithmetic only), beside counted work.
struct UncountedLoop {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> out) const {
    auto n = tj::for_range(0, tj::program_id(0) + 1, 1, tj::Int(0), [&](tj::Int i, tj::Int s) { return s + i; });
    auto v = tj::load(x + tj::arange<32>());
    tj::store(out + tj::arange<32>() + n * 0, v);
  }
};

}  // namespace

TEST_CASE("launch_cost_counts_tile_loads_and_stores_times_the_grid") {
  // VecAdd<96>: two loads and a store of 96 floats per program.
  Inputs x;
  x.scalars[3] = 200;
  const auto c = cost_of<examples::VecAdd<96>>(x, {3, 1, 1});
  REQUIRE(c.has_value());
  CHECK(c->flops == 0);
  CHECK(c->bytes == 3 * 3 * 96 * 4);
}

TEST_CASE("launch_cost_multiplies_a_k_loop_by_its_trip_count_from_the_arguments") {
  // MatmulV1<16, 16, 16, f32>: a, b, c, M, N, K; ceil(33 / 16) = 3 iterations per program, 3 x 2 programs.
  Inputs x;
  x.scalars[3] = 40, x.scalars[4] = 20, x.scalars[5] = 33;
  const auto c = cost_of<examples::MatmulV1<16, 16, 16, float>>(x, {3, 2, 1});
  REQUIRE(c.has_value());
  CHECK(c->flops == 6LL * 3 * (2 * 16 * 16 * 16));
  CHECK(c->flops_width == 32);  // f32 inputs: tf32 products
  CHECK(c->bytes == 6LL * 3 * (2 * 16 * 16 * 4) + 6LL * 16 * 16 * 4);
  // K = 0: no iteration; only the store.
  x.scalars[5] = 0;
  const auto z = cost_of<examples::MatmulV1<16, 16, 16, float>>(x, {3, 2, 1});
  REQUIRE(z.has_value());
  CHECK(z->flops == 0);
  CHECK(z->bytes == 6LL * 16 * 16 * 4);
  // An argument that is not an integer (or missing): not derivable.
  x.scalars[5] = std::nullopt;
  CHECK_FALSE(cost_of<examples::MatmulV1<16, 16, 16, float>>(x, {3, 2, 1}).has_value());
}

TEST_CASE("launch_cost_totals_a_grid_stride_loop_over_its_programs") {
  // MatmulV6<64, 96, bf16> (persistent): a, b (descriptors), c, M, N, K; 4 x 4 = 16 tiles, K = 128 in 2 blocks of 64.
  Inputs x;
  x.scalars[3] = 200, x.scalars[4] = 300, x.scalars[5] = 128;
  const long long tiles = 16, iters = 2;
  const long long want_flops = tiles * iters * (2LL * 64 * 96 * 64);
  const long long want_bytes = tiles * iters * (64 * 64 * 2 + 96 * 64 * 2) + tiles * 64 * 96 * 4;
  for (long long programs : {1LL, 5LL, 16LL, 40LL}) {  // the total does not depend on how many programs share it
    CAPTURE(programs);
    const auto c = cost_of<examples::MatmulV6<64, 96, tj::bf16>>(x, {programs, 1, 1});
    REQUIRE(c.has_value());
    CHECK(c->flops == want_flops);
    CHECK(c->flops_width == 16);
    CHECK(c->bytes == want_bytes);
  }
}

TEST_CASE("launch_cost_is_not_derivable_where_a_counted_loop_depends_on_the_program") {
  const Inputs x;
  CHECK_FALSE(cost_of<ProgramDependentLoop>(x, {4, 1, 1}).has_value());
  // A program-dependent loop holding no counted work does not stop the rest being counted.
  const auto c = cost_of<UncountedLoop>(x, {4, 1, 1});
  REQUIRE(c.has_value());
  CHECK(c->bytes == 4LL * 2 * 32 * 4);
}

TEST_CASE("launch_cost_saturates_instead_of_wrapping") {
  Inputs x;
  x.scalars[3] = 1LL << 40;
  const auto c = cost_of<examples::VecAdd<96>>(x, {1LL << 31, 65535, 65535});
  REQUIRE(c.has_value());
  CHECK(c->bytes == std::numeric_limits<std::int64_t>::max());
}

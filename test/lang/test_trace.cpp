#include <doctest/doctest.h>

#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using tj::ir::Op;

namespace {
int count(const tj::ir::Kernel& k, Op op) {
  int c = 0;
  for (const auto& n : k.nodes) c += n.op == op;
  return c;
}

struct BadAxis {
  void operator()(tj::Ptr<float> x) const { tj::store(x + tj::program_id(3), 1.0f); }
};

template <class T>
struct Ops {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto i = tj::arange<48>();
    auto v = tj::load(x + i);
    auto w = tj::where(v > 0.0f, tj::sqrt(tj::abs(v)), tj::exp2(v)) + tj::maximum(v, 1.0f) - tj::rsqrt(tj::abs(v) + 1.0f);
    tj::store(y + i, tj::cast<T>(tj::cast<float>(w) * 2.0f));
  }
};
}  // namespace

TEST_CASE("trace_vector_add_signature_and_nodes") {
  auto k = tj::trace(examples::VecAdd<96>{});
  CHECK(k.name == "VecAdd_96_float");
  REQUIRE(k.params.size() == 4);
  CHECK(k.params[0].type.is_ptr);
  CHECK(k.params[0].type.dtype == tj::DType::f32);
  CHECK(k.params[3].type.dtype == tj::DType::i32);
  CHECK(k.params[3].is_size);
  CHECK(count(k, Op::arange) == 1);
  CHECK(count(k, Op::load) == 2);
  CHECK(count(k, Op::store) == 1);
  for (const auto& n : k.nodes)
    if (n.op == Op::arange) CHECK(n.type.shape[0] == 96);
  CHECK(tj::ir::print(k).find("arange i32[96]") != std::string::npos);
}

TEST_CASE("trace_broadcasting_is_explicit") {
  auto k = tj::trace(examples::Softmax<4, 96>{});
  // Every elementwise node sees operands of its own shape.
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const auto& n = k.nodes[id];
    if (!tj::ir::is_binary(n.op) && n.op != Op::addptr) continue;
    for (int a = 0; a < 2; ++a) {
      const auto& t = k.nodes[static_cast<std::size_t>(n.args[static_cast<std::size_t>(a)])].type;
      CHECK(t.rank == n.type.rank);
      CHECK(t.shape == n.type.shape);
    }
  }
  CHECK(count(k, Op::reduce_max) == 1);
  CHECK(count(k, Op::reduce_sum) == 1);
  CHECK(count(k, Op::expand_dims) == 5);
}

TEST_CASE("trace_values_are_defined_before_use") {
  auto k = tj::trace(examples::Softmax<2, 768>{});
  for (std::size_t id = 0; id < k.nodes.size(); ++id)
    for (int a : k.nodes[id].args) CHECK(a < static_cast<int>(id));
}

TEST_CASE("trace_half_precision_ops") {
  auto k16 = tj::trace(Ops<tj::f16>{});
  auto kb = tj::trace(Ops<tj::bf16>{});
  CHECK(k16.params[0].type.dtype == tj::DType::f16);
  CHECK(kb.params[0].type.dtype == tj::DType::bf16);
  CHECK(count(k16, Op::where) == 1);
  CHECK(count(k16, Op::cast) == 2);
}

TEST_CASE("program_id_axis_out_of_range_is_an_error") {
  CHECK_THROWS_WITH_AS(tj::trace(BadAxis{}), doctest::Contains("axis 3 is not a grid axis"), tj::InvalidArgument);
}

TEST_CASE("ops_outside_a_trace_are_an_error") {
  CHECK_THROWS_AS(tj::arange<4>(), tj::Error);
}

TEST_CASE("kernel_names_are_identifiers") {
  CHECK(tj::lang::kernel_name_from("examples::Softmax<4, 96, float>") == "Softmax_4_96_float");
  CHECK(tj::lang::kernel_name_from("VecAdd<(int)96>") == "VecAdd_int_96");
  CHECK(tj::lang::is_smooth(96));
  CHECK(tj::lang::is_smooth(12288));
  CHECK_FALSE(tj::lang::is_smooth(22));
}

namespace {
/// y = float(full<F8>(1.5)) + x: an f8 constant (1.5 is exact in e4m3 and e5m2).
template <class F8>
struct F8Constant {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto i = tj::arange<64>();
    tj::store(y + i, tj::cast<float>(tj::full<F8, 64>(1.5)) + tj::load(x + i));
  }
};

template <class F8>
void f8_constant_keeps_its_value() {
  const tj::ir::Kernel k = tj::trace(F8Constant<F8>{});
  int found = 0;
  for (const auto& n : k.nodes)
    if (n.op == Op::constant && n.type.dtype == tj::dtype_v<F8>) {
      CHECK(n.f == 1.5);  // (the value was truncated into the integer field: 1, and backends read f: 0)
      ++found;
    }
  CHECK(found == 1);
  const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 2});
  CHECK(g.source.find("1.5f") != std::string::npos);
  auto dev = tj::Device::interpreter();
  std::vector<float> x(64), y(64, -1.f);
  for (int j = 0; j < 64; ++j) x[static_cast<std::size_t>(j)] = 0.25f * static_cast<float>(j % 13) - 1.f;
  tj::compile<F8Constant<F8>>(dev, {.num_warps = 2}).launch(tj::Grid{1}, x.data(), y.data());
  for (int j = 0; j < 64; ++j) CHECK(y[static_cast<std::size_t>(j)] == x[static_cast<std::size_t>(j)] + 1.5f);
}
}  // namespace

TEST_CASE("trace: an f8 constant keeps its value (traced, generated, interpreted)") {
  f8_constant_keeps_its_value<tj::f8e4m3>();
  f8_constant_keeps_its_value<tj::f8e5m2>();
}

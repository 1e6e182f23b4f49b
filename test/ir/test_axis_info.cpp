// AxisInfo: contiguity, divisibility and constancy of index, pointer and mask tiles.
#include <doctest/doctest.h>

#include "examples/gemm/matmul_v1.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/ir/axis_info.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using tj::ir::Op;

namespace {
int find(const tj::ir::Kernel& k, Op op, int nth = 0) {
  for (std::size_t i = 0; i < k.nodes.size(); ++i)
    if (k.nodes[i].op == op && nth-- == 0) return static_cast<int>(i);
  return -1;
}
tj::ir::Specialization all(std::size_t n, std::uint8_t f) {
  tj::ir::Specialization s;
  s.flags.assign(n, f);
  return s;
}

/// y[i, j] = x[i + j] over [16, 4]: the loaded rows overlap (a sliding window); the stored ones are whole.
struct Window {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto i = tj::expand_dims<1>(tj::arange<16>());
    auto j = tj::expand_dims<0>(tj::arange<4>());
    tj::store(y + i * 4 + j, tj::load(x + i + j));
  }
};

/// Quotients and remainders by constants: of an arange, of a value that may be negative, by a non-power of two.
struct DivRem {
  void operator()(tj::Ptr<std::int32_t> out) const {
    auto c = tj::arange<64>();
    tj::store(out + c % 8, c / 8);
    tj::store(out + (c - 8) % 4, c % 3);
  }
};
}  // namespace

TEST_CASE("axis_info_vector_add_offsets_pointers_masks") {
  auto k = tj::trace(examples::VecAdd<1024>{});
  auto info = tj::ir::analyze_axes(k, all(k.params.size(), tj::ir::Specialization::kDiv16));
  const int ar = find(k, Op::arange);
  CHECK(info[static_cast<std::size_t>(ar)].contiguity[0] == 1024);
  const int lt = find(k, Op::lt);
  const int offs = k.nodes[static_cast<std::size_t>(lt)].args[0];
  CHECK(info[static_cast<std::size_t>(offs)].contiguity[0] == 1024);
  CHECK(info[static_cast<std::size_t>(offs)].divisibility[0] >= 1024);  // pid * 1024 + [0, 1024)
  CHECK(info[static_cast<std::size_t>(lt)].constancy[0] == 16);      // offs < n, n divisible by 16
  const int p = find(k, Op::addptr);
  CHECK(info[static_cast<std::size_t>(p)].contiguity[0] == 1024);
  CHECK(info[static_cast<std::size_t>(p)].divisibility[0] == 16);  // 16-byte aligned base, 4-byte elements

  // Without specialisation: n may be anything, the base only 4-byte aligned.
  auto none = tj::ir::analyze_axes(k, all(k.params.size(), 0));
  CHECK(none[static_cast<std::size_t>(lt)].constancy[0] == 1);
  CHECK(none[static_cast<std::size_t>(p)].divisibility[0] == 4);
}

TEST_CASE("axis_info_2d_gemm_tiles") {
  auto k = tj::trace(examples::MatmulV1<64, 96, 32, tj::bf16>{});
  auto info = tj::ir::analyze_axes(k, all(k.params.size(), tj::ir::Specialization::kDiv16));
  // The A-tile pointers (a + rm*K, then + rk: the second addptr, [64,32]):
  // rows apart by K (divisible by 16), contiguous along k.
  const int p = find(k, Op::addptr, 1);
  REQUIRE(p >= 0);
  CHECK(k.nodes[static_cast<std::size_t>(p)].type.shape == std::array<int, 2>{64, 32});
  CHECK(info[static_cast<std::size_t>(p)].contiguity[1] == 32);
  CHECK(info[static_cast<std::size_t>(p)].contiguity[0] == 1);
  CHECK(info[static_cast<std::size_t>(p)].divisibility[1] == 16);  // runs along k: a 16-byte aligned base, rows 16·K elements apart
}

TEST_CASE("axis_info_divisibility_is_per_dim_overlapping_rows_are_not_aligned") {
  auto k = tj::trace(Window{});
  auto info = tj::ir::analyze_axes(k, all(k.params.size(), tj::ir::Specialization::kDiv16));
  const int ld = find(k, Op::load), st = find(k, Op::store);
  const auto& src = info[static_cast<std::size_t>(k.nodes[static_cast<std::size_t>(ld)].args[0])];
  const auto& dst = info[static_cast<std::size_t>(k.nodes[static_cast<std::size_t>(st)].args[0])];
  // x + i + j: runs of 4 along j start at x + 4i bytes — only 4-byte aligned, although contiguous.
  CHECK(src.contiguity[1] == 4);
  CHECK(src.divisibility[1] == 4);
  // y + 4i + j: every run along j starts 16 bytes past the last.
  CHECK(dst.contiguity[1] == 4);
  CHECK(dst.divisibility[1] == 16);
  // So the generated code loads element by element (an 8- or 16-byte load at x + 4 bytes would fault) and stores
  // whole rows.
  const auto g = tj::codegen::generate(k, all(k.params.size(), tj::ir::Specialization::kDiv16), tj::codegen::target_for("sm_90a"),
                                       {.num_warps = 1});
  CHECK(g.source.find("vector loads") == std::string::npos);
}

TEST_CASE("axis_info_quotients_and_remainders_by_constants") {
  auto k = tj::trace(DivRem{});
  auto info = tj::ir::analyze_axes(k, all(k.params.size(), tj::ir::Specialization::kDiv16));
  auto at = [&](Op op, int nth) -> const tj::ir::AxisInfo& { return info[static_cast<std::size_t>(find(k, op, nth))]; };
  // c % 8: runs of 8 consecutive values, each starting at 0.
  CHECK(at(Op::rem, 0).contiguity[0] == 8);
  CHECK(at(Op::rem, 0).divisibility[0] == 8);
  CHECK(at(Op::rem, 0).constancy[0] == 1);
  // c / 8: groups of 8 equal values, no runs.
  CHECK(at(Op::div, 0).contiguity[0] == 1);
  CHECK(at(Op::div, 0).constancy[0] == 8);
  // (c - 8) % 4: c - 8 may be negative (C's % keeps the dividend's sign): nothing known.
  CHECK(at(Op::rem, 1).contiguity[0] == 1);
  CHECK(at(Op::rem, 1).divisibility[0] == 1);
  // c % 3: 3 does not divide the runs' power-of-two alignment: nothing known.
  CHECK(at(Op::rem, 2).contiguity[0] == 1);
}

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
}  // namespace

TEST_CASE("axis_info_vector_add_offsets_pointers_masks") {
  auto k = tj::trace(examples::VecAdd<1024>{});
  auto info = tj::ir::analyze_axes(k, all(k.params.size(), tj::ir::Specialization::kDiv16));
  const int ar = find(k, Op::arange);
  CHECK(info[static_cast<std::size_t>(ar)].contiguity[0] == 1024);
  const int lt = find(k, Op::lt);
  const int offs = k.nodes[static_cast<std::size_t>(lt)].args[0];
  CHECK(info[static_cast<std::size_t>(offs)].contiguity[0] == 1024);
  CHECK(info[static_cast<std::size_t>(offs)].divisibility >= 1024);  // pid * 1024 + [0, 1024)
  CHECK(info[static_cast<std::size_t>(lt)].constancy[0] == 16);      // offs < n, n divisible by 16
  const int p = find(k, Op::addptr);
  CHECK(info[static_cast<std::size_t>(p)].contiguity[0] == 1024);
  CHECK(info[static_cast<std::size_t>(p)].divisibility == 16);  // 16-byte aligned base, 4-byte elements

  // Without specialisation: n may be anything, the base only 4-byte aligned.
  auto none = tj::ir::analyze_axes(k, all(k.params.size(), 0));
  CHECK(none[static_cast<std::size_t>(lt)].constancy[0] == 1);
  CHECK(none[static_cast<std::size_t>(p)].divisibility == 4);
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
  CHECK(info[static_cast<std::size_t>(p)].divisibility == 16);  // 16-byte aligned base, offsets multiples of 16 elements
}

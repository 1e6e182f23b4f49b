// Desc::store (ir desc_store): traced as one node, lowered to the masked store
// of the block everywhere TMA does not take it — the interpreter's results on a
// ragged tensor (rows and columns past the shape, and negative offsets,
// dropped), the lowered IR, and the generated text for sm_90a / sm_80 with
// CompileOptions::tma_store off.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"
#include "tilejit/ir/lower_descriptors.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

/// out block (pid0 · B0 - 3, pid1 · B1) = 2 · x + 1 of the same rows / columns of x (rows below 0 read as 0 and
/// dropped by the store).
template <int B0, int B1>
struct StoreBlocks {
  void operator()(tj::Ptr<float> x, tj::Desc<float, B0, B1> out, tj::Size ldx, tj::Size rows_x) const {
    auto i0 = tj::program_id(0) * B0 - 3;
    auto j0 = tj::program_id(1) * B1;
    auto r = tj::expand_dims<1>(i0 + tj::arange<B0>());
    auto c = tj::expand_dims<0>(j0 + tj::arange<B1>());
    auto t = tj::load(x + r * ldx + c, (r >= 0) & (r < rows_x) & (c < ldx), 0.0f);
    out.store(i0, j0, t * 2.0f + 1.0f);
  }
};

/// A's block feeds a dot and is also stored through a descriptor, in a pipelined loop.
struct DotAndStore {
  void operator()(tj::Desc<tj::bf16, 64, 64> a, tj::Desc<tj::bf16, 64, 64> b, tj::Desc<tj::bf16, 64, 64> copy, tj::Ptr<float> c,
                  tj::Size K) const {
    auto acc = tj::for_range(0, K, 64, tj::zeros<float, 64, 64>(), [&](tj::Int k0, auto acc) {
      auto blk = a.load(0, k0);
      copy.store(0, k0, blk);
      return tj::dot(blk, tj::trans(b.load(0, k0)), acc);
    });
    auto r = tj::arange<64>();
    tj::store(c + tj::expand_dims<1>(r) * 64 + tj::expand_dims<0>(r), acc);
  }
};

int count_op(const tj::ir::Kernel& k, tj::ir::Op op) {
  int n = 0;
  for (const auto& node : k.nodes) n += node.op == op;
  return n;
}

}  // namespace

TEST_CASE("desc_store_is_one_node_lowered_to_a_masked_store") {
  const tj::ir::Kernel k = tj::trace(StoreBlocks<16, 24>{});
  CHECK(count_op(k, tj::ir::Op::desc_store) == 1);
  CHECK(count_op(k, tj::ir::Op::store) == 0);
  CHECK(tj::ir::print(k).find("  desc_store %") != std::string::npos);
  const tj::ir::Kernel low = tj::ir::lower_descriptors(k);
  CHECK(count_op(low, tj::ir::Op::desc_store) == 0);
  CHECK(count_op(low, tj::ir::Op::store) == 1);
  tj::ir::verify(low);
  // A `keep` that takes it leaves it alone.
  const tj::ir::Kernel kept = tj::ir::lower_descriptors(k, [&](int id) { return k[id].op == tj::ir::Op::desc_store; });
  CHECK(count_op(kept, tj::ir::Op::desc_store) == 1);
}

TEST_CASE("desc_store_interpreter_drops_out_of_bounds_elements") {
  const auto dev = tj::Device::interpreter();
  const int M = 37, N = 50, ld = 56, rows_buf = 45;  // the tensor is [M, N] inside a [rows_buf, ld] buffer
  const auto x = testing::random_floats(static_cast<std::size_t>(rows_buf) * ld, -1, 1, 7);
  const float sentinel = -7.5f;
  std::vector<float> out(static_cast<std::size_t>(rows_buf) * ld, sentinel);
  D od(dev, out.data(), tj::DType::f32, {M, N}, {ld, 1}, {16, 24});
  auto k = tj::compile<StoreBlocks<16, 24>>(dev, {.num_warps = 4});
  k.launch(tj::Grid{tj::cdiv(M + 3, 16), tj::cdiv(N, 24)}, x.data(), od, ld, rows_buf);
  int wrong = 0;
  for (int i = 0; i < rows_buf; ++i)
    for (int j = 0; j < ld; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * ld + j;
      const float want = i < M && j < N ? 2 * x[e] + 1 : sentinel;
      wrong += out[e] != want;
    }
  CHECK(wrong == 0);
}

TEST_CASE("desc_store_without_tma_store_is_a_masked_store_on_sm90a_and_sm80") {
  const tj::ir::Kernel k = tj::trace(StoreBlocks<64, 64>{});
  for (const char* arch : {"sm_90a", "sm_80"}) {
    CAPTURE(arch);
    const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = 4});
    CHECK(g.source.find("cp.async.bulk") == std::string::npos);
    CHECK(g.tma_params.empty());
    if (std::string(arch) == "sm_90a") testing::compiles_for_sm90a(g.source, "desc_store_masked.cu");
  }
}

TEST_CASE("desc_store_with_tma_store_outside_loops_is_one_bulk_store_per_slab") {
  // f32 rows of 64 elements: two 128-byte slabs. Outside every loop: no .read wait before the staging writes.
  const tj::ir::Kernel k = tj::trace(StoreBlocks<64, 64>{});
  const auto g = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), {.num_warps = 4, .tma_store = true});
  CHECK(testing::occurrences(g.source, "tj_tma_store_2d(&s") == 2);
  CHECK(g.source.find("if (tj_tid == 0) tj_bulk_wait_read();") == std::string::npos);
  CHECK(g.source.find("if (tj_tid == 0) tj_bulk_wait();") != std::string::npos);
  REQUIRE(g.tma_params.size() == 1);
  CHECK(g.tma_params[0] == 1);
  CHECK(g.tma_boxes[0] == std::array<int, 2>{64, 32});
  testing::compiles_for_sm90a(g.source, "desc_store_tma.cu");
  // Blocks whose rows are not whole 128-byte slabs keep the masked store.
  const tj::ir::Kernel kn = tj::trace(StoreBlocks<16, 24>{});
  const auto narrow = tj::codegen::generate(kn, testing::all_div16(kn), tj::codegen::target_for("sm_90a"),
                                            {.num_warps = 4, .tma_store = true});
  CHECK(narrow.source.find("tj_tma_store_2d") == std::string::npos);
  CHECK(testing::has_diagnostic(narrow, "is not whole 128-byte slabs of rows in multiples of 8"));
  // sm_80 ignores the option.
  const auto ampere = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_80"), {.num_warps = 4, .tma_store = true});
  CHECK(ampere.source.find("tj_tma_store_2d") == std::string::npos);
}

TEST_CASE("desc_store_of_a_block_that_also_feeds_a_dot_keeps_it_in_registers") {
  // The store reads the block's registers, so TMA must not take the load into shared memory only (it did, and the
  // code generator crashed: the store's value slot, args[3], was not counted among the block's uses).
  const tj::ir::Kernel k = tj::trace(DotAndStore{});
  for (bool tma_store : {false, true}) {
    CAPTURE(tma_store);
    const auto g = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"),
                                         {.num_warps = 4, .num_stages = 2, .tma_store = tma_store});
    // b (parameter 1) stays a TMA-fed wgmma operand; a (parameter 0) is not copied by TMA.
    CHECK(std::find(g.tma_params.begin(), g.tma_params.end(), 1) != g.tma_params.end());
    CHECK(std::find(g.tma_params.begin(), g.tma_params.end(), 0) == g.tma_params.end());
    CHECK((std::find(g.tma_params.begin(), g.tma_params.end(), 2) != g.tma_params.end()) == tma_store);
    testing::compiles_for_sm90a(g.source, tma_store ? "dot_and_tma_store.cu" : "dot_and_store.cu");
  }
}

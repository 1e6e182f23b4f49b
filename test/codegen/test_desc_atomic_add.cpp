// Desc::atomic_add (ir desc_store with i = kDescAdd): traced as one node; lowered to masked element atomics where
// TMA does not take it (the interpreter, sm_80, HIP, sm_90a without CompileOptions::tma_store); on sm_90a with
// tma_store one bulk tensor reduce-add per 128-byte slab from the staging buffer (cp.reduce.async.bulk.tensor). Checked:
// the IR, the generated text for every target (and that NVRTC and hiprtc compile it), and on the interpreter and
// the GPU (both paths) the sums against a CPU reference on a ragged tensor — several programs adding to the same
// blocks, in a loop that reuses the staging buffer, out-of-bounds elements (past the shape, negative offsets)
// dropped, memory outside the tensor untouched.
#include <doctest/doctest.h>

#include <cmath>
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

/// Program (p0, p1, p2) adds (p2 + 1) · (it + 1) · x[block] for it < reps to out's block at (p0 · B0 - 3, p1 · B1):
/// in all, out += 6 · reps (reps + 1) / 2 · x over the tensor's elements with three programs along z.
template <int B0, int B1>
struct AddBlocks {
  void operator()(tj::Ptr<float> x, tj::Desc<float, B0, B1> out, tj::Size ldx, tj::Size rows_x, tj::Size reps) const {
    auto i0 = tj::program_id(0) * B0 - 3;
    auto j0 = tj::program_id(1) * B1;
    auto r = tj::expand_dims<1>(i0 + tj::arange<B0>());
    auto c = tj::expand_dims<0>(j0 + tj::arange<B1>());
    auto t = tj::load(x + r * ldx + c, (r >= 0) & (r < rows_x) & (c < ldx), 0.0f) * tj::cast<float>(tj::program_id(2) + 1);
    tj::for_range(0, reps, 1, [&](tj::Int it) { out.atomic_add(i0, j0, t * tj::cast<float>(it + 1)); });
  }
};

/// i32 counts: every program adds 1 to each element of its [16, 32] block (rows 0..15, columns p0 · 32).
struct CountBlocks {
  void operator()(tj::Desc<std::int32_t, 16, 32> out) const { out.atomic_add(0, tj::program_id(0) * 32, tj::full<std::int32_t, 16, 32>(1)); }
};

int count_op(const tj::ir::Kernel& k, tj::ir::Op op) {
  int n = 0;
  for (const auto& node : k.nodes) n += node.op == op;
  return n;
}

/// AddBlocks<16, 64> over a [37, 100] tensor inside a [45, 104] buffer (sentinels around it), 3 programs along z,
/// `reps` adds each, on `dev` with `o`; every element checked.
void add_case(const tj::Device& dev, tj::CompileOptions o, int reps, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  CAPTURE(reps);
  const int M = 37, N = 100, ld = 104, rows_buf = 45;
  const auto x = testing::random_floats(static_cast<std::size_t>(rows_buf) * ld, -1, 1, salt);
  auto init = testing::random_floats(static_cast<std::size_t>(rows_buf) * ld, -2, 2, salt + 1);
  std::vector<float> out = init;
  float* dout = out.data();
  float* dx = const_cast<float*>(x.data());
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  if (gpu) {
    dout = static_cast<float*>(dev.alloc(out.size() * 4));
    dx = static_cast<float*>(dev.alloc(x.size() * 4));
    dev.copy_to_device(dout, out.data(), out.size() * 4);
    dev.copy_to_device(dx, x.data(), x.size() * 4);
  }
  {
    D od(dev, dout, tj::DType::f32, {M, N}, {ld, 1}, {16, 64});
    auto k = tj::compile<AddBlocks<16, 64>>(dev, o);
    k.launch(tj::Grid{tj::cdiv(M + 3, 16), tj::cdiv(N, 64), 3}, dx, od, ld, rows_buf, reps);
  }
  if (gpu) {
    dev.synchronize();
    dev.copy_to_host(out.data(), dout, out.size() * 4);
    dev.free(dout);
    dev.free(dx);
  }
  const double w = 6.0 * reps * (reps + 1) / 2.0;
  int wrong = 0;
  for (int i = 0; i < rows_buf; ++i)
    for (int j = 0; j < ld; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * ld + static_cast<std::size_t>(j);
      const double want = i < M && j < N ? init[e] + w * x[e] : init[e];
      wrong += std::abs(out[e] - want) > 1e-5 * (1.0 + std::abs(want));
    }
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("desc_atomic_add_is_a_desc_store_that_adds_lowered_to_masked_atomics") {
  const tj::ir::Kernel k = tj::trace(AddBlocks<16, 64>{});
  CHECK(count_op(k, tj::ir::Op::desc_store) == 1);
  CHECK(tj::ir::print(k).find("desc_store") != std::string::npos);
  CHECK(tj::ir::print(k).find(" add") != std::string::npos);
  const tj::ir::Kernel low = tj::ir::lower_descriptors(k);
  CHECK(count_op(low, tj::ir::Op::desc_store) == 0);
  CHECK(count_op(low, tj::ir::Op::store) == 0);
  CHECK(count_op(low, tj::ir::Op::atomic_add) == 1);
  tj::ir::verify(low);
  for (const auto& n : k.nodes)
    if (n.op == tj::ir::Op::desc_store) CHECK(n.i == tj::ir::kDescAdd);
}

TEST_CASE("desc_atomic_add_interpreter_adds_in_bounds_elements") {
  for (int reps : {1, 3}) add_case(tj::Device::interpreter(), {.num_warps = 4}, reps, 11);
}

TEST_CASE("desc_atomic_add_sm90a_with_tma_store_is_one_bulk_reduce_per_slab") {
  const tj::ir::Kernel k = tj::trace(AddBlocks<16, 64>{});
  const auto g = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), {.num_warps = 4, .tma_store = true});
  // f32 rows of 64: two slabs, each one reduce-add; in the loop the staging buffer is reused only once the last
  // reduce-add has read it; before the program exits every one has completed.
  CHECK(testing::occurrences(g.source, "tj_tma_add_2d(&s") == 2);
  CHECK(testing::occurrences(g.source, "tj_tma_store_2d(&s") == 0);
  CHECK(g.source.find("if (tj_tid == 0) tj_bulk_wait_read();") != std::string::npos);
  CHECK(g.source.find("if (tj_tid == 0) tj_bulk_wait();") != std::string::npos);
  CHECK(g.source.find("tj_atomic_add(v") == std::string::npos);
  CHECK(testing::has_diagnostic(g, "added by TMA reduce-adds"));
  REQUIRE(g.tma_params.size() == 1);
  CHECK(g.tma_params[0] == 1);
  testing::compiles_for_sm90a(g.source, "desc_add_tma.cu");
  // i32 too (the reduce-add takes the map's element type).
  const tj::ir::Kernel ki = tj::trace(CountBlocks{});
  const auto gi = tj::codegen::generate(ki, testing::all_div16(ki), tj::codegen::target_for("sm_90a"), {.num_warps = 4, .tma_store = true});
  CHECK(testing::occurrences(gi.source, "tj_tma_add_2d(&s") == 1);
  testing::compiles_for_sm90a(gi.source, "desc_add_i32.cu");
}

TEST_CASE("desc_atomic_add_without_tma_is_element_atomics_on_every_target") {
  const tj::ir::Kernel k = tj::trace(AddBlocks<16, 64>{});
  // sm_90a without tma_store, sm_80, gfx942: element atomics (the bounds mask's column runs are unknown — the shape is
  // a run-time field — so they stay scalar). No bulk copies anywhere.
  const auto hopper = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), {.num_warps = 4});
  CHECK(testing::occurrences(hopper.source, "tj_tma_add_2d(&s") == 0);
  CHECK(testing::occurrences(hopper.source, "tj_atomic_add(v") > 0);
  testing::compiles_for_sm90a(hopper.source, "desc_add_red.cu");
  const auto ampere = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_80"), {.num_warps = 4, .tma_store = true});
  CHECK(ampere.source.find("cp.reduce.async.bulk") == std::string::npos);
  CHECK(testing::occurrences(ampere.source, "tj_atomic_add(v") > 0);
  testing::compiles_for(ampere.source, "sm_80", "desc_add_sm80.cu");
  const auto amd = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("gfx942"), {.num_warps = 4, .tma_store = true});
  CHECK(testing::occurrences(amd.source, "tj_atomic_add(v") > 0);
  testing::compiles_for_gfx942(amd.source, "desc_add_gfx942");
}

TEST_CASE("desc_atomic_add_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  for (bool tma : {true, false}) {
    CAPTURE(tma);
    for (int reps : {1, 4}) add_case(dev, {.num_warps = 4, .tma_store = tma}, reps, 21 + (tma ? 10u : 0u) + static_cast<unsigned>(reps));
  }
  // i32 counts from 8 programs into one [16, 256] tensor, by TMA.
  std::vector<std::int32_t> host(16 * 256, 5);
  auto* d = static_cast<std::int32_t*>(dev.alloc(host.size() * 4));
  dev.copy_to_device(d, host.data(), host.size() * 4);
  {
    D od(dev, d, tj::DType::i32, {16, 256}, {256, 1}, {16, 32});
    tj::compile<CountBlocks>(dev, {.num_warps = 4, .tma_store = true}).launch(tj::Grid{8}, od);
    tj::compile<CountBlocks>(dev, {.num_warps = 4, .tma_store = true}).launch(tj::Grid{8}, od);
  }
  dev.synchronize();
  dev.copy_to_host(host.data(), d, host.size() * 4);
  dev.free(d);
  int wrong = 0;
  for (std::int32_t v : host) wrong += v != 7;
  CHECK(wrong == 0);
}

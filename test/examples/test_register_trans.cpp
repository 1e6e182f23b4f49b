// `tj::trans` of a register tile (not a descriptor block): the interpreter
// against a CPU transpose on fresh random inputs, the generated code (the
// transpose itself moves no data: its layout is the operand's with dim0 and
// dim1 swapped; a square trans added to its own operand needs one conversion),
// NVRTC (sm_80, sm_90a) and hiprtc (gfx942) compile it, and on a GPU the same
// checks run on the device.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "test/common/text.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

/// out [N, M] = transpose(x [M, N]) + bias [N, 1] broadcast (M, N compile-time; one program).
template <int M, int N>
struct TransposeAdd {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> bias, tj::Ptr<float> out) const {
    auto rm = tj::arange<M>();
    auto rn = tj::arange<N>();
    auto tile = tj::load(x + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn));
    auto t = tj::trans(tile) + tj::expand_dims<1>(tj::load(bias + rn));  // [N, M]
    tj::store(out + tj::expand_dims<1>(rn) * M + tj::expand_dims<0>(rm), t);
  }
};

/// out [N, N] = x + transpose(x): the transpose meets its own operand.
template <int N>
struct Symmetrize {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> out) const {
    auto r = tj::arange<N>();
    auto ptrs = tj::expand_dims<1>(r) * N + tj::expand_dims<0>(r);
    auto tile = tj::load(x + ptrs);
    tj::store(out + ptrs, tile + tj::trans(tile));
  }
};

using testing::occurrences;

template <class F>
void on_device(const tj::Device& dev, std::vector<float>& out, const std::vector<std::vector<float>>& ins, F launch) {
  if (dev.backend() == tj::Backend::interpreter) {
    std::vector<float*> ptrs;
    for (auto& v : ins) ptrs.push_back(const_cast<float*>(v.data()));
    launch(ptrs, out.data());
    return;
  }
  std::vector<float*> ptrs;
  for (auto& v : ins) {
    auto* p = static_cast<float*>(dev.alloc(v.size() * 4));
    dev.copy_to_device(p, v.data(), v.size() * 4);
    ptrs.push_back(p);
  }
  auto* po = static_cast<float*>(dev.alloc(out.size() * 4));
  dev.memset(po, 0xff, out.size() * 4);
  launch(ptrs, po);
  dev.copy_to_host(out.data(), po, out.size() * 4);
  for (auto* p : ptrs) dev.free(p);
  dev.free(po);
}

void check_both(const tj::Device& dev) {
  CAPTURE(testing::fresh_seed());
  {
    constexpr int M = 32, N = 64;
    const auto x = testing::random_floats(M * N, -1, 1, 71), bias = testing::random_floats(N, -1, 1, 72);
    std::vector<float> out(M * N);
    auto k = tj::compile<TransposeAdd<M, N>>(dev, {.num_warps = 4});
    on_device(dev, out, {x, bias}, [&](const std::vector<float*>& p, float* o) { k.launch(tj::Grid{1}, p[0], p[1], o); });
    for (int n = 0; n < N; ++n)
      for (int m = 0; m < M; ++m) REQUIRE(out[static_cast<std::size_t>(n) * M + m] == x[static_cast<std::size_t>(m) * N + n] + bias[n]);
  }
  {
    constexpr int N = 48;  // NPOT: mixed-radix layouts on both sides of the transpose
    const auto x = testing::random_floats(N * N, -1, 1, 73);
    std::vector<float> out(N * N);
    auto k = tj::compile<Symmetrize<N>>(dev, {.num_warps = 4});
    on_device(dev, out, {x}, [&](const std::vector<float*>& p, float* o) { k.launch(tj::Grid{1}, p[0], o); });
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j)
        REQUIRE(out[static_cast<std::size_t>(i) * N + j] == x[static_cast<std::size_t>(i) * N + j] + x[static_cast<std::size_t>(j) * N + i]);
  }
}

}  // namespace

TEST_CASE("register_trans_interpreter_matches_a_cpu_transpose") { check_both(tj::Device::interpreter()); }

TEST_CASE("register_trans_moves_no_data_and_compiles_for_nvidia_and_amd") {
  // TransposeAdd: the transpose is register copies; the only conversion is the bias column's broadcast.
  const auto g = tj::codegen::generate(tj::trace(TransposeAdd<32, 64>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  bool transposed_layout = false;
  for (const auto& d : g.diagnostics) transposed_layout |= d.find("transpose of L") != std::string::npos;
  CHECK(transposed_layout);
  CHECK(g.source.find("for %") == std::string::npos);  // no "converted %x ... for %trans" comment in the source
  bool converted_for_trans = false;
  for (const auto& d : g.diagnostics) converted_for_trans |= d.find("(trans)") != std::string::npos;
  CHECK_FALSE(converted_for_trans);
  // Symmetrize: x and trans(x) meet elementwise, so they share a layout and the transpose's operand is converted.
  const auto s = tj::codegen::generate(tj::trace(Symmetrize<48>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  bool sym_converted = false;
  for (const auto& d : s.diagnostics) sym_converted |= d.find("(trans)") != std::string::npos;
  CHECK(sym_converted);
  CHECK(occurrences(s.source, "__syncthreads") >= 1);
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    for (std::string arch : {"sm_80", "sm_90a"}) {
      CAPTURE(arch);
      CHECK_NOTHROW(tj::compile_for_arch<TransposeAdd<32, 64>>(arch, {.num_warps = 4}));
      CHECK_NOTHROW(tj::compile_for_arch<Symmetrize<48>>(arch, {.num_warps = 4}));
    }
  }
  if (tj::runtime::compiler_available(tj::runtime::Compiler::hiprtc, &why)) {
    CHECK_NOTHROW(tj::compile_for_arch<TransposeAdd<32, 64>>("gfx942", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<Symmetrize<48>>("gfx942", {.num_warps = 4}));
  }
}

TEST_CASE("register_trans_gpu_matches_a_cpu_transpose") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_both(dev);
}

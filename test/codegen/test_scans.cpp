// Scans (tj::cumsum / cumprod / cummax / cummin, forward and reversed) along either axis, in every kind of layout the
// plan gives a value: blocked 1-D and 2-D tiles whose scanned dim spreads over registers, lanes and warps, NPOT
// extents (96, 224: radix-3 and radix-7 register digits), 12 warps (a radix-3 warp digit), a dot's accumulator
// (mma.sync / MFMA digits) and a 1-D slice of a 2-D parent (a reduction's result). Checked: the generated code
// compiles for sm_90a, sm_80 and gfx942; the interpreter and the GPU match a sequential CPU reference on fresh
// random inputs; bad uses fail to compile (static_assert) or are refused with the rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

enum class S { sum, prod, max, min };

template <S Op, int Axis, bool Rev, class X>
auto scan_of(const X& x) {
  if constexpr (Op == S::sum) return tj::cumsum<Axis, Rev>(x);
  else if constexpr (Op == S::prod) return tj::cumprod<Axis, Rev>(x);
  else if constexpr (Op == S::max) return tj::cummax<Axis, Rev>(x);
  else return tj::cummin<Axis, Rev>(x);
}

/// y[M, N] = scan of x[M, N] along Axis (M = 1: a 1-D tile of N).
template <class T, int M, int N, int Axis, S Op, bool Rev>
struct Scan {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    if constexpr (M == 1) {
      auto o = tj::arange<N>();
      tj::store(y + o, scan_of<Op, 0, Rev>(tj::load(x + o)));
    } else {
      auto o = tj::expand_dims<1>(tj::arange<M>()) * N + tj::expand_dims<0>(tj::arange<N>());
      tj::store(y + o, scan_of<Op, Axis, Rev>(tj::load(x + o)));
    }
  }
};

/// y[16, 32] = cumsum along dim 1 of a[16, 16]·b[16, 32] (f16 operands): the scan runs in the accumulator layout.
struct DotScan {
  void operator()(tj::Ptr<tj::f16> a, tj::Ptr<tj::f16> b, tj::Ptr<float> y) const {
    auto r = tj::expand_dims<1>(tj::arange<16>());
    auto av = tj::load(a + r * 16 + tj::expand_dims<0>(tj::arange<16>()));
    auto bv = tj::load(b + tj::expand_dims<1>(tj::arange<16>()) * 32 + tj::expand_dims<0>(tj::arange<32>()));
    auto acc = tj::dot(av, bv, tj::zeros<float, 16, 32>());
    tj::store(y + r * 32 + tj::expand_dims<0>(tj::arange<32>()), tj::cumsum<1>(acc));
  }
};

/// y[64] = reversed cummax of the row sums of x[64, 32]: a scan of a 1-D slice of the 2-D parent.
struct SliceScan {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y) const {
    auto v = tj::load(x + tj::expand_dims<1>(tj::arange<64>()) * 32 + tj::expand_dims<0>(tj::arange<32>()));
    tj::store(y + tj::arange<64>(), tj::cummax<0, true>(tj::sum<1>(v)));
  }
};

template <class T>
double as_double(T v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(v);
  else return static_cast<double>(static_cast<float>(v));  // f16, bf16
}

/// The sequential scan of x[M, N] along `axis` in double (integers: wrapping in T).
template <class T>
std::vector<double> reference(const std::vector<T>& x, int M, int N, int axis, S op, bool rev) {
  std::vector<double> y(x.size());
  const int len = axis == 1 ? N : M, lines = axis == 1 ? M : N;
  for (int o = 0; o < lines; ++o) {
    T acc_i{};
    double acc = 0;
    for (int jj = 0; jj < len; ++jj) {
      const int j = rev ? len - 1 - jj : jj;
      const std::size_t e = static_cast<std::size_t>(axis == 1 ? o * N + j : j * N + o);
      const double v = as_double(x[e]);
      if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        const T xi = x[e];
        if (jj == 0) acc_i = xi;
        else if (op == S::sum) acc_i = static_cast<T>(static_cast<U>(acc_i) + static_cast<U>(xi));
        else if (op == S::prod) acc_i = static_cast<T>(static_cast<U>(acc_i) * static_cast<U>(xi));
        else if (op == S::max) acc_i = std::max(acc_i, xi);
        else acc_i = std::min(acc_i, xi);
        y[e] = static_cast<double>(acc_i);
      } else {
        if (jj == 0) acc = v;
        else if (op == S::sum) acc += v;
        else if (op == S::prod) acc *= v;
        else if (op == S::max) acc = std::max(acc, v);
        else acc = std::min(acc, v);
        y[e] = acc;
      }
    }
  }
  return y;
}

using testing::OnDevice;
using testing::OnHost;

/// Every element within `tol(j)` of the reference, j the element's position along the scan (counted from its start).
template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& want, int M, int N, int axis, bool rev, double rel) {
  int wrong = 0;
  for (std::size_t e = 0; e < want.size(); ++e) {
    const int r = static_cast<int>(e) / N, c = static_cast<int>(e) % N;
    const int j = axis == 1 ? c : r, len = axis == 1 ? N : M;
    const double terms = rev ? len - j : j + 1;
    const double g = as_double(got[e]);
    const bool bad = std::is_integral_v<T> ? g != want[e] : !(std::abs(g - want[e]) <= rel * terms * (1 + std::abs(want[e])));
    if (bad && wrong++ < 4) MESSAGE("element ", e, " (row ", r, ", col ", c, "): got ", g, ", want ", want[e]);
  }
  CHECK(wrong == 0);
}

template <class T, int M, int N, int Axis, S Op, bool Rev, class Runner>
void check_scan(const Runner& on, std::initializer_list<int> warps, unsigned salt, double rel = 2e-6) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(Axis);
  CAPTURE(static_cast<int>(Op));
  CAPTURE(Rev);
  CAPTURE(testing::fresh_seed());
  std::vector<T> x;
  for (float f : testing::random_floats(static_cast<std::size_t>(M) * N, -1, 1, salt)) {
    if constexpr (std::is_integral_v<T>) x.push_back(static_cast<T>(std::lround(f * 100)) | T{1});  // odd: products never vanish
    else if constexpr (std::is_same_v<T, float>) x.push_back(Op == S::prod ? 1 + f / 64 : f);  // products stay near 1
    else x.push_back(static_cast<T>(f));
  }
  const auto want = reference(x, M, N, M == 1 ? 1 : Axis, Op, Rev);
  for (int nw : warps) {
    CAPTURE(nw);
    const auto y = on.template run<Scan<T, M, N, Axis, Op, Rev>>(x, nw);
    if (y.empty()) return;  // (no host clang)
    check_close(y, want, M, N, M == 1 ? 1 : Axis, Rev, rel);
  }
}

template <class Runner>
void check_all(const Runner& dev, unsigned salt) {
  // 1-D: registers x lanes x warps along the one dim; 96 = 32·3 and 224 = 32·7 exact.
  check_scan<float, 1, 128, 0, S::sum, false>(dev, {1, 4}, salt + 1);
  check_scan<float, 1, 1024, 0, S::sum, true>(dev, {1, 4, 8}, salt + 2, 4e-6);
  check_scan<float, 1, 96, 0, S::max, false>(dev, {1, 4}, salt + 3);
  check_scan<float, 1, 224, 0, S::min, true>(dev, {1, 4, 8}, salt + 4);
  check_scan<float, 1, 256, 0, S::prod, false>(dev, {1, 4}, salt + 5);
  check_scan<float, 1, 384, 0, S::sum, false>(dev, {12}, salt + 6);   // warps 2·2·3: a radix-3 warp digit
  check_scan<float, 1, 1152, 0, S::max, true>(dev, {12}, salt + 7);
  // 2-D along each axis.
  check_scan<float, 16, 96, 1, S::sum, false>(dev, {1, 4, 8}, salt + 8);
  check_scan<float, 64, 32, 0, S::sum, true>(dev, {1, 4, 8}, salt + 9);
  check_scan<float, 96, 16, 0, S::min, false>(dev, {4, 12}, salt + 10);
  // Along the dim the warps split first (digits 2w 2w 2r ...): the block totals cross warps in 16 KiB chunks
  // (one slot per register and thread would be 64 KiB).
  check_scan<float, 128, 128, 0, S::sum, false>(dev, {4}, salt + 17, 4e-6);
  // Integers (exact, wrapping) and 16-bit floats (accumulated in f32).
  check_scan<std::int32_t, 8, 128, 1, S::sum, false>(dev, {1, 4}, salt + 11);
  check_scan<std::int32_t, 1, 64, 0, S::prod, true>(dev, {2}, salt + 12);
  check_scan<std::int64_t, 32, 16, 0, S::max, false>(dev, {4}, salt + 13);
  check_scan<std::uint32_t, 1, 512, 0, S::min, false>(dev, {4}, salt + 14);
  check_scan<std::int8_t, 4, 64, 1, S::sum, true>(dev, {1, 4}, salt + 15);
  check_scan<tj::f16, 1, 256, 0, S::sum, false>(dev, {4}, salt + 16, 2e-3);
}

}  // namespace

TEST_CASE("scans_compile_everywhere") {
  auto both = [](const auto& kernel, std::initializer_list<int> warps) {
    const auto k = tj::trace(kernel);
    for (int nw : warps) {
      CAPTURE(k.name);
      CAPTURE(nw);
      for (const char* arch : {"sm_90a", "sm_80"}) {
        const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw});
        CHECK(g.source.find("// scan %") != std::string::npos);
        testing::compiles_for(g.source, arch, k.name);
      }
      testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
    }
  };
  both(Scan<float, 1, 1024, 0, S::sum, true>{}, {1, 8});
  both(Scan<float, 16, 96, 1, S::max, false>{}, {4});
  both(Scan<float, 96, 16, 0, S::prod, true>{}, {12});
  both(Scan<std::int8_t, 4, 64, 1, S::sum, false>{}, {4});
  both(Scan<std::int64_t, 32, 16, 0, S::min, true>{}, {4});
  both(Scan<double, 1, 128, 0, S::sum, false>{}, {4});
  both(Scan<tj::bf16, 1, 256, 0, S::sum, false>{}, {4});
  both(DotScan{}, {1, 4});
  both(SliceScan{}, {4});
}

TEST_CASE("scans_lower_each_digit_where_it_lives") {
  // [1024] at 4 warps: 8 registers, 32 lanes, 4 warps along the dim; the code names the digits it joins.
  const auto g = tj::codegen::generate(tj::trace(Scan<float, 1, 1024, 0, S::sum, false>{}), {}, tj::codegen::target_for("sm_80"),
                                       {.num_warps = 4});
  CHECK(g.source.find("tj_shfl_xor") != std::string::npos);
  CHECK(g.source.find("tj_sc[") != std::string::npos);  // the warp digits, through shared memory
  // 12 warps: the radix-3 warp digit reads three siblings.
  const auto w = tj::codegen::generate(tj::trace(Scan<float, 1, 384, 0, S::sum, false>{}), {}, tj::codegen::target_for("sm_80"),
                                       {.num_warps = 12});
  CHECK(w.source.find("tj_e2") != std::string::npos);
  // One warp, 96 elements in 3 registers per lane: no shared memory, a radix-3 register digit.
  const auto r = tj::codegen::generate(tj::trace(Scan<float, 1, 96, 0, S::sum, false>{}), {}, tj::codegen::target_for("sm_80"),
                                       {.num_warps = 1});
  CHECK(r.source.find("tj_sc[") == std::string::npos);
  CHECK(r.source.find("3r") != std::string::npos);
}

TEST_CASE("scans_across_warps_use_bounded_shared_memory") {
  // A review found [128, 128] along axis 0 refused for 64 KiB of shared memory (a slot per register and thread).
  for (const char* arch : {"sm_80", "sm_90a", "gfx942"})
    for (int nw : {4, 8}) {
      CAPTURE(arch);
      CAPTURE(nw);
      const auto g = tj::codegen::generate(tj::trace(Scan<float, 128, 128, 0, S::sum, false>{}), {}, tj::codegen::target_for(arch),
                                           {.num_warps = nw});
      CHECK(g.shared_bytes <= 16384);
    }
}

TEST_CASE("scans_ir_prints_axis_and_direction") {
  const std::string p = tj::ir::print(tj::trace(Scan<float, 16, 96, 1, S::sum, true>{}));
  CHECK(p.find("scan_sum f32[16,96]") != std::string::npos);
  CHECK(p.find("axis=1 reverse") != std::string::npos);
}

namespace {

/// DotScan and SliceScan against sequential references (the dot's products summed in double).
void check_dot_and_slice(const tj::Device& dev, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  auto a = testing::random_tensor<tj::f16>(16 * 16, salt), b = testing::random_tensor<tj::f16>(16 * 32, salt + 1);
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    std::vector<float> y(16 * 32, NAN);
    testing::Mirror mm{dev, {}};
    auto* da = mm.up(a);
    auto* db = mm.up(b);
    auto* dy = mm.up(y);
    tj::compile<DotScan>(dev, {.num_warps = nw}).launch(tj::Grid{1}, da, db, dy);
    mm.down();
    int wrong = 0;
    for (int m = 0; m < 16; ++m) {
      double run_sum = 0;
      for (int n = 0; n < 32; ++n) {
        for (int k = 0; k < 16; ++k)
          run_sum += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(m * 16 + k)])) *
                     static_cast<double>(static_cast<float>(b[static_cast<std::size_t>(k * 32 + n)]));
        const float g = y[static_cast<std::size_t>(m * 32 + n)];
        if (!(std::abs(g - run_sum) <= 1e-5 * (n + 1) * (1 + std::abs(run_sum))) && wrong++ < 4)
          MESSAGE("row ", m, " col ", n, ": got ", g, ", want ", run_sum);
      }
    }
    CHECK(wrong == 0);
  }
  auto x = testing::random_floats(64 * 32, -1, 1, salt + 2);
  std::vector<double> want(64);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 32; ++c) want[static_cast<std::size_t>(r)] += x[static_cast<std::size_t>(r * 32 + c)];
  for (int r = 62; r >= 0; --r) want[static_cast<std::size_t>(r)] = std::max(want[static_cast<std::size_t>(r)], want[static_cast<std::size_t>(r) + 1]);
  for (int nw : {1, 4, 8}) {
    CAPTURE(nw);
    std::vector<float> y(64, NAN);
    testing::Mirror mm{dev, {}};
    auto* dx = mm.up(x);
    auto* dy = mm.up(y);
    tj::compile<SliceScan>(dev, {.num_warps = nw}).launch(tj::Grid{1}, dx, dy);
    mm.down();
    for (int r = 0; r < 64; ++r) CHECK(std::abs(y[static_cast<std::size_t>(r)] - want[static_cast<std::size_t>(r)]) <= 1e-4);
  }
}

}  // namespace

TEST_CASE("scans_interpreter_match_cpu") {
  check_all(OnDevice{tj::Device::interpreter()}, 300);
  check_dot_and_slice(tj::Device::interpreter(), 310);
}

TEST_CASE("scans_gpu_match_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_all(OnDevice{dev}, 400);
  check_dot_and_slice(dev, 410);
}

// The generated code itself, run on the CPU: wave32 (gfx1100, the CUDA warp's lanes) and wave64 (gfx942).
TEST_CASE("scans_generated_code_runs_on_the_host_emulator") {
  check_all(OnHost{"gfx1100"}, 500);
  check_all(OnHost{"gfx942"}, 600);
}

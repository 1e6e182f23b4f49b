// Dots whose accumulator is smaller than the program: 16x16 over 4 warps is one m16n8 tile pair, 32x16 over 8
// warps four. The layout plan used to refuse them ("does not fit mma.sync m16n8k16 tiles over 4 warps") at the
// default num_warps = 4; now the most warps that divide the accumulator compute it and the others hold copies
// (image-0 warp digits: stores and reductions count one copy). MFMA (gfx942) follows the same rule. Checked: the
// layouts name the copies, the code compiles for sm_80, sm_90a and gfx942, and the interpreter and (where there is
// one) the GPU match a CPU reference on fresh random inputs at 1, 4 and 8 warps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, std::int8_t>, int, float>;

/// c[M, N] = a[M, K] · b[K, N]; then c[M·N + m] = Σ_n c[m, n] and c[M·N + M + n] = max_m c[m, n] (reductions of the
/// accumulator across the warps that hold it, and past its copies).
template <int M, int N, int K, class T>
struct SmallDot {
  void operator()(tj::Ptr<T> a, tj::Ptr<T> b, tj::Ptr<Acc<T>> c) const {
    auto rm = tj::arange<M>();
    auto rn = tj::arange<N>();
    auto rk = tj::arange<K>();
    auto x = tj::load(a + tj::expand_dims<1>(rm) * K + tj::expand_dims<0>(rk));
    auto y = tj::load(b + tj::expand_dims<1>(rk) * N + tj::expand_dims<0>(rn));
    auto acc = tj::dot(x, y, tj::zeros<Acc<T>, M, N>());
    tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc);
    tj::store(c + M * N + rm, tj::sum<1>(acc));
    tj::store(c + M * N + M + rn, tj::max<0>(acc));
  }
};

/// c[M, N] = Σ_k a[M, k..k+K) · b[N, k..k+K)ᵀ over Kt, from descriptor blocks: on sm_90a TMA blocks that are no
/// wgmma shape (M = 16) become masked loads, on sm_80 .. sm_90 a cp.async ring that mma.sync reads with ldmatrix —
/// with warp copies at 4 warps.
template <int M, int N, int K>
struct DescSmallDot {
  void operator()(tj::Desc<tj::bf16, M, K> a, tj::Desc<tj::bf16, N, K> b, tj::Ptr<float> c, tj::Size Kt) const {
    auto acc = tj::for_range(0, Kt, K, tj::zeros<float, M, N>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(0, k0), tj::trans(b.load(0, k0)), acc); });
    tj::store(c + tj::expand_dims<1>(tj::arange<M>()) * N + tj::expand_dims<0>(tj::arange<N>()), acc);
  }
};

/// DescSmallDot<16, 16, 64> over Kt = 192 at 1, 4, 8 and 12 warps on `dev` (JIT target `arch`, "" = the device's own).
void check_desc_on(const tj::Device& dev, const std::string& arch, unsigned salt) {
  constexpr int M = 16, N = 16, K = 64, Kt = 192;
  CAPTURE(arch);
  CAPTURE(testing::fresh_seed());
  const auto a = testing::random_tensor<tj::bf16>(M * Kt, salt);
  const auto b = testing::random_tensor<tj::bf16>(N * Kt, salt + 1);
  std::vector<double> want(M * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < Kt; ++k)
        want[static_cast<std::size_t>(i * N + j)] += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(i * Kt + k)])) *
                                                     static_cast<float>(b[static_cast<std::size_t>(j * Kt + k)]);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  std::vector<float> c(M * N);
  void *da = const_cast<tj::bf16*>(a.data()), *db = const_cast<tj::bf16*>(b.data());
  float* dc = c.data();
  if (gpu) {
    da = dev.alloc(a.size() * 2);
    db = dev.alloc(b.size() * 2);
    dc = static_cast<float*>(dev.alloc(c.size() * 4));
    dev.copy_to_device(da, a.data(), a.size() * 2);
    dev.copy_to_device(db, b.data(), b.size() * 2);
  }
  const tj::TensorDescriptor ad(dev, da, tj::DType::bf16, {M, Kt}, {Kt, 1}, {M, K});
  const tj::TensorDescriptor bd(dev, db, tj::DType::bf16, {N, Kt}, {Kt, 1}, {N, K});
  for (int nw : {1, 4, 8, 12}) {
    CAPTURE(nw);
    std::fill(c.begin(), c.end(), NAN);
    if (gpu) dev.copy_to_device(dc, c.data(), c.size() * 4);
    tj::compile<DescSmallDot<M, N, K>>(dev, {.num_warps = nw, .arch = arch}).launch(tj::Grid{1}, ad, bd, dc, Kt);
    if (gpu) dev.copy_to_host(c.data(), dc, c.size() * 4);
    int wrong = 0;
    for (std::size_t i = 0; i < c.size(); ++i) wrong += !(std::abs(c[i] - want[i]) <= 1e-4 * (1 + std::abs(want[i])));
    CHECK(wrong == 0);
  }
  if (gpu) {
    dev.free(da);
    dev.free(db);
    dev.free(dc);
  }
}

template <class T>
std::vector<T> operand(std::size_t n, unsigned salt) {
  if constexpr (std::is_same_v<T, std::int8_t>) {
    std::vector<T> v;
    for (float f : testing::random_floats(n, -128, 128, salt)) v.push_back(static_cast<T>(std::floor(f)));
    return v;
  } else {
    return testing::random_tensor<T>(n, salt);
  }
}

/// The exact results (f64 over the operands as stored) and a bound on each element's error: an f32 operand goes
/// through tf32 on NVIDIA's tensor cores (10 explicit mantissa bits, so 2^-10 of Σ|a·b|) and at full precision on
/// MFMA and the interpreter; f16 / bf16 products are exact and summed in f32; i8 is exact.
template <int M, int N, int K, class T>
std::pair<std::vector<double>, std::vector<double>> reference(const std::vector<T>& a, const std::vector<T>& b) {
  auto val = [](T v) { return static_cast<double>(static_cast<float>(v)); };
  const double rel = std::is_same_v<T, float> ? 0x1p-10 : std::is_same_v<T, std::int8_t> ? 0 : 64 * 0x1p-24;
  const std::size_t n = static_cast<std::size_t>(M * N + M + N);
  std::vector<double> c(n, 0.0), bound(n, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        const double p = val(a[static_cast<std::size_t>(i * K + k)]) * val(b[static_cast<std::size_t>(k * N + j)]);
        s += p;
        mag += std::abs(p);
      }
      c[static_cast<std::size_t>(i * N + j)] = s;
      bound[static_cast<std::size_t>(i * N + j)] = rel * mag;
    }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      c[static_cast<std::size_t>(M * N + i)] += c[static_cast<std::size_t>(i * N + j)];
      bound[static_cast<std::size_t>(M * N + i)] += bound[static_cast<std::size_t>(i * N + j)] +
                                                    (rel > 0 ? 64 * 0x1p-24 * std::abs(c[static_cast<std::size_t>(i * N + j)]) : 0);
    }
  for (int j = 0; j < N; ++j) {
    double m = c[static_cast<std::size_t>(j)], e = 0;
    for (int i = 0; i < M; ++i) {
      m = std::max(m, c[static_cast<std::size_t>(i * N + j)]);
      e = std::max(e, bound[static_cast<std::size_t>(i * N + j)]);
    }
    c[static_cast<std::size_t>(M * N + M + j)] = m;
    bound[static_cast<std::size_t>(M * N + M + j)] = e;
  }
  return {c, bound};
}

template <int M, int N, int K, class T>
void check_on(const tj::Device& dev, unsigned salt) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  const auto a = operand<T>(static_cast<std::size_t>(M * K), salt);
  const auto b = operand<T>(static_cast<std::size_t>(K * N), salt + 1);
  const auto [want, bound] = reference<M, N, K, T>(a, b);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  std::vector<Acc<T>> c(want.size());
  T *da = const_cast<T*>(a.data()), *db = const_cast<T*>(b.data());
  Acc<T>* dc = c.data();
  if (gpu) {
    da = static_cast<T*>(dev.alloc(a.size() * sizeof(T)));
    db = static_cast<T*>(dev.alloc(b.size() * sizeof(T)));
    dc = static_cast<Acc<T>*>(dev.alloc(c.size() * sizeof(Acc<T>)));
    dev.copy_to_device(da, a.data(), a.size() * sizeof(T));
    dev.copy_to_device(db, b.data(), b.size() * sizeof(T));
  }
  for (int nw : {1, 4, 8, 12}) {
    CAPTURE(nw);
    // Poison: every element must be written (an integer output gets a value no product of these inputs reaches).
    std::fill(c.begin(), c.end(), std::is_same_v<Acc<T>, int> ? Acc<T>(0x7fff0000) : Acc<T>(NAN));
    if (gpu) dev.copy_to_device(dc, c.data(), c.size() * sizeof(Acc<T>));
    tj::compile<SmallDot<M, N, K, T>>(dev, {.num_warps = nw}).launch(tj::Grid{1}, da, db, dc);
    if (gpu) dev.copy_to_host(c.data(), dc, c.size() * sizeof(Acc<T>));
    int wrong = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const double got = static_cast<double>(c[i]);
      const bool bad = !(std::abs(got - want[i]) <= bound[i] + (std::is_same_v<T, std::int8_t> ? 0 : 1e-6));
      if (bad && wrong++ < 3) MESSAGE("element ", i, ": got ", got, ", want ", want[i], " within ", bound[i]);
    }
    CHECK(wrong == 0);
  }
  if (gpu) {
    dev.free(da);
    dev.free(db);
    dev.free(dc);
  }
}

template <int M, int N, int K, class T>
void compiles_everywhere(bool mfma) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  const auto k = tj::trace(SmallDot<M, N, K, T>{});
  for (int nw : {4, 8, 12}) {  // 12: copies over a radix-3 warp digit (4 warps compute, 3 copies each)
    CAPTURE(nw);
    for (const char* arch : {"sm_90a", "sm_80"}) {
      const auto g = tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw});
      bool named = false;  // the plan says the accumulator leaves warps to copies (fewer m16n8 tiles than warps)
      for (const auto& d : g.diagnostics) named = named || d.find("compute copies") != std::string::npos;
      CHECK(named == ((M / 16) * (N / 8) < nw));
      testing::compiles_for(g.source, arch, k.name);
    }
    if (!mfma) {
      CHECK_THROWS_WITH_AS(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}),
                           doctest::Contains("N = 8 is not"), tj::Unsupported);
      continue;
    }
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
  }
}

void all_on(const tj::Device& dev, unsigned salt) {
  check_on<16, 16, 16, tj::f16>(dev, salt);
  check_on<16, 16, 32, tj::bf16>(dev, salt + 2);
  check_on<32, 16, 16, tj::bf16>(dev, salt + 4);
  check_on<16, 16, 16, float>(dev, salt + 6);
  check_on<16, 8, 32, std::int8_t>(dev, salt + 8);
  check_on<16, 32, 32, std::int8_t>(dev, salt + 10);
}

}  // namespace

TEST_CASE("small_dots_compile_with_warp_copies_for_sm80_sm90a_and_gfx942") {
  compiles_everywhere<16, 16, 16, tj::f16>(true);
  compiles_everywhere<32, 16, 16, tj::bf16>(true);
  compiles_everywhere<16, 16, 16, float>(true);
  compiles_everywhere<16, 32, 32, std::int8_t>(true);
  compiles_everywhere<16, 8, 32, std::int8_t>(false);  // MFMA has no 8-wide N: refused naming N
}

TEST_CASE("small_dots_the_copies_are_image_zero_warp_digits") {
  // 16x16 over 4 warps: warps [1, 2] (the cheaper operand split) compute it, warps 2 and 3 are copies of 0 and 1.
  const auto k = tj::trace(SmallDot<16, 16, 16, tj::f16>{});
  const auto plan = tj::ir::assign_layouts(k, 4, 32, "sm_80");
  int dot = -1;
  for (std::size_t i = 0; i < k.nodes.size(); ++i)
    if (k.nodes[i].op == tj::ir::Op::dot) dot = static_cast<int>(i);
  REQUIRE(dot >= 0);
  const auto& l = plan.linear[static_cast<std::size_t>(plan.values[static_cast<std::size_t>(dot)].layout)];
  REQUIRE(l.in_size(l.in_dim_index("warp")) == 4);
  const auto w1 = l.apply({{"warp", 1}});
  CHECK(w1[0] == 0);
  CHECK(w1[1] == 8);  // the second warp takes columns 8..15
  const auto w2 = l.apply({{"warp", 2}});
  CHECK(w2[0] == 0);
  CHECK(w2[1] == 0);  // a copy of warp 0
  CHECK(l.apply({{"warp", 3}}) == w1);
  CHECK(l.apply({{"warp", 3}, {"lane", 5}, {"register", 1}}) == l.apply({{"warp", 1}, {"lane", 5}, {"register", 1}}));
}

TEST_CASE("small_dots_interpreter_matches_cpu") {
  all_on(tj::Device::interpreter(), 71);
  check_desc_on(tj::Device::interpreter(), "", 75);
}

TEST_CASE("small_dots_from_descriptor_blocks_compile_with_warp_copies") {
  const auto k = tj::trace(DescSmallDot<16, 16, 64>{});
  for (const char* arch : {"sm_90a", "sm_80"})
    for (int nw : {4, 8, 12}) {
      CAPTURE(arch);
      CAPTURE(nw);
      testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw}).source, arch, k.name);
    }
}

TEST_CASE("small_dots_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  all_on(dev, 81);
  check_desc_on(dev, "", 85);
  if (dev.compute_capability() == 90) check_desc_on(dev, "sm_90", 87);  // the cp.async + ldmatrix path an A100 runs
}

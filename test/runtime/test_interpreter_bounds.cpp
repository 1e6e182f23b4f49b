// The interpreter checks every unmasked load and store against the Device::interpreter().alloc allocation its
// pointer (or descriptor) argument points into: a missing mask is a typed error naming the element, the byte offset
// and the argument, never heap corruption or a segfault (a review found both).
#include <doctest/doctest.h>

#include <limits>

#include <cmath>

#include <cstdint>
#include <vector>

#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

/// y[i] = 2 x[i] + 1 for the 64 lanes from offset 64p + shift, masked to i < n when MASKED.
template <bool MASKED>
struct Axpy {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Size n, tj::Int shift) const {
    auto i = tj::program_id(0) * 64 + shift + tj::arange<64>();
    if constexpr (MASKED) {
      auto m = (i >= 0) & (i < n);
      tj::store(y + i, tj::load(x + i, m) * 2.0f + 1.0f, m);
    } else {
      tj::store(y + i, tj::load(x + i) * 2.0f + 1.0f);
    }
  }
};

/// Rank-1 descriptors over interpreter allocations: out-of-bounds lanes are masked by the descriptor's shape.
struct DescCopy {
  void operator()(tj::Desc<float, 64> x, tj::Desc<float, 64> y) const {
    auto i0 = tj::program_id(0) * 64 - 3;
    y.store(i0, x.load(i0) + 1.0f);
  }
};

/// A rank-1 descriptor loaded at a C++ literal coordinate (Coord), as written in a kernel.
template <auto Coord>
struct DescAtLiteral {
  void operator()(tj::Desc<float, 64> x, tj::Desc<float, 64> y) const { y.store(0, x.load(Coord)); }
};

/// y[i] = x[i] * a for a float parameter a.
struct ScaleBy {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Scalar<float> a) const {
    auto i = tj::arange<32>();
    tj::store(y + i, tj::load(x + i) * a);
  }
};

struct Alloc {
  tj::Device dev = tj::Device::interpreter();
  float* p;
  explicit Alloc(std::size_t n) : p(static_cast<float*>(dev.alloc(n * sizeof(float)))) {}
  ~Alloc() { dev.free(p); }
  Alloc(const Alloc&) = delete;
  Alloc& operator=(const Alloc&) = delete;
};

}  // namespace

TEST_CASE("interpreter_unmasked_accesses_past_an_allocation_are_typed_errors") {
  const auto dev = tj::Device::interpreter();
  const int n = 100;
  Alloc x(n), y(n);
  const auto src = testing::random_floats(n, -2, 2, 31);
  std::copy(src.begin(), src.end(), x.p);
  auto plain = tj::compile<Axpy<false>>(dev, {.num_warps = 2});
  // Program 1 covers 64..127 of 100 floats: its store of element 36 is the first past the end (byte 400).
  CHECK_THROWS_WITH_AS(plain.launch(tj::Grid{2}, x.p, y.p, n, 0),
                       doctest::Contains("element 36 of the load's addresses is out of bounds: byte offset 400 of argument 0"),
                       tj::InvalidArgument);
  // Below the allocation (shift -5: program 0's first lanes), and a gigabyte past it (this used to segfault).
  CHECK_THROWS_WITH_AS(plain.launch(tj::Grid{1}, x.p, y.p, n, -5), doctest::Contains("byte offset -20 of argument 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(plain.launch(tj::Grid{1}, x.p, y.p, n, 1 << 28), doctest::Contains("out of bounds"), tj::InvalidArgument);
  // The masked kernel is exact at the same edges, and the allocations are intact (free would crash otherwise).
  auto masked = tj::compile<Axpy<true>>(dev, {.num_warps = 2});
  for (int shift : {0, -5, 7}) {
    std::fill(y.p, y.p + n, -9.0f);
    masked.launch(tj::Grid{3}, x.p, y.p, n, shift);
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
      const bool written = i >= shift && i < 3 * 64 + shift;
      wrong += y.p[i] != (written ? src[static_cast<std::size_t>(i)] * 2.0f + 1.0f : -9.0f);
    }
    CHECK(wrong == 0);
  }
  // A store past the end of y alone (x in bounds: 64 elements from 36) names the store and argument 1.
  Alloc small(80);
  CHECK_THROWS_WITH_AS(plain.launch(tj::Grid{1}, x.p, small.p, n, 36),
                       doctest::Contains("element 44 of the store's addresses is out of bounds: byte offset 320 of argument 1"),
                       tj::InvalidArgument);
}

TEST_CASE("interpreter_bounds_follow_descriptors_and_skip_other_host_memory") {
  const auto dev = tj::Device::interpreter();
  const int n = 150;
  Alloc x(n), y(n);
  const auto src = testing::random_floats(n, -2, 2, 32);
  std::copy(src.begin(), src.end(), x.p);
  std::fill(y.p, y.p + n, -9.0f);
  using D = tj::TensorDescriptor;
  const D dx(dev, x.p, tj::DType::f32, {n}, {1}, {64}), dy(dev, y.p, tj::DType::f32, {n}, {1}, {64});
  tj::compile<DescCopy>(dev, {.num_warps = 2}).launch(tj::Grid{3}, dx, dy);  // lanes -3.. and ..188 masked by the shape
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += y.p[i] != src[static_cast<std::size_t>(i)] + 1.0f;
  CHECK(wrong == 0);
  // A descriptor whose shape claims more than the allocation holds is caught at the first lane past it.
  const D too_long(dev, x.p, tj::DType::f32, {n + 64}, {1}, {64});
  CHECK_THROWS_WITH_AS(tj::compile<DescCopy>(dev, {.num_warps = 2}).launch(tj::Grid{3}, too_long, dy),
                       doctest::Contains("byte offset 600 of argument 0"), tj::InvalidArgument);
  // std::vector memory is not the interpreter's: in-bounds kernels on it run as before (it cannot be checked).
  std::vector<float> hx(src.begin(), src.begin() + 128), hy(128, 0.0f);
  tj::compile<Axpy<false>>(dev, {.num_warps = 2}).launch(tj::Grid{2}, hx.data(), hy.data(), 128, 0);
  CHECK(hy[127] == hx[127] * 2.0f + 1.0f);
}

namespace {
/// Stores through `out` by a pointer carried (and advanced) by a loop; reads `in` only.
struct CarriedStore {
  void operator()(tj::Ptr<float> in, tj::Ptr<float> out) const {
    auto p = tj::for_range(0, 4, 1, out + tj::arange<16>() * 0, [&](tj::Int, auto q) {
      tj::store(q + tj::arange<16>(), tj::load(in + tj::arange<16>()));
      return q + 16;
    });
    (void)p;
  }
};
}  // namespace

TEST_CASE("literal_descriptor_coordinates_and_f32_arguments_that_do_not_fit_are_typed_errors") {
  // A coordinate is an i32: 1.9 is not row 1, 2^32 is not row 0 (both were narrowed silently).
  CHECK_NOTHROW(tj::trace(DescAtLiteral<64>{}));
  CHECK_NOTHROW(tj::trace(DescAtLiteral<-3.0>{}));
  CHECK_THROWS_WITH_AS(tj::trace(DescAtLiteral<1.9>{}), doctest::Contains("descriptor coordinate: the literal 1.9 is not a whole number"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(DescAtLiteral<4294967296LL>{}), doctest::Contains("the literal 4294967296 does not fit an i32"),
                       tj::InvalidArgument);
  // An f32 parameter refuses a finite double it cannot hold (it would arrive as inf); inf itself passes as inf.
  const auto dev = tj::Device::interpreter();
  const auto x = testing::random_floats(32, -1, 1, 35);
  std::vector<float> y(32, 0.0f);
  auto k = tj::compile<ScaleBy>(dev, {.num_warps = 1});
  k.launch(tj::Grid{1}, x.data(), y.data(), 2.0);
  CHECK(y[5] == x[5] * 2.0f);
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, x.data(), y.data(), 1e300),
                       doctest::Contains("= 1e+300 does not fit the kernel's f32 parameter"), tj::InvalidArgument);
  CHECK_THROWS_AS(k.launch(tj::Grid{1}, x.data(), y.data(), -4e38), tj::InvalidArgument);
  k.launch(tj::Grid{1}, x.data(), y.data(), std::numeric_limits<double>::infinity());
  CHECK(std::isinf(y[0]));
}

TEST_CASE("launch_refuses_a_pointer_to_const_for_a_parameter_the_kernel_stores_through") {
  const auto dev = tj::Device::interpreter();
  CHECK(tj::ir::stored_pointer_params(tj::trace(CarriedStore{})) == std::vector<char>{0, 1});
  CHECK(tj::ir::stored_pointer_params(tj::trace(Axpy<true>{})) == std::vector<char>{0, 1, 0, 0});
  const auto src = testing::random_floats(64, -1, 1, 33);
  std::vector<float> out(64, 0.0f);
  const float* in = src.data();
  auto k = tj::compile<CarriedStore>(dev, {.num_warps = 1});
  k.launch(tj::Grid{1}, in, out.data());  // a const input is fine
  CHECK(out[63] == src[15]);
  const float* const_out = out.data();
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, in, const_out),
                       doctest::Contains("argument 1 (arg1: ptr<f32>) of kernel CarriedStore is a pointer to const, but the kernel stores through it"),
                       tj::InvalidArgument);
}

// Reductions of every element type whose lanes combine through warp shuffles: u32, u64, i64 and f64 had no
// tj_shfl_xor overload (NVRTC: ambiguous call; HIP: i64 too), so such kernels ran on the interpreter and failed to
// compile for every GPU (a review found it). Checked: the generated code compiles for sm_90a, sm_80 and gfx942 at
// 1 and 4 warps; the interpreter and, where there is one, the GPU match a CPU reference on fresh random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

/// x [8, 64]: o[0..8) row sums, o[8..16) row maxima, o[16..80) column minima, o[80] the max of x's first row.
template <class T>
struct Reduce {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> o) const {
    auto r = tj::expand_dims<1>(tj::arange<8>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    auto v = tj::load(x + r * 64 + c);
    tj::store(o + tj::arange<8>(), tj::sum<1>(v));
    tj::store(o + 8 + tj::arange<8>(), tj::max<1>(v));
    tj::store(o + 16 + tj::arange<64>(), tj::min<0>(v));
    tj::store(o + 80, tj::max<0>(tj::load(x + tj::arange<64>())));
  }
};

template <class T>
std::vector<T> inputs(unsigned salt) {
  std::vector<T> x;
  for (float f : testing::random_floats(8 * 64, -1000, 1000, salt)) {
    if constexpr (std::is_floating_point_v<T>) x.push_back(static_cast<T>(f) / 7);
    else if constexpr (std::is_unsigned_v<T>)
      x.push_back(static_cast<T>(static_cast<T>(static_cast<std::int64_t>(f) + 1000) *
                                 (sizeof(T) == 8 ? T{1} << 40 : sizeof(T) == 4 ? static_cast<T>(1u << 20) : T{1})));
    else x.push_back(static_cast<T>(static_cast<std::int64_t>(f) * (sizeof(T) == 8 ? std::int64_t{1} << 40 : 1)));
  }
  return x;
}

template <class T>
std::vector<T> reference(const std::vector<T>& x) {
  std::vector<T> o(81);
  for (int r = 0; r < 8; ++r) {
    T s = 0, m = x[static_cast<std::size_t>(r) * 64];
    for (int c = 0; c < 64; ++c) {
      const T v = x[static_cast<std::size_t>(r) * 64 + c];
      s = static_cast<T>(s + v);  // unsigned: wraps, as on the GPU (the inputs keep signed sums in range)
      m = std::max(m, v);
    }
    o[static_cast<std::size_t>(r)] = s;
    o[8 + static_cast<std::size_t>(r)] = m;
  }
  for (int c = 0; c < 64; ++c) {
    T m = x[static_cast<std::size_t>(c)];
    for (int r = 1; r < 8; ++r) m = std::min(m, x[static_cast<std::size_t>(r) * 64 + c]);
    o[16 + static_cast<std::size_t>(c)] = m;
  }
  o[80] = *std::max_element(x.begin(), x.begin() + 64);
  return o;
}

template <class T>
void check_on(const tj::Device& dev, unsigned salt) {
  const auto x = inputs<T>(salt);
  std::vector<T> o(81, T{0});
  T *dx = const_cast<T*>(x.data()), *dout = o.data();
  if (dev.backend() != tj::Backend::interpreter) {
    dx = static_cast<T*>(dev.alloc(x.size() * sizeof(T)));
    dout = static_cast<T*>(dev.alloc(o.size() * sizeof(T)));
    dev.copy_to_device(dx, x.data(), x.size() * sizeof(T));
  }
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    tj::compile<Reduce<T>>(dev, {.num_warps = nw}).launch(tj::Grid{1}, dx, dout);
    if (dev.backend() != tj::Backend::interpreter) dev.copy_to_host(o.data(), dout, o.size() * sizeof(T));
    const auto want = reference(x);
    int wrong = 0;
    for (std::size_t i = 0; i < o.size(); ++i) {
      const bool sum = i < 8;
      if constexpr (std::is_floating_point_v<T>) wrong += sum ? std::abs(o[i] - want[i]) > 1e-9 * (1 + std::abs(want[i])) : o[i] != want[i];
      else wrong += o[i] != want[i];
    }
    CHECK(wrong == 0);
  }
  if (dev.backend() != tj::Backend::interpreter) {
    dev.free(dx);
    dev.free(dout);
  }
}

/// The code generated for `arch`, run on the CPU by the host emulator (lane shuffles and the cross-warp step included).
template <class T>
void check_on_host(const char* arch, unsigned salt) {
  CAPTURE(arch);
  const auto x = inputs<T>(salt);
  const auto want = reference(x);
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    const auto hk = testing::HostKernel::compile(
        tj::codegen::generate(tj::trace(Reduce<T>{}), {}, tj::codegen::target_for(arch), {.num_warps = nw}));
    if (!hk) return;
    std::vector<T> o(81, T{7});
    hk->launch({1, 1, 1}, const_cast<T*>(x.data()), o.data());
    int wrong = 0;
    for (std::size_t i = 0; i < o.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) wrong += i < 8 ? std::abs(o[i] - want[i]) > 1e-9 * (1 + std::abs(want[i])) : o[i] != want[i];
      else wrong += o[i] != want[i];
    }
    CHECK(wrong == 0);
  }
}

template <class T>
void compiles_everywhere() {
  const auto k = tj::trace(Reduce<T>{});
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    // At 4 warps the column minima of a 32- or 64-bit type combine 2 registers x 128 threads through shared memory:
    // 8 bytes each for a 64-bit type (u64's scratch was sized at 4 bytes a slot, and the GPU faulted past it). (8-
    // and 16-bit rows fit one warp's 16-byte accesses: no cross-warp step.)
    if (nw == 4 && sizeof(T) >= 4)
      CHECK(tj::codegen::generate(k, {}, tj::codegen::target_for("sm_90a"), {.num_warps = nw}).shared_bytes >=
            2 * 128 * static_cast<int>(sizeof(T) == 8 ? 8 : 4));
    for (const char* arch : {"sm_90a", "sm_80"})
      testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw}).source, arch, k.name);
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
  }
}

}  // namespace

TEST_CASE("reduce_dtypes_compile_for_sm90a_sm80_and_gfx942") {
  compiles_everywhere<std::uint32_t>();
  compiles_everywhere<std::uint64_t>();
  compiles_everywhere<std::int64_t>();
  compiles_everywhere<double>();
  // 8- and 16-bit integers: the shuffle's int result is cast back, so tj_max / tj_min take the register's type.
  compiles_everywhere<std::int16_t>();
  compiles_everywhere<std::uint16_t>();
  compiles_everywhere<std::int8_t>();
  compiles_everywhere<std::uint8_t>();
  const auto src = tj::codegen::generate(tj::trace(Reduce<std::int16_t>{}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 4}).source;
  CHECK(src.find("(short)tj_shfl_xor(") != std::string::npos);
}

TEST_CASE("reduce_dtypes_interpreter_matches_cpu") {
  const auto dev = tj::Device::interpreter();
  check_on<std::uint32_t>(dev, 51);
  check_on<std::uint64_t>(dev, 52);
  check_on<std::int64_t>(dev, 53);
  check_on<double>(dev, 54);
  check_on<std::int16_t>(dev, 55);
  check_on<std::uint8_t>(dev, 56);
}

TEST_CASE("reduce_dtypes_gpu_matches_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_on<std::uint32_t>(dev, 61);
  check_on<std::uint64_t>(dev, 62);
  check_on<std::int64_t>(dev, 63);
  check_on<double>(dev, 64);
  check_on<std::int16_t>(dev, 65);
  check_on<std::uint8_t>(dev, 66);
}

TEST_CASE("reduce_dtypes_generated_code_runs_on_the_host_emulator") {
  for (const char* arch : {"gfx1100", "gfx942"}) {
    check_on_host<std::uint32_t>(arch, 61);
    check_on_host<std::int64_t>(arch, 62);
    check_on_host<double>(arch, 63);
    check_on_host<std::int16_t>(arch, 64);
    check_on_host<std::uint8_t>(arch, 65);
  }
}

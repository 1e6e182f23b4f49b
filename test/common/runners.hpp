// Running a one-program kernel K(x, y) — input buffer x, output buffer y of the same size and element type — on the
// targets the suites check it on: a tj::Device (the interpreter or a GPU) through OnDevice, and the HIP text
// generated for an AMD target, compiled for the host and run there (test/common/host_emulator.hpp), through OnHost.
// Both poison y before the launch (NaN, or the type's minimum for integers) so an element not written shows.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include <tilejit/tilejit.hpp>

namespace testing {

/// n copies of T's poison value: quiet NaN, the minimum for integers.
template <class T>
std::vector<T> poisoned(std::size_t n) {
  if constexpr (std::is_arithmetic_v<T> && std::numeric_limits<T>::has_quiet_NaN) return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
  else if constexpr (std::is_arithmetic_v<T>) return std::vector<T>(n, std::numeric_limits<T>::min());
  else return std::vector<T>(n, T(NAN));  // f16, bf16
}

/// y = K(x) on `dev`, one program of `nw` warps.
struct OnDevice {
  const tilejit::Device& dev;
  template <class K, class T>
  std::vector<T> run(const std::vector<T>& x0, int nw) const {
    std::vector<T> x = x0, y = poisoned<T>(x.size());
    Mirror m{dev, {}};
    T* dx = m.up(x);
    T* dy = m.up(y);
    tilejit::compile<K>(dev, {.num_warps = nw}).launch(tilejit::Grid{1}, dx, dy);
    m.down();
    return y;
  }
};

/// y = K(x) by the HIP text generated for `arch` (gfx1100: wave32, the CUDA warp's lanes; gfx942: wave64), run on
/// the CPU; empty when the host has no clang to compile it.
struct OnHost {
  const char* arch;
  template <class K, class T>
  std::vector<T> run(const std::vector<T>& x0, int nw) const {
    std::vector<T> x = x0, y = poisoned<T>(x.size());
    const auto g = tilejit::codegen::generate(tilejit::trace(K{}), {}, tilejit::codegen::target_for(arch), {.num_warps = nw});
    const auto hk = HostKernel::compile(g);
    if (!hk) return {};
    hk->launch({1, 1, 1}, x.data(), y.data());
    return y;
  }
};

}  // namespace testing

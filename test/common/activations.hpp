// The fused epilogues' activations in f64 (examples/gemm/matmul_v5.hpp's Act): the references the GEMM tests compare
// against.
#pragma once
#include <algorithm>
#include <cmath>

#include "examples/gemm/matmul_v5.hpp"

namespace testing {

inline double act_ref(examples::Act a, double x) {
  switch (a) {
    case examples::Act::relu: return std::max(x, 0.0);
    case examples::Act::silu: return x / (1 + std::exp(-x));
    case examples::Act::gelu_tanh: return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    default: return x;
  }
}

}  // namespace testing

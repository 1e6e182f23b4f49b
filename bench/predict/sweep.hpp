// bench/predict/sweep.hpp — the predictor's training data: every candidate config of several kernel families timed
// on a GPU over many problem keys (autotuner races with a predict::Recorder and no persistence).
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tilejit/predict/ranker.hpp"

namespace sweep {
namespace tj = tilejit;
namespace pr = tilejit::predict;

struct Context {
  tj::Device dev;
  bool quick = false;                   ///< a few keys per family (a smoke run)
  pr::Dataset data;                     ///< samples are appended here
  std::function<void(const std::string&)> say;  ///< progress lines

  /// TuneOptions for a race of `family` that times every candidate (no stored winner, no persistence).
  tj::TuneOptions options(pr::Recorder& rec, const std::string& family) const;
  /// Append a race's timed candidates.
  void add(pr::Recorder& rec, const std::string& family, const tj::TuneReport& r);
  /// A device buffer of `bytes` random bytes in [lo, hi) per element of type T (freed by the caller).
  template <class T>
  T* random(std::size_t n, float lo = -1, float hi = 1) {
    std::vector<T> h(n);
    std::mt19937 g(static_cast<unsigned>(n * 2654435761u + 7));
    std::uniform_real_distribution<float> u(lo, hi);
    for (auto& x : h) x = static_cast<T>(u(g));
    auto* p = static_cast<T*>(dev.alloc(n * sizeof(T)));
    dev.copy_to_device(p, h.data(), n * sizeof(T));
    return p;
  }
};

void gemm(Context& c);     // sweep_gemm.cpp: the library GEMM's races (f32 out, bf16 / f16 in; the bf16-out store race)
void rowwise(Context& c);  // sweep_rowwise.cpp: softmax (f32, bf16), vector add, int4 dequant
void matmul_v1(Context& c);  // sweep_v1.cpp: rung 1's GEMM (loads to registers, mma.sync / wgmma-free)
void attention(Context& c);  // sweep_attention.cpp: the FlashAttention forward (pointer loads), full and causal

}  // namespace sweep

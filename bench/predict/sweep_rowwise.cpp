// bench/predict/sweep_rowwise.cpp — memory-bound families as training data: softmax (f32, bf16), vector add, int4
// dequant, over tile sizes and warps (see sweep.hpp).
#include <fmt/format.h>

#include <cstdint>

#include "bench/predict/sweep.hpp"
#include "examples/dequant_int4.hpp"
#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"

namespace sweep {
namespace {

constexpr int kWarps[] = {1, 2, 4, 8};

/// Every BLOCK of the pack with every warp count; the config's params are {NAME: BLOCK}.
template <template <int> class K, int... B>
auto candidates(const char* name) {
  std::vector<tj::CandidateFor<K<1024>>> out;
  auto add = [&]<int BLK>() {
    for (int nw : kWarps) out.push_back(tj::cand<K<BLK>>(tj::Config{{{name, BLK}}, nw, 1}));
  };
  (add.template operator()<B>(), ...);
  return out;
}

template <int W, class T>
struct SoftmaxOf {
  template <int BM>
  using K = examples::Softmax<BM, W, T>;
};
template <int B>
using VecAddF = examples::VecAdd<B, float>;
template <int B>
using Dequant = examples::DequantInt4<B, 128>;

template <int W, class T>
void softmax(Context& c, const char* family) {
  pr::Recorder rec;
  tj::Autotuner tuner(fmt::format("{}_w{}", family, W), candidates<SoftmaxOf<W, T>::template K, 1, 2, 4, 8, 16>("BLOCK_M"),
                      c.options(rec, family));
  std::vector<long long> rows_list;
  for (long long bytes : {8LL << 20, 64LL << 20, 512LL << 20}) rows_list.push_back(bytes / (W * static_cast<long long>(sizeof(T))));
  if (c.quick) rows_list.resize(1);
  const long long most = rows_list.back() * W;
  T* x = c.random<T>(static_cast<std::size_t>(most));
  T* y = static_cast<T*>(c.dev.alloc(static_cast<std::size_t>(most) * sizeof(T)));
  for (long long rows : rows_list) {
    const tj::TuneKey key{{"rows", rows}, {"width", W}};
    auto grid = [rows](const tj::Config& cfg) { return tj::Grid{tj::cdiv(rows, cfg.param("BLOCK_M"))}; };
    try {
      c.add(rec, family, tuner.tune(key, grid, x, y, rows));
    } catch (const std::exception& e) {
      c.say(fmt::format("{} rows {}: {}", family, rows, e.what()));
    }
  }
  c.dev.free(x), c.dev.free(y);
}

void vecadd(Context& c) {
  pr::Recorder rec;
  tj::Autotuner tuner("vecadd_f32", candidates<VecAddF, 256, 512, 1024, 2048, 4096, 8192>("BLOCK"), c.options(rec, "vecadd_f32"));
  std::vector<long long> ns{1LL << 16, 1LL << 20, 1LL << 24, 1LL << 27};
  if (c.quick) ns.resize(2);
  float* x = c.random<float>(static_cast<std::size_t>(ns.back()));
  float* y = c.random<float>(static_cast<std::size_t>(ns.back()));
  auto* o = static_cast<float*>(c.dev.alloc(static_cast<std::size_t>(ns.back()) * sizeof(float)));
  for (long long n : ns) {
    auto grid = [n](const tj::Config& cfg) { return tj::Grid{tj::cdiv(n, cfg.param("BLOCK"))}; };
    try {
      c.add(rec, "vecadd_f32", tuner.tune(tj::TuneKey{{"n", n}}, grid, x, y, o, n));
    } catch (const std::exception& e) {
      c.say(fmt::format("vecadd n {}: {}", n, e.what()));
    }
  }
  c.dev.free(x), c.dev.free(y), c.dev.free(o);
}

void dequant(Context& c) {
  pr::Recorder rec;
  tj::Autotuner tuner("dequant_int4", candidates<Dequant, 256, 512, 1024, 2048, 4096>("BLOCK"), c.options(rec, "dequant_int4"));
  std::vector<long long> ns{1LL << 20, 1LL << 24, 1LL << 27};
  if (c.quick) ns.resize(1);
  auto* w = c.random<std::uint8_t>(static_cast<std::size_t>(ns.back()), 0, 255);
  float* s = c.random<float>(static_cast<std::size_t>(ns.back() * 2 / 128));
  auto* o = static_cast<tj::f16*>(c.dev.alloc(static_cast<std::size_t>(ns.back()) * 2 * sizeof(tj::f16)));
  for (long long n : ns) {
    auto grid = [n](const tj::Config& cfg) { return tj::Grid{tj::cdiv(n, cfg.param("BLOCK"))}; };
    try {
      c.add(rec, "dequant_int4", tuner.tune(tj::TuneKey{{"n_bytes", n}}, grid, w, s, o, n));
    } catch (const std::exception& e) {
      c.say(fmt::format("dequant n_bytes {}: {}", n, e.what()));
    }
  }
  c.dev.free(w), c.dev.free(s), c.dev.free(o);
}

}  // namespace

void rowwise(Context& c) {
  softmax<768, float>(c, "softmax_f32");
  softmax<4096, float>(c, "softmax_f32");
  softmax<1024, tj::bf16>(c, "softmax_bf16");
  softmax<3072, tj::bf16>(c, "softmax_bf16");
  vecadd(c);
  dequant(c);
}

}  // namespace sweep

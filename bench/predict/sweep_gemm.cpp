// bench/predict/sweep_gemm.cpp — the library GEMM's races as training data (see sweep.hpp).
#include <fmt/format.h>

#include <tuple>

#include "bench/predict/sweep.hpp"
#include "examples/gemm/gemm.hpp"

namespace sweep {
namespace {

/// Shapes of ../shared/cases/workloads.md (Llama-3-8B projections at several token counts, squares, narrow N) and
/// more of the same kinds, all on the tuned path (M > 128).
std::vector<std::tuple<long long, long long, long long>> shapes(bool quick) {
  if (quick) return {{4096, 4096, 4096}, {8192, 192, 8192}};
  return {{4096, 4096, 4096},   {8192, 8192, 8192},   {2048, 2048, 2048},   {1024, 1024, 1024},  {4096, 6144, 4096},
          {4096, 28672, 4096},  {4096, 4096, 14336},  {16384, 6144, 4096}, {16384, 4096, 14336}, {1024, 6144, 4096},
          {1024, 28672, 4096},  {1024, 4096, 14336},  {8192, 96, 8192},     {8192, 192, 8192},    {16384, 96, 8192},
          {4096, 192, 4096},    {512, 4096, 4096},    {256, 8192, 8192},    {16384, 3072, 3072},  {3072, 3072, 3072},
          {8192, 1024, 8192},   {2048, 8192, 2048},   {6144, 6144, 6144},   {4096, 1536, 4096}};
}

template <class T, class Out>
void race(Context& c) {
  const auto list = shapes(c.quick);
  long long most_a = 0, most_b = 0, most_c = 0;
  for (auto [M, N, K] : list) most_a = std::max(most_a, M * K), most_b = std::max(most_b, N * K), most_c = std::max(most_c, M * N);
  T* a = c.random<T>(static_cast<std::size_t>(most_a));
  T* b = c.random<T>(static_cast<std::size_t>(most_b));
  auto* out = static_cast<Out*>(c.dev.alloc(static_cast<std::size_t>(most_c) * sizeof(Out)));
  pr::Recorder rec;
  const std::string family = std::is_same_v<Out, float> ? fmt::format("gemm_tn_{}", tj::name(tj::dtype_v<T>))
                                                        : fmt::format("gemm_tn_{}_out_{}", tj::name(tj::dtype_v<T>), tj::name(tj::dtype_v<Out>));
  examples::Gemm<T, Out> g(c.dev, c.options(rec, family));
  for (auto [M, N, K] : list) {
    try {
      g(a, b, out, M, N, K);
      c.dev.synchronize();
      const tj::TuneReport& r = g.report(M, N, K);
      c.add(rec, family, r);
    } catch (const std::exception& e) {
      c.say(fmt::format("gemm {}x{}x{}: {}", M, N, K, e.what()));
    }
  }
  c.dev.free(a), c.dev.free(b), c.dev.free(out);
}

}  // namespace

void gemm(Context& c) {
  race<tj::bf16, float>(c);
  race<tj::f16, float>(c);
  race<tj::bf16, tj::bf16>(c);
}

}  // namespace sweep

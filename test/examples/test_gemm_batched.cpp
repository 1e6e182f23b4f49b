// The batched GEMM library call, examples::GemmBatched<T, Out> (examples/gemm/gemm_batched.hpp): against f64 on
// fresh random inputs with C poisoned (every element written) and a guard after C (nothing written past it), in the
// interpreter and, on a GPU, on each plan (Hopper's persistent TMA-store kernel, the cp.async + mma.sync one); every
// rule it checks, each with the value it names.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "examples/gemm/gemm_batched.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {

/// C [batch, M, N] from GemmBatched against f64; C followed by `guard` elements that must keep their poison.
template <class T, class Out>
void batched_case(const tj::Device& dev, long long batch, long long M, long long N, long long K, bool mma_sync = false) {
  CAPTURE(batch);
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(mma_sync);
  CAPTURE(testing::fresh_seed());
  std::vector<T> a, b;
  for (float v : testing::random_floats(static_cast<std::size_t>(batch * M * K), -1, 1, 61)) a.push_back(T(v));
  for (float v : testing::random_floats(static_cast<std::size_t>(batch * N * K), -1, 1, 62)) b.push_back(T(v));
  const std::size_t nc = static_cast<std::size_t>(batch * M * N), guard = 64;
  std::vector<Out> c(nc + guard);
  std::memset(static_cast<void*>(c.data()), 0xff, c.size() * sizeof(Out));  // NaN in f32, bf16 and f16
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  T *pa = a.data(), *pb = b.data();
  Out* pc = c.data();
  if (gpu) {
    pa = static_cast<T*>(dev.alloc(a.size() * sizeof(T)));
    pb = static_cast<T*>(dev.alloc(b.size() * sizeof(T)));
    pc = static_cast<Out*>(dev.alloc(c.size() * sizeof(Out)));
    dev.copy_to_device(pa, a.data(), a.size() * sizeof(T));
    dev.copy_to_device(pb, b.data(), b.size() * sizeof(T));
    dev.copy_to_device(pc, c.data(), c.size() * sizeof(Out));
  }
  examples::GemmBatched<T, Out> bmm(dev);
  bmm.set_mma_sync_path(mma_sync);
  bmm(pa, pb, pc, batch, M, N, K);
  MESSAGE("plan: ", bmm.plan());
  if (gpu) {
    dev.copy_to_host(c.data(), pc, c.size() * sizeof(Out));
    dev.free(pa), dev.free(pb), dev.free(pc);
  }
  double num = 0, den = 0;
  std::size_t unwritten = 0;
  for (long long z = 0; z < batch; ++z)
    for (long long i = 0; i < M; ++i)
      for (long long j = 0; j < N; ++j) {
        double s = 0;
        for (long long k = 0; k < K; ++k)
          s += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>((z * M + i) * K + k)])) *
               static_cast<float>(b[static_cast<std::size_t>((z * N + j) * K + k)]);
        const double got = static_cast<float>(c[static_cast<std::size_t>((z * M + i) * N + j)]);
        unwritten += !std::isfinite(got);
        num += (got - s) * (got - s);
        den += s * s;
      }
  CHECK(unwritten == 0);
  std::size_t guard_written = 0;
  for (std::size_t i = nc; i < c.size(); ++i) guard_written += !std::isnan(static_cast<float>(c[i]));
  CHECK(guard_written == 0);
  CHECK(std::sqrt(num / den) < (std::is_same_v<Out, float> ? 1e-5 : std::is_same_v<Out, tj::bf16> ? 1e-2 : 5e-3));
}

}  // namespace

TEST_CASE("gemm_batched_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  batched_case<tj::bf16, float>(dev, 3, 37, 52, 72);  // ragged M and N, K half a block past 64
  batched_case<tj::f16, tj::f16>(dev, 2, 70, 24, 64);
  batched_case<tj::bf16, tj::bf16>(dev, 1, 64, 64, 128);
}

TEST_CASE("gemm_batched_rules") {
  using G = examples::GemmBatched<tj::bf16, float>;
  alignas(16) static tj::bf16 a[4096], b[4096];
  alignas(16) static float c[4096];
  auto rule = [&](auto&& f, const char* what) { CHECK_THROWS_WITH_AS(f(), doctest::Contains(what), tj::InvalidArgument); };
  rule([&] { G::check(a, b, c, 0, 4, 8, 8); }, "batch = 0, M = 4, N = 8, K = 8: every extent must be >= 1");
  rule([&] { G::check(a, b, c, 2, 4, 8, -8); }, "K = -8: every extent must be >= 1");
  rule([&] { G::check(a, b, c, 2, 4, 8, 12); }, "K = 12 gives rows of 24 bytes");
  rule([&] { G::check(a, b, c, 2, 4, 6, 8); }, "N = 6 gives C rows of 24 bytes");
  rule([&] { G::check(a + 1, b, c, 2, 4, 8, 8); }, "A = ");
  rule([&] { G::check(a, nullptr, c, 2, 4, 8, 8); }, "B = ");
  rule([&] { G::check(a, b, c + 2, 2, 4, 8, 8); }, "must be a non-null, 16-byte aligned device pointer");
  rule([&] { G::check(a, b, c, 4096, 4096, 4096, 256); }, "A [batch, M, K] = [4096, 4096, 256] has more than 2^31 - 1 elements");
  rule([&] { G::check(a, b, c, 1LL << 40, 1LL << 40, 8, 8); }, "has more than 2^31 - 1 elements");
  rule([&] { G::check(a, b, reinterpret_cast<float*>(a), 2, 4, 8, 8); }, "overlaps A");
  rule([&] { G::check(a, b, reinterpret_cast<float*>(b + 16), 2, 4, 8, 8); }, "overlaps B");
  CHECK_NOTHROW(G::check(a, b, c, 2, 4, 8, 8));
  // A batch of more than 65535 entries (grid.y's limit) is split into launches of at most 65535 off Hopper.
  using Chunks = std::vector<std::pair<long long, long long>>;
  CHECK(G::batch_chunks(1) == Chunks{{0, 1}});
  CHECK(G::batch_chunks(65535) == Chunks{{0, 65535}});
  CHECK(G::batch_chunks(65536) == Chunks{{0, 65535}, {65535, 1}});
  CHECK(G::batch_chunks(200000) == Chunks{{0, 65535}, {65535, 65535}, {131070, 65535}, {196605, 3395}});
  // The call checks before it builds anything.
  examples::GemmBatched<tj::bf16, float> bmm(tj::Device::interpreter());
  CHECK_THROWS_AS(bmm(a, b, c, 2, 4, 6, 8), tj::InvalidArgument);
  CHECK(bmm.plan().empty());
}

TEST_CASE("gemm_batched_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 80) {
    MESSAGE("no NVIDIA GPU of sm_80 or newer: skipping");
    return;
  }
  for (bool mma_sync : {false, true}) {
    batched_case<tj::bf16, float>(dev, 5, 300, 260, 200, mma_sync);
    batched_case<tj::bf16, tj::bf16>(dev, 3, 700, 600, 256, mma_sync);
    batched_case<tj::f16, tj::f16>(dev, 2, 129, 136, 64, mma_sync);
    batched_case<tj::bf16, float>(dev, 64, 100, 100, 128, mma_sync);  // more tiles than SMs, each entry one tile
    batched_case<tj::bf16, float>(dev, 70000, 4, 8, 8, mma_sync);     // more entries than grid.y allows: two launches off Hopper
  }
}

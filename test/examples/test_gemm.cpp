// GEMM rung 1: the interpreter against an f64 reference (incl. N = 96 and
// ragged M/N/K), NVRTC compiles, and (on a GPU) the device against the reference.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "examples/gemm/matmul_v1.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {

template <class T>
struct Problem {
  int M, N, K;
  std::vector<T> a, b;
  std::vector<double> ref;
  Problem(int m, int n, int k, unsigned salt) : M(m), N(n), K(k) {
    auto af = testing::random_floats(static_cast<std::size_t>(m) * k, -1, 1, salt);
    auto bf = testing::random_floats(static_cast<std::size_t>(k) * n, -1, 1, salt + 1);
    for (float x : af) a.push_back(T(x));
    for (float x : bf) b.push_back(T(x));
    ref.assign(static_cast<std::size_t>(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
      for (int kk = 0; kk < k; ++kk) {
        const double x = static_cast<float>(a[static_cast<std::size_t>(i) * k + kk]);
        for (int j = 0; j < n; ++j) ref[static_cast<std::size_t>(i) * n + j] += x * static_cast<float>(b[static_cast<std::size_t>(kk) * n + j]);
      }
  }
};

template <int BM, int BN, int BK, class T>
void interp_gemm(int M, int N, int K) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  Problem<T> p(M, N, K, static_cast<unsigned>(M * 7 + N));
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  auto k = tj::compile<examples::MatmulV1<BM, BN, BK, T>>(tj::Device::interpreter(), {.num_warps = 4});
  k.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, p.a.data(), p.b.data(), c.data(), M, N, K);
  for (float v : c) REQUIRE(!std::isnan(v));  // every element written
  CHECK(testing::rel_error(c, p.ref) < 1e-6);  // exact products, f32 sums
}

}  // namespace

TEST_CASE("gemm_v1_interpreter_matches_f64") {
  interp_gemm<32, 32, 32, tj::bf16>(64, 64, 64);
  interp_gemm<32, 96, 32, tj::bf16>(40, 96 * 2, 70);  // N = 96 tiles, ragged M and K
  interp_gemm<64, 48, 16, tj::f16>(70, 50, 33);        // ragged everything
}

TEST_CASE("gemm_v1_compiles_with_nvrtc") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  for (std::string arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<64, 64, 32, tj::bf16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<64, 96, 32, tj::f16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::MatmulV1<128, 192, 32, tj::bf16>>(arch, {.num_warps = 8}));
  }
}

TEST_CASE("gemm_v1_hip_has_no_mfma_lowering_yet") {
  // Documented gap: `dot` lowers to mma.sync only; the HIP backend says so clearly.
  CHECK_THROWS_WITH_AS(tj::codegen::generate(tj::trace(examples::MatmulV1<64, 64, 32, tj::bf16>{}), {},
                                             tj::codegen::target_for("gfx942"), {4}),
                       doctest::Contains("no MFMA lowering yet"), tj::Unsupported);
}

namespace {
template <class Kern, int BM, int BN, int WARPS, class T>
struct Variant {
  using kernel = Kern;
  using elem = T;
  static constexpr int bm = BM, bn = BN, warps = WARPS;
};
template <class V>
void gpu_gemm(const tj::Device& dev, int M, int N, int K, double tol) {
  using T = typename V::elem;
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(testing::fresh_seed());
  Problem<T> p(M, N, K, static_cast<unsigned>(M + N + K));
  auto* da = static_cast<T*>(dev.alloc(p.a.size() * sizeof(T)));
  auto* db = static_cast<T*>(dev.alloc(p.b.size() * sizeof(T)));
  auto* dc = static_cast<float*>(dev.alloc(static_cast<std::size_t>(M) * N * 4));
  dev.copy_to_device(da, p.a.data(), p.a.size() * sizeof(T));
  dev.copy_to_device(db, p.b.data(), p.b.size() * sizeof(T));
  dev.memset(dc, 0xff, static_cast<std::size_t>(M) * N * 4);  // NaN poison
  auto k = tj::compile<typename V::kernel>(dev, {.num_warps = V::warps});
  k.launch(tj::Grid{tj::cdiv(M, V::bm), tj::cdiv(N, V::bn)}, da, db, dc, M, N, K);
  std::vector<float> c(static_cast<std::size_t>(M) * N);
  dev.copy_to_host(c.data(), dc, c.size() * 4);
  for (float v : c) REQUIRE(!std::isnan(v));
  CHECK(testing::rel_error(c, p.ref) < tol);
  dev.free(da), dev.free(db), dev.free(dc);
}
}  // namespace

TEST_CASE("gemm_v1_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  gpu_gemm<Variant<examples::MatmulV1<64, 64, 32, tj::bf16>, 64, 64, 4, tj::bf16>>(dev, 256, 256, 256, 1e-5);
  gpu_gemm<Variant<examples::MatmulV1<64, 96, 32, tj::f16>, 64, 96, 4, tj::f16>>(dev, 200, 96 * 3, 100, 1e-5);
  gpu_gemm<Variant<examples::MatmulV1<128, 192, 32, tj::bf16>, 128, 192, 8, tj::bf16>>(dev, 300, 192 * 2, 520, 1e-5);
}

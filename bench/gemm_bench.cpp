// GEMM against cuBLAS in one binary (Google Benchmark), over the shapes of
// ../shared/cases/workloads.md. C[M,N] (f32) = A[M,K] · B[K,N], bf16 inputs,
// row-major. cuBLAS is loaded with dlopen (libcublas.so.13 on the device),
// so this binary needs no CUDA library at link time.
//
//   BM_Cublas/M/N/K          cublasGemmEx, bf16 x bf16 -> f32, compute 32F
//   BM_TilejitV1/M/N/K       examples/gemm/matmul_v1.hpp (rung 1: mma.sync, no pipelining; compiled by
//                            today's compiler, so it gets rung 2's layouts too — docs/gemm.md)
//   BM_TilejitV2/M/N/K       examples/gemm/matmul_v2.hpp (rung 2: operands loaded in the mma
//                            layouts, index vectors rematerialised, 4x2 warp grid at 8 warps)
//   BM_CublasTN/M/N/K        cublasGemmEx with B stored [N, K] (C = A·Bᵀ, the layout rung 5 computes)
//   BM_TilejitV5/BMxBN/S     examples/gemm/matmul_v5.hpp (rung 5: descriptors, TMA ring of S stages, async wgmma)
// Counters: TFLOP/s (2·M·N·K per run). Without a GPU every case is skipped.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <random>
#include <vector>

#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v3.hpp"
#include "examples/gemm/matmul_v4.hpp"
#include "examples/gemm/matmul_v2.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "tilejit/ir/remat.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace {

tj::Device& gpu() {
  static tj::Device d = tj::Device::best();
  return d;
}

struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                                    cudaDataType, int, const void*, cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  GemmEx gemm = nullptr;
  cublasHandle_t h = nullptr;
  bool ok = false;
  Cublas() {
    void* so = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!so) so = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    if (!so) return;
    create = reinterpret_cast<decltype(create)>(dlsym(so, "cublasCreate_v2"));
    gemm = reinterpret_cast<decltype(gemm)>(dlsym(so, "cublasGemmEx"));
    ok = create && gemm && create(&h) == CUBLAS_STATUS_SUCCESS;
  }
};
Cublas& cublas() {
  static Cublas c;
  return c;
}

struct Operands {
  void *a, *b, *c;
  Operands(long M, long N, long K) {
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<tj::bf16> h(static_cast<std::size_t>(std::max(M * K, K * N)));
    for (auto& x : h) x = tj::bf16(d(g));
    a = gpu().alloc(M * K * 2);
    b = gpu().alloc(K * N * 2);
    c = gpu().alloc(M * N * 4);
    gpu().copy_to_device(a, h.data(), M * K * 2);
    gpu().copy_to_device(b, h.data(), K * N * 2);
  }
  ~Operands() { gpu().free(a), gpu().free(b), gpu().free(c); }
};

template <class F>
void timed(benchmark::State& st, double flops, F&& fn) {
  fn();
  gpu().synchronize();
  for (auto _ : st) st.SetIterationTime(gpu().time_ms({}, fn) / 1e3);
  st.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Cublas(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok) return st.SkipWithError("no GPU / cuBLAS");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const float one = 1, zero = 0;
  // Row-major C = A·B is column-major C^T = B^T·A^T: swap the operands.
  timed(st, 2.0 * M * N * K, [&] {
    cublas().gemm(cublas().h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &one, o.b,
                  CUDA_R_16BF, static_cast<int>(N), o.a, CUDA_R_16BF, static_cast<int>(K), &zero, o.c, CUDA_R_32F,
                  static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
}

void BM_CublasTN(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok) return st.SkipWithError("no GPU / cuBLAS");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const float one = 1, zero = 0;
  // Row-major C = A·Bᵀ with B [N, K] is column-major Cᵀ = op_T(B_cm) · A_cm.
  timed(st, 2.0 * M * N * K, [&] {
    cublas().gemm(cublas().h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &one, o.b,
                  CUDA_R_16BF, static_cast<int>(K), o.a, CUDA_R_16BF, static_cast<int>(K), &zero, o.c, CUDA_R_32F,
                  static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
}

template <int BM, int BN, int STAGES>
void BM_TilejitV5(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  using D = tj::TensorDescriptor;
  D a(gpu(), o.a, tj::DType::bf16, {M, K}, {K, 1}, {BM, 64}, {.swizzle = D::Swizzle::b128});
  D b(gpu(), o.b, tj::DType::bf16, {N, K}, {K, 1}, {BN, 64}, {.swizzle = D::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV5<BM, BN, tj::bf16>>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES});
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, a, b, static_cast<float*>(o.c), M, N, K);
  });
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x64 stages " + std::to_string(STAGES));
}

template <int BM, int BN, int BK, int NW>
void BM_TilejitV1(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  auto k = tj::compile<examples::MatmulV1<BM, BN, BK, tj::bf16>>(gpu(), {.num_warps = NW});
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, static_cast<tj::bf16*>(o.a), static_cast<tj::bf16*>(o.b),
             static_cast<float*>(o.c), M, N, K);
  });
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK) + " warps " + std::to_string(NW));
}

/// Any rung: compile K for the device (codegen rematerialises and picks
/// mma.sync or wgmma by target) and time it.
template <class K, int BM, int BN, int NW>
void BM_Tilejit(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), Kd = st.range(2);
  Operands o(M, N, Kd);
  auto k = tj::compile<K>(gpu(), {.num_warps = NW});
  timed(st, 2.0 * M * N * Kd, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM), tj::cdiv(N, BN)}, static_cast<tj::bf16*>(o.a), static_cast<tj::bf16*>(o.b),
             static_cast<float*>(o.c), M, N, Kd);
  });
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + " warps " + std::to_string(NW));
}

void shapes(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096, 4096})->Args({8192, 8192, 8192})->Args({4096, 6144, 4096})->Args({8192, 96, 8192})->Args({8192, 192, 8192});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_Cublas)->Apply(shapes);
// Rung 1's source with today's compiler (rematerialisation, anchored operand layouts): rung 2.
BENCHMARK(BM_TilejitV1<128, 128, 32, 8>)->Name("BM_TilejitV2/128x128")->Apply(shapes);
BENCHMARK(BM_TilejitV1<128, 96, 32, 8>)->Name("BM_TilejitV2/128x96")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV1<128, 192, 32, 8>)->Name("BM_TilejitV2/128x192")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
// Rung 3: BLOCK_K = 64, one warp per 16 rows: wgmma on sm_90a.
BENCHMARK(BM_Tilejit<examples::MatmulV3<128, 128, tj::bf16>, 128, 128, 8>)->Name("BM_TilejitV3/128x128")->Apply(shapes);
BENCHMARK(BM_Tilejit<examples::MatmulV3<128, 192, tj::bf16>, 128, 192, 8>)->Name("BM_TilejitV3/128x192")->Apply(shapes);
BENCHMARK(BM_Tilejit<examples::MatmulV3<128, 96, tj::bf16>, 128, 96, 8>)->Name("BM_TilejitV3/128x96")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tilejit<examples::MatmulV3<64, 96, tj::bf16>, 64, 96, 4>)->Name("BM_TilejitV3/64x96")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tilejit<examples::MatmulV3<64, 192, tj::bf16>, 64, 192, 4>)->Name("BM_TilejitV3/64x192")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
// Rung 4: rung 3 plus loads of step k+1 in flight during the dot of step k (in the kernel source).
BENCHMARK(BM_Tilejit<examples::MatmulV4<128, 192, tj::bf16>, 128, 192, 8>)->Name("BM_TilejitV4/128x192")->Apply(shapes);
BENCHMARK(BM_Tilejit<examples::MatmulV4<128, 128, tj::bf16>, 128, 128, 8>)->Name("BM_TilejitV4/128x128")->Args({8192, 8192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tilejit<examples::MatmulV4<64, 96, tj::bf16>, 64, 96, 4>)->Name("BM_TilejitV4/64x96")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tilejit<examples::MatmulV4<64, 192, tj::bf16>, 64, 192, 4>)->Name("BM_TilejitV4/64x192")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
// Rung 5: descriptors, a TMA + mbarrier ring, wgmma straight from shared memory, one group in flight.
void shapes_tn(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096, 4096})->Args({8192, 8192, 8192})->Args({4096, 6144, 4096})->Args({4096, 28672, 4096})
      ->Args({4096, 4096, 14336})->Args({16384, 6144, 4096})->Args({8192, 96, 8192})->Args({8192, 192, 8192});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_CublasTN)->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 256, 3>)->Name("BM_TilejitV5/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 256, 4>)->Name("BM_TilejitV5/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 128, 4>)->Name("BM_TilejitV5/128x128/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 192, 4>)->Name("BM_TilejitV5/128x192/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<64, 96, 6>)->Name("BM_TilejitV5/64x96/6")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<128, 96, 6>)->Name("BM_TilejitV5/128x96/6")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 192, 6>)->Name("BM_TilejitV5/64x192/6")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();

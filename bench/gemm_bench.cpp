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
//   BM_MmaSyncPeak/...       mma.sync alone (operands in registers, no memory traffic in the loop): the ceiling of
//                            the kernels compiled for sm_80 .. sm_90 without wgmma
//   BM_TilejitV5/BMxBN/S     examples/gemm/matmul_v5.hpp (rung 5: descriptors, TMA ring of S stages, async wgmma)
//   BM_TilejitV6Ws/BMxBN/S   examples/gemm/matmul_v6.hpp (rung 6: persistent grid of one program per SM, grouped tile
//                            order, a producer warp group whose ring runs across tiles; BM_TilejitV6: no producer)
//   BM_TilejitV7/BMxBN/S/CL  examples/gemm/matmul_v7.hpp (rung 7: clusters of CL programs sharing B's block through
//                            TMA multicast, a producer warp group; CL = 1: the same kernel without clusters);
//                            BM_TilejitV7P: the persistent form (rung 6 with clusters)
//   BM_CublasTNBf16Out/...   BM_CublasTN writing a bf16 C (what torch's bf16 matmul runs)
//   BM_TilejitBf16Out/...    rung 5 / rung 6 writing a bf16 C through their fused epilogues (no activation)
//   BM_TilejitV6Store/BMxBN/S rung 6 writing a bf16 C through a C descriptor with CompileOptions::tma_store: the tile
//                            staged in swizzled shared memory and stored by TMA, drained during the next tile
//                            (BM_TilejitV6StoreMasked: the same kernel, the masked store)
//   BM_TilejitV6FusedStore/BMxBN/S the same with the whole fused epilogue (bias + GELU, bf16) before the TMA store
//                            (examples::MatmulV6FusedStore); BM_TilejitV6Fused/...: that epilogue, masked store
//   BM_TilejitGemm/...       examples/gemm/gemm.hpp, the library call: on first use of a shape it races its 16
//                            candidates (rung 5 and rung 6 configs) and launches the winner, named in the label;
//                            small M runs the swap-AB kernel, narrow N rung 5's split-K on 128-row blocks (the label
//                            names the plan). /large: 4096^3, 8192^3 and Llama-3-8B at M = 4096 and 16384, beside
//                            BM_CublasTN/large on the same shapes; /small: M = 1, 16, 128; /narrow: N = 96, 192.
//   BM_TilejitGemmBf16Out/...  the library call writing a bf16 C (Gemm<bf16, bf16>: the store race, TMA-store
//                            epilogues), beside BM_CublasTNBf16Out on the same shapes (/large, /small, /narrow)
//   BM_TilejitGemmF16/...    Gemm<f16, f16> beside BM_CublasTNF16 (f16 in, f16 out) on the large shapes
//   BM_TilejitSmallM/...     the small-M path with its split count forced (none; twice the rule's)
//   BM_TilejitSplitK/BMxBN/S rung 5's split-K kernel + SplitKReduce with the 4th argument's splits (the former
//                            small-M path; narrow-N candidates)
//   BM_CublasBatched/b/M/N/K cublasGemmStridedBatchedEx, C[b] (f32) = A[b]·B[b]ᵀ, bf16 in, B stored [N, K];
//                            BM_CublasBatchedBf16Out the same writing a bf16 C
//   BM_TilejitBatched/BMxBN/S/b/M/N/K examples/gemm/matmul_batched.hpp: rank-3 descriptors [b, M, K], [b, N, K],
//                            [b, M, N] (TMA 3-D boxes on sm_90a), one program per (tile, batch); /ws a producer warp group
//   BM_TilejitBatchedPersistent/... the same over a persistent grid with a producer warp group (rung 6 over the
//                            batch); ...Tma: the f32 C stored by TMA; ...Bf16C: a bf16 C stored by TMA (against
//                            BM_CublasBatchedBf16Out)
//   BM_TilejitGemmBatched/b/M/N/K examples/gemm/gemm_batched.hpp, the library call (f32 C; ...Bf16Out: bf16 C)
// Counters: TFLOP/s (2·M·N·K per run). After the rows, a table gives each tilejit row's ratio to the cuBLAS row of
// the same shape in the same run (bench/ratio_reporter.hpp). Without a GPU every case is skipped.
#include "ratio_reporter.hpp"
#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "examples/gemm/matmul_v1.hpp"
#include "examples/gemm/matmul_v3.hpp"
#include "examples/gemm/matmul_v4.hpp"
#include "examples/gemm/matmul_v2.hpp"
#include "examples/gemm/gemm.hpp"
#include "examples/gemm/gemm_batched.hpp"
#include "examples/gemm/matmul_batched.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/gemm/matmul_v6.hpp"
#include "examples/gemm/matmul_v7.hpp"
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
/// cublasGemmEx for row-major C[M, N] = A[M, K] · B[N, K]ᵀ — column-major Cᵀ = op_T(B) · A — with alpha 1, beta 0 and
/// f32 compute: A and B of type `in`, C of type `out`.
cublasStatus_t cublas_tn(long M, long N, long K, const void* a, const void* b, void* c, cudaDataType in, cudaDataType out) {
  static const float one = 1, zero = 0;
  return cublas().gemm(cublas().h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &one, b, in,
                       static_cast<int>(K), a, in, static_cast<int>(K), &zero, c, out, static_cast<int>(N), CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT);
}

/// cuBLASLt for f8: D (f32) = A·Bᵀ in its "TN" form, the only layout f8 matmuls take.
struct CublasLt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  cublasLtHandle_t h = nullptr;
  bool ok = false;
  CublasLt() {
    void* so = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!so) so = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
    if (!so) return;
    auto get = [&](auto& f, const char* name) { f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(so, name)); return f != nullptr; };
    ok = get(create, "cublasLtCreate") && get(desc_create, "cublasLtMatmulDescCreate") &&
         get(desc_set, "cublasLtMatmulDescSetAttribute") && get(layout_create, "cublasLtMatrixLayoutCreate") &&
         get(pref_create, "cublasLtMatmulPreferenceCreate") && get(pref_set, "cublasLtMatmulPreferenceSetAttribute") &&
         get(heuristic, "cublasLtMatmulAlgoGetHeuristic") && get(matmul, "cublasLtMatmul") && create(&h) == CUBLAS_STATUS_SUCCESS;
  }
};
CublasLt& cublaslt() {
  static CublasLt c;
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

/// cublasGemmEx, C = A·Bᵀ with B stored [N, K]: C f32 (OUT = CUDA_R_32F), or bf16 (CUDA_R_16BF: torch's bf16 matmul).
template <cudaDataType OUT = CUDA_R_32F>
void BM_CublasTN(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok) return st.SkipWithError("no GPU / cuBLAS");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  timed(st, 2.0 * M * N * K, [&] { cublas_tn(M, N, K, o.a, o.b, o.c, CUDA_R_16BF, OUT); });
}


/// Host time of one call of `fn` (the GPU drained before each): what a library spends on the CPU per call, during
/// which back-to-back GEMMs leave the GPU idle. Reported as the iteration time (us).
template <class F>
void host_timed(benchmark::State& st, F&& fn) {
  fn();
  gpu().synchronize();
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    gpu().synchronize();
    st.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
}
/// BM_HostCublasTNBf16Out / BM_HostTilejitGemmBf16Out / BM_HostTilejitV6Store: host_timed of cublasGemmEx (bf16 C),
/// the library call (bf16 C, winner stored) and one launch of a compiled kernel with prebuilt descriptors.
void BM_HostCublasTNBf16Out(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok) return st.SkipWithError("no GPU / cuBLAS");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  host_timed(st, [&] { cublas_tn(M, N, K, o.a, o.b, o.c, CUDA_R_16BF, CUDA_R_16BF); });
}
void BM_HostTilejitGemmBf16Out(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  static examples::Gemm<tj::bf16, tj::bf16> gemm(gpu());
  host_timed(st, [&] { gemm(static_cast<const tj::bf16*>(o.a), static_cast<const tj::bf16*>(o.b), static_cast<tj::bf16*>(o.c), M, N, K); });
}

/// f8 e4m3 operands (A [M, K], B [N, K], one byte each) and an f32 C.
struct OperandsF8 {
  void *a, *b, *c;
  OperandsF8(long M, long N, long K) {
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<tj::f8e4m3> h(static_cast<std::size_t>(std::max(M * K, K * N)));
    for (auto& x : h) x = tj::f8e4m3(d(g));
    a = gpu().alloc(M * K);
    b = gpu().alloc(K * N);
    c = gpu().alloc(M * N * 4);
    gpu().copy_to_device(a, h.data(), M * K);
    gpu().copy_to_device(b, h.data(), K * N);
  }
  ~OperandsF8() { gpu().free(a), gpu().free(b), gpu().free(c); }
};

/// A [M, K] and B [N, K] of T (random in [-1, 1], or [-127, 127] for i8) and a 4-byte C.
template <class T>
struct OperandsT {
  void *a, *b, *c;
  OperandsT(long M, long N, long K) {
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<T> h(static_cast<std::size_t>(std::max(M * K, K * N)));
    for (auto& x : h) {
      if constexpr (std::is_same_v<T, std::int8_t>) x = static_cast<std::int8_t>(d(g) * 127);
      else x = T(d(g));
    }
    a = gpu().alloc(M * K * sizeof(T));
    b = gpu().alloc(K * N * sizeof(T));
    c = gpu().alloc(M * N * 4);
    gpu().copy_to_device(a, h.data(), M * K * sizeof(T));
    gpu().copy_to_device(b, h.data(), K * N * sizeof(T));
  }
  ~OperandsT() { gpu().free(a), gpu().free(b), gpu().free(c); }
};

/// cuBLAS in the TN layout for f32 inputs computed as tf32, or i8 -> i32.
template <class T>
void BM_CublasTNType(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok) return st.SkipWithError("no GPU / cuBLAS");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  OperandsT<T> o(M, N, K);
  constexpr bool i8 = std::is_same_v<T, std::int8_t>;
  const float onef = 1, zerof = 0;
  const std::int32_t onei = 1, zeroi = 0;
  const void* alpha = i8 ? static_cast<const void*>(&onei) : &onef;
  const void* beta = i8 ? static_cast<const void*>(&zeroi) : &zerof;
  const cudaDataType in = i8 ? CUDA_R_8I : CUDA_R_32F, out = i8 ? CUDA_R_32I : CUDA_R_32F;
  const cublasComputeType_t ct = i8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F_FAST_TF32;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  timed(st, 2.0 * M * N * K, [&] {
    status = cublas().gemm(cublas().h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), alpha,
                           o.b, in, static_cast<int>(K), o.a, in, static_cast<int>(K), beta, o.c, out, static_cast<int>(N), ct,
                           CUBLAS_GEMM_DEFAULT);
  });
  if (status != CUBLAS_STATUS_SUCCESS) st.SkipWithError("cublasGemmEx refused this type");
  st.SetLabel(i8 ? "i8 -> i32" : "f32 as tf32");
}

/// Rung 5's operands as descriptors: A [M, K] and B [N, K] row-major (the TN layout), blocks [BM, BK] and
/// [BN, BK] with the 128-byte swizzle (BK = 128 bytes of K).
struct TnDescs {
  tj::TensorDescriptor a, b;
  TnDescs(void* pa, void* pb, tj::DType dt, long M, long N, long K, int BM, int BN, int BK)
      : a(gpu(), pa, dt, {M, K}, {K, 1}, {BM, BK}, {.swizzle = tj::TensorDescriptor::Swizzle::b128}),
        b(gpu(), pb, dt, {N, K}, {K, 1}, {BN, BK}, {.swizzle = tj::TensorDescriptor::Swizzle::b128}) {}
};

template <int BM, int BN, int STAGES, class T>
void BM_TilejitV5T(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  OperandsT<T> o(M, N, K);
  using Kern = examples::MatmulV5<BM, BN, T>;
  const TnDescs d(o.a, o.b, tj::dtype_v<T>, M, N, K, BM, BN, Kern::BLOCK_K);
  auto k = tj::compile<Kern>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES});
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, d.a, d.b, static_cast<typename Kern::Out*>(o.c), M, N, K);
  });
  st.SetLabel(std::string(tj::name(tj::dtype_v<T>)) + " BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x" +
              std::to_string(Kern::BLOCK_K) + " stages " + std::to_string(STAGES));
}

void BM_CublasLtF8(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublaslt().ok) return st.SkipWithError("no GPU / cuBLASLt");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  OperandsF8 o(M, N, K);
  auto& lt = cublaslt();
  cublasLtMatmulDesc_t op;
  lt.desc_create(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  lt.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  lt.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n);
  // Column-major: Cᵀ [N x M] = op_T(B as K x N) · (A as K x M).
  cublasLtMatrixLayout_t la, lb, lc;
  lt.layout_create(&la, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(K), static_cast<std::uint64_t>(N), K);
  lt.layout_create(&lb, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(K), static_cast<std::uint64_t>(M), K);
  lt.layout_create(&lc, CUDA_R_32F, static_cast<std::uint64_t>(N), static_cast<std::uint64_t>(M), N);
  cublasLtMatmulPreference_t pref;
  lt.pref_create(&pref);
  const std::size_t ws_bytes = 64 << 20;
  lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  if (lt.heuristic(lt.h, op, la, lb, lc, lc, pref, 1, &res, &found) != CUBLAS_STATUS_SUCCESS || found == 0)
    return st.SkipWithError("cuBLASLt has no f8 e4m3 algorithm with an f32 output here");
  void* ws = gpu().alloc(ws_bytes);
  const float one = 1, zero = 0;
  timed(st, 2.0 * M * N * K, [&] {
    lt.matmul(lt.h, op, &one, o.b, la, o.a, lb, &zero, o.c, lc, o.c, lc, &res.algo, ws, ws_bytes, nullptr);
  });
  gpu().free(ws);
}

template <int BM, int BN, int STAGES>
void BM_TilejitV5F8(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  OperandsF8 o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::f8e4nv, M, N, K, BM, BN, 128);
  auto k = tj::compile<examples::MatmulV5<BM, BN, tj::f8e4m3>>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES});
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, d.a, d.b, static_cast<float*>(o.c), M, N, K);
  });
  st.SetLabel("f8e4m3 BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x128 stages " + std::to_string(STAGES));
}

/// bf16 out through the fused epilogue C = cast<bf16>(act(A·Bᵀ + bias)) (alpha 1, a zero bias): rung 5, or rung 6
/// with its producer warp group (PERSISTENT). ACT none: compare with BM_CublasTNBf16Out (cuBLAS writing bf16);
/// GELU: with BM_CublasTN (the epilogue's cost).
template <int BM = 128, int BN = 256, int STAGES = 4, bool PERSISTENT = false, examples::Act ACT = examples::Act::gelu_tanh>
void BM_TilejitFused(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  void* bias = gpu().alloc(N * 4);
  gpu().memset(bias, 0, N * 4);
  using Kern = std::conditional_t<PERSISTENT, examples::MatmulV6Fused<BM, BN, tj::bf16, ACT, tj::bf16>,
                                  examples::MatmulV5Fused<BM, BN, tj::bf16, ACT, tj::bf16>>;
  auto k = tj::compile<Kern>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = PERSISTENT});
  const tj::Grid grid = PERSISTENT ? examples::persistent_grid(M, N, BM, BN, gpu().num_sms()) : tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)};
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(grid, d.a, d.b, static_cast<float*>(bias), static_cast<tj::bf16*>(o.c), 1.0f, M, N, K);
  });
  gpu().free(bias);
  st.SetLabel(std::string("bf16 out, ") + (ACT == examples::Act::none ? "no activation" : "bias + GELU fused") + ", rung " +
              (PERSISTENT ? "6 " : "5 ") + std::to_string(BM) + "x" + std::to_string(BN) + " stages " + std::to_string(STAGES));
}

/// bf16 out through MatmulV6Store (persistent, producer warp group): TMA (the TMA-store epilogue) or the masked
/// store of the same kernel. Compare with BM_CublasTNBf16Out and BM_TilejitBf16Out/v6.
template <int BM, int BN, int STAGES, bool TMA = true, class Out = tj::bf16, bool HOST = false>
void BM_TilejitV6Store(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  const tj::TensorDescriptor c(gpu(), o.c, tj::dtype_v<Out>, {M, N}, {N, 1}, {BM, 128 / static_cast<long>(sizeof(Out))},
                               {.swizzle = tj::TensorDescriptor::Swizzle::b128});
  auto k = tj::compile<examples::MatmulV6Store<BM, BN, tj::bf16, Out>>(
      gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = true, .tma_store = TMA});
  const tj::Grid grid = examples::persistent_grid(M, N, BM, BN, gpu().num_sms());
  if constexpr (HOST) return host_timed(st, [&] { k.launch(grid, d.a, d.b, c, M, N, K); });  // BM_HostTilejitV6Store
  timed(st, 2.0 * M * N * K, [&] { k.launch(grid, d.a, d.b, c, M, N, K); });
  st.SetLabel(std::string(tj::name(tj::dtype_v<Out>)) + " out, rung 6 + " + (TMA ? "TMA store " : "masked store ") + std::to_string(BM) +
              "x" + std::to_string(BN) + " stages " + std::to_string(STAGES));
}

/// bf16 out through MatmulV6FusedStore: C = cast<bf16>(GELU(A·Bᵀ + bias)) (alpha 1, a zero bias) stored by TMA.
/// Compare with BM_TilejitV6Store (the same without bias and GELU) and BM_TilejitV6Fused (the masked store).
template <int BM, int BN, int STAGES>
void BM_TilejitV6FusedStore(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  const tj::TensorDescriptor c(gpu(), o.c, tj::DType::bf16, {M, N}, {N, 1}, {BM, 64}, {.swizzle = tj::TensorDescriptor::Swizzle::b128});
  void* bias = gpu().alloc(N * 4);
  gpu().memset(bias, 0, N * 4);
  auto k = tj::compile<examples::MatmulV6FusedStore<BM, BN, tj::bf16, examples::Act::gelu_tanh, tj::bf16>>(
      gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = true, .tma_store = true});
  const tj::Grid grid = examples::persistent_grid(M, N, BM, BN, gpu().num_sms());
  timed(st, 2.0 * M * N * K, [&] { k.launch(grid, d.a, d.b, static_cast<float*>(bias), c, 1.0f, M, N, K); });
  gpu().free(bias);
  st.SetLabel("bf16 out, bias + GELU fused, rung 6 + TMA store " + std::to_string(BM) + "x" + std::to_string(BN) + " stages " +
              std::to_string(STAGES));
}

/// The library call (examples/gemm/gemm.hpp) writing an Out C (f32, or bf16: Gemm<bf16, bf16>): the tuned winner
/// per shape (the store race's for a bf16 C), or the small-M kernel.
template <class Out = float>
void BM_TilejitGemm(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  using G = examples::Gemm<tj::bf16, Out>;
  static G gemm(gpu());
  const auto* a = static_cast<const tj::bf16*>(o.a);
  const auto* b = static_cast<const tj::bf16*>(o.b);
  timed(st, 2.0 * M * N * K, [&] { gemm(a, b, static_cast<Out*>(o.c), M, N, K); });
  if (const std::string fixed = G::describe(M, N, K, gpu().num_sms()); !fixed.empty()) return st.SetLabel(fixed);
  const auto& r = gemm.report(M, N, K);
  const tj::Config& w = r.best_config();
  char tuned[96];
  std::snprintf(tuned, sizeof tuned, " (%s %.0f ms)", r.tuned ? "tuned in" : "stored winner read in", r.total_ms);
  const char* kind = w.params.contains("CLUSTER") ? ": rung 7, clusters + B multicast"
                     : G::persistent(w)           ? ": rung 6, persistent + producer warp group"
                                                  : ": rung 5";
  st.SetLabel("won " + w.str() + kind + (w.params.contains("STORE") ? ", TMA store" : "") + tuned);
}

/// f16 in, f16 out: cublasGemmEx (compute 32F) and the library call Gemm<f16, f16> (the store race), A and B random
/// in [-1, 1].
void BM_CublasTNF16(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok) return st.SkipWithError("no GPU / cuBLAS");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  OperandsT<tj::f16> o(M, N, K);
  timed(st, 2.0 * M * N * K, [&] { cublas_tn(M, N, K, o.a, o.b, o.c, CUDA_R_16F, CUDA_R_16F); });
}
void BM_TilejitGemmF16(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  OperandsT<tj::f16> o(M, N, K);
  using G = examples::Gemm<tj::f16, tj::f16>;
  static G gemm(gpu());
  timed(st, 2.0 * M * N * K, [&] {
    gemm(static_cast<const tj::f16*>(o.a), static_cast<const tj::f16*>(o.b), static_cast<tj::f16*>(o.c), M, N, K);
  });
  if (const std::string fixed = G::describe(M, N, K, gpu().num_sms()); !fixed.empty()) return st.SetLabel(fixed);
  st.SetLabel("won " + gemm.report(M, N, K).best_config().str());
}

/// WS: with a producer warp group (CompileOptions::warp_specialize). BK: the K step (64: one 128-byte slab per row).
template <int BM, int BN, int STAGES, bool WS = false, int BK = 64>
void BM_TilejitV5(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  auto k = tj::compile<examples::MatmulV5<BM, BN, tj::bf16, 8, BK>>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = WS});
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, d.a, d.b, static_cast<float*>(o.c), M, N, K);
  });
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK) + " stages " + std::to_string(STAGES) +
              (WS ? ", producer warp group" : ""));
}

/// Rung 5's kernel off Hopper's wgmma path: compiled for "sm_90" (no "a"), as for an A100 — mma.sync, its blocks
/// copied by a cp.async ring of STAGES (CP) or loaded masked into registers and converted (!CP). WARPS per program.
template <int BM, int BN, int STAGES, bool CP = true, int WARPS = BM / 16>
void BM_TilejitMmaSync(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  auto k = tj::compile<examples::MatmulV5<BM, BN, tj::bf16>>(
      gpu(), {.num_warps = WARPS, .num_stages = STAGES, .arch = "sm_90", .cp_async = CP});
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN)}, d.a, d.b, static_cast<float*>(o.c), M, N, K);
  });
  st.SetLabel("sm_90 mma.sync, BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x64, " + std::to_string(WARPS) +
              " warps, " + (CP ? "cp.async ring of " + std::to_string(STAGES) : std::string("masked loads")));
}

/// The mma.sync ceiling (what the off-Hopper kernels are measured against): each program loads an A [BM, BK] and a
/// B [BK, BN] bf16 tile into registers once, then runs `iters` dots of them into one f32 accumulator — no memory
/// traffic in the loop — and stores it (so nothing is dead). Compiled for sm_90 (no "a": mma.sync m16n8k16).
template <int BM, int BN, int BK>
struct MmaSyncPeak {
  void operator()(tj::Ptr<tj::bf16> a, tj::Ptr<tj::bf16> b, tj::Ptr<float> c, tj::Size iters) const {
    auto rm = tj::arange<BM>();
    auto rn = tj::arange<BN>();
    auto rk = tj::arange<BK>();
    auto at = tj::load(a + tj::expand_dims<1>(rm) * BK + tj::expand_dims<0>(rk));
    auto bt = tj::load(b + tj::expand_dims<1>(rk) * BN + tj::expand_dims<0>(rn));
    auto acc = tj::for_range(0, iters, 1, tj::zeros<float, BM, BN>(), [&](tj::Int, auto acc) { return tj::dot(at, bt, acc); });
    tj::store(c + tj::program_id(0) * (BM * BN) + tj::expand_dims<1>(rm) * BN + tj::expand_dims<0>(rn), acc);
  }
};
/// PROGRAMS programs per SM of WARPS warps, 4096 iterations: TFLOP/s of mma.sync alone.
template <int BM, int BN, int BK, int WARPS, int PROGRAMS>
void BM_MmaSyncPeak(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long programs = static_cast<long>(gpu().num_sms()) * PROGRAMS, iters = 4096;
  Operands o(programs * BM, BN, BK);
  auto k = tj::compile<MmaSyncPeak<BM, BN, BK>>(gpu(), {.num_warps = WARPS, .arch = "sm_90"});
  timed(st, 2.0 * BM * BN * BK * iters * programs, [&] {
    k.launch(tj::Grid{programs}, static_cast<tj::bf16*>(o.a), static_cast<tj::bf16*>(o.b), static_cast<float*>(o.c),
             static_cast<int>(iters));
  });
  st.SetLabel(fmt::format("sm_90 mma.sync m16n8k16 bf16, registers only: {}x{}x{}, {} warps, {} programs per SM", BM, BN, BK, WARPS,
                          PROGRAMS));
}

/// Rung 6: the persistent grid (min(tiles, SMs) programs), with a producer warp group when WS.
template <int BM, int BN, int STAGES, bool WS = true>
void BM_TilejitV6(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  auto k = tj::compile<examples::MatmulV6<BM, BN, tj::bf16>>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = WS});
  const tj::Grid grid = examples::persistent_grid(M, N, BM, BN, gpu().num_sms());
  timed(st, 2.0 * M * N * K, [&] { k.launch(grid, d.a, d.b, static_cast<float*>(o.c), M, N, K); });
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x64 stages " + std::to_string(STAGES) + ", " +
              std::to_string(grid.x) + " programs" + (WS ? ", producer warp group" : ""));
}

/// Rung 7: clusters of CL programs sharing B's block by TMA multicast, a producer warp group; one program per tile,
/// or PERSISTENT (MatmulV7Persistent on cluster_persistent_grid).
template <int BM, int BN, int STAGES, int CL, bool PERSISTENT = false>
void BM_TilejitV7(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  using Kern = std::conditional_t<PERSISTENT, examples::MatmulV7Persistent<BM, BN, tj::bf16, CL>, examples::MatmulV7<BM, BN, tj::bf16, CL>>;
  auto k = tj::compile<Kern>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = true, .num_ctas = CL});
  const tj::Grid grid = PERSISTENT ? examples::cluster_persistent_grid(M, N, BM, BN, CL, gpu().num_sms())
                                   : tj::Grid{examples::cluster_grid<BM, BN, CL>(M, N)};
  timed(st, 2.0 * M * N * K, [&] { k.launch(grid, d.a, d.b, static_cast<float*>(o.c), M, N, K); });
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x64 stages " + std::to_string(STAGES) + ", clusters of " +
              std::to_string(CL) + ", B multicast" + (PERSISTENT ? ", persistent (" + std::to_string(grid.x) + " programs)" : ""));
}

/// The library's small-M path with a forced plan (Gemm::run_small_m; compare with BM_TilejitGemm/small, which runs
/// the rule's plan): the rule's BLOCK_M (the smallest >= M where the rule does not apply) and SPLITS = 1 (no split),
/// 0 (the rule's count, the BLOCK_M forced) or -2 (twice the rule's).
template <int SPLITS>
void BM_TilejitSmallM(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2);
  using G = examples::Gemm<tj::bf16>;
  Operands o(M, N, K);
  static G gemm(gpu());
  const G::SmallM rule = G::small_m_for(M, N, K, gpu().num_sms());
  int bm = rule.block_m;
  if (!bm)
    for (const auto& k : G::SMALL_M_KERNELS)
      if (!bm && k.block_m >= M) bm = k.block_m;
  const long long splits = SPLITS == 0 ? rule.splits : SPLITS < 0 ? -SPLITS * rule.splits : SPLITS;
  const G::SmallM p = G::small_m_plan(M, N, K, bm, splits);
  const auto* a = static_cast<const tj::bf16*>(o.a);
  const auto* b = static_cast<const tj::bf16*>(o.b);
  timed(st, 2.0 * M * N * K, [&] { gemm.run_small_m(a, b, static_cast<float*>(o.c), M, N, K, p); });
  st.SetLabel("swap AB [64 x " + std::to_string(p.block_m) + "], " + std::to_string(p.stages) + " stages, " + std::to_string(p.splits) +
              " split(s) of " + std::to_string(p.k_split) + ", " + std::to_string(p.tiles * p.splits) + " programs");
}

/// Rung 5's split-K kernel MatmulV5SplitK<BM, BN> (STAGES stages) into a workspace, then SplitKReduce, with the 4th
/// argument's number of K splits (each a multiple of 64): the small-M path before the swap-AB kernel (64x128, 4
/// stages, the split counts docs/gemm.md records), and narrow-N candidates. Descriptors built once (the library call
/// builds them per call).
template <int BM, int BN, int STAGES>
void BM_TilejitSplitK(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long M = st.range(0), N = st.range(1), K = st.range(2), want = st.range(3);
  Operands o(M, N, K);
  const TnDescs d(o.a, o.b, tj::DType::bf16, M, N, K, BM, BN, 64);
  auto k = tj::compile<examples::MatmulV5SplitK<BM, BN, tj::bf16>>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES});
  auto reduce = tj::compile<examples::SplitKReduce<1024>>(gpu(), {.num_warps = 4});
  const long k_split = tj::cdiv(tj::cdiv(K, want), 64) * 64, splits = tj::cdiv(K, k_split);
  auto* ws = static_cast<float*>(gpu().alloc(static_cast<std::size_t>(splits * M * N) * 4));
  const tj::Grid grid{tj::cdiv(M, BM) * tj::cdiv(N, BN), splits};
  timed(st, 2.0 * M * N * K, [&] {
    k.launch(grid, d.a, d.b, ws, M, N, K, k_split);
    reduce.launch(tj::Grid{tj::cdiv(M * N, 1024)}, ws, static_cast<float*>(o.c), M * N, splits);
  });
  gpu().free(ws);
  st.SetLabel("BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x64 stages " + std::to_string(STAGES) + ", " +
              std::to_string(splits) + " splits of " + std::to_string(k_split) + ", " + std::to_string(grid.x * grid.y) + " programs");
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

/// A [b, M, K] and B [b, N, K] (bf16, random in [-1, 1]) and C [b, M, N] (f32) on the GPU.
struct BatchedOperands {
  void *a, *b, *c;
  BatchedOperands(long B, long M, long N, long K) {
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<tj::bf16> h(static_cast<std::size_t>(B * std::max(M, N) * K));
    for (auto& x : h) x = tj::bf16(d(g));
    a = gpu().alloc(B * M * K * 2);
    b = gpu().alloc(B * N * K * 2);
    c = gpu().alloc(B * M * N * 4);
    gpu().copy_to_device(a, h.data(), B * M * K * 2);
    gpu().copy_to_device(b, h.data(), B * N * K * 2);
  }
  ~BatchedOperands() { gpu().free(a), gpu().free(b), gpu().free(c); }
};

/// cublasGemmStridedBatchedEx for row-major C[b] (f32, or bf16 with OUT = CUDA_R_16BF) = A[b]·B[b]ᵀ, bf16 A [b, M, K]
/// and B [b, N, K], compute 32F.
template <cudaDataType OUT = CUDA_R_32F>
void BM_CublasBatched(benchmark::State& st) {
  using Batched = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                                     cudaDataType, int, long long, const void*, cudaDataType, int, long long, const void*, void*,
                                     cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  static Batched gemm = [] {
    void* so = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!so) so = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
    return so ? reinterpret_cast<Batched>(dlsym(so, "cublasGemmStridedBatchedEx")) : nullptr;
  }();
  if (gpu().backend() != tj::Backend::cuda || !cublas().ok || !gemm) return st.SkipWithError("no GPU / cuBLAS");
  const long B = st.range(0), M = st.range(1), N = st.range(2), K = st.range(3);
  BatchedOperands o(B, M, N, K);
  static const float one = 1, zero = 0;
  timed(st, 2.0 * B * M * N * K, [&] {
    gemm(cublas().h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &one, o.b, CUDA_R_16BF,
         static_cast<int>(K), N * K, o.a, CUDA_R_16BF, static_cast<int>(K), M * K, &zero, o.c, OUT, static_cast<int>(N), M * N,
         static_cast<int>(B), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
}

template <int BM, int BN, int STAGES, bool WS = false>
void BM_TilejitBatched(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long B = st.range(0), M = st.range(1), N = st.range(2), K = st.range(3);
  BatchedOperands o(B, M, N, K);
  using D = tj::TensorDescriptor;
  const D a(gpu(), o.a, tj::DType::bf16, {B, M, K}, {M * K, K, 1}, {1, BM, 64}, {.swizzle = D::Swizzle::b128});
  const D b(gpu(), o.b, tj::DType::bf16, {B, N, K}, {N * K, K, 1}, {1, BN, 64}, {.swizzle = D::Swizzle::b128});
  const D c(gpu(), o.c, tj::DType::f32, {B, M, N}, {M * N, N, 1}, {1, BM, 32});
  auto k = tj::compile<examples::MatmulBatched<BM, BN, tj::bf16>>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = WS});
  timed(st, 2.0 * B * M * N * K, [&] { k.launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN), B}, a, b, c, N, K); });
  st.SetLabel("rank-3 descriptors, BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + "x64 stages " + std::to_string(STAGES) +
              (WS ? ", producer warp group" : ""));
}

/// MatmulBatchedPersistent: rung 6 over the batch (one program per SM), a bf16 C when OUT_BF16 (against cuBLAS's
/// bf16 C: BM_CublasBatchedBf16Out), C stored by TMA when TMA (an f32 C takes 8 slab stores per 128x256 tile).
template <int BM, int BN, int STAGES, bool OUT_BF16 = false, bool TMA = OUT_BF16>
void BM_TilejitBatchedPersistent(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long B = st.range(0), M = st.range(1), N = st.range(2), K = st.range(3);
  BatchedOperands o(B, M, N, K);
  using D = tj::TensorDescriptor;
  using Out = std::conditional_t<OUT_BF16, tj::bf16, float>;
  const D a(gpu(), o.a, tj::DType::bf16, {B, M, K}, {M * K, K, 1}, {1, BM, 64}, {.swizzle = D::Swizzle::b128});
  const D b(gpu(), o.b, tj::DType::bf16, {B, N, K}, {N * K, K, 1}, {1, BN, 64}, {.swizzle = D::Swizzle::b128});
  const D c(gpu(), o.c, tj::dtype_v<Out>, {B, M, N}, {M * N, N, 1}, {1, BM, 128 / static_cast<long>(sizeof(Out))});
  auto k = tj::compile<examples::MatmulBatchedPersistent<BM, BN, tj::bf16, Out>>(
      gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = true, .tma_store = TMA});
  const tj::Grid g = examples::persistent_batched_grid(B, M, N, BM, BN, gpu().num_sms());
  timed(st, 2.0 * B * M * N * K, [&] { k.launch(g, a, b, c, M, N, K); });
  st.SetLabel("persistent, producer warp group, BLOCK " + std::to_string(BM) + "x" + std::to_string(BN) + " stages " +
              std::to_string(STAGES) + (OUT_BF16 ? ", bf16 C" : ", f32 C") + (TMA ? " by TMA" : ""));
}

/// The library call examples::GemmBatched<bf16, Out> (its plan in the label), against BM_CublasBatched (f32 C) or
/// BM_CublasBatchedBf16Out.
template <bool OUT_BF16 = false>
void BM_TilejitGemmBatched(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long B = st.range(0), M = st.range(1), N = st.range(2), K = st.range(3);
  BatchedOperands o(B, M, N, K);
  using Out = std::conditional_t<OUT_BF16, tj::bf16, float>;
  examples::GemmBatched<tj::bf16, Out> bmm(gpu());
  timed(st, 2.0 * B * M * N * K, [&] {
    bmm(static_cast<const tj::bf16*>(o.a), static_cast<const tj::bf16*>(o.b), static_cast<Out*>(o.c), B, M, N, K);
  });
  st.SetLabel(bmm.plan());
}

void shapes_batched(benchmark::internal::Benchmark* b) {
  b->Args({32, 1024, 1024, 1024})->Args({128, 512, 512, 512})->Args({8, 4096, 4096, 1024})->Args({64, 1000, 1000, 128});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
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
BENCHMARK(BM_CublasTN<>)->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 256, 3>)->Name("BM_TilejitV5/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitFused<>)->Name("BM_TilejitV5Fused")->Apply(shapes_tn);
BENCHMARK(BM_TilejitFused<64, 96, 6>)->Name("BM_TilejitV5Fused/64x96/6")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitFused<64, 192, 6>)->Name("BM_TilejitV5Fused/64x192/6")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<128, 256, 4>)->Name("BM_TilejitV5/128x256/4")->Apply(shapes_tn);
// The mma.sync ceiling: registers only (v0.23).
BENCHMARK(BM_MmaSyncPeak<64, 64, 32, 4, 4>)->Name("BM_MmaSyncPeak/64x64x32/4w/4p")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MmaSyncPeak<64, 64, 32, 4, 8>)->Name("BM_MmaSyncPeak/64x64x32/4w/8p")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MmaSyncPeak<64, 128, 32, 4, 4>)->Name("BM_MmaSyncPeak/64x128x32/4w/4p")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MmaSyncPeak<128, 64, 32, 8, 2>)->Name("BM_MmaSyncPeak/128x64x32/8w/2p")->UseManualTime()->Unit(benchmark::kMillisecond);
// Two stages: the refill issued at the top of the iteration (v0.23), beside three refilled at its end.
BENCHMARK(BM_TilejitMmaSync<128, 128, 2>)->Name("BM_TilejitMmaSync/128x128/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 128, 3>)->Name("BM_TilejitMmaSync/128x128/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 128, 4>)->Name("BM_TilejitMmaSync/128x128/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 256, 2, true, 8>)->Name("BM_TilejitMmaSync/128x256/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 256, 3, true, 8>)->Name("BM_TilejitMmaSync/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 256, 4, true, 8>)->Name("BM_TilejitMmaSync/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<256, 128, 3, true, 8>)->Name("BM_TilejitMmaSync/256x128/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<64, 128, 4, true, 4>)->Name("BM_TilejitMmaSync/64x128/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 128, 3, true, 4>)->Name("BM_TilejitMmaSync/128x128/3/4w")->Apply(shapes_tn);  // 2 programs per SM
BENCHMARK(BM_TilejitMmaSync<128, 128, 4, true, 4>)->Name("BM_TilejitMmaSync/128x128/4/4w")->Apply(shapes_tn);
BENCHMARK(BM_TilejitMmaSync<128, 128, 3, false>)->Name("BM_TilejitMmaSyncMasked/128x128")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 128, 4>)->Name("BM_TilejitV5/128x128/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 192, 4>)->Name("BM_TilejitV5/128x192/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 256, 4, true>)->Name("BM_TilejitV5Ws/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<128, 256, 3, true>)->Name("BM_TilejitV5Ws/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<256, 128, 4, true>)->Name("BM_TilejitV5Ws/256x128/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV5<64, 96, 6>)->Name("BM_TilejitV5/64x96/6")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<128, 96, 6>)->Name("BM_TilejitV5/128x96/6")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 192, 6>)->Name("BM_TilejitV5/64x192/6")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
// 128-wide K steps: each row of a stage's A block is 256 contiguous bytes (two TMA boxes of 128), so DRAM sees runs
// twice as long; B's share of a stage is the same fraction.
BENCHMARK(BM_TilejitV5<64, 96, 5, false, 128>)->Name("BM_TilejitV5/64x96x128/5")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 96, 4, false, 128>)->Name("BM_TilejitV5/64x96x128/4")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 96, 8>)->Name("BM_TilejitV5/64x96/8")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 192, 3, false, 128>)->Name("BM_TilejitV5/64x192x128/3")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 96, 2, false, 256>)->Name("BM_TilejitV5/64x96x256/2")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
// Rung 6: persistent, warp-specialised (compare with BM_CublasTN and BM_TilejitV5Ws on the same shapes).
void shapes_v6(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096, 4096})->Args({8192, 8192, 8192})->Args({4096, 28672, 4096});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_TilejitV6<128, 256, 4>)->Name("BM_TilejitV6Ws/128x256/4")->Apply(shapes_v6);
BENCHMARK(BM_TilejitV6<128, 256, 3>)->Name("BM_TilejitV6Ws/128x256/3")->Apply(shapes_v6);
BENCHMARK(BM_TilejitV6<256, 128, 4>)->Name("BM_TilejitV6Ws/256x128/4")->Apply(shapes_v6);
BENCHMARK(BM_TilejitV6<128, 256, 4, false>)->Name("BM_TilejitV6/128x256/4")->Apply(shapes_v6);
// bf16 output, beside cuBLAS writing bf16.
BENCHMARK(BM_CublasTN<CUDA_R_16BF>)->Name("BM_CublasTNBf16Out")->Apply(shapes_tn);
BENCHMARK(BM_TilejitFused<128, 256, 4, false, examples::Act::none>)->Name("BM_TilejitBf16Out/v5/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitFused<128, 256, 3, false, examples::Act::none>)->Name("BM_TilejitBf16Out/v5/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitFused<128, 256, 4, true, examples::Act::none>)->Name("BM_TilejitBf16Out/v6/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV6Store<128, 256, 3>)->Name("BM_TilejitV6Store/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV6Store<128, 256, 3, false>)->Name("BM_TilejitV6StoreMasked/128x256/3")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV6Store<128, 256, 4>)->Name("BM_TilejitV6Store/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV6FusedStore<128, 256, 4>)->Name("BM_TilejitV6FusedStore/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitFused<128, 256, 4, true>)->Name("BM_TilejitV6Fused/128x256/4")->Apply(shapes_tn);
// Host time per call (4096^3): cuBLAS, the library (winner stored, last call's descriptors reused), a bare launch.
BENCHMARK(BM_HostCublasTNBf16Out)->Args({4096, 4096, 4096})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HostTilejitGemmBf16Out)->Args({4096, 4096, 4096})->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TilejitV6Store<128, 256, 4, true, tj::bf16, true>)->Name("BM_HostTilejitV6Store/128x256/4")->Args({4096, 4096, 4096})->UseManualTime()->Unit(benchmark::kMicrosecond);
// f32 C stored by TMA slab by slab (8 slabs through 32 KiB), beside BM_CublasTN and BM_TilejitV6Ws (masked f32 store).
BENCHMARK(BM_TilejitV6Store<128, 256, 4, true, float>)->Name("BM_TilejitV6StoreF32/128x256/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV6Store<256, 128, 3, true, float>)->Name("BM_TilejitV6StoreF32/256x128/3")->Apply(shapes_tn);
// Rung 7: clusters and TMA multicast, on the large shapes (BM_TilejitV7/.../1: the same kernel without clusters).
BENCHMARK(BM_TilejitV7<128, 256, 4, 2>)->Name("BM_TilejitV7/128x256/4/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 256, 3, 2>)->Name("BM_TilejitV7/128x256/3/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 256, 4, 1>)->Name("BM_TilejitV7/128x256/4/1")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<256, 128, 4, 2>)->Name("BM_TilejitV7/256x128/4/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 192, 4, 2>)->Name("BM_TilejitV7/128x192/4/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 128, 4, 4>)->Name("BM_TilejitV7/128x128/4/4")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 256, 4, 2, true>)->Name("BM_TilejitV7P/128x256/4/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 256, 3, 2, true>)->Name("BM_TilejitV7P/128x256/3/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<256, 128, 4, 2, true>)->Name("BM_TilejitV7P/256x128/4/2")->Apply(shapes_tn);
BENCHMARK(BM_TilejitV7<128, 256, 4, 4, true>)->Name("BM_TilejitV7P/128x256/4/4")->Apply(shapes_tn);
// The library call on the large shapes: square, and Llama-3-8B's QKV, gate+up and down projections at M = 4096 and
// 16384 (its attention output projection N = K = 4096 is 4096^3 at M = 4096), beside cuBLAS TN.
void shapes_large(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096, 4096})->Args({8192, 8192, 8192});
  for (long m : {4096, 16384}) {
    b->Args({m, 6144, 4096});
    if (m != 4096) b->Args({m, 4096, 4096});
    b->Args({m, 28672, 4096})->Args({m, 4096, 14336});
  }
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_CublasTN<>)->Name("BM_CublasTN/large")->Apply(shapes_large);
BENCHMARK(BM_TilejitGemm<>)->Name("BM_TilejitGemm/large")->Apply(shapes_large);
// The same with a bf16 C (the store race), beside cuBLAS writing bf16.
BENCHMARK(BM_CublasTN<CUDA_R_16BF>)->Name("BM_CublasTNBf16Out/large")->Apply(shapes_large);
BENCHMARK(BM_TilejitGemm<tj::bf16>)->Name("BM_TilejitGemmBf16Out/large")->Apply(shapes_large);
// Fixed store-race tiles on the same shapes, and three consumer warp groups (num_warps = 12): 192-row tiles, the
// shape cuBLAS picks at 16384x6144x4096 (192x192, docs/gemm.md rung 7).
BENCHMARK(BM_TilejitV6Store<128, 256, 4>)->Name("BM_TilejitV6Store/128x256/4/large")->Apply(shapes_large);
BENCHMARK(BM_TilejitV6Store<128, 192, 4>)->Name("BM_TilejitV6Store/128x192/4/large")->Apply(shapes_large);
BENCHMARK(BM_TilejitV6Store<192, 192, 3>)->Name("BM_TilejitV6Store/192x192/3/large")->Apply(shapes_large);
BENCHMARK(BM_TilejitV6Store<192, 128, 4>)->Name("BM_TilejitV6Store/192x128/4/large")->Apply(shapes_large);
// f16 in and out.
BENCHMARK(BM_CublasTNF16)->Name("BM_CublasTNF16/large")->Apply(shapes_large);
BENCHMARK(BM_TilejitGemmF16)->Name("BM_TilejitGemmF16/large")->Apply(shapes_large);
// Small M (decode: tokens in flight 1, 16, 128) on the Llama-3-8B projections.
void shapes_small_m(benchmark::internal::Benchmark* b) {
  for (long m : {1, 16, 128})
    b->Args({m, 6144, 4096})->Args({m, 4096, 4096})->Args({m, 28672, 4096})->Args({m, 4096, 14336});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_CublasTN<>)->Name("BM_CublasTN/small")->Apply(shapes_small_m);
BENCHMARK(BM_TilejitGemm<>)->Name("BM_TilejitGemm/small")->Apply(shapes_small_m);
BENCHMARK(BM_CublasTN<CUDA_R_16BF>)->Name("BM_CublasTNBf16Out/small")->Apply(shapes_small_m);
BENCHMARK(BM_TilejitGemm<tj::bf16>)->Name("BM_TilejitGemmBf16Out/small")->Apply(shapes_small_m);
BENCHMARK(BM_TilejitV5<64, 64, 8>)->Name("BM_TilejitV5/64x64/8/small")->Apply(shapes_small_m);
BENCHMARK(BM_TilejitV5<64, 128, 6>)->Name("BM_TilejitV5/64x128/6/small")->Apply(shapes_small_m);
BENCHMARK(BM_TilejitV5<128, 128, 4>)->Name("BM_TilejitV5/128x128/4/small")->Apply(shapes_small_m);
// The small-M path's split count: none, the rule's (BM_TilejitGemm/small), twice the rule's.
BENCHMARK(BM_TilejitSmallM<1>)->Name("BM_TilejitSmallM/nosplit")->Apply(shapes_small_m);
BENCHMARK(BM_TilejitSmallM<-2>)->Name("BM_TilejitSmallM/2xsplits")->Apply(shapes_small_m);
// The former small-M path (rung 5's split-K on 64x128 tiles, 4 stages) with the split counts it chose on the H200.
BENCHMARK(BM_TilejitSplitK<64, 128, 4>)
    ->Name("BM_TilejitSplitK/64x128/4/small")
    ->Args({1, 6144, 4096, 11})->Args({1, 4096, 4096, 8})->Args({1, 28672, 4096, 7})->Args({1, 4096, 14336, 8})
    ->Args({16, 6144, 4096, 11})->Args({16, 4096, 4096, 8})->Args({16, 28672, 4096, 7})->Args({16, 4096, 14336, 8})
    ->Args({128, 4096, 4096, 4})->Args({128, 4096, 14336, 4})
    ->UseManualTime()->Unit(benchmark::kMillisecond);
// Narrow N (M = K = 8192, N = 96 and 192; compare with BM_CublasTN/8192/96/8192 and /8192/192/8192): the library call
// (the narrow-N path: 128-row blocks, 2 K splits), split-K candidates, and rung 5 unsplit with deeper rings.
void shapes_narrow(benchmark::internal::Benchmark* b) { b->Args({8192, 96, 8192})->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond); }
BENCHMARK(BM_TilejitGemm<>)->Name("BM_TilejitGemm/narrow")->Apply(shapes_narrow);
BENCHMARK(BM_CublasTN<CUDA_R_16BF>)->Name("BM_CublasTNBf16Out/narrow")->Apply(shapes_narrow);
BENCHMARK(BM_TilejitGemm<tj::bf16>)->Name("BM_TilejitGemmBf16Out/narrow")->Apply(shapes_narrow);
BENCHMARK(BM_TilejitSplitK<128, 96, 7>)->Name("BM_TilejitSplitK/128x96/7/narrow")->Args({8192, 96, 8192, 2})->Args({8192, 96, 8192, 3})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitSplitK<64, 96, 5>)->Name("BM_TilejitSplitK/64x96/5/narrow")->Args({8192, 96, 8192, 2})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitSplitK<256, 96, 4>)->Name("BM_TilejitSplitK/256x96/4/narrow")->Args({8192, 96, 8192, 4})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitSplitK<128, 192, 5>)->Name("BM_TilejitSplitK/128x192/5/narrow")->Args({8192, 192, 8192, 2})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitSplitK<64, 192, 3>)->Name("BM_TilejitSplitK/64x192/3/narrow")->Args({8192, 192, 8192, 2})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitSplitK<256, 192, 3>)->Name("BM_TilejitSplitK/256x192/3/narrow")->Args({8192, 192, 8192, 4})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 96, 8>)->Name("BM_TilejitV5Narrow/64x96/8")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<128, 96, 7>)->Name("BM_TilejitV5Narrow/128x96/7")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<64, 192, 7>)->Name("BM_TilejitV5Narrow/64x192/7")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitV5<128, 192, 5>)->Name("BM_TilejitV5Narrow/128x192/5")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
// Narrow N in clusters of CL programs along M sharing B's block by TMA multicast (rung 7, a producer warp group): each
// program still streams its own rows of A, while B crosses L2 once per cluster instead of once per program.
#define TJ_V7_NARROW(BM, BN, ST, CL)                                                                              \
  BENCHMARK(BM_TilejitV7<BM, BN, ST, CL>)                                                                        \
      ->Name("BM_TilejitV7Narrow/" #BM "x" #BN "/" #ST "/" #CL)                                                   \
      ->Args({8192, BN, 8192})                                                                                  \
      ->UseManualTime()                                                                                         \
      ->Unit(benchmark::kMillisecond)
TJ_V7_NARROW(64, 96, 8, 1);
TJ_V7_NARROW(64, 96, 8, 2);
TJ_V7_NARROW(64, 96, 8, 4);
TJ_V7_NARROW(64, 192, 6, 1);
TJ_V7_NARROW(64, 192, 6, 2);
TJ_V7_NARROW(64, 192, 6, 4);
TJ_V7_NARROW(128, 96, 7, 2);
TJ_V7_NARROW(128, 192, 5, 2);
// The store race's narrow candidates (rung 6 persistent, a producer warp group, bf16 C) with deeper rings (num_stages
// is at most 8): a 64x96 tile keeps the masked store (no staging); 64x192 stages C slab by slab (16 KiB).
#define TJ_STORE_NARROW(BM, BN, ST)                                                                               \
  BENCHMARK(BM_TilejitV6Store<BM, BN, ST>)                                                                       \
      ->Name("BM_TilejitV6StoreNarrow/" #BM "x" #BN "/" #ST)                                                      \
      ->Args({8192, BN, 8192})                                                                                  \
      ->UseManualTime()                                                                                         \
      ->Unit(benchmark::kMillisecond)
TJ_STORE_NARROW(64, 96, 6);
TJ_STORE_NARROW(64, 96, 8);
TJ_STORE_NARROW(64, 192, 5);
TJ_STORE_NARROW(64, 192, 6);
BENCHMARK(BM_TilejitFused<64, 96, 8, false, examples::Act::none>)->Name("BM_TilejitBf16OutNarrow/v5/64x96/8")->Args({8192, 96, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TilejitFused<64, 192, 7, false, examples::Act::none>)->Name("BM_TilejitBf16OutNarrow/v5/64x192/7")->Args({8192, 192, 8192})->UseManualTime()->Unit(benchmark::kMillisecond);

// f8 e4m3 against cuBLASLt.
void shapes_f8(benchmark::internal::Benchmark* b) {
  b->Args({4096, 4096, 4096})->Args({8192, 8192, 8192})->Args({4096, 28672, 4096});
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_CublasLtF8)->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5F8<128, 256, 3>)->Name("BM_TilejitV5F8/128x256/3")->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5F8<128, 256, 4>)->Name("BM_TilejitV5F8/128x256/4")->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5F8<128, 128, 5>)->Name("BM_TilejitV5F8/128x128/5")->Apply(shapes_f8);
// tf32 (f32 inputs) and i8 -> i32 against cuBLAS.
BENCHMARK(BM_CublasTNType<float>)->Name("BM_CublasTF32")->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5T<128, 256, 3, float>)->Name("BM_TilejitV5TF32/128x256/3")->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5T<128, 128, 4, float>)->Name("BM_TilejitV5TF32/128x128/4")->Apply(shapes_f8);
BENCHMARK(BM_CublasTNType<std::int8_t>)->Name("BM_CublasI8")->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5T<128, 256, 4, std::int8_t>)->Name("BM_TilejitV5I8/128x256/4")->Apply(shapes_f8);
BENCHMARK(BM_TilejitV5T<128, 128, 5, std::int8_t>)->Name("BM_TilejitV5I8/128x128/5")->Apply(shapes_f8);
// Batched GEMM through rank-3 descriptors against cublasGemmStridedBatchedEx.
BENCHMARK(BM_CublasBatched<>)->Name("BM_CublasBatched")->Apply(shapes_batched);
BENCHMARK(BM_CublasBatched<CUDA_R_16BF>)->Name("BM_CublasBatchedBf16Out")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatched<128, 128, 4>)->Name("BM_TilejitBatched/128x128/4")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatched<128, 256, 3>)->Name("BM_TilejitBatched/128x256/3")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatched<128, 256, 4, true>)->Name("BM_TilejitBatched/ws/128x256/4")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatchedPersistent<128, 256, 4>)->Name("BM_TilejitBatchedPersistent/128x256/4")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatchedPersistent<128, 128, 5>)->Name("BM_TilejitBatchedPersistent/128x128/5")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatchedPersistent<128, 256, 4, false, true>)->Name("BM_TilejitBatchedPersistentTma/128x256/4")->Apply(shapes_batched);
BENCHMARK(BM_TilejitBatchedPersistent<128, 256, 4, true>)->Name("BM_TilejitBatchedPersistentBf16C/128x256/4")->Apply(shapes_batched);
BENCHMARK(BM_TilejitGemmBatched<>)->Name("BM_TilejitGemmBatched")->Apply(shapes_batched);
BENCHMARK(BM_TilejitGemmBatched<true>)->Name("BM_TilejitGemmBatchedBf16Out")->Apply(shapes_batched);
// The console rows, then each tilejit row as a ratio to the cuBLAS row of its shape in the same run.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

// The self-contained preludes of generated kernels (no #include anywhere):
// types both dialects share, a part per dialect (conversions, shuffles,
// builtins, tensor-core wrappers), then the functions both share.
#include "prelude.hpp"

namespace tilejit::codegen {
namespace {

const char* common_types() {
  return R"(typedef unsigned short tj_f16;
typedef unsigned short tj_bf16;
struct __attribute__((aligned(16))) tj_v16 { unsigned w[4]; };
struct __attribute__((aligned(8))) tj_v8 { unsigned w[2]; };
struct tj_v4 { unsigned w[1]; };
// A tensor descriptor argument: the host's runtime::TensorDescriptor byte for
// byte (320 bytes, 64-byte aligned; the CUtensorMap first).
struct alignas(64) tj_desc { unsigned long long map[16]; void* base; long long shape[5]; long long strides[5]; long long block[5]; unsigned char tail[64]; };
// A block's coordinates: w[0] its column, w[1] its row, w[2..] the other dims of a rank 3..5 descriptor (dim order).
struct tj_crd { int w[5]; };
)";
}

const char* cuda_part() {
  return R"(static __device__ __forceinline__ float tj_as_f32(unsigned u) { return __uint_as_float(u); }
static __device__ __forceinline__ unsigned tj_as_u32(float f) { return __float_as_uint(f); }
static __device__ __forceinline__ float tj_f16_to_f32(tj_f16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ tj_f16 tj_f32_to_f16(float f) { tj_f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float tj_bf16_to_f32(tj_bf16 h) { return __uint_as_float(((unsigned)h) << 16); }
static __device__ __forceinline__ tj_bf16 tj_f32_to_bf16(float f) { tj_bf16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ float tj_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
static __device__ __forceinline__ int tj_shfl_xor(int v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
static __device__ __forceinline__ long long tj_shfl_xor(long long v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
static __device__ __forceinline__ unsigned tj_shfl_xor(unsigned v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
static __device__ __forceinline__ unsigned long long tj_shfl_xor(unsigned long long v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
static __device__ __forceinline__ double tj_shfl_xor(double v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
static __device__ __forceinline__ float tj_fmod(float a, float b) { return fmodf(a, b); }
static __device__ __forceinline__ float tj_tanh(float x) { return tanhf(x); }
static __device__ __forceinline__ float tj_erf(float x) { return erff(x); }
// Atomics (codegen's atomic_*; relaxed, device scope): CUDA's atomic functions. Signed 64-bit add, exchange and
// cas go through the unsigned forms (two's complement); f32 max / min work on the bits: the signed order where the
// operand's sign bit is clear (max) / set (min), else the unsigned order reversed — right for every non-NaN pair.
static __device__ __forceinline__ int tj_atomic_add(int* p, int v) { return atomicAdd(p, v); }
static __device__ __forceinline__ unsigned tj_atomic_add(unsigned* p, unsigned v) { return atomicAdd(p, v); }
static __device__ __forceinline__ unsigned long long tj_atomic_add(unsigned long long* p, unsigned long long v) { return atomicAdd(p, v); }
static __device__ __forceinline__ long long tj_atomic_add(long long* p, long long v) { return (long long)atomicAdd((unsigned long long*)p, (unsigned long long)v); }
static __device__ __forceinline__ float tj_atomic_add(float* p, float v) { return atomicAdd(p, v); }
static __device__ __forceinline__ double tj_atomic_add(double* p, double v) { return atomicAdd(p, v); }
// Vector f32 reductions (sm_90, PTX ISA 8.1 "red" with .v2 / .v4): one L2 reduction of 8 or 16 contiguous, aligned
// bytes instead of 2 or 4; relaxed, device scope, like the scalar adds. Used where the old values are unused.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ void tj_red_add_v2(float* p, float a, float b) {
  asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
}
static __device__ __forceinline__ void tj_red_add_v4(float* p, float a, float b, float c, float d) {
  asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
#endif
template <class T> static __device__ __forceinline__ T tj_atomic_max(T* p, T v) { return atomicMax(p, v); }
template <class T> static __device__ __forceinline__ T tj_atomic_min(T* p, T v) { return atomicMin(p, v); }
template <> __device__ __forceinline__ float tj_atomic_max<float>(float* p, float v) {
  return __float_as_int(v) >= 0 ? __int_as_float(atomicMax((int*)p, __float_as_int(v))) : __uint_as_float(atomicMin((unsigned*)p, __float_as_uint(v)));
}
template <> __device__ __forceinline__ float tj_atomic_min<float>(float* p, float v) {
  return __float_as_int(v) >= 0 ? __int_as_float(atomicMin((int*)p, __float_as_int(v))) : __uint_as_float(atomicMax((unsigned*)p, __float_as_uint(v)));
}
static __device__ __forceinline__ int tj_atomic_xchg(int* p, int v) { return atomicExch(p, v); }
static __device__ __forceinline__ unsigned tj_atomic_xchg(unsigned* p, unsigned v) { return atomicExch(p, v); }
static __device__ __forceinline__ unsigned long long tj_atomic_xchg(unsigned long long* p, unsigned long long v) { return atomicExch(p, v); }
static __device__ __forceinline__ long long tj_atomic_xchg(long long* p, long long v) { return (long long)atomicExch((unsigned long long*)p, (unsigned long long)v); }
static __device__ __forceinline__ float tj_atomic_xchg(float* p, float v) { return atomicExch(p, v); }
static __device__ __forceinline__ double tj_atomic_xchg(double* p, double v) {
  return __longlong_as_double((long long)atomicExch((unsigned long long*)p, (unsigned long long)__double_as_longlong(v)));
}
static __device__ __forceinline__ int tj_atomic_cas(int* p, int c, int v) { return atomicCAS(p, c, v); }
static __device__ __forceinline__ unsigned tj_atomic_cas(unsigned* p, unsigned c, unsigned v) { return atomicCAS(p, c, v); }
static __device__ __forceinline__ unsigned long long tj_atomic_cas(unsigned long long* p, unsigned long long c, unsigned long long v) { return atomicCAS(p, c, v); }
static __device__ __forceinline__ long long tj_atomic_cas(long long* p, long long c, long long v) {
  return (long long)atomicCAS((unsigned long long*)p, (unsigned long long)c, (unsigned long long)v);
}
// max / min that propagate NaN (a NaN input gives the canonical NaN, as torch and Triton's maximum do): one
// FMNMX.NAN from sm_80 on (PTX "max.NaN", "min.NaN"), not the compare, compare and select of the portable form
// (attention's row max runs one per score).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
static __device__ __forceinline__ float tj_max(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
static __device__ __forceinline__ float tj_min(float a, float b) { float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
#else
static __device__ __forceinline__ float tj_max(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : fmaxf(a, b); }
static __device__ __forceinline__ float tj_min(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7fc00000) : fminf(a, b); }
#endif
// Two f32 -> one .b32 of two 16-bit values, `lo` in the low half (PTX cvt packs its first source high).
static __device__ __forceinline__ unsigned tj_pack_f16x2(float lo, float hi) { unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }
static __device__ __forceinline__ unsigned tj_pack_bf16x2(float lo, float hi) { unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }
// exp2: the SFU approximation (2 ulp) with subnormal results flushed to zero — one MUFU.EX2, not the
// four-instruction sequence exp2f needs to keep results below 2^-126 (softmax probabilities never need them).
static __device__ __forceinline__ float tj_exp2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
// wgmma (sm_90a): the 32-bit shared-memory address of a pointer, and a matrix
// descriptor for a K-major operand with the 128-byte swizzle: start address,
// leading byte offset 16 (unused when swizzled), stride 1024 bytes between
// 8-row groups, layout type 1 (128B swizzle) in bits 62-63.
static __device__ __forceinline__ unsigned tj_smem_addr(const void* p) {
  unsigned a; asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p)); return a;
}
// Byte offset of byte `b` of row `row` in `rows`-row slabs of 128 bytes with the 128B swizzle (16-byte chunk ^ row % 8),
// the layout a TMA box of 128-byte rows has in shared memory.
static __device__ __forceinline__ unsigned tj_swz128(int row, int b, int rows) {
  return (unsigned)((b >> 7) * rows * 128 + row * 128 + ((((b >> 4) & 7) ^ (row & 7)) << 4) + (b & 15));
}
// The descriptor's fields for slabs of w = 128, 64 or 32 bytes (TMA boxes of that width with the matching swizzle):
// start address >> 4, LBO >> 4 (bits 16-29), SBO = 8 rows of w bytes >> 4 (bits 32-45), layout type in bits 62-63
// (1: 128B swizzle, 2: 64B, 3: 32B). Every helper below packs through it.
static __device__ __forceinline__ unsigned long long tj_wgmma_make_desc(unsigned addr, unsigned lbo, unsigned w) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((8 * w) >> 4) << 32) | ((unsigned long long)(w == 128 ? 1 : w == 64 ? 2 : 3) << 62);
}
static __device__ __forceinline__ unsigned long long tj_wgmma_desc(unsigned addr) { return tj_wgmma_make_desc(addr, 16, 128); }
// MN-major operand (16-bit, 128B swizzle): LBO = bytes between 64-element MN blocks, SBO = 1024 between 8-row K groups.
static __device__ __forceinline__ unsigned long long tj_wgmma_desc_mn(unsigned addr, unsigned lbo) { return tj_wgmma_make_desc(addr, lbo, 128); }
// The same for 64- or 32-byte slabs. K-major: LBO unused; MN-major: LBO = bytes between w-byte MN blocks.
static __device__ __forceinline__ unsigned long long tj_wgmma_desc_sw(unsigned addr, unsigned w) { return tj_wgmma_make_desc(addr, 16, w); }
static __device__ __forceinline__ unsigned long long tj_wgmma_desc_mn_sw(unsigned addr, unsigned lbo, unsigned w) {
  return tj_wgmma_make_desc(addr, lbo, w);
}
// The descriptor of the operand `k16` 16-byte units past d's start address: the low word plus k16, the high word as
// it is. Exact because shared-memory addresses are below 2^18 (228 KiB), so the 14-bit start field never carries
// into the LBO field (CUTLASS's descriptor iterator steps the same way). One add per wgmma instead of the mask,
// shift and or of a fresh descriptor per instruction (v0.29).
static __device__ __forceinline__ unsigned long long tj_wgmma_desc_at(unsigned long long d, unsigned k16) {
  unsigned lo;
  asm volatile("add.u32 %0, %1, %2;" : "=r"(lo) : "r"((unsigned)d), "r"(k16));
  return (d & 0xFFFFFFFF00000000ull) | lo;
}
// A for_range whose step is not positive at run time would never end (s += step never reaches hi): the loop's
// guard stops the kernel here instead (the launch then fails with an illegal-instruction error; the guard's line
// names the loop). A trap, not printf: an extern call (vprintf) would make ptxas serialise every wgmma.
static __device__ __forceinline__ void tj_bad_step() { asm volatile("trap;"); }
// mma.sync with an f32 accumulator (d0..d3 += A·B), one per operand type: f16 / bf16 m16n8k16, tf32 m16n8k8, and
// from sm_89 e4m3 / e5m2 m16n8k32 (PTX ISA "mma"); the s8 form accumulates in s32.
#define TJ_MMA_F32(NAME, SHAPE, TYPE)                                                                                 \
  static __device__ __forceinline__ void NAME(float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1,    \
                                              unsigned a2, unsigned a3, unsigned b0, unsigned b1) {                     \
    asm volatile("mma.sync.aligned." SHAPE ".row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
                 "{%0,%1,%2,%3};"                                                                                     \
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));     \
  }
TJ_MMA_F32(tj_mma_f16, "m16n8k16", "f16")
TJ_MMA_F32(tj_mma_bf16, "m16n8k16", "bf16")
TJ_MMA_F32(tj_mma_tf32, "m16n8k8", "tf32")
static __device__ __forceinline__ void tj_mma_s8(int& d0, int& d1, int& d2, int& d3, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// tf32 / 8-bit operands (PTX ISA "mma.m16n8k8" and "mma.m16n8k32"): an f32 rounded to tf32 (ties away, as cuBLAS
// and Triton do), four bytes in one .b32 (b0 in the low byte: the fragment's first element).
static __device__ __forceinline__ unsigned tj_tf32(float x) { unsigned r; asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x)); return r; }
static __device__ __forceinline__ unsigned tj_pack_b8x4(unsigned char b0, unsigned char b1, unsigned char b2, unsigned char b3) {
  return (unsigned)b0 | ((unsigned)b1 << 8) | ((unsigned)b2 << 16) | ((unsigned)b3 << 24);
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
// Four f32 holding f8 values (exact) -> one .b32 of four f8 bytes, v0 lowest: two cvt ... x2 (each packs its
// first source high).
#define TJ_PACK_F8X4(NAME, TYPE)                                                                                   \
  static __device__ __forceinline__ unsigned NAME(float v0, float v1, float v2, float v3) {                      \
    unsigned r;                                                                                                  \
    asm("{ .reg .b16 lo, hi; cvt.rn.satfinite." TYPE "x2.f32 lo, %2, %1; cvt.rn.satfinite." TYPE "x2.f32 hi, %4, %3; " \
        "mov.b32 %0, {lo, hi}; }"                                                                                \
        : "=r"(r) : "f"(v0), "f"(v1), "f"(v2), "f"(v3));                                                         \
    return r;                                                                                                    \
  }
TJ_PACK_F8X4(tj_pack_e4m3x4, "e4m3")
TJ_PACK_F8X4(tj_pack_e5m2x4, "e5m2")
TJ_MMA_F32(tj_mma_e4m3, "m16n8k32", "e4m3")
TJ_MMA_F32(tj_mma_e5m2, "m16n8k32", "e5m2")
#endif
)";
}

const char* hip_part() {
  return R"(#ifndef __HIPCC_RTC__
// Compiled outside hiprtc (clang -nogpuinc): define the HIP builtins ourselves.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
struct tj_dim3_tid { __declspec(property(get = gx)) unsigned x; __device__ unsigned gx() const { return __builtin_amdgcn_workitem_id_x(); } };
struct tj_dim3_bid { __declspec(property(get = gx)) unsigned x; __declspec(property(get = gy)) unsigned y; __declspec(property(get = gz)) unsigned z;
  __device__ unsigned gx() const { return __builtin_amdgcn_workgroup_id_x(); }
  __device__ unsigned gy() const { return __builtin_amdgcn_workgroup_id_y(); }
  __device__ unsigned gz() const { return __builtin_amdgcn_workgroup_id_z(); } };
struct tj_dim3_gdim { __declspec(property(get = gx)) unsigned x; __declspec(property(get = gy)) unsigned y; __declspec(property(get = gz)) unsigned z;
  __device__ unsigned gx() const { return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x(); }
  __device__ unsigned gy() const { return __builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y(); }
  __device__ unsigned gz() const { return __builtin_amdgcn_grid_size_z() / __builtin_amdgcn_workgroup_size_z(); } };
static const __device__ tj_dim3_tid threadIdx;
static const __device__ tj_dim3_bid blockIdx;
static const __device__ tj_dim3_gdim gridDim;
static __device__ __forceinline__ void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
static __device__ __forceinline__ int tj_lane_id() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
static __device__ __forceinline__ int __shfl_xor(int v, int m) { return __builtin_amdgcn_ds_bpermute((tj_lane_id() ^ m) << 2, v); }
static __device__ __forceinline__ float __shfl_xor(float v, int m) { return __builtin_bit_cast(float, __shfl_xor(__builtin_bit_cast(int, v), m)); }
static __device__ __forceinline__ float expf(float x) { return __builtin_expf(x); }
static __device__ __forceinline__ float __expf(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }
static __device__ __forceinline__ float exp2f(float x) { return __builtin_exp2f(x); }
static __device__ __forceinline__ float logf(float x) { return __builtin_logf(x); }
static __device__ __forceinline__ float sqrtf(float x) { return __builtin_sqrtf(x); }
static __device__ __forceinline__ float rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
static __device__ __forceinline__ float fabsf(float x) { return __builtin_fabsf(x); }
static __device__ __forceinline__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
static __device__ __forceinline__ float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static __device__ __forceinline__ float fminf(float a, float b) { return __builtin_fminf(a, b); }
static __device__ __forceinline__ double exp(double x) { return __builtin_exp(x); }
static __device__ __forceinline__ double exp2(double x) { return __builtin_exp2(x); }
static __device__ __forceinline__ double log(double x) { return __builtin_log(x); }
static __device__ __forceinline__ double sqrt(double x) { return __builtin_sqrt(x); }
static __device__ __forceinline__ double rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
static __device__ __forceinline__ double fabs(double x) { return __builtin_fabs(x); }
static __device__ __forceinline__ double fmod(double a, double b) { return __builtin_fmod(a, b); }
static __device__ __forceinline__ float log2f(float x) { return __builtin_log2f(x); }
static __device__ __forceinline__ float sinf(float x) { return __builtin_sinf(x); }
static __device__ __forceinline__ float cosf(float x) { return __builtin_cosf(x); }
static __device__ __forceinline__ float floorf(float x) { return __builtin_floorf(x); }
static __device__ __forceinline__ float ceilf(float x) { return __builtin_ceilf(x); }
static __device__ __forceinline__ double log2(double x) { return __builtin_log2(x); }
static __device__ __forceinline__ double sin(double x) { return __builtin_sin(x); }
static __device__ __forceinline__ double cos(double x) { return __builtin_cos(x); }
static __device__ __forceinline__ double tanh(double x) { return __builtin_tanh(x); }
static __device__ __forceinline__ double erf(double x) { return __builtin_erf(x); }
static __device__ __forceinline__ double floor(double x) { return __builtin_floor(x); }
static __device__ __forceinline__ double ceil(double x) { return __builtin_ceil(x); }
#endif
static __device__ __forceinline__ float tj_as_f32(unsigned u) { return __builtin_bit_cast(float, u); }
static __device__ __forceinline__ unsigned tj_as_u32(float f) { return __builtin_bit_cast(unsigned, f); }
static __device__ __forceinline__ float tj_f16_to_f32(tj_f16 h) { return (float)__builtin_bit_cast(_Float16, h); }
static __device__ __forceinline__ tj_f16 tj_f32_to_f16(float f) { return __builtin_bit_cast(tj_f16, (_Float16)f); }
static __device__ __forceinline__ float tj_bf16_to_f32(tj_bf16 h) { return __builtin_bit_cast(float, ((unsigned)h) << 16); }
static __device__ __forceinline__ tj_bf16 tj_f32_to_bf16(float f) {
  unsigned u = __builtin_bit_cast(unsigned, f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (tj_bf16)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (tj_bf16)(u >> 16);
}
// Two f32 -> one .b32 of two 16-bit values, `lo` in the low half (round to nearest even).
static __device__ __forceinline__ unsigned tj_pack_f16x2(float lo, float hi) { return (unsigned)tj_f32_to_f16(lo) | ((unsigned)tj_f32_to_f16(hi) << 16); }
static __device__ __forceinline__ unsigned tj_pack_bf16x2(float lo, float hi) { return (unsigned)tj_f32_to_bf16(lo) | ((unsigned)tj_f32_to_bf16(hi) << 16); }
// MFMA operand and accumulator vectors (clang ext_vector_type, as the amdgcn builtins take them).
typedef short tj_i16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 tj_f16x4 __attribute__((ext_vector_type(4)));
typedef float tj_f32x4 __attribute__((ext_vector_type(4)));
typedef float tj_f32x16 __attribute__((ext_vector_type(16)));
typedef int tj_i32x4 __attribute__((ext_vector_type(4)));
typedef int tj_i32x16 __attribute__((ext_vector_type(16)));
static __device__ __forceinline__ float tj_shfl_xor(float v, int m) { return __shfl_xor(v, m); }
static __device__ __forceinline__ int tj_shfl_xor(int v, int m) { return __shfl_xor(v, m); }
// Other element types through 32-bit int shuffles (HIP's own overloads of __shfl_xor vary by version and are
// ambiguous for unsigned and 64-bit arguments).
static __device__ __forceinline__ unsigned tj_shfl_xor(unsigned v, int m) { return (unsigned)__shfl_xor((int)v, m); }
static __device__ __forceinline__ unsigned long long tj_shfl_xor(unsigned long long v, int m) {
  const unsigned lo = tj_shfl_xor((unsigned)v, m), hi = tj_shfl_xor((unsigned)(v >> 32), m);
  return ((unsigned long long)hi << 32) | lo;
}
static __device__ __forceinline__ long long tj_shfl_xor(long long v, int m) { return (long long)tj_shfl_xor((unsigned long long)v, m); }
static __device__ __forceinline__ double tj_shfl_xor(double v, int m) {
  return __builtin_bit_cast(double, tj_shfl_xor(__builtin_bit_cast(unsigned long long, v), m));
}
static __device__ __forceinline__ float tj_fmod(float a, float b) { return __builtin_fmodf(a, b); }
// tanh and erf in f32 without a device library (clang's HIP path has none): odd Taylor series near 0, where the
// closed forms cancel; elsewhere tanh = 1 - 2 / (e^{2|x|} + 1) and Abramowitz & Stegun's 7.1.26 for erf (absolute
// error 1.5e-7). Both within about 1e-6 of the true value (test/codegen/test_math_more.cpp measures them).
static __device__ __forceinline__ float tj_tanh(float x) {
  const float a = __builtin_fabsf(x);
  if (a < 0.125f) {
    const float x2 = x * x;
    return x * (1.0f + x2 * (-1.0f / 3 + x2 * (2.0f / 15 + x2 * (-17.0f / 315))));
  }
  const float r = 1.0f - 2.0f / (expf(2.0f * a) + 1.0f);
  return x < 0 ? -r : r;
}
static __device__ __forceinline__ float tj_erf(float x) {
  const float a = __builtin_fabsf(x);
  if (a < 0.5f) {
    const float x2 = x * x;
    return 1.1283791670955126f * x *
           (1.0f + x2 * (-1.0f / 3 + x2 * (1.0f / 10 + x2 * (-1.0f / 42 + x2 * (1.0f / 216 + x2 * (-1.0f / 1320 + x2 * (1.0f / 9360)))))));
  }
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float r = 1.0f - poly * expf(-a * a);
  return x < 0 ? -r : r;
}
// Atomics (codegen's atomic_*): relaxed, agent (device) scope, through clang's HIP atomic builtins (global
// memory atomics of the GPU, f32 add included on gfx90a / gfx94x). f32 max / min on the bits as in the CUDA
// prelude; exchanges of floats through their bits.
template <class T> static __device__ __forceinline__ T tj_atomic_add(T* p, T v) { return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
template <class T> static __device__ __forceinline__ T tj_atomic_max(T* p, T v) { return __hip_atomic_fetch_max(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
template <class T> static __device__ __forceinline__ T tj_atomic_min(T* p, T v) { return __hip_atomic_fetch_min(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
template <> __device__ __forceinline__ float tj_atomic_max<float>(float* p, float v) {
  const int b = __builtin_bit_cast(int, v);
  return b >= 0 ? __builtin_bit_cast(float, __hip_atomic_fetch_max((int*)p, b, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT))
                : __builtin_bit_cast(float, __hip_atomic_fetch_min((unsigned*)p, (unsigned)b, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT));
}
template <> __device__ __forceinline__ float tj_atomic_min<float>(float* p, float v) {
  const int b = __builtin_bit_cast(int, v);
  return b >= 0 ? __builtin_bit_cast(float, __hip_atomic_fetch_min((int*)p, b, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT))
                : __builtin_bit_cast(float, __hip_atomic_fetch_max((unsigned*)p, (unsigned)b, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT));
}
template <class T> static __device__ __forceinline__ T tj_atomic_xchg(T* p, T v) { return __hip_atomic_exchange(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
template <> __device__ __forceinline__ float tj_atomic_xchg<float>(float* p, float v) {
  return __builtin_bit_cast(float, __hip_atomic_exchange((unsigned*)p, __builtin_bit_cast(unsigned, v), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT));
}
template <> __device__ __forceinline__ double tj_atomic_xchg<double>(double* p, double v) {
  return __builtin_bit_cast(double, __hip_atomic_exchange((unsigned long long*)p, __builtin_bit_cast(unsigned long long, v), __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT));
}
template <class T> static __device__ __forceinline__ T tj_atomic_cas(T* p, T c, T v) {
  __hip_atomic_compare_exchange_strong(p, &c, v, __ATOMIC_RELAXED, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  return c;
}
static __device__ __forceinline__ float tj_max(float a, float b) { return (a != a || b != b) ? __builtin_nanf("") : fmaxf(a, b); }
static __device__ __forceinline__ float tj_min(float a, float b) { return (a != a || b != b) ? __builtin_nanf("") : fminf(a, b); }
static __device__ __forceinline__ float tj_exp2(float x) { return exp2f(x); }
// A for_range whose step is not positive at run time would never end (s += step never reaches hi): the loop's
// guard stops the kernel here instead; the launch then fails.
static __device__ __forceinline__ void tj_bad_step() { __builtin_trap(); }
)";
}

/// Identical in both dialects: rounding, math wrappers, generic min/max/abs.
const char* common_functions() {
  return R"(// f8 (OCP e4m3 / e5m2) <-> f32: round to nearest even, saturate to the largest finite value, NaN kept.
static __device__ __forceinline__ float tj_f8_to_f32(unsigned b, const int E, const int M, const bool ieee) {
  const int bias = (1 << (E - 1)) - 1, ex = (int)((b >> M) & ((1u << E) - 1)), m = (int)(b & ((1u << M) - 1));
  const unsigned sign = (b & 0x80u) << 24;
  if (ieee && ex == (1 << E) - 1) return tj_as_f32(sign | 0x7f800000u | (m ? 0x400000u : 0u));
  if (!ieee && (b & 0x7fu) == 0x7fu) return tj_as_f32(0x7fc00000u);
  if (ex == 0) return tj_as_f32(sign | tj_as_u32((float)m * tj_as_f32((unsigned)(127 + 1 - bias - M) << 23)));
  return tj_as_f32(sign | ((unsigned)(ex - bias + 127) << 23) | ((unsigned)m << (23 - M)));
}
static __device__ __forceinline__ unsigned char tj_f32_to_f8(float f, const int E, const int M, const bool ieee) {
  const int bias = (1 << (E - 1)) - 1, emin = 1 - bias;
  const unsigned max_code = ieee ? 0x7bu : 0x7eu, x = tj_as_u32(f), sign = (x >> 24) & 0x80u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned char)(sign | 0x7fu);
  const int e = (int)(a >> 23) - 127;
  unsigned code;
  if (e < emin) {
    const float q = tj_as_f32(a) * tj_as_f32((unsigned)(127 + M - emin) << 23);  // exact: a power-of-two scale
    unsigned r = (unsigned)q;
    const float rem = q - (float)r;
    if (rem > 0.5f || (rem == 0.5f && (r & 1u))) ++r;
    code = r;
  } else {
    const unsigned mant = a & 0x7fffffu, rest = mant & ((1u << (23 - M)) - 1), half = 1u << (22 - M);
    code = ((unsigned)(e + bias) << M) | (mant >> (23 - M));
    if (rest > half || (rest == half && (code & 1u))) ++code;
  }
  return (unsigned char)(sign | (code > max_code ? max_code : code));
}
// 2^x on the FMA pipe (tj::exp2_split; FlashAttention-4's software exp2): x = j + f with j = round(x) by the
// 1.5·2^23 shift and |f| <= 1/2, 2^f by a degree-3 minimax polynomial (relative error 7.5e-5), times 2^j built in
// the exponent bits. x is clamped to [-127, 128] first by the NaN-keeping min / max: 2^-127 is built as 0 (so
// x <= -127 gives exactly 0, as ex2.approx.ftz does), 2^128 as +inf, and NaN stays NaN through the product.
static __device__ __forceinline__ float tj_exp2_fma(float x) {
  const float xc = tj_min(tj_max(x, -127.0f), 128.0f);
  const float t = xc + 12582912.0f;  // 1.5 * 2^23: t's low mantissa bits hold round(xc)
  const float f = xc - (t - 12582912.0f);
  const float p = fmaf(fmaf(fmaf(0.05517166907f, f, 0.2426111222f), f, 0.6932609855f), f, 0.9999280735f);
  return p * tj_as_f32((tj_as_u32(t) << 23) + (127u << 23));
}
static __device__ __forceinline__ float tj_e4m3_to_f32(unsigned char b) { return tj_f8_to_f32(b, 4, 3, false); }
static __device__ __forceinline__ float tj_e5m2_to_f32(unsigned char b) { return tj_f8_to_f32(b, 5, 2, true); }
static __device__ __forceinline__ unsigned char tj_f32_to_e4m3(float f) { return tj_f32_to_f8(f, 4, 3, false); }
static __device__ __forceinline__ unsigned char tj_f32_to_e5m2(float f) { return tj_f32_to_f8(f, 5, 2, true); }
// One half of a .b32 holding two 16-bit floats (the low half is element 2i of a packed tile, codegen plan_packed).
static __device__ __forceinline__ float tj_bf16x2_lo(unsigned w) { return tj_bf16_to_f32((tj_bf16)(w & 0xffffu)); }
static __device__ __forceinline__ float tj_bf16x2_hi(unsigned w) { return tj_bf16_to_f32((tj_bf16)(w >> 16)); }
static __device__ __forceinline__ float tj_f16x2_lo(unsigned w) { return tj_f16_to_f32((tj_f16)(w & 0xffffu)); }
static __device__ __forceinline__ float tj_f16x2_hi(unsigned w) { return tj_f16_to_f32((tj_f16)(w >> 16)); }
static __device__ __forceinline__ float tj_round_f16(float f) { return tj_f16_to_f32(tj_f32_to_f16(f)); }
static __device__ __forceinline__ float tj_round_bf16(float f) { return tj_bf16_to_f32(tj_f32_to_bf16(f)); }
// Round-to-odd to float (truncate toward zero; if anything was lost, set the last mantissa bit): rounding that to
// f16, bf16 or f8 by nearest even is the correctly rounded cast of the f64 / 64-bit integer itself (Boldo and
// Melquiond, IEEE TC 2008); casts of f64 and wide integers to those formats go through these (core/dtype.hpp).
static __device__ __forceinline__ float tj_f64_to_f32_odd(double v) {
  const float f = (float)v;
  const double back = (double)f;
  if (back == v || v != v) return f;
  const unsigned u = tj_as_u32(f) - ((v > 0 ? back > v : back < v) ? 1u : 0u);
  return tj_as_f32(u | 1u);
}
static __device__ __forceinline__ float tj_u64_to_f32_odd(unsigned long long m) {
  unsigned long long t = m >> 24;  // drop = bit length of t: the bits below m's top 24
  int drop = 0;
  if (t >> 32) { t >>= 32; drop += 32; }
  if (t >> 16) { t >>= 16; drop += 16; }
  if (t >> 8) { t >>= 8; drop += 8; }
  if (t >> 4) { t >>= 4; drop += 4; }
  if (t >> 2) { t >>= 2; drop += 2; }
  if (t >> 1) { t >>= 1; drop += 1; }
  drop += (int)t;
  const unsigned long long sticky = drop && (m << (64 - drop)) != 0ull;
  return (float)(((m >> drop) | sticky) << drop);
}
static __device__ __forceinline__ float tj_i64_to_f32_odd(long long v) {
  const float m = tj_u64_to_f32_odd(v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
  return v < 0 ? -m : m;
}
static __device__ __forceinline__ float tj_exp(float x) { return __expf(x); }
static __device__ __forceinline__ float tj_log(float x) { return logf(x); }
static __device__ __forceinline__ float tj_sqrt(float x) { return sqrtf(x); }
static __device__ __forceinline__ float tj_rsqrt(float x) { return rsqrtf(x); }
static __device__ __forceinline__ float tj_abs(float x) { return fabsf(x); }
static __device__ __forceinline__ float tj_log2(float x) { return log2f(x); }
static __device__ __forceinline__ float tj_sin(float x) { return sinf(x); }
static __device__ __forceinline__ float tj_cos(float x) { return cosf(x); }
static __device__ __forceinline__ float tj_floor(float x) { return floorf(x); }
static __device__ __forceinline__ float tj_ceil(float x) { return ceilf(x); }
static __device__ __forceinline__ float tj_sigmoid(float x) { return 1.0f / (1.0f + tj_exp(-x)); }
// f64 tiles: the double-precision functions (the float wrappers would round the argument to f32). Codegen
// refuses f64 exp / exp2 / log on HIP: clang without the ROCm device libraries has no code for them.
static __device__ __forceinline__ double tj_exp(double x) { return exp(x); }
static __device__ __forceinline__ double tj_exp2(double x) { return exp2(x); }
static __device__ __forceinline__ double tj_log(double x) { return log(x); }
static __device__ __forceinline__ double tj_sqrt(double x) { return sqrt(x); }
static __device__ __forceinline__ double tj_rsqrt(double x) { return rsqrt(x); }
static __device__ __forceinline__ double tj_abs(double x) { return fabs(x); }
static __device__ __forceinline__ double tj_fmod(double a, double b) { return fmod(a, b); }
static __device__ __forceinline__ double tj_log2(double x) { return log2(x); }
static __device__ __forceinline__ double tj_sin(double x) { return sin(x); }
static __device__ __forceinline__ double tj_cos(double x) { return cos(x); }
static __device__ __forceinline__ double tj_tanh(double x) { return tanh(x); }
static __device__ __forceinline__ double tj_erf(double x) { return erf(x); }
static __device__ __forceinline__ double tj_floor(double x) { return floor(x); }
static __device__ __forceinline__ double tj_ceil(double x) { return ceil(x); }
static __device__ __forceinline__ double tj_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
template <class T> static __device__ __forceinline__ T tj_max(T a, T b) { return a > b ? a : b; }
template <class T> static __device__ __forceinline__ T tj_min(T a, T b) { return a < b ? a : b; }
template <class T> static __device__ __forceinline__ T tj_abs(T a) { return a < 0 ? -a : a; }
// f64 maximum / minimum propagate NaN as f32's do (a + b is NaN when either is). Specialisations, not overloads:
// an f64 overload beside the f32 one would make a mixed call such as (short, int), which the f32 one takes, ambiguous.
template <> __device__ __forceinline__ double tj_max<double>(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
template <> __device__ __forceinline__ double tj_min<double>(double a, double b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
)";
}

}  // namespace

std::string tma_prelude() {
  return R"(// TMA and mbarriers (sm_90; PTX ISA "cp.async.bulk.tensor", "mbarrier").
static __device__ __forceinline__ void tj_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void tj_mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
static __device__ __forceinline__ void tj_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void tj_mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n}" :: "r"(bar), "r"(parity) : "memory");
}
// One arrival (release semantics, CTA scope): a consumer warp is done with a pipeline stage.
static __device__ __forceinline__ void tj_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// The [box] block at element coordinates (x = innermost, y) of the map into shared memory at `dst`.
static __device__ __forceinline__ void tj_tma_load_2d(unsigned dst, const void* map, int x, int y, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar) : "memory");
}
// The same for maps of rank 3, 4 and 5: coordinates innermost first.
static __device__ __forceinline__ void tj_tma_load_3d(unsigned dst, const void* map, int x, int y, int z, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar) : "memory");
}
static __device__ __forceinline__ void tj_tma_load_4d(unsigned dst, const void* map, int x, int y, int z, int w, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar) : "memory");
}
static __device__ __forceinline__ void tj_tma_load_5d(unsigned dst, const void* map, int x, int y, int z, int w, int v, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(v), "r"(bar) : "memory");
}
// Thread-block clusters (sm_90; PTX ISA "Cluster", "mapa", "barrier.cluster", TMA ".multicast::cluster").
static __device__ __forceinline__ unsigned tj_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of the cluster that has not exited: release this program's writes, acquire the others'.
static __device__ __forceinline__ void tj_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// One arrival on the barrier at CTA-relative address `bar` in the program of rank `rank` of this cluster (mapa maps
// the address into that program's shared memory). Default semantics (release, CTA scope), as for a local arrival:
// a release at cluster scope would fence every earlier memory operation of the thread cluster-wide, once per stage.
static __device__ __forceinline__ void tj_mbar_arrive_remote(unsigned bar, unsigned rank) {
  asm volatile("{\n .reg .b32 ra;\n mapa.shared::cluster.u32 ra, %0, %1;\n mbarrier.arrive.shared::cluster.b64 _, [ra];\n}"
               :: "r"(bar), "r"(rank) : "memory");
}
// tj_tma_load_2d into the same offset `dst` of every program in `mask` (bit r: rank r), completing on each one's `bar`.
static __device__ __forceinline__ void tj_tma_load_2d_multicast(unsigned dst, const void* map, int x, int y, unsigned bar, unsigned mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(bar), "h"((unsigned short)mask) : "memory");
}
static __device__ __forceinline__ void tj_tma_load_3d_multicast(unsigned dst, const void* map, int x, int y, int z, unsigned bar, unsigned mask) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar), "h"((unsigned short)mask) : "memory");
}
static __device__ __forceinline__ void tj_tma_load_4d_multicast(unsigned dst, const void* map, int x, int y, int z, int w, unsigned bar, unsigned mask) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar), "h"((unsigned short)mask) : "memory");
}
static __device__ __forceinline__ void tj_tma_load_5d_multicast(unsigned dst, const void* map, int x, int y, int z, int w, int v, unsigned bar,
                                                                unsigned mask) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5, %6}], [%7], %8;"
               :: "r"(dst), "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(v), "r"(bar), "h"((unsigned short)mask) : "memory");
}
)";
}

std::string cp_async_prelude() {
  return R"(// cp.async (sm_80+; PTX ISA "cp.async", "cp.async.commit_group", "cp.async.wait_group").
static __device__ __forceinline__ void tj_cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
// ldmatrix (sm_75+; PTX ISA "ldmatrix"): four (two) 8x8 matrices of 16-bit elements, one row address per lane (lanes
// 8m .. 8m + 7 give matrix m's rows); thread (g, t) of a warp receives row g, elements 2t, 2t + 1 of matrix m in r_m.
static __device__ __forceinline__ void tj_ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
static __device__ __forceinline__ void tj_ldsm_x2(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
}
// .trans: thread (g, t) receives elements (2t, g) and (2t + 1, g) of matrix m — a column pair of the rows stored.
static __device__ __forceinline__ void tj_ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
static __device__ __forceinline__ void tj_ldsm_x2_t(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
}
static __device__ __forceinline__ void tj_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Every cp.async group of this thread but the N most recent has completed.
template <int N> static __device__ __forceinline__ void tj_cp_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
// A 2-D slice of a descriptor: base, rows, columns, row stride (elements), and its OobFill (1: NaN).
struct tj_view { const void* base; long long rows, cols, rstride; int nan; };
// Rank-R descriptor d (ES-byte elements) read as rows along dim P and columns along dim R - 1, at coordinates u0, u1,
// u2 of its other dims (dim order): the base moved to them, and no rows when one of them is out of bounds (every
// element is then fill).
static __device__ __forceinline__ tj_view tj_view_of(const tj_desc& d, int R, int P, int es, int u0 = 0, int u1 = 0, int u2 = 0) {
  const int u[3] = {u0, u1, u2};
  tj_view v{d.base, d.shape[P], d.shape[R - 1], d.strides[P], (int)d.tail[3]};
  long long off = 0;
  for (int k = 0, j = 0; k + 1 < R; ++k) {
    if (k == P) continue;
    const long long c = u[j++];
    if (c < 0 || c >= d.shape[k]) v.rows = 0;
    off += c * d.strides[k];
  }
  v.base = (const unsigned char*)d.base + (v.rows ? off * es : 0);
  return v;
}
// This thread's share of the [ROWS, COLS] block of ES-byte elements at element coordinates (row0, col0) of the 2-D
// slice d, into shared memory at dst as 128-byte swizzled slabs of ROWS rows (tj_swz128, the layout a TMA box
// has): 16-byte chunks tid, tid + THREADS, ... A chunk wholly inside the tensor (16-byte aligned there) is one
// cp.async; any other is written element by element, with the descriptor's fill past the tensor (zero, or the
// ES-byte NaN pattern NANBITS when its OobFill asks for NaN, as a TMA copy fills).
template <int ES, int ROWS, int COLS, int THREADS, unsigned NANBITS>
static __device__ __forceinline__ void tj_cp_block_edge(unsigned dst, const tj_view& d, int row0, int col0, int tid) {
  constexpr int EPC = 16 / ES, CPR = COLS / EPC, CHUNKS = ROWS * CPR;
  const unsigned char* const base = (const unsigned char*)d.base;
  const long long sh0 = d.rows, sh1 = d.cols, st0 = d.rstride;
  const bool aligned = (((long long)col0 * ES) & 15) == 0 && ((st0 * ES) & 15) == 0 && (((unsigned long long)base) & 15) == 0;
  // Rolled loops and byte stores: this path runs for edge blocks only, and unrolled it would take registers from
  // the main loop it is inlined into.
#pragma unroll 1
  for (int j = 0; j < (CHUNKS + THREADS - 1) / THREADS; ++j) {
    const int q = tid + j * THREADS;
    if (CHUNKS % THREADS != 0 && q >= CHUNKS) break;
    const int r = q / CPR, c = (q % CPR) * EPC;
    const long long gr = (long long)row0 + r, gc = (long long)col0 + c;
    const unsigned s = dst + tj_swz128(r, c * ES, ROWS);
    if (aligned && gr >= 0 && gr < sh0 && gc >= 0 && gc + EPC <= sh1) {
      tj_cp_async16(s, base + (gr * st0 + gc) * ES);
    } else {
#pragma unroll 1
      for (int e = 0; e < EPC; ++e) {
        const bool in = gr >= 0 && gr < sh0 && gc + e >= 0 && gc + e < sh1;
#pragma unroll 1
        for (int i = 0; i < ES; ++i) {
          const unsigned v = in ? base[(gr * st0 + gc + e) * ES + i] : d.nan ? (NANBITS >> (8 * i)) & 255u : 0u;
          asm volatile("st.shared.u8 [%0], %1;" :: "r"(s + e * ES + i), "r"(v) : "memory");
        }
      }
    }
  }
}
// The block as above. A block wholly inside the tensor with 16-byte aligned rows (the interior of a large GEMM:
// every block but the last row and column of programs) is copied by one cp.async per chunk with no test per chunk:
// the thread's first row and column computed once, then a fixed step of THREADS / CPR rows per chunk (CUTLASS's
// multistage iterators do the same: predicates and offsets fixed before the main loop). Blocks at an edge take
// tj_cp_block_edge, out of line so its registers do not count against the main loop's.
template <int ES, int ROWS, int COLS, int THREADS, unsigned NANBITS>
static __device__ __forceinline__ void tj_cp_block(unsigned dst, const tj_view& d, int row0, int col0, int tid) {
  constexpr int EPC = 16 / ES, CPR = COLS / EPC, CHUNKS = ROWS * CPR;
  const unsigned char* const base = (const unsigned char*)d.base;
  const long long st0 = d.rstride;
  const bool interior = row0 >= 0 && (long long)row0 + ROWS <= d.rows && col0 >= 0 && (long long)col0 + COLS <= d.cols &&
                        ((((long long)col0 * ES) | (st0 * ES) | (long long)(unsigned long long)base) & 15) == 0;
  if (!interior) {
    tj_cp_block_edge<ES, ROWS, COLS, THREADS, NANBITS>(dst, d, row0, col0, tid);
    return;
  }
  if constexpr (THREADS % CPR == 0) {
    constexpr int STEP = THREADS / CPR;  // rows between a thread's chunks
    const int r0 = tid / CPR, c = (tid % CPR) * EPC;
    const unsigned char* g = base + (((long long)row0 + r0) * st0 + col0 + c) * ES;
    const long long gstep = (long long)STEP * st0 * ES;
#pragma unroll
    for (int j = 0; j < (CHUNKS + THREADS - 1) / THREADS; ++j) {
      if (CHUNKS % THREADS != 0 && tid + j * THREADS >= CHUNKS) break;
      tj_cp_async16(dst + tj_swz128(r0 + j * STEP, c * ES, ROWS), g);
      g += gstep;
    }
  } else {
#pragma unroll
    for (int j = 0; j < (CHUNKS + THREADS - 1) / THREADS; ++j) {
      const int q = tid + j * THREADS;
      if (CHUNKS % THREADS != 0 && q >= CHUNKS) break;
      const int r = q / CPR, c = (q % CPR) * EPC;
      tj_cp_async16(dst + tj_swz128(r, c * ES, ROWS), base + (((long long)row0 + r) * st0 + col0 + c) * ES);
    }
  }
}
)";
}

std::string tma_store_prelude() {
  return R"(// TMA stores (sm_90; PTX ISA "cp.async.bulk.tensor", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group").
// The [box] block at element coordinates (x = innermost, y) of the map from shared memory at `src`, in a bulk group.
static __device__ __forceinline__ void tj_tma_store_2d(const void* map, unsigned src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" :: "l"(map), "r"(src), "r"(x), "r"(y) : "memory");
}
static __device__ __forceinline__ void tj_tma_store_3d(const void* map, unsigned src, int x, int y, int z) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" :: "l"(map), "r"(src), "r"(x), "r"(y), "r"(z) : "memory");
}
static __device__ __forceinline__ void tj_tma_store_4d(const void* map, unsigned src, int x, int y, int z, int w) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               :: "l"(map), "r"(src), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
}
static __device__ __forceinline__ void tj_tma_store_5d(const void* map, unsigned src, int x, int y, int z, int w, int v) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               :: "l"(map), "r"(src), "r"(x), "r"(y), "r"(z), "r"(w), "r"(v) : "memory");
}
static __device__ __forceinline__ void tj_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Every bulk group of this thread has finished reading its shared memory (the buffer may be written again).
static __device__ __forceinline__ void tj_bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// Every bulk group of this thread but the most recent one has finished reading its shared memory source.
static __device__ __forceinline__ void tj_bulk_wait_read1() { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); }
// Every bulk group of this thread has completed.
static __device__ __forceinline__ void tj_bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// This thread's generic-proxy writes to shared memory become visible to the async proxy (TMA).
static __device__ __forceinline__ void tj_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
)";
}

std::string events_prelude(bool cuda) {
  // One record per event, 32 bytes; the layout is profiler::DeviceEvent's. A recording thread reserves slots in
  // growing chunks (4 ... 256) with one atomic each, the next chunk ahead of need (one counter for the whole grid, hit per
  // event and waited for, made a warp-specialised GEMM 1.7x slower); the host zeroes the buffer first and skips
  // slots whose time is 0 (reserved, not written). The dialects differ only in their clocks and atomics.
  std::string s = R"(// Device events (codegen::Options::device_events).
struct tj_evrec { unsigned long long t, clk; unsigned program, id; unsigned short site; unsigned char warp, kind; unsigned sm; };
struct tj_evbuf { unsigned count, capacity, dropped, reserved; tj_evrec rec[1]; };
// This thread's reserved slots [next, end); `size`: the next chunk's; `pre`: a chunk reserved ahead (~0u: none).
struct tj_evcur { unsigned next, end, size, pre; };
static __device__ __forceinline__ unsigned tj_ev_reserve(tj_evbuf* b, unsigned n);  // atomic add to count: its old value
static __device__ __forceinline__ void tj_ev_drop(tj_evbuf* b);                     // atomic increment of dropped
// Chunks grow 4, 8, ... 256 slots (a thread with a few events wastes a few); from 8 on, the next one is reserved as
// soon as one is taken, so its atomic's round trip overlaps the events recorded meanwhile (its result is read only
// when the chunk runs out). A thread whose chunk lay past the capacity reserves no more (the counter cannot wrap).
static __device__ __forceinline__ void tj_ev_next_chunk(tj_evbuf* b, tj_evcur& cur) {
  const unsigned n = cur.size;
  if (cur.end > b->capacity) {  // full already: stay full
    cur.next = cur.end - 1u;
    return;
  }
  cur.next = cur.pre != ~0u ? cur.pre : tj_ev_reserve(b, n);
  cur.end = cur.next + n;
  cur.size = n < 256u ? 2u * n : 256u;
  cur.pre = n >= 8u ? tj_ev_reserve(b, cur.size) : ~0u;
}
// One record into the thread's next slot (counted as dropped when the buffer is full).
static __device__ __forceinline__ void tj_ev_write(tj_evbuf* b, tj_evcur& cur, unsigned long long t, unsigned long long c,
                                                   unsigned sm, unsigned site, unsigned kind, unsigned id, int warp) {
  if (cur.next == cur.end) tj_ev_next_chunk(b, cur);
  const unsigned i = cur.next++;
  if (i >= b->capacity) {
    tj_ev_drop(b);
    return;
  }
  tj_evrec* r = &b->rec[i];
  r->t = t; r->clk = c;
  r->program = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  r->id = id; r->site = (unsigned short)site; r->warp = (unsigned char)warp; r->kind = (unsigned char)kind; r->sm = sm;
}
)";
  s += cuda ? R"(static __device__ __forceinline__ unsigned tj_ev_reserve(tj_evbuf* b, unsigned n) {
  unsigned base;
  asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(base) : "l"(&b->count), "r"(n) : "memory");
  return base;
}
static __device__ __forceinline__ void tj_ev_drop(tj_evbuf* b) { asm volatile("red.global.add.u32 [%0], 1;" :: "l"(&b->dropped) : "memory"); }
static __device__ __forceinline__ void tj_event(tj_evbuf* b, tj_evcur& cur, unsigned site, unsigned kind, unsigned id, int warp) {
  if (b == 0) return;  // launched without a profiler session: nothing is recorded
  unsigned long long t, c;
  unsigned sm;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  asm("mov.u32 %0, %%smid;" : "=r"(sm));
  tj_ev_write(b, cur, t, c, sm, site, kind, id, warp);
}
)"
            : R"(static __device__ __forceinline__ unsigned tj_ev_reserve(tj_evbuf* b, unsigned n) {
  return __atomic_fetch_add(&b->count, n, __ATOMIC_RELAXED);
}
static __device__ __forceinline__ void tj_ev_drop(tj_evbuf* b) { __atomic_fetch_add(&b->dropped, 1u, __ATOMIC_RELAXED); }
static __device__ __forceinline__ void tj_event(tj_evbuf* b, tj_evcur& cur, unsigned site, unsigned kind, unsigned id, int warp) {
  if (b == 0) return;
  // s_memrealtime: the 100 MHz constant clock of gfx9 (10 ns per tick); s_memtime: the shader clock. No SM id (0).
  tj_ev_write(b, cur, __builtin_amdgcn_s_memrealtime() * 10ull, __builtin_amdgcn_s_memtime(), 0u, site, kind, id, warp);
}
)";
  return s;
}

std::string prelude(bool cuda) {
  return std::string(cuda ? "// tilejit CUDA prelude\n" : "// tilejit HIP prelude\n") + common_types() +
         (cuda ? cuda_part() : hip_part()) + common_functions();
}

}  // namespace tilejit::codegen

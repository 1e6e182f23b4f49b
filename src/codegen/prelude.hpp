#pragma once
namespace tilejit::codegen {
/// Prelude of CUDA kernels: half-precision conversions via PTX cvt, shuffles, math.
const char* cuda_prelude();
/// Prelude of HIP kernels; under hiprtc (__HIPCC_RTC__) the builtins come from
/// hiprtc, otherwise (clang -nogpuinc) it defines them from amdgcn builtins.
const char* hip_prelude();
}  // namespace tilejit::codegen

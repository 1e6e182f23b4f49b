#pragma once
#include <string>
namespace tilejit::codegen {
/// The prelude of generated kernels for CUDA (cuda = true: half-precision
/// conversions via PTX cvt, shuffles, mma.sync) or HIP (under hiprtc the
/// builtins come from hiprtc; otherwise (clang -nogpuinc) it defines them from
/// amdgcn builtins), with the types and functions both dialects share.
std::string prelude(bool cuda);
/// mbarrier and TMA helpers (CUDA, sm_90+), appended when a kernel uses the TMA pipeline.
std::string tma_prelude();
}  // namespace tilejit::codegen

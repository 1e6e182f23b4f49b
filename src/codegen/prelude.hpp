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
/// cp.async helpers (CUDA, sm_80+): 16-byte copies, groups, and tj_cp_block (a thread's share of a descriptor
/// block, into the 128B-swizzled slabs a TMA box uses); appended when a kernel has a cp.async pipeline.
std::string cp_async_prelude();
/// TMA store helpers (CUDA, sm_90+): bulk tensor stores, bulk groups, the proxy fence;
/// appended after tma_prelude() when a kernel stores a descriptor block through TMA.
std::string tma_store_prelude();
/// Device events (Options::device_events): the record layout and tj_event(buf, site, kind, id, warp), which
/// appends one record (global timer in ns, clock, program, SM) when buf is not null.
std::string events_prelude(bool cuda);
}  // namespace tilejit::codegen

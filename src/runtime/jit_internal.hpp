// src/runtime/jit_internal.hpp — the two compiler front ends behind jit.hpp
// (private to the runtime).
#pragma once
#include <string>

#include "tilejit/runtime/jit.hpp"

namespace tilejit::runtime::detail {

// NVRTC (nvrtc.cpp). `req` has been validated by compile().
bool nvrtc_available(std::string* why);
std::string nvrtc_version();  // throws DeviceUnavailable
JitResult nvrtc_compile(const JitRequest& req);

// HIP (hiprtc.cpp): hiprtc for the targets its comgr knows, a clang >= 17
// subprocess for the others (see the comment at the top of hiprtc.cpp).
/// True when hiprtc loads or a clang is found; otherwise `why` says what is missing.
bool hip_available(std::string* why);
/// Every HIP compiler present: "hiprtc 9.0 (libamdhip64 5.2.21153) + clang 19.1.7 (3~deb12u1) at
/// /usr/bin/clang-19". Throws DeviceUnavailable when there is none.
std::string hip_version();
/// The compiler hip_compile() uses for `arch`: "hiprtc 9.0 (libamdhip64 5.2.21153)" or
/// "clang 19.1.7 (3~deb12u1) at /usr/bin/clang-19" — the compiler part of a cache key.
/// Throws what hip_compile() would when nothing can compile for `arch`:
/// DeviceUnavailable (no HIP compiler at all) or CompileError (hiprtc cannot and no clang).
std::string hip_compiler_for(const std::string& arch);
JitResult hip_compile(const JitRequest& req);

/// Line number of the first error in a compiler log — NVRTC/EDG style
/// "kernel.cu(12): error: ..." or clang style "kernel.cu:12:5: error: ...";
/// 0 when the log names no line.
int first_error_line(const std::string& log);

/// Throws the CompileError for a rejected compile of `req`: the message holds
/// `reason`, the log and the source lines around the first error.
[[noreturn]] void throw_compile_error(const char* compiler, const JitRequest& req,
                                      const std::string& reason, std::string log);

}  // namespace tilejit::runtime::detail

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

// hiprtc (hiprtc.cpp).
bool hiprtc_available(std::string* why);
std::string hiprtc_version();  // throws DeviceUnavailable
JitResult hiprtc_compile(const JitRequest& req);

/// Line number of the first error in a compiler log — NVRTC/EDG style
/// "kernel.cu(12): error: ..." or clang style "kernel.cu:12:5: error: ...";
/// 0 when the log names no line.
int first_error_line(const std::string& log);

/// Throws the CompileError for a rejected compile of `req`: the message holds
/// `reason`, the log and the source lines around the first error.
[[noreturn]] void throw_compile_error(const char* compiler, const JitRequest& req,
                                      const std::string& reason, std::string log);

}  // namespace tilejit::runtime::detail

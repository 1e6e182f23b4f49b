// tilejit/runtime/jit.hpp — run-time compilation of generated source with
// NVRTC (CUDA) or hiprtc/comgr (HIP). Both libraries are loaded with dlopen at
// first use, so a binary that never compiles a kernel never needs them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tilejit/core/error.hpp"

namespace tilejit::runtime {

enum class Compiler { nvrtc, hiprtc };

/// One compilation: self-contained source text, its file name (used in the
/// log), the target ("sm_80", "sm_90a", "gfx90a", "gfx942") and extra options.
struct JitRequest {
  Compiler compiler = Compiler::nvrtc;
  std::string source;
  std::string name = "kernel.cu";
  std::string arch;
  std::vector<std::string> options;
};

/// Loadable machine code: a cubin for NVRTC, an AMD code object (ELF) for hiprtc.
struct Binary {
  std::vector<std::uint8_t> bytes;
  std::string format;  // "cubin" or "hsaco"
};

struct JitResult {
  Binary binary;
  std::string log;        // compiler warnings, may be empty
  double compile_ms = 0;  // wall time of the compile call itself
};

/// True when the compiler library can be loaded; otherwise `why` says what is missing.
bool compiler_available(Compiler c, std::string* why = nullptr);

/// "nvrtc 13.0" / "hiprtc 5.2" — part of every cache key.
std::string compiler_version(Compiler c);

/// Compile `req`. Throws DeviceUnavailable when the library cannot be loaded,
/// CompileError (log + the generated lines around the first error) when the
/// source is rejected, InvalidArgument for an empty arch.
JitResult compile(const JitRequest& req);

/// Lines [line-before, line+after] of `source`, numbered, the bad line marked
/// with '>'. Used to build CompileError excerpts.
std::string source_excerpt(const std::string& source, int line, int before = 3, int after = 3);

}  // namespace tilejit::runtime

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
/// The target is given only in `arch` (an -arch/--gpu-architecture/--offload-arch
/// option is rejected). NVRTC gets --std=c++17 unless an option sets --std;
/// hiprtc gets -std=c++17 likewise. A virtual NVRTC target ("compute_90")
/// yields PTX instead of a cubin — for a JitRequest of generated text; kernels
/// are generated for real targets only (compile_for_arch takes sm_NN[a] or
/// gfxNNN). NVRTC also gets --generate-line-info and --diag-suppress=177 (the
/// prelude's unused helpers).
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
  std::string format;  // "cubin", "ptx" (compute_XX targets) or "hsaco"
};

struct JitResult {
  Binary binary;
  std::string log;        // compiler warnings, may be empty
  double compile_ms = 0;  // wall time of the compile call itself (nvrtcCompileProgram / hiprtcCompileProgram), ms
};

/// True when the compiler library can be loaded; otherwise `why` says what is missing.
bool compiler_available(Compiler c, std::string* why = nullptr);

/// "nvrtc 13.0" / "hiprtc 9.0 (libamdhip64 5.2.21153)" — part of every cache key.
/// Throws DeviceUnavailable when the library cannot be loaded.
std::string compiler_version(Compiler c);

/// Compile `req`. Throws DeviceUnavailable when the library cannot be loaded,
/// CompileError (log + the generated lines around the first error) when the
/// source is rejected, InvalidArgument for an empty arch or name or a target
/// option, DriverError when another compiler call fails.
/// hiprtc compiles run in a forked child process (a crash inside comgr becomes
/// a CompileError "hiprtc crashed: signal N ..."); TILEJIT_HIPRTC_ISOLATE=0
/// compiles in-process instead.
JitResult compile(const JitRequest& req);

/// Lines [line-before, line+after] of `source`, numbered, the bad line marked
/// with '>' ("> 12 | text"). "" when `line` is not a line of `source`.
/// Used to build CompileError excerpts.
std::string source_excerpt(const std::string& source, int line, int before = 3, int after = 3);

}  // namespace tilejit::runtime

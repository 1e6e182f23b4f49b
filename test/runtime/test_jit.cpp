// Tests of tilejit/runtime/jit.hpp: NVRTC and hiprtc front ends, error reports.
#include <doctest/doctest.h>

#include <climits>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "src/runtime/jit_internal.hpp"
#include "tilejit/runtime/cache.hpp"
#include "tilejit/runtime/jit.hpp"

namespace rt = tilejit::runtime;
using tilejit::CompileError;
using tilejit::InvalidArgument;

namespace {

const char* kVecAdd = R"(extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

// Line 3 is the bad one.
const char* kSyntaxError = R"(extern "C" __global__ void broken(float* x) {
  int i = threadIdx.x;
  float y = * ;
  x[i] = y;
}
)";

bool is_elf(const std::vector<std::uint8_t>& b) {
  return b.size() > 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

bool nvrtc_or_skip() {
  std::string why;
  if (rt::compiler_available(rt::Compiler::nvrtc, &why)) return true;
  MESSAGE("NVRTC not available, skipping: " << why);
  return false;
}

}  // namespace

TEST_CASE("jit: nvrtc compiles a kernel to an ELF cubin for sm_80 and sm_90a") {
  if (!nvrtc_or_skip()) return;
  for (std::string arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    rt::JitResult r = rt::compile({rt::Compiler::nvrtc, kVecAdd, "vec_add.cu", arch, {}});
    CHECK(r.binary.format == "cubin");
    CHECK(is_elf(r.binary.bytes));
    CHECK(r.compile_ms > 0);
  }
}

TEST_CASE("jit: nvrtc cubins carry line tables of the generated source (for PC sampling)") {
  if (!nvrtc_or_skip()) return;
  auto has_lines = [](const rt::JitResult& r) {
    const std::string bytes(r.binary.bytes.begin(), r.binary.bytes.end());
    return bytes.find(".nv_debug_line_sass") != std::string::npos;
  };
  CHECK(has_lines(rt::compile({rt::Compiler::nvrtc, kVecAdd, "vec_add.cu", "sm_90a", {}})));
  // An explicit -lineinfo is not passed twice; the request's own options win.
  CHECK(has_lines(rt::compile({rt::Compiler::nvrtc, kVecAdd, "vec_add.cu", "sm_90a", {"-lineinfo"}})));
}

TEST_CASE("jit: nvrtc compute_XX target gives PTX") {
  if (!nvrtc_or_skip()) return;
  rt::JitResult r = rt::compile({rt::Compiler::nvrtc, kVecAdd, "vec_add.cu", "compute_80", {}});
  CHECK(r.binary.format == "ptx");
  std::string text(r.binary.bytes.begin(), r.binary.bytes.end());
  CHECK(text.find(".entry vec_add") != std::string::npos);
}

TEST_CASE("jit: compiler_version names nvrtc and its version") {
  if (!nvrtc_or_skip()) return;
  std::string v = rt::compiler_version(rt::Compiler::nvrtc);
  CHECK(v.rfind("nvrtc ", 0) == 0);
  CHECK(v.size() > 6);
}

TEST_CASE("jit: nvrtc syntax error gives CompileError with log and source excerpt") {
  if (!nvrtc_or_skip()) return;
  try {
    rt::compile({rt::Compiler::nvrtc, kSyntaxError, "broken.cu", "sm_80", {}});
    FAIL("compile accepted broken source");
  } catch (const CompileError& e) {
    CHECK(e.compiler() == "nvrtc");
    CHECK_FALSE(e.log().empty());
    CHECK(e.log().find("broken.cu(3)") != std::string::npos);
    CHECK(e.excerpt().find(">") != std::string::npos);
    CHECK(e.excerpt().find("float y = * ;") != std::string::npos);
    const std::string what = e.what();
    CHECK(what.find(e.log()) != std::string::npos);
    CHECK(what.find(e.excerpt()) != std::string::npos);
  }
}

TEST_CASE("jit: empty arch, empty name and arch flags in options are InvalidArgument") {
  for (auto c : {rt::Compiler::nvrtc, rt::Compiler::hiprtc}) {
    CHECK_THROWS_AS(rt::compile({c, kVecAdd, "k.cu", "", {}}), InvalidArgument);
    CHECK_THROWS_AS(rt::compile({c, kVecAdd, "", "sm_80", {}}), InvalidArgument);
    CHECK_THROWS_AS(rt::compile({c, kVecAdd, "k.cu", "sm_80", {"-arch=sm_90"}}), InvalidArgument);
    CHECK_THROWS_AS(rt::compile({c, kVecAdd, "k.cu", "gfx90a", {"--offload-arch=gfx942"}}), InvalidArgument);
  }
}

TEST_CASE("jit: source_excerpt numbers lines and marks the bad one") {
  const std::string src = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
  CHECK(rt::source_excerpt(src, 5, 1, 1) == "  4 | d\n> 5 | e\n  6 | f\n");
  CHECK(rt::source_excerpt(src, 1, 3, 0) == "> 1 | a\n");
  CHECK(rt::source_excerpt(src, 10, 1, 3) == "   9 | i\n> 10 | j\n");
  CHECK(rt::source_excerpt(src, 0).empty());
  CHECK(rt::source_excerpt(src, 11).empty());
  CHECK(rt::source_excerpt("only line", 1) == "> 1 | only line\n");
  // Context past INT_MAX lines on either side: the whole file, no int overflow.
  CHECK(rt::source_excerpt("a\nb\nc\n", 2, INT_MAX, INT_MAX) == "  1 | a\n> 2 | b\n  3 | c\n");
}

TEST_CASE("jit: first error line is parsed from NVRTC and clang logs") {
  using rt::detail::first_error_line;
  CHECK(first_error_line("kernel.cu(12): error: identifier \"x\" is undefined\n") == 12);
  CHECK(first_error_line("kernel.cu(4): warning: unused\nkernel.cu(9): catastrophic error: oops\n") == 9);
  CHECK(first_error_line("/tmp/comgr-1/input/CompileSource:2:11: error: expected expression\n") == 2);
  CHECK(first_error_line("k.cu:7: fatal error: 'x.h' file not found\n") == 7);
  CHECK(first_error_line("nvrtc: error: invalid value for --gpu-architecture (-arch)\n") == 0);
  CHECK(first_error_line("") == 0);
}

// ---- HIP: hiprtc for the targets its comgr knows, clang >= 17 for the rest ----
//
// On this machine (Debian 12: ROCm 5.2 hiprtc/comgr, clang-19) gfx90a goes to
// hiprtc and gfx942 to clang. A TILEJIT_HIP_CLANG that names no executable is
// an error whenever clang is needed (never silently replaced by another clang);
// targets hiprtc knows do not need clang and keep compiling.

namespace {

// Self-contained HIP for both compilers: hiprtc defines __HIPCC_RTC__ and the
// builtins; clang runs with -nogpuinc, so the kernel defines what it uses.
const char* kHipVecAdd = R"(#ifndef __HIPCC_RTC__
#define __global__ __attribute__((global))
#endif
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) c[i] = a[i] + b[i];
}
)";

const char* kHipSyntaxError = R"(#define __global__ __attribute__((global))
extern "C" __global__ void broken(float* x) {
  float y = * ;
  x[0] = y;
}
)";

// e_machine (bytes 18-19, little-endian) is EM_AMDGPU = 224; the low byte of
// e_flags (byte 48 of an ELF64 header) is the EF_AMDGPU_MACH of the target.
bool is_amdgpu_elf(const std::vector<std::uint8_t>& b, unsigned mach) {
  return is_elf(b) && b.size() >= 64 && b[4] == 2 /* ELFCLASS64 */ && (b[18] | b[19] << 8) == 224 && b[48] == mach;
}
constexpr unsigned kMachGfx90a = 0x3f, kMachGfx942 = 0x4c;

bool hip_or_skip() {
  std::string why;
  if (rt::compiler_available(rt::Compiler::hiprtc, &why)) return true;
  MESSAGE("no HIP compiler, skipping: " << why);
  return false;
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

rt::JitResult compile_hip(const std::string& arch, const char* src = kHipVecAdd, const char* name = "vec_add.hip") {
  return rt::compile({rt::Compiler::hiprtc, src, name, arch, {}});
}

}  // namespace

TEST_CASE("jit: HIP gfx90a compiles with hiprtc, gfx942 with clang, both to AMDGPU ELF") {
  if (!hip_or_skip()) return;
  ScopedEnv no_clang_override("TILEJIT_HIP_CLANG", nullptr);
  ScopedEnv no_force("TILEJIT_HIP_COMPILER", nullptr);
  MESSAGE("HIP compilers: " << rt::compiler_version(rt::Compiler::hiprtc));
  const std::string via90a = rt::detail::hip_compiler_for("gfx90a");
  const std::string via942 = rt::detail::hip_compiler_for("gfx942");
  MESSAGE("gfx90a: " << via90a << "; gfx942: " << via942);
  CHECK(via90a.rfind("hiprtc ", 0) == 0);
  if (via942.rfind("hiprtc ", 0) == 0)
    MESSAGE("this hiprtc's comgr knows gfx942 (ROCm >= 5.7): no clang needed");
  else
    CHECK(via942.rfind("clang ", 0) == 0);  // Debian's ROCm 5.2 comgr does not know gfx942
  CHECK(rt::detail::hip_compiler_for("gfx942:xnack-") == via942);
  CHECK(rt::detail::hip_compiler_for("gfx90a:xnack+") == via90a);

  rt::JitResult a = compile_hip("gfx90a");
  CHECK(a.binary.format == "hsaco");
  CHECK(is_amdgpu_elf(a.binary.bytes, kMachGfx90a));
  rt::JitResult b = compile_hip("gfx942");
  CHECK(b.binary.format == "hsaco");
  CHECK(is_amdgpu_elf(b.binary.bytes, kMachGfx942));
  CHECK(b.compile_ms > 0);
  MESSAGE("gfx90a via hiprtc: " << a.compile_ms << " ms; gfx942 via clang: " << b.compile_ms << " ms");
}

TEST_CASE("jit: HIP syntax error for gfx942 (clang) gives CompileError with log and excerpt") {
  if (!hip_or_skip()) return;
  ScopedEnv no_clang_override("TILEJIT_HIP_CLANG", nullptr);
  ScopedEnv no_force("TILEJIT_HIP_COMPILER", nullptr);
  if (rt::detail::hip_compiler_for("gfx942").rfind("clang", 0) != 0) {
    MESSAGE("gfx942 compiles with hiprtc on this machine (its comgr knows it): the clang path is not used");
    return;
  }
  try {
    compile_hip("gfx942", kHipSyntaxError, "broken.hip");
    FAIL("clang accepted broken source");
  } catch (const CompileError& e) {
    CHECK(e.compiler() == "clang");
    CHECK_FALSE(e.log().empty());
    CHECK(e.log().find("broken.hip:3:") != std::string::npos);  // the log names our file, not a temp path
    CHECK(e.excerpt().find("> 3 |") != std::string::npos);
    CHECK(e.excerpt().find("float y = * ;") != std::string::npos);
    const std::string what = e.what();
    CHECK(what.find(e.log()) != std::string::npos);
    CHECK(what.find(e.excerpt()) != std::string::npos);
  }
}

TEST_CASE("jit: HIP syntax error for gfx90a (hiprtc) gives CompileError with the bad line") {
  if (!hip_or_skip()) return;
  ScopedEnv no_force("TILEJIT_HIP_COMPILER", nullptr);
  try {
    compile_hip("gfx90a", kHipSyntaxError, "broken.hip");
    FAIL("hiprtc accepted broken source");
  } catch (const CompileError& e) {
    CHECK(e.compiler() == (rt::detail::hip_compiler_for("gfx90a").rfind("hiprtc", 0) == 0 ? "hiprtc" : "clang"));
    CHECK_FALSE(e.log().empty());
    CHECK(e.excerpt().find("float y = * ;") != std::string::npos);
  }
}

TEST_CASE("jit: TILEJIT_HIP_CLANG names the clang; a missing one is a clear error, not a fallback") {
  if (!hip_or_skip()) return;
  ScopedEnv no_force("TILEJIT_HIP_COMPILER", nullptr);
  std::string default_clang;
  {
    ScopedEnv unset("TILEJIT_HIP_CLANG", nullptr);
    default_clang = rt::detail::hip_compiler_for("gfx942");
  }
  if (default_clang.rfind("clang", 0) != 0) {
    MESSAGE("gfx942 compiles with hiprtc on this machine (its comgr knows it): TILEJIT_HIP_CLANG is not consulted");
    return;
  }
  {
    ScopedEnv bogus("TILEJIT_HIP_CLANG", "/nonexistent/clang-99");
    CHECK_THROWS_WITH_AS(compile_hip("gfx942"),
                         doctest::Contains("TILEJIT_HIP_CLANG=/nonexistent/clang-99 is not an executable file"),
                         CompileError);
    CHECK_THROWS_WITH_AS(rt::detail::hip_compiler_for("gfx942"), doctest::Contains("fix or unset TILEJIT_HIP_CLANG"),
                         CompileError);
    // The key needs the compiler, so the kernel cache reports the same error.
    CHECK_THROWS_AS(rt::KernelCache::key({rt::Compiler::hiprtc, kHipVecAdd, "vec_add.hip", "gfx942", {}}),
                    CompileError);
    // Targets hiprtc knows do not need clang.
    if (rt::detail::hip_compiler_for("gfx90a").rfind("hiprtc", 0) == 0)
      CHECK(is_amdgpu_elf(compile_hip("gfx90a").binary.bytes, kMachGfx90a));
  }
  {
    ScopedEnv by_name("TILEJIT_HIP_CLANG", "no-such-clang-tilejit");
    CHECK_THROWS_WITH_AS(compile_hip("gfx942"), doctest::Contains("was not found in PATH"), CompileError);
  }
  if (default_clang.rfind("clang ", 0) != 0) return;  // hiprtc knows gfx942 here: nothing more to test
  // The clang is part of the cache key: the same clang through another path is another compiler.
  const std::string path = default_clang.substr(default_clang.rfind(" at ") + 4);
  const std::string real = std::filesystem::canonical(path).string();
  rt::JitRequest req{rt::Compiler::hiprtc, kHipVecAdd, "vec_add.hip", "gfx942", {}};
  std::string key_default = rt::KernelCache::key(req), key_real;
  {
    ScopedEnv explicit_path("TILEJIT_HIP_CLANG", real.c_str());
    CHECK(rt::detail::hip_compiler_for("gfx942").find(" at " + real) != std::string::npos);
    key_real = rt::KernelCache::key(req);
    CHECK(is_amdgpu_elf(compile_hip("gfx942").binary.bytes, kMachGfx942));
  }
  CHECK(key_default != key_real);
  CHECK(rt::KernelCache::key(req) == key_default);
}

TEST_CASE("jit: TILEJIT_HIP_COMPILER forces a compiler; a hiprtc crash is a silent CompileError") {
  if (!hip_or_skip()) return;
  std::string why;
  ScopedEnv no_clang_override("TILEJIT_HIP_CLANG", nullptr);
  {
    ScopedEnv bad("TILEJIT_HIP_COMPILER", "nvcc");
    CHECK_THROWS_AS(compile_hip("gfx90a"), InvalidArgument);
  }
  if (rt::detail::hip_compiler_for("gfx942").rfind("clang ", 0) != 0) return;  // no clang, or hiprtc knows gfx942
  {
    ScopedEnv force("TILEJIT_HIP_COMPILER", "clang");
    CHECK(rt::detail::hip_compiler_for("gfx90a").rfind("clang ", 0) == 0);
    CHECK(is_amdgpu_elf(compile_hip("gfx90a").binary.bytes, kMachGfx90a));
  }
  // hiprtc 5.2 aborts inside comgr for gfx942. The forked child dies, the
  // caller gets a CompileError, and nothing reaches our stderr.
  ScopedEnv force("TILEJIT_HIP_COMPILER", "hiprtc");
  std::fflush(stderr);
  char path[] = "/tmp/tilejit-test-stderr-XXXXXX";
  const int capture = ::mkstemp(path);
  REQUIRE(capture >= 0);
  const int saved = ::dup(2);
  ::dup2(capture, 2);
  std::string message, log;
  try {
    compile_hip("gfx942");
  } catch (const CompileError& e) {
    message = e.what();
    log = e.log();
  }
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  const auto written = ::lseek(capture, 0, SEEK_END);
  ::close(capture);
  ::unlink(path);
  CHECK(written == 0);
  if (message.empty()) {
    MESSAGE("this hiprtc compiled gfx942 without crashing");
  } else {
    CHECK(message.find("hiprtc") != std::string::npos);
    MESSAGE("forced hiprtc for gfx942: " << message);
  }
}

TEST_CASE("jit: TILEJIT_DUMP_DIR keeps each compiled source and its log, a rejected one too") {
  std::string why;
  if (!rt::compiler_available(rt::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto read = [](const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const auto dir = std::filesystem::temp_directory_path() / ("tj-dump-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("TILEJIT_DUMP_DIR", dir.c_str(), 1);
  rt::JitRequest req;
  req.source = kVecAdd;
  req.name = "vec_add.cu";
  req.arch = "sm_80";
  CHECK(!rt::compile(req).binary.bytes.empty());
  CHECK(read(dir / "vec_add-sm_80.cu") == kVecAdd);
  CHECK(std::filesystem::exists(dir / "vec_add-sm_80.log"));
  // A source the compiler rejects: written before the compile, its error in the log.
  req.source = kSyntaxError;
  req.name = "broken.cu";
  CHECK_THROWS_AS(rt::compile(req), CompileError);
  CHECK(read(dir / "broken-sm_80.cu") == kSyntaxError);
  CHECK(read(dir / "broken-sm_80.log").find("error") != std::string::npos);
  // HIP: the source is <kernel>-<arch>.hip (it used to be "vec_add.hip-gfx942.cu"), the log <kernel>-<arch>.log.
  if (hip_or_skip()) {
    CHECK(!compile_hip("gfx90a").binary.bytes.empty());
    CHECK(read(dir / "vec_add-gfx90a.hip") == kHipVecAdd);
    CHECK(std::filesystem::exists(dir / "vec_add-gfx90a.log"));
    CHECK_FALSE(std::filesystem::exists(dir / "vec_add.hip-gfx90a.cu"));
    CHECK_FALSE(std::filesystem::exists(dir / "vec_add-gfx90a.cu"));
  }
  // A directory that cannot be written: reported on stderr, the compile goes on.
  ::setenv("TILEJIT_DUMP_DIR", "/proc/tilejit-cannot-write-here", 1);
  req.source = kVecAdd;
  req.name = "vec_add.cu";
  CHECK(!rt::compile(req).binary.bytes.empty());
  ::unsetenv("TILEJIT_DUMP_DIR");
  std::filesystem::remove_all(dir);
}

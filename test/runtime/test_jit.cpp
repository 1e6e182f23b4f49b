// Tests of tilejit/runtime/jit.hpp: NVRTC and hiprtc front ends, error reports.
#include <doctest/doctest.h>

#include <string>

#include "src/runtime/jit_internal.hpp"
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

// hiprtc on Debian's ROCm 5.2 crashes inside comgr for targets it does not
// know (gfx942 among them). Compiles run in a child process, so that must
// surface as a CompileError; anything else (a crash, another exception) fails.
TEST_CASE("jit: hiprtc compiles for gfx90a and gfx942, or fails with a CompileError") {
  std::string why;
  if (!rt::compiler_available(rt::Compiler::hiprtc, &why)) {
    MESSAGE("hiprtc not available, skipping: " << why);
    return;
  }
  MESSAGE("hiprtc version: " << rt::compiler_version(rt::Compiler::hiprtc));
  for (std::string arch : {"gfx90a", "gfx942"}) {
    CAPTURE(arch);
    try {
      rt::JitResult r = rt::compile({rt::Compiler::hiprtc, kVecAdd, "vec_add.hip", arch, {}});
      CHECK(r.binary.format == "hsaco");
      CHECK(is_elf(r.binary.bytes));
    } catch (const CompileError& e) {
      CHECK(e.compiler() == "hiprtc");
      CHECK(std::string(e.what()).find("hiprtc") != std::string::npos);
      WARN_MESSAGE(false, "hiprtc cannot compile for " << arch << " on this machine: " << std::string(e.what()));
    }
  }
}

TEST_CASE("jit: hiprtc syntax error gives CompileError with the bad line") {
  std::string why;
  if (!rt::compiler_available(rt::Compiler::hiprtc, &why)) {
    MESSAGE("hiprtc not available, skipping: " << why);
    return;
  }
  try {
    rt::compile({rt::Compiler::hiprtc, kSyntaxError, "broken.hip", "gfx90a", {}});
    FAIL("hiprtc accepted broken source");
  } catch (const CompileError& e) {
    CHECK(e.compiler() == "hiprtc");
    if (e.log().empty()) {
      WARN_MESSAGE(false, "hiprtc gave no log on this machine: " << std::string(e.what()));
    } else {
      CHECK(e.excerpt().find("float y = * ;") != std::string::npos);
    }
  }
}

// src/runtime/nvrtc.cpp — the NVRTC front end, with libnvrtc dlopen'ed at first use.
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <type_traits>
#include <fmt/format.h>

#include "dl.hpp"
#include "jit_internal.hpp"

namespace tilejit::runtime::detail {
namespace {

// Entry points, typed from nvrtc.h (declared there, never linked).
struct Nvrtc {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  std::string error;  // why the library is unusable ("" when usable)
};

/// The NVRTC library file, found without loading it: the first of the
/// sonames present in LD_LIBRARY_PATH, $CUDA_HOME/lib64, /usr/local/cuda/lib64
/// or the system library directories. Loading it costs 5-100 ms, so the
/// kernel cache identifies the compiler by this file instead (a disk-cache
/// hit never loads NVRTC), and the loader opens this same file first.
const std::string& resolved_library() {
  static const std::string path = [] {
    std::vector<std::string> dirs;
    auto split = [&](const char* v) {
      if (!v) return;
      std::string s(v);
      for (std::size_t b = 0, e; b <= s.size(); b = e + 1) {
        e = s.find(':', b);
        if (e == std::string::npos) e = s.size();
        if (e > b) dirs.push_back(s.substr(b, e - b));
      }
    };
    split(std::getenv("LD_LIBRARY_PATH"));
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* v = std::getenv(env)) dirs.push_back(std::string(v) + "/lib64");
    for (const char* d : {"/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib/x86_64-linux-gnu"})
      dirs.emplace_back(d);
    std::error_code ec;
    for (const char* so : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
      for (const auto& d : dirs) {
        auto f = std::filesystem::path(d) / so;
        if (std::filesystem::is_regular_file(f, ec)) return f.string();
      }
    return std::string();
  }();
  return path;
}

std::vector<std::string> candidates() {
  std::vector<std::string> names;
  if (!resolved_library().empty()) names.push_back(resolved_library());
  for (const char* so : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.emplace_back(so);
  std::vector<std::string> found;  // /usr/local/cuda/lib64/libnvrtc.so*, newest name first
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/local/cuda/lib64", ec)) {
    auto f = e.path().filename().string();
    if (f.rfind("libnvrtc.so", 0) == 0) found.push_back(e.path().string());
  }
  std::sort(found.rbegin(), found.rend());
  names.insert(names.end(), found.begin(), found.end());
  return names;
}

const Nvrtc& nvrtc() {
  static const Nvrtc lib = [] {
    Nvrtc n;
    const Library& so = open_library(candidates());
    if (!so) {
      n.error = "NVRTC is not available: " + so.error;
      return n;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(so.symbol(name));
      if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    get(n.version, "nvrtcVersion");
    get(n.error_string, "nvrtcGetErrorString");
    get(n.create, "nvrtcCreateProgram");
    get(n.destroy, "nvrtcDestroyProgram");
    get(n.compile, "nvrtcCompileProgram");
    get(n.log_size, "nvrtcGetProgramLogSize");
    get(n.log, "nvrtcGetProgramLog");
    get(n.cubin_size, "nvrtcGetCUBINSize");
    get(n.cubin, "nvrtcGetCUBIN");
    get(n.ptx_size, "nvrtcGetPTXSize");
    get(n.ptx, "nvrtcGetPTX");
    if (!missing.empty()) n.error = "NVRTC library " + so.path + " lacks " + missing;
    return n;
  }();
  return lib;
}

const Nvrtc& require() {
  const Nvrtc& n = nvrtc();
  if (!n.error.empty()) throw DeviceUnavailable(n.error);
  return n;
}

// Destroys the program on every path out of nvrtc_compile.
struct Program {
  const Nvrtc& lib;
  nvrtcProgram prog = nullptr;
  ~Program() {
    if (prog) lib.destroy(&prog);
  }
};

void check(const Nvrtc& n, nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    throw DriverError(fmt::format("{} failed: {}", call, n.error_string(r)), call, r);
}

bool has_option(const std::vector<std::string>& opts, std::initializer_list<const char*> prefixes) {
  for (const auto& o : opts)
    for (const char* p : prefixes)
      if (o.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

bool nvrtc_available(std::string* why) {
  const Nvrtc& n = nvrtc();
  if (why) *why = n.error;
  return n.error.empty();
}

std::string nvrtc_version() {
  // Identify the library file (canonical path, size, modification time)
  // without loading it; fall back to asking a loaded NVRTC.
  static const std::string fingerprint = []() -> std::string {
    const std::string& f = resolved_library();
    if (f.empty()) return {};
    std::error_code ec;
    auto canon = std::filesystem::canonical(f, ec);
    if (ec) return {};
    auto size = std::filesystem::file_size(canon, ec);
    if (ec) return {};
    auto mtime = std::filesystem::last_write_time(canon, ec);
    if (ec) return {};
    return fmt::format("nvrtc file {} ({} bytes, mtime {})", canon.string(), size, mtime.time_since_epoch().count());
  }();
  if (!fingerprint.empty()) return fingerprint;
  const Nvrtc& n = require();
  int major = 0, minor = 0;
  check(n, n.version(&major, &minor), "nvrtcVersion");
  return fmt::format("nvrtc {}.{}", major, minor);
}

JitResult nvrtc_compile(const JitRequest& req) {
  const Nvrtc& n = require();
  // "sm_XX[a]" gives a cubin; a virtual "compute_XX[a]" target gives PTX only.
  const bool ptx_only = req.arch.rfind("compute_", 0) == 0;

  std::vector<std::string> opts = {"--gpu-architecture=" + req.arch};
  if (!has_option(req.options, {"--std", "-std"})) opts.push_back("--std=c++17");
  // Line tables of the generated source (no effect on the machine code): CUPTI's PC sampling maps
  // samples to lines of the kernel text through them (profiler, docs/profiler.md).
  if (!has_option(req.options, {"--generate-line-info", "-lineinfo", "--device-debug", "-G"})) opts.push_back("--generate-line-info");
  // The prelude defines every helper a kernel may use; "declared but never referenced" (#177) for the rest
  // would bury the warnings that matter in every log.
  opts.push_back("--diag-suppress=177");
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  Program p{n};
  check(n, n.create(&p.prog, req.source.c_str(), req.name.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult r = n.compile(p.prog, static_cast<int>(argv.size()), argv.data());
  auto t1 = std::chrono::steady_clock::now();

  JitResult out;
  out.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  std::size_t log_size = 0;
  check(n, n.log_size(p.prog, &log_size), "nvrtcGetProgramLogSize");
  if (log_size > 1) {
    std::string log(log_size, '\0');
    check(n, n.log(p.prog, log.data()), "nvrtcGetProgramLog");
    log.resize(log_size - 1);  // drop the terminating NUL
    out.log = std::move(log);
  }
  if (r != NVRTC_SUCCESS) throw_compile_error("nvrtc", req, n.error_string(r), std::move(out.log));

  std::size_t size = 0;
  if (ptx_only) {
    check(n, n.ptx_size(p.prog, &size), "nvrtcGetPTXSize");
    out.binary.bytes.resize(size);
    check(n, n.ptx(p.prog, reinterpret_cast<char*>(out.binary.bytes.data())), "nvrtcGetPTX");
    out.binary.format = "ptx";
  } else {
    check(n, n.cubin_size(p.prog, &size), "nvrtcGetCUBINSize");
    out.binary.bytes.resize(size);
    check(n, n.cubin(p.prog, reinterpret_cast<char*>(out.binary.bytes.data())), "nvrtcGetCUBIN");
    out.binary.format = "cubin";
  }
  if (out.binary.bytes.empty())
    throw_compile_error("nvrtc", req, "NVRTC produced no code for " + req.arch, std::move(out.log));
  return out;
}

}  // namespace tilejit::runtime::detail

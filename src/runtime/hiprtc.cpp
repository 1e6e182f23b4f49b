// src/runtime/hiprtc.cpp — the hiprtc front end (libamdhip64 dlopen'ed at first use).
//
// Crash isolation. Debian's ROCm 5.2 hiprtc/comgr aborts the whole process
// (a double free / invalid munmap inside libamd_comgr) when asked for targets
// it does not know, such as gfx940/gfx942, instead of returning an error. A
// compiler bug must not take the user's program down, so each compile runs in
// a forked child that sends the result (status, log, code object) back through
// a pipe; the parent turns a child killed by a signal into a CompileError.
// A fork costs a few ms next to a compile of ~100 ms. The parent never calls
// hiprtc's compiler itself, so the child starts from a clean hiprtc state.
// TILEJIT_HIPRTC_ISOLATE=0 compiles in-process instead (for debugging, or where
// fork is unwelcome, e.g. a process whose other threads hold locks hiprtc needs).
#include <fcntl.h>
#include <hip/hiprtc.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <fmt/format.h>

#include "dl.hpp"
#include "jit_internal.hpp"

namespace tilejit::runtime::detail {
namespace {

struct Hiprtc {
  decltype(&::hiprtcVersion) version = nullptr;
  decltype(&::hiprtcGetErrorString) error_string = nullptr;
  decltype(&::hiprtcCreateProgram) create = nullptr;
  decltype(&::hiprtcDestroyProgram) destroy = nullptr;
  decltype(&::hiprtcCompileProgram) compile = nullptr;
  decltype(&::hiprtcGetProgramLogSize) log_size = nullptr;
  decltype(&::hiprtcGetProgramLog) log = nullptr;
  decltype(&::hiprtcGetCodeSize) code_size = nullptr;
  decltype(&::hiprtcGetCode) code = nullptr;
  std::string lib_version;  // from the library file name, e.g. "5.2.21153"
  std::string error;        // why hiprtc is unusable ("" when usable)
};

const Hiprtc& hiprtc() {
  static const Hiprtc lib = [] {
    Hiprtc h;
    const Library& so = open_library({"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"});
    if (!so) {
      h.error = "hiprtc is not available: " + so.error;
      return h;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(so.symbol(name));
      if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    get(h.version, "hiprtcVersion");
    get(h.error_string, "hiprtcGetErrorString");
    get(h.create, "hiprtcCreateProgram");
    get(h.destroy, "hiprtcDestroyProgram");
    get(h.compile, "hiprtcCompileProgram");
    get(h.log_size, "hiprtcGetProgramLogSize");
    get(h.log, "hiprtcGetProgramLog");
    get(h.code_size, "hiprtcGetCodeSize");
    get(h.code, "hiprtcGetCode");
    if (!missing.empty()) h.error = "hiprtc library " + so.path + " lacks " + missing;
    // hiprtcVersion reports an API level (9.0 on ROCm 5.2), so the cache key
    // also gets the release from the file name: libamdhip64.so.5.2.21153.
    std::string real = so.real_path();
    if (auto at = real.rfind(".so."); at != std::string::npos) h.lib_version = real.substr(at + 4);
    return h;
  }();
  return lib;
}

const Hiprtc& require() {
  const Hiprtc& h = hiprtc();
  if (!h.error.empty()) throw DeviceUnavailable(h.error);
  return h;
}

// What one compile produced; travels through the pipe when isolated.
struct Outcome {
  std::int32_t result = HIPRTC_ERROR_INTERNAL_ERROR;
  double compile_ms = 0;
  std::string log;
  std::string code;
};

// Everything up to the code object; never destroys the program when `leak`
// (the forked child exits right after, and teardown is where comgr may crash).
Outcome compile_here(const Hiprtc& h, const JitRequest& req, const std::vector<const char*>& argv,
                     bool leak) {
  Outcome out;
  hiprtcProgram prog = nullptr;
  out.result = h.create(&prog, req.source.c_str(), req.name.c_str(), 0, nullptr, nullptr);
  if (out.result != HIPRTC_SUCCESS) return out;
  auto t0 = std::chrono::steady_clock::now();
  out.result = h.compile(prog, static_cast<int>(argv.size()), const_cast<const char**>(argv.data()));
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::size_t n = 0;
  if (h.log_size(prog, &n) == HIPRTC_SUCCESS && n > 0) {
    out.log.assign(n, '\0');
    if (h.log(prog, out.log.data()) != HIPRTC_SUCCESS) out.log.clear();
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (out.result == HIPRTC_SUCCESS) {
    n = 0;
    std::int32_t r = h.code_size(prog, &n);
    if (r == HIPRTC_SUCCESS) {
      out.code.assign(n, '\0');
      r = h.code(prog, out.code.data());
    }
    out.result = r;
  }
  if (!leak) h.destroy(&prog);
  return out;
}

bool write_all(int fd, const void* p, std::size_t n) {
  auto* b = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Message: i32 result, f64 ms, u64 log size, u64 code size, log, code.
[[noreturn]] void send(int fd, const Outcome& o) {
  std::uint64_t ls = o.log.size(), cs = o.code.size();
  bool ok = write_all(fd, &o.result, sizeof o.result) && write_all(fd, &o.compile_ms, sizeof o.compile_ms) &&
            write_all(fd, &ls, sizeof ls) && write_all(fd, &cs, sizeof cs) &&
            write_all(fd, o.log.data(), ls) && write_all(fd, o.code.data(), cs);
  ::_exit(ok ? 0 : 3);
}

bool parse(const std::string& msg, Outcome& o) {
  std::uint64_t ls = 0, cs = 0;
  const std::size_t head = sizeof o.result + sizeof o.compile_ms + 2 * sizeof ls;
  if (msg.size() < head) return false;
  const char* p = msg.data();
  std::memcpy(&o.result, p, sizeof o.result), p += sizeof o.result;
  std::memcpy(&o.compile_ms, p, sizeof o.compile_ms), p += sizeof o.compile_ms;
  std::memcpy(&ls, p, sizeof ls), p += sizeof ls;
  std::memcpy(&cs, p, sizeof cs), p += sizeof cs;
  if (msg.size() - head != ls + cs) return false;
  o.log.assign(p, ls);
  o.code.assign(p + ls, cs);
  return true;
}

constexpr int kTimeoutS = 600;  // a compile that runs this long is treated as hung

Outcome compile_in_child(const Hiprtc& h, const JitRequest& req, const std::vector<const char*>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("hiprtc: pipe failed: {}", std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(fds[0]), ::close(fds[1]);
    throw Error(fmt::format("hiprtc: fork failed: {}", std::strerror(e)));
  }
  if (pid == 0) {
    // Die of our own signals, not through handlers the parent installed.
    for (int s : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(s, SIG_DFL);
    ::close(fds[0]);
    send(fds[1], compile_here(h, req, argv, /*leak=*/true));  // exits
  }
  ::close(fds[1]);
  std::string msg;
  char buf[65536];
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutS);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pf{fds[0], POLLIN, 0};
    int pr = left.count() > 0 ? ::poll(&pf, 1, static_cast<int>(left.count())) : 0;
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  const std::string what = fmt::format("{} for {}", req.name, req.arch);
  if (timed_out) throw CompileError(fmt::format("hiprtc hung: no result after {} s compiling {}", kTimeoutS, what),
                                    "hiprtc", "", "");
  if (w == pid && WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    throw CompileError(fmt::format("hiprtc crashed: signal {} ({}) while compiling {} (in an isolated child "
                                   "process; the target may be unknown to this hiprtc/comgr)",
                                   sig, ::strsignal(sig), what),
                       "hiprtc", "", "");
  }
  Outcome o;
  if (!parse(msg, o) || (w == pid && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)))
    throw CompileError(fmt::format("hiprtc child process compiling {} ended without a result (wait status {})",
                                   what, status),
                       "hiprtc", "", "");
  return o;
}

bool isolate() {
  const char* e = std::getenv("TILEJIT_HIPRTC_ISOLATE");
  return !(e && std::string(e) == "0");
}

}  // namespace

bool hiprtc_available(std::string* why) {
  const Hiprtc& h = hiprtc();
  if (why) *why = h.error;
  return h.error.empty();
}

std::string hiprtc_version() {
  const Hiprtc& h = require();
  int major = 0, minor = 0;
  if (std::int32_t r = h.version(&major, &minor); r != HIPRTC_SUCCESS)
    throw DriverError(fmt::format("hiprtcVersion failed: {}", h.error_string(hiprtcResult(r))), "hiprtcVersion", r);
  std::string v = fmt::format("hiprtc {}.{}", major, minor);
  if (!h.lib_version.empty()) v += " (libamdhip64 " + h.lib_version + ")";
  return v;
}

JitResult hiprtc_compile(const JitRequest& req) {
  const Hiprtc& h = require();
  std::vector<std::string> opts = {"--offload-arch=" + req.arch};
  bool has_std = false;
  for (const auto& o : req.options) has_std |= o.rfind("-std", 0) == 0 || o.rfind("--std", 0) == 0;
  if (!has_std) opts.push_back("-std=c++17");
  opts.insert(opts.end(), req.options.begin(), req.options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  Outcome o = isolate() ? compile_in_child(h, req, argv) : compile_here(h, req, argv, /*leak=*/false);
  if (o.result != HIPRTC_SUCCESS)
    throw_compile_error("hiprtc", req, h.error_string(hiprtcResult(o.result)), std::move(o.log));
  if (o.code.empty()) throw_compile_error("hiprtc", req, "hiprtc produced no code object", std::move(o.log));
  JitResult out;
  out.binary.bytes.assign(o.code.begin(), o.code.end());
  out.binary.format = "hsaco";
  out.log = std::move(o.log);
  out.compile_ms = o.compile_ms;
  return out;
}

}  // namespace tilejit::runtime::detail

// src/runtime/hiprtc.cpp — the HIP front end: hiprtc (libamdhip64 dlopen'ed at
// first use), with a clang subprocess for targets hiprtc does not know.
//
// Choosing the compiler. hiprtc compiles through comgr, and comgr knows a
// fixed list of targets: Debian 12's ROCm 5.2 (LLVM 15) stops before
// gfx940/gfx941/gfx942. Before each compile comgr's own ISA list
// (amd_comgr_get_isa_name, libamd_comgr.so.2 loaded once per process) is asked
// whether it knows "amdgcn-amd-amdhsa--<arch>" (the base name; feature
// suffixes such as ":xnack-" are ignored). If it does, hiprtc compiles. If it
// does not, or comgr cannot be loaded, an LLVM clang >= 17 compiles instead,
// run as a subprocess (fork + execv of a resolved path, no shell):
//   clang -x hip --offload-arch=<arch> --cuda-device-only --no-gpu-bundle-output
//         -nogpuinc -nogpulib -O3 -std=c++17 <options> -o out.hsaco <name>
// in a private mkdtemp directory, which yields a raw AMDGPU code object (ELF;
// clang >= 19 writes code object v5 unless an option such as
// -mcode-object-version=4 says otherwise). The generated source needs no HIP
// headers: its prelude defines the builtins itself when __HIPCC_RTC__ is not
// defined. The clang is $TILEJIT_HIP_CLANG (a path, or a name looked up in
// PATH) or else the first of clang-19, clang-18, clang-17 in PATH. A
// TILEJIT_HIP_CLANG that names no executable is an error whenever clang is
// needed — it is never silently replaced by another clang. The choice and
// `clang --version` are cached per process (per value of TILEJIT_HIP_CLANG).
// TILEJIT_HIP_COMPILER=hiprtc or =clang forces one compiler for every target
// (debugging; unset or "auto" chooses as above).
//
// Crash isolation. Debian's ROCm 5.2 hiprtc/comgr aborts the whole process
// (a double free / invalid munmap inside libamd_comgr) when asked for targets
// it does not know, instead of returning an error. The check above keeps such
// targets away from hiprtc, but a compiler bug must still not take the user's
// program down, so each hiprtc compile runs in a forked child that sends the
// result (status, log, code object) back through a pipe; the parent turns a
// child killed by a signal into a CompileError. The child's stdout and stderr
// (glibc's "munmap_chunk(): invalid pointer" and the like) go to a memfd, not
// to the user's terminal, and are appended to the log. A fork costs a few ms
// next to a compile of ~100 ms. The parent never calls hiprtc's compiler
// itself, so the child starts from a clean hiprtc state.
// TILEJIT_HIPRTC_ISOLATE=0 compiles in-process instead (for debugging, or where
// fork is unwelcome, e.g. a process whose other threads hold locks hiprtc needs).
#include <amd_comgr.h>
#include <fcntl.h>
#include <hip/hiprtc.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <type_traits>
#include <fmt/format.h>

#include "atomic_file.hpp"
#include "dl.hpp"
#include "jit_internal.hpp"

namespace tilejit::runtime::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTimeoutS = 600;  // a compile that runs this long is treated as hung

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// "gfx942:xnack-" -> "gfx942".
std::string base_arch(const std::string& arch) { return arch.substr(0, arch.find(':')); }

// ---- hiprtc ----------------------------------------------------------------

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
  std::string identity;  // "hiprtc 9.0 (libamdhip64 5.2.21153)"
  std::string error;     // why hiprtc is unusable ("" when usable)
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
    if (!missing.empty()) {
      h.error = "hiprtc library " + so.path + " lacks " + missing;
      return h;
    }
    int major = 0, minor = 0;
    if (hiprtcResult r = h.version(&major, &minor); r != HIPRTC_SUCCESS) {
      h.error = fmt::format("hiprtc library {}: hiprtcVersion failed: {}", so.path, h.error_string(r));
      return h;
    }
    // hiprtcVersion reports an API level (9.0 on ROCm 5.2), so the identity
    // also gets the release from the file name: libamdhip64.so.5.2.21153.
    h.identity = fmt::format("hiprtc {}.{}", major, minor);
    std::string real = so.real_path();
    if (auto at = real.rfind(".so."); at != std::string::npos)
      h.identity += " (libamdhip64 " + real.substr(at + 4) + ")";
    return h;
  }();
  return lib;
}

// ---- comgr: which targets hiprtc knows -------------------------------------

struct Comgr {
  std::set<std::string> targets;  // base names: "gfx90a", ...
  std::string error;              // why the list is unknown ("" when known)
  bool knows(const std::string& arch) const { return targets.count(base_arch(arch)) > 0; }
};

const Comgr& comgr() {
  static const Comgr c = [] {
    Comgr c;
    const Library& so = open_library({"libamd_comgr.so.2", "libamd_comgr.so"});
    if (!so) {
      c.error = so.error;
      return c;
    }
    auto count = reinterpret_cast<decltype(&::amd_comgr_get_isa_count)>(so.symbol("amd_comgr_get_isa_count"));
    auto name = reinterpret_cast<decltype(&::amd_comgr_get_isa_name)>(so.symbol("amd_comgr_get_isa_name"));
    std::size_t n = 0;
    if (!count || !name) {
      c.error = so.path + " lacks amd_comgr_get_isa_count / amd_comgr_get_isa_name";
    } else if (count(&n) != AMD_COMGR_STATUS_SUCCESS) {
      c.error = "amd_comgr_get_isa_count failed";
    } else {
      const std::string prefix = "amdgcn-amd-amdhsa--";
      for (std::size_t i = 0; i < n; ++i) {
        const char* isa = nullptr;
        if (name(i, &isa) != AMD_COMGR_STATUS_SUCCESS || !isa) continue;
        std::string s = isa;
        if (s.rfind(prefix, 0) == 0) c.targets.insert(base_arch(s.substr(prefix.size())));
      }
    }
    return c;
  }();
  return c;
}

// ---- subprocesses and pipes ------------------------------------------------

// Appends everything read from `fd` to `out` until EOF; false when the
// deadline passed first.
bool read_until_eof(int fd, std::string& out, Clock::time_point deadline) {
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd pf{fd, POLLIN, 0};
    int pr = left.count() > 0 ? ::poll(&pf, 1, static_cast<int>(left.count())) : 0;
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

struct Process {
  int status = 0;          // wait status
  bool timed_out = false;  // killed after kTimeoutS
  std::string output;      // stdout and stderr, interleaved
};

// Runs `exe` (a path) with `args` in directory `cwd` (or here when empty),
// stdin from /dev/null, stdout and stderr captured. No shell is involved.
Process run_process(const std::string& exe, const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<char*> argv;  // built before fork: the child only makes async-signal-safe calls
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("running {}: pipe failed: {}", exe, std::strerror(errno)));
  const pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(fds[0]), ::close(fds[1]);
    throw Error(fmt::format("running {}: fork failed: {}", exe, std::strerror(e)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so a timeout kills clang's own children too
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execv(exe.c_str(), argv.data());
    static const char msg[] = "tilejit: execv failed\n";
    [[maybe_unused]] ssize_t w = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  Process p;
  p.timed_out = !read_until_eof(fds[0], p.output, Clock::now() + std::chrono::seconds(kTimeoutS));
  ::close(fds[0]);
  if (p.timed_out) ::kill(-pid, SIGKILL);
  p.status = wait_for(pid);
  return p;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  return fmt::format("wait status {}", status);
}

// ---- clang -----------------------------------------------------------------

struct Clang {
  std::string path;      // the executable; "" when none was found
  std::string identity;  // "clang 19.1.7 (3~deb12u1) at /usr/bin/clang-19"
  std::string error;     // why there is none: "no clang >= 17 was found ..."
  std::string fix;       // what the user can do about it
};

// "" when `path` is an executable regular file, else why not.
std::string not_executable(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (::access(path.c_str(), X_OK) != 0) return std::strerror(errno);
  return {};
}

// `name` looked up in PATH like execvp does; "" when absent.
std::string search_path(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t at = 0;
  for (;;) {
    std::size_t end = path.find(':', at);
    std::string dir = path.substr(at, end == std::string::npos ? std::string::npos : end - at);
    std::string full = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (not_executable(full).empty()) return full;
    if (end == std::string::npos) return {};
    at = end + 1;
  }
}

Clang locate_clang(const std::string& env) {
  Clang c;
  if (!env.empty()) {
    c.fix = "fix or unset TILEJIT_HIP_CLANG";
    if (env.find('/') != std::string::npos) {
      if (std::string why = not_executable(env); !why.empty()) {
        c.error = fmt::format("TILEJIT_HIP_CLANG={} is not an executable file ({})", env, why);
        return c;
      }
      c.path = env;
    } else if (c.path = search_path(env); c.path.empty()) {
      c.error = fmt::format("TILEJIT_HIP_CLANG={} was not found in PATH", env);
      return c;
    }
  } else {
    c.fix = "install clang-19 lld-19 or set TILEJIT_HIP_CLANG";
    for (const char* name : {"clang-19", "clang-18", "clang-17"})
      if (c.path = search_path(name); !c.path.empty()) break;
    if (c.path.empty()) {
      c.error = "no clang >= 17 was found (looked for clang-19, clang-18, clang-17 in PATH)";
      return c;
    }
  }
  Process p = run_process(c.path, {"--version"}, "");
  if (p.timed_out || !WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0) {
    c.error = fmt::format("{} --version failed ({}): {}", c.path, describe_status(p.status), p.output);
    c.path.clear();
    return c;
  }
  // "Debian clang version 19.1.7 (3~deb12u1)" -> "clang 19.1.7 (3~deb12u1) at /usr/bin/clang-19"
  static const std::regex version(R"(clang version ([^\r\n]+))");
  std::smatch m;
  std::string first = p.output.substr(0, p.output.find('\n'));
  c.identity = std::regex_search(first, m, version) ? fmt::format("clang {} at {}", m[1].str(), c.path)
                                                    : fmt::format("{} at {}", first, c.path);
  return c;
}

const Clang& find_clang() {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Clang>> found;  // by the value of TILEJIT_HIP_CLANG
  const char* env = std::getenv("TILEJIT_HIP_CLANG");
  std::lock_guard lock(mu);
  auto& slot = found[env ? env : ""];
  if (!slot) slot = std::make_unique<Clang>(locate_clang(env ? env : ""));
  return *slot;
}

// A private directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::error_code ec;
    auto base = std::filesystem::temp_directory_path(ec);
    std::string templ = (ec ? std::filesystem::path("/tmp") : base) / "tilejit-hip-XXXXXX";
    if (!::mkdtemp(templ.data()))
      throw Error(fmt::format("clang: cannot create a directory {}: {}", templ, std::strerror(errno)));
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// req.name when it is a plain file name (then the log names it), else "kernel.hip".
std::string source_file_name(const std::string& name) {
  bool plain = !name.empty() && name.size() < 200 && name[0] != '.' && name[0] != '-';
  for (char ch : name) plain &= ch != '/' && ch != '\0';
  return plain ? name : "kernel.hip";
}

bool has_std_option(const std::vector<std::string>& options) {
  for (const auto& o : options)
    if (o.rfind("-std", 0) == 0 || o.rfind("--std", 0) == 0) return true;
  return false;
}

JitResult clang_compile(const Clang& cc, const JitRequest& req) {
  TempDir dir;
  const std::string src = source_file_name(req.name), out = "out.hsaco";
  {
    std::ofstream f(dir.path() + "/" + src, std::ios::binary);
    f.write(req.source.data(), static_cast<std::streamsize>(req.source.size()));
    if (!f.flush()) throw Error(fmt::format("clang: cannot write {}/{}", dir.path(), src));
  }
  std::vector<std::string> args = {"-x", "hip", "--offload-arch=" + req.arch, "--cuda-device-only",
                                   "--no-gpu-bundle-output", "-nogpuinc", "-nogpulib",
                                   "-fno-color-diagnostics", "-O3"};
  if (!has_std_option(req.options)) args.push_back("-std=c++17");
  args.insert(args.end(), req.options.begin(), req.options.end());
  args.insert(args.end(), {"-o", out, src});

  const auto t0 = Clock::now();
  Process p = run_process(cc.path, args, dir.path());
  const double ms = ms_since(t0);
  const std::string what = fmt::format("{} for {}", req.name, req.arch);
  if (p.timed_out)
    throw CompileError(fmt::format("clang hung: no result after {} s compiling {} ({})", kTimeoutS, what, cc.path),
                       "clang", std::move(p.output), "");
  if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0)
    throw_compile_error("clang", req, fmt::format("{} failed ({})", cc.identity, describe_status(p.status)),
                        std::move(p.output));
  std::ifstream f(dir.path() + "/" + out, std::ios::binary);
  std::vector<std::uint8_t> code((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (code.empty()) throw_compile_error("clang", req, cc.identity + " produced no code object", std::move(p.output));
  JitResult r;
  r.binary.bytes = std::move(code);
  r.binary.format = "hsaco";
  r.log = std::move(p.output);
  r.compile_ms = ms;
  return r;
}

// ---- hiprtc compiles ---------------------------------------------------------

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
  auto t0 = Clock::now();
  out.result = h.compile(prog, static_cast<int>(argv.size()), const_cast<const char**>(argv.data()));
  out.compile_ms = ms_since(t0);
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

// What the child wrote to stdout/stderr (at most 64 KiB of it).
std::string read_back(int fd) {
  std::string out;
  if (fd < 0 || ::lseek(fd, 0, SEEK_SET) != 0) return out;
  char buf[4096];
  ssize_t n;
  while (out.size() < 65536 && ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\0')) out.pop_back();
  return out;
}

Outcome compile_in_child(const Hiprtc& h, const JitRequest& req, const std::vector<const char*>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("hiprtc: pipe failed: {}", std::strerror(errno)));
  // The child's stdout/stderr: kept off the user's terminal, read back afterwards.
  int err_fd = ::memfd_create("tilejit-hiprtc-output", MFD_CLOEXEC);
  if (err_fd < 0) err_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(fds[0]), ::close(fds[1]);
    if (err_fd >= 0) ::close(err_fd);
    throw Error(fmt::format("hiprtc: fork failed: {}", std::strerror(e)));
  }
  if (pid == 0) {
    // Die of our own signals, not through handlers the parent installed.
    for (int s : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(s, SIG_DFL);
    ::close(fds[0]);
    if (err_fd >= 0) ::dup2(err_fd, 1), ::dup2(err_fd, 2);
    send(fds[1], compile_here(h, req, argv, /*leak=*/true));  // exits
  }
  ::close(fds[1]);
  std::string msg;
  const bool timed_out = !read_until_eof(fds[0], msg, Clock::now() + std::chrono::seconds(kTimeoutS));
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  const int status = wait_for(pid);
  std::string output = read_back(err_fd);
  if (err_fd >= 0) ::close(err_fd);
  const std::string what = fmt::format("{} for {}", req.name, req.arch);
  const std::string said = output.empty() ? "" : "\nthe hiprtc child process wrote:\n" + output;
  if (timed_out)
    throw CompileError(fmt::format("hiprtc hung: no result after {} s compiling {}{}", kTimeoutS, what, said),
                       "hiprtc", output, "");
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    throw CompileError(fmt::format("hiprtc crashed: signal {} ({}) while compiling {} (in an isolated child "
                                   "process; the target may be unknown to this hiprtc/comgr){}",
                                   sig, ::strsignal(sig), what, said),
                       "hiprtc", output, "");
  }
  Outcome o;
  if (!parse(msg, o) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw CompileError(fmt::format("hiprtc child process compiling {} ended without a result ({}){}", what,
                                   describe_status(status), said),
                       "hiprtc", output, "");
  if (!output.empty()) o.log += (o.log.empty() || o.log.back() == '\n' ? "" : "\n") + output + "\n";
  return o;
}

bool isolate() {
  const char* e = std::getenv("TILEJIT_HIPRTC_ISOLATE");
  return !(e && std::string(e) == "0");
}

JitResult hiprtc_compile(const Hiprtc& h, const JitRequest& req) {
  std::vector<std::string> opts = {"--offload-arch=" + req.arch};
  if (!has_std_option(req.options)) opts.push_back("-std=c++17");
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

// ---- which compiler --------------------------------------------------------

struct Route {
  enum Kind { none, by_hiprtc, by_clang } kind = none;
  const Clang* clang = nullptr;  // kind == by_clang
  std::string why;               // kind == none: why nothing can compile the target
  bool nothing_at_all = false;   // kind == none: no HIP compiler for any target
};

Route route_for(const std::string& arch) {
  const Hiprtc& h = hiprtc();
  const char* force = std::getenv("TILEJIT_HIP_COMPILER");
  const std::string forced = force ? force : "";
  if (!forced.empty() && forced != "auto" && forced != "hiprtc" && forced != "clang")
    throw InvalidArgument(fmt::format("TILEJIT_HIP_COMPILER={}: expected hiprtc, clang or auto", forced));
  Route r;
  std::string no_hiprtc;  // why hiprtc will not compile `arch`
  if (!h.error.empty()) {
    no_hiprtc = h.error;
    r.nothing_at_all = true;
  } else if (forced == "hiprtc") {
    r.kind = Route::by_hiprtc;
    return r;
  } else if (forced == "clang") {
    no_hiprtc = "TILEJIT_HIP_COMPILER=clang";
  } else if (const Comgr& c = comgr(); !c.error.empty()) {
    no_hiprtc = fmt::format("{} cannot tell which targets it knows (comgr: {})", h.identity, c.error);
  } else if (c.knows(arch)) {
    r.kind = Route::by_hiprtc;
    return r;
  } else {
    no_hiprtc = fmt::format("{} (comgr) does not know {}", h.identity, base_arch(arch));
  }
  if (forced == "hiprtc") {  // asked for but not loadable
    r.why = no_hiprtc;
    return r;
  }
  const Clang& cc = find_clang();
  if (cc.error.empty()) {
    r.kind = Route::by_clang;
    r.clang = &cc;
    return r;
  }
  r.why = fmt::format("{} and {}; {}", no_hiprtc, cc.error, cc.fix);
  return r;
}

// The route, or the exception that says why there is none.
Route require_route(const std::string& arch) {
  Route r = route_for(arch);
  if (r.kind != Route::none) return r;
  if (r.nothing_at_all) throw DeviceUnavailable("no HIP compiler: " + r.why);
  throw CompileError(fmt::format("no HIP compiler for {}: {}", arch, r.why), "hiprtc", "", "");
}

}  // namespace

bool hip_available(std::string* why) {
  const Hiprtc& h = hiprtc();
  if (h.error.empty()) {
    if (why) why->clear();
    return true;
  }
  const Clang& cc = find_clang();
  if (why) *why = cc.error.empty() ? "" : fmt::format("{} and {}; {}", h.error, cc.error, cc.fix);
  return cc.error.empty();
}

std::string hip_version() {
  const Hiprtc& h = hiprtc();
  const Clang& cc = find_clang();
  if (!h.error.empty() && !cc.error.empty())
    throw DeviceUnavailable(fmt::format("no HIP compiler: {} and {}; {}", h.error, cc.error, cc.fix));
  if (cc.error.empty()) return h.error.empty() ? h.identity + " + " + cc.identity : cc.identity;
  return h.identity;
}

std::string hip_compiler_for(const std::string& arch) {
  Route r = require_route(arch);
  return r.kind == Route::by_hiprtc ? hiprtc().identity : r.clang->identity;
}

JitResult hip_compile(const JitRequest& req) {
  Route r = require_route(req.arch);
  return r.kind == Route::by_hiprtc ? hiprtc_compile(hiprtc(), req) : clang_compile(*r.clang, req);
}

}  // namespace tilejit::runtime::detail

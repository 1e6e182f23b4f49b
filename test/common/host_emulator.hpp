// Runs generated HIP text on the CPU, so CI (which has no GPU) executes what the code generator emits for lanes,
// warps, shuffles and shared memory, not only the interpreter's semantics of the IR. The kernel is compiled for the
// host by clang (clang++-19, as the HIP path installs) with a shim in place of the HIP builtins: every GPU thread of a
// program is a std::thread; __shared__ is a static (one program runs at a time); __syncthreads is a barrier of all
// the program's threads; __shfl_xor is an exchange through a slot per thread between two barriers, so a kernel
// emulated here must reach its barriers and shuffles uniformly (a barrier waiting 20 s aborts with a message
// instead of hanging). Kernels with MFMA, dynamic shared memory or other amdgcn builtins are refused (compile error
// or an explicit check). Generate for gfx1100 (wave32, the CUDA warp) or gfx942 (wave64).
#pragma once
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "tilejit/tilejit.hpp"

namespace testing {

namespace host_emulator_detail {

/// What the kernel's shared object defines itself: the thread-local indices, and hooks the loader points at the
/// barrier and the exchange (kept out of the object so it includes no C++ headers: clang compiles it in a fraction
/// of the time).
inline constexpr const char* kShim = R"(
#define __HIPCC_RTC__ 1
#include <math.h>
struct tj_host_dim3 { unsigned x, y, z; };
thread_local tj_host_dim3 threadIdx, blockIdx;
tj_host_dim3 gridDim;
extern "C" {
void (*tj_host_barrier)(void);
unsigned long long (*tj_host_exchange)(unsigned long long v, unsigned self, unsigned partner);
void tj_host_enter(unsigned tid, unsigned bx, unsigned by, unsigned bz, unsigned gx, unsigned gy, unsigned gz) {
  threadIdx.x = tid; threadIdx.y = threadIdx.z = 0;
  blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
  gridDim.x = gx; gridDim.y = gy; gridDim.z = gz;
}
}
#define __global__
#define __device__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(n)
static inline void __syncthreads() { tj_host_barrier(); }
static inline int __shfl_xor(int v, int m) { return (int)tj_host_exchange((unsigned)v, threadIdx.x, threadIdx.x ^ (unsigned)m); }
static inline float __shfl_xor(float v, int m) { return __builtin_bit_cast(float, __shfl_xor(__builtin_bit_cast(int, v), m)); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline float tj_host_expf(float x) { return expf(x); }
#define __expf tj_host_expf  // (glibc declares __expf but exports no such symbol)
// HIP's scoped atomics as the host's (every scope is the process).
#define __HIP_MEMORY_SCOPE_AGENT 4
#define __hip_atomic_fetch_add(p, v, order, scope) __atomic_fetch_add(p, v, order)
#define __hip_atomic_fetch_max(p, v, order, scope) __atomic_fetch_max(p, v, order)
#define __hip_atomic_fetch_min(p, v, order, scope) __atomic_fetch_min(p, v, order)
#define __hip_atomic_exchange(p, v, order, scope) __atomic_exchange_n(p, v, order)
#define __hip_atomic_compare_exchange_strong(p, e, v, o1, o2, scope) __atomic_compare_exchange_n(p, e, v, false, o1, o2)
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
)";

/// The barrier of one program's threads (a generation count under a mutex); a wait of 20 s aborts with a message.
struct Barrier {
  std::mutex m;
  std::condition_variable cv;
  int expected = 0, arrived = 0;
  long generation = 0;
  std::array<unsigned long long, 1024> slots{};
  void wait() {
    std::unique_lock<std::mutex> lk(m);
    const long g = generation;
    if (++arrived == expected) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    if (!cv.wait_for(lk, std::chrono::seconds(20), [&] { return generation != g; })) {
      std::fprintf(stderr, "host emulator: a thread waited 20 s at a barrier (%d of %d arrived): a barrier or shuffle in "
                           "code not every thread runs\n", arrived, expected);
      std::abort();
    }
  }
};
inline Barrier& barrier() {
  static Barrier b;
  return b;
}
extern "C" inline void barrier_hook() { barrier().wait(); }
extern "C" inline unsigned long long exchange_hook(unsigned long long v, unsigned self, unsigned partner) {
  Barrier& b = barrier();
  b.slots[self] = v;
  b.wait();
  const unsigned long long r = b.slots[partner];
  b.wait();
  return r;
}

inline std::string host_clang() {
  for (const char* c : {"clang++-19", "clang++-18", "clang++-17"}) {
    const std::string probe = std::string("command -v ") + c + " >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return c;
  }
  return {};
}

}  // namespace host_emulator_detail

/// A generated HIP kernel compiled for the host and loaded.
class HostKernel {
 public:
  /// nullopt (and a test MESSAGE) when no clang >= 17 is installed; throws std::runtime_error with clang's log when
  /// the text does not compile for the host.
  static std::optional<HostKernel> compile(const tilejit::codegen::Generated& g) {
    if (g.dynamic_shared_bytes > 0 || g.source.find("tj_dsmem") != std::string::npos)
      throw std::runtime_error("host emulator: dynamic shared memory is not emulated");
    const std::string cc = host_emulator_detail::host_clang();
    if (cc.empty()) {
      MESSAGE("no clang++-19/18/17: the host emulator is skipped");
      return std::nullopt;
    }
    namespace fs = std::filesystem;
    static int serial = 0;
    const fs::path dir = fs::temp_directory_path() / ("tilejit_host_emulator_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string stem = (dir / (g.kernel_name + "_" + std::to_string(serial++))).string();
    {
      std::ofstream f(stem + ".cpp");
      f << host_emulator_detail::kShim << g.source;
    }
    const std::string cmd = cc + " -std=c++20 -O0 -w -shared -fPIC -o " + stem + ".so " + stem + ".cpp > " + stem + ".log 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream log(stem + ".log");
      throw std::runtime_error("host emulator: " + cc + " failed on " + stem + ".cpp:\n" +
                               std::string(std::istreambuf_iterator<char>(log), {}).substr(0, 4000));
    }
    HostKernel k;
    k.handle_ = ::dlopen((stem + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!k.handle_) throw std::runtime_error(std::string("host emulator: dlopen: ") + ::dlerror());
    k.fn_ = ::dlsym(k.handle_, g.kernel_name.c_str());
    k.enter_ = reinterpret_cast<Enter>(::dlsym(k.handle_, "tj_host_enter"));
    auto** bar = reinterpret_cast<void (**)()>(::dlsym(k.handle_, "tj_host_barrier"));
    auto** xch = reinterpret_cast<unsigned long long (**)(unsigned long long, unsigned, unsigned)>(::dlsym(k.handle_, "tj_host_exchange"));
    if (!k.fn_ || !k.enter_ || !bar || !xch) throw std::runtime_error("host emulator: a symbol is missing from " + stem + ".so");
    *bar = &host_emulator_detail::barrier_hook;
    *xch = &host_emulator_detail::exchange_hook;
    k.threads_ = g.threads;
    std::error_code ec;  // loaded: the files go (kept above when clang fails, for the message's path)
    for (const char* ext : {".cpp", ".log", ".so"}) fs::remove(stem + ext, ec);
    fs::remove(dir, ec);  // (only once empty)
    return k;
  }

  /// Runs the kernel over `grid` programs, one after another, each with all its threads; args as the kernel takes them.
  template <class... A>
  void launch(std::array<unsigned, 3> grid, A... args) const {
    auto* fn = reinterpret_cast<void (*)(A...)>(fn_);
    for (unsigned bz = 0; bz < grid[2]; ++bz)
      for (unsigned by = 0; by < grid[1]; ++by)
        for (unsigned bx = 0; bx < grid[0]; ++bx) {
          host_emulator_detail::barrier().expected = threads_;
          host_emulator_detail::barrier().arrived = 0;
          std::vector<std::thread> ts;
          ts.reserve(static_cast<std::size_t>(threads_));
          for (int t = 0; t < threads_; ++t)
            ts.emplace_back([=, this] {
              enter_(static_cast<unsigned>(t), bx, by, bz, grid[0], grid[1], grid[2]);
              fn(args...);
            });
          for (auto& t : ts) t.join();
        }
  }

  HostKernel(HostKernel&& o) noexcept : handle_(o.handle_), fn_(o.fn_), enter_(o.enter_), threads_(o.threads_) {
    o.handle_ = nullptr;
  }
  HostKernel& operator=(HostKernel&&) = delete;
  HostKernel(const HostKernel&) = delete;
  HostKernel& operator=(const HostKernel&) = delete;
  ~HostKernel() {
    if (handle_) ::dlclose(handle_);
  }

 private:
  HostKernel() = default;
  void* handle_ = nullptr;
  void* fn_ = nullptr;
  using Enter = void (*)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned);
  Enter enter_ = nullptr;
  int threads_ = 0;
};

}  // namespace testing

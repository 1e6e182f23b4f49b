// tilejit/profiler/launch.hpp — the launch hook the tilejit runtime calls.
//
//   profiler::LaunchScope hook({.kernel = name, .grid = {gx, gy, gz},
//                               .flops = f, .flops_width = 16, .bytes = b});
//   cuLaunchKernel(...);   // a backend's correlate_launch() binds to the op
//
// In every active session started with Options::hook == "launch", the scope
// opens an op node named `kernel` under the thread's current scope and adds
// "flops<width>" and "bytes" to it; a kernel record correlated while it is open
// lands on that node (same name) rather than under it. With no such session the
// constructor is one relaxed atomic load.
#pragma once
#include <atomic>
#include <cstdint>
#include <string_view>

namespace tilejit::profiler {

struct Dim3 {
  long long x = 1, y = 1, z = 1;
};

/// What the runtime knows about one launch.
struct LaunchInfo {
  std::string_view kernel;   ///< the name the kernel record will carry
  Dim3 grid;
  std::int64_t flops = 0;    ///< 0: no flops metric
  int flops_width = 32;      ///< 8, 16, 32 or 64 (another width records no flops and warns once)
  std::int64_t bytes = 0;    ///< 0: no bytes metric
};

namespace detail {
/// Number of active sessions with the launch hook on.
extern std::atomic<int> g_hook_sessions;
void launch_enter(const LaunchInfo& info) noexcept;
void launch_exit() noexcept;
}  // namespace detail

/// True while a session with the launch hook is active (one relaxed atomic load): a launch computes what it
/// reports only then.
inline bool hook_active() noexcept { return detail::g_hook_sessions.load(std::memory_order_relaxed) > 0; }

/// RAII: open around the driver's launch call. Not nestable on one thread.
class LaunchScope {
 public:
  explicit LaunchScope(const LaunchInfo& info) noexcept
      : on_(detail::g_hook_sessions.load(std::memory_order_relaxed) > 0) {
    if (on_) detail::launch_enter(info);
  }
  ~LaunchScope() {
    if (on_) detail::launch_exit();
  }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;

 private:
  bool on_;
};

}  // namespace tilejit::profiler

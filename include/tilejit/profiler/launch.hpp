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
#include <span>
#include <string>
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

/// One event recorded inside a kernel (lang/events.hpp, CompileOptions::device_events). 32 bytes: the layout the
/// generated code writes (codegen's events prelude), so a buffer of them is copied from the device as it is.
struct DeviceEvent {
  std::uint64_t time_ns;  ///< the GPU's global timer (NVIDIA %globaltimer; AMD s_memrealtime x 10; interpreter: steady clock), ns
  std::uint64_t clock;    ///< the SM's cycle counter (clock64; s_memtime; interpreter: = time_ns)
  std::uint32_t program;  ///< the program (CTA): x + grid.x * (y + grid.y * z)
  std::uint32_t id;       ///< the pair's id (async_begin / async_end's id; a TMA stage's ring iteration)
  std::uint16_t site;     ///< index into DeviceEvents::sites
  std::uint8_t warp;      ///< the recording thread's warp in its program (the producer warp group's are >= num_warps)
  std::uint8_t kind;      ///< 0: begin (producer), 1: end (consumer)
  std::uint32_t sm;       ///< the SM that ran the program (%smid; 0 on AMD; the CPU worker in the interpreter)
};
static_assert(sizeof(DeviceEvent) == 32, "DeviceEvent is the generated code's tj_evrec");

/// What one instrumented launch recorded, reported from inside its LaunchScope (after the kernel completed).
struct DeviceEvents {
  std::span<const std::string> sites;  ///< site names; a record's `site` indexes them
  std::span<const DeviceEvent> events; ///< in the order they were appended (not sorted by time)
  std::uint64_t dropped = 0;           ///< events that did not fit the launch's buffer (recorded, then lost)
};

namespace detail {
/// Number of active sessions with the launch hook on.
extern std::atomic<int> g_hook_sessions;
void launch_enter(const LaunchInfo& info) noexcept;
void launch_exit() noexcept;
void device_events(const DeviceEvents& events) noexcept;
}  // namespace detail

/// True while a session with the launch hook is active (one relaxed atomic load): a launch computes what it
/// reports only then.
inline bool hook_active() noexcept { return detail::g_hook_sessions.load(std::memory_order_relaxed) > 0; }

/// Hand an instrumented launch's device events to every active session with the launch hook, inside the
/// launch's LaunchScope: chrome_trace sessions draw them (docs/profiler.md "Device events"), every session adds
/// per-site pair counts and latencies as child frames of the launch's op node.
inline void report_device_events(const DeviceEvents& events) noexcept {
  if (hook_active()) detail::device_events(events);
}

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

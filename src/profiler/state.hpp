// Internal state of the profiler: sessions, per-(thread, session) data and
// closed phases. See profiler.hpp for the model.
//
// Locks, always taken in this order: Session::state_mu (phase transitions,
// the closed-phase map, the writer queue) -> Session::locals_mu (the list of
// Locals) -> Local::lock (one thread's data; its owner takes it on every scope
// operation, uncontended except while a phase is being collected). The
// registry mutex is only taken by API calls and by a thread refreshing its
// cached list of active sessions.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <tilejit/profiler/profiler.hpp>

#include "pending.hpp"
#include "tree.hpp"

namespace tilejit::profiler::detail {

class SpinLock {
 public:
  void lock() noexcept {
    // Held for short sections (one scope operation, one kernel record): spin
    // a little before giving the core away; a yield costs a system call.
    while (flag_.exchange(true, std::memory_order_acquire))
      for (int spins = 0; flag_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpins) pause();
        else std::this_thread::yield();
      }
  }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpins = 256;
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::atomic<bool> flag_{false};
};

enum class Format : std::uint8_t { hatchet, hatchet_msgpack, chrome_trace };

// ---- trace events (chrome_trace sessions only) -------------------------------
enum class EventCat : std::uint8_t { scope, launch };
struct ScopeEvent {
  std::uint32_t node;
  EventCat cat;
  std::uint64_t start, end;
  std::vector<MetricSlot> metrics;
  Dim3 grid;  // launch ops only
};
struct KernelEvent {
  std::uint32_t node;  // the kernel's node
  std::uint64_t start, end, launch_ts, correlation;
  std::uint32_t device, stream;
  DeviceType device_type;
  bool has_launch;  // launch_ts is valid: draw a launch->kernel flow
  std::uint64_t graph_node = 0;  // replayed from a graph: one flow per kernel of the launch
};
struct AsyncEvent {
  std::uint64_t id;
  NameId name;
  std::uint64_t ts;
  std::uint32_t node;  // scope it happened in
  bool begin;
};

/// One instrumented launch's device events (lang/events.hpp), for the Chrome trace.
struct DeviceBatch {
  std::uint32_t node;            // the launch's op node
  std::uint64_t launch_ts;       // the op's start and the time the events were reported: the kernel record of
  std::uint64_t reported_ts;     // this launch (if one came) has the op's node and a launch_ts between them
  std::vector<NameId> sites;     // DeviceEvent::site -> name
  std::vector<DeviceEvent> events;
  std::uint64_t dropped;
};

/// One thread's records for one phase.
struct ThreadPhase {
  std::uint32_t thread = 0;
  Tree tree;
  std::vector<ScopeEvent> scopes;
  std::vector<KernelEvent> kernels;
  std::vector<AsyncEvent> asyncs;
  std::vector<DeviceBatch> device;
  std::size_t events() const { return scopes.size() + kernels.size() + asyncs.size() + device.size(); }
  bool empty() const { return tree.size() == 1 && tree.nodes[0].metrics.empty() && events() == 0; }
};

struct DeviceKey {
  DeviceType type;
  std::uint32_t id;
  auto operator<=>(const DeviceKey&) const = default;
};

/// A closed phase (or a snapshot of the open one).
///
/// Periodic flushing: advance_phase does not wait for the backend. Launches
/// made in the phase whose kernel records have not come yet keep pointing
/// into it (PendingLaunch::closed), and their records are added to it, under
/// `late_mu`, until the writer seals it (after one backend flush on the
/// writer's thread); launches still pending then move to the open phase.
struct PhaseData {
  std::size_t phase = 0;
  std::vector<ThreadPhase> parts;
  std::map<DeviceKey, DeviceInfo> devices;
  std::mutex late_mu;            // parts, while launches may still land here
  bool sealed = true;            // no record lands here any more (set false while launches are outstanding)
  std::size_t outstanding = 0;   // launches of this phase whose record has not come
  std::size_t nodes() const {
    std::size_t n = 0;
    for (auto& p : parts) n += p.tree.size();
    return n;
  }
  std::size_t events() const {
    std::size_t n = 0;
    for (auto& p : parts) n += p.events();
    return n;
  }
};

struct Session;

/// Where a graph node was captured (process-wide, see backend.hpp).
struct CaptureSite {
  std::vector<NameId> path;          // scope names, then the launch op's name if one was open
  std::vector<MetricSlot> metrics;   // the launch op's flops / bytes, added per replay
};

/// One thread's view of one session.
struct Local {
  SpinLock lock;
  Session* session = nullptr;
  ThreadPhase data;
  // path[i] is the node of the thread's stack frame i (for i < path.size()).
  std::vector<std::uint32_t> path;
  std::vector<std::uint64_t> path_start;                // trace: start of each frame
  std::vector<std::vector<MetricSlot>> path_metrics;    // trace: metrics of each frame
  // The open LaunchScope op. Written under `lock`, except that its owner
  // thread clears it without the lock at the end of a launch in a session
  // without trace events; collect() moves it with a compare-exchange.
  std::atomic<std::uint32_t> op_node{kNoNode};
  std::uint64_t op_start = 0;
  Dim3 op_grid;
  std::vector<MetricSlot> op_metrics;
  PendingLaunches pending;
  std::atomic<bool> closed{false};      // session finalized: the thread drops it
  std::atomic<bool> thread_gone{false}; // the thread exited
};

class SessionSink final : public Sink {
 public:
  explicit SessionSink(Session& s) : s_(s) {}
  void kernel(const KernelRecord& record) noexcept override;
  void kernels(std::span<const KernelRecord> records) noexcept override;
  void device(DeviceType type, std::uint32_t id, const DeviceInfo& info) noexcept override;
  void pc_samples(const PcSamples& samples) noexcept override;

 private:
  Session& s_;
};

struct Session {
  SessionId id = 0;
  std::string name;      // file name stem
  std::string file_key;  // the stem as an absolute, normalised path (start's check for running sessions' files)
  Options options;
  Format format = Format::hatchet;
  std::string ext;
  bool periodic = false, trace = false, hook = false, timing = false;
  std::uint64_t start_mono = 0, start_real = 0;

  std::atomic<bool> active{true};
  std::atomic<bool> finalizing{false};  // finalize() has begun (set once)
  std::atomic<bool> finalized{false};   // finalize() is done

  std::unique_ptr<Backend> backend;
  bool kernel_records = false;
  SessionSink sink{*this};

  std::mutex state_mu;
  std::condition_variable cv;
  std::size_t phase = 0;
  std::map<std::size_t, std::shared_ptr<PhaseData>> closed;  // closed phases in memory
  std::deque<std::size_t> queue;                              // phases to write
  std::vector<std::size_t> writing;                            // phases the worker is writing (one batch)
  // Counters for stats(): writer batches, and advance_phase waits for the writer.
  std::uint64_t writer_batches = 0, writer_flushes = 0;
  std::uint64_t advance_waits = 0, advance_wait_ns = 0;
  std::set<std::size_t> written, failed;
  std::vector<FlushError> errors;
  std::vector<std::string> files;  // written so far
  bool printed_error = false;
  bool stop_worker = false;
  std::thread worker;

  std::mutex locals_mu;
  std::vector<std::shared_ptr<Local>> locals;
  std::shared_ptr<Local> detached;  // kernels with unknown correlation ids
  std::map<DeviceKey, DeviceInfo> devices;

  std::atomic<std::size_t> graph_kernels_flat{0};
  std::atomic<bool> reported_flat{false};
  /// Periodic flushing: phases below this were closed before the writer's
  /// last backend flush began, so their records are in (writer thread only).
  std::size_t flushed_below = 0;

  std::mutex async_mu;
  std::unordered_map<std::uint64_t, NameId> async_names;
};

}  // namespace tilejit::profiler::detail

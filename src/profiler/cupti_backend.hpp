// src/profiler/cupti_backend.hpp — the "cupti" backend's testable pieces
// (private to the library and its tests). See cupti_backend.cpp and
// docs/profiler.md ("The CUPTI backend").
//
// Everything CUPTI-facing goes through `Api`, a table of CUPTI entry points:
// `real_api()` fills it from the dlopen'ed libcupti; the tests fill it with a
// test double, so the whole path (launch callback -> correlate_launch ->
// activity buffer -> Sink::kernel, the fault rules) runs without a GPU.
#pragma once
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <tilejit/profiler/backend.hpp>

namespace tilejit::profiler::cupti {

// ---- clock calibration (pure) ------------------------------------------------

/// One simultaneous reading of CUPTI's clock (cuptiGetTimestamp, the clock of
/// activity records) and of the profiler clock (now_ns()).
struct ClockSample {
  std::uint64_t cupti_ns = 0;
  std::uint64_t mono_ns = 0;
};

/// mono = anchor.mono_ns + (cupti - anchor.cupti_ns) * slope, clamped at 0.
struct ClockMap {
  ClockSample anchor;
  double slope = 1.0;
  std::uint64_t to_mono(std::uint64_t cupti_ns) const noexcept;
};

/// Below this baseline (ns between the first and latest sample) the rate is
/// not measured: slope 1, anchored at the latest sample.
inline constexpr std::uint64_t kMinBaselineNs = 100'000'000;  // 100 ms
/// A fitted rate further than this from 1 means a clock was stepped (e.g.
/// NTP on a realtime clock): slope 1, anchored at the latest sample.
inline constexpr double kMaxSkew = 1e-3;  // 1000 ppm

/// The linear map through `first` and `latest` (the line that keeps both
/// samples exact). Falls back to slope 1 through `latest` when the baseline is
/// shorter than kMinBaselineNs, runs backwards, or the fitted rate is off by
/// more than kMaxSkew.
ClockMap fit_clock(const ClockSample& first, const ClockSample& latest) noexcept;

/// Of several bracketed readings (mono before, cupti, mono after), the one
/// with the narrowest bracket, its mono time at the bracket's midpoint.
struct Bracket {
  std::uint64_t mono_before = 0;
  std::uint64_t cupti_ns = 0;
  std::uint64_t mono_after = 0;
};
ClockSample best_sample(const Bracket* readings, std::size_t n) noexcept;

// ---- activity record -> KernelRecord (pure) ------------------------------------

/// A CUPTI kernel activity record (CUpti_ActivityKernel4 .. 10 share the
/// fields read here, at the same offsets) as a KernelRecord on the profiler
/// clock. nullopt for a record CUPTI delivered incomplete (a forced flush of a
/// kernel still running: start or end 0, or end < start).
///
/// The second form fills `r` in place and returns false for an incomplete
/// record: a backend that reuses `r` keeps its name's storage (no allocation
/// per record once the longest name has been seen).
template <class K>
bool to_kernel_record(const K& k, const ClockMap& clock, KernelRecord& r) {
  if (k.start == 0 || k.end == 0 || k.end < k.start) return false;
  r.name.assign(k.name ? k.name : "<unnamed kernel>");
  r.correlation_id = k.correlationId;
  r.start_ns = clock.to_mono(k.start);
  r.end_ns = std::max(r.start_ns, clock.to_mono(k.end));
  r.device_id = k.deviceId;
  r.device_type = DeviceType::CUDA;
  r.stream_id = k.streamId;
  r.graph_node_id = 0;
  r.graph_id = 0;
  if constexpr (requires { k.graphNodeId; k.graphId; }) {
    r.graph_node_id = k.graphNodeId;
    r.graph_id = k.graphId;
  }
  return true;
}
template <class K>
std::optional<KernelRecord> to_kernel_record(const K& k, const ClockMap& clock) {
  KernelRecord r;
  if (!to_kernel_record(k, clock, r)) return std::nullopt;
  return r;
}

// ---- PC sampling (pure) ---------------------------------------------------------------

/// CUPTI's stall-reason name without its counter prefix:
/// "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard",
/// "..._not_issued" kept as a suffix ("long_scoreboard_not_issued").
std::string stall_short_name(std::string_view cupti_name);

/// Source line of a PC: (cubin CRC, function name, PC offset) -> "file:line",
/// or nullopt where the cubin has no line info (cuptiGetSassToSourceCorrelation).
using LineLookup = std::function<std::optional<std::string>(std::uint64_t crc, const char* function,
                                                            std::uint64_t pc_offset)>;

/// A CUPTI PC-sampling buffer grouped by kernel (function name, in order of
/// first appearance), then by source location (samples and stall counts of
/// PCs on the same line summed; a PC without line info is its own location,
/// "<function>+0x<offset>"). `stall_names` maps CUPTI's stall-reason index to
/// its short name; unknown indices are "reason_<index>". Zero-count stalls
/// are dropped.
std::vector<PcSamples> aggregate_pc_samples(const CUpti_PCSamplingData& data,
                                            const std::unordered_map<std::uint32_t, std::string>& stall_names,
                                            const LineLookup& line_of);

// ---- the CUPTI layer ---------------------------------------------------------------

/// The CUPTI entry points the backend uses, plus the three CUDA-driver facts it
/// needs. Required members must be non-null; subscribe_v2 is optional
/// (CUPTI >= 12.x names the subscriber already holding CUPTI).
struct Api {
  std::string library;  ///< what was loaded, for messages
  decltype(&::cuptiGetResultString) get_result_string = nullptr;
  decltype(&::cuptiSubscribe) subscribe = nullptr;
  decltype(&::cuptiSubscribe_v2) subscribe_v2 = nullptr;  // optional
  decltype(&::cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&::cuptiEnableCallback) enable_callback = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&::cuptiActivityEnable) activity_enable = nullptr;
  decltype(&::cuptiActivityDisable) activity_disable = nullptr;
  decltype(&::cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&::cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&::cuptiGetTimestamp) get_timestamp = nullptr;
  /// CUDA graphs (optional: without them graph kernels are attributed flat).
  decltype(&::cuptiGetGraphNodeId) get_graph_node_id = nullptr;
  decltype(&::cuptiGetGraphExecId) get_graph_exec_id = nullptr;
  /// PC sampling (optional: without them a session asking for PC sampling is
  /// told it is unavailable and keeps its kernel records).
  decltype(&::cuptiPCSamplingEnable) pc_enable = nullptr;
  decltype(&::cuptiPCSamplingDisable) pc_disable = nullptr;
  decltype(&::cuptiPCSamplingStart) pc_start = nullptr;
  decltype(&::cuptiPCSamplingStop) pc_stop = nullptr;
  decltype(&::cuptiPCSamplingGetData) pc_get_data = nullptr;
  decltype(&::cuptiPCSamplingSetConfigurationAttribute) pc_set_config = nullptr;
  decltype(&::cuptiPCSamplingGetNumStallReasons) pc_num_stall_reasons = nullptr;
  decltype(&::cuptiPCSamplingGetStallReasons) pc_stall_reasons = nullptr;
  /// Source lines of PCs (optional: without them locations are <function>+0x<offset>).
  decltype(&::cuptiGetCubinCrc) cubin_crc = nullptr;
  decltype(&::cuptiGetSassToSourceCorrelation) sass_to_source = nullptr;
  /// A usable CUDA driver with at least one device; else false and why.
  bool (*driver_ready)(std::string* why) = nullptr;
  /// sink.device(CUDA, ordinal, info) for every device.
  void (*describe_devices)(Sink& sink) = nullptr;
  /// Synchronize the calling thread's current context, if it has one.
  void (*synchronize_current)() = nullptr;
};

/// The entry points of the dlopen'ed libcupti (TILEJIT_CUPTI_LIBRARY if set,
/// then libcupti.so.13, .so.12, .so, then under /usr/local/cuda and $CUDA_HOME),
/// or nullptr with the reason in *why. Loads once per process.
const Api* real_api(std::string* why = nullptr);

/// "CUPTI_ERROR_... (text)" for a CUPTI result.
std::string describe(const Api& api, CUptiResult r);

struct Tuning {
  /// flush() waits this long at most for the records of launches made before
  /// it (CUPTI returns a buffer only once every record in it is complete).
  std::uint32_t flush_wait_ms = 1000;
};

/// A backend over `api` (nullptr: real_api(), loaded at start()).
std::unique_ptr<Backend> make_backend(const Api* api = nullptr, Tuning tuning = {});

// ---- PC sampling collection (cupti_pc_sampling.cpp) ------------------------------------

/// The PC-sampling entry points `api` lacks ("" when it has them all).
std::string missing_pc_sampling(const Api& api);

/// CUPTI PC sampling for every context the process launches in: enabled and
/// configured per context at its first launch, kernel-serialized (start at a
/// launch's API entry, stop and read at its exit, on the launching thread) or
/// continuous (read at flush). Module cubins are kept from the resource
/// callback for the source-line lookup. Thread-safe; one per process (the hub).
class PcSampler {
 public:
  PcSampler();
  ~PcSampler();
  PcSampler(const PcSampler&) = delete;
  PcSampler& operator=(const PcSampler&) = delete;

  /// Begin sampling with `options` (the first session asking wins).
  void configure(const Api& api, const PcSamplingOptions& options);
  /// Read what is left (to `deliver`), disable sampling in every context,
  /// drop buffers and cubins.
  void shutdown(const std::function<void(const PcSamples&)>& deliver);
  bool on() const;
  bool serialized() const;

  /// A launch's API entry on the launching thread: enable the context if new;
  /// kernel-serialized: start sampling. Returns a token for launch_exit (null: nothing to do).
  void* launch_enter(CUcontext ctx);
  /// Its API exit: stop, read, record_pc_samples() on this thread.
  void launch_exit(void* token);
  /// Continuous: read every context's samples.
  void drain_all(const std::function<void(const PcSamples&)>& deliver);

  void module_loaded(const CUpti_ModuleResourceData& module);
  void module_unloading(CUcontext ctx, const CUpti_ModuleResourceData& module,
                        const std::function<void(const PcSamples&)>& deliver);
  void context_destroying(CUcontext ctx, const std::function<void(const PcSamples&)>& deliver);

  struct Stats {
    std::size_t contexts = 0;         ///< contexts sampling now
    std::size_t failed_contexts = 0;  ///< contexts where enabling failed (reported)
    std::size_t cubins = 0;           ///< module cubins held for line lookup
    std::uint64_t samples = 0;        ///< samples read so far (this process)
    std::uint64_t dropped = 0;        ///< samples the hardware dropped
    std::uint64_t ranges = 0;         ///< kernel-serialized launches sampled
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Process-wide counters, for tests and diagnostics.
struct Counters {
  std::uint64_t records = 0;     ///< kernel records delivered
  std::uint64_t incomplete = 0;  ///< kernel records dropped as incomplete
  std::uint64_t dropped = 0;     ///< records CUPTI dropped (buffers full)
  int sessions = 0;              ///< backends attached now
  std::uint64_t graph_launches = 0;   ///< cuGraphLaunch / cudaGraphLaunch calls seen
  std::uint64_t captured_launches = 0;  ///< launches captured into a graph (no kernel then)
  std::size_t graph_execs = 0;   ///< executable graphs whose kernel count is known now
  PcSampler::Stats pc_sampling;  ///< PC sampling
};
Counters counters();

}  // namespace tilejit::profiler::cupti

namespace tilejit::profiler::detail {
/// What the profiler's registry installs under "cupti" (session.cpp).
BackendFactory cupti_backend_factory();
}  // namespace tilejit::profiler::detail

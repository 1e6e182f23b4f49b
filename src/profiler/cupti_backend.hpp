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
#include <mutex>
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
  /// Activity attributes (optional: without them CUPTI zeroes every activity
  /// buffer itself, on the thread that needs the buffer; see BufferPool).
  decltype(&::cuptiActivitySetAttribute) activity_set_attribute = nullptr;
  decltype(&::cuptiActivityGetAttribute) activity_get_attribute = nullptr;
  /// The loaded CUPTI's API version (optional; PC sampling checks it).
  decltype(&::cuptiGetVersion) get_version = nullptr;
  /// CUPTI knobs of the "cupti:" mode tokens (optional: a knob asked for without
  /// its entry point is reported as refused).
  decltype(&::cuptiActivityFlushPeriod) activity_flush_period = nullptr;
  decltype(&::cuptiActivityEnableHWTrace) activity_enable_hw_trace = nullptr;
  /// Detach CUPTI from the process when the last session stops (optional):
  /// unsubscribing alone leaves CUPTI's hooks in the driver, and every later
  /// launch pays for them.
  decltype(&::cuptiFinalize) finalize = nullptr;
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
  /// Activity buffers mapped and touched when the first session starts (the
  /// steady state of a job with one launching thread: one buffer being filled
  /// by CUPTI, one being delivered). See BufferPool.
  std::size_t resident_buffers = 2;
};

/// What the first session's BackendConfig::mode asks of CUPTI. The default is
/// what attribution needs, at the settings measured cheapest; the "cupti:" mode
/// tokens change one part at a time, to measure what each costs (profiler_bench
/// BM_CuptiParts and BM_CuptiKnobs; docs/profiler.md, "Overhead"):
///
///   activity=on|off        CONCURRENT_KERNEL (or KERNEL) records
///   callbacks=on|off       launch API_ENTER/EXIT callbacks (correlation)
///   kind=concurrent|serial kernel records from CONCURRENT_KERNEL (kernel code instrumented
///                          for timestamps) or from KERNEL (no instrumentation; kernels serialized)
///   per_thread=on|off      CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (tilejit: on)
///   pinned=on|off          CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED: CUPTI's
///                          timestamp buffers in pinned host memory instead of device memory
///   device_buffer=<size>   CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE (bytes; K, M, G suffixes)
///   pool_limit=<n>         CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT
///   preallocate=<n>        CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE
///   flush_period=<ms>      cuptiActivityFlushPeriod (0: CUPTI's own heuristics)
///   hw_trace=on|off        cuptiActivityEnableHWTrace (kernel timestamps from hardware events;
///                          CUPTI documents it for Blackwell only)
///
/// Unset knobs leave CUPTI's defaults. A knob CUPTI refuses is reported (once,
/// on stderr, and in Counters::knobs) and the session goes on without it.
struct HubMode {
  bool kernel_activity = true;   ///< CONCURRENT_KERNEL (or KERNEL) records
  bool launch_callbacks = true;  ///< launch API_ENTER/EXIT callbacks (correlation)
  bool serial_kernels = false;   ///< kind=serial: kernel records from CUPTI_ACTIVITY_KIND_KERNEL
  bool per_thread_buffers = true;
  std::optional<bool> host_pinned;
  std::optional<std::size_t> device_buffer_bytes;
  std::optional<std::size_t> device_buffer_pool_limit;
  std::optional<std::size_t> device_buffer_preallocate;
  std::optional<std::uint32_t> flush_period_ms;
  bool hw_trace = false;
  bool operator==(const HubMode&) const = default;
};
/// Parses "cupti:activity=off,callbacks=off" etc. (other text: the defaults).
/// Throws InvalidArgument for an unknown "cupti:" token or a bad value.
HubMode parse_hub_mode(std::string_view mode);

// ---- activity buffers ------------------------------------------------------------------

/// The activity buffers handed to CUPTI, recycled (never malloc/free per buffer).
///
/// Why a pool, and why the buffers are zero-filled by us: CUPTI wants a zeroed
/// buffer. Unless told (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER = 1) that
/// the client zeroes them, it memsets every buffer it receives, in full, on the
/// thread that needs it — the launching thread: 64 MiB, several ms, at the first
/// launch after every flush that handed a buffer back, and every page of the
/// buffer resident from then on. With the attribute set, the pool keeps the
/// invariant instead, cheaply: a returned buffer has only its first `used`
/// bytes (the records CUPTI wrote) cleared.
///
/// Resident memory is flat from the start: `reserve(size, n)` maps n buffers
/// and faults their pages in (MAP_POPULATE) when the session starts, so no
/// page is first touched later, on the launching thread or anywhere else. A
/// buffer CUPTI asks for while all those are out is mapped then; when it comes
/// back its pages are returned to the system (MADV_DONTNEED, which also zeroes
/// them) and it is kept, unbacked, for the next time (at most kMaxPooled
/// buffers are kept; more are unmapped).
class BufferPool {
 public:
  static constexpr std::size_t kMaxPooled = 16;
  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// Buffers of `size` bytes from now on (buffers of another size are unmapped
  /// as they come back), at least `resident` of them mapped and touched now.
  /// False if mapping failed (take() still maps on demand).
  bool reserve(std::size_t size, std::size_t resident);
  /// A zero-filled buffer of size() bytes (that size in *size): a pooled one
  /// (resident first), else a new mapping. nullptr (and 0) if none can be mapped.
  std::uint8_t* take(std::size_t* size = nullptr);
  /// `buffer` (of `size` bytes) is back; CUPTI wrote within its first `used` bytes.
  void give(std::uint8_t* buffer, std::size_t size, std::size_t used);
  /// Unmap every pooled buffer; buffers still out are unmapped when they come back.
  void clear();
  std::size_t size() const;

  struct Stats {
    std::size_t size = 0;       ///< bytes per buffer
    std::size_t mapped = 0;     ///< buffers mapped now (pooled + out)
    std::size_t resident = 0;   ///< of them, kept touched (the reserve()d ones)
    std::size_t out = 0;        ///< handed to CUPTI now
    std::uint64_t takes = 0;    ///< buffers handed out so far
    std::uint64_t extra = 0;    ///< of them, mapped on demand (none pooled)
  };
  Stats stats() const;

 private:
  struct Entry {
    std::size_t bytes = 0;   // mapped length
    bool resident = false;
    bool out = false;
  };
  void unmap(std::uint8_t* p, std::size_t bytes);
  mutable std::mutex mu_;
  std::size_t size_ = 0;
  std::unordered_map<std::uint8_t*, Entry> known_;  // every buffer mapped by this pool and not unmapped
  std::vector<std::uint8_t*> free_;                 // pooled, zero-filled; resident ones at the back
  std::uint64_t takes_ = 0, extra_ = 0;
};

/// Zero what CUPTI wrote into a returned buffer: its first `used` bytes, and
/// any non-zero bytes that follow (a record cut by a forced flush), page by
/// page until a page that is all zero.
void zero_used(std::uint8_t* buffer, std::size_t size, std::size_t used) noexcept;

/// A backend over `api` (nullptr: real_api(), loaded at start()).
std::unique_ptr<Backend> make_backend(const Api* api = nullptr, Tuning tuning = {});

// ---- PC sampling collection (cupti_pc_sampling.cpp) ------------------------------------

/// The PC-sampling entry points `api` lacks ("" when it has them all).
std::string missing_pc_sampling(const Api& api);

/// CUPTI PC sampling for every context the process launches in, enabled and
/// configured per context at its first launch.
///
/// kernel_serialized (PcSamplingOptions): each launch is one range, on the
/// launching thread — API_ENTER: synchronize the context (earlier work is not
/// sampled into this range), cuptiPCSamplingStart; API_EXIT: synchronize (the
/// kernel has run), cuptiPCSamplingStop, read. CUPTI runs in its CONTINUOUS
/// collection mode with start/stop control, as NVIDIA's pc_sampling_start_stop
/// sample and Proton do; tilejit serializes the sampled launches itself.
/// continuous: no ranges; read at every flush.
///
/// Reading follows NVIDIA's samples: the buffer given to CUPTI at configuration
/// (SAMPLING_DATA_BUFFER) is CUPTI's from then on — it collects a range's PC
/// records there — and cuptiPCSamplingGetData is called with a second buffer
/// until CUPTI has no PC left (neither buffer reports any remaining). PC
/// records left in the configuration buffer after that (and those CUPTI puts
/// there at cuptiPCSamplingDisable) are read from it directly.
///
/// Module cubins are kept from the resource callback for the source-line
/// lookup. Thread-safe; one per process (the hub).
class PcSampler {
 public:
  PcSampler();
  ~PcSampler();
  PcSampler(const PcSampler&) = delete;
  PcSampler& operator=(const PcSampler&) = delete;

  /// Begin sampling with `options` (the first session asking wins).
  void configure(const Api& api, const PcSamplingOptions& options);
  /// Read what is left (to `deliver`), disable sampling in every context,
  /// drop buffers and cubins. Reports, once, ranges that gave no sample.
  void shutdown(const std::function<void(const PcSamples&)>& deliver);
  bool on() const;
  bool serialized() const;

  /// A launch's API entry on the launching thread: enable the context if new;
  /// kernel-serialized: start a range. Returns a token for launch_exit (null: nothing to do).
  void* launch_enter(CUcontext ctx);
  /// Its API exit: stop, read, record_pc_samples() on this thread.
  void launch_exit(void* token);
  /// Continuous: read every context's samples.
  void drain_all(const std::function<void(const PcSamples&)>& deliver);

  void module_loaded(const CUpti_ModuleResourceData& module);
  void module_unloading(CUcontext ctx, const CUpti_ModuleResourceData& module,
                        const std::function<void(const PcSamples&)>& deliver);
  void context_destroying(CUcontext ctx, const std::function<void(const PcSamples&)>& deliver);

  /// Counts of the current (or last) sampling run: reset when sampling is configured.
  struct Stats {
    std::size_t contexts = 0;         ///< contexts sampling now
    std::size_t failed_contexts = 0;  ///< contexts where enabling failed (reported)
    std::size_t cubins = 0;           ///< module cubins held for line lookup
    std::uint64_t samples = 0;        ///< samples in the PC records read so far
    std::uint64_t dropped = 0;        ///< samples the hardware dropped
    std::uint64_t ranges = 0;         ///< kernel-serialized launches sampled
    std::uint64_t empty_ranges = 0;   ///< of them, ranges that gave no PC record
    std::uint64_t reads = 0;          ///< cuptiPCSamplingGetData calls
    std::uint64_t read_errors = 0;    ///< of them, failed (reported once)
    std::uint64_t cupti_samples = 0;  ///< CUpti_PCSamplingData::totalSamples summed (what CUPTI counted)
    std::uint64_t nonuser_samples = 0;  ///< of them, in kernels CUPTI gives no PC records for
    std::uint64_t config_buffer_pcs = 0;  ///< PC records read from the configuration buffer directly
    std::string problem;              ///< the first failure, why sampling gave nothing ("" none)
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
  BufferPool::Stats buffers;     ///< activity buffers
  /// CUPTI was told that tilejit zeroes activity buffers (ZEROED_OUT_ACTIVITY_BUFFER = 1),
  /// so it does not memset each one on the launching thread.
  bool client_zeroes_buffers = false;
  /// The activity kind kernel records come from now: CONCURRENT_KERNEL, or KERNEL
  /// while PC sampling runs (as Proton does); 0 when no session is attached.
  int kernel_kind = 0;
  std::uint64_t flush_calls = 0;   ///< cuptiActivityFlushAll calls made by flush()
  std::uint64_t finalizes = 0;     ///< cuptiFinalize calls (CUPTI detached when the last session stopped)
  bool per_thread_buffers = false; ///< CUPTI keeps an activity buffer per thread (set at setup)
  std::uint64_t buffers_completed = 0;  ///< buffers CUPTI handed back
  /// The "cupti:" knobs of the current (or last) setup, as applied: e.g.
  /// "kind=serial pinned=on hw_trace=on (refused: CUPTI_ERROR_NOT_SUPPORTED (..))"; "" none.
  std::string knobs;
};

/// counters() as one line of text (also tilejit::profiler::cupti_report()).
std::string report(const Counters& c);
Counters counters();

}  // namespace tilejit::profiler::cupti

namespace tilejit::profiler::detail {
/// What the profiler's registry installs under "cupti" (session.cpp).
BackendFactory cupti_backend_factory();
}  // namespace tilejit::profiler::detail

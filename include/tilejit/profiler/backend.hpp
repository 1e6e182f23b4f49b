// tilejit/profiler/backend.hpp — how a GPU activity source (CUPTI, rocprofiler,
// a test double, an out-of-tree plugin) feeds kernel records into a session.
//
// The contract, in the order things happen:
//   1. `start()` creates one Backend per session (through the factory
//      registered under Options::backend) and calls Backend::start(sink, cfg).
//   2. On the launching thread, at launch time, the backend (e.g. from its
//      CUPTI runtime-API callback) calls `correlate_launch(correlation_id)`.
//      That binds the id to the thread's innermost open scope — or to the
//      LaunchScope op if the tilejit runtime's launch hook is open — in every
//      active session that records kernels.
//   3. Later, from any thread, the backend delivers a KernelRecord with the
//      same correlation id to `sink.kernel()`. The kernel lands under the bound
//      scope as a child node named after the kernel (or on the scope itself
//      when the scope has the kernel's name, as launch-hook ops do), adding
//      "time (ns)" and "count" and setting "device_id" / "device_type". An id
//      never bound (or 0) lands directly under ROOT.
//   4. `flush()` is called at advance_phase, at get() of the open phase and at
//      finalize: deliver every completed record before it returns, so that a
//      phase's kernels are in that phase. Records arriving later land in the
//      phase that is open when they arrive, under the same scope path.
//   5. `stop()` at finalize; the sink must not be used after it returns.
//
// Times are on the profiler clock, `now_ns()` (CLOCK_MONOTONIC, ns). A backend
// whose timestamps use another clock converts them (CUPTI can be given this
// clock through cuptiActivityRegisterTimestampCallback).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilejit::profiler {

enum class DeviceType : std::uint8_t { CUDA, HIP };
constexpr std::string_view name(DeviceType t) { return t == DeviceType::CUDA ? "CUDA" : "HIP"; }

/// One finished kernel, as a GPU activity API reports it.
struct KernelRecord {
  std::string name;                    ///< kernel name as the driver knows it
  std::uint64_t correlation_id = 0;    ///< the id given to correlate_launch(); 0 = unknown
  std::uint64_t start_ns = 0;          ///< profiler clock (now_ns()), start <= end
  std::uint64_t end_ns = 0;
  std::uint32_t device_id = 0;
  DeviceType device_type = DeviceType::CUDA;
  std::uint32_t stream_id = 0;         ///< one Chrome-trace lane per (device, stream)
  /// Kernels replayed from a CUDA graph: the id of the (executable) graph node
  /// that ran it, as given to graph_node_cloned() / graph_node_captured(); 0
  /// for an ordinary launch. See "CUDA graphs" below.
  std::uint64_t graph_node_id = 0;
  std::uint32_t graph_id = 0;          ///< informational (CUPTI's graphId)
};

/// What the hatchet writers report per device in the second array element.
struct DeviceInfo {
  std::uint64_t clock_rate = 0;         ///< kHz
  std::uint64_t memory_clock_rate = 0;  ///< kHz
  std::uint64_t bus_width = 0;          ///< bits
  std::uint64_t num_sms = 0;
  std::string arch;                     ///< e.g. "90a", "gfx942"
};

struct PcSamples;  // below, with record_pc_samples

/// Where a backend delivers. Thread-safe: any thread, any time between
/// Backend::start() and the return of Backend::stop().
class Sink {
 public:
  virtual ~Sink() = default;
  /// Attribute one kernel (see the contract above). Never throws.
  virtual void kernel(const KernelRecord& record) noexcept = 0;
  /// Describe a device for the hatchet device_info element.
  virtual void device(DeviceType type, std::uint32_t id, const DeviceInfo& info) noexcept = 0;
  /// PC samples not tied to a launch (continuous collection): added under
  /// ROOT/<kernel>/<location> in the open phase.
  virtual void pc_samples(const PcSamples& samples) noexcept { (void)samples; }
  /// Several kernels, in order: the same as kernel() on each of them, but the
  /// session takes its locks once per batch rather than once per record. A
  /// backend that drains a buffer of records should hand them over this way.
  virtual void kernels(std::span<const KernelRecord> records) noexcept {
    for (const KernelRecord& r : records) kernel(r);
  }
};

/// PC sampling (NVIDIA: CUPTI's PC Sampling API; see docs/profiler.md).
/// A backend that cannot sample says why once and keeps its kernel records.
struct PcSamplingOptions {
  bool enabled = false;
  enum class Collection : std::uint8_t {
    /// Each launch is sampled alone: at the launch's API entry the context is
    /// synchronized and a range starts; at its exit the context is synchronized
    /// again (the kernel has run), the range stops and its samples are read.
    /// Per-line samples land under the scope that launched the kernel,
    /// <scope>/<kernel>/<line>. Sampled launches are therefore synchronous.
    kernel_serialized,
    /// Kernels run concurrently and are sampled all the time; samples are read
    /// at each flush and land under ROOT/<kernel>/<line> (CUPTI gives no
    /// correlation id in this mode, so no launch scope is known).
    continuous,
  } collection = Collection::kernel_serialized;
  /// Sampling period as log2 of cycles, 5..31 (2^period cycles); 0: CUPTI's default.
  std::uint32_t period = 0;
  /// Stall reasons to collect, by short name ("long_scoreboard", "barrier", ...);
  /// empty: all. A name the GPU does not know is reported and skipped.
  std::vector<std::string> stall_reasons;
  std::size_t scratch_buffer_size = 0;   ///< bytes; 0: CUPTI's default (1 MiB)
  std::size_t hardware_buffer_size = 0;  ///< bytes; 0: CUPTI's default (512 MiB)
  std::size_t max_pcs = 4096;            ///< PCs read per cuptiPCSamplingGetData call (> 0)
};

/// Settings a session hands to its backend.
struct BackendConfig {
  std::string session_name;
  std::string mode;                        ///< Options::mode text that is not the session's own
  std::size_t buffer_size = 64ull << 20;   ///< activity buffer bytes (Options::buffer_size)
  PcSamplingOptions pc_sampling;           ///< Options::pc_sampling
};

/// A source of kernel records for one session.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Begin collecting into `sink`. Throw DeviceUnavailable (or any
  /// tilejit::Error) when the facility is missing or taken — e.g. CUPTI already
  /// subscribed by another profiler: the session prints the message once and
  /// keeps recording scopes and metrics without kernel records.
  virtual void start(Sink& sink, const BackendConfig& config) = 0;
  /// Deliver every completed record to the sink before returning.
  virtual void flush() = 0;
  /// Stop collecting; called once, after a final flush().
  virtual void stop() = 0;
  /// The session was (de)activated; a backend may pause its collection.
  virtual void activate() {}
  virtual void deactivate() {}
};

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

/// Make `factory` available as Options::backend == `name` (replacing any
/// earlier registration of that name). "" and "none" are reserved: no backend.
void register_backend(std::string name, BackendFactory factory);

/// Names registered so far, sorted.
std::vector<std::string> registered_backends();

/// Bind `correlation_id` to the calling thread's current scope in every active
/// session with a working backend. Cheap: one thread-local map insert per such
/// session. Call it on the launching thread, at launch time.
void correlate_launch(std::uint64_t correlation_id) noexcept;

// ---- CUDA graphs ---------------------------------------------------------------
//
// A kernel replayed from a graph is attributed to where the graph was
// launched *and* to where its node was captured:
//
//   <replay-site scopes> / <captured_at> / <capture-site scopes> / <kernel>
//
// The backend reports, on the thread where they happen:
//   * graph_node_captured(node): a node was created (stream capture or an
//     explicit cudaGraphAdd*Node) — the thread's scope stack, and the open
//     LaunchScope op with its flops and bytes, become the node's capture site;
//   * graph_node_cloned(original, clone): instantiation (or cudaGraphClone)
//     copied a node — kernel records carry the clone's id;
//   * graph_node_destroyed(node): forget it (so the table stays bounded);
//   * correlate_graph_launch(id, kernels): a graph launch, instead of
//     correlate_launch — one correlation id for `kernels` kernel records
//     (0: unknown; the binding is then dropped after two phase boundaries);
//   * cancel_launch(id): a launch correlated with correlate_launch() ran no
//     kernel (it was captured into a graph): drop its binding.
// Each replay adds, at the kernel's node, the capture site's op metrics (the
// flops and bytes the launch hook recorded at capture) with the kernel's time
// and count, and "graph_replays" (int64, exclusive) at <captured_at>. A kernel
// whose node has no capture site (its graph was captured before profiling
// began) lands directly under the replay site ("flat"), is counted in
// SessionStats::graph_kernels_flat and reported once per session.

/// The frame name under which replayed graph kernels hang their capture site.
inline constexpr std::string_view kCapturedAtFrame = "<captured_at>";

void graph_node_captured(std::uint64_t node_id) noexcept;
void graph_node_cloned(std::uint64_t original_id, std::uint64_t clone_id) noexcept;
void graph_node_destroyed(std::uint64_t node_id) noexcept;
/// Forget every capture site (a backend that stops seeing graph events, e.g.
/// at CUPTI teardown, calls this: nodes it can no longer see destroyed).
void clear_graph_nodes() noexcept;
/// Capture sites held now (process-wide).
std::size_t graph_nodes() noexcept;
void correlate_graph_launch(std::uint64_t correlation_id, std::uint32_t kernels) noexcept;
void cancel_launch(std::uint64_t correlation_id) noexcept;

// ---- PC sampling ----------------------------------------------------------------

/// Samples of one source location of a kernel.
struct PcSampleLine {
  /// "file:line" where the kernel has line info, else "<function>+0x<pc offset>".
  std::string location;
  std::uint64_t samples = 0;
  /// Stall reason (short name, e.g. "long_scoreboard") -> samples.
  std::vector<std::pair<std::string, std::uint64_t>> stalls;
};
/// The samples of one kernel launch.
struct PcSamples {
  std::string kernel;  ///< the name its kernel record carries
  std::vector<PcSampleLine> lines;
};

/// On the launching thread, once the kernel's samples are in (e.g. at the
/// launch API's exit with CUPTI's kernel-serialized PC sampling): add them as
/// child frames of the kernel's node under the thread's current scope (or open
/// LaunchScope op), `<scope>/<kernel>/<location>`, with "pc_samples" and
/// "stall:<reason>" (int64, inclusive), in every active session with a
/// working backend.
void record_pc_samples(const PcSamples& samples) noexcept;

/// The profiler clock: CLOCK_MONOTONIC in nanoseconds.
std::uint64_t now_ns() noexcept;

/// The built-in CUPTI backend's process-wide counters as one line of text:
/// kernel records delivered / incomplete / dropped, activity buffers (mapped,
/// resident, handed out, mapped on demand), whether CUPTI zeroes buffers
/// itself, the kernel activity kind, and PC sampling (ranges, samples, reads,
/// the first problem). For logs and benchmarks; the format may change.
std::string cupti_report();

}  // namespace tilejit::profiler

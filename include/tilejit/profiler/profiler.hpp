// tilejit/profiler/profiler.hpp — sessions, scopes, metrics, phases, async events.
//
// The model (Proton's, in C++):
//   * A session collects a calling-context tree: ROOT, then one node per
//     distinct path of scope names. Every CPU thread keeps its own scope stack
//     (thread-local, no locks shared between threads on the hot path); all
//     threads feed one tree per session, merged by path when it is written.
//   * Metrics (metric.hpp) attach to the innermost open scope, or to ROOT.
//     Kernel records from a backend (backend.hpp) attach to the scope that
//     launched them; the runtime's launch hook (launch.hpp) adds op nodes with
//     flops and bytes.
//   * Time is cut into phases. `advance_phase` closes the open phase. With
//     mode "periodic_flushing" a worker thread writes each closed phase to
//     `<name>.part_<N>.<ext>` and drops it from memory, so a job that runs for
//     days keeps a bounded profile in memory; otherwise closed phases stay in
//     memory for get()/clear(). `finalize` writes what is left: the open phase
//     to `<name>.<ext>` when it is phase 0 and nothing went to part files
//     before, else to `<name>.part_<N>.<ext>`.
//   * Formats: "hatchet" (JSON `[tree, device_info]`), "hatchet_msgpack" (the
//     same structure as MessagePack), "chrome_trace" (scope, kernel and async
//     events on per-thread and per-stream lanes, with flows). The extension is
//     the format name. docs/profiler.md shows each with an example.
//
// Files are written to a temporary name, fsync'ed and renamed, so a final name
// never holds a partial file. A phase that cannot be written (unwritable path,
// disk full) stays in memory, the error is printed once and kept (flush_errors:
// one entry per phase, its latest failure). Each advance_phase retries the oldest
// such phase (the others once it is written); finalize tries them all, then drops
// what still fails.
//
// Errors: bad options, unknown session ids and unknown backends throw
// InvalidArgument; a metric used with two types throws MetricTypeError. Scope
// calls never throw and record nothing when no session is active.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tilejit/profiler/backend.hpp>
#include <tilejit/profiler/launch.hpp>
#include <tilejit/profiler/metric.hpp>

namespace tilejit::profiler {

using SessionId = std::size_t;

struct Options {
  /// "" or "none": scopes and metrics only; otherwise a name given to
  /// register_backend() (e.g. "cupti"). Unknown names throw InvalidArgument.
  std::string backend;
  /// "": closed phases stay in memory. "periodic_flushing" (optionally
  /// "periodic_flushing:format=<format>", which overrides `format`): closed
  /// phases are written in the background and dropped. Other text is passed
  /// to the backend (BackendConfig::mode), which parses it; without a backend
  /// ("" or "none") it is an InvalidArgument naming the mode.
  std::string mode;
  /// "hatchet", "hatchet_msgpack" or "chrome_trace"; also the file extension.
  std::string format = "hatchet";
  /// "": no launch hook. "launch": LaunchScope records ops (launch.hpp).
  std::string hook;
  /// Activity-buffer size handed to the backend, in bytes (> 0).
  std::size_t buffer_size = 64ull << 20;
  /// fsync files before renaming them into place.
  bool fsync = true;
  /// Periodic flushing: advance_phase waits while this many closed phases are
  /// queued for writing (>= 1), which bounds memory if the disk is slow. The
  /// writer takes every queued phase at once (one backend flush, one round of
  /// fsyncs), so at most this many wait plus one batch being written. The
  /// default leaves room for the GPU's record latency (a few ms) when phases
  /// are short: 100 tiny launches are about 0.5 ms.
  std::size_t max_pending_phases = 64;
  /// PC sampling through the backend (the "cupti" backend: CUPTI's PC
  /// Sampling API). Needs a backend; per-line child frames of kernel nodes
  /// with "pc_samples" and "stall:<reason>" (docs/profiler.md).
  PcSamplingOptions pc_sampling;
};

/// Start a session writing to files named from `name` (a path without
/// extension; a trailing ".<format>" is dropped). The session starts active,
/// in phase 0. Throws InvalidArgument for an empty name, a name whose last
/// path component is empty, "." or ".." (e.g. "out/"), a name a running (not
/// yet finalizing) session already has (its files would be overwritten), or
/// bad options. If the backend cannot start, prints why once and records
/// without kernel records. Metric values that are NaN or infinite are written
/// as null in hatchet JSON (JSON has no NaN) and as floats in msgpack.
SessionId start(std::string_view name, const Options& options = {});

/// Resume / pause recording into a session (a paused session records nothing:
/// no nodes, metrics, kernels or events). Finalized sessions: a warning, no-op.
void activate(SessionId session);
void deactivate(SessionId session);

/// A phase that could not be written.
struct FlushError {
  std::size_t phase = 0;
  std::string path;      ///< the final file name that was not written
  std::string message;   ///< what failed, with strerror text
  int error_code = 0;    ///< errno
};

/// A scope still open on some thread when its session was finalized.
struct OpenScope {
  std::uint32_t thread = 0;  ///< the thread's lane number (Chrome trace "CPU Thread N")
  std::string path;          ///< "outer/inner", innermost last
};

struct FinalizeReport {
  bool already_finalized = false;      ///< a second finalize: nothing was done
  std::vector<std::string> files;      ///< every file the session wrote, in order
  std::vector<OpenScope> open_scopes;  ///< closed at finalize time (also printed)
  std::vector<FlushError> errors;      ///< every write that failed in this session
};

/// Flush the backend, close scopes still open (ending them now, reported),
/// write every phase still in memory and stop the session. A second call
/// prints a warning and returns {.already_finalized = true}. Phases that fail
/// to write are reported in `errors` and then dropped.
FinalizeReport finalize(SessionId session);

/// Finalize every session not yet finalized.
void finalize_all();

// ---- scopes ------------------------------------------------------------

/// An interned scope name: build once (e.g. `static const Name n("step");`)
/// so that entering the scope does no hashing.
class Name {
 public:
  explicit Name(std::string_view text);
  std::uint32_t id() const noexcept { return id_; }

 private:
  std::uint32_t id_;
};

/// RAII scope on the calling thread. Nests; scopes with the same path on any
/// thread share one node. Metrics given here are added on entry. Destroyed on
/// another thread than the one that made it (a coroutine resumed elsewhere), it
/// ends nothing there (said once on stderr): its own thread's scopes unwind past
/// it, or finalize reports it open.
class Scope {
 public:
  explicit Scope(std::string_view name) noexcept;
  explicit Scope(Name name) noexcept;
  /// Throws MetricTypeError (the scope is then not entered).
  Scope(std::string_view name, std::initializer_list<Metric> metrics);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  std::uint32_t depth_;  // stack depth before entry; exit unwinds to it
  std::uint32_t thread_;  // the entering thread's lane (never reused): only that thread unwinds it
};

/// Open a scope on the calling thread (Proton's enter_scope).
void enter_scope(std::string_view name) noexcept;
void enter_scope(Name name) noexcept;
/// Close the innermost open scope of the calling thread; no-op if none.
void exit_scope() noexcept;

/// Add to the calling thread's innermost open scope (ROOT if none) in every
/// active session. Throws MetricTypeError on a type or kind mismatch and
/// InvalidArgument for reserved names ("device_id", "device_type").
void add_metric(const Metric& metric);
void add_metrics(std::initializer_list<Metric> metrics);

// ---- async producer / consumer events ----------------------------------

/// An opaque producer/consumer pair (cp.async, TMA, a queue hand-off ...).
/// `async_begin` marks the producer on the calling thread; `async_end` with
/// the same id marks the consumer, on any thread, in any scope. Chrome traces
/// draw a flow from one to the other (ids are matched across phase files,
/// too). Hatchet formats ignore them. Ids may be reused after their end.
void async_begin(std::uint64_t id, std::string_view name) noexcept;
void async_end(std::uint64_t id) noexcept;

// ---- phases ------------------------------------------------------------

/// Close the open phase and open the next; returns the phase this call opened (the
/// first call returns 1; calls from several threads each get a different one). Flushes the backend first (not with periodic
/// flushing: the writer thread flushes before it writes). Periodic flushing: queues
/// the closed phase for writing (and the oldest earlier phase whose write failed),
/// waiting while max_pending_phases are queued. Throws InvalidArgument for an
/// unknown or finalized session.
std::size_t advance_phase(SessionId session);

/// The open phase of a session.
std::size_t current_phase(SessionId session);

/// True once `phase` is closed: nothing more is recorded into it.
bool is_phase_complete(SessionId session, std::size_t phase);

/// True once `phase` has been written to its part file (and dropped).
bool is_phase_flushed(SessionId session, std::size_t phase);

/// Block until no write of `phase` (or of an earlier phase) is pending;
/// returns is_phase_flushed(session, phase).
bool wait_for_flush(SessionId session, std::size_t phase);

/// The phase's profile as JSON text, in the session's format (hatchet or
/// chrome trace). nullopt when the phase is not in memory (written and
/// dropped, cleared, or not started yet). The open phase gives a snapshot.
std::optional<std::string> get(SessionId session, std::size_t phase);
/// The same structure encoded as MessagePack.
std::optional<std::vector<std::uint8_t>> get_msgpack(SessionId session, std::size_t phase);

/// Drop `phase` from memory (all phases <= `phase` if clear_up_to_phase).
/// Clearing the open phase empties it; open scopes stay open. Dropped phases
/// are not written (unless the worker had already begun writing one).
void clear(SessionId session, std::size_t phase, bool clear_up_to_phase = false);

/// Writes that failed so far (each also printed once per session).
std::vector<FlushError> flush_errors(SessionId session);

/// What a session holds in memory now.
struct SessionStats {
  std::size_t phase = 0;            ///< the open phase
  std::size_t nodes_in_memory = 0;  ///< tree nodes over all threads and phases held
  std::size_t events_in_memory = 0; ///< trace events held
  std::size_t phases_in_memory = 0; ///< closed phases held (queued, failed, or kept)
  std::size_t phases_written = 0;
  std::size_t pending_launches = 0; ///< correlated launches waiting for their record
  bool kernel_records = false;      ///< the backend started
  /// Kernels replayed from CUDA graphs whose capture was not seen (captured
  /// before profiling began): attributed flat, under the replay site.
  std::size_t graph_kernels_flat = 0;
  /// Periodic flushing: batches the writer has written, backend flushes it
  /// made for them, and how often (and for how long in total) advance_phase
  /// waited because max_pending_phases phases were queued.
  std::uint64_t writer_batches = 0;
  std::uint64_t writer_flushes = 0;
  std::uint64_t advance_waits = 0;
  std::uint64_t advance_wait_ns = 0;
};
SessionStats stats(SessionId session);

/// File name of a phase's part file: "<name>.part_<N>.<format>".
std::string part_path(SessionId session, std::size_t phase);
/// File name finalize uses for an unadvanced session: "<name>.<format>".
std::string final_path(SessionId session);

}  // namespace tilejit::profiler

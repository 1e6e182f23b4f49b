// tilejit/runtime/autotune.hpp — picking the fastest of several compiled
// variants of a kernel family, once per device and problem key, persisted.
//
//   using namespace examples;             // Softmax<BLOCK_M, WIDTH>
//   tj::Autotuner tuner("softmax", {
//       tj::cand<Softmax<1, 768>>({.params = {{"BLOCK_M", 1}}, .num_warps = 1}),
//       tj::cand<Softmax<4, 768>>({.params = {{"BLOCK_M", 4}}, .num_warps = 4}),
//       tj::cand<Softmax<8, 768>>({.params = {{"BLOCK_M", 8}}, .num_warps = 8}),
//   });
//   tj::TuneKey key{{"rows", rows}, {"width", 768}, {"dtype", "f32"}};
//   auto grid = [&](const tj::Config& c) { return tj::Grid{tj::cdiv(rows, c.param("BLOCK_M"))}; };
//   tuner.launch(key, grid, x, y, rows);  // tunes (or reads the stored winner) once per key, then launches the best
//   std::cout << tuner.report(key).str();   // per candidate: status, reason, compile ms, median ms
//
// Candidates of one tuner share the kernel signature (a braced list of
// candidates of different signatures does not compile), so arguments are
// checked at compile time as in Kernel::launch. Compile-time parameters are
// template arguments, so the caller builds candidates: one tj::cand<K>(Config)
// each, a loop over a pack (see test/runtime/test_autotune.cpp), or
// tj::make_candidate(config, factory) for full control of the compile.
//
// What tune() does for a key not yet known to this object:
//  1. Identity: device name, arch and driver version + the key's str().
//  2. Stored result: <cache dir>/autotune/<name>.json (cache dir =
//     TuneOptions::cache_dir, else the kernel cache's directory:
//     $TILEJIT_CACHE_DIR or ~/.cache/tilejit). When it holds a winner for
//     (device, key) that is one of the candidates, only that candidate is
//     built (trace + codegen + the kernel cache: a disk hit in a new process)
//     and nothing is benchmarked: report.tuned == false, report.from_disk.
//     A malformed file is ignored (noted in the report and the log) and
//     rewritten after tuning; a file that exists but cannot be opened now
//     (permissions, I/O error) or was written by a newer version is ignored
//     and left as it is (its other entries may be fine), the result not stored.
//  3. Pruning: every TuneOptions::prune predicate sees (Config, key, device)
//     and returns a reason to drop the config ("" keeps it).
//  3b. Ranking (TuneOptions::rank, e.g. predict::ranker: a learned model of
//     the configs' static features, DESIGN §7): every survivor is traced
//     (factory only, no JIT) and scored; they are compiled and timed best
//     score first, and with TuneOptions::top_k > 0 only the k best — plus the
//     best-scored config whose params are all powers of two when none of the k
//     is (power-of-two variants always stay in the race beside NPOT ones). The
//     others are reported `ranked_out` with their score. When every one of a
//     batch fails, the next k are tried. A rank function that throws or returns
//     the wrong number of scores is logged, and every survivor is timed; one
//     that scores every candidate NaN (predict::Recorder) orders nothing, and
//     every survivor is timed too.
//  4. Compile: all surviving candidates are built before any timing, on
//     TuneOptions::threads threads (default: all cores): factory (trace) +
//     KernelCore::prepare (codegen, NVRTC/hiprtc through the kernel cache,
//     module load). NVRTC programs are independent; the cache serialises only
//     compiles of one key.
//  5. Benchmark on the caller's arguments: per candidate one launch (launch
//     errors surface here) and `warmup` launches; then up to `reps` timed
//     launches each (device events, Device::time_ms), round-robin — rep r of
//     every candidate before rep r + 1 of any — each preceded by an L2 flush
//     (memset of a flush_bytes buffer, GPU only), so clock drift under load
//     falls on every candidate alike; a slow candidate gets fewer reps
//     (budget_ms). Score = median.
//  6. Winner = lowest median; stored by temp file + rename (atomic), the read-merge-replace under an flock(2) of
//     <file>.lock so concurrent tuners keep each other's entries. Invalid entries are dropped (the others kept);
//     a file of a newer version is neither used nor overwritten; a file that is not regular is never read.
// A candidate that throws anywhere (InvalidArgument, Unsupported,
// CompileError, DriverError, ...) is skipped: its status and reason go to the
// report and to TuneOptions::log (default stderr). When none survives,
// AutotuneError lists every reason — except when the arguments themselves are
// bad (null or misaligned pointer, negative size, wrong descriptor:
// KernelCore::check_arguments): those checks depend only on the family's
// shared signature, so every candidate fails them alike, and when no candidate
// was built the first one's InvalidArgument is rethrown as it is (also when a
// stored winner fails them: no re-tuning). On the interpreter everything works the
// same; times are host times.
//
// The candidates run on the caller's arguments several times: a kernel that
// reads what it writes (in place) must be tuned on scratch buffers.
#pragma once
#include <concepts>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tilejit/core/error.hpp"
#include "tilejit/runtime/kernel.hpp"

namespace tilejit {

/// One point of a kernel family's tuning space. `params` are the family's
/// compile-time parameters by name (BLOCK_M, ...); str() is the stable form
/// stored on disk: params sorted by name, then num_warps and num_stages,
/// e.g. "BLOCK_M=4 num_warps=4 num_stages=1".
struct Config {
  std::map<std::string, long long, std::less<>> params;
  int num_warps = 4;
  int num_stages = 1;

  /// The value of a parameter; InvalidArgument naming it when absent.
  long long param(std::string_view name) const;
  std::string str() const;
  bool operator==(const Config&) const = default;
};

/// Problem properties the best config depends on (rows, width, dtype, ...).
/// str(): sorted "name=value" pairs, strings quoted: `dtype="f32" rows=4096`.
/// set() throws InvalidArgument for a name that is not [A-Za-z0-9_.-]+ (so no two keys print alike) or a string
/// value that is not valid UTF-8 (keys are stored as JSON).
class TuneKey {
 public:
  struct Value {
    std::variant<long long, std::string> v;
    template <std::integral T>
    Value(T x) : v(static_cast<long long>(x)) {}
    Value(std::string s) : v(std::move(s)) {}
    Value(const char* s) : v(std::string(s)) {}
  };
  TuneKey() = default;
  TuneKey(std::initializer_list<std::pair<std::string, Value>> kv) {
    for (const auto& [k, v] : kv) set(k, v);
  }
  TuneKey& set(std::string name, Value v);
  /// InvalidArgument naming the property when it is absent or of the other kind.
  long long integer(std::string_view name) const;
  const std::string& string(std::string_view name) const;
  bool contains(std::string_view name) const { return kv_.find(name) != kv_.end(); }
  std::string str() const;
  bool operator==(const TuneKey& o) const { return str() == o.str(); }

 private:
  std::map<std::string, Value, std::less<>> kv_;
};

/// One traced (not yet compiled) candidate, as a rank function sees it: its config, its kernel (IR, options and
/// device; KernelCore::source generates its code without compiling it) and the grid of this key's launch.
struct RankInput {
  const Config& config;
  const runtime::KernelCore& kernel;
  Grid grid;
};
/// Scores a key's candidates before any is compiled: one score per input, higher = compiled and timed first (NaN:
/// last). Called on the tuning thread with the tuner's lock held: it must not call the same tuner (that would wait
/// forever), and other keys' tune / find wait while it runs. `args` are the launch arguments being tuned on.
using RankFn = std::function<std::vector<double>(const TuneKey& key, std::span<const RankInput> cands,
                                                 std::span<const runtime::ArgSlot> args)>;

/// Returns why a config cannot run on this problem and device ("" = keep it).
using PruneFn = std::function<std::string(const Config&, const TuneKey&, const Device&)>;
/// Builds the kernel of one candidate (trace + options). Called on a worker thread.
using KernelFactory = std::function<std::shared_ptr<runtime::KernelCore>(const Device&, const Config&)>;

/// A candidate for kernels whose operator() has the signature `Sig`
/// (lang::kernel_signature<K>::args' type).
template <class Sig>
struct Candidate {
  Config config;
  KernelFactory make;
};
namespace detail {
template <class P> struct tune_param { using type = P; };
template <class T, int... B> struct tune_param<Desc<T, B...>> { using type = AnyDesc<T>; };
template <class Tuple> struct tune_sig;
template <class... T> struct tune_sig<boost::hana::tuple<T...>> {
  using type = std::remove_cvref_t<decltype(boost::hana::tuple_t<typename tune_param<typename T::type>::type...>)>;
};
}  // namespace detail
/// K's parameter types as the autotuner sees them: Desc<T, B...> becomes AnyDesc<T>.
template <class K>
using signature_t = typename detail::tune_sig<std::remove_cvref_t<decltype(lang::kernel_signature<K>::args)>>::type;
template <class K>
using CandidateFor = Candidate<signature_t<K>>;

/// The usual candidate: K compiled with `base` options, num_warps and num_stages from the config.
template <class K>
CandidateFor<K> cand(Config c, CompileOptions base = {}, K k = K{}) {
  return {std::move(c), [k, base](const Device& d, const Config& cfg) {
            CompileOptions o = base;
            o.num_warps = cfg.num_warps;
            o.num_stages = cfg.num_stages;
            return Kernel<K>(d, k, std::move(o)).core();
          }};
}

namespace detail {
template <class T>
struct kernel_of {
  static_assert(sizeof(T) == 0, "a candidate factory returns a tj::Kernel<K>");
};
template <class K>
struct kernel_of<Kernel<K>> {
  using type = K;
};
}  // namespace detail

/// A candidate with its own factory: `f(const Device&, const Config&)` returns a Kernel<K>.
template <class F>
auto make_candidate(Config c, F f) {
  using K = typename detail::kernel_of<std::remove_cvref_t<std::invoke_result_t<F&, const Device&, const Config&>>>::type;
  return CandidateFor<K>{std::move(c), [f = std::move(f)](const Device& d, const Config& cfg) mutable {
                           return f(d, cfg).core();
                         }};
}

struct TuneOptions {
  std::optional<Device> device;                 ///< default: Device::best()
  std::optional<std::filesystem::path> cache_dir;  ///< unset: the kernel cache's dir; empty path: no persistence;
                                                   ///< relative: made absolute when the Autotuner is built
  int warmup = 3;                               ///< untimed launches before timing
  int reps = 10;                                ///< timed launches at most; the score is their median
  double budget_ms = 100;                       ///< reps are cut so one candidate's timing takes about this long
  std::size_t flush_bytes = std::size_t{256} << 20;  ///< L2 flush buffer before each timed launch (GPU only; 0 = none)
  unsigned threads = 0;                         ///< compile threads; 0 = all cores
  std::vector<PruneFn> prune;
  RankFn rank;                                  ///< orders the candidates before compiling (step 3b); empty: none
  int top_k = 0;                                ///< with `rank`: compile and time only the k best-scored (0 = all)
  std::function<void(const std::string&)> log;  ///< skipped/pruned/corrupt notes; default: stderr
  Stream stream;                                ///< stream of the benchmark launches
};

struct CandidateReport {
  enum class Status {
    not_run,         ///< a stored winner was reused: this candidate was never built
    pruned,          ///< a prune predicate dropped it (reason = its answer)
    compile_failed,  ///< factory or prepare threw (reason = the error)
    launch_failed,   ///< grid or a launch threw (reason = the error)
    timed,           ///< benchmarked (median_ms)
    loaded,          ///< the stored winner, built without benchmarking
    ranked_out,      ///< the rank function placed it below TuneOptions::top_k: traced, never compiled
  };
  Config config;
  Status status = Status::not_run;
  std::string reason;
  double compile_ms = -1;  ///< wall time of factory + prepare on its thread (-1: not built; ranked_out: the trace alone)
  double jit_ms = -1;      ///< of which the compiler itself (0 on a cache hit)
  std::string jit_source;  ///< "compiled", "disk", "memory", "none" (interpreter)
  double median_ms = -1;   ///< -1 unless timed
  int reps = 0;
  bool winner = false;
  double score = std::numeric_limits<double>::quiet_NaN();  ///< the rank function's score (NaN: none)
  int rank = -1;           ///< 0-based place in the rank function's order (-1: not ranked); str() prints it 1-based
};
std::string to_string(CandidateReport::Status s);

struct TuneReport {
  std::string name, device, key;
  bool tuned = false;      ///< candidates were benchmarked in this call
  bool from_disk = false;  ///< the winner came from the stored file
  std::string note;        ///< why the stored file was not used ("" when it was or did not exist)
  std::filesystem::path file;  ///< the stored file (empty: no persistence)
  std::size_t best = 0;    ///< index of the winner in `candidates`
  unsigned threads = 0;    ///< compile threads used
  double total_ms = 0, lookup_ms = 0, compile_ms = 0, bench_ms = 0, store_ms = 0;
  double rank_ms = 0;      ///< tracing and scoring the candidates (step 3b; 0 without a rank function)
  std::vector<CandidateReport> candidates;
  const Config& best_config() const { return candidates.at(best).config; }
  /// A table: one line per candidate, then the totals.
  std::string str() const;
};

/// Every candidate failed or was pruned; report() lists each reason.
class AutotuneError : public Error {
 public:
  AutotuneError(std::string what, TuneReport r) : Error(std::move(what)), report_(std::move(r)) {}
  const TuneReport& report() const noexcept { return report_; }

 private:
  TuneReport report_;
};

namespace runtime {

/// The type-erased tuner behind Autotuner<Sig>.
class AutotunerCore {
 public:
  using GridFn = std::function<Grid(const Config&)>;
  AutotunerCore(std::string name, std::vector<std::pair<Config, KernelFactory>> cands, TuneOptions opt);
  /// Tune or load for `key` (no-op when this object already knows it).
  const TuneReport& tune(const TuneKey& key, const GridFn& grid, std::span<const ArgSlot> args);
  void launch(const TuneKey& key, const GridFn& grid, std::span<ArgSlot> args);
  const TuneReport& report(const TuneKey& key) const;
  const TuneReport* find(const TuneKey& key) const;
  const Device& device() const { return dev_; }
  std::filesystem::path file() const;
  const std::string& name() const { return name_; }

 private:
  struct Tuned {
    std::size_t index;
    std::shared_ptr<KernelCore> kernel;
    TuneReport report;
  };
  Tuned& tune_locked(const TuneKey& key, const GridFn& grid, std::span<const ArgSlot> args);
  void log(const std::string& msg) const;

  std::string name_;
  std::vector<std::pair<Config, KernelFactory>> cands_;
  TuneOptions opt_;
  Device dev_;
  std::string device_id_;
  mutable std::mutex mu_;
  std::map<std::string, Tuned, std::less<>> tuned_;  // by key.str()
};

}  // namespace runtime

/// Tunes a family of kernels with the signature `Sig`; see the top of this file.
/// Thread-safe (tuning of one object is serialised).
template <class Sig>
class Autotuner {
 public:
  using GridFn = runtime::AutotunerCore::GridFn;

  /// InvalidArgument: no candidates, two with the same Config::str(), an empty
  /// factory, or a name other than [A-Za-z0-9_.-]+.
  Autotuner(std::string name, std::vector<Candidate<Sig>> cands, TuneOptions opt = {})
      : core_(std::move(name), erase(std::move(cands)), std::move(opt)) {}
  Autotuner(std::string name, std::initializer_list<Candidate<Sig>> cands, TuneOptions opt = {})
      : Autotuner(std::move(name), std::vector<Candidate<Sig>>(cands), std::move(opt)) {}

  /// Tune (or read the stored winner) for `key` once; later calls return the same report.
  template <class... A>
  const TuneReport& tune(const TuneKey& key, const GridFn& grid, const A&... args) {
    auto slots = to_slots(args...);
    return core_.tune(key, grid, slots);
  }
  /// tune() when needed, then launch the winner with grid(winner's config).
  template <class... A>
  void launch(const TuneKey& key, const GridFn& grid, const A&... args) {
    auto slots = to_slots(args...);
    core_.launch(key, grid, slots);
  }
  /// The report of a key tuned by this object (InvalidArgument otherwise).
  const TuneReport& report(const TuneKey& key) const { return core_.report(key); }
  /// The report of a key tuned by this object, or nullptr.
  const TuneReport* find(const TuneKey& key) const { return core_.find(key); }
  const Config& best(const TuneKey& key) const { return report(key).best_config(); }
  const Device& device() const { return core_.device(); }
  /// <cache dir>/autotune/<name>.json (empty without persistence).
  std::filesystem::path file() const { return core_.file(); }

 private:
  static std::vector<std::pair<Config, KernelFactory>> erase(std::vector<Candidate<Sig>> cs) {
    std::vector<std::pair<Config, KernelFactory>> out;
    out.reserve(cs.size());
    for (auto& c : cs) out.emplace_back(std::move(c.config), std::move(c.make));
    return out;
  }
  template <class... A>
  static std::array<runtime::ArgSlot, sizeof...(A)> to_slots(const A&... args) {
    static_assert(sizeof...(A) == decltype(boost::hana::length(std::declval<Sig>()))::value,
                  "wrong number of kernel arguments");
    std::array<runtime::ArgSlot, sizeof...(A)> slots;
    fill<0>(slots, args...);
    return slots;
  }
  template <std::size_t I, std::size_t N, class A0, class... A>
  static void fill(std::array<runtime::ArgSlot, N>& out, const A0& a0, const A&... rest) {
    using P = typename decltype(+boost::hana::at_c<I>(Sig{}))::type;
    out[I] = runtime::to_slot<P>(a0);
    if constexpr (sizeof...(A) > 0) fill<I + 1>(out, rest...);
  }
  template <std::size_t I, std::size_t N>
  static void fill(std::array<runtime::ArgSlot, N>&) {}

  runtime::AutotunerCore core_;
};

template <class Sig>
Autotuner(std::string, std::initializer_list<Candidate<Sig>>, TuneOptions = {}) -> Autotuner<Sig>;
template <class Sig>
Autotuner(std::string, std::vector<Candidate<Sig>>, TuneOptions = {}) -> Autotuner<Sig>;

}  // namespace tilejit

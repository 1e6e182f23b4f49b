// Profiler overhead on the device (Google Benchmark, wall time): the same
// work with no session, with a CUPTI session (launch hook on, every kernel
// attributed), and with periodic flushing every 100 steps.
//
//   BM_TinyLaunchesPaired  9 rounds of (unprofiled, profiled) 100K tiny launches back to back: the ratio's median
//   BM_TinyLaunches/*   100,000 launches of a one-program vector add (CPU-bound); /0 no
//                       session, /1 cupti + hook, /2 with flushing, and the two halves
//                       of /1: /3 the hook alone (no CUPTI), /4 CUPTI alone (no hook);
//                       /5 no session again, after them (nothing of CUPTI left behind).
//                       /2 also reports how often advance_phase waited for the writer.
//   BM_CuptiParts/*     the same loop, CUPTI only, split further (diagnostic): /0 no
//                       session, /1 launch callbacks without kernel records, /2 kernel
//                       records without callbacks (unattributed), /3 both (= TinyLaunches/4)
//   BM_CuptiKnobs/k     CUPTI's knobs one at a time ("cupti:" mode tokens, docs/profiler.md "Overhead"),
//                       each as 5 paired rounds like BM_TinyLaunchesPaired (ratio to the unprofiled
//                       loop run just before it), with how long the GPU still had to run after the last
//                       launch (drain_ms: whether the loop waited for the host or for the GPU) and a
//                       check that every kernel record arrived under the launching scope
//   BM_GemmLoop/*/n     n GEMMs 4096³ (examples/gemm rung 4, GPU-bound), n = 50 and 500
// Targets (issue 6): GPU-bound < 1% overhead, tiny launches < 1.3×, flushing < 2%.
//
//   BM_DeviceEvents     a 4096³ bf16 GEMM (rung 5, warp-specialised, 128×256, 4 stages) without device events,
//                       with them (lang/events.hpp), and with wgmma pairs too, 20 launches each under a CUPTI
//                       session: the kernel times, their ratios, and what the events measured — mean TMA issue ->
//                       arrival per stage, wgmma commit -> the wait that saw it complete, and program span
//
//   BM_HostLaunch/*     the profiler's own host cost per launch, no GPU needed (below)
//
//   profiler_bench --long-job[=N] [--dir=D]
// simulates a 1-hour job: N launches (default 10M) under a session with
// periodic flushing, a phase every 10K launches. On a GPU: tiny tilejit kernels
// under the CUPTI backend; without one: a simulated GPU backend whose
// completion thread delivers kernel records asynchronously, as CUPTI's buffer
// callback does. Prints RSS after the first phase and at the end (flat within
// 10% is the target), parses every phase file back and checks that every
// launch's kernel was counted once; one-line verdict, exit code 0 on PASS.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/gemm/matmul_v4.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace tp = tilejit::profiler;
namespace {

/// A simulated GPU: each launch is correlated on the launching thread and its
/// record delivered about 1 ms later by a completion thread (as CUPTI's buffer
/// callback would); flush() delivers every launch made before it. Records are
/// delivered outside the queue's lock, so the launching thread never waits
/// for a delivery (CUPTI's buffer-completed callback does not block launches)
/// — except when kMaxInFlight launches are queued: like a GPU's bounded launch
/// queue, a launch then blocks until the completion thread has drained it, so
/// a launcher faster than the simulated device cannot pile up unbounded work.
class SimGpu final : public tp::Backend {
 public:
  static std::atomic<SimGpu*>& current() {
    static std::atomic<SimGpu*> p{nullptr};
    return p;
  }
  /// The name every record carries (set before the session starts).
  static std::string& kernel_name() {
    static std::string n = "sim_tiny_kernel";
    return n;
  }
  /// false: no completion thread; records are delivered only by flush()
  /// (set before the session starts).
  static bool& threaded() {
    static bool t = true;
    return t;
  }
  void start(tp::Sink& sink, const tp::BackendConfig&) override {
    sink_ = &sink;
    name_ = kernel_name();
    done_ = false;
    if (threaded()) thread_ = std::thread([this] { run(); });
    current().store(this);
  }
  void flush() override { deliver(); }
  void stop() override {
    current().store(nullptr);
    {
      std::lock_guard g(mu_);
      done_ = true;
    }
    cv_.notify_all();
    drained_.notify_all();
    if (thread_.joinable()) thread_.join();
    flush();
  }
  static constexpr std::size_t kMaxInFlight = 1024;  // CUDA's pending-launch queue is about this deep
  void launch(std::uint64_t corr) {
    tp::correlate_launch(corr);
    std::unique_lock g(mu_);
    queued_.push_back(corr);
    if (queued_.size() >= kMaxInFlight && thread_.joinable()) {
      cv_.notify_one();
      drained_.wait(g, [&] { return queued_.size() < kMaxInFlight || done_; });
    }
  }
  std::uint64_t delivered() const { return delivered_.load(std::memory_order_relaxed); }

 private:
  void run() {
    std::unique_lock lk(mu_);
    while (!done_) {
      cv_.wait_for(lk, std::chrono::milliseconds(1));
      lk.unlock();
      deliver();
      drained_.notify_all();
      lk.lock();
    }
  }
  /// Deliver everything queued so far; one delivery at a time, so that a
  /// flush() returns only once the records queued before it are in.
  void deliver() {
    std::lock_guard d(deliver_mu_);
    {
      std::lock_guard g(mu_);
      delivering_.swap(queued_);
    }
    // As the CUPTI backend does: reused records, handed over in batches of 64.
    const std::uint64_t t = tp::now_ns();
    std::size_t n = 0;
    for (std::uint64_t c : delivering_) {
      tp::KernelRecord& r = batch_[n];
      if (r.name != name_) r.name = name_;
      r.correlation_id = c;
      r.start_ns = t;
      r.end_ns = t + 2000;
      if (++n == batch_.size()) hand_over(*sink_, {batch_.data(), std::exchange(n, 0)});
    }
    if (n > 0) hand_over(*sink_, {batch_.data(), n});
    delivered_.fetch_add(delivering_.size(), std::memory_order_relaxed);
    delivering_.clear();
  }
  /// Sink::kernels where the profiler has it, else one record at a time.
  template <class S>
  static void hand_over(S& sink, std::span<const tp::KernelRecord> records) {
    if constexpr (requires { sink.kernels(records); }) sink.kernels(records);
    else
      for (const tp::KernelRecord& r : records) sink.kernel(r);
  }
  tp::Sink* sink_ = nullptr;
  std::string name_;
  std::array<tp::KernelRecord, 64> batch_;  // under deliver_mu_
  std::mutex mu_, deliver_mu_;
  std::condition_variable cv_, drained_;
  std::vector<std::uint64_t> queued_, delivering_;  // delivering_: under deliver_mu_
  std::atomic<std::uint64_t> delivered_{0};
  bool done_ = false;
  std::thread thread_;
};

tj::Device& gpu() {
  static tj::Device d = tj::Device::best();
  return d;
}

/// kHookOnly and kCuptiNoHook split the cost of kProfiled: the launch hook
/// alone (no CUPTI), and CUPTI with its attribution but no launch hook.
/// kPlainAfter is kPlain again, run after the CUPTI sessions: CUPTI detached
/// (cuptiFinalize) leaves no cost behind.
enum Mode { kPlain = 0, kProfiled = 1, kFlushing = 2, kHookOnly = 3, kCuptiNoHook = 4, kPlainAfter = 5 };

const char* mode_label(int mode) {
  switch (mode) {
    case kPlain: return "no session";
    case kProfiled: return "cupti + launch hook";
    case kFlushing: return "cupti + hook + flush every 100";
    case kHookOnly: return "launch hook, no backend";
    case kCuptiNoHook: return "cupti, no launch hook";
    default: return "no session, after the CUPTI sessions";
  }
}

tp::Options options_for(int mode) {
  tp::Options o;
  o.backend = mode == kHookOnly ? "" : "cupti";
  o.hook = mode == kCuptiNoHook ? "" : "launch";
  if (mode == kFlushing) o.mode = "periodic_flushing";
  return o;
}

/// What a session did besides the loop, summed over a benchmark's iterations.
struct SessionCost {
  double advance_waits = 0, advance_wait_ms = 0, writer_batches = 0;
  void report(benchmark::State& st) const {
    using C = benchmark::Counter;
    st.counters["adv_waits"] = C(advance_waits, C::kAvgIterations);
    st.counters["adv_wait_ms"] = C(advance_wait_ms, C::kAvgIterations);
    st.counters["batches"] = C(writer_batches, C::kAvgIterations);
  }
};

/// Runs `step(i)` n times under `o` (no session when `o` is null); with
/// `flush_every`, advance_phase after every that many steps.
template <class F>
void under(benchmark::State& st, const tp::Options* o, int n, int flush_every, F&& step, SessionCost* cost = nullptr) {
  if (!o) {
    for (int i = 0; i < n; ++i) step(i);
    gpu().synchronize();
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench";
  std::filesystem::create_directories(dir);
  st.PauseTiming();
  const auto s = tp::start((dir / "run").string(), *o);
  st.ResumeTiming();
  {
    tp::Scope top("loop");
    for (int i = 0; i < n; ++i) {
      step(i);
      if (flush_every > 0 && i % flush_every == flush_every - 1) tp::advance_phase(s);
    }
    gpu().synchronize();
  }
  st.PauseTiming();
  if (cost) {
    const auto ss = tp::stats(s);
    cost->advance_waits += static_cast<double>(ss.advance_waits);
    cost->advance_wait_ms += static_cast<double>(ss.advance_wait_ns) / 1e6;
    cost->writer_batches += static_cast<double>(ss.writer_batches);
  }
  tp::finalize(s);
  std::filesystem::remove_all(dir);
  st.ResumeTiming();
}

/// Runs `step(i)` n times under the given profiling mode; returns when the GPU
/// is idle. Session start (CUPTI subscription, activity buffers mapped) and
/// finalize (the last flush, the file write) are excluded from the timing:
/// this measures the steady state of a long job. They are reported on their
/// own by BM_SessionStartStop.
template <class F>
void under(benchmark::State& st, int mode, int n, F&& step, SessionCost* cost = nullptr) {
  if (mode == kPlain || mode == kPlainAfter) return under(st, nullptr, n, 0, step);
  const tp::Options o = options_for(mode);
  under(st, &o, n, mode == kFlushing ? 100 : 0, step, cost);
}

void BM_SessionStartStop(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench_ss";
  std::filesystem::create_directories(dir);
  for (auto _ : st) {
    tp::Options o;
    o.backend = "cupti";
    o.hook = "launch";
    tp::finalize(tp::start((dir / "run").string(), o));
  }
  std::filesystem::remove_all(dir);
}

/// A one-program vector add over 1024 floats, compiled and run once (warm) on construction: the "tiny
/// kernel" of the CPU-bound benchmarks; freed on destruction.
struct TinyKernel {
  float* p = static_cast<float*>(gpu().alloc(4096));
  tj::Kernel<examples::VecAdd<1024>> k = tj::compile<examples::VecAdd<1024>>(gpu(), {.num_warps = 4});
  TinyKernel() {
    launch();
    gpu().synchronize();
  }
  ~TinyKernel() { gpu().free(p); }
  TinyKernel(const TinyKernel&) = delete;
  TinyKernel& operator=(const TinyKernel&) = delete;
  void launch() { k.launch(tj::Grid{1}, p, p, p, 1024); }
};

void BM_TinyLaunches(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  TinyKernel tiny;
  const int mode = static_cast<int>(st.range(0));
  SessionCost cost;
  for (auto _ : st) under(st, mode, 100000, [&](int) { tiny.launch(); }, &cost);
  if (mode == kFlushing) cost.report(st);
  st.SetLabel(mode_label(mode));
}

/// The tiny-launch overhead as paired rounds: each round times 100,000 launches without a session and then
/// under one (CUPTI + launch hook; the session's start and finalize untimed), back to back, so the drift
/// between runs far apart in the process (17% between BM_TinyLaunches' unprofiled rows on the H200) does not
/// enter the ratio. Counters: the median, min and max of the 9 per-round ratios (issue 6: < 1.3).
void BM_TinyLaunchesPaired(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  TinyKernel tiny;
  const tp::Options o = options_for(kProfiled);
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench_paired";
  std::filesystem::create_directories(dir);
  auto launches = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 100000; ++i) tiny.launch();
    gpu().synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (auto _ : st) {
    std::vector<double> ratio, profiled;
    for (int r = 0; r < 9; ++r) {
      const double plain = launches();
      const auto s = tp::start((dir / "run").string(), o);
      double t = 0;
      {
        tp::Scope top("loop");
        t = launches();
      }
      tp::finalize(s);
      ratio.push_back(t / plain);
      profiled.push_back(t);
    }
    std::sort(ratio.begin(), ratio.end());
    std::sort(profiled.begin(), profiled.end());
    st.SetIterationTime(profiled[profiled.size() / 2]);
    st.counters["ratio_median"] = ratio[ratio.size() / 2];
    st.counters["ratio_min"] = ratio.front();
    st.counters["ratio_max"] = ratio.back();
  }
  std::filesystem::remove_all(dir);
  st.SetLabel("profiled / unprofiled, 9 paired rounds of 100K launches");
}

/// Where CUPTI's cost per launch goes (diagnostic; "cupti:" backend modes, docs/profiler.md).
void BM_CuptiParts(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  TinyKernel tiny;
  const int part = static_cast<int>(st.range(0));
  static const char* const kModes[] = {"", "cupti:activity=off", "cupti:callbacks=off", ""};
  static const char* const kLabels[] = {"no session", "launch callbacks only", "kernel records only (unattributed)",
                                        "callbacks + kernel records"};
  tp::Options o;
  o.backend = "cupti";
  o.mode = kModes[part];
  for (auto _ : st)
    under(st, part == 0 ? nullptr : &o, 100000, 0, [&](int) { tiny.launch(); });
  st.SetLabel(kLabels[part]);
}

/// One setting of BM_CuptiKnobs: a "cupti:" mode (CUPTI knobs), tilejit's activity buffer size, and whether
/// one launch is made and waited for, untimed, between the session's start and the timed loop (so that what
/// CUPTI does once per session at the first launch — e.g. instrumenting the already loaded kernel for
/// CONCURRENT_KERNEL timestamps — is left out of the timing).
struct Knob {
  const char* label;
  const char* mode;
  std::size_t buffer_size = 64ull << 20;
  bool warm = false;
};
constexpr Knob kKnobs[] = {
    {"default (as BM_TinyLaunchesPaired)", ""},
    {"default, warm-up launch after start", "", 64ull << 20, true},
    {"kind=serial (KERNEL records, no instrumentation)", "cupti:kind=serial"},
    {"kind=serial, warm-up launch after start", "cupti:kind=serial", 64ull << 20, true},
    {"per_thread=off (one CUPTI buffer for all threads)", "cupti:per_thread=off"},
    {"pinned=on (CUPTI timestamps in pinned host memory)", "cupti:pinned=on"},
    {"device_buffer=32M (CUPTI default 3.2 MB, ~100K kernels)", "cupti:device_buffer=32M"},
    {"flush_period=10 (CUPTI worker flushes every 10 ms)", "cupti:flush_period=10"},
    {"tilejit activity buffers of 4 MiB instead of 64 MiB", "", 4ull << 20},
    // The two halves of the default, paired like the rows above (BM_CuptiParts runs them unpaired): attributed
    // reads 0 in both, since one has no scope for its records and the other no records.
    {"callbacks=off (kernel records only, unattributed)", "cupti:callbacks=off"},
    {"activity=off (launch callbacks only, no kernel records)", "cupti:activity=off"},
};
constexpr int kKnobCount = static_cast<int>(std::size(kKnobs));

/// Kernel launches counted under the top-level scope `scope` of a hatchet tree (-1: no such scope).
std::int64_t kernels_under(const nlohmann::json& root, std::string_view scope) {
  for (const auto& c : root.at("children"))
    if (c.at("frame").at("name") == scope) {
      std::int64_t n = 0;
      for (const auto& k : c.at("children")) n += k.at("metrics").value("count", std::int64_t{0});
      return n;
    }
  return -1;
}

/// CUPTI's knobs one at a time (diagnostic): 5 paired rounds per setting, each 100K launches without a
/// session and then 100K under one (CUPTI + launch hook, the setting's mode; start and finalize untimed).
/// Counters: the per-round ratio's median/min/max (issue 6: < 1.3); us/launch profiled and unprofiled
/// (medians); drain_ms and drain_ms_plain, the medians of the final synchronize after the 100K launches
/// returned: microseconds when the GPU keeps up with the launching thread (the loop is the host's), milliseconds
/// when launches queued up (the loop waited for the GPU: a launch blocks once the queue is full);
/// attributed = the fraction of rounds in which every one of the 100K kernels was counted under the scope that
/// launched it. The knobs CUPTI took (or refused)
/// are printed once per setting on stderr ("[knob k] ...").
void BM_CuptiKnobs(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const Knob& knob = kKnobs[st.range(0)];
  TinyKernel tiny;
  tp::Options o = options_for(kProfiled);
  o.mode = knob.mode;
  o.buffer_size = knob.buffer_size;
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench_knobs";
  std::filesystem::create_directories(dir);
  constexpr int kLaunches = 100000, kRounds = 5;
  struct Times {
    double host, total;
  };
  auto launches = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) tiny.launch();
    const auto t1 = std::chrono::steady_clock::now();
    gpu().synchronize();
    const auto t2 = std::chrono::steady_clock::now();
    return Times{std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t0).count()};
  };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (auto _ : st) {
    std::vector<double> ratio, drain_ms, drain_ms_plain, profiled_us, plain_us;
    int attributed = 0;
    for (int r = 0; r < kRounds; ++r) {
      const Times plain = launches();
      const auto s = tp::start((dir / "run").string(), o);
      if (r == 0) std::fprintf(stderr, "[knob %d] %s: %s\n", static_cast<int>(st.range(0)), knob.label,
                               tp::cupti_report().c_str());
      if (knob.warm) {
        tp::Scope w("warm");
        tiny.launch();
        gpu().synchronize();
      }
      Times t{};
      {
        tp::Scope top("loop");
        t = launches();
      }
      const auto rep = tp::finalize(s);
      try {
        std::ifstream in(rep.files.at(0));
        attributed += kernels_under(nlohmann::json::parse(in).at(0), "loop") == kLaunches;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "[knob %d] round %d: %s\n", static_cast<int>(st.range(0)), r, e.what());
      }
      ratio.push_back(t.total / plain.total);
      drain_ms.push_back((t.total - t.host) * 1e3);
      drain_ms_plain.push_back((plain.total - plain.host) * 1e3);
      profiled_us.push_back(t.total / kLaunches * 1e6);
      plain_us.push_back(plain.total / kLaunches * 1e6);
    }
    st.SetIterationTime(median(profiled_us) * kLaunches / 1e6);
    std::sort(ratio.begin(), ratio.end());
    st.counters["ratio_median"] = ratio[ratio.size() / 2];
    st.counters["ratio_min"] = ratio.front();
    st.counters["ratio_max"] = ratio.back();
    st.counters["drain_ms"] = median(drain_ms);
    st.counters["drain_ms_plain"] = median(drain_ms_plain);
    st.counters["us/launch"] = median(profiled_us);
    st.counters["us/launch_plain"] = median(plain_us);
    st.counters["attributed"] = static_cast<double>(attributed) / kRounds;
  }
  std::filesystem::remove_all(dir);
  st.SetLabel(knob.label);
}

void BM_GemmLoop(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const int M = 4096;
  std::vector<tj::bf16> h(static_cast<std::size_t>(M) * M, tj::bf16(0.5f));
  auto* a = static_cast<tj::bf16*>(gpu().alloc(h.size() * 2));
  auto* b = static_cast<tj::bf16*>(gpu().alloc(h.size() * 2));
  auto* c = static_cast<float*>(gpu().alloc(h.size() * 4));
  gpu().copy_to_device(a, h.data(), h.size() * 2);
  gpu().copy_to_device(b, h.data(), h.size() * 2);
  auto k = tj::compile<examples::MatmulV4<128, 192, tj::bf16>>(gpu(), {.num_warps = 8});
  const tj::Grid grid{tj::cdiv(M, 128), tj::cdiv(M, 192)};
  k.launch(grid, a, b, c, M, M, M);
  gpu().synchronize();
  const int mode = static_cast<int>(st.range(0));
  const int n = static_cast<int>(st.range(1));
  for (auto _ : st) under(st, mode, n, [&](int) { k.launch(grid, a, b, c, M, M, M); });
  st.counters["ms/GEMM"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.SetLabel(mode_label(mode));
  gpu().free(a), gpu().free(b), gpu().free(c);
}

/// The first node below `n` (depth first, `n` included) whose name contains `part`, or nullptr.
const nlohmann::json* find_node(const nlohmann::json& n, const std::string& part) {
  if (n.at("frame").at("name").get<std::string>().find(part) != std::string::npos) return &n;
  for (const auto& c : n.at("children"))
    if (const auto* f = find_node(c, part)) return f;
  return nullptr;
}

void BM_DeviceEvents(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda || gpu().compute_capability() < 90) return st.SkipWithError("no Hopper GPU");
  const int M = 4096;
  using K = examples::MatmulV5<128, 256, tj::bf16>;
  std::vector<tj::bf16> h(static_cast<std::size_t>(M) * M);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = tj::bf16(static_cast<float>(i % 7) * 0.125f - 0.375f);
  auto* a = static_cast<tj::bf16*>(gpu().alloc(h.size() * 2));
  auto* b = static_cast<tj::bf16*>(gpu().alloc(h.size() * 2));
  auto* c = static_cast<float*>(gpu().alloc(h.size() * 4));
  gpu().copy_to_device(a, h.data(), h.size() * 2);
  gpu().copy_to_device(b, h.data(), h.size() * 2);
  using D = tj::TensorDescriptor;
  D ad(gpu(), a, tj::DType::bf16, {M, M}, {M, 1}, {128, K::BLOCK_K}, {.swizzle = D::Swizzle::b128});
  D bd(gpu(), b, tj::DType::bf16, {M, M}, {M, 1}, {256, K::BLOCK_K}, {.swizzle = D::Swizzle::b128});
  tj::CompileOptions o{.num_warps = 8, .num_stages = 4, .warp_specialize = true};
  auto plain = tj::compile<K>(gpu(), o);
  o.device_events = true;
  auto instr = tj::compile<K>(gpu(), o);
  o.device_events_wgmma = true;
  auto instr_wgmma = tj::compile<K>(gpu(), o);
  const tj::Grid grid{(M / 128) * (M / 256)};
  plain.launch(grid, ad, bd, c, M, M, M);
  instr.launch(grid, ad, bd, c, M, M, M);
  instr_wgmma.launch(grid, ad, bd, c, M, M, M);
  gpu().synchronize();
  tp::Options po;
  po.backend = "cupti";
  po.hook = "launch";
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_bench_devev";
  std::filesystem::create_directories(dir);
  for (auto _ : st) {
    const auto s = tp::start((dir / "run").string(), po);
    for (int r = 0; r < 20; ++r) {
      {
        tp::Scope x("plain");
        plain.launch(grid, ad, bd, c, M, M, M);
      }
      {
        tp::Scope y("instrumented");
        instr.launch(grid, ad, bd, c, M, M, M);
      }
      tp::Scope z("with wgmma pairs");
      instr_wgmma.launch(grid, ad, bd, c, M, M, M);
    }
    gpu().synchronize();
    const auto root = nlohmann::json::parse(*tp::get(s, tp::current_phase(s)))[0];
    tp::finalize(s);
    const auto* ps = find_node(root, "plain");
    const auto* is = find_node(root, "instrumented");
    const auto* p = ps ? find_node(*ps, plain.ir().name) : nullptr;
    const auto* i = is ? find_node(*is, instr.ir().name) : nullptr;
    const auto* ws = find_node(root, "with wgmma pairs");
    const auto* w = ws ? find_node(*ws, instr.ir().name) : nullptr;
    if (!p || !i || !w || !p->at("metrics").contains("time (ns)") || !i->at("metrics").contains("time (ns)") ||
        !w->at("metrics").contains("time (ns)"))
      return st.SkipWithError("kernel nodes missing from the profile");
    const double tp_us = p->at("metrics").at("time (ns)").get<double>() / p->at("metrics").at("count").get<double>() / 1e3;
    const double ti_us = i->at("metrics").at("time (ns)").get<double>() / i->at("metrics").at("count").get<double>() / 1e3;
    st.counters["plain_us"] = tp_us;
    st.counters["instrumented_us"] = ti_us;
    st.counters["ratio"] = ti_us / tp_us;
    const double tw_us = w->at("metrics").at("time (ns)").get<double>() / w->at("metrics").at("count").get<double>() / 1e3;
    st.counters["wgmma_pairs_us"] = tw_us;
    st.counters["ratio_wgmma"] = tw_us / tp_us;
    st.counters["TFLOPs_plain"] = 2.0 * M * M * M / (tp_us * 1e6);
    auto mean_us = [&](const char* site) {
      const auto* n = find_node(*w, site);
      if (!n || !n->at("metrics").contains("async_pairs")) return -1.0;
      return n->at("metrics").at("async_ns").get<double>() / n->at("metrics").at("async_pairs").get<double>() / 1e3;
    };
    st.counters["tma_issue_to_arrival_us"] = mean_us("TMA loop");
    st.counters["program_us"] = mean_us("program");
    st.counters["wgmma_commit_to_wait_us"] = mean_us("wgmma");
    st.SetIterationTime(ti_us / 1e6);
  }
  std::filesystem::remove_all(dir);
  gpu().free(a), gpu().free(b), gpu().free(c);
  st.SetLabel("rung 5 ws 128x256/4, 4096^3 bf16: device events on / off");
}

// ---- host cost of the launch path, no GPU needed -------------------------------------------
//
//   profiler_bench --benchmark_filter=BM_HostLaunch --benchmark_repetitions=5
//                  --benchmark_report_aggregates_only=true
//
// One benchmark iteration is one launch as src/runtime/kernel.cpp makes it
// (a profiler::LaunchScope around the driver call), inside two nested scopes
// ("loop"/"step") held open for the whole loop. The "driver" is SimGpu: it
// correlates the launch (as CUPTI's runtime-API callback does) and queues it;
// its completion thread delivers the kernel records about every 1 ms, and they
// are attributed (sink -> pending launch -> op node) on that thread. Time is
// wall time of the launching thread; "CPU" is the process's CPU time (both
// threads, so it includes the attribution of the records), per launch.
//   /0  no session: the hook is one relaxed atomic load
//   /1  a session with the launch hook, no backend (no kernel records)
//   /2  a session with the launch hook and the simulated backend (records)
//   /3  as /2, but no completion thread: the launching thread delivers the
//       records itself every 256 launches (SimGpu::flush), so the time is the
//       whole cost (launch path + attribution) on one core, without the
//       scheduling noise of two threads on a loaded machine
enum HostMode { kHostNoSession = 0, kHostHookOnly = 1, kHostRecords = 2, kHostRecordsInline = 3 };

void BM_HostLaunch(benchmark::State& st) {
  const int mode = static_cast<int>(st.range(0));
  static const std::string kernel = "examples_VecAdd_1024_f32";  // a tilejit-like name, longer than SSO
  static const bool registered = [] {
    tp::register_backend("sim_gpu", [] { return std::make_unique<SimGpu>(); });
    return true;
  }();
  (void)registered;
  const auto dir = std::filesystem::temp_directory_path() / "tj_prof_host_bench";
  std::filesystem::create_directories(dir);
  std::optional<tp::SessionId> s;
  if (mode != kHostNoSession) {
    tp::Options o;
    o.hook = "launch";
    const bool records = mode == kHostRecords || mode == kHostRecordsInline;
    if (records) o.backend = "sim_gpu";
    SimGpu::kernel_name() = kernel;
    SimGpu::threaded() = mode == kHostRecords;
    s = tp::start((dir / "host").string(), o);
    SimGpu::threaded() = true;
  }
  SimGpu* sim = s && tp::stats(*s).kernel_records ? SimGpu::current().load() : nullptr;
  const bool inline_delivery = mode == kHostRecordsInline;
  std::uint64_t corr = 1;
  {
    tp::Scope loop("loop");
    tp::Scope step("step");
    for (auto _ : st) {
      {
        tp::LaunchScope hook({.kernel = kernel, .grid = {1, 1, 1}});
        if (sim) sim->launch(corr++);
      }
      if (inline_delivery && corr % 256 == 0) sim->flush();
      benchmark::ClobberMemory();
    }
  }
  if (s) {
    if (sim) {
      sim->flush();
      if (sim->delivered() != corr - 1) st.SkipWithError("records lost");
    }
    const auto pending = tp::stats(*s).pending_launches;
    if (pending != 0) st.SkipWithError("launches still pending after the flush");
    tp::finalize(*s);
  }
  std::filesystem::remove_all(dir);
  st.SetLabel(mode == kHostNoSession ? "no session" : mode == kHostHookOnly ? "hook, no records"
                 : mode == kHostRecords ? "hook + records (completion thread)" : "hook + records (inline)");
}
}  // namespace

BENCHMARK(BM_TinyLaunchesPaired)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_TinyLaunches)->Arg(kPlain)->Arg(kProfiled)->Arg(kFlushing)->Arg(kHookOnly)->Arg(kCuptiNoHook)->Arg(kPlainAfter)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_CuptiParts)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_CuptiKnobs)->DenseRange(0, kKnobCount - 1)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_GemmLoop)->Args({kPlain, 50})->Args({kProfiled, 50})->Args({kFlushing, 50})->Args({kPlain, 500})->Args({kProfiled, 500})
    ->Args({kFlushing, 500})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_DeviceEvents)->Unit(benchmark::kMicrosecond)->UseManualTime()->Iterations(1);
BENCHMARK(BM_HostLaunch)->Arg(kHostNoSession)->Arg(kHostHookOnly)->Arg(kHostRecords)->Arg(kHostRecordsInline)->UseRealTime()->MeasureProcessCPUTime();
BENCHMARK(BM_SessionStartStop)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
// ---- the long-job memory test -------------------------------------------------------------

namespace {

double rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

/// Kernel launches counted in a hatchet tree: the "count" metrics of every node.
std::int64_t count_kernels(const nlohmann::json& node) {
  std::int64_t n = node.at("metrics").value("count", std::int64_t{0});
  for (const auto& c : node.at("children")) n += count_kernels(c);
  return n;
}

int long_job(std::int64_t launches, const std::filesystem::path& dir) {
  constexpr std::int64_t kPhase = 10'000;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const bool on_gpu = gpu().backend() == tj::Backend::cuda;
  tp::register_backend("sim_gpu", [] { return std::make_unique<SimGpu>(); });
  tp::Options o;
  o.backend = on_gpu ? "cupti" : "sim_gpu";
  o.hook = "launch";
  o.mode = "periodic_flushing";
  float* p = nullptr;
  std::optional<tj::Kernel<examples::VecAdd<1024>>> k;
  if (on_gpu) {
    p = static_cast<float*>(gpu().alloc(4096));
    k.emplace(tj::compile<examples::VecAdd<1024>>(gpu(), {.num_warps = 4}));
    k->launch(tj::Grid{1}, p, p, p, 1024);
    gpu().synchronize();
  }
  const auto s = tp::start((dir / "job").string(), o);
  if (!tp::stats(s).kernel_records) {
    std::printf("long-job: FAIL: backend '%s' did not start\n", o.backend.c_str());
    return 1;
  }
  static const tp::Name step_name("step");
  const auto t0 = std::chrono::steady_clock::now();
  double rss_first = 0, rss_peak = 0, rss_half = 0;
  std::uint64_t corr = 1;
  std::size_t phases = 0;
  for (std::int64_t i = 0; i < launches; ++i) {
    {
      tp::Scope st(step_name);
      if (on_gpu) {
        k->launch(tj::Grid{1}, p, p, p, 1024);
      } else {
        tp::LaunchScope hook({.kernel = "sim_tiny_kernel", .grid = {1, 1, 1}, .flops = 1024, .bytes = 12288});
        SimGpu::current().load()->launch(corr++);
      }
    }
    if ((i + 1) % kPhase == 0) {
      tp::advance_phase(s);
      ++phases;
      if (phases == 1) {
        tp::wait_for_flush(s, 0);
        rss_first = rss_mib();
      }
      if (phases == static_cast<std::size_t>(launches / kPhase / 2)) rss_half = rss_mib();
      if (phases % 100 == 0) {
        rss_peak = std::max(rss_peak, rss_mib());
        if (std::getenv("TILEJIT_LONG_JOB_TRACE")) std::printf("  phase %zu: RSS %.1f MiB\n", phases, rss_mib());
      }
    }
  }
  if (on_gpu) gpu().synchronize();
  if (phases > 0) tp::wait_for_flush(s, phases - 1);
  const double rss_end = rss_mib();
  rss_peak = std::max(rss_peak, rss_end);
  const auto st = tp::stats(s);
  const std::string cupti = on_gpu ? tp::cupti_report() : std::string();  // while the session holds CUPTI
  const auto rep = tp::finalize(s);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::int64_t counted = 0;
  std::size_t parsed = 0;
  std::string bad;
  for (const auto& f : rep.files) {
    try {
      std::ifstream in(f);
      const auto j = nlohmann::json::parse(in);
      counted += count_kernels(j.at(0));
      ++parsed;
    } catch (const std::exception& e) {
      if (bad.empty()) bad = f + ": " + e.what();
    }
  }
  if (on_gpu) gpu().free(p);
  const double growth = rss_first > 0 ? (rss_end - rss_first) / rss_first : 1.0;
  const bool ok = rss_first > 0 && growth <= 0.10 && bad.empty() && parsed == rep.files.size() &&
                  rep.files.size() == phases + 1 && rep.errors.empty() && counted == launches;
  if (on_gpu) std::printf("%s\n", cupti.c_str());
  std::printf("writer: %llu batches, %llu backend flushes; advance_phase waited %llu times, %.1f ms in all\n",
              static_cast<unsigned long long>(st.writer_batches), static_cast<unsigned long long>(st.writer_flushes),
              static_cast<unsigned long long>(st.advance_waits), static_cast<double>(st.advance_wait_ns) / 1e6);
  std::printf("long-job (%s): %lld launches, %zu phases in %.1f s; RSS after phase 0 %.1f MiB, at end %.1f MiB "
              "(%+.1f%%, peak %.1f; second half of the job %+.1f%%); in memory at end: %zu nodes, %zu phases; %zu/%zu phase files parsed%s%s; "
              "kernels counted %lld/%lld: %s\n",
              on_gpu ? "GPU, cupti" : "no GPU, simulated backend", static_cast<long long>(launches), phases, secs,
              rss_first, rss_end, 100.0 * growth, rss_peak,
              rss_half > 0 ? 100.0 * (rss_end - rss_half) / rss_half : 0.0, st.nodes_in_memory, st.phases_in_memory, parsed,
              rep.files.size(), bad.empty() ? "" : ", first error: ", bad.c_str(), static_cast<long long>(counted),
              static_cast<long long>(launches), ok ? "PASS" : "FAIL");
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--long-job", 0) != 0) continue;
    std::int64_t n = 10'000'000;
    if (a.size() > 11 && a[10] == '=') n = std::stoll(a.substr(11));
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "tj_prof_long_job";
    for (int j = 1; j < argc; ++j)
      if (std::string_view(argv[j]).rfind("--dir=", 0) == 0) dir = argv[j] + 6;
    return long_job(n, dir);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

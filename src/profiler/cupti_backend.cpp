// src/profiler/cupti_backend.cpp — the "cupti" backend: every kernel (tilejit's,
// cuBLAS's, anyone's) from CUPTI's activity API, attributed to the scope that
// launched it through CUPTI's driver/runtime launch callbacks.
//
// CUPTI is process-wide (one subscriber, one set of activity callbacks), so
// one Hub drives it for every session using this backend: the first session
// to start subscribes and enables kernel activity, the last to stop tears it
// down. Each kernel record goes to every attached session's sink; a session's
// own correlate_launch bindings decide where it lands.
//
//   launching thread:  cuLaunchKernel -> CUPTI API_ENTER callback
//                        -> correlate_launch(cbdata->correlationId)
//   CUPTI / flushing:  buffer completed -> each CONCURRENT_KERNEL record
//                        -> to_kernel_record (clock map) -> Sink::kernel
//
// Nothing links against libcupti: it is dlopen'ed at the first start().
#include "cupti_backend.hpp"


#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <span>
#include <cstddef>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "../runtime/cuda_driver.hpp"
#include "../runtime/dl.hpp"
#include "tilejit/core/error.hpp"

namespace tilejit::profiler::cupti {

// ---- clock calibration ---------------------------------------------------------

std::uint64_t ClockMap::to_mono(std::uint64_t cupti_ns) const noexcept {
  const double d = cupti_ns >= anchor.cupti_ns ? static_cast<double>(cupti_ns - anchor.cupti_ns)
                                               : -static_cast<double>(anchor.cupti_ns - cupti_ns);
  const double scaled = d * slope;
  constexpr double kMax = 1.8e19;  // just below 2^64
  if (scaled >= 0) {
    if (scaled >= kMax) return UINT64_MAX;
    const auto add = static_cast<std::uint64_t>(std::llround(scaled));
    return anchor.mono_ns > UINT64_MAX - add ? UINT64_MAX : anchor.mono_ns + add;
  }
  if (-scaled >= kMax) return 0;
  const auto sub = static_cast<std::uint64_t>(std::llround(-scaled));
  return sub >= anchor.mono_ns ? 0 : anchor.mono_ns - sub;
}

ClockMap fit_clock(const ClockSample& first, const ClockSample& latest) noexcept {
  ClockMap m;
  m.anchor = latest;
  m.slope = 1.0;
  if (latest.cupti_ns <= first.cupti_ns || latest.mono_ns <= first.mono_ns) return m;
  const std::uint64_t dc = latest.cupti_ns - first.cupti_ns;
  if (dc < kMinBaselineNs) return m;
  const double s = static_cast<double>(latest.mono_ns - first.mono_ns) / static_cast<double>(dc);
  if (!(std::fabs(s - 1.0) <= kMaxSkew)) return m;
  m.slope = s;  // anchored at `latest`, the line passes through `first` too
  return m;
}

ClockSample best_sample(const Bracket* readings, std::size_t n) noexcept {
  ClockSample best;
  std::uint64_t width = UINT64_MAX;
  for (std::size_t i = 0; i < n; ++i) {
    const Bracket& b = readings[i];
    if (b.mono_after < b.mono_before) continue;
    const std::uint64_t w = b.mono_after - b.mono_before;
    if (w < width) {
      width = w;
      best = {b.cupti_ns, b.mono_before + w / 2};
    }
  }
  return best;
}

// ---- PC sampling (pure) ------------------------------------------------------------

std::string stall_short_name(std::string_view n) {
  for (std::string_view prefix : {"smsp__pcsamp_warps_issue_stalled_", "smsp__pcsamp_"})
    if (n.substr(0, prefix.size()) == prefix) return std::string(n.substr(prefix.size()));
  return std::string(n);
}

std::vector<PcSamples> aggregate_pc_samples(const CUpti_PCSamplingData& data,
                                            const std::unordered_map<std::uint32_t, std::string>& stall_names,
                                            const LineLookup& line_of) {
  std::vector<PcSamples> out;
  std::unordered_map<std::string, std::size_t> kernel_index;
  std::vector<std::unordered_map<std::string, std::size_t>> line_index;
  for (std::size_t i = 0; i < data.totalNumPcs && data.pPcData; ++i) {
    const CUpti_PCSamplingPCData& pc = data.pPcData[i];
    const std::string fn = pc.functionName ? pc.functionName : "<unknown function>";
    auto [kit, fresh] = kernel_index.try_emplace(fn, out.size());
    if (fresh) {
      out.push_back({fn, {}});
      line_index.emplace_back();
    }
    PcSamples& k = out[kit->second];
    std::optional<std::string> where;
    if (line_of) where = line_of(pc.cubinCrc, pc.functionName, pc.pcOffset);
    const std::string loc = where ? *where : fmt::format("{}+0x{:x}", fn, pc.pcOffset);
    auto [lit, lfresh] = line_index[kit->second].try_emplace(loc, k.lines.size());
    if (lfresh) k.lines.push_back({loc, 0, {}});
    PcSampleLine& line = k.lines[lit->second];
    for (std::size_t r = 0; r < pc.stallReasonCount && pc.stallReason; ++r) {
      const auto& sr = pc.stallReason[r];
      if (sr.samples == 0) continue;
      line.samples += sr.samples;
      auto nit = stall_names.find(sr.pcSamplingStallReasonIndex);
      std::string reason = nit != stall_names.end() ? nit->second
                                                    : fmt::format("reason_{}", sr.pcSamplingStallReasonIndex);
      auto sit = std::find_if(line.stalls.begin(), line.stalls.end(),
                              [&](const auto& p) { return p.first == reason; });
      if (sit == line.stalls.end()) line.stalls.emplace_back(std::move(reason), sr.samples);
      else sit->second += sr.samples;
    }
  }
  return out;
}

// ---- loading libcupti ------------------------------------------------------------

std::string describe(const Api& api, CUptiResult r) {
  const char* text = nullptr;
  if (api.get_result_string) api.get_result_string(r, &text);
  return text ? fmt::format("{} ({})", text, static_cast<int>(r)) : fmt::format("CUPTI error {}", static_cast<int>(r));
}

namespace {

template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  fmt::print(stderr, "[tilejit.profiler] {}\n", fmt::format(f, std::forward<A>(a)...));
}

bool real_driver_ready(std::string* why) {
  std::string w;
  const auto* d = runtime::detail::cuda_driver(&w);
  if (!d) {
    if (why) *why = w;
    return false;
  }
  int n = 0;
  if (d->device_get_count(&n) != CUDA_SUCCESS || n <= 0) {
    if (why) *why = "the CUDA driver reports no device";
    return false;
  }
  return true;
}

void real_describe_devices(Sink& sink) {
  const auto* d = runtime::detail::cuda_driver();
  if (!d) return;
  int n = 0;
  if (d->device_get_count(&n) != CUDA_SUCCESS) return;
  for (int i = 0; i < n; ++i) {
    CUdevice dev = 0;
    if (d->device_get(&dev, i) != CUDA_SUCCESS) continue;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      return d->device_get_attribute(&v, a, dev) == CUDA_SUCCESS && v > 0 ? static_cast<std::uint64_t>(v) : 0;
    };
    DeviceInfo info;
    info.clock_rate = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    info.memory_clock_rate = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    info.bus_width = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    info.num_sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    const std::uint64_t cc = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                             attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    info.arch = cc == 90 ? "90a" : std::to_string(cc);  // as the JIT targets it (sm_90a)
    sink.device(DeviceType::CUDA, static_cast<std::uint32_t>(i), info);
  }
}

void real_synchronize_current() {
  const auto* d = runtime::detail::cuda_driver();
  if (!d || !d->ctx_get_current) return;
  CUcontext ctx = nullptr;
  if (d->ctx_get_current(&ctx) == CUDA_SUCCESS && ctx) d->ctx_synchronize();
}

struct Loaded {
  Api api;
  std::string error;
};

Loaded load() {
  Loaded out;
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("TILEJIT_CUPTI_LIBRARY"); p && *p) candidates.push_back(p);
  for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"}) candidates.push_back(n);
  std::vector<std::string> roots;
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) roots.push_back(h);
  roots.push_back("/usr/local/cuda");
  for (const auto& root : roots)
    for (const char* sub : {"/lib64/", "/extras/CUPTI/lib64/"})
      for (const char* n : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
        candidates.push_back(root + sub + n);
  const runtime::detail::Library& so = runtime::detail::open_library(candidates);
  if (!so) {
    out.error = "libcupti is not installed or cannot be loaded (" + so.error +
                "); set TILEJIT_CUPTI_LIBRARY to its path";
    return out;
  }
  Api& a = out.api;
  a.library = so.real_path().empty() ? so.path : so.real_path();
  std::string missing;
  auto get = [&](auto& fn, const char* name, bool required = true) {
    void* p = so.symbol(name);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    if (!p && required) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  get(a.get_result_string, "cuptiGetResultString");
  get(a.subscribe, "cuptiSubscribe");
  get(a.subscribe_v2, "cuptiSubscribe_v2", /*required=*/false);
  get(a.unsubscribe, "cuptiUnsubscribe");
  get(a.enable_callback, "cuptiEnableCallback");
  get(a.activity_register_callbacks, "cuptiActivityRegisterCallbacks");
  get(a.activity_enable, "cuptiActivityEnable");
  get(a.activity_disable, "cuptiActivityDisable");
  get(a.activity_flush_all, "cuptiActivityFlushAll");
  get(a.activity_get_next_record, "cuptiActivityGetNextRecord");
  get(a.activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
  get(a.get_timestamp, "cuptiGetTimestamp");
  get(a.activity_set_attribute, "cuptiActivitySetAttribute", /*required=*/false);
  get(a.activity_get_attribute, "cuptiActivityGetAttribute", /*required=*/false);
  get(a.get_version, "cuptiGetVersion", /*required=*/false);
  get(a.finalize, "cuptiFinalize", /*required=*/false);
  get(a.activity_flush_period, "cuptiActivityFlushPeriod", /*required=*/false);
  get(a.activity_enable_hw_trace, "cuptiActivityEnableHWTrace", /*required=*/false);
  get(a.get_graph_node_id, "cuptiGetGraphNodeId", /*required=*/false);
  get(a.get_graph_exec_id, "cuptiGetGraphExecId", /*required=*/false);
  get(a.pc_enable, "cuptiPCSamplingEnable", false);
  get(a.pc_disable, "cuptiPCSamplingDisable", false);
  get(a.pc_start, "cuptiPCSamplingStart", false);
  get(a.pc_stop, "cuptiPCSamplingStop", false);
  get(a.pc_get_data, "cuptiPCSamplingGetData", false);
  get(a.pc_set_config, "cuptiPCSamplingSetConfigurationAttribute", false);
  get(a.pc_num_stall_reasons, "cuptiPCSamplingGetNumStallReasons", false);
  get(a.pc_stall_reasons, "cuptiPCSamplingGetStallReasons", false);
  get(a.cubin_crc, "cuptiGetCubinCrc", false);
  get(a.sass_to_source, "cuptiGetSassToSourceCorrelation", false);
  if (!missing.empty()) {
    out.error = fmt::format("{} lacks {} (CUPTI too old?)", a.library, missing);
    return out;
  }
  a.driver_ready = &real_driver_ready;
  a.describe_devices = &real_describe_devices;
  a.synchronize_current = &real_synchronize_current;
  return out;
}

}  // namespace

const Api* real_api(std::string* why) {
  static const Loaded* loaded = new Loaded(load());  // never unloaded: CUPTI may call back at exit
  if (!loaded->error.empty()) {
    if (why) *why = loaded->error;
    return nullptr;
  }
  return &loaded->api;
}

// ---- the hub: CUPTI for every session ----------------------------------------------

namespace {

// What the hub asks of CUPTI, what each costs, and why it is needed
// (docs/profiler.md, "Overhead", has the measurements):
//
//  * Activity kind CONCURRENT_KERNEL — one record per kernel, with GPU start
//    and end times. The cost every launch pays: CUPTI adds timestamp writes
//    around the kernel and writes the record into the launching thread's
//    activity buffer. It is the data itself; nothing cheaper gives kernel
//    times. (KERNEL instead, while PC sampling runs: see set_kernel_kind_locked.)
//    Not enabled: RUNTIME and DRIVER activity (one more record per API call,
//    on the launching thread — the callbacks below already give the launch's
//    correlation id and scope), MEMCPY/MEMSET/SYNCHRONIZATION, latency
//    timestamps (cuptiActivityEnableLatencyTimestamps, off by default: queued/
//    submitted times, a further cost per launch), launch attributes.
//  * Callbacks on the launch entry points only (kDriverLaunches,
//    kRuntimeLaunches, graph launches) — not the whole API domains. A callback
//    fires twice per launch (API_ENTER: correlate_launch, a thread-local lock
//    and a push into a ring; API_EXIT: the launch's return code), only for the
//    entry point the application used: a driver launch (tilejit's) does not
//    fire the runtime ones. They give the scope a kernel lands in; the
//    activity record alone has no CPU-side context.
//  * Resource callbacks for CUDA-graph objects (kGraphResources) fire when
//    graphs are built, instantiated and destroyed, never per ordinary launch;
//    the module/context ones (kPcResources) only while PC sampling.
//  * Activity buffers come from a BufferPool, pre-faulted at session start,
//    and CUPTI is told (ZEROED_OUT_ACTIVITY_BUFFER) that they arrive zeroed:
//    otherwise it memsets each 64 MiB buffer on the launching thread, at the
//    first launch after every flush that took a buffer back.
//
// Launch entry points whose API_ENTER callback binds the correlation id.
// Graph launches are separate (kDriverGraphLaunches ...): one id covers every
// kernel of the graph.
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
};
constexpr CUpti_CallbackId kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

constexpr CUpti_CallbackId kDriverGraphLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};
constexpr CUpti_CallbackId kRuntimeGraphLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
// Graph resource events: capture sites, clones at instantiation, destruction.
constexpr CUpti_CallbackId kGraphResources[] = {
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,       CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,       CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
};
// PC sampling: cubins for the line lookup, contexts going away.
constexpr CUpti_CallbackId kPcResources[] = {
    CUPTI_CBID_RESOURCE_MODULE_LOADED,
    CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
    CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
};
// The executable graph is the first parameter of both graph-launch entry points.
static_assert(offsetof(cuGraphLaunch_params, hGraph) == 0);
static_assert(offsetof(cudaGraphLaunch_v10000_params, graphExec) == 0);
static_assert(sizeof(cudaGraphExec_t) == sizeof(CUgraphExec));

bool is_graph_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
                                                   cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000);
}

/// The calling thread's launch in progress, as CUPTI's callbacks see it.
struct ThreadLaunch {
  int runtime_depth = 0;
  std::uint64_t epoch = 0;
  std::uint64_t correlation = 0;  // the outermost launch in progress (0: none)
  bool graph = false;             // it is a graph launch
  std::uint32_t graph_kernels = 0;
  bool captured = false;          // it created a graph node: captured, no kernel runs
  bool instantiating = false;     // between GRAPHEXEC_CREATE_STARTING and GRAPHEXEC_CREATED
  std::uint32_t cloned_kernels = 0;
  void* pc_range = nullptr;       // a kernel-serialized PC-sampling range is open (PcSampler token)
};
thread_local ThreadLaunch t_launch;

constexpr std::uint64_t kRecalibrateNs = 1'000'000'000;  // from the buffer callback, at most 1/s
constexpr std::size_t kMinBufferBytes = 4096;

std::uint64_t steady_ns() { return now_ns(); }

void atomic_max(std::atomic<std::uint64_t>& a, std::uint64_t v) {
  std::uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

class Hub {
 public:
  static Hub& instance() {
    static Hub* h = new Hub;  // never destroyed: CUPTI threads may call back during exit
    return *h;
  }

  std::uint64_t attach(const Api& api, Sink& sink, const BackendConfig& cfg, const Tuning& tuning) {
    std::lock_guard lk(mu_);
    if (refs_ > 0 && &api != api_.load())
      throw DeviceUnavailable("CUPTI backend: CUPTI is already driven through another CUPTI layer in this process");
    const std::size_t want = (std::max(cfg.buffer_size, kMinBufferBytes) + 7) / 8 * 8;
    if (refs_ == 0) {
      const HubMode mode = parse_hub_mode(cfg.mode);  // throws before CUPTI is touched
      // Before setup: CUPTI may ask for a buffer as soon as activity is on.
      // The pool's buffers are mapped and touched now, not on the launching thread.
      pool_.reserve(want, tuning.resident_buffers);
      try {
        setup_locked(api, mode);
      } catch (...) {
        pool_.clear();
        throw;
      }
    } else if (want > pool_.size()) {
      pool_.reserve(want, tuning.resident_buffers);
    }
    if (api.describe_devices) api.describe_devices(sink);
    const std::uint64_t id = ++next_id_;
    const bool pc = cfg.pc_sampling.enabled && start_pc_sampling_locked(api, cfg);
    {
      std::lock_guard d(deliver_mu_);
      clients_.push_back({id, &sink, steady_ns(), pc});
    }
    ++refs_;
    sessions_.store(refs_);
    return id;
  }

  void flush(std::uint32_t wait_ms) {
    std::lock_guard lk(mu_);
    if (refs_ > 0) flush_locked(wait_ms);
  }

  void detach(std::uint64_t id, std::uint32_t wait_ms, bool final_flush) {
    std::lock_guard lk(mu_);
    bool found = false;
    {
      std::lock_guard d(deliver_mu_);
      for (const auto& c : clients_) found |= c.id == id;
    }
    if (!found) return;
    bool pc = false;
    {
      std::lock_guard d(deliver_mu_);
      for (const auto& c : clients_) pc |= c.id == id && c.pc_sampling;
    }
    if (pc && --pc_clients_ == 0 && refs_ > 1) {  // the last session sampling: stop (teardown does it otherwise)
      if (final_flush) flush_locked(wait_ms);
      pc_on_.store(false);
      pcs_.shutdown([&](const PcSamples& s) { deliver_pc(s); });
      set_kernel_kind_locked(*api_.load(), base_kind_);
    }
    if (refs_ == 1) {
      const Api& api = *api_.load();
      if (final_flush) {
        if (api.synchronize_current) api.synchronize_current();  // opportunistic, as Proton does
        flush_locked(wait_ms);
      }
      teardown_locked(/*detach_cupti=*/final_flush);
    }
    {
      std::lock_guard d(deliver_mu_);
      std::erase_if(clients_, [&](const Client& c) { return c.id == id; });
    }
    --refs_;
    sessions_.store(refs_);
  }

  Counters counters() {
    Counters c{records_.load(), incomplete_.load(), dropped_.load(), sessions_.load()};
    c.graph_launches = graph_launches_.load();
    c.captured_launches = captured_launches_.load();
    c.pc_sampling = pcs_.stats();
    c.buffers = pool_.stats();
    c.client_zeroes_buffers = client_zeroes_.load();
    c.kernel_kind = kernel_kind_.load();
    c.flush_calls = flush_calls_.load();
    c.finalizes = finalizes_.load();
    c.per_thread_buffers = per_thread_.load();
    c.buffers_completed = buffers_completed_.load();
    {
      std::lock_guard k(knobs_mu_);
      c.knobs = knobs_;
    }
    std::lock_guard g(graph_mu_);
    c.graph_execs = exec_kernels_.size();
    return c;
  }

  // ---- CUPTI callbacks ----

  static void CUPTIAPI on_api(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                              const void* data) {
    // Only launch entry points are enabled. A runtime launch may call a driver
    // launch inside it; the kernel record carries the outermost (runtime) id.
    if (!userdata || !data) return;
    auto* hub = static_cast<Hub*>(userdata);
    ThreadLaunch& t = t_launch;
    if (const std::uint64_t e = hub->epoch_.load(std::memory_order_relaxed); e != t.epoch) {
      t = ThreadLaunch{};  // a new subscription: forget a launch cut in half by the last teardown
      t.epoch = e;
    }
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      const auto* rd = static_cast<const CUpti_ResourceData*>(data);
      if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED || cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING ||
          cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        hub->on_pc_resource(cbid, rd);
      else
        hub->on_resource(t, cbid, rd);
      return;
    }
    const auto* cb = static_cast<const CUpti_CallbackData*>(data);
    const bool enter = cb->callbackSite == CUPTI_API_ENTER;
    const bool graph = is_graph_launch(domain, cbid);
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      if (enter) {
        if (t.runtime_depth++ == 0) hub->launch_enter(t, cb, graph);
      } else if (t.runtime_depth > 0 && --t.runtime_depth == 0) {
        hub->launch_exit(t, cb);
      }
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && t.runtime_depth == 0) {
      if (enter) hub->launch_enter(t, cb, graph);
      else hub->launch_exit(t, cb);
    }
  }

  static void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                           std::size_t* max_records) {
    // On the thread that needs room for a record: usually the launching
    // thread. A pooled buffer, already zero and resident: nothing to do here.
    Hub& h = instance();
    std::size_t n = 0;
    *buffer = h.pool_.take(&n);
    *size = n;  // 0: CUPTI drops records (counted, reported)
    *max_records = 0;
  }

  static void CUPTIAPI on_buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                                           std::size_t size, std::size_t valid) {
    Hub& h = instance();
    h.buffers_completed_.fetch_add(1, std::memory_order_relaxed);
    try {
      if (buffer && valid > 0) h.deliver(buffer, valid);
      h.count_dropped(ctx, stream);
    } catch (...) {
    }
    h.pool_.give(buffer, size, valid);  // zeroed for its next use, off the launching thread
  }

 private:
  struct Client {
    std::uint64_t id;
    Sink* sink;
    std::uint64_t start_mono;  // records of kernels that ended before the session started are not its
    bool pc_sampling = false;  // it asked for PC sampling (and got it)
  };

  /// PC sampling for a session that asks for it (mu_ held); false, with a
  /// message, when this CUPTI cannot. The first session's settings hold while
  /// any sampling session is attached.
  bool start_pc_sampling_locked(const Api& api, const BackendConfig& cfg) {
    if (const std::string missing = missing_pc_sampling(api); !missing.empty()) {
      warn("PC sampling unavailable: {} lacks {} (CUPTI too old?). Session '{}' records kernels without PC samples",
           api.library, missing, cfg.session_name);
      return false;
    }
    // CUpti_PCSamplingPCData gained correlationId in CUPTI 12.4 (API version
    // 22): an older libcupti lays the PC records out differently from the
    // header compiled here, and they would be misread.
    if (std::uint32_t v = 0; api.get_version && api.get_version(&v) == CUPTI_SUCCESS && v < 22) {
      warn("PC sampling unavailable: {} has CUPTI API version {}, older than CUPTI 12.4 (22), whose PC record "
           "layout tilejit is built against. Session '{}' records kernels without PC samples",
           api.library, v, cfg.session_name);
      return false;
    }
    if (pc_clients_ > 0) {
      warn("PC sampling: session '{}' shares the PC sampling another session configured (one per process); "
           "its own pc_sampling settings are not applied",
           cfg.session_name);
    } else {
      pcs_.configure(api, cfg.pc_sampling);
      for (CUpti_CallbackId cb : kPcResources) api.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cb);
      // As Proton does: PC sampling with concurrent-kernel records is not
      // supported, so kernel records come from the KERNEL kind while sampling.
      // (Kernel-serialized sampling serializes launches anyway.)
      set_kernel_kind_locked(api, CUPTI_ACTIVITY_KIND_KERNEL);
      pc_on_.store(true);
    }
    ++pc_clients_;
    return true;
  }

  /// Kernel records from `kind` (CONCURRENT_KERNEL or KERNEL; mu_ held). The
  /// two cannot be on together: the other is disabled first. If `kind` cannot
  /// be enabled, the other is turned back on.
  void set_kernel_kind_locked(const Api& api, CUpti_ActivityKind kind) {
    const int now = kernel_kind_.load();
    if (now == 0 || now == static_cast<int>(kind)) return;  // kernel records off (diagnostic mode), or already so
    api.activity_disable(static_cast<CUpti_ActivityKind>(now));
    if (CUptiResult r = api.activity_enable(kind); r != CUPTI_SUCCESS) {
      warn("cuptiActivityEnable({}) failed: {}; kernel records keep coming from activity kind {}",
           static_cast<int>(kind), describe(api, r), now);
      api.activity_enable(static_cast<CUpti_ActivityKind>(now));
      return;
    }
    kernel_kind_.store(static_cast<int>(kind));
  }

  void deliver_pc(const PcSamples& s) {
    std::lock_guard d(deliver_mu_);
    for (const Client& c : clients_) c.sink->pc_samples(s);
  }

  void on_pc_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* rd) {
    if (!pc_on_.load(std::memory_order_relaxed) || !rd) return;
    auto deliver = [this](const PcSamples& s) { deliver_pc(s); };
    const auto* m = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED && m) pcs_.module_loaded(*m);
    else if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING && m) pcs_.module_unloading(rd->context, *m, deliver);
    else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) pcs_.context_destroying(rd->context, deliver);
  }

  void setup_locked(const Api& api, const HubMode& mode) {
    std::string why;
    if (!api.driver_ready || !api.driver_ready(&why))
      throw DeviceUnavailable("CUPTI backend: no usable CUDA device (" + why + ")");
    api_.store(&api);
    CUpti_SubscriberHandle sub = nullptr;
    CUptiResult r;
    char holder[128] = {};
    if (api.subscribe_v2) {
      CUpti_SubscriberParams p{};
      p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
      p.subscriberName = "tilejit profiler";
      p.oldSubscriberName = holder;
      p.oldSubscriberSize = sizeof holder;
      r = api.subscribe_v2(&sub, &Hub::on_api, this, &p);
    } else {
      r = api.subscribe(&sub, &Hub::on_api, this);
    }
    holder[sizeof holder - 1] = 0;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      throw DeviceUnavailable(fmt::format(
          "CUPTI is already in use by another profiler{} — cuptiSubscribe returned {}. Only one CUPTI "
          "client can run in a process (Nsight Systems, Nsight Compute, cuda-gdb, compute-sanitizer, "
          "Kineto/torch.profiler, Proton and tilejit each need it alone)",
          holder[0] ? fmt::format(" ('{}')", holder) : std::string(), describe(api, r)));
    if (r != CUPTI_SUCCESS)
      throw DeviceUnavailable("CUPTI backend: cuptiSubscribe failed: " + describe(api, r) + " [" +
                              api.library + "]");
    subscriber_ = sub;
    const CUpti_ActivityKind kind = mode.serial_kernels ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    auto fail = [&](const std::string& what, CUptiResult res, bool activity_on) {
      if (activity_on) api.activity_disable(kind);
      kernel_kind_.store(0);
      restore_attributes_locked(api);
      api.unsubscribe(subscriber_);
      subscriber_ = nullptr;
      std::string hint;
      if (res == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
        hint = " (profiling needs NVreg_RestrictProfilingToAdminUsers=0 or root)";
      throw DeviceUnavailable("CUPTI backend: " + what + " failed: " + describe(api, res) + hint);
    };
    // Attributes, before the buffer callbacks are registered and any kind is
    // enabled (CUPTI requires it for the second); the values found are put
    // back at teardown for whoever uses CUPTI next.
    //  * ZEROED_OUT_ACTIVITY_BUFFER = 1: our buffers arrive zeroed
    //    (BufferPool), so CUPTI does not memset each one on the thread that
    //    asks for it — the launching thread.
    //  * PER_THREAD_ACTIVITY_BUFFER = 1: each launching thread writes its
    //    records into its own buffer, without a lock shared with other
    //    threads (CUPTI 12.3+; the default in CUDA 13, set for older ones).
    //  * The "cupti:" knobs (HubMode), CUPTI's defaults where not asked for.
    client_zeroes_.store(set_attribute_locked(api, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, zeroed_out_, 1));
    per_thread_.store(set_attribute_locked(api, CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, per_thread_attr_,
                                           mode.per_thread_buffers ? 1 : 0) &&
                      mode.per_thread_buffers);
    apply_knobs_locked(api, mode);
    // Activity first, then the launch callbacks: a launch bound before its
    // kernel can be recorded would wait for a record that never comes.
    // Registered at every subscription (another tool may have registered its
    // own in between); a refusal after an earlier success keeps ours.
    r = api.activity_register_callbacks(&Hub::on_buffer_requested, &Hub::on_buffer_completed);
    if (r != CUPTI_SUCCESS && registered_with_ != &api) fail("cuptiActivityRegisterCallbacks", r, false);
    registered_with_ = &api;
    // After registration (CUPTI needs the buffer callbacks first), before any kind is on.
    if (mode.flush_period_ms) {
      const CUptiResult fr = api.activity_flush_period ? api.activity_flush_period(*mode.flush_period_ms)
                                                       : CUPTI_ERROR_NOT_SUPPORTED;
      flush_period_set_ = fr == CUPTI_SUCCESS;
      knob_result_locked(api, fmt::format("flush_period={}", *mode.flush_period_ms), flush_period_set_, fr);
    }
    kernel_kind_.store(0);
    base_kind_ = kind;
    if (mode.kernel_activity) {
      r = api.activity_enable(kind);
      if (r != CUPTI_SUCCESS)
        fail(mode.serial_kernels ? "cuptiActivityEnable(KERNEL)" : "cuptiActivityEnable(CONCURRENT_KERNEL)", r, false);
      kernel_kind_.store(kind);
    }
    if (mode.launch_callbacks) {
      int enabled = 0;
      CUptiResult last = CUPTI_SUCCESS;
      for (CUpti_CallbackId id : kDriverLaunches) {  // an id an older CUPTI lacks is skipped
        CUptiResult e = api.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
        if (e == CUPTI_SUCCESS) ++enabled;
        else last = e;
      }
      for (CUpti_CallbackId id : kRuntimeLaunches) {
        CUptiResult e = api.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, id);
        if (e == CUPTI_SUCCESS) ++enabled;
        else last = e;
      }
      if (enabled == 0) fail("cuptiEnableCallback (launch callbacks)", last, mode.kernel_activity);
      // CUDA graphs: graph launches and the resource events that give capture
      // sites. Without cuptiGetGraphNodeId graph kernels are attributed flat.
      graphs_ = api.get_graph_node_id != nullptr;
      for (CUpti_CallbackId id : kDriverGraphLaunches) api.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
      for (CUpti_CallbackId id : kRuntimeGraphLaunches) api.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, id);
      if (graphs_)
        for (CUpti_CallbackId id : kGraphResources) api.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, id);
    } else {
      graphs_ = false;
    }
    launched_max_.store(0);
    delivered_max_.store(0);
    epoch_.fetch_add(1);
    std::lock_guard d(deliver_mu_);
    first_ = sample(api);
    latest_ = first_;
    clock_ = fit_clock(first_, latest_);
  }

  /// A uint8_t activity attribute that setup sets to 1 and teardown puts back.
  struct Attribute {
    bool set = false;      // we set it
    bool known = false;    // `before` was read
    std::uint8_t before = 0;
  };
  /// Set `a` to `value` (mu_ held); true if CUPTI took it.
  bool set_attribute_locked(const Api& api, CUpti_ActivityAttribute a, Attribute& keep, std::uint8_t value) {
    keep = Attribute{};
    if (!api.activity_set_attribute) return false;
    std::uint8_t old = 0, on = value;
    std::size_t n = sizeof old;
    keep.known = api.activity_get_attribute && api.activity_get_attribute(a, &n, &old) == CUPTI_SUCCESS;
    keep.before = old;
    n = sizeof on;
    keep.set = api.activity_set_attribute(a, &n, &on) == CUPTI_SUCCESS;
    return keep.set;
  }
  void restore_attribute_locked(const Api& api, CUpti_ActivityAttribute a, Attribute& keep) {
    if (!std::exchange(keep.set, false) || !api.activity_set_attribute) return;
    std::uint8_t v = keep.known ? keep.before : 0;
    std::size_t n = sizeof v;
    api.activity_set_attribute(a, &n, &v);
  }
  /// Put the attributes back as setup found them.
  void restore_attributes_locked(const Api& api) {
    restore_attribute_locked(api, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, zeroed_out_);
    restore_attribute_locked(api, CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, per_thread_attr_);
    client_zeroes_.store(false);
    per_thread_.store(false);
    // The knobs, last set first.
    for (auto it = knob_attrs_.rbegin(); it != knob_attrs_.rend(); ++it) {
      std::size_t n = it->size;
      if (it->known && api.activity_set_attribute) api.activity_set_attribute(it->attr, &n, it->before);
    }
    knob_attrs_.clear();
    if (std::exchange(flush_period_set_, false) && api.activity_flush_period) api.activity_flush_period(0);
    if (std::exchange(hw_trace_set_, false) && api.activity_enable_hw_trace) api.activity_enable_hw_trace(0);
  }

  /// A knob's outcome (mu_ held): appended to knobs_, and a refusal said on stderr.
  void knob_result_locked(const Api& api, const std::string& what, bool ok, CUptiResult r) {
    std::lock_guard k(knobs_mu_);
    if (!knobs_.empty()) knobs_ += ' ';
    knobs_ += what;
    if (ok) return;
    const std::string why = describe(api, r);
    knobs_ += " (refused: " + why + ")";
    warn("CUPTI refused the mode knob '{}': {}; the session goes on without it", what, why);
  }
  /// Set an activity attribute of `size` bytes for a knob (mu_ held); the value found is put back at teardown.
  void knob_attribute_locked(const Api& api, CUpti_ActivityAttribute a, const void* value, std::size_t size,
                             const std::string& what) {
    KnobAttribute keep{a, size};
    CUptiResult r = CUPTI_ERROR_NOT_SUPPORTED;
    if (api.activity_set_attribute) {
      std::size_t n = size;
      keep.known = api.activity_get_attribute && api.activity_get_attribute(a, &n, keep.before) == CUPTI_SUCCESS &&
                   n == size;
      n = size;
      r = api.activity_set_attribute(a, &n, const_cast<void*>(value));
      if (r == CUPTI_SUCCESS) knob_attrs_.push_back(keep);
    }
    knob_result_locked(api, what, r == CUPTI_SUCCESS, r);
  }
  /// The HubMode knobs that are activity attributes or switches (mu_ held; before the buffer
  /// callbacks are registered and any kind is enabled). Kernel kind and flush period: setup_locked.
  void apply_knobs_locked(const Api& api, const HubMode& mode) {
    {
      std::lock_guard k(knobs_mu_);
      knobs_.clear();
      if (mode.serial_kernels) knobs_ = "kind=serial";
      if (!mode.per_thread_buffers) knobs_ += std::string(knobs_.empty() ? "" : " ") + "per_thread=off";
    }
    if (mode.host_pinned) {
      const std::uint8_t v = *mode.host_pinned ? 1 : 0;
      knob_attribute_locked(api, CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &v, sizeof v,
                            v ? "pinned=on" : "pinned=off");
    }
    auto size_knob = [&](const std::optional<std::size_t>& v, CUpti_ActivityAttribute a, const char* name) {
      if (!v) return;
      const std::size_t value = *v;
      knob_attribute_locked(api, a, &value, sizeof value, fmt::format("{}={}", name, value));
    };
    size_knob(mode.device_buffer_bytes, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, "device_buffer");
    size_knob(mode.device_buffer_pool_limit, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, "pool_limit");
    size_knob(mode.device_buffer_preallocate, CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, "preallocate");
    if (mode.hw_trace) {
      const CUptiResult r = api.activity_enable_hw_trace ? api.activity_enable_hw_trace(1) : CUPTI_ERROR_NOT_SUPPORTED;
      hw_trace_set_ = r == CUPTI_SUCCESS;
      knob_result_locked(api, "hw_trace=on", hw_trace_set_, r);
    }
  }

  /// `detach_cupti`: the calling thread's context was synchronized and every
  /// buffer flushed — what cuptiFinalize needs (not so from a destructor).
  void teardown_locked(bool detach_cupti) {
    const Api& api = *api_.load();
    if (pc_on_.load()) {
      pc_clients_ = 0;
      pc_on_.store(false);
      pcs_.shutdown([&](const PcSamples& s) { deliver_pc(s); });
    }
    if (const int k = kernel_kind_.exchange(0); k != 0) api.activity_disable(static_cast<CUpti_ActivityKind>(k));
    // Every buffer back, records of kernels still running included (they are
    // incomplete: counted and dropped); the sinks are still attached here.
    api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    restore_attributes_locked(api);
    if (subscriber_) api.unsubscribe(subscriber_);  // frees CUPTI for another profiler
    subscriber_ = nullptr;
    // Unsubscribing leaves CUPTI attached to the process, its hooks in the
    // driver: every launch after the session would still pay for them (on
    // the H200, BM_TinyLaunches/3 — no CUPTI session — ran 1.11x slower after
    // the CUPTI sessions before it). Detach it, as Proton does; the next
    // session attaches it again (and registers its buffer callbacks again).
    if (detach_cupti && api.finalize) {
      api.finalize();
      finalizes_.fetch_add(1, std::memory_order_relaxed);
      registered_with_ = nullptr;
    }
    // Graph events are no longer seen: nodes destroyed from now on would stay.
    clear_graph_nodes();
    {
      std::lock_guard g(graph_mu_);
      exec_kernels_.clear();
    }
    pool_.clear();  // every buffer came back with the forced flush; a straggler is unmapped when it does
  }

  void flush_locked(std::uint32_t wait_ms) {
    const Api& api = *api_.load();
    {
      std::lock_guard d(deliver_mu_);
      recalibrate_locked(api);
    }
    // CUPTI hands back a buffer only when every record in it is complete, so
    // completed records can sit behind a kernel still running: retry until the
    // record of the last launch made before this flush has come, or wait_ms.
    if (pc_on_.load()) pcs_.drain_all([&](const PcSamples& s) { deliver_pc(s); });  // continuous mode
    // Each try takes CUPTI's buffers from the launching threads: the wait
    // between tries grows (0.1 ms to 2 ms) rather than polling a busy GPU.
    const std::uint64_t target = launched_max_.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    auto pause = std::chrono::microseconds(100);
    for (;;) {
      api.activity_flush_all(0);
      flush_calls_.fetch_add(1, std::memory_order_relaxed);
      if (delivered_max_.load() >= target) break;
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }

  static ClockSample sample(const Api& api) {
    Bracket b[5];
    for (auto& x : b) {
      x.mono_before = steady_ns();
      std::uint64_t c = 0;
      api.get_timestamp(&c);
      x.cupti_ns = c;
      x.mono_after = steady_ns();
    }
    return best_sample(b, 5);
  }

  /// Under deliver_mu_.
  void recalibrate_locked(const Api& api) {
    latest_ = sample(api);
    clock_ = fit_clock(first_, latest_);
  }

  // ---- launches and graphs (on the calling thread) ----

  void launch_enter(ThreadLaunch& t, const CUpti_CallbackData* cb, bool graph) {
    t.correlation = cb->correlationId;
    t.graph = graph;
    t.captured = false;
    t.graph_kernels = 0;
    if (!graph) {
      correlate_launch(cb->correlationId);
      if (pc_on_.load(std::memory_order_relaxed)) t.pc_range = pcs_.launch_enter(cb->context);
      return;
    }
    graph_launches_.fetch_add(1, std::memory_order_relaxed);
    const Api* api = api_.load();
    std::uint32_t exec_id = 0;
    if (api && api->get_graph_exec_id && cb->functionParams) {
      const CUgraphExec exec = *static_cast<const CUgraphExec*>(cb->functionParams);
      if (exec && api->get_graph_exec_id(exec, &exec_id) == CUPTI_SUCCESS) {
        std::lock_guard g(graph_mu_);
        if (auto it = exec_kernels_.find(exec_id); it != exec_kernels_.end()) t.graph_kernels = it->second;
      }
    }
    correlate_graph_launch(cb->correlationId, t.graph_kernels);
  }

  void launch_exit(ThreadLaunch& t, const CUpti_CallbackData* cb) {
    if (t.captured) captured_launches_.fetch_add(1, std::memory_order_relaxed);  // no kernel will run
    else if (!t.graph || t.graph_kernels > 0) launched(cb);  // flush waits for its record(s)
    if (t.pc_range) pcs_.launch_exit(std::exchange(t.pc_range, nullptr));  // records this launch's samples here
    t.correlation = 0;
    t.captured = false;
    t.graph = false;
  }

  std::uint64_t node_id(const Api& api, CUgraphNode node) {
    std::uint64_t id = 0;
    return node && api.get_graph_node_id(node, &id) == CUPTI_SUCCESS ? id : 0;
  }

  void on_resource(ThreadLaunch& t, CUpti_CallbackId cbid, const CUpti_ResourceData* rd) {
    const Api* api = api_.load();
    if (!api || !graphs_ || !rd || !rd->resourceDescriptor) return;
    const auto* g = static_cast<const CUpti_GraphData*>(rd->resourceDescriptor);
    switch (cbid) {
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: {
        if (t.instantiating) break;  // the executable graph's own nodes: their sites come as clones
        if (const std::uint64_t id = node_id(*api, g->node)) graph_node_captured(id);
        if (t.correlation != 0 && !t.graph && !t.captured) {
          t.captured = true;  // a launch into a capturing stream: no kernel now
          cancel_launch(t.correlation);
        }
        break;
      }
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: {
        const std::uint64_t original = node_id(*api, g->originalNode), clone = node_id(*api, g->node);
        if (original && clone) graph_node_cloned(original, clone);
        if (t.instantiating && g->nodeType == CU_GRAPH_NODE_TYPE_KERNEL) ++t.cloned_kernels;
        break;
      }
      case CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING:
        if (const std::uint64_t id = node_id(*api, g->node)) graph_node_destroyed(id);
        break;
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING:
        t.instantiating = true;
        t.cloned_kernels = 0;
        break;
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED: {
        t.instantiating = false;
        std::uint32_t exec_id = 0;
        if (g->graphExec && api->get_graph_exec_id &&
            api->get_graph_exec_id(g->graphExec, &exec_id) == CUPTI_SUCCESS) {
          std::lock_guard lk(graph_mu_);
          if (t.cloned_kernels > 0) exec_kernels_[exec_id] = t.cloned_kernels;
          else exec_kernels_.erase(exec_id);  // unknown: its launches age out
        }
        break;
      }
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING: {
        std::uint32_t exec_id = 0;
        if (g->graphExec && api->get_graph_exec_id &&
            api->get_graph_exec_id(g->graphExec, &exec_id) == CUPTI_SUCCESS) {
          std::lock_guard lk(graph_mu_);
          exec_kernels_.erase(exec_id);
        }
        break;
      }
      default:
        break;
    }
  }

  void launched(const CUpti_CallbackData* cb) {
    // functionReturnValue: a CUresult (driver) or cudaError_t (runtime); 0 is success.
    const int rc = cb->functionReturnValue ? *static_cast<const int*>(cb->functionReturnValue) : 0;
    if (rc == 0) atomic_max(launched_max_, cb->correlationId);
  }

  void deliver(std::uint8_t* buffer, std::size_t valid) {
    const Api* api = api_.load();
    if (!api) return;
    std::lock_guard d(deliver_mu_);
    if (steady_ns() - latest_.mono_ns > kRecalibrateNs) recalibrate_locked(*api);
    // Records go to the sinks in batches (Sink::kernels: one lock per batch,
    // not per record), converted into reused KernelRecords (no allocation).
    std::size_t n = 0;
    std::uint64_t batch_max = 0;
    auto hand_over = [&] {
      const std::span<const KernelRecord> all(batch_.data(), n);
      for (const Client& c : clients_)
        for (std::size_t i = 0; i < n;) {  // runs of records that ended after the client started
          while (i < n && all[i].end_ns < c.start_mono) ++i;
          std::size_t j = i;
          while (j < n && all[j].end_ns >= c.start_mono) ++j;
          if (j > i) c.sink->kernels(all.subspan(i, j - i));
          i = j;
        }
      atomic_max(delivered_max_, batch_max);  // after the sinks have them: flush() waits on this
      n = 0;
    };
    CUpti_Activity* rec = nullptr;
    while (api->activity_get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
        continue;
      // CUpti_ActivityKernel4..10 agree on every field read (kind .. name).
      if (!to_kernel_record(*reinterpret_cast<const CUpti_ActivityKernel10*>(rec), clock_, batch_[n])) {
        incomplete_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      records_.fetch_add(1, std::memory_order_relaxed);
      batch_max = std::max(batch_max, batch_[n].correlation_id);
      if (++n == batch_.size()) hand_over();
    }
    if (n > 0) hand_over();
  }

  void count_dropped(CUcontext ctx, std::uint32_t stream) {
    const Api* api = api_.load();
    if (!api) return;
    std::size_t n = 0;
    if (api->activity_get_num_dropped_records(ctx, stream, &n) != CUPTI_SUCCESS || n == 0) return;
    dropped_.fetch_add(n, std::memory_order_relaxed);
    if (!warned_dropped_.exchange(true))
      warn("CUPTI dropped {} kernel record(s): its activity buffers were full. Raise "
           "Options::buffer_size (now {} bytes)",
           n, pool_.size());
  }

  std::mutex mu_;  // attach, detach, flush: CUPTI setup and teardown. Before deliver_mu_.
  int refs_ = 0;
  std::uint64_t next_id_ = 0;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  const Api* registered_with_ = nullptr;  // the layer our buffer callbacks were last registered with
  std::atomic<const Api*> api_{nullptr};
  std::atomic<std::uint64_t> epoch_{0};  // bumped at each subscription
  std::atomic<int> sessions_{0};

  std::mutex deliver_mu_;  // clients_, the clock; held while records go to the sinks
  std::array<KernelRecord, 64> batch_;  // under deliver_mu_: records on their way to the sinks
  std::vector<Client> clients_;
  ClockSample first_, latest_;
  ClockMap clock_;

  BufferPool pool_;                        // activity buffers (its own lock)
  std::atomic<bool> client_zeroes_{false};  // CUPTI told ZEROED_OUT_ACTIVITY_BUFFER = 1 (mu_ to change)
  std::atomic<bool> per_thread_{false};     // CUPTI told PER_THREAD_ACTIVITY_BUFFER = 1
  Attribute zeroed_out_, per_thread_attr_;  // what setup found (under mu_)
  struct KnobAttribute {                    // an attribute a "cupti:" knob set (under mu_)
    CUpti_ActivityAttribute attr;
    std::size_t size = 0;
    bool known = false;                     // `before` was read
    alignas(8) std::uint8_t before[8] = {};
  };
  std::vector<KnobAttribute> knob_attrs_;
  bool flush_period_set_ = false, hw_trace_set_ = false;  // under mu_
  CUpti_ActivityKind base_kind_ = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;  // the mode's kernel kind (under mu_)
  mutable std::mutex knobs_mu_;
  std::string knobs_;                       // Counters::knobs
  std::atomic<std::uint64_t> finalizes_{0};
  std::atomic<int> kernel_kind_{0};         // activity kind of kernel records now; 0: none
  std::atomic<std::uint64_t> flush_calls_{0}, buffers_completed_{0};

  std::atomic<std::uint64_t> launched_max_{0}, delivered_max_{0};
  std::atomic<std::uint64_t> records_{0}, incomplete_{0}, dropped_{0};
  std::atomic<bool> warned_dropped_{false};

  PcSampler pcs_;
  int pc_clients_ = 0;               // attached sessions sampling (under mu_)
  std::atomic<bool> pc_on_{false};   // pcs_ configured: launches check this first

  bool graphs_ = false;  // graph resource callbacks on (cuptiGetGraphNodeId present)
  std::mutex graph_mu_;
  std::unordered_map<std::uint32_t, std::uint32_t> exec_kernels_;  // graph exec id -> kernel nodes
  std::atomic<std::uint64_t> graph_launches_{0}, captured_launches_{0};
};

class CuptiBackend final : public Backend {
 public:
  CuptiBackend(const Api* api, Tuning tuning) : api_(api), tuning_(tuning) {}
  ~CuptiBackend() override {
    if (id_) Hub::instance().detach(id_, 0, /*final_flush=*/false);
  }

  void start(Sink& sink, const BackendConfig& config) override {
    const Api* api = api_;
    if (!api) {
      std::string why;
      api = real_api(&why);
      if (!api) throw DeviceUnavailable("CUPTI backend: " + why);
    }
    id_ = Hub::instance().attach(*api, sink, config, tuning_);
  }
  void flush() override {
    if (id_) Hub::instance().flush(tuning_.flush_wait_ms);
  }
  void stop() override {
    if (id_) Hub::instance().detach(std::exchange(id_, 0), tuning_.flush_wait_ms, /*final_flush=*/true);
  }

 private:
  const Api* api_;
  Tuning tuning_;
  std::uint64_t id_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const Api* api, Tuning tuning) {
  return std::make_unique<CuptiBackend>(api, tuning);
}

Counters counters() { return Hub::instance().counters(); }

namespace {
/// A decimal count with an optional binary suffix K, M or G (suffixes only where `sized`); nullopt if malformed
/// or out of range.
std::optional<std::uint64_t> parse_count(std::string_view v, bool sized) {
  std::uint64_t scale = 1;
  if (sized && !v.empty()) {
    const char last = v.back();
    if (last == 'K' || last == 'k') scale = 1ull << 10;
    else if (last == 'M' || last == 'm') scale = 1ull << 20;
    else if (last == 'G' || last == 'g') scale = 1ull << 30;
    if (scale != 1) v.remove_suffix(1);
  }
  if (v.empty() || v.size() > 12) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n * scale;
}
}  // namespace

HubMode parse_hub_mode(std::string_view mode) {
  HubMode m;
  constexpr std::string_view kPrefix = "cupti:";
  if (mode.substr(0, kPrefix.size()) != kPrefix) return m;
  std::string_view rest = mode.substr(kPrefix.size());
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view tok = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const std::size_t eq = tok.find('=');
    const std::string_view key = tok.substr(0, eq);
    const std::string_view val = eq == std::string_view::npos ? std::string_view{} : tok.substr(eq + 1);
    auto bad = [&](std::string_view expected) {
      return InvalidArgument(fmt::format("cupti backend: mode token '{}' in '{}': {} (tokens: activity=on|off, "
                                         "callbacks=on|off, kind=concurrent|serial, per_thread=on|off, pinned=on|off, "
                                         "device_buffer=<bytes>[K|M|G], pool_limit=<n>, preallocate=<n>, "
                                         "flush_period=<ms>, hw_trace=on|off)",
                                         tok, mode, expected));
    };
    auto on_off = [&]() {
      if (val != "on" && val != "off") throw bad(fmt::format("{} is on or off", key));
      return val == "on";
    };
    auto count = [&](bool sized, std::uint64_t min, std::uint64_t max) {
      const auto n = parse_count(val, sized);
      if (!n || *n < min || *n > max)
        throw bad(fmt::format("{} is a number from {} to {}{}", key, min, max, sized ? " (bytes; K, M, G suffixes)" : ""));
      return *n;
    };
    if (key == "activity") m.kernel_activity = on_off();
    else if (key == "callbacks") m.launch_callbacks = on_off();
    else if (key == "per_thread") m.per_thread_buffers = on_off();
    else if (key == "pinned") m.host_pinned = on_off();
    else if (key == "hw_trace") m.hw_trace = on_off();
    else if (key == "kind") {
      if (val != "concurrent" && val != "serial") throw bad("kind is concurrent or serial");
      m.serial_kernels = val == "serial";
    } else if (key == "device_buffer") m.device_buffer_bytes = count(true, 4096, 1ull << 32);
    else if (key == "pool_limit") m.device_buffer_pool_limit = count(false, 1, 1'000'000);
    else if (key == "preallocate") m.device_buffer_preallocate = count(false, 0, 1'000'000);
    else if (key == "flush_period") m.flush_period_ms = static_cast<std::uint32_t>(count(false, 0, 3'600'000));
    else throw bad("unknown token");
  }
  return m;
}

std::string report(const Counters& c) {
  const auto& b = c.buffers;
  const auto& p = c.pc_sampling;
  const char* kind = c.kernel_kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? "CONCURRENT_KERNEL"
                     : c.kernel_kind == CUPTI_ACTIVITY_KIND_KERNEL         ? "KERNEL"
                                                                            : "none";
  std::string out = fmt::format(
      "cupti: {} records ({} incomplete, {} dropped); kernel kind {}; buffers of {} MiB: {} mapped ({} resident), "
      "{} out, {} handed out ({} mapped on demand), {} completed; CUPTI zeroes buffers: {}; per-thread buffers: {}; "
      "{} flush calls; CUPTI detached {} time(s){}{}",
      c.records, c.incomplete, c.dropped, kind, b.size >> 20, b.mapped, b.resident, b.out, b.takes, b.extra,
      c.buffers_completed, c.client_zeroes_buffers ? "no (tilejit does)" : "yes",
      c.per_thread_buffers ? "yes" : "not set", c.flush_calls, c.finalizes, c.knobs.empty() ? "" : "; knobs: ",
      c.knobs);
  if (p.ranges > 0 || p.contexts > 0 || p.failed_contexts > 0 || !p.problem.empty())
    out += fmt::format(
        "; PC sampling: {} context(s) ({} failed), {} range(s) ({} empty), {} reads ({} failed), {} samples in PC "
        "records, CUPTI counted {} ({} in non-user kernels, {} dropped), {} PCs from the configuration buffer{}{}",
        p.contexts, p.failed_contexts, p.ranges, p.empty_ranges, p.reads, p.read_errors, p.samples, p.cupti_samples,
        p.nonuser_samples, p.dropped, p.config_buffer_pcs, p.problem.empty() ? "" : "; problem: ", p.problem);
  return out;
}

}  // namespace tilejit::profiler::cupti

namespace tilejit::profiler {
std::string cupti_report() { return cupti::report(cupti::counters()); }
}  // namespace tilejit::profiler

namespace tilejit::profiler::detail {
BackendFactory cupti_backend_factory() {
  return [] { return cupti::make_backend(); };
}
}  // namespace tilejit::profiler::detail

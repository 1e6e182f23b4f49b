// src/profiler/cupti_pc_sampling.cpp — PC sampling through CUPTI's PC Sampling
// API (cupti_pcsampling.h), for the "cupti" backend's hub.
//
//   first launch in a context:  cuptiPCSamplingEnable(ctx)
//                               cuptiPCSamplingGetNumStallReasons / GetStallReasons
//                                 (valid only once enabled)
//                               cuptiPCSamplingSetConfigurationAttribute: period,
//                                 stall reasons (always: all, or the ones asked
//                                 for), scratch / hardware buffer sizes,
//                                 collection mode CONTINUOUS, start/stop control
//                                 (on for kernel-serialized ranges), parsed
//                                 output, the configuration data buffer
//   kernel-serialized launch:   API_ENTER: synchronize the context, cuptiPCSamplingStart
//                               API_EXIT:  synchronize (the kernel has run),
//                                 cuptiPCSamplingStop, read -> aggregate_pc_samples
//                                 -> record_pc_samples on the launching thread
//   continuous:                 read at every flush -> Sink::pc_samples
//   module loaded:              keep the cubin (by cuptiGetCubinCrc) for
//                               cuptiGetSassToSourceCorrelation
//   context destroyed, stop:    read what is left, cuptiPCSamplingDisable(ctx),
//                               read what Disable put in the configuration buffer
//
// Reading ("read" below), as NVIDIA's pc_sampling_continuous sample does: the
// configuration buffer (SAMPLING_DATA_BUFFER) belongs to CUPTI once
// configured — CUPTI puts a range's PC records there and keeps its counters —
// and cuptiPCSamplingGetData is called with a second, separate buffer, until
// neither reports PCs remaining. (The first version of this file passed the
// configuration buffer itself to GetData after zeroing its totalNumPcs: on the
// H200 every range then read nothing — CUPTI took the records it had put there
// as consumed.) PC records CUPTI still leaves in the configuration buffer after
// a range's reads, or puts there at cuptiPCSamplingDisable, are read from it
// directly.
//
// Why CONTINUOUS with start/stop for kernel-serialized ranges, not CUPTI's
// KERNEL_SERIALIZED mode: it is what NVIDIA's pc_sampling_start_stop sample and
// Proton run; the synchronizations around the range make it per-kernel.
//
// Launches in one context are sampled one at a time (a per-context mutex held
// from API entry to exit): ranges cannot overlap.
//
// Nothing fails silently: a failed CUPTI call is reported once with its error
// (Stats::problem keeps the first), and at shutdown, if ranges were sampled
// but no sample came back, one message says what CUPTI counted and why that
// may be (TILEJIT_PC_SAMPLING_TRACE=1 prints every read).
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include <fmt/core.h>

#include "cupti_backend.hpp"

namespace tilejit::profiler::cupti {

std::string missing_pc_sampling(const Api& api) {
  std::string m;
  auto need = [&](const void* p, const char* name) {
    if (!p) m += std::string(m.empty() ? "" : ", ") + name;
  };
  need(reinterpret_cast<const void*>(api.pc_enable), "cuptiPCSamplingEnable");
  need(reinterpret_cast<const void*>(api.pc_disable), "cuptiPCSamplingDisable");
  need(reinterpret_cast<const void*>(api.pc_start), "cuptiPCSamplingStart");
  need(reinterpret_cast<const void*>(api.pc_stop), "cuptiPCSamplingStop");
  need(reinterpret_cast<const void*>(api.pc_get_data), "cuptiPCSamplingGetData");
  need(reinterpret_cast<const void*>(api.pc_set_config), "cuptiPCSamplingSetConfigurationAttribute");
  need(reinterpret_cast<const void*>(api.pc_num_stall_reasons), "cuptiPCSamplingGetNumStallReasons");
  need(reinterpret_cast<const void*>(api.pc_stall_reasons), "cuptiPCSamplingGetStallReasons");
  return m;
}

namespace {

template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  fmt::print(stderr, "[tilejit.profiler] {}\n", fmt::format(f, std::forward<A>(a)...));
}

constexpr int kMaxReadsPerDrain = 1 << 16;  // a guard against a CUPTI that never says "no PC remains"
constexpr std::size_t kMaxLineCache = 1u << 20;

bool trace_reads() {
  static const bool on = [] {
    const char* v = std::getenv("TILEJIT_PC_SAMPLING_TRACE");
    return v && *v && std::string_view(v) != "0";
  }();
  return on;
}

/// A CUpti_PCSamplingData with room for `max_pcs` PC records of `reasons`
/// stall reasons each. Its storage never moves once allocated (CUPTI keeps a
/// pointer to the configuration buffer).
struct PcBuffer {
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> stalls;
  void allocate(std::size_t max_pcs, std::size_t reasons) {
    pcs.assign(max_pcs, CUpti_PCSamplingPCData{});
    stalls.assign(max_pcs * reasons, CUpti_PCSamplingStallReason{});
    for (std::size_t i = 0; i < max_pcs; ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReason = &stalls[i * reasons];
      pcs[i].stallReasonCount = reasons;
    }
    data = CUpti_PCSamplingData{};
    data.size = sizeof(CUpti_PCSamplingData);
    data.collectNumPcs = max_pcs;
    data.pPcData = pcs.data();
  }
};

/// One context's sampling state and its data buffers.
struct Context {
  std::mutex range;  // held from a launch's API entry to its exit (kernel-serialized)
  bool ok = false;
  std::unordered_map<std::uint32_t, std::string> stall_names;  // CUPTI index -> short name
  std::vector<std::uint32_t> selected;                         // stall indices configured
  PcBuffer config;  // SAMPLING_DATA_BUFFER: CUPTI's from configuration on; we only read it
  PcBuffer out;     // where cuptiPCSamplingGetData writes
};

}  // namespace

struct PcSampler::Impl {
  mutable std::mutex mu;  // everything below; never held while a Context::range is waited for
  const Api* api = nullptr;
  PcSamplingOptions options;
  bool on = false;
  std::map<CUcontext, std::unique_ptr<Context>> contexts;
  std::unordered_map<std::uint64_t, std::string> cubins;  // crc -> cubin bytes
  std::unordered_map<std::uint32_t, std::uint64_t> module_crc;  // module id -> crc
  std::unordered_map<std::string, std::optional<std::string>> lines;  // "crc/function/offset" -> "file:line"
  Stats stats;
  bool warned_overflow = false;
  bool warned_problem = false;

  std::string why(CUptiResult r) const { return describe(*api, r); }
  bool serialized() const { return options.collection == PcSamplingOptions::Collection::kernel_serialized; }

  /// A failure that leaves sampling without data: kept (the first) and reported once.
  void problem(std::string what) {
    if (stats.problem.empty()) stats.problem = what;
    if (!std::exchange(warned_problem, true))
      warn("PC sampling: {}. Kernels are still recorded; their PC samples may be missing", what);
  }

  bool set(CUcontext ctx, CUpti_PCSamplingConfigurationInfo* info, std::size_t n, std::string* err) {
    CUpti_PCSamplingConfigurationInfoParams p{};
    p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
    p.ctx = ctx;
    p.numAttributes = n;
    p.pPCSamplingConfigurationInfo = info;
    const CUptiResult r = api->pc_set_config(&p);
    if (r == CUPTI_SUCCESS) return true;
    *err = "cuptiPCSamplingSetConfigurationAttribute: " + why(r);
    for (std::size_t i = 0; i < n; ++i)
      if (info[i].attributeStatus != CUPTI_SUCCESS)
        *err += fmt::format(" (attribute {}: {})", static_cast<int>(info[i].attributeType), why(info[i].attributeStatus));
    return false;
  }

  /// Enable and configure sampling in `ctx` (mu held). On failure: reported once, c.ok false.
  void enable(CUcontext ctx, Context& c) {
    std::string err;
    auto fail = [&](bool disable) {
      if (disable) {
        CUpti_PCSamplingDisableParams d{};
        d.size = CUpti_PCSamplingDisableParamsSize;
        d.ctx = ctx;
        api->pc_disable(&d);
      }
      ++stats.failed_contexts;
      std::string hint;
      if (err.find("NOT_SUPPORTED") != std::string::npos)
        hint = " (the GPU, driver or CUPTI does not support the PC Sampling API: it needs compute capability >= 7.0)";
      else if (err.find("INSUFFICIENT_PRIVILEGES") != std::string::npos)
        hint = " (profiling needs NVreg_RestrictProfilingToAdminUsers=0 or root)";
      const std::string text = fmt::format("unavailable in CUDA context {}: {}{}", static_cast<const void*>(ctx), err, hint);
      if (stats.problem.empty()) stats.problem = text;
      warn("PC sampling {}. Kernels there are recorded without PC samples", text);
    };
    CUpti_PCSamplingEnableParams e{};
    e.size = CUpti_PCSamplingEnableParamsSize;
    e.ctx = ctx;
    if (CUptiResult r = api->pc_enable(&e); r != CUPTI_SUCCESS) {
      err = "cuptiPCSamplingEnable: " + why(r);
      return fail(false);
    }
    // Stall-reason names: only after enabling (the context's sampling object exists then).
    std::size_t n = 0;
    CUpti_PCSamplingGetNumStallReasonsParams np{};
    np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
    np.ctx = ctx;
    np.numStallReasons = &n;
    if (CUptiResult r = api->pc_num_stall_reasons(&np); r != CUPTI_SUCCESS || n == 0) {
      err = "cuptiPCSamplingGetNumStallReasons: " + (r != CUPTI_SUCCESS ? why(r) : std::string("no stall reasons"));
      return fail(true);
    }
    std::vector<std::uint32_t> index(n);
    std::vector<std::vector<char>> text(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
    std::vector<char*> names(n);
    for (std::size_t i = 0; i < n; ++i) names[i] = text[i].data();
    CUpti_PCSamplingGetStallReasonsParams sp{};
    sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
    sp.ctx = ctx;
    sp.numStallReasons = n;
    sp.stallReasonIndex = index.data();
    sp.stallReasons = names.data();
    if (CUptiResult r = api->pc_stall_reasons(&sp); r != CUPTI_SUCCESS) {
      err = "cuptiPCSamplingGetStallReasons: " + why(r);
      return fail(true);
    }
    for (std::size_t i = 0; i < n; ++i) {
      text[i].back() = 0;
      c.stall_names[index[i]] = stall_short_name(text[i].data());
    }
    c.selected.clear();
    if (!options.stall_reasons.empty()) {
      std::string unknown;
      for (const auto& want : options.stall_reasons) {
        bool found = false;
        for (std::size_t i = 0; i < n; ++i)
          if (c.stall_names[index[i]] == want) c.selected.push_back(index[i]), found = true;
        if (!found) unknown += (unknown.empty() ? "" : ", ") + want;
      }
      if (!unknown.empty()) {
        std::string known;
        for (std::size_t i = 0; i < n; ++i) known += (known.empty() ? "" : ", ") + c.stall_names[index[i]];
        warn("PC sampling: stall reason(s) {} not known to this GPU; skipped. Known: {}", unknown, known);
      }
      if (c.selected.empty()) {
        err = "none of the requested stall reasons is known to this GPU";
        return fail(true);
      }
    } else {
      c.selected = index;  // every reason, named explicitly (as NVIDIA's samples configure it)
    }
    // Both buffers hold max_pcs PC records with room for every configured stall reason each.
    c.config.allocate(options.max_pcs, c.selected.size());
    c.out.allocate(options.max_pcs, c.selected.size());

    std::vector<CUpti_PCSamplingConfigurationInfo> info;
    auto attr = [&](CUpti_PCSamplingConfigurationAttributeType t) -> CUpti_PCSamplingConfigurationInfo& {
      info.emplace_back();
      info.back().attributeType = t;
      return info.back();
    };
    if (options.period != 0) attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD).attributeData.samplingPeriodData.samplingPeriod = options.period;
    {
      auto& a = attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
      a.attributeData.stallReasonData.stallReasonCount = c.selected.size();
      a.attributeData.stallReasonData.pStallReasonIndex = c.selected.data();
    }
    if (options.scratch_buffer_size != 0)
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE).attributeData.scratchBufferSizeData.scratchBufferSize = options.scratch_buffer_size;
    if (options.hardware_buffer_size != 0)
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE).attributeData.hardwareBufferSizeData.hardwareBufferSize = options.hardware_buffer_size;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE).attributeData.collectionModeData.collectionMode =
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL).attributeData.enableStartStopControlData.enableStartStopControl = serialized() ? 1 : 0;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT).attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER).attributeData.samplingDataBufferData.samplingDataBuffer = &c.config.data;
    if (!set(ctx, info.data(), info.size(), &err)) return fail(true);
    c.ok = true;
    ++stats.contexts;
  }

  /// The source location of a PC, from the kept cubin (mu held).
  std::optional<std::string> line_of(std::uint64_t crc, const char* function, std::uint64_t offset) {
    if (!api->sass_to_source || !function) return std::nullopt;
    auto cub = cubins.find(crc);
    if (cub == cubins.end()) return std::nullopt;
    std::string key = fmt::format("{:x}/{}/{:x}", crc, function, offset);
    if (auto it = lines.find(key); it != lines.end()) return it->second;
    CUpti_GetSassToSourceCorrelationParams p{};
    p.size = CUpti_GetSassToSourceCorrelationParamsSize;
    p.cubin = cub->second.data();
    p.cubinSize = cub->second.size();
    p.functionName = function;
    p.pcOffset = offset;
    std::optional<std::string> where;
    if (api->sass_to_source(&p) == CUPTI_SUCCESS && p.fileName && p.fileName[0] && p.lineNumber != 0)
      where = fmt::format("{}:{}", p.fileName, p.lineNumber);
    std::free(p.fileName);  // CUPTI allocates both with malloc; the caller frees them
    std::free(p.dirName);
    if (lines.size() >= kMaxLineCache) lines.clear();
    lines.emplace(std::move(key), where);
    return where;
  }

  /// The PC records of `d` to `deliver`; returns how many (mu held).
  std::size_t take(Context& c, const CUpti_PCSamplingData& d, const std::function<void(const PcSamples&)>& deliver) {
    stats.cupti_samples += d.totalSamples;
    stats.nonuser_samples += d.nonUsrKernelsTotalSamples;
    stats.dropped += d.droppedSamples;
    const std::size_t n = std::min<std::size_t>(d.totalNumPcs, d.collectNumPcs);
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t j = 0; j < d.pPcData[k].stallReasonCount && d.pPcData[k].stallReason; ++j)
        stats.samples += d.pPcData[k].stallReason[j].samples;
    if (n > 0 && deliver) {
      CUpti_PCSamplingData view = d;
      view.totalNumPcs = n;
      auto out = aggregate_pc_samples(view, c.stall_names, [&](std::uint64_t crc, const char* fn, std::uint64_t off) {
        return line_of(crc, fn, off);
      });
      for (const auto& s : out) deliver(s);
    }
    return n;
  }

  void trace(CUcontext ctx, const char* what, CUptiResult r, const Context& c) const {
    if (!trace_reads()) return;
    const auto& o = c.out.data;
    const auto& g = c.config.data;
    fmt::print(stderr,
               "[tilejit.profiler] pc read ctx {} {}: rc {} | out: pcs {} remaining {} totalSamples {} nonUser {} "
               "dropped {} range {} full {} | config buffer: pcs {} remaining {} totalSamples {} range {}\n",
               static_cast<const void*>(ctx), what, static_cast<int>(r), o.totalNumPcs, o.remainingNumPcs,
               o.totalSamples, o.nonUsrKernelsTotalSamples, o.droppedSamples, o.rangeId,
               static_cast<int>(o.hardwareBufferFull), g.totalNumPcs, g.remainingNumPcs, g.totalSamples, g.rangeId);
  }

  /// Read every PC CUPTI holds for `ctx` and hand each kernel's samples to
  /// `deliver` (mu held); returns the PC records read. `stable`: no range is
  /// running (after a stop, or after disable), so the configuration buffer is
  /// not being written and PC records left in it can be read from it.
  std::size_t read(CUcontext ctx, Context& c, const std::function<void(const PcSamples&)>& deliver, bool stable) {
    if (!c.ok) return 0;
    std::size_t got = 0;
    for (int i = 0; i < kMaxReadsPerDrain; ++i) {
      CUpti_PCSamplingData& o = c.out.data;  // ours: reset what CUPTI fills in
      o.totalNumPcs = 0;
      o.remainingNumPcs = 0;
      o.totalSamples = 0;
      o.droppedSamples = 0;
      o.nonUsrKernelsTotalSamples = 0;
      o.hardwareBufferFull = 0;
      CUpti_PCSamplingGetDataParams g{};
      g.size = CUpti_PCSamplingGetDataParamsSize;
      g.ctx = ctx;
      g.pcSamplingData = &o;
      const CUptiResult r = api->pc_get_data(&g);
      ++stats.reads;
      trace(ctx, "GetData", r, c);
      if (r == CUPTI_ERROR_OUT_OF_MEMORY || o.hardwareBufferFull) {
        if (!std::exchange(warned_overflow, true))
          warn("PC sampling: CUPTI's hardware buffer filled up and samples were lost; raise "
               "pc_sampling.hardware_buffer_size or the period");
      }
      if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) {
        ++stats.read_errors;
        problem(fmt::format("cuptiPCSamplingGetData in CUDA context {} failed: {}", static_cast<const void*>(ctx),
                            why(r)));
        break;
      }
      const std::size_t n = take(c, o, deliver);
      got += n;
      const bool more = o.remainingNumPcs > 0 || c.config.data.totalNumPcs > 0 || c.config.data.remainingNumPcs > 0;
      if (!more || n == 0) break;
    }
    if (stable && c.config.data.totalNumPcs > 0) {
      // PC records CUPTI left in the configuration buffer (GetData did not
      // move them): read them there, and mark them read.
      trace(ctx, "configuration buffer", CUPTI_SUCCESS, c);
      const std::size_t n = take(c, c.config.data, deliver);
      stats.config_buffer_pcs += n;
      got += n;
      c.config.data.totalNumPcs = 0;
    }
    return got;
  }

  void disable(CUcontext ctx, Context& c, const std::function<void(const PcSamples&)>& deliver) {
    if (!c.ok) return;
    read(ctx, c, deliver, /*stable=*/serialized());
    CUpti_PCSamplingDisableParams d{};
    d.size = CUpti_PCSamplingDisableParamsSize;
    d.ctx = ctx;
    if (CUptiResult r = api->pc_disable(&d); r != CUPTI_SUCCESS)
      problem(fmt::format("cuptiPCSamplingDisable in CUDA context {} failed: {}", static_cast<const void*>(ctx), why(r)));
    // Disable hands what CUPTI still held to the configuration buffer.
    if (c.config.data.totalNumPcs > 0) {
      trace(ctx, "after disable", CUPTI_SUCCESS, c);
      stats.config_buffer_pcs += take(c, c.config.data, deliver);
      c.config.data.totalNumPcs = 0;
    }
    c.ok = false;
    --stats.contexts;
  }

  /// At shutdown: ranges sampled, nothing came back — say what CUPTI counted.
  void report_empty() {
    if (stats.ranges == 0 || stats.samples != 0) return;
    std::string hint;
    if (!stats.problem.empty())
      hint = "the first failure: " + stats.problem;
    else if (stats.cupti_samples == 0)
      hint = fmt::format(
          "CUPTI counted no sample at all: the sampled kernels ran shorter than the sampling interval ({}), or "
          "outside the ranges",
          options.period ? fmt::format("2^{} cycles", options.period) : std::string("CUPTI's default"));
    else if (stats.cupti_samples == stats.nonuser_samples)
      hint = "every sample was in kernels CUPTI gives no PC records for (non-user kernels)";
    else
      hint = "CUPTI counted samples but returned no PC record for them (stall reasons not selected?)";
    warn("PC sampling: {} kernel launch(es) were sampled but no PC sample came back ({} reads, {} failed; CUPTI "
         "counted {} samples, {} in non-user kernels, {} dropped): {}. TILEJIT_PC_SAMPLING_TRACE=1 prints every read",
         stats.ranges, stats.reads, stats.read_errors, stats.cupti_samples, stats.nonuser_samples, stats.dropped, hint);
  }
};

PcSampler::PcSampler() : impl_(std::make_unique<Impl>()) {}
PcSampler::~PcSampler() = default;

void PcSampler::configure(const Api& api, const PcSamplingOptions& options) {
  std::lock_guard g(impl_->mu);
  impl_->api = &api;
  impl_->options = options;
  impl_->on = true;
  impl_->stats = Stats{};  // counts are per sampling run
  impl_->warned_overflow = false;
  impl_->warned_problem = false;
}

bool PcSampler::on() const {
  std::lock_guard g(impl_->mu);
  return impl_->on;
}
bool PcSampler::serialized() const {
  std::lock_guard g(impl_->mu);
  return impl_->on && impl_->serialized();
}

void PcSampler::shutdown(const std::function<void(const PcSamples&)>& deliver) {
  std::map<CUcontext, std::unique_ptr<Context>> contexts;
  {
    std::lock_guard g(impl_->mu);
    if (!impl_->on) return;
    impl_->on = false;  // no new range starts
    contexts.swap(impl_->contexts);
  }
  for (auto& [ctx, c] : contexts) {
    std::lock_guard r(c->range);  // a range in progress on another thread ends first
    std::lock_guard g(impl_->mu);
    impl_->disable(ctx, *c, deliver);
  }
  std::lock_guard g(impl_->mu);
  impl_->report_empty();
  impl_->cubins.clear();
  impl_->module_crc.clear();
  impl_->lines.clear();
  impl_->stats.contexts = 0;
}

void* PcSampler::launch_enter(CUcontext ctx) {
  if (!ctx) return nullptr;
  Context* c = nullptr;
  {
    std::lock_guard g(impl_->mu);
    if (!impl_->on) return nullptr;
    auto& slot = impl_->contexts[ctx];
    if (!slot) {
      slot = std::make_unique<Context>();
      impl_->enable(ctx, *slot);
    }
    c = slot.get();
    if (!c->ok || !impl_->serialized()) return nullptr;
  }
  c->range.lock();  // released in launch_exit, on this thread
  // Work launched before this range must not be sampled into it.
  if (impl_->api->synchronize_current) impl_->api->synchronize_current();
  {
    std::lock_guard g(impl_->mu);
    CUpti_PCSamplingStartParams p{};
    p.size = CUpti_PCSamplingStartParamsSize;
    p.ctx = ctx;
    CUptiResult r = CUPTI_SUCCESS;
    if (!impl_->on || !c->ok || (r = impl_->api->pc_start(&p)) != CUPTI_SUCCESS) {
      if (r != CUPTI_SUCCESS)
        impl_->problem(fmt::format("cuptiPCSamplingStart in CUDA context {} failed: {}", static_cast<const void*>(ctx),
                                   impl_->why(r)));
      c->range.unlock();
      return nullptr;
    }
  }
  // The token: the context (contexts are only dropped under their range lock).
  return ctx;
}

void PcSampler::launch_exit(void* token) {
  if (!token) return;
  auto ctx = static_cast<CUcontext>(token);
  // The kernel of this range has run (and nothing else was launched into it:
  // the range lock keeps other launches of the context out).
  if (impl_->api->synchronize_current) impl_->api->synchronize_current();
  std::vector<PcSamples> got;
  Context* c = nullptr;
  {
    std::lock_guard g(impl_->mu);
    auto it = impl_->contexts.find(ctx);
    if (it == impl_->contexts.end()) return;  // shut down meanwhile (it waited for our range lock: cannot be)
    c = it->second.get();
    CUpti_PCSamplingStopParams p{};
    p.size = CUpti_PCSamplingStopParamsSize;
    p.ctx = ctx;
    if (CUptiResult r = impl_->api->pc_stop(&p); r != CUPTI_SUCCESS)
      impl_->problem(fmt::format("cuptiPCSamplingStop in CUDA context {} failed: {}", static_cast<const void*>(ctx),
                                 impl_->why(r)));
    ++impl_->stats.ranges;
    if (impl_->read(ctx, *c, [&](const PcSamples& s) { got.push_back(s); }, /*stable=*/true) == 0)
      ++impl_->stats.empty_ranges;
  }
  c->range.unlock();
  for (const auto& s : got) record_pc_samples(s);  // the launching thread: its scope
}

void PcSampler::drain_all(const std::function<void(const PcSamples&)>& deliver) {
  std::lock_guard g(impl_->mu);
  if (!impl_->on || impl_->serialized()) return;
  for (auto& [ctx, c] : impl_->contexts) impl_->read(ctx, *c, deliver, /*stable=*/false);
}

void PcSampler::module_loaded(const CUpti_ModuleResourceData& m) {
  std::lock_guard g(impl_->mu);
  if (!impl_->on || !m.pCubin || m.cubinSize == 0 || !impl_->api->cubin_crc) return;
  CUpti_GetCubinCrcParams p{};
  p.size = CUpti_GetCubinCrcParamsSize;
  p.cubin = m.pCubin;
  p.cubinSize = m.cubinSize;
  if (impl_->api->cubin_crc(&p) != CUPTI_SUCCESS) return;
  impl_->cubins.try_emplace(p.cubinCrc, m.pCubin, m.cubinSize);
  impl_->module_crc[m.moduleId] = p.cubinCrc;
  impl_->stats.cubins = impl_->cubins.size();
}

void PcSampler::module_unloading(CUcontext ctx, const CUpti_ModuleResourceData& m,
                                 const std::function<void(const PcSamples&)>& deliver) {
  std::lock_guard g(impl_->mu);
  if (!impl_->on) return;
  // Continuous mode: the module's PCs are read while its cubin is still here
  // (CUPTI also needs a read after an unload to keep PCs unique).
  if (auto it = impl_->contexts.find(ctx); it != impl_->contexts.end() && !impl_->serialized())
    impl_->read(ctx, *it->second, deliver, /*stable=*/false);
  if (auto it = impl_->module_crc.find(m.moduleId); it != impl_->module_crc.end()) {
    impl_->cubins.erase(it->second);
    std::erase_if(impl_->lines, [&](const auto& kv) { return kv.first.starts_with(fmt::format("{:x}/", it->second)); });
    impl_->module_crc.erase(it);
  }
  impl_->stats.cubins = impl_->cubins.size();
}

void PcSampler::context_destroying(CUcontext ctx, const std::function<void(const PcSamples&)>& deliver) {
  std::unique_ptr<Context> c;
  {
    std::lock_guard g(impl_->mu);
    auto it = impl_->contexts.find(ctx);
    if (it == impl_->contexts.end()) return;
    c = std::move(it->second);
    impl_->contexts.erase(it);
  }
  std::lock_guard r(c->range);
  std::lock_guard g(impl_->mu);
  impl_->disable(ctx, *c, deliver);
}

PcSampler::Stats PcSampler::stats() const {
  std::lock_guard g(impl_->mu);
  return impl_->stats;
}

}  // namespace tilejit::profiler::cupti

// src/profiler/cupti_pc_sampling.cpp — PC sampling through CUPTI's PC Sampling
// API (cupti_pcsampling.h), for the "cupti" backend's hub.
//
//   first launch in a context:  cuptiPCSamplingEnable(ctx)
//                               cuptiPCSamplingGetNumStallReasons / GetStallReasons
//                               cuptiPCSamplingSetConfigurationAttribute: period,
//                                 stall reasons, scratch / hardware buffer sizes,
//                                 collection mode, start/stop control, the data buffer
//   kernel-serialized launch:   API_ENTER: cuptiPCSamplingStart(ctx)
//                               API_EXIT:  cuptiPCSamplingStop(ctx), cuptiPCSamplingGetData
//                                 until no PC remains -> aggregate_pc_samples ->
//                                 record_pc_samples on the launching thread
//   continuous:                 cuptiPCSamplingGetData at every flush -> Sink::pc_samples
//   module loaded:              keep the cubin (by cuptiGetCubinCrc) for
//                               cuptiGetSassToSourceCorrelation
//   context destroyed, stop:    read what is left, cuptiPCSamplingDisable(ctx)
//
// Launches in one context are sampled one at a time (a per-context mutex held
// from API entry to exit): kernel-serialized ranges cannot overlap.
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

/// One context's sampling state and its data buffer.
struct Context {
  std::mutex range;  // held from a launch's API entry to its exit (kernel-serialized)
  bool ok = false;
  std::unordered_map<std::uint32_t, std::string> stall_names;  // CUPTI index -> short name
  std::vector<std::uint32_t> selected;                         // stall indices configured (empty: all)
  std::size_t reasons_per_pc = 0;
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> stall_storage;
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

  std::string why(CUptiResult r) const { return describe(*api, r); }

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
      warn("PC sampling unavailable in CUDA context {}: {}{}. Kernels there are recorded without PC samples",
           static_cast<const void*>(ctx), err, hint);
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
        for (const auto& [i, name] : c.stall_names)
          if (name == want) c.selected.push_back(i), found = true;
        if (!found) unknown += (unknown.empty() ? "" : ", ") + want;
      }
      if (!unknown.empty()) {
        std::string known;
        for (const auto& [i, name] : c.stall_names) known += (known.empty() ? "" : ", ") + name;
        warn("PC sampling: stall reason(s) {} not known to this GPU; skipped. Known: {}", unknown, known);
      }
      if (c.selected.empty()) {
        err = "none of the requested stall reasons is known to this GPU";
        return fail(true);
      }
    }
    c.reasons_per_pc = c.selected.empty() ? n : c.selected.size();
    c.pcs.assign(options.max_pcs, CUpti_PCSamplingPCData{});
    c.stall_storage.assign(options.max_pcs * c.reasons_per_pc, CUpti_PCSamplingStallReason{});
    for (std::size_t i = 0; i < options.max_pcs; ++i) {
      c.pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      c.pcs[i].stallReason = &c.stall_storage[i * c.reasons_per_pc];
    }
    c.data = CUpti_PCSamplingData{};
    c.data.size = sizeof(CUpti_PCSamplingData);
    c.data.collectNumPcs = options.max_pcs;
    c.data.pPcData = c.pcs.data();

    std::vector<CUpti_PCSamplingConfigurationInfo> info;
    auto attr = [&](CUpti_PCSamplingConfigurationAttributeType t) -> CUpti_PCSamplingConfigurationInfo& {
      info.emplace_back();
      info.back().attributeType = t;
      return info.back();
    };
    const bool serialized = options.collection == PcSamplingOptions::Collection::kernel_serialized;
    if (options.period != 0) attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD).attributeData.samplingPeriodData.samplingPeriod = options.period;
    if (!c.selected.empty()) {
      auto& a = attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
      a.attributeData.stallReasonData.stallReasonCount = c.selected.size();
      a.attributeData.stallReasonData.pStallReasonIndex = c.selected.data();
    }
    if (options.scratch_buffer_size != 0)
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE).attributeData.scratchBufferSizeData.scratchBufferSize = options.scratch_buffer_size;
    if (options.hardware_buffer_size != 0)
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE).attributeData.hardwareBufferSizeData.hardwareBufferSize = options.hardware_buffer_size;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE).attributeData.collectionModeData.collectionMode =
        serialized ? CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED : CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL).attributeData.enableStartStopControlData.enableStartStopControl = serialized ? 1 : 0;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT).attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER).attributeData.samplingDataBufferData.samplingDataBuffer = &c.data;
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

  /// Read every PC CUPTI holds for `ctx` and hand each kernel's samples to `deliver` (mu held).
  void read(CUcontext ctx, Context& c, const std::function<void(const PcSamples&)>& deliver) {
    if (!c.ok) return;
    for (int i = 0; i < kMaxReadsPerDrain; ++i) {
      c.data.totalNumPcs = 0;
      c.data.remainingNumPcs = 0;
      c.data.hardwareBufferFull = 0;
      CUpti_PCSamplingGetDataParams g{};
      g.size = CUpti_PCSamplingGetDataParamsSize;
      g.ctx = ctx;
      g.pcSamplingData = &c.data;
      const CUptiResult r = api->pc_get_data(&g);
      if (r == CUPTI_ERROR_OUT_OF_MEMORY || c.data.hardwareBufferFull) {
        if (!std::exchange(warned_overflow, true))
          warn("PC sampling: CUPTI's hardware buffer filled up and samples were lost; raise "
               "pc_sampling.hardware_buffer_size or the period");
      }
      if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) return;
      stats.dropped += c.data.droppedSamples;
      for (std::size_t k = 0; k < c.data.totalNumPcs && k < c.pcs.size(); ++k)
        for (std::size_t j = 0; j < c.pcs[k].stallReasonCount; ++j) stats.samples += c.pcs[k].stallReason[j].samples;
      if (c.data.totalNumPcs > 0 && deliver) {
        auto out = aggregate_pc_samples(c.data, c.stall_names, [&](std::uint64_t crc, const char* fn, std::uint64_t off) {
          return line_of(crc, fn, off);
        });
        for (const auto& s : out) deliver(s);
      }
      if (c.data.remainingNumPcs == 0) return;
    }
  }

  void disable(CUcontext ctx, Context& c, const std::function<void(const PcSamples&)>& deliver) {
    if (!c.ok) return;
    read(ctx, c, deliver);
    CUpti_PCSamplingDisableParams d{};
    d.size = CUpti_PCSamplingDisableParamsSize;
    d.ctx = ctx;
    api->pc_disable(&d);
    c.ok = false;
    --stats.contexts;
  }
};

PcSampler::PcSampler() : impl_(std::make_unique<Impl>()) {}
PcSampler::~PcSampler() = default;

void PcSampler::configure(const Api& api, const PcSamplingOptions& options) {
  std::lock_guard g(impl_->mu);
  impl_->api = &api;
  impl_->options = options;
  impl_->on = true;
}

bool PcSampler::on() const {
  std::lock_guard g(impl_->mu);
  return impl_->on;
}
bool PcSampler::serialized() const {
  std::lock_guard g(impl_->mu);
  return impl_->on && impl_->options.collection == PcSamplingOptions::Collection::kernel_serialized;
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
  impl_->cubins.clear();
  impl_->module_crc.clear();
  impl_->lines.clear();
  impl_->stats.contexts = 0;
}

void* PcSampler::launch_enter(CUcontext ctx) {
  if (!ctx) return nullptr;
  Context* c = nullptr;
  bool serialized = false;
  {
    std::lock_guard g(impl_->mu);
    if (!impl_->on) return nullptr;
    auto& slot = impl_->contexts[ctx];
    if (!slot) {
      slot = std::make_unique<Context>();
      impl_->enable(ctx, *slot);
    }
    c = slot.get();
    serialized = impl_->options.collection == PcSamplingOptions::Collection::kernel_serialized;
    if (!c->ok || !serialized) return nullptr;
  }
  c->range.lock();  // released in launch_exit, on this thread
  {
    std::lock_guard g(impl_->mu);
    CUpti_PCSamplingStartParams p{};
    p.size = CUpti_PCSamplingStartParamsSize;
    p.ctx = ctx;
    if (!impl_->on || !c->ok || impl_->api->pc_start(&p) != CUPTI_SUCCESS) {
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
    impl_->api->pc_stop(&p);
    ++impl_->stats.ranges;
    impl_->read(ctx, *c, [&](const PcSamples& s) { got.push_back(s); });
  }
  c->range.unlock();
  for (const auto& s : got) record_pc_samples(s);  // the launching thread: its scope
}

void PcSampler::drain_all(const std::function<void(const PcSamples&)>& deliver) {
  std::lock_guard g(impl_->mu);
  if (!impl_->on) return;
  for (auto& [ctx, c] : impl_->contexts)
    if (impl_->options.collection == PcSamplingOptions::Collection::continuous) impl_->read(ctx, *c, deliver);
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
  if (auto it = impl_->contexts.find(ctx);
      it != impl_->contexts.end() && impl_->options.collection == PcSamplingOptions::Collection::continuous)
    impl_->read(ctx, *it->second, deliver);
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

// The "cupti" backend (src/profiler/cupti_backend.cpp):
//  * pure pieces: clock calibration, activity record -> KernelRecord;
//  * the whole path over a test double of the CUPTI layer (launch callback ->
//    correlate_launch -> activity buffer -> session), and the fault rules;
//  * without a GPU: the real backend fails cleanly and the session records scopes;
//  * with a GPU ("profiler cupti gpu: ..."): real attribution of tilejit kernels.
#include <cstdio>
#include <dlfcn.h>
#include <deque>
#include <tuple>
#include <unordered_map>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <cstring>
#include <set>
#include <thread>
#include <unistd.h>
#include <sys/mman.h>
#include <algorithm>

#include "examples/vector_add.hpp"
#include "profiler_test_util.hpp"
#include "src/profiler/cupti_backend.hpp"
#include "tilejit/tilejit.hpp"

using namespace prof_test;
namespace tp = tilejit::profiler;
namespace cu = tilejit::profiler::cupti;

namespace {

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

/// A Sink that keeps what it is given.
struct CaptureSink final : tp::Sink {
  std::mutex mu;
  std::vector<tp::KernelRecord> kernels;
  std::vector<std::pair<std::uint32_t, tp::DeviceInfo>> devices;
  void kernel(const tp::KernelRecord& r) noexcept override {
    std::lock_guard g(mu);
    kernels.push_back(r);
  }
  void device(tp::DeviceType, std::uint32_t id, const tp::DeviceInfo& info) noexcept override {
    std::lock_guard g(mu);
    devices.emplace_back(id, info);
  }
};

// ---- a test double of the CUPTI layer ------------------------------------------------

namespace fake {

struct State {
  std::recursive_mutex mu;
  bool driver_ok = true;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  int subscribes = 0, unsubscribes = 0;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  bool subscribed = false;
  std::set<std::pair<int, unsigned>> enabled;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  bool activity_on = false;                    // CONCURRENT_KERNEL
  bool kernel_kind_on = false;                 // KERNEL (serialized kernel records)
  int forced_flushes = 0;
  std::size_t last_buffer_size = 0;
  // Activity attributes and buffers. As CUPTI: unless ZEROED_OUT_ACTIVITY_BUFFER
  // is 1, every buffer requested is memset in full on the requesting thread.
  bool attributes = true;                      // the layer has cuptiActivitySet/GetAttribute
  std::uint8_t zeroed_out = 0;                 // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER
  std::uint8_t per_thread = 0;                 // CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER
  std::uint8_t host_pinned = 0;                // CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED
  // size_t attributes, at CUPTI 13.0's documented defaults (DEVICE_BUFFER_SIZE, _POOL_LIMIT, _PRE_ALLOCATE_VALUE)
  std::map<int, std::size_t> size_attrs = {{CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, 3'200'000},
                                           {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, 250},
                                           {CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, 3}};
  bool attribute_set_while_on = false;         // a knob attribute changed while a kernel kind was on
  std::uint32_t flush_period = 0;              // cuptiActivityFlushPeriod
  CUptiResult hw_trace_result = CUPTI_ERROR_NOT_SUPPORTED;  // as on Hopper
  int hw_trace = 0;                            // cuptiActivityEnableHWTrace(1) taken and not undone
  int finalizes = 0;                           // cuptiFinalize calls
  bool finalized_clean = true;                 // every finalize came after the forced flush and unsubscribe
  bool attached = false;                       // CUPTI attached to the process (subscribe .. finalize)
  int zeroed_out_at_register = -1;             // its value when the buffer callbacks were registered
  std::uint64_t cupti_memset_bytes = 0;        // what "CUPTI" zeroed itself
  int dirty_buffers = 0;                       // buffers handed over not zero though promised
  std::vector<std::uint8_t*> buffers_seen;     // every buffer requested, in order
  std::size_t dropped_next = 0;
  std::vector<CUpti_ActivityKernel10> queued;  // handed back at the next flush
  std::deque<std::string> names;               // record names point here
  std::uint64_t offset = 5'000'000'000'000;    // CUPTI clock = now_ns() + offset
  // PC sampling
  struct Pc {
    std::string function;
    std::uint64_t offset, crc;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stalls;  // CUPTI index, samples
  };
  CUptiResult pc_enable_result = CUPTI_SUCCESS;
  CUptiResult pc_get_data_result = CUPTI_SUCCESS;
  std::uint32_t version = 130001;              // cuptiGetVersion
  int pc_enables = 0, pc_disables = 0, pc_starts = 0, pc_stops = 0, pc_reads = 0;
  bool pc_sampling = false;                    // between start and stop
  std::map<int, std::uint64_t> pc_config;      // attribute -> value (pointers as integers)
  std::vector<std::uint32_t> pc_selected;      // STALL_REASON attribute
  CUpti_PCSamplingData* pc_buffer = nullptr;   // SAMPLING_DATA_BUFFER (the configuration buffer)
  // What the "GPU" sampled and CUPTI has not handed over yet. In a range
  // (start/stop control) the samples of the range; else (continuous) all.
  std::deque<Pc> pc_pending;
  std::uint64_t pc_pending_samples = 0;        // totalSamples of what is pending, with non-user ones
  std::uint64_t pc_nonuser_next = 0;           // samples in non-user kernels of the next range
  std::uint64_t pc_range = 0;
  // The configuration buffer holds PC records the client has not consumed.
  // As NVIDIA's samples use CUPTI: at a range's end (cuptiPCSamplingStop) and
  // at cuptiPCSamplingDisable CUPTI puts the PC records there; GetData into
  // another buffer moves them over (and clears the configuration buffer's
  // totalNumPcs), GetData into the configuration buffer itself counts them as
  // read by the client and hands over only what did not fit.
  bool pc_config_unread = false;
  // The other conceivable CUPTI: GetData never moves what it put in the
  // configuration buffer; the client reads it there.
  bool pc_records_stay_in_config = false;
  int pc_reads_into_config = 0;                // GetData calls given the configuration buffer itself
  std::vector<std::string> pc_log;             // sync / start / stop / read, in order
  std::deque<std::string> pc_names;            // functionName strings handed out
};
State& st() {
  static State s;
  return s;
}

CUptiResult get_result_string(CUptiResult r, const char** s) {
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
      : r == CUPTI_ERROR_NOT_SUPPORTED                      ? "CUPTI_ERROR_NOT_SUPPORTED"
                                                            : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
CUptiResult subscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc cb, void* ud) {
  std::lock_guard g(st().mu);
  if (st().subscribe_result != CUPTI_SUCCESS) return st().subscribe_result;
  if (st().subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;  // as CUPTI: one at a time
  ++st().subscribes;
  st().subscribed = true;
  st().attached = true;
  st().callback = cb;
  st().userdata = ud;
  *h = reinterpret_cast<CUpti_SubscriberHandle>(&st());
  return CUPTI_SUCCESS;
}
CUptiResult unsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard g(st().mu);
  ++st().unsubscribes;
  st().subscribed = false;
  st().callback = nullptr;
  st().enabled.clear();
  return CUPTI_SUCCESS;
}
CUptiResult enable_callback(uint32_t on, CUpti_SubscriberHandle, CUpti_CallbackDomain d, CUpti_CallbackId id) {
  std::lock_guard g(st().mu);
  if (on) st().enabled.insert({int(d), id});
  else st().enabled.erase({int(d), id});
  return CUPTI_SUCCESS;
}
CUptiResult register_callbacks(CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cp) {
  std::lock_guard g(st().mu);
  st().request = rq;
  st().complete = cp;
  st().zeroed_out_at_register = st().zeroed_out;
  return CUPTI_SUCCESS;
}
CUptiResult activity_enable(CUpti_ActivityKind k) {
  std::lock_guard g(st().mu);
  // As CUPTI: the two kernel kinds exclude each other.
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    if (st().kernel_kind_on) return CUPTI_ERROR_NOT_COMPATIBLE;
    st().activity_on = true;
  }
  if (k == CUPTI_ACTIVITY_KIND_KERNEL) {
    if (st().activity_on) return CUPTI_ERROR_NOT_COMPATIBLE;
    st().kernel_kind_on = true;
  }
  return CUPTI_SUCCESS;
}
CUptiResult activity_disable(CUpti_ActivityKind k) {
  std::lock_guard g(st().mu);
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) st().activity_on = false;
  if (k == CUPTI_ACTIVITY_KIND_KERNEL) st().kernel_kind_on = false;
  return CUPTI_SUCCESS;
}
std::uint8_t* attribute(CUpti_ActivityAttribute a) {
  if (a == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) return &st().zeroed_out;
  if (a == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER) return &st().per_thread;
  if (a == CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED) return &st().host_pinned;
  return nullptr;
}
CUptiResult set_attribute(CUpti_ActivityAttribute a, size_t* n, void* v) {
  std::lock_guard g(st().mu);
  if (auto it = st().size_attrs.find(a); it != st().size_attrs.end()) {
    if (*n != sizeof(std::size_t)) return CUPTI_ERROR_INVALID_PARAMETER;
    if (st().activity_on || st().kernel_kind_on) st().attribute_set_while_on = true;
    it->second = *static_cast<std::size_t*>(v);
    return CUPTI_SUCCESS;
  }
  if (a == CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED && (st().activity_on || st().kernel_kind_on))
    st().attribute_set_while_on = true;
  if (!attribute(a) || *n != sizeof(std::uint8_t)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (a == CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER && (st().activity_on || st().kernel_kind_on))
    FAIL("PER_THREAD_ACTIVITY_BUFFER changed while an activity kind is on (undefined in CUPTI)");
  *attribute(a) = *static_cast<std::uint8_t*>(v);
  return CUPTI_SUCCESS;
}
CUptiResult get_attribute(CUpti_ActivityAttribute a, size_t* n, void* v) {
  std::lock_guard g(st().mu);
  if (auto it = st().size_attrs.find(a); it != st().size_attrs.end()) {
    if (*n < sizeof(std::size_t)) return CUPTI_ERROR_INVALID_PARAMETER;
    *static_cast<std::size_t*>(v) = it->second;
    *n = sizeof(std::size_t);
    return CUPTI_SUCCESS;
  }
  if (!attribute(a) || *n < sizeof(std::uint8_t)) return CUPTI_ERROR_INVALID_PARAMETER;
  *static_cast<std::uint8_t*>(v) = *attribute(a);
  *n = sizeof(std::uint8_t);
  return CUPTI_SUCCESS;
}
CUptiResult finalize() {
  std::lock_guard g(st().mu);
  ++st().finalizes;
  if (st().subscribed || st().activity_on || st().kernel_kind_on || st().forced_flushes == 0) st().finalized_clean = false;
  st().attached = false;
  st().request = nullptr;  // CUPTI forgets the buffer callbacks: the next client registers its own
  st().complete = nullptr;
  return CUPTI_SUCCESS;
}
CUptiResult flush_period(uint32_t ms) {
  std::lock_guard g(st().mu);
  st().flush_period = ms;
  return CUPTI_SUCCESS;
}
CUptiResult enable_hw_trace(uint8_t on) {
  std::lock_guard g(st().mu);
  if (on && st().hw_trace_result != CUPTI_SUCCESS) return st().hw_trace_result;
  st().hw_trace = on ? 1 : 0;
  return CUPTI_SUCCESS;
}
CUptiResult get_version(uint32_t* v) {
  *v = st().version;
  return CUPTI_SUCCESS;
}
/// What CUPTI does with a buffer it is given: zero it in full unless the
/// client promised zeroed buffers (then check the promise, over the first 8 MiB).
void take_buffer(std::uint8_t* buf, std::size_t size) {
  std::lock_guard g(st().mu);
  st().buffers_seen.push_back(buf);
  if (st().zeroed_out == 0) {
    std::memset(buf, 0, size);
    st().cupti_memset_bytes += size;
    return;
  }
  const std::size_t n = std::min<std::size_t>(size, 8u << 20);
  if (std::any_of(buf, buf + n, [](std::uint8_t b) { return b != 0; })) ++st().dirty_buffers;
}
CUptiResult flush_all(uint32_t flag) {
  std::vector<CUpti_ActivityKernel10> recs;
  {
    std::lock_guard g(st().mu);
    if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ++st().forced_flushes;
    recs.swap(st().queued);
    if (recs.empty() && st().dropped_next == 0) return CUPTI_SUCCESS;
  }
  std::uint8_t* buf = nullptr;
  std::size_t size = 0, max_records = 0;
  st().request(&buf, &size, &max_records);
  REQUIRE(buf != nullptr);
  take_buffer(buf, size);
  st().last_buffer_size = size;
  std::size_t used = 0;
  for (const auto& r : recs) {  // a buffer of at least 4 KiB: the tests queue a few records
    REQUIRE(used + sizeof r <= size);
    std::memcpy(buf + used, &r, sizeof r);
    used += sizeof r;
  }
  st().complete(nullptr, 0, buf, size, used);
  return CUPTI_SUCCESS;
}
CUptiResult get_next_record(uint8_t* buf, size_t valid, CUpti_Activity** rec) {
  std::uint8_t* p = *rec ? reinterpret_cast<std::uint8_t*>(*rec) + sizeof(CUpti_ActivityKernel10) : buf;
  if (p + sizeof(CUpti_ActivityKernel10) > buf + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = reinterpret_cast<CUpti_Activity*>(p);
  return CUPTI_SUCCESS;
}
CUptiResult num_dropped(CUcontext, uint32_t, size_t* n) {
  std::lock_guard g(st().mu);
  *n = std::exchange(st().dropped_next, 0);
  return CUPTI_SUCCESS;
}
CUptiResult timestamp(uint64_t* t) {
  *t = tp::now_ns() + st().offset;
  return CUPTI_SUCCESS;
}
// Graph handles in the tests are fake pointers whose value is the id.
CUptiResult graph_node_id(CUgraphNode node, uint64_t* id) {
  *id = reinterpret_cast<std::uintptr_t>(node);
  return CUPTI_SUCCESS;
}
CUptiResult graph_exec_id(CUgraphExec exec, uint32_t* id) {
  *id = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(exec));
  return CUPTI_SUCCESS;
}
// ---- PC sampling (one fake context; stall indices 2, 5, 9) ----
const CUcontext kCtx = reinterpret_cast<CUcontext>(std::uintptr_t{0xC7});
CUptiResult pc_enable(CUpti_PCSamplingEnableParams* p) {
  std::lock_guard g(st().mu);
  REQUIRE(p->size == CUpti_PCSamplingEnableParamsSize);
  CHECK(p->ctx == kCtx);
  if (st().pc_enable_result != CUPTI_SUCCESS) return st().pc_enable_result;
  ++st().pc_enables;
  return CUPTI_SUCCESS;
}
/// The configuration buffer gets up to collectNumPcs of the pending PC records (st().mu held).
void pc_fill(CUpti_PCSamplingData* d) {
  std::size_t n = 0;
  while (n < d->collectNumPcs && !st().pc_pending.empty()) {
    const auto pc = st().pc_pending.front();
    st().pc_pending.pop_front();
    auto& out = d->pPcData[n++];
    st().pc_names.push_back(pc.function);
    out.functionName = st().pc_names.back().data();
    out.pcOffset = pc.offset;
    out.cubinCrc = pc.crc;
    REQUIRE(static_cast<const void*>(out.stallReason) != nullptr);
    out.stallReasonCount = pc.stalls.size();
    for (std::size_t k = 0; k < pc.stalls.size(); ++k)
      out.stallReason[k] = {pc.stalls[k].first, pc.stalls[k].second};
  }
  d->totalNumPcs = n;
  d->remainingNumPcs = st().pc_pending.size();
}
/// A range ends (stop, disable): CUPTI puts its PC records in the configuration buffer (st().mu held).
void pc_range_end() {
  REQUIRE(st().pc_buffer != nullptr);
  pc_fill(st().pc_buffer);
  st().pc_buffer->totalSamples = st().pc_pending_samples + st().pc_nonuser_next;
  st().pc_buffer->nonUsrKernelsTotalSamples = st().pc_nonuser_next;
  st().pc_buffer->rangeId = ++st().pc_range;
  st().pc_pending_samples = 0;
  st().pc_nonuser_next = 0;
  st().pc_config_unread = true;
}
CUptiResult pc_disable(CUpti_PCSamplingDisableParams*) {
  std::lock_guard g(st().mu);
  ++st().pc_disables;
  if (st().pc_buffer && !st().pc_pending.empty()) pc_range_end();  // what is left goes to the configuration buffer
  st().pc_buffer = nullptr;
  return CUPTI_SUCCESS;
}
CUptiResult pc_start(CUpti_PCSamplingStartParams*) {
  std::lock_guard g(st().mu);
  CHECK_FALSE(st().pc_sampling);  // ranges never overlap
  st().pc_sampling = true;
  ++st().pc_starts;
  st().pc_log.push_back("start");
  return CUPTI_SUCCESS;
}
CUptiResult pc_stop(CUpti_PCSamplingStopParams*) {
  std::lock_guard g(st().mu);
  CHECK(st().pc_sampling);
  st().pc_sampling = false;
  ++st().pc_stops;
  st().pc_log.push_back("stop");
  pc_range_end();
  return CUPTI_SUCCESS;
}
CUptiResult pc_num_stall_reasons(CUpti_PCSamplingGetNumStallReasonsParams* p) {
  CHECK(st().pc_enables > 0);  // only after enabling (as CUPTI requires)
  *p->numStallReasons = 3;
  return CUPTI_SUCCESS;
}
CUptiResult pc_stall_reasons(CUpti_PCSamplingGetStallReasonsParams* p) {
  REQUIRE(p->numStallReasons == 3);
  const char* names[] = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard", "smsp__pcsamp_warps_issue_stalled_barrier",
                         "smsp__pcsamp_warps_issue_stalled_selected"};
  const std::uint32_t idx[] = {2, 5, 9};
  for (int i = 0; i < 3; ++i) {
    p->stallReasonIndex[i] = idx[i];
    std::snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", names[i]);
  }
  return CUPTI_SUCCESS;
}
CUptiResult pc_set_config(CUpti_PCSamplingConfigurationInfoParams* p) {
  std::lock_guard g(st().mu);
  for (std::size_t i = 0; i < p->numAttributes; ++i) {
    auto& a = p->pPCSamplingConfigurationInfo[i];
    const auto& d = a.attributeData;
    std::uint64_t v = 0;
    switch (a.attributeType) {
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD: v = d.samplingPeriodData.samplingPeriod; break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
        v = d.stallReasonData.stallReasonCount;
        st().pc_selected.assign(d.stallReasonData.pStallReasonIndex, d.stallReasonData.pStallReasonIndex + v);
        break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE: v = d.scratchBufferSizeData.scratchBufferSize; break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE: v = d.hardwareBufferSizeData.hardwareBufferSize; break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE: v = d.collectionModeData.collectionMode; break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL: v = d.enableStartStopControlData.enableStartStopControl; break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT: v = d.outputDataFormatData.outputDataFormat; break;
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
        st().pc_buffer = static_cast<CUpti_PCSamplingData*>(d.samplingDataBufferData.samplingDataBuffer);
        v = 1;
        break;
      default: FAIL("unexpected attribute " << int(a.attributeType));
    }
    st().pc_config[int(a.attributeType)] = v;
  }
  return CUPTI_SUCCESS;
}
/// cuptiPCSamplingGetData, as described at State::pc_config_unread.
CUptiResult pc_get_data(CUpti_PCSamplingGetDataParams* p) {
  std::lock_guard g(st().mu);
  ++st().pc_reads;
  st().pc_log.push_back("read");
  if (st().pc_get_data_result != CUPTI_SUCCESS) return st().pc_get_data_result;
  auto* d = static_cast<CUpti_PCSamplingData*>(p->pcSamplingData);
  CUpti_PCSamplingData* cfg = st().pc_buffer;
  REQUIRE(cfg != nullptr);
  REQUIRE(std::size_t{d->collectNumPcs} > 0);
  const bool continuous = st().pc_config[CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL] == 0;
  if (d == cfg) {  // the client read the configuration buffer itself
    ++st().pc_reads_into_config;
    st().pc_config_unread = false;
    pc_fill(d);
    return CUPTI_SUCCESS;
  }
  std::size_t n = 0;
  d->totalSamples = 0;
  d->nonUsrKernelsTotalSamples = 0;
  if (st().pc_config_unread && !st().pc_records_stay_in_config) {  // move the configuration buffer's records over
    d->totalSamples = cfg->totalSamples;
    d->nonUsrKernelsTotalSamples = cfg->nonUsrKernelsTotalSamples;
    d->rangeId = cfg->rangeId;
    for (; n < cfg->totalNumPcs && n < d->collectNumPcs; ++n) {
      const auto& from = cfg->pPcData[n];
      auto& to = d->pPcData[n];
      to.functionName = from.functionName;
      to.pcOffset = from.pcOffset;
      to.cubinCrc = from.cubinCrc;
      to.stallReasonCount = from.stallReasonCount;
      for (std::size_t k = 0; k < from.stallReasonCount; ++k) to.stallReason[k] = from.stallReason[k];
    }
    cfg->totalNumPcs = 0;
    st().pc_config_unread = false;
  }
  if (continuous) {
    d->totalSamples += st().pc_pending_samples;
    st().pc_pending_samples = 0;
  }
  while (n < d->collectNumPcs && !st().pc_pending.empty()) {  // then what did not fit there
    const auto pc = st().pc_pending.front();
    st().pc_pending.pop_front();
    auto& out = d->pPcData[n++];
    st().pc_names.push_back(pc.function);
    out.functionName = st().pc_names.back().data();
    out.pcOffset = pc.offset;
    out.cubinCrc = pc.crc;
    out.stallReasonCount = pc.stalls.size();
    for (std::size_t k = 0; k < pc.stalls.size(); ++k)
      out.stallReason[k] = {pc.stalls[k].first, pc.stalls[k].second};
  }
  d->totalNumPcs = n;
  d->remainingNumPcs = st().pc_pending.size();
  cfg->remainingNumPcs = st().pc_pending.size();
  return CUPTI_SUCCESS;
}
// The "cubins": a CRC of (size, first byte); vec_kernel at 0x10 and 0x20 is vec.cu:12 in "CUBIN-A".
CUptiResult cubin_crc(CUpti_GetCubinCrcParams* p) {
  p->cubinCrc = p->cubinSize * 1000 + static_cast<const unsigned char*>(p->cubin)[0];
  return CUPTI_SUCCESS;
}
CUptiResult sass_to_source(CUpti_GetSassToSourceCorrelationParams* p) {
  if (std::string(static_cast<const char*>(p->cubin), p->cubinSize) != "CUBIN-A") return CUPTI_ERROR_INVALID_MODULE;
  if (std::string_view(p->functionName) != "vec_kernel" || (p->pcOffset != 0x10 && p->pcOffset != 0x20))
    return CUPTI_ERROR_UNKNOWN;
  p->fileName = ::strdup("vec.cu");
  p->dirName = ::strdup("/src");
  p->lineNumber = 12;
  return CUPTI_SUCCESS;
}
constexpr std::uint64_t kCrcA = 7 * 1000 + 'C';

bool driver_ready(std::string* why) {
  if (!st().driver_ok) *why = "fake: no driver";
  return st().driver_ok;
}
void describe_devices(tp::Sink& sink) { sink.device(tp::DeviceType::CUDA, 0, {1980000, 2619000, 6144, 132, "90a"}); }
void synchronize_current() {
  std::lock_guard g(st().mu);
  st().pc_log.push_back("sync");
}

const cu::Api& api() {
  static const cu::Api a = [] {
    cu::Api x;
    x.library = "fake libcupti";
    x.get_result_string = &get_result_string;
    x.subscribe = &subscribe;
    x.unsubscribe = &unsubscribe;
    x.enable_callback = &enable_callback;
    x.activity_register_callbacks = &register_callbacks;
    x.activity_enable = &activity_enable;
    x.activity_disable = &activity_disable;
    x.activity_flush_all = &flush_all;
    x.activity_get_next_record = &get_next_record;
    x.activity_get_num_dropped_records = &num_dropped;
    x.get_timestamp = &timestamp;
    x.activity_set_attribute = &set_attribute;
    x.activity_get_attribute = &get_attribute;
    x.finalize = &finalize;
    x.activity_flush_period = &flush_period;
    x.activity_enable_hw_trace = &enable_hw_trace;
    x.get_graph_node_id = &graph_node_id;
    x.get_graph_exec_id = &graph_exec_id;
    x.driver_ready = &driver_ready;
    x.describe_devices = &describe_devices;
    x.synchronize_current = &synchronize_current;
    return x;
  }();
  return a;
}
/// The same layer with the PC Sampling API.
const cu::Api& pc_api() {
  static const cu::Api a = [] {
    cu::Api x = api();
    x.library = "fake libcupti with PC sampling";
    x.pc_enable = &pc_enable;
    x.pc_disable = &pc_disable;
    x.pc_start = &pc_start;
    x.pc_stop = &pc_stop;
    x.pc_get_data = &pc_get_data;
    x.pc_set_config = &pc_set_config;
    x.pc_num_stall_reasons = &pc_num_stall_reasons;
    x.pc_stall_reasons = &pc_stall_reasons;
    x.cubin_crc = &cubin_crc;
    x.sass_to_source = &sass_to_source;
    x.get_version = &get_version;
    return x;
  }();
  return a;
}
/// A layer without cuptiActivitySetAttribute (CUPTI then zeroes every buffer itself).
const cu::Api& api_without_attributes() {
  static const cu::Api a = [] {
    cu::Api x = api();
    x.library = "fake libcupti without activity attributes";
    x.activity_set_attribute = nullptr;
    x.activity_get_attribute = nullptr;
    return x;
  }();
  return a;
}

void reset() {
  std::lock_guard g(st().mu);
  REQUIRE_FALSE(st().subscribed);  // every earlier test tore CUPTI down
  st().driver_ok = true;
  st().subscribe_result = CUPTI_SUCCESS;
  st().subscribes = st().unsubscribes = st().forced_flushes = 0;
  st().dropped_next = 0;
  st().queued.clear();
  REQUIRE_FALSE(st().activity_on);
  REQUIRE_FALSE(st().kernel_kind_on);
  st().zeroed_out = 0;
  st().per_thread = 0;
  st().host_pinned = 0;
  st().size_attrs = State{}.size_attrs;
  st().attribute_set_while_on = false;
  st().flush_period = 0;
  st().hw_trace_result = CUPTI_ERROR_NOT_SUPPORTED;
  st().hw_trace = 0;
  st().finalizes = 0;
  st().finalized_clean = true;
  st().zeroed_out_at_register = -1;
  st().cupti_memset_bytes = 0;
  st().dirty_buffers = 0;
  st().buffers_seen.clear();
  st().pc_enable_result = CUPTI_SUCCESS;
  st().pc_get_data_result = CUPTI_SUCCESS;
  st().version = 130001;
  st().pc_enables = st().pc_disables = st().pc_starts = st().pc_stops = st().pc_reads = 0;
  st().pc_sampling = false;
  st().pc_config.clear();
  st().pc_selected.clear();
  st().pc_buffer = nullptr;
  st().pc_pending.clear();
  st().pc_pending_samples = st().pc_nonuser_next = 0;
  st().pc_config_unread = false;
  st().pc_records_stay_in_config = false;
  st().pc_reads_into_config = 0;
  st().pc_log.clear();
}

/// What CUPTI does around a launch on the calling thread: API_ENTER, the
/// launch itself (`inside`), API_EXIT with the launch's return code.
template <class F>
void api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::uint32_t corr, int rc, F inside,
              const void* params = nullptr) {
  CUpti_CallbackData cb{};
  cb.correlationId = corr;
  cb.functionParams = params;
  cb.functionName = "fake launch";
  cb.context = kCtx;
  cb.callbackSite = CUPTI_API_ENTER;
  st().callback(st().userdata, domain, cbid, &cb);
  inside();
  cb.callbackSite = CUPTI_API_EXIT;
  cb.functionReturnValue = &rc;
  st().callback(st().userdata, domain, cbid, &cb);
}
void driver_launch(std::uint32_t corr, int rc = 0) {
  api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, corr, rc, [] {});
}
/// cudaLaunchKernel that (as a runtime may) calls a driver launch inside.
void runtime_launch(std::uint32_t corr, std::uint32_t inner_driver_corr) {
  api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, corr, 0,
           [&] { driver_launch(inner_driver_corr); });
}

// ---- CUDA graphs, as CUPTI reports them ----

/// A resource callback about graph objects (handles are fake: value = id).
void graph_event(CUpti_CallbackId cbid, std::uint64_t node, std::uint64_t original = 0, std::uint32_t exec = 0,
                 CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL) {
  CUpti_GraphData g{};
  g.node = reinterpret_cast<CUgraphNode>(node);
  g.originalNode = reinterpret_cast<CUgraphNode>(original);
  g.graphExec = reinterpret_cast<CUgraphExec>(static_cast<std::uintptr_t>(exec));
  g.nodeType = type;
  CUpti_ResourceData rd{};
  rd.resourceDescriptor = &g;
  st().callback(st().userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}
/// cuLaunchKernel into a capturing stream: the driver creates graph node `node` inside the call.
void captured_launch(std::uint32_t corr, std::uint64_t node) {
  api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, corr, 0,
           [&] { graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node); });
}
/// cudaGraphInstantiate: the exec's nodes are created (ignored) and cloned from the originals.
void instantiate(std::uint32_t exec, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& original_clone) {
  graph_event(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING, 0, 0, exec);
  for (auto [o, c] : original_clone) {
    graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, c);
    graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, c, o);
  }
  graph_event(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, 0, 0, exec);
}
/// cudaGraphLaunch (runtime) calling cuGraphLaunch (driver) inside.
void graph_launch(std::uint32_t corr, std::uint32_t exec) {
  const CUgraphExec handle = reinterpret_cast<CUgraphExec>(static_cast<std::uintptr_t>(exec));
  cudaGraphLaunch_v10000_params rp{handle, nullptr};
  cuGraphLaunch_params dp{handle, nullptr};
  api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, corr, 0, [&] {
    api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, corr + 1, 0, [] {}, &dp);
  }, &rp);
}

CUpti_ActivityKernel10 kernel_record(std::string name, std::uint32_t corr, std::uint64_t start_mono,
                                     std::uint64_t dur, std::uint32_t stream = 7) {
  std::lock_guard g(st().mu);
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  st().names.push_back(std::move(name));
  k.name = st().names.back().c_str();
  k.correlationId = corr;
  k.start = start_mono + st().offset;
  k.end = k.start + dur;
  k.completed = k.end;
  k.deviceId = 0;
  k.streamId = stream;
  return k;
}
/// A kernel record of a graph node's replay.
CUpti_ActivityKernel10 graph_kernel(std::string name, std::uint32_t corr, std::uint64_t node,
                                    std::uint64_t start_mono, std::uint64_t dur) {
  auto k = kernel_record(std::move(name), corr, start_mono, dur);
  k.graphNodeId = node;
  k.graphId = 9;
  return k;
}
void queue(const CUpti_ActivityKernel10& k) {
  std::lock_guard g(st().mu);
  st().queued.push_back(k);
}

void register_fake(std::uint32_t wait_ms = 50) {
  tp::register_backend("cupti_fake", [wait_ms] { return cu::make_backend(&api(), {.flush_wait_ms = wait_ms}); });
  tp::register_backend("cupti_fake_pc", [wait_ms] { return cu::make_backend(&pc_api(), {.flush_wait_ms = wait_ms}); });
}
/// CUPTI's MODULE_LOADED / MODULE_UNLOAD_STARTING resource callback for a module holding `cubin`.
void module_event(CUpti_CallbackId cbid, std::uint32_t id, const std::string& cubin) {
  CUpti_ModuleResourceData m{};
  m.moduleId = id;
  m.cubinSize = cubin.size();
  m.pCubin = cubin.data();
  CUpti_ResourceData rd{};
  rd.context = kCtx;
  rd.resourceDescriptor = &m;
  st().callback(st().userdata, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}
/// The "GPU" samples a PC (inside a range, or any time in continuous mode).
void pc(std::string fn, std::uint64_t offset, std::uint64_t crc, std::vector<std::pair<std::uint32_t, std::uint32_t>> stalls) {
  std::lock_guard g(st().mu);
  for (const auto& x : stalls) st().pc_pending_samples += x.second;
  st().pc_pending.push_back({std::move(fn), offset, crc, std::move(stalls)});
}

}  // namespace fake

bool have_gpu() {
  auto d = tilejit::Device::best();
  if (d.backend() == tilejit::Backend::interpreter) {
    MESSAGE("no GPU: skipping the CUPTI device test (", tilejit::Device::cuda_unavailable_reason(), ")");
    return false;
  }
  return true;
}

}  // namespace

// ---- pure pieces ----------------------------------------------------------------------

TEST_CASE("profiler cupti: clock calibration maps CUPTI time onto now_ns()") {
  SUBCASE("a pure offset") {
    const cu::ClockSample a{1'000'000, 50'000'000'000}, b{1'000'000 + 2'000'000'000, 52'000'000'000};
    const auto m = cu::fit_clock(a, b);
    CHECK(m.slope == 1.0);
    CHECK(m.to_mono(1'000'000) == 50'000'000'000);
    CHECK(m.to_mono(1'000'500) == 50'000'000'500);
    CHECK(m.to_mono(1'000'000 + 3'000'000'000ull) == 53'000'000'000);  // extrapolates past the latest sample
  }
  SUBCASE("a rate difference (CUPTI's clock 100 ppm fast) is fitted through both samples") {
    const cu::ClockSample a{10'000'000'000, 1'000'000'000};
    const cu::ClockSample b{10'000'000'000 + 10'001'000'000ull, 1'000'000'000 + 10'000'000'000ull};
    const auto m = cu::fit_clock(a, b);
    CHECK(m.slope == doctest::Approx(1.0 / 1.0001).epsilon(1e-12));
    CHECK(m.to_mono(a.cupti_ns) == a.mono_ns);
    CHECK(m.to_mono(b.cupti_ns) == b.mono_ns);
    CHECK(m.to_mono(a.cupti_ns + 5'000'500'000) == a.mono_ns + 5'000'000'000);  // halfway
    // A 1 ms kernel measured on CUPTI's clock is 999.9 us on the profiler's.
    CHECK(m.to_mono(b.cupti_ns + 1'000'000) - m.to_mono(b.cupti_ns) == 999'900);
  }
  SUBCASE("a baseline under 100 ms: slope 1 through the latest sample") {
    const cu::ClockSample a{1'000, 7'000}, b{1'000 + 50'000'000, 7'000 + 50'001'000};
    const auto m = cu::fit_clock(a, b);
    CHECK(m.slope == 1.0);
    CHECK(m.anchor.cupti_ns == b.cupti_ns);
    CHECK(m.to_mono(b.cupti_ns + 10) == b.mono_ns + 10);
    CHECK(cu::fit_clock(a, a).to_mono(a.cupti_ns + 3) == a.mono_ns + 3);  // one sample (start)
  }
  SUBCASE("a stepped clock (rate off by > 1000 ppm) or one running backwards: slope 1, latest anchor") {
    const cu::ClockSample a{0, 1'000'000'000}, stepped{1'000'000'000, 2'500'000'000};
    auto m = cu::fit_clock(a, stepped);
    CHECK(m.slope == 1.0);
    CHECK(m.to_mono(stepped.cupti_ns) == stepped.mono_ns);
    const cu::ClockSample back{5'000'000'000, 900'000'000};
    m = cu::fit_clock(back, a);
    CHECK(m.slope == 1.0);
    CHECK(m.to_mono(a.cupti_ns + 1) == a.mono_ns + 1);
  }
  SUBCASE("times before the profiler clock's origin clamp to 0") {
    const auto m = cu::fit_clock({5'000'000'000, 1'000}, {5'000'000'000, 1'000});
    CHECK(m.to_mono(5'000'000'000 - 999) == 1);
    CHECK(m.to_mono(5'000'000'000 - 5'000) == 0);
    CHECK(m.to_mono(0) == 0);
  }
  SUBCASE("the narrowest bracket wins, at its midpoint") {
    const cu::Bracket r[] = {{100, 7'000, 400}, {1'000, 8'000, 1'020}, {2'000, 9'000, 2'100}, {50, 1, 10}};
    const auto s = cu::best_sample(r, 4);  // the last one is malformed (after < before)
    CHECK(s.cupti_ns == 8'000);
    CHECK(s.mono_ns == 1'010);
  }
}

TEST_CASE("profiler cupti: an activity kernel record converts to a KernelRecord") {
  const auto clock = cu::fit_clock({1'000'000'000, 20'000}, {1'000'000'000, 20'000});  // mono = cupti - 999'980'000
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "VecAdd_96_float";
  k.correlationId = 4242;
  k.start = 1'000'005'000;
  k.end = 1'000'012'500;
  k.deviceId = 3;
  k.streamId = 13;
  k.gridX = 7;
  k.graphNodeId = 0x1234'5678'9abcull;
  k.graphId = 17;
  auto r = cu::to_kernel_record(k, clock);
  CHECK(r->graph_node_id == 0x1234'5678'9abcull);
  CHECK(r->graph_id == 17);
  REQUIRE(r.has_value());
  CHECK(r->name == "VecAdd_96_float");
  CHECK(r->correlation_id == 4242);
  CHECK(r->start_ns == 25'000);
  CHECK(r->end_ns == 32'500);
  CHECK(r->device_id == 3);
  CHECK(r->device_type == tp::DeviceType::CUDA);
  CHECK(r->stream_id == 13);

  SUBCASE("incomplete records (a forced flush of a running kernel) are rejected") {
    auto inc = k;
    inc.end = 0;
    CHECK_FALSE(cu::to_kernel_record(inc, clock).has_value());
    inc = k;
    inc.start = 0;
    CHECK_FALSE(cu::to_kernel_record(inc, clock).has_value());
    inc = k;
    inc.end = k.start - 1;
    CHECK_FALSE(cu::to_kernel_record(inc, clock).has_value());
  }
  SUBCASE("a record without a name, and any struct with CUPTI's kernel fields") {
    struct Like {
      std::uint64_t start, end;
      std::uint32_t deviceId, streamId, correlationId;
      const char* name;
    } like{1'000'000'100, 1'000'000'100, 1, 2, 9, nullptr};
    auto l = cu::to_kernel_record(like, clock);
    REQUIRE(l.has_value());
    CHECK(l->name == "<unnamed kernel>");
    CHECK(l->start_ns == 20'100);
    CHECK(l->end_ns == 20'100);  // a zero-length kernel is complete
    CHECK(l->correlation_id == 9);
  }
}

// ---- the whole path over the CUPTI test double ------------------------------------------

TEST_CASE("profiler cupti: kernels land under the scope that launched them (CUPTI test double)") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_fake");
  auto s = tp::start((dir / "run").string(), {.backend = "cupti_fake", .buffer_size = 1 << 20});
  REQUIRE(tp::stats(s).kernel_records);
  CHECK(fake::st().subscribed);
  CHECK(fake::st().activity_on);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}) == 1);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx}) == 1);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}) == 1);
  CHECK(cu::counters().sessions == 1);

  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope a("a");
    fake::driver_launch(11);
    fake::queue(fake::kernel_record("k_a", 11, t0 + 1'000, 5'000));
    fake::driver_launch(12);
    fake::queue(fake::kernel_record("k_a", 12, t0 + 7'000, 3'000));
  }
  {
    tp::Scope b("b");
    fake::runtime_launch(20, 21);  // the nested driver launch binds nothing
    fake::queue(fake::kernel_record("k_b", 20, t0 + 11'000, 7'000));
  }
  CHECK(tp::stats(s).pending_launches == 3);
  fake::queue(fake::kernel_record("stray", 99, t0 + 20'000, 1'000));  // never launched here: ROOT
  REQUIRE(tp::get(s, 0).has_value());  // flushes the backend while the session is active
  CHECK(tp::stats(s).pending_launches == 0);
  auto rep = tp::finalize(s);
  REQUIRE(rep.files.size() == 1);
  CHECK(fake::st().forced_flushes == 1);
  CHECK_FALSE(fake::st().subscribed);  // CUPTI handed back
  CHECK_FALSE(fake::st().activity_on);
  CHECK(fake::st().last_buffer_size == 1 << 20);  // Options::buffer_size
  CHECK(cu::counters().sessions == 0);

  json j = read_json(rep.files[0]);
  const json& root = j[0];
  CAPTURE(root.dump());
  auto top = child_names(root);
  std::sort(top.begin(), top.end());
  CHECK(top == std::vector<std::string>{"a", "b", "stray"});
  CHECK(at(root, {"stray"})["metrics"]["count"] == 1);
  const json& ka = at(root, {"a", "k_a"});
  CHECK(ka["metrics"]["time (ns)"] == 8'000);
  CHECK(ka["metrics"]["count"] == 2);
  CHECK(ka["metrics"]["device_type"] == "CUDA");
  CHECK(ka["metrics"]["device_id"] == "0");
  const json& kb = at(root, {"b", "k_b"});
  CHECK(kb["metrics"]["time (ns)"] == 7'000);
  CHECK(kb["metrics"]["count"] == 1);
  CHECK(at(root, {"b"})["metrics"]["time (ns) (inc)"] == 7'000);
  CHECK(j[1]["CUDA"]["0"]["arch"] == "90a");
  CHECK(j[1]["CUDA"]["0"]["num_sms"] == 132);
}

TEST_CASE("profiler cupti: records carry calibrated profiler-clock times (CUPTI test double)") {
  fake::reset();
  CaptureSink sink;
  auto b = cu::make_backend(&fake::api(), {.flush_wait_ms = 50});
  b->start(sink, {"direct", "", 64ull << 20});
  REQUIRE(sink.devices.size() == 1);
  const std::uint64_t t = tp::now_ns();
  fake::driver_launch(5);
  fake::queue(fake::kernel_record("timed", 5, t + 2'000'000, 250'000, 3));
  b->flush();
  REQUIRE(sink.kernels.size() == 1);
  const auto& r = sink.kernels[0];
  CHECK(r.name == "timed");
  CHECK(r.correlation_id == 5);
  CHECK(r.stream_id == 3);
  CHECK(r.end_ns - r.start_ns == 250'000);
  // CUPTI's clock is 5000 s ahead; the map brings the start back to within the
  // calibration bracket (generously: 1 ms on a loaded machine).
  const std::int64_t err = static_cast<std::int64_t>(r.start_ns) - static_cast<std::int64_t>(t + 2'000'000);
  CHECK(std::llabs(err) < 1'000'000);
  b->stop();
  CHECK_FALSE(fake::st().subscribed);
}

TEST_CASE("profiler cupti: flush waits for the record of the last launch, not for failed launches") {
  fake::reset();
  CaptureSink sink;
  auto b = cu::make_backend(&fake::api(), {.flush_wait_ms = 5'000});
  b->start(sink, {"wait", "", 64ull << 20});
  const std::uint64_t t = tp::now_ns();
  fake::driver_launch(31);
  std::thread late([&] {  // the kernel completes (its record becomes deliverable) 30 ms later
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    fake::queue(fake::kernel_record("late", 31, t, 1'000));
  });
  b->flush();
  late.join();
  CHECK(sink.kernels.size() == 1);

  fake::driver_launch(32, /*rc=*/1);  // CUDA_ERROR_INVALID_VALUE: no kernel will come
  const auto w0 = std::chrono::steady_clock::now();
  b->flush();
  CHECK(std::chrono::steady_clock::now() - w0 < std::chrono::seconds(2));
  b->stop();
}

TEST_CASE("profiler cupti: two sessions share one CUPTI subscription") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_two");
  auto s1 = tp::start((dir / "one").string(), {.backend = "cupti_fake"});
  auto s2 = tp::start((dir / "two").string(), {.backend = "cupti_fake"});
  CHECK(tp::stats(s1).kernel_records);
  CHECK(tp::stats(s2).kernel_records);
  CHECK(fake::st().subscribes == 1);
  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope x("x");
    fake::driver_launch(41);
    fake::queue(fake::kernel_record("kx", 41, t0 + 100, 900));
  }
  auto r1 = tp::finalize(s1);
  CHECK(fake::st().subscribed);  // s2 still uses it
  auto r2 = tp::finalize(s2);
  CHECK_FALSE(fake::st().subscribed);
  for (const auto& f : {r1.files.at(0), r2.files.at(0)}) {
    CAPTURE(f);
    json root = read_json(f)[0];
    CHECK(at(root, {"x", "kx"})["metrics"]["time (ns)"] == 900);
  }
}

TEST_CASE("profiler cupti: dropped records are counted and reported once") {
  fake::reset();
  CaptureSink sink;
  auto b = cu::make_backend(&fake::api(), {.flush_wait_ms = 50});
  b->start(sink, {"drop", "", 4096});
  const auto before = cu::counters().dropped;
  StderrCapture err;
  fake::st().dropped_next = 3;
  b->flush();
  std::string text = err.text();
  CHECK(cu::counters().dropped == before + 3);
  CHECK(contains(text, "dropped 3 kernel record"));
  CHECK(contains(text, "buffer_size"));
  b->stop();
}

// ---- CUDA graphs (CUPTI test double) ----------------------------------------------------------

TEST_CASE("profiler cupti: graph kernels land under replay site / <captured_at> / capture site") {
  fake::reset();
  fake::register_fake(/*wait_ms=*/5'000);  // a flush waiting for a captured launch would take 5 s
  auto dir = temp_dir("cupti_graph");
  const std::size_t sites0 = tp::graph_nodes();
  const auto c0 = cu::counters();
  auto s = tp::start((dir / "graph").string(), {.backend = "cupti_fake", .hook = "launch"});
  REQUIRE(tp::stats(s).kernel_records);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED}) == 1);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000}) == 1);
  {  // stream capture: each launch creates a node instead of running
    tp::Scope cap("capture");
    {
      tp::Scope f("forward");
      tp::LaunchScope op({.kernel = "gemm", .flops = 1000, .flops_width = 16, .bytes = 64});
      fake::captured_launch(100, 0x11);
    }
    {
      tp::Scope b("backward");
      fake::captured_launch(101, 0x12);
    }
  }
  CHECK(tp::stats(s).pending_launches == 0);  // captured launches run nothing: no binding kept
  CHECK(cu::counters().captured_launches == c0.captured_launches + 2);
  CHECK(tp::graph_nodes() == sites0 + 2);
  fake::instantiate(0x500, {{0x11, 0x21}, {0x12, 0x22}});
  CHECK(tp::graph_nodes() == sites0 + 4);  // the clones; the exec's "created" nodes are not capture sites
  CHECK(cu::counters().graph_execs == 1);

  const std::uint64_t t0 = tp::now_ns();
  for (std::uint32_t i = 0; i < 3; ++i) {
    tp::Scope step("step");
    const std::uint32_t corr = 200 + 10 * i;
    fake::graph_launch(corr, 0x500);
    fake::queue(fake::graph_kernel("gemm", corr, 0x21, t0 + 10'000 * i, 1'000));
    fake::queue(fake::graph_kernel("bwd", corr, 0x22, t0 + 10'000 * i + 2'000, 500));
  }
  CHECK(cu::counters().graph_launches == c0.graph_launches + 3);  // the driver call inside is not another
  CHECK(tp::stats(s).pending_launches == 3);
  const auto w0 = std::chrono::steady_clock::now();
  const auto text = tp::get(s, 0);  // flushes
  CHECK(std::chrono::steady_clock::now() - w0 < std::chrono::seconds(2));
  REQUIRE(text.has_value());
  CHECK(tp::stats(s).pending_launches == 0);  // each launch's two kernels came
  CHECK(tp::stats(s).graph_kernels_flat == 0);
  json root = json::parse(*text)[0];
  CAPTURE(root.dump());
  const json& at_node = at(root, {"step", std::string(tp::kCapturedAtFrame)});
  CHECK(at_node["metrics"]["graph_replays"] == 3);
  const json& gemm = at(root, {"step", "<captured_at>", "capture", "forward", "gemm"});
  CHECK(gemm["metrics"]["count"] == 3);
  CHECK(gemm["metrics"]["time (ns)"] == 3'000);
  CHECK(gemm["metrics"]["flops16"] == 3'000);  // the captured op's flops, once per replay
  CHECK(gemm["metrics"]["bytes"] == 192);
  CHECK(gemm["children"].empty());  // the kernel landed on its op node
  const json& bwd = at(root, {"step", "<captured_at>", "capture", "backward", "bwd"});
  CHECK(bwd["metrics"]["count"] == 3);
  CHECK(bwd["metrics"]["time (ns)"] == 1'500);
  CHECK(at(root, {"step"})["metrics"]["time (ns) (inc)"] == 4'500);
  // At capture time the op was recorded once, with no kernel.
  const json& captured_op = at(root, {"capture", "forward", "gemm"});
  CHECK(captured_op["metrics"]["flops16"] == 1'000);
  CHECK_FALSE(captured_op["metrics"].contains("count"));

  // Destroying the graph and its exec forgets their nodes.
  for (std::uint64_t n : {0x11, 0x12, 0x21, 0x22}) fake::graph_event(CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING, n);
  fake::graph_event(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, 0, 0, 0x500);
  CHECK(tp::graph_nodes() == sites0);
  CHECK(cu::counters().graph_execs == 0);
  tp::finalize(s);
  CHECK(tp::graph_nodes() == 0);  // CUPTI torn down: nothing of the graphs is kept
}

TEST_CASE("profiler cupti: graph kernels in a Chrome trace have one flow each") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_graph_trace");
  auto s = tp::start((dir / "gt").string(), {.backend = "cupti_fake", .format = "chrome_trace"});
  {
    tp::Scope cap("cap");
    fake::captured_launch(10, 0x31);
    fake::captured_launch(11, 0x32);
  }
  fake::instantiate(0x600, {{0x31, 0x41}, {0x32, 0x42}});
  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope r("replay");
    fake::graph_launch(20, 0x600);
    fake::queue(fake::graph_kernel("k1", 20, 0x41, t0 + 1'000, 100));
    fake::queue(fake::graph_kernel("k2", 20, 0x42, t0 + 2'000, 100));
  }
  auto rep = tp::finalize(s);
  json j = read_json(rep.files.at(0));
  std::set<std::string> ids;
  int s_count = 0, f_count = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("name", "") != "launch->kernel") continue;
    ids.insert(e["id"].get<std::string>());
    (e["ph"] == "s" ? s_count : f_count) += 1;
  }
  CHECK(s_count == 2);
  CHECK(f_count == 2);
  CHECK(ids == std::set<std::string>{"launch:20:" + std::to_string(0x41), "launch:20:" + std::to_string(0x42)});
  long long kernel_lane = -1;
  for (const auto& e : j["traceEvents"])
    if (e.value("cat", "") == "kernel" && e["name"] == "k1") {
      CHECK(e["args"]["call_stack"] == json::array({"replay", "<captured_at>", "cap", "k1"}));
      kernel_lane = e["tid"].get<long long>();
    }
  // The graph lane: one slice for the replay, spanning both kernels (k1 at t0 + 1 us, k2 ending at t0 + 2.1 us),
  // at the replay's site, on a lane named after the kernels' stream.
  std::vector<json> replays;
  std::map<long long, std::string> lane_names;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") == "graph") replays.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") lane_names[e["tid"].get<long long>()] = e["args"]["name"];
  }
  REQUIRE(replays.size() == 1);
  const json& r = replays[0];
  CHECK(r["name"] == "graph replay");
  CHECK(r["ph"] == "X");
  CHECK(r["args"]["correlation_id"] == 20);
  CHECK(r["args"]["kernels"] == 2);
  CHECK(r["args"]["call_stack"] == json::array({"replay"}));
  CHECK(r["dur"].get<double>() == doctest::Approx(1.1));
  const long long lane = r["tid"].get<long long>();
  CHECK(lane != kernel_lane);
  REQUIRE(lane_names.count(lane) == 1);
  REQUIRE(lane_names.count(kernel_lane) == 1);
  CHECK(lane_names[lane] == lane_names[kernel_lane] + " Graphs");
}

TEST_CASE("profiler cupti: a graph captured before the session is attributed flat, reported, and not leaked") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_graph_early");
  auto s = tp::start((dir / "early").string(), {.backend = "cupti_fake"});
  StderrCapture err;
  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope late("late");
    fake::graph_launch(300, 0x777);  // an exec whose instantiation was never seen: size unknown
    fake::queue(fake::graph_kernel("old_k", 300, 0x999, t0 + 1'000, 100));
    fake::queue(fake::graph_kernel("old_k", 300, 0x998, t0 + 2'000, 100));
  }
  auto text = tp::get(s, 0);
  const std::string msg = err.text();
  REQUIRE(text.has_value());
  CHECK(contains(msg, "captured before profiling began"));
  CHECK(contains(msg, "old_k"));
  json root = json::parse(*text)[0];
  CAPTURE(root.dump());
  CHECK(child_names(at(root, {"late"})) == std::vector<std::string>{"old_k"});  // flat: no <captured_at>
  CHECK(at(root, {"late", "old_k"})["metrics"]["count"] == 2);
  CHECK(tp::stats(s).graph_kernels_flat == 2);
  // A launch of unknown size keeps its binding (more kernels may come) ...
  CHECK(tp::stats(s).pending_launches == 1);
  fake::queue(fake::graph_kernel("old_k", 300, 0x997, t0 + 3'000, 100));
  tp::advance_phase(s);
  CHECK(tp::stats(s).pending_launches == 1);
  // ... until it has survived two phase boundaries: bounded, never a leak.
  tp::advance_phase(s);
  tp::advance_phase(s);
  CHECK(tp::stats(s).pending_launches == 0);
  CHECK(tp::stats(s).graph_kernels_flat == 3);
  auto rep = tp::finalize(s);
  CHECK(rep.errors.empty());
}

// ---- PC sampling (pure mapping and aggregation; attribution) ----------------------------------

TEST_CASE("profiler cupti: PC samples are grouped by kernel and source line, with stall reasons") {
  CHECK(cu::stall_short_name("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == "long_scoreboard");
  CHECK(cu::stall_short_name("smsp__pcsamp_warps_issue_stalled_barrier_not_issued") == "barrier_not_issued");
  CHECK(cu::stall_short_name("smsp__pcsamp_sample_count") == "sample_count");
  CHECK(cu::stall_short_name("other") == "other");

  char gemm[] = "gemm_kernel", softmax[] = "softmax_kernel";
  CUpti_PCSamplingStallReason r0[] = {{1, 5}, {2, 3}};  // index 1: long_scoreboard, 2: barrier
  CUpti_PCSamplingStallReason r1[] = {{1, 2}, {7, 4}, {2, 0}};
  CUpti_PCSamplingStallReason r2[] = {{2, 6}};
  CUpti_PCSamplingStallReason r3[] = {{1, 1}};
  CUpti_PCSamplingPCData pcs[4] = {};
  auto set = [&](CUpti_PCSamplingPCData& p, char* fn, std::uint64_t off, CUpti_PCSamplingStallReason* r, std::size_t n) {
    p.size = sizeof p;
    p.cubinCrc = 0xC0FFEE;
    p.functionName = fn;
    p.pcOffset = off;
    p.stallReason = r;
    p.stallReasonCount = n;
  };
  set(pcs[0], gemm, 0x10, r0, 2);
  set(pcs[1], gemm, 0x20, r1, 3);      // same line as 0x10
  set(pcs[2], softmax, 0x30, r2, 1);
  set(pcs[3], gemm, 0x400, r3, 1);     // no line info
  CUpti_PCSamplingData data{};
  data.size = sizeof data;
  data.totalNumPcs = 4;
  data.pPcData = pcs;
  const std::unordered_map<std::uint32_t, std::string> names{{1, "long_scoreboard"}, {2, "barrier"}};
  std::vector<std::tuple<std::uint64_t, std::string, std::uint64_t>> asked;
  auto line_of = [&](std::uint64_t crc, const char* fn, std::uint64_t off) -> std::optional<std::string> {
    asked.emplace_back(crc, fn, off);
    if (off == 0x10 || off == 0x20) return "gemm.cu:12";
    if (off == 0x30) return "softmax.cu:40";
    return std::nullopt;
  };
  auto out = cu::aggregate_pc_samples(data, names, line_of);
  CHECK(asked.size() == 4);
  CHECK(std::get<0>(asked[0]) == 0xC0FFEE);
  REQUIRE(out.size() == 2);
  CHECK(out[0].kernel == "gemm_kernel");
  REQUIRE(out[0].lines.size() == 2);
  const tp::PcSampleLine& l12 = out[0].lines[0];
  CHECK(l12.location == "gemm.cu:12");
  CHECK(l12.samples == 14);  // 5 + 3 + 2 + 4
  using Stalls = std::vector<std::pair<std::string, std::uint64_t>>;
  CHECK(l12.stalls == Stalls{{"long_scoreboard", 7}, {"barrier", 3}, {"reason_7", 4}});  // zero counts dropped
  CHECK(out[0].lines[1].location == "gemm_kernel+0x400");
  CHECK(out[0].lines[1].samples == 1);
  CHECK(out[1].kernel == "softmax_kernel");
  CHECK(out[1].lines.at(0).stalls == Stalls{{"barrier", 6}});
  CHECK(cu::aggregate_pc_samples(data, names, nullptr)[0].lines[0].location == "gemm_kernel+0x10");

  SUBCASE("recorded on the launching thread: child frames of the kernel node") {
    register_mock();
    auto dir = temp_dir("pcsampling");
    auto s = tp::start((dir / "pc").string(), {.backend = "mock"});
    const std::uint64_t t0 = tp::now_ns();
    {
      tp::Scope step("step");
      tp::correlate_launch(501);
      MockBackend::latest()->push(record("gemm_kernel", 501, t0 + 100, 1'000));
      tp::record_pc_samples(out[0]);
      tp::record_pc_samples(out[0]);  // a second launch of the same kernel adds up
    }
    json root = json::parse(*tp::get(s, 0))[0];
    CAPTURE(root.dump());
    const json& k = at(root, {"step", "gemm_kernel"});
    CHECK(k["metrics"]["count"] == 1);
    CHECK(k["metrics"]["pc_samples (inc)"] == 30);
    const json& line = at(root, {"step", "gemm_kernel", "gemm.cu:12"});
    CHECK(line["metrics"]["pc_samples"] == 28);
    CHECK(line["metrics"]["stall:long_scoreboard"] == 14);
    CHECK(line["metrics"]["stall:barrier"] == 6);
    CHECK(at(root, {"step", "gemm_kernel", "gemm_kernel+0x400"})["metrics"]["pc_samples"] == 2);
    tp::finalize(s);
  }
}

// ---- PC sampling collection over the CUPTI test double --------------------------------------

TEST_CASE("profiler cupti: kernel-serialized PC sampling gives per-line frames under the launching scope") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_pc");
  tp::Options o{.backend = "cupti_fake_pc", .hook = "launch"};
  o.pc_sampling = {.enabled = true, .period = 10, .stall_reasons = {"long_scoreboard", "barrier"},
                   .scratch_buffer_size = 1 << 20, .hardware_buffer_size = 16 << 20, .max_pcs = 2};
  auto s = tp::start((dir / "pc").string(), o);
  REQUIRE(tp::stats(s).kernel_records);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED}) == 1);
  CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING}) == 1);
  fake::module_event(CUPTI_CBID_RESOURCE_MODULE_LOADED, 1, "CUBIN-A");  // the kernel's module, kept for lines
  CHECK(cu::counters().pc_sampling.cubins == 1);
  CHECK(fake::st().pc_enables == 0);  // a context is enabled at its first launch

  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope step("step");
    tp::LaunchScope op({.kernel = "vec_kernel", .bytes = 64});
    fake::api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 11, 0, [&] {
      CHECK(fake::st().pc_sampling);  // started at API entry
      fake::pc("vec_kernel", 0x10, fake::kCrcA, {{2, 5}, {5, 1}});
      fake::pc("vec_kernel", 0x20, fake::kCrcA, {{2, 2}});
      fake::pc("vec_kernel", 0x400, fake::kCrcA, {{5, 3}});  // no line info
    });
    CHECK_FALSE(fake::st().pc_sampling);  // stopped at API exit
    fake::queue(fake::kernel_record("vec_kernel", 11, t0 + 100, 1'000));
  }
  CHECK(fake::st().pc_enables == 1);
  CHECK(fake::st().pc_starts == 1);
  CHECK(fake::st().pc_stops == 1);
  CHECK(fake::st().pc_reads == 2);  // 3 PCs through 2-PC buffers: read until none remain
  CHECK(fake::st().pc_reads_into_config == 0);  // a second buffer, never the configuration buffer
  // The range is one kernel: earlier work done before it starts, the kernel done before it stops.
  CHECK(fake::st().pc_log == std::vector<std::string>{"sync", "start", "sync", "stop", "read", "read"});
  CHECK(fake::st().kernel_kind_on);  // kernel records from the KERNEL kind while sampling (as Proton)
  CHECK_FALSE(fake::st().activity_on);
  using A = std::map<int, std::uint64_t>;
  CHECK(fake::st().pc_config == A{{CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD, 10},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON, 2},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE, 1 << 20},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE, 16 << 20},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE,
                                   CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL, 1},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT,
                                   CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED},
                                  {CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER, 1}});
  CHECK(fake::st().pc_selected == std::vector<std::uint32_t>{2, 5});
  REQUIRE(fake::st().pc_buffer != nullptr);
  CHECK(std::size_t{fake::st().pc_buffer->collectNumPcs} == 2);
  {
    tp::Scope step("step");  // a second launch in the same context: no second enable
    fake::api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 12, 0,
                   [&] { fake::pc("vec_kernel", 0x20, fake::kCrcA, {{2, 4}}); });
    fake::queue(fake::kernel_record("vec_kernel", 12, t0 + 2'000, 1'000));
  }
  CHECK(fake::st().pc_enables == 1);
  CHECK(fake::st().pc_starts == 2);
  CHECK(cu::counters().pc_sampling.contexts == 1);

  json root = json::parse(*tp::get(s, 0))[0];
  CAPTURE(root.dump());
  const json& k = at(root, {"step", "vec_kernel"});
  CHECK(k["metrics"]["count"] == 2);
  CHECK(k["metrics"]["bytes"] == 64);
  CHECK(k["metrics"]["pc_samples (inc)"] == 15);
  const json& line = at(root, {"step", "vec_kernel", "vec.cu:12"});
  CHECK(line["metrics"]["pc_samples"] == 12);
  CHECK(line["metrics"]["stall:long_scoreboard"] == 11);
  CHECK(line["metrics"]["stall:barrier"] == 1);
  const json& raw = at(root, {"step", "vec_kernel", "vec_kernel+0x400"});
  CHECK(raw["metrics"]["pc_samples"] == 3);
  CHECK(raw["metrics"]["stall:barrier"] == 3);

  fake::module_event(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, 1, "CUBIN-A");
  CHECK(cu::counters().pc_sampling.cubins == 0);  // bounded: unloaded modules are forgotten
  tp::finalize(s);
  CHECK(fake::st().pc_disables == 1);
  CHECK(cu::counters().pc_sampling.contexts == 0);
  CHECK_FALSE(fake::st().kernel_kind_on);  // all kernel activity off with the last session
  CHECK_FALSE(fake::st().activity_on);
}

TEST_CASE("profiler cupti: continuous PC sampling is read at flush and lands under ROOT/<kernel>") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_pc_cont");
  tp::Options o{.backend = "cupti_fake_pc"};
  o.pc_sampling = {.enabled = true, .collection = tp::PcSamplingOptions::Collection::continuous};
  auto s = tp::start((dir / "pc").string(), o);
  fake::module_event(CUPTI_CBID_RESOURCE_MODULE_LOADED, 3, "CUBIN-A");
  {
    tp::Scope step("step");
    fake::driver_launch(21);
    fake::queue(fake::kernel_record("vec_kernel", 21, tp::now_ns(), 1'000));
  }
  CHECK(fake::st().pc_enables == 1);
  CHECK(fake::st().pc_starts == 0);  // no ranges: sampling runs all the time
  CHECK(fake::st().pc_config.at(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE) ==
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
  CHECK(fake::st().pc_config.at(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL) == 0);
  CHECK(fake::st().pc_config.at(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON) == 3);  // all, by name
  CHECK(fake::st().pc_selected == std::vector<std::uint32_t>{2, 5, 9});
  CHECK(fake::st().pc_config.count(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD) == 0);  // CUPTI's default
  fake::pc("vec_kernel", 0x10, fake::kCrcA, {{9, 4}});
  json root = json::parse(*tp::get(s, 0))[0];  // flush reads the samples
  CAPTURE(root.dump());
  CHECK(at(root, {"step", "vec_kernel"})["metrics"]["count"] == 1);
  const json& line = at(root, {"vec_kernel", "vec.cu:12"});
  CHECK(line["metrics"]["pc_samples"] == 4);
  CHECK(line["metrics"]["stall:selected"] == 4);
  fake::pc("vec_kernel", 0x20, fake::kCrcA, {{2, 1}});  // read at finalize, before sampling is disabled
  auto rep = tp::finalize(s);
  CHECK(fake::st().pc_disables == 1);
  json fin = read_json(rep.files.at(0))[0];
  CHECK(at(fin, {"vec_kernel", "vec.cu:12"})["metrics"]["pc_samples"] == 5);
}

TEST_CASE("profiler cupti: PC sampling unavailable gives a message and a session with kernel records") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_pc_none");
  tp::Options o{.backend = "cupti_fake"};  // a libcupti without the PC Sampling API
  o.pc_sampling.enabled = true;
  SUBCASE("libcupti lacks the PC Sampling API") {}
  SUBCASE("the context refuses (CUPTI_ERROR_NOT_SUPPORTED)") {
    o.backend = "cupti_fake_pc";
    fake::st().pc_enable_result = CUPTI_ERROR_NOT_SUPPORTED;
  }
  StderrCapture err;
  auto s = tp::start((dir / "pc").string(), o);
  REQUIRE(tp::stats(s).kernel_records);
  {
    tp::Scope step("step");
    fake::driver_launch(31);
    fake::queue(fake::kernel_record("vec_kernel", 31, tp::now_ns(), 1'000));
    fake::driver_launch(32);
    fake::queue(fake::kernel_record("vec_kernel", 32, tp::now_ns(), 1'000));
  }
  json root = json::parse(*tp::get(s, 0))[0];
  const std::string text = err.text();
  MESSAGE("the message: " << text);
  CHECK(contains(text, "PC sampling unavailable"));
  if (o.backend == "cupti_fake") {
    CHECK(contains(text, "lacks cuptiPCSamplingEnable"));
  } else {
    CHECK(contains(text, "CUPTI_ERROR_NOT_SUPPORTED"));
    CHECK(contains(text, "compute capability"));
    CHECK(cu::counters().pc_sampling.failed_contexts >= 1);
    CHECK(fake::st().pc_config.empty());
  }
  CHECK(fake::st().pc_starts == 0);
  const json& k = at(root, {"step", "vec_kernel"});
  CHECK(k["metrics"]["count"] == 2);
  CHECK(k["children"].empty());
  tp::finalize(s);
  CHECK(fake::st().pc_disables == 0);
}

TEST_CASE("profiler cupti: pc_sampling options are checked") {
  auto dir = temp_dir("cupti_pc_opts");
  tp::Options o;
  o.pc_sampling.enabled = true;
  CHECK_THROWS_AS(tp::start((dir / "a").string(), o), tilejit::InvalidArgument);  // no backend
  register_mock();
  o.backend = "mock";
  o.pc_sampling.period = 4;
  CHECK_THROWS_AS(tp::start((dir / "b").string(), o), tilejit::InvalidArgument);
  o.pc_sampling.period = 32;
  CHECK_THROWS_AS(tp::start((dir / "c").string(), o), tilejit::InvalidArgument);
  o.pc_sampling.period = 5;
  o.pc_sampling.max_pcs = 0;
  CHECK_THROWS_AS(tp::start((dir / "d").string(), o), tilejit::InvalidArgument);
  o.pc_sampling.max_pcs = 1;
  auto s = tp::start((dir / "e").string(), o);
  CHECK(MockBackend::latest()->config().pc_sampling.period == 5);  // handed to the backend
  CHECK(MockBackend::latest()->config().pc_sampling.enabled);
  tp::finalize(s);
}

TEST_CASE("profiler cupti: PC records are read through a second buffer; the configuration buffer stays CUPTI's") {
  // The H200 run of 2026-11-29 sampled 3 launches and read no sample: the
  // reader zeroed the configuration buffer's totalNumPcs and passed that very
  // buffer to cuptiPCSamplingGetData, so the records CUPTI had put there at
  // the range's end counted as read. This double behaves as NVIDIA's samples
  // use CUPTI (records moved to the reader's buffer); the second subcase as a
  // CUPTI that leaves them where it put them. Every sample is counted once.
  fake::reset();
  fake::register_fake();
  bool stay = false;
  SUBCASE("CUPTI moves the configuration buffer's records to the reader") {}
  SUBCASE("CUPTI leaves them in the configuration buffer") { stay = true; }
  fake::st().pc_records_stay_in_config = stay;
  auto dir = temp_dir("cupti_pc_buffers");
  tp::Options o{.backend = "cupti_fake_pc"};
  o.pc_sampling = {.enabled = true, .period = 8, .max_pcs = 4};
  auto s = tp::start((dir / "pc").string(), o);
  fake::module_event(CUPTI_CBID_RESOURCE_MODULE_LOADED, 1, "CUBIN-A");
  {
    tp::Scope step("step");
    fake::api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 51, 0, [&] {
      for (std::uint64_t off = 0x100; off < 0x160; off += 0x10) fake::pc("vec_kernel", off, fake::kCrcA, {{2, 1}, {9, 2}});
    });  // 6 PCs, 18 samples: 4 fit in the configuration buffer, 2 remain
    fake::queue(fake::kernel_record("vec_kernel", 51, tp::now_ns(), 1'000));
  }
  const auto c = cu::counters().pc_sampling;
  CHECK(fake::st().pc_reads_into_config == 0);
  CHECK(c.samples == 18);
  CHECK(c.ranges == 1);
  CHECK(c.empty_ranges == 0);
  CHECK(c.cupti_samples == 18);
  CHECK(c.config_buffer_pcs == (stay ? 4u : 0u));  // read there only when CUPTI left them there
  CHECK(c.problem.empty());
  REQUIRE(fake::st().pc_buffer != nullptr);
  CHECK(std::size_t{fake::st().pc_buffer->collectNumPcs} == 4);
  json root = json::parse(*tp::get(s, 0))[0];
  CAPTURE(root.dump());
  const json& k = at(root, {"step", "vec_kernel"});
  CHECK(k["metrics"]["pc_samples (inc)"] == 18);
  CHECK(k["metrics"]["stall:selected (inc)"] == 12);
  CHECK(k["children"].size() == 6);  // no line info at these offsets: one frame per PC
  tp::finalize(s);
  CHECK(cu::counters().pc_sampling.samples == 18);  // nothing read twice at disable
}

TEST_CASE("profiler cupti: PC sampling failures say why instead of giving nothing") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_pc_why");
  tp::Options o{.backend = "cupti_fake_pc"};
  o.pc_sampling = {.enabled = true, .period = 10};
  std::string expect_live, expect_end;
  SUBCASE("cuptiPCSamplingGetData fails") {
    fake::st().pc_get_data_result = CUPTI_ERROR_NOT_SUPPORTED;
    expect_live = "cuptiPCSamplingGetData";
    expect_end = "the first failure: cuptiPCSamplingGetData";
  }
  SUBCASE("the kernels are shorter than the sampling interval") { expect_end = "2^10 cycles"; }
  SUBCASE("every sample is in kernels CUPTI gives no PC record for") {
    fake::st().pc_nonuser_next = 40;
    expect_end = "non-user kernels";
  }
  StderrCapture err;
  auto s = tp::start((dir / "pc").string(), o);
  {
    tp::Scope step("step");
    fake::driver_launch(61);  // no PC sampled in the range
    fake::queue(fake::kernel_record("vec_kernel", 61, tp::now_ns(), 1'000));
  }
  const auto live = cu::counters().pc_sampling;
  CHECK(live.ranges == 1);
  CHECK(live.empty_ranges == 1);
  tp::finalize(s);
  const std::string text = err.text();
  MESSAGE("the messages: " << text);
  if (!expect_live.empty()) {
    CHECK(contains(text, expect_live));
    CHECK(contains(text, "CUPTI_ERROR_NOT_SUPPORTED"));
    CHECK(live.read_errors >= 1);
    CHECK(contains(live.problem, "cuptiPCSamplingGetData"));
  }
  CHECK(contains(text, "1 kernel launch(es) were sampled but no PC sample came back"));
  CHECK(contains(text, expect_end));
  CHECK(contains(tp::cupti_report(), "PC sampling: "));
}

TEST_CASE("profiler cupti: a libcupti older than 12.4 is refused for PC sampling (another PC record layout)") {
  fake::reset();
  fake::register_fake();
  fake::st().version = 21;
  auto dir = temp_dir("cupti_pc_old");
  tp::Options o{.backend = "cupti_fake_pc"};
  o.pc_sampling.enabled = true;
  StderrCapture err;
  auto s = tp::start((dir / "pc").string(), o);
  const std::string text = err.text();
  CHECK(tp::stats(s).kernel_records);
  CHECK(contains(text, "PC sampling unavailable"));
  CHECK(contains(text, "API version 21"));
  fake::driver_launch(71);
  CHECK(fake::st().pc_enables == 0);
  CHECK(fake::st().activity_on);  // an ordinary session: concurrent kernel records
  tp::finalize(s);
}

TEST_CASE("profiler cupti: kernel records come from KERNEL while a session samples PCs, CONCURRENT_KERNEL otherwise") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_kinds");
  auto plain = tp::start((dir / "plain").string(), {.backend = "cupti_fake_pc"});
  CHECK(fake::st().activity_on);
  CHECK_FALSE(fake::st().kernel_kind_on);
  CHECK(cu::counters().kernel_kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  tp::Options o{.backend = "cupti_fake_pc"};
  o.pc_sampling.enabled = true;
  auto sampled = tp::start((dir / "sampled").string(), o);
  CHECK_FALSE(fake::st().activity_on);  // the two kinds exclude each other: switched
  CHECK(fake::st().kernel_kind_on);
  CHECK(cu::counters().kernel_kind == CUPTI_ACTIVITY_KIND_KERNEL);
  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope a("a");
    fake::driver_launch(81);
    auto k = fake::kernel_record("k", 81, t0, 1'000);
    k.kind = CUPTI_ACTIVITY_KIND_KERNEL;  // a record of the KERNEL kind
    fake::queue(k);
  }
  tp::finalize(sampled);
  CHECK(fake::st().activity_on);  // back, for the session still running
  CHECK_FALSE(fake::st().kernel_kind_on);
  json root = json::parse(*tp::get(plain, 0))[0];
  CHECK(at(root, {"a", "k"})["metrics"]["count"] == 1);
  tp::finalize(plain);
  CHECK_FALSE(fake::st().activity_on);
  CHECK(cu::counters().kernel_kind == 0);
}

// ---- activity buffers ------------------------------------------------------------------------

namespace {
/// Pages of [p, p + n) resident in memory (mincore).
std::size_t resident_pages(const void* p, std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((n + page - 1) / page);
  if (::mincore(const_cast<void*>(p), n, v.data()) != 0) return 0;
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](unsigned char c) { return c & 1; }));
}
bool all_zero(const std::uint8_t* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::uint8_t b) { return b == 0; });
}
}  // namespace

TEST_CASE("profiler cupti: BufferPool hands out zeroed buffers, touched up front; extra ones give their pages back") {
  constexpr std::size_t kSize = 64 << 10;
  const std::size_t pages = kSize / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  cu::BufferPool pool;
  REQUIRE(pool.reserve(kSize, 2));
  auto st = pool.stats();
  CHECK(st.mapped == 2);
  CHECK(st.resident == 2);
  CHECK(st.size == kSize);
  std::uint8_t* a = pool.take();
  std::uint8_t* b = pool.take();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(resident_pages(a, kSize) == pages);  // faulted in at reserve(), not when CUPTI writes
  CHECK(all_zero(a, kSize));
  std::uint8_t* c = pool.take();  // both reserved buffers are out: a new mapping
  REQUIRE(c);
  CHECK(pool.stats().extra == 1);
  CHECK(pool.stats().out == 3);
  CHECK(resident_pages(c, kSize) == 0);

  // CUPTI wrote 1000 bytes of records and, past them, part of one more.
  std::memset(a, 0xAB, 1000);
  std::memset(a + 1000, 0xCD, 4000);  // beyond `used`, into the next page: a record cut short
  pool.give(a, kSize, 1000);
  CHECK(all_zero(a, kSize));
  CHECK(resident_pages(a, kSize) == pages);  // stays touched
  std::memset(c, 0xEF, kSize);
  CHECK(resident_pages(c, kSize) == pages);
  pool.give(c, kSize, kSize);
  CHECK(resident_pages(c, kSize) == 0);  // its pages are given back...
  CHECK(all_zero(c, kSize));              // ...and read as zero
  CHECK(pool.stats().mapped == 3);        // the address range is kept for the next time
  CHECK(pool.take() == a);                // a resident buffer first
  CHECK(pool.take() == c);
  pool.give(a, kSize, 0);
  pool.give(b, kSize, 0);
  pool.give(c, kSize, 0);

  // At most kMaxPooled are kept.
  std::vector<std::uint8_t*> many;
  for (std::size_t i = 0; i < cu::BufferPool::kMaxPooled + 4; ++i) many.push_back(pool.take());
  for (auto* p : many) pool.give(p, kSize, 0);
  CHECK(pool.stats().mapped == cu::BufferPool::kMaxPooled);

  // Another size: pooled buffers go at once, one still out when it comes back.
  std::uint8_t* old = pool.take();
  REQUIRE(pool.reserve(2 * kSize, 1));
  CHECK(pool.stats().mapped == 2);  // `old` and the new resident one
  pool.give(old, kSize, 0);
  CHECK(pool.stats().mapped == 1);
  std::uint8_t* fresh = pool.take();
  CHECK(pool.stats().size == 2 * kSize);
  pool.clear();
  CHECK(pool.stats().mapped == 1);  // out: unmapped when it comes back
  pool.give(fresh, 2 * kSize, 0);
  CHECK(pool.stats().mapped == 0);
  CHECK(pool.take() == nullptr);  // cleared: no size until reserve()
}

TEST_CASE("profiler cupti: CUPTI gets pooled, zeroed, resident buffers and does not zero them itself") {
  fake::reset();
  CaptureSink sink;
  SUBCASE("the layer has cuptiActivitySetAttribute") {}
  SUBCASE("an older layer without it: CUPTI zeroes each buffer itself") {
    auto b = cu::make_backend(&fake::api_without_attributes(), {.flush_wait_ms = 50});
    b->start(sink, {"noattr", "", 1 << 20});
    for (std::uint32_t i = 0; i < 5; ++i) {
      fake::driver_launch(100 + i);
      fake::queue(fake::kernel_record("k", 100 + i, tp::now_ns(), 1'000));
      b->flush();
    }
    CHECK_FALSE(cu::counters().client_zeroes_buffers);
    CHECK(fake::st().cupti_memset_bytes == 5u << 20);  // what the attribute saves the launching thread
    CHECK(sink.kernels.size() == 5);
    CHECK(contains(tp::cupti_report(), "CUPTI zeroes buffers: yes"));
    b->stop();
    return;
  }
  constexpr std::size_t kSize = 1 << 20;
  auto b = cu::make_backend(&fake::api(), {.flush_wait_ms = 50});
  b->start(sink, {"pool", "", kSize});
  CHECK(fake::st().zeroed_out_at_register == 1);  // told before CUPTI could ask for a buffer
  auto c0 = cu::counters();
  CHECK(c0.client_zeroes_buffers);
  CHECK(c0.buffers.mapped == 2);
  CHECK(c0.buffers.resident == 2);
  CHECK(c0.buffers.size == kSize);
  for (std::uint32_t i = 0; i < 20; ++i) {  // 20 flushes, each taking a buffer and giving it back
    fake::driver_launch(200 + i);
    fake::queue(fake::kernel_record("k", 200 + i, tp::now_ns(), 1'000));
    b->flush();
  }
  CHECK(sink.kernels.size() == 20);
  CHECK(fake::st().dirty_buffers == 0);        // every buffer arrived zeroed, as promised
  CHECK(fake::st().cupti_memset_bytes == 0);   // CUPTI zeroed nothing
  std::set<std::uint8_t*> distinct(fake::st().buffers_seen.begin(), fake::st().buffers_seen.end());
  CHECK(fake::st().buffers_seen.size() == 20);
  CHECK(distinct.size() <= 2);  // recycled
  const std::size_t pages = kSize / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (auto* p : distinct) CHECK(resident_pages(p, kSize) == pages);
  const auto c1 = cu::counters();
  CHECK(c1.buffers.extra == 0);
  CHECK(c1.buffers.takes == c0.buffers.takes + 20);
  CHECK(c1.buffers_completed == c0.buffers_completed + 20);
  CHECK(contains(tp::cupti_report(), "CUPTI zeroes buffers: no"));
  CHECK(fake::st().per_thread == 1);  // records of each launching thread in its own buffer
  CHECK(cu::counters().per_thread_buffers);
  b->stop();
  CHECK(fake::st().zeroed_out == 0);  // CUPTI's settings put back for the next client
  CHECK(fake::st().per_thread == 0);
  CHECK(cu::counters().buffers.mapped == 0);
}

TEST_CASE("profiler cupti: the last session to stop detaches CUPTI from the process (cuptiFinalize), after its last flush") {
  // Unsubscribing alone leaves CUPTI's hooks in the driver: on the H200, 100K
  // tiny launches with no CUPTI session ran 1.11x slower after CUPTI sessions.
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_detach");
  const auto before = cu::counters().finalizes;
  for (int round = 0; round < 2; ++round) {  // and the next session attaches it again
    auto s1 = tp::start((dir / "one").string(), {.backend = "cupti_fake"});
    auto s2 = tp::start((dir / "two").string(), {.backend = "cupti_fake"});
    CHECK(fake::st().attached);
    REQUIRE(static_cast<bool>(fake::st().request));  // buffer callbacks registered again with this attachment
    const std::uint64_t t0 = tp::now_ns();
    {
      tp::Scope x("x");
      fake::driver_launch(300 + round);
      fake::queue(fake::kernel_record("k", 300 + round, t0, 100));
    }
    tp::finalize(s1);
    CHECK(fake::st().attached);  // s2 still uses it
    tp::finalize(s2);
    CHECK_FALSE(fake::st().attached);
    CHECK(fake::st().finalized_clean);  // after the forced flush, unsubscribed, activity off
    CHECK(at(read_json(dir / "two.hatchet")[0], {"x", "k"})["metrics"]["count"] == 1);
  }
  CHECK(cu::counters().finalizes == before + 2);
  CHECK(fake::st().finalizes == 2);
}

TEST_CASE("profiler cupti: \"cupti:\" modes switch the launch callbacks or the kernel records off (cost diagnostics)") {
  CHECK(cu::parse_hub_mode("").kernel_activity);
  CHECK(cu::parse_hub_mode("anything else").launch_callbacks);
  CHECK_FALSE(cu::parse_hub_mode("cupti:activity=off").kernel_activity);
  CHECK(cu::parse_hub_mode("cupti:activity=off").launch_callbacks);
  const auto both = cu::parse_hub_mode("cupti:callbacks=off,activity=off");
  CHECK_FALSE(both.launch_callbacks);
  CHECK_FALSE(both.kernel_activity);
  CHECK_THROWS_AS(cu::parse_hub_mode("cupti:activity=maybe"), tilejit::InvalidArgument);
  CHECK_THROWS_AS(cu::parse_hub_mode("cupti:buffers=off"), tilejit::InvalidArgument);

  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_modes");
  {
    auto s = tp::start((dir / "a").string(), {.backend = "cupti_fake", .mode = "cupti:activity=off"});
    CHECK(tp::stats(s).kernel_records);
    CHECK_FALSE(fake::st().activity_on);
    CHECK(fake::st().enabled.count({CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel}) == 1);
    tp::finalize(s);
  }
  {
    auto s = tp::start((dir / "b").string(), {.backend = "cupti_fake", .mode = "cupti:callbacks=off"});
    CHECK(fake::st().activity_on);
    CHECK(fake::st().enabled.empty());  // no callback at all
    const std::uint64_t t0 = tp::now_ns();
    {
      tp::Scope a("a");
      fake::queue(fake::kernel_record("k", 91, t0, 1'000));  // no launch callback bound it
    }
    json root = json::parse(*tp::get(s, 0))[0];
    CHECK(at(root, {"k"})["metrics"]["count"] == 1);  // unattributed: under ROOT
    tp::finalize(s);
  }
  {
    StderrCapture err;
    auto s = tp::start((dir / "c").string(), {.backend = "cupti_fake", .mode = "cupti:nonsense"});
    CHECK_FALSE(tp::stats(s).kernel_records);
    CHECK(contains(err.text(), "mode token 'nonsense'"));
    CHECK_FALSE(fake::st().subscribed);
    tp::finalize(s);
  }
}

TEST_CASE("profiler cupti: \"cupti:\" knob tokens parse to HubMode (no GPU)") {
  CHECK(cu::parse_hub_mode("") == cu::HubMode{});
  CHECK(cu::parse_hub_mode("cupti:") == cu::HubMode{});
  CHECK(cu::parse_hub_mode("periodic_flushing") == cu::HubMode{});
  const auto m = cu::parse_hub_mode(
      "cupti:kind=serial,per_thread=off,pinned=on,device_buffer=32M,pool_limit=500,preallocate=8,flush_period=10,"
      "hw_trace=on");
  CHECK(m.kernel_activity);
  CHECK(m.launch_callbacks);
  CHECK(m.serial_kernels);
  CHECK_FALSE(m.per_thread_buffers);
  REQUIRE(m.host_pinned.has_value());
  CHECK(*m.host_pinned);
  CHECK(m.device_buffer_bytes == std::optional<std::size_t>(32u << 20));
  CHECK(m.device_buffer_pool_limit == std::optional<std::size_t>(500));
  CHECK(m.device_buffer_preallocate == std::optional<std::size_t>(8));
  CHECK(m.flush_period_ms == std::optional<std::uint32_t>(10));
  CHECK(m.hw_trace);
  CHECK_FALSE(cu::parse_hub_mode("cupti:kind=concurrent").serial_kernels);
  CHECK(cu::parse_hub_mode("cupti:pinned=off").host_pinned == std::optional<bool>(false));
  CHECK(cu::parse_hub_mode("cupti:device_buffer=4096").device_buffer_bytes == std::optional<std::size_t>(4096));
  CHECK(cu::parse_hub_mode("cupti:device_buffer=512k").device_buffer_bytes == std::optional<std::size_t>(512u << 10));
  CHECK(cu::parse_hub_mode("cupti:device_buffer=1G").device_buffer_bytes == std::optional<std::size_t>(1u << 30));
  CHECK(cu::parse_hub_mode("cupti:flush_period=0").flush_period_ms == std::optional<std::uint32_t>(0));
  CHECK(cu::parse_hub_mode("cupti:preallocate=0").device_buffer_preallocate == std::optional<std::size_t>(0));
  for (const char* bad : {"cupti:kind=parallel", "cupti:kind", "cupti:pinned=yes", "cupti:device_buffer=",
                          "cupti:device_buffer=12Q", "cupti:device_buffer=100", "cupti:device_buffer=-1",
                          "cupti:device_buffer=8G", "cupti:pool_limit=0", "cupti:pool_limit=1K",
                          "cupti:flush_period=-5", "cupti:flush_period=99999999999", "cupti:hw_trace=1",
                          "cupti:latency=on", "cupti:pinned=on,,kind=serial"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(cu::parse_hub_mode(bad), tilejit::InvalidArgument);
  }
  try {
    cu::parse_hub_mode("cupti:device_buffer=lots");
    FAIL("should have thrown");
  } catch (const tilejit::InvalidArgument& e) {
    CHECK(contains(e.what(), "mode token 'device_buffer=lots'"));
    CHECK(contains(e.what(), "device_buffer is a number from 4096"));
  }
}

TEST_CASE("profiler cupti: \"cupti:\" knobs reach CUPTI before activity is on, kernels stay attributed, all put back") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_knobs");
  {
    auto s = tp::start((dir / "a").string(),
                       {.backend = "cupti_fake",
                        .mode = "cupti:kind=serial,per_thread=off,pinned=on,device_buffer=32M,pool_limit=500,"
                                "preallocate=8,flush_period=10,hw_trace=on"});
    REQUIRE(tp::stats(s).kernel_records);
    CHECK(fake::st().kernel_kind_on);  // KERNEL, not CONCURRENT_KERNEL
    CHECK_FALSE(fake::st().activity_on);
    CHECK(fake::st().per_thread == 0);
    CHECK(fake::st().zeroed_out == 1);  // tilejit's buffers still arrive zeroed
    CHECK(fake::st().host_pinned == 1);
    CHECK(fake::st().size_attrs[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] == 32u << 20);
    CHECK(fake::st().size_attrs[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] == 500);
    CHECK(fake::st().size_attrs[CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE] == 8);
    CHECK_FALSE(fake::st().attribute_set_while_on);
    CHECK(fake::st().flush_period == 10);
    CHECK(fake::st().hw_trace == 0);  // refused, as on Hopper
    const auto c = cu::counters();
    CHECK(c.kernel_kind == CUPTI_ACTIVITY_KIND_KERNEL);
    CHECK_FALSE(c.per_thread_buffers);
    CHECK(contains(c.knobs, "kind=serial"));
    CHECK(contains(c.knobs, "per_thread=off"));
    CHECK(contains(c.knobs, "pinned=on"));
    CHECK(contains(c.knobs, "device_buffer=33554432"));
    CHECK(contains(c.knobs, "flush_period=10"));
    CHECK(contains(c.knobs, "hw_trace=on (refused: CUPTI_ERROR_NOT_SUPPORTED"));
    CHECK(contains(cu::report(c), "knobs: kind=serial"));
    const std::uint64_t t0 = tp::now_ns();
    {
      tp::Scope a("a");
      for (std::uint32_t corr = 31; corr < 34; ++corr) {
        fake::driver_launch(corr);
        auto k = fake::kernel_record("k_serial", corr, t0 + corr * 1'000, 500);
        k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
        fake::queue(k);
      }
    }
    json root = json::parse(*tp::get(s, 0))[0];
    CHECK(at(root, {"a", "k_serial"})["metrics"]["count"] == 3);
    tp::finalize(s);
  }
  // Everything as CUPTI had it.
  CHECK_FALSE(fake::st().kernel_kind_on);
  CHECK(fake::st().host_pinned == 0);
  CHECK(fake::st().size_attrs == fake::State{}.size_attrs);
  CHECK(fake::st().flush_period == 0);
  CHECK(fake::st().per_thread == 0);
  CHECK(fake::st().zeroed_out == 0);
  {
    // The next session without knobs: CUPTI's defaults, CONCURRENT_KERNEL, per-thread buffers.
    fake::st().hw_trace_result = CUPTI_SUCCESS;  // a CUPTI that takes it (Blackwell)
    auto s = tp::start((dir / "b").string(), {.backend = "cupti_fake", .mode = "cupti:hw_trace=on"});
    CHECK(fake::st().activity_on);
    CHECK(fake::st().per_thread == 1);
    CHECK(fake::st().hw_trace == 1);
    CHECK(fake::st().size_attrs == fake::State{}.size_attrs);
    CHECK(cu::counters().knobs == "hw_trace=on");
    tp::finalize(s);
    CHECK(fake::st().hw_trace == 0);  // undone at teardown
  }
  {
    auto s = tp::start((dir / "c").string(), {.backend = "cupti_fake"});
    CHECK(cu::counters().knobs.empty());
    CHECK(cu::counters().kernel_kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    tp::finalize(s);
  }
}

TEST_CASE("profiler cupti: a session sampling PCs goes back to the mode's kernel kind when it stops") {
  fake::reset();
  fake::register_fake();
  auto dir = temp_dir("cupti_knobs_pc");
  // The first session asks for serial kernel records; a second one samples PCs and stops first.
  auto a = tp::start((dir / "a").string(), {.backend = "cupti_fake_pc", .mode = "cupti:kind=serial"});
  CHECK(cu::counters().kernel_kind == CUPTI_ACTIVITY_KIND_KERNEL);
  tp::Options pc{.backend = "cupti_fake_pc"};
  pc.pc_sampling.enabled = true;
  auto b = tp::start((dir / "b").string(), pc);
  CHECK(cu::counters().kernel_kind == CUPTI_ACTIVITY_KIND_KERNEL);
  tp::finalize(b);
  CHECK(cu::counters().kernel_kind == CUPTI_ACTIVITY_KIND_KERNEL);  // not CONCURRENT_KERNEL
  CHECK(fake::st().kernel_kind_on);
  CHECK_FALSE(fake::st().activity_on);
  tp::finalize(a);
}

// ---- fault rules ---------------------------------------------------------------------------

TEST_CASE("profiler cupti: CUPTI held by another profiler gives a message and a session without kernels") {
  fake::reset();
  fake::register_fake();
  fake::st().subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  auto dir = temp_dir("cupti_taken");
  StderrCapture err;
  auto s = tp::start((dir / "taken").string(), {.backend = "cupti_fake"});
  std::string text = err.text();
  CHECK(contains(text, "backend 'cupti_fake' unavailable"));
  CHECK(contains(text, "already in use by another profiler"));
  CHECK(contains(text, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"));
  CHECK_FALSE(tp::stats(s).kernel_records);
  CHECK_FALSE(fake::st().activity_on);  // nothing of the other client's setup was touched
  {
    tp::Scope a("still_recorded");
    tp::add_metric(tp::bytes(10));
  }
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(child_names(root) == std::vector<std::string>{"still_recorded"});
  CHECK(tp::finalize(s).files.size() == 1);

  CaptureSink sink;  // and the backend's own error, directly
  auto b = cu::make_backend(&fake::api());
  CHECK_THROWS_AS(b->start(sink, {}), tilejit::DeviceUnavailable);
  fake::st().subscribe_result = CUPTI_SUCCESS;
}

TEST_CASE("profiler cupti: no CUDA driver under the CUPTI layer gives a clear error") {
  fake::reset();
  fake::st().driver_ok = false;
  CaptureSink sink;
  auto b = cu::make_backend(&fake::api());
  try {
    b->start(sink, {});
    FAIL("start() should have thrown");
  } catch (const tilejit::DeviceUnavailable& e) {
    CHECK(contains(e.what(), "no usable CUDA device"));
    CHECK(contains(e.what(), "fake: no driver"));
  }
  CHECK(fake::st().subscribes == 0);
  fake::st().driver_ok = true;
}

TEST_CASE("profiler cupti: the real backend without a GPU prints why and the session records scopes") {
  auto names = tp::registered_backends();
  CHECK(std::find(names.begin(), names.end(), "cupti") != names.end());
  auto dir = temp_dir("cupti_real");
  StderrCapture err;
  auto s = tp::start((dir / "real").string(), {.backend = "cupti"});
  std::string text = err.text();
  const bool kernels = tp::stats(s).kernel_records;
  {
    tp::Scope a("outer");
    tp::Scope b("inner");
  }
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(child_names(at(root, {"outer"})) == std::vector<std::string>{"inner"});
  auto rep = tp::finalize(s);
  CHECK(rep.files.size() == 1);
  if (kernels) {
    MESSAGE("CUPTI started on this machine (a GPU is present): nothing to check for the no-GPU path");
  } else {
    MESSAGE("the message: " << text);
    CHECK(contains(text, "backend 'cupti' unavailable"));
    CHECK((contains(text, "CUDA") || contains(text, "CUPTI") || contains(text, "libcupti")));
    CHECK(contains(text, "without kernel records"));
    CaptureSink sink;
    CHECK_THROWS_AS(cu::make_backend()->start(sink, {}), tilejit::DeviceUnavailable);
  }
}

// ---- on a GPU --------------------------------------------------------------------------------

TEST_CASE("profiler cupti gpu: tilejit kernels of two scopes, with time, count and device") {
  if (!have_gpu()) return;
  namespace tj = tilejit;
  auto dev = tj::Device::best();
  const int n = 1 << 20;
  const std::size_t bytes = std::size_t(n) * sizeof(float);
  std::vector<float> x(n, 1.f), y(n, 2.f), out(n);
  auto* dx = static_cast<float*>(dev.alloc(bytes));
  auto* dy = static_cast<float*>(dev.alloc(bytes));
  auto* dout = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(dx, x.data(), bytes);
  dev.copy_to_device(dy, y.data(), bytes);
  auto k = tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1});
  const tj::Grid grid{tj::cdiv(n, 96)};

  auto dir = temp_dir("cupti_gpu");
  auto s = tp::start((dir / "gpu").string(), {.backend = "cupti"});
  REQUIRE_MESSAGE(tp::stats(s).kernel_records, "the cupti backend did not start (see the message above)");
  {
    tp::Scope a("scope_a");
    for (int i = 0; i < 2; ++i) k.launch(grid, dx, dy, dout, n);
  }
  {
    tp::Scope b("scope_b");
    for (int i = 0; i < 3; ++i) k.launch(grid, dx, dy, dout, n);
  }
  dev.synchronize();
  auto rep = tp::finalize(s);
  dev.copy_to_host(out.data(), dout, bytes);
  CHECK(out[n - 1] == 3.f);
  dev.free(dx), dev.free(dy), dev.free(dout);
  REQUIRE(rep.files.size() == 1);
  json j = read_json(rep.files[0]);
  MESSAGE("profile: " << j.dump());
  const json& root = j[0];
  for (auto [scope, launches] : {std::pair{"scope_a", 2}, std::pair{"scope_b", 3}}) {
    CAPTURE(scope);
    const json& sc = at(root, {scope});
    REQUIRE(sc["children"].size() == 1);
    const json& kn = sc["children"][0];
    CHECK(contains(kn["frame"]["name"].get<std::string>(), "VecAdd"));
    CHECK(kn["metrics"]["time (ns)"].get<std::int64_t>() > 0);
    CHECK(kn["metrics"]["count"] == launches);
    CHECK(kn["metrics"]["device_type"] == "CUDA");
    CHECK(kn["metrics"]["device_id"] == std::to_string(dev.ordinal()));
  }
  CHECK(j[1]["CUDA"][std::to_string(dev.ordinal())]["num_sms"].get<std::int64_t>() > 0);
}

TEST_CASE("profiler cupti gpu: every kernel record arrives, attributed, under each \"cupti:\" knob") {
  if (!have_gpu()) return;
  namespace tj = tilejit;
  auto dev = tj::Device::best();
  auto* p = static_cast<float*>(dev.alloc(4096));
  auto k = tj::compile<examples::VecAdd<1024>>(dev, {.num_warps = 4});
  k.launch(tj::Grid{1}, p, p, p, 1024);
  dev.synchronize();
  auto dir = temp_dir("cupti_gpu_knobs");
  // The knobs profiler_bench BM_CuptiKnobs times, and hw_trace (documented for Blackwell only: on the
  // H200 CUPTI is expected to refuse it and the session to go on without it).
  constexpr int kLaunches = 2000;  // beyond one 128 KiB activity buffer of records
  for (const char* mode : {"", "cupti:kind=serial", "cupti:per_thread=off", "cupti:pinned=on",
                           "cupti:device_buffer=32M", "cupti:device_buffer=64K,pool_limit=4,preallocate=1",
                           "cupti:flush_period=1", "cupti:hw_trace=on",
                           "cupti:kind=serial,pinned=on,per_thread=off"}) {
    CAPTURE(mode);
    auto s = tp::start((dir / "k").string(), {.backend = "cupti", .mode = mode, .buffer_size = 128 << 10});
    REQUIRE_MESSAGE(tp::stats(s).kernel_records, "the cupti backend did not start (see the message above)");
    const std::string report = tp::cupti_report();
    const std::uint64_t dropped0 = cu::counters().dropped;
    {
      tp::Scope a("knob");
      for (int i = 0; i < kLaunches; ++i) k.launch(tj::Grid{1}, p, p, p, 1024);
    }
    dev.synchronize();
    auto rep = tp::finalize(s);
    MESSAGE(mode << ": " << report.substr(report.find("kernel kind")));
    CHECK(cu::counters().dropped == dropped0);
    REQUIRE(rep.files.size() == 1);
    const json root = read_json(rep.files[0])[0];
    const json& sc = at(root, {"knob"});
    REQUIRE(sc["children"].size() == 1);
    CHECK(sc["children"][0]["metrics"]["count"] == kLaunches);  // every record, under the scope that launched it
    CHECK(sc["children"][0]["metrics"]["time (ns)"].get<std::int64_t>() > 0);
    CHECK(child_names(root) == std::vector<std::string>{"knob"});  // nothing unattributed
  }
  dev.free(p);
}

TEST_CASE("profiler cupti gpu: CUPTI already subscribed elsewhere, then handed back") {
  if (!have_gpu()) return;
  std::string why;
  const cu::Api* api = cu::real_api(&why);
  REQUIRE_MESSAGE(api != nullptr, why);
  CUpti_SubscriberHandle other = nullptr;
  auto noop = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
  REQUIRE(api->subscribe(&other, noop, nullptr) == CUPTI_SUCCESS);  // "another profiler"
  auto dir = temp_dir("cupti_gpu_taken");
  {
    StderrCapture err;
    auto s = tp::start((dir / "taken").string(), {.backend = "cupti"});
    std::string text = err.text();
    MESSAGE("the message: " << text);
    CHECK_FALSE(tp::stats(s).kernel_records);
    CHECK(contains(text, "already in use by another profiler"));
    { tp::Scope a("recorded"); }
    CHECK(tp::finalize(s).files.size() == 1);
  }
  api->unsubscribe(other);
  auto s = tp::start((dir / "free").string(), {.backend = "cupti"});
  CHECK(tp::stats(s).kernel_records);  // our own teardown and theirs leave CUPTI usable
  tp::finalize(s);
}

namespace {
/// The CUDA-driver graph entry points the GPU graph test uses (libcuda is
/// already loaded by the runtime when a GPU is present).
struct GraphDriver {
  CUresult (*begin_capture)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end_capture)(CUstream, CUgraph*) = nullptr;
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*sync)(CUstream) = nullptr;
  CUresult (*exec_destroy)(CUgraphExec) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;
  bool ok() const {
    return begin_capture && end_capture && instantiate && launch && sync && exec_destroy && graph_destroy;
  }
};
GraphDriver graph_driver() {
  GraphDriver d;
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return d;
  auto get = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name)); };
  get(d.begin_capture, "cuStreamBeginCapture_v2");
  get(d.end_capture, "cuStreamEndCapture");
  get(d.instantiate, "cuGraphInstantiateWithFlags");
  get(d.launch, "cuGraphLaunch");
  get(d.sync, "cuStreamSynchronize");
  get(d.exec_destroy, "cuGraphExecDestroy");
  get(d.graph_destroy, "cuGraphDestroy");
  return d;
}
}  // namespace

TEST_CASE("profiler cupti gpu: a captured and replayed CUDA graph is attributed to its capture site") {
  if (!have_gpu()) return;
  namespace tj = tilejit;
  const GraphDriver cu = graph_driver();
  REQUIRE_MESSAGE(cu.ok(), "the CUDA driver's graph entry points were not found");
  auto dev = tj::Device::best();
  const int n = 1 << 16;
  const std::size_t bytes = std::size_t(n) * sizeof(float);
  std::vector<float> x(n, 1.f), y(n, 2.f), out(n);
  auto* dx = static_cast<float*>(dev.alloc(bytes));
  auto* dy = static_cast<float*>(dev.alloc(bytes));
  auto* dout = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(dx, x.data(), bytes);
  dev.copy_to_device(dy, y.data(), bytes);
  auto k = tj::compile<examples::VecAdd<96>>(dev, {.num_warps = 1});
  const tj::Grid grid{tj::cdiv(n, 96)};
  k.launch(grid, dx, dy, dout, n);  // module loaded outside any capture
  dev.synchronize();
  auto stream = dev.create_stream();
  auto st = static_cast<CUstream>(stream.handle);
  auto capture = [&](CUgraph* g, int first, int second) {
    REQUIRE(cu.begin_capture(st, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS);
    {
      tp::Scope a("first");
      for (int i = 0; i < first; ++i) k.launch(stream, grid, dx, dy, dout, n);
    }
    {
      tp::Scope b("second");
      for (int i = 0; i < second; ++i) k.launch(stream, grid, dx, dy, dout, n);
    }
    REQUIRE(cu.end_capture(st, g) == CUDA_SUCCESS);
  };

  // A graph captured before profiling: replayed in the session, attributed flat.
  CUgraph early = nullptr;
  CUgraphExec early_exec = nullptr;
  {
    tp::Scope c("early_capture");
    capture(&early, 1, 0);
  }
  REQUIRE(cu.instantiate(&early_exec, early, 0) == CUDA_SUCCESS);

  auto dir = temp_dir("cupti_gpu_graph");
  auto s = tp::start((dir / "graph").string(), {.backend = "cupti"});
  REQUIRE_MESSAGE(tp::stats(s).kernel_records, "the cupti backend did not start (see the message above)");
  CUgraph g = nullptr;
  CUgraphExec exec = nullptr;
  {
    tp::Scope c("capture");
    capture(&g, 1, 2);
  }
  REQUIRE(cu.instantiate(&exec, g, 0) == CUDA_SUCCESS);
  for (int i = 0; i < 4; ++i) {
    tp::Scope r("replay");
    REQUIRE(cu.launch(exec, st) == CUDA_SUCCESS);
  }
  {
    tp::Scope r("replay_early");
    REQUIRE(cu.launch(early_exec, st) == CUDA_SUCCESS);
  }
  REQUIRE(cu.sync(st) == CUDA_SUCCESS);
  const auto text = tp::get(s, 0);
  REQUIRE(text.has_value());
  const auto stats = tp::stats(s);
  MESSAGE("graph counters: launches " << cu::counters().graph_launches << ", captured launches "
                                      << cu::counters().captured_launches << ", pending "
                                      << stats.pending_launches << ", flat " << stats.graph_kernels_flat);
  json root = json::parse(*text)[0];
  MESSAGE("profile: " << root.dump());
  const json& at_node = at(root, {"replay", "<captured_at>"});
  CHECK(at_node["metrics"]["graph_replays"] == 4);
  for (auto [scope, per_replay] : {std::pair{"first", 1}, std::pair{"second", 2}}) {
    CAPTURE(scope);
    const json& sc = at(root, {"replay", "<captured_at>", "capture", scope});
    REQUIRE(sc["children"].size() == 1);
    const json& kn = sc["children"][0];
    CHECK(contains(kn["frame"]["name"].get<std::string>(), "VecAdd"));
    CHECK(kn["metrics"]["count"] == 4 * per_replay);
    CHECK(kn["metrics"]["time (ns)"].get<std::int64_t>() > 0);
    // Captured launches ran nothing at capture time.
    CHECK(at(root, {"capture", scope})["children"].empty());
  }
  const json& flat = at(root, {"replay_early"});
  REQUIRE(flat["children"].size() == 1);
  CHECK(contains(flat["children"][0]["frame"]["name"].get<std::string>(), "VecAdd"));
  CHECK(stats.graph_kernels_flat == 1);
  // Graph launches whose kernel count is unknown keep their binding until two
  // phase boundaries pass (on the H200 run of 2025-11 every exec's count was
  // unknown: see docs/profiler.md); then nothing is left.
  for (int i = 0; i < 3; ++i) tp::advance_phase(s);
  CHECK(tp::stats(s).pending_launches == 0);
  tp::finalize(s);
  CHECK(tp::graph_nodes() == 0);
  cu.exec_destroy(exec);
  cu.graph_destroy(g);
  cu.exec_destroy(early_exec);
  cu.graph_destroy(early);
  dev.destroy_stream(stream);
  dev.copy_to_host(out.data(), dout, bytes);
  CHECK(out[n - 1] == 3.f);
  dev.free(dx), dev.free(dy), dev.free(dout);
}

TEST_CASE("profiler cupti gpu: PC sampling of one kernel gives per-location samples with stall reasons") {
  if (!have_gpu()) return;
  namespace tj = tilejit;
  auto dev = tj::Device::best();
  // 2^24 floats: each launch reads 128 MiB and writes 64 MiB, about 60 us on an
  // H200 (184 us for 3 on 2026-11-29) = 120K cycles at 1.98 GHz, so at a period
  // of 2^10 cycles some 100 sampling intervals per SM per launch: thousands of
  // samples, far from "too short to be sampled".
  const int n = 1 << 24;
  const std::size_t bytes = std::size_t(n) * sizeof(float);
  std::vector<float> x(n, 1.f), y(n, 2.f), out(n);
  auto* dx = static_cast<float*>(dev.alloc(bytes));
  auto* dy = static_cast<float*>(dev.alloc(bytes));
  auto* dout = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(dx, x.data(), bytes);
  dev.copy_to_device(dy, y.data(), bytes);
  auto dir = temp_dir("cupti_gpu_pc");
  constexpr std::uint32_t kPeriod = 10;
  tp::Options o{.backend = "cupti", .hook = "launch"};
  o.pc_sampling = {.enabled = true, .period = kPeriod};
  auto s = tp::start((dir / "pc").string(), o);
  REQUIRE_MESSAGE(tp::stats(s).kernel_records, "the cupti backend did not start (see the message above)");
  {
    std::string why;
    const cu::Api* api = cu::real_api(&why);
    std::uint32_t v = 0;
    if (api && api->get_version) api->get_version(&v);
    MESSAGE("libcupti: " << (api ? api->library : why) << ", CUPTI API version " << v);
  }
  // A specialisation no other test uses: compiled and loaded inside the
  // session, so CUPTI's MODULE_LOADED hands over its cubin for the line lookup.
  auto k = tj::compile<examples::VecAdd<480>>(dev, {.num_warps = 4});
  const tj::Grid grid{tj::cdiv(n, 480)};
  {
    tp::Scope a("sampled");
    for (int i = 0; i < 3; ++i) k.launch(grid, dx, dy, dout, n);
  }
  dev.synchronize();
  const auto c = cu::counters().pc_sampling;
  MESSAGE("pc sampling counters: contexts " << c.contexts << ", failed " << c.failed_contexts << ", cubins "
                                            << c.cubins << ", ranges " << c.ranges << " (" << c.empty_ranges
                                            << " empty), reads " << c.reads << " (" << c.read_errors
                                            << " failed), samples " << c.samples << ", CUPTI counted "
                                            << c.cupti_samples << " (" << c.nonuser_samples << " non-user, "
                                            << c.dropped << " dropped), from the configuration buffer "
                                            << c.config_buffer_pcs << " PCs, problem '" << c.problem << "'");
  MESSAGE(tp::cupti_report());
  auto rep = tp::finalize(s);
  dev.copy_to_host(out.data(), dout, bytes);
  CHECK(out[n - 1] == 3.f);
  dev.free(dx), dev.free(dy), dev.free(dout);
  CHECK(c.failed_contexts == 0);
  CHECK(c.contexts >= 1);
  CHECK(c.ranges >= 3);
  CHECK(c.cubins >= 1);
  CHECK(c.read_errors == 0);
  CHECK(c.problem.empty());
  REQUIRE(rep.files.size() == 1);
  json j = read_json(rep.files[0]);
  json root = j[0];
  MESSAGE("profile: " << root.dump());
  const json& sc = at(root, {"sampled"});
  REQUIRE(sc["children"].size() == 1);
  const json& kn = sc["children"][0];
  CHECK(kn["metrics"]["count"] == 3);
  // What the period leaves room for: kernel cycles / 2^period per SM.
  const double ghz = j[1]["CUDA"][std::to_string(dev.ordinal())].value("clock_rate", 0) / 1e6;
  const double sms = j[1]["CUDA"][std::to_string(dev.ordinal())].value("num_sms", 0);
  const double intervals = kn["metrics"]["time (ns)"].get<double>() * ghz / double(1u << kPeriod);
  MESSAGE("3 launches, " << kn["metrics"]["time (ns)"] << " ns: " << intervals << " sampling intervals per SM, x "
                         << sms << " SMs");
  CHECK(intervals > 10);  // long enough to be sampled at this period
  REQUIRE_MESSAGE(kn["metrics"].contains("pc_samples (inc)"), "no PC samples: " << tp::cupti_report());
  CHECK(kn["metrics"]["pc_samples (inc)"].get<std::int64_t>() > 0);
  REQUIRE_FALSE(kn["children"].empty());
  std::int64_t stalls = 0, with_line = 0;
  for (const auto& line : kn["children"]) {
    const std::string loc = line["frame"]["name"];
    CHECK((contains(loc, ":") || contains(loc, "+0x")));  // file:line, or function+offset without line info
    with_line += contains(loc, ".cu:") ? 1 : 0;
    for (const auto& [name, v] : line["metrics"].items())
      if (name.rfind("stall:", 0) == 0 && !contains(name, "(inc)")) stalls += v.get<std::int64_t>();
  }
  MESSAGE(kn["children"].size() << " locations, " << with_line << " with a source line");
  CHECK(stalls > 0);
}

#include "writers.hpp"

#include "device_events.hpp"

#include <fmt/format.h>

#include "tilejit/core/utf8.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

namespace tilejit::profiler::detail {
namespace {

using json = nlohmann::json;

/// Device events of instrumented launches (lang/events.hpp): a lane per (program, warp) that recorded events (tid
/// 3,000,000,000 + 256 · program + warp, the same in every part file; instrumented launches wait for their kernel,
/// so launches share lanes without overlapping), the "program" pairs as slices, every other event and every unpaired
/// one as a 1 ns marker, and each pair as a flow from begin to end (id "dev:<phase>:<part>:<launch>:<pair>"). Device
/// times are placed relative to the launch's earliest program start (else its earliest event), at the start of the
/// launch's kernel record when one came (else at the launch on the CPU). `named`: lanes given a name in this file.
void device_event_json(json& events, const ThreadPhase& p, std::size_t phase, std::size_t part, const DeviceBatch& b, std::size_t batch,
                       long long pid, std::set<long long>& named, const std::function<double(std::uint64_t)>& us) {
  const std::string kernel(name_of(p.tree.nodes[b.node].name));
  const KernelEvent* rec = nullptr;
  for (const auto& k : p.kernels)
    if (k.node == b.node && k.has_launch && k.launch_ts >= b.launch_ts && k.launch_ts <= b.reported_ts) {
      rec = &k;
      break;
    }
  long program_site = -1;
  for (std::size_t i = 0; i < b.sites.size(); ++i)
    if (name_of(b.sites[i]) == "program") program_site = static_cast<long>(i);
  std::uint64_t t0 = ~0ull, t0_any = ~0ull;
  for (const DeviceEvent& d : b.events) {
    t0_any = std::min(t0_any, d.time_ns);
    if (d.site == program_site && d.kind == 0) t0 = std::min(t0, d.time_ns);
  }
  if (t0 == ~0ull) t0 = t0_any;
  const std::uint64_t anchor = rec ? rec->start : b.launch_ts;
  auto at = [&](const DeviceEvent& d) { return us(anchor + (d.time_ns >= t0 ? d.time_ns - t0 : 0)); };
  auto site = [&](const DeviceEvent& d) { return d.site < b.sites.size() ? std::string(name_of(b.sites[d.site])) : "site " + std::to_string(d.site); };
  auto lane_of = [&](const DeviceEvent& d) {
    const long long tid = 3'000'000'000LL + 256LL * d.program + d.warp;
    if (named.insert(tid).second) {
      events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"},
                        {"args", {{"name", fmt::format("device program {} warp {}", d.program, d.warp)}}}});
      events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"}, {"args", {{"sort_index", tid}}}});
    }
    return tid;
  };
  const DevicePairing pairing = pair_device_events(b.events);
  for (std::size_t i = 0; i < pairing.pairs.size(); ++i) {
    const DeviceEvent &x = b.events[pairing.pairs[i].begin], &y = b.events[pairing.pairs[i].end];
    if (x.site == program_site) {
      events.push_back({{"name", fmt::format("program {}", x.program)}, {"cat", "device"}, {"ph", "X"}, {"pid", pid}, {"tid", lane_of(x)},
                        {"ts", at(x)}, {"dur", static_cast<double>(y.time_ns - std::min(x.time_ns, y.time_ns)) / 1000.0},
                        {"args", {{"kernel", kernel}, {"sm", x.sm}, {"program", x.program}}}});
      continue;
    }
    const std::string id = fmt::format("dev:{}:{}:{}:{}", phase, part, batch, i);
    events.push_back({{"name", site(x)}, {"cat", "flow"}, {"ph", "s"}, {"id", id}, {"pid", pid}, {"tid", lane_of(x)}, {"ts", at(x)}, {"bp", "e"}});
    events.push_back({{"name", site(x)}, {"cat", "flow"}, {"ph", "f"}, {"id", id}, {"pid", pid}, {"tid", lane_of(y)}, {"ts", at(y)}, {"bp", "e"}});
  }
  for (std::size_t i = 0; i < b.events.size(); ++i) {
    const DeviceEvent& d = b.events[i];
    if (d.site == program_site && pairing.paired[i]) continue;  // drawn as its program's slice
    events.push_back({{"name", site(d)}, {"cat", "device"}, {"ph", "X"}, {"pid", pid}, {"tid", lane_of(d)}, {"ts", at(d)}, {"dur", 0.001},
                      {"args", {{"id", static_cast<std::int32_t>(d.id)}, {"role", d.kind == 0 ? "producer" : "consumer"},
                                {"paired", pairing.paired[i] != 0}, {"kernel", kernel}, {"program", d.program}, {"warp", d.warp},
                                {"sm", d.sm}}}});
  }
  if (b.events.empty() && b.dropped == 0) return;
  events.push_back({{"name", "device events"}, {"cat", "device"}, {"ph", "i"}, {"s", "t"}, {"pid", pid},
                    {"tid", lane_of(b.events.empty() ? DeviceEvent{} : b.events.front())}, {"ts", us(anchor)},
                    {"args", {{"kernel", kernel}, {"events", b.events.size()}, {"dropped", b.dropped}, {"pairs", pairing.pairs.size()},
                              {"unmatched_begins", pairing.unmatched_begins}, {"unmatched_ends", pairing.unmatched_ends},
                              {"aligned_to", rec ? "kernel record" : "launch"}}}});
}

json value_of(const MetricSlot& s) {
  if (s.type == MetricType::int64) return s.i;
  return s.d;
}

/// Metrics of one node (or event) as a JSON object; kernel device fields as
/// strings, the way Proton writes them.
void put_metrics(json& out, const std::vector<MetricSlot>& slots,
                 const std::vector<MetricDesc>& table) {
  for (const auto& s : slots) {
    const std::string& key = table[s.id].name;
    if (s.id == kDeviceId)
      out[key] = std::to_string(s.i);
    else if (s.id == kDeviceType)
      out[key] = std::string(name(static_cast<DeviceType>(s.i)));
    else
      out[key] = value_of(s);
  }
}

json frame(NameId n) { return json{{"name", name_of(n)}, {"type", "function"}}; }

/// Call stacks of a tree's nodes, ROOT excluded, built on demand: at most kMaxCallStack names, the innermost; a
/// deeper stack starts with one "... (N outer scopes)" entry. Every trace event carries its stack, so without the cap
/// scopes left open in a loop (nested thousands deep) made a trace quadratic in their depth: 20,000 leaked scopes
/// wrote 370 MB and took 6 GB to build (a break-it pass). The hatchet tree keeps every level.
class CallStacks {
 public:
  static constexpr std::size_t kMaxCallStack = 64;
  explicit CallStacks(const Tree& t) : tree_(t), cache_(t.size()) {}
  const json& of(std::uint32_t node) {
    json& c = cache_[node];
    if (c.is_null()) {
      std::vector<std::uint32_t> path;  // innermost first
      std::size_t depth = 0;
      for (std::uint32_t n = node; n != 0; n = tree_.nodes[n].parent, ++depth)
        if (path.size() < kMaxCallStack) path.push_back(n);
      c = json::array();
      if (depth > path.size()) c.push_back(fmt::format("... ({} outer scopes)", depth - path.size()));
      for (auto it = path.rbegin(); it != path.rend(); ++it) c.push_back(name_of(tree_.nodes[*it].name));
    }
    return c;
  }

 private:
  const Tree& tree_;
  std::vector<json> cache_;
};

}  // namespace

json hatchet_json(const PhaseData& phase) {
  Tree merged;
  for (const auto& p : phase.parts) merged.merge(p.tree);
  const auto table = metric_table();
  const std::size_t n = merged.size();

  std::vector<std::vector<std::uint32_t>> kids(n);
  for (std::uint32_t i = 1; i < n; ++i) kids[merged.nodes[i].parent].push_back(i);

  // Inclusive totals: children have larger ids than parents.
  std::vector<std::vector<MetricSlot>> inc(n);
  std::set<DeviceKey> devices;
  for (std::size_t i = n; i-- > 0;) {
    const Node& node = merged.nodes[i];
    std::int64_t dev_id = -1, dev_type = -1;
    for (const auto& s : node.metrics) {
      if (s.kind == MetricKind::inclusive) add_slot(inc[i], s);
      if (s.id == kDeviceId) dev_id = s.i;
      if (s.id == kDeviceType) dev_type = s.i;
    }
    if (dev_id >= 0 && dev_type >= 0)
      devices.insert({static_cast<DeviceType>(dev_type), static_cast<std::uint32_t>(dev_id)});
    if (i != 0)
      for (const auto& s : inc[i]) add_slot(inc[node.parent], s);
  }

  std::vector<json> built(n);
  for (std::size_t i = n; i-- > 0;) {
    json metrics = json::object();
    put_metrics(metrics, merged.nodes[i].metrics, table);
    for (const auto& s : inc[i]) metrics[table[s.id].name + " (inc)"] = value_of(s);
    json children = json::array();
    for (std::uint32_t c : kids[i]) children.push_back(std::move(built[c]));
    built[i] = json{{"frame", frame(merged.nodes[i].name)},
                    {"metrics", std::move(metrics)},
                    {"children", std::move(children)}};
  }

  json device_info = json::object();
  for (const auto& d : devices) {
    DeviceInfo info;
    if (auto it = phase.devices.find(d); it != phase.devices.end()) info = it->second;
    device_info[std::string(name(d.type))][std::to_string(d.id)] = {
        {"clock_rate", info.clock_rate},
        {"memory_clock_rate", info.memory_clock_rate},
        {"bus_width", info.bus_width},
        {"arch", info.arch},
        {"num_sms", info.num_sms}};
  }
  json out = json::array();
  out.push_back(std::move(built[0]));
  out.push_back(std::move(device_info));
  return out;
}

json chrome_trace_json(const PhaseData& phase, const Session& session) {
  const auto table = metric_table();
  const long long pid = ::getpid();
  auto us = [&](std::uint64_t t) {
    return t <= session.start_mono ? 0.0 : static_cast<double>(t - session.start_mono) / 1000.0;
  };
  auto dur = [&](std::uint64_t start, std::uint64_t end) {  // exact, not us(end) - us(start)
    start = std::max(start, session.start_mono);
    return end <= start ? 0.0 : static_cast<double>(end - start) / 1000.0;
  };
  auto gpu_lane = [](std::uint32_t device, std::uint32_t stream) {
    return 1'000'000ll + 100'000ll * device + stream;
  };
  // Graph lanes: one slice per replay of a CUDA graph, spanning its kernels, beside the stream they ran on.
  auto graph_lane = [](std::uint32_t device, std::uint32_t stream) {
    return 2'000'000ll + 100'000ll * device + stream;
  };
  struct Replay {
    std::uint64_t start = ~0ull, end = 0;
    std::uint32_t device = 0, stream = 0, kernels = 0, first_node = 0;
    DeviceType type = DeviceType::CUDA;
  };
  std::map<std::pair<std::size_t, std::uint64_t>, Replay> replays;  // (part, correlation id of the graph launch)
  std::set<long long> device_lanes;  // device events' lanes named in this file

  json events = json::array();
  auto meta = [&](long long tid, const std::string& what, json args) {
    events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", what}, {"args", std::move(args)}});
  };
  meta(0, "process_name", {{"name", "tilejit " + session.name}});

  std::set<std::uint32_t> cpu_lanes;
  std::set<std::tuple<DeviceType, std::uint32_t, std::uint32_t>> gpu_lanes;
  for (std::size_t i = 0; i < phase.parts.size(); ++i) {
    const auto& p = phase.parts[i];
    if (!p.scopes.empty() || !p.asyncs.empty()) cpu_lanes.insert(p.thread);
    for (const auto& k : p.kernels) {
      gpu_lanes.insert({k.device_type, k.device, k.stream});
      if (k.has_launch) cpu_lanes.insert(p.thread);
      if (k.graph_node == 0) continue;
      Replay& r = replays[{i, k.correlation}];
      if (r.kernels == 0) r = {.device = k.device, .stream = k.stream, .first_node = k.node, .type = k.device_type};
      r.start = std::min(r.start, k.start);
      r.end = std::max(r.end, k.end);
      r.kernels += 1;
    }
  }
  for (std::uint32_t t : cpu_lanes) {
    meta(t, "thread_name", {{"name", t == 0 ? std::string("Backend") : "CPU Thread " + std::to_string(t)}});
    meta(t, "thread_sort_index", {{"sort_index", t}});
  }
  auto stream_name = [](DeviceType type, std::uint32_t device, std::uint32_t stream) {
    return std::string(name(type)) + " " + std::to_string(device) + " Stream " + std::to_string(stream);
  };
  for (const auto& [type, device, stream] : gpu_lanes) {
    long long tid = gpu_lane(device, stream);
    meta(tid, "thread_name", {{"name", stream_name(type, device, stream)}});
    meta(tid, "thread_sort_index", {{"sort_index", tid}});
  }
  std::set<long long> graph_lanes;
  for (const auto& [key, r] : replays) {
    const long long tid = graph_lane(r.device, r.stream);
    if (!graph_lanes.insert(tid).second) continue;
    meta(tid, "thread_name", {{"name", stream_name(r.type, r.device, r.stream) + " Graphs"}});
    meta(tid, "thread_sort_index", {{"sort_index", tid}});  // after every stream lane
  }

  for (std::size_t part = 0; part < phase.parts.size(); ++part) {
    const auto& p = phase.parts[part];
    CallStacks stacks(p.tree);
    const long long tid = p.thread;
    // This part's graph replays. A replay's site is the parent of the kernels' <captured_at> frame (attribution:
    // replay site / <captured_at> / capture site / kernel); a graph captured before the session has none, and its
    // slice names the kernel's own path.
    for (auto it = replays.lower_bound({part, 0}); it != replays.end() && it->first.first == part; ++it) {
      const Replay& r = it->second;
      std::uint32_t site = r.first_node;
      for (std::uint32_t n = r.first_node; n != 0; n = p.tree.nodes[n].parent)
        if (name_of(p.tree.nodes[n].name) == kCapturedAtFrame) {
          site = p.tree.nodes[n].parent;
          break;
        }
      events.push_back({{"name", "graph replay"}, {"cat", "graph"}, {"ph", "X"}, {"pid", pid},
                        {"tid", graph_lane(r.device, r.stream)}, {"ts", us(r.start)}, {"dur", dur(r.start, r.end)},
                        {"args", {{"correlation_id", it->first.second}, {"kernels", r.kernels}, {"call_stack", stacks.of(site)}}}});
    }
    for (const auto& e : p.scopes) {
      json args = {{"call_stack", stacks.of(e.node)}};
      if (!e.metrics.empty()) put_metrics(args["metrics"], e.metrics, table);
      if (e.cat == EventCat::launch) args["grid"] = {e.grid.x, e.grid.y, e.grid.z};
      events.push_back({{"name", name_of(p.tree.nodes[e.node].name)},
                        {"cat", e.cat == EventCat::scope ? "scope" : "launch"},
                        {"ph", "X"}, {"pid", pid}, {"tid", tid},
                        {"ts", us(e.start)}, {"dur", dur(e.start, e.end)},
                        {"args", std::move(args)}});
    }
    for (const auto& k : p.kernels) {
      const long long lane = gpu_lane(k.device, k.stream);
      events.push_back({{"name", name_of(p.tree.nodes[k.node].name)},
                        {"cat", "kernel"}, {"ph", "X"}, {"pid", pid}, {"tid", lane},
                        {"ts", us(k.start)}, {"dur", dur(k.start, k.end)},
                        {"args",
                         {{"call_stack", stacks.of(k.node)},
                          {"correlation_id", k.correlation},
                          {"device_id", k.device},
                          {"device_type", name(k.device_type)},
                          {"stream_id", k.stream},
                          {"metrics", {{"time (ns)", k.end - k.start}}}}}});
      if (k.has_launch) {
        // A graph launch has one correlation id for all its kernels: one flow each.
        std::string id = "launch:" + std::to_string(k.correlation);
        if (k.graph_node != 0) id += ":" + std::to_string(k.graph_node);
        events.push_back({{"name", "launch->kernel"}, {"cat", "flow"}, {"ph", "s"}, {"id", id},
                          {"pid", pid}, {"tid", tid}, {"ts", us(k.launch_ts)}, {"bp", "e"}});
        events.push_back({{"name", "launch->kernel"}, {"cat", "flow"}, {"ph", "f"}, {"id", id},
                          {"pid", pid}, {"tid", lane}, {"ts", us(k.start)}, {"bp", "e"}});
      }
    }
    for (std::size_t b = 0; b < p.device.size(); ++b) device_event_json(events, p, phase.phase, part, p.device[b], b, pid, device_lanes, us);
    for (const auto& a : p.asyncs) {
      const std::string nm(name_of(a.name));
      // A 1 ns slice marks the producer / consumer; the flow binds to it.
      events.push_back({{"name", nm}, {"cat", "async"}, {"ph", "X"}, {"pid", pid}, {"tid", tid},
                        {"ts", us(a.ts)}, {"dur", 0.001},
                        {"args",
                         {{"id", a.id},
                          {"role", a.begin ? "producer" : "consumer"},
                          {"call_stack", stacks.of(a.node)}}}});
      events.push_back({{"name", nm}, {"cat", "async"}, {"ph", a.begin ? "s" : "f"},
                        {"id", "async:" + std::to_string(a.id)}, {"pid", pid}, {"tid", tid},
                        {"ts", us(a.ts)}, {"bp", "e"}});
    }
  }

  return json{{"displayTimeUnit", "us"},
              {"traceEvents", std::move(events)},
              {"otherData",
               {{"base_time_ns", session.start_real},
                {"clock", "ts is microseconds since base_time_ns (CLOCK_REALTIME, ns since the Unix epoch)"},
                {"session", session.name},
                {"phase", phase.phase}}}};
}

json to_json(const PhaseData& phase, const Session& session) {
  return session.format == Format::chrome_trace ? chrome_trace_json(phase, session)
                                                : hatchet_json(phase);
}

namespace {
/// Whether a string or object key anywhere in j is not well-formed UTF-8.
bool holds_invalid_utf8(const json& j) {
  if (j.is_string()) return !utf8_valid(j.get_ref<const std::string&>());
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!utf8_valid(it.key()) || holds_invalid_utf8(it.value())) return true;
  } else if (j.is_array()) {
    for (const json& e : j)
      if (holds_invalid_utf8(e)) return true;
  }
  return false;
}
/// j with every string and key passed through utf8_escape_invalid, backslashes included (one-to-one: the raw byte
/// 0xff and a name holding the text \xff stay distinct).
json escape_invalid_utf8(const json& j) {
  if (j.is_string()) return utf8_escape_invalid(j.get_ref<const std::string&>(), /*escape_backslash=*/true);
  if (j.is_object()) {
    json out = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[utf8_escape_invalid(it.key(), /*escape_backslash=*/true)] = escape_invalid_utf8(it.value());
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const json& e : j) out.push_back(escape_invalid_utf8(e));
    return out;
  }
  return j;
}
}  // namespace

/// JSON text. A name that is not UTF-8 (scope names may hold any bytes) is written with each stray byte as the text
/// \xHH (and then, in that whole file, each backslash as \x5c), so distinct names stay distinct nodes (nlohmann's replacement character merged "a\xff" and "a\xfe") and
/// the file stays valid JSON. MessagePack (encode) keeps the bytes as they are.
std::string dump(const json& j) {
  if (holds_invalid_utf8(j)) return escape_invalid_utf8(j).dump(-1, ' ', false, json::error_handler_t::replace);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode(const json& j, Format format) {
  if (format != Format::hatchet_msgpack) return dump(j);
  std::string out;
  json::to_msgpack(j, nlohmann::detail::output_adapter<char>(out));
  return out;
}

}  // namespace tilejit::profiler::detail

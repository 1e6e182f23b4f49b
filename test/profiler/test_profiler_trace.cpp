// Chrome traces: lanes, scope / launch / kernel events, launch->kernel flows,
// async producer/consumer flows, the base time; and the docs/profiler.md example.
#include <map>
#include <thread>

#include <filesystem>

#include "profiler_test_util.hpp"

using namespace prof_test;
namespace tp = tilejit::profiler;

namespace {

std::vector<json> events_where(const json& trace, const std::string& ph, const std::string& cat = "") {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  return out;
}

json named(const std::vector<json>& events, const std::string& name) {
  for (const auto& e : events)
    if (e.at("name") == name) return e;
  FAIL("no event named " << name);
  return {};
}

/// tid -> lane name, from the M thread_name events.
std::map<long long, std::string> lanes(const json& trace) {
  std::map<long long, std::string> out;
  for (const auto& e : events_where(trace, "M"))
    if (e["name"] == "thread_name") out[e["tid"].get<long long>()] = e["args"]["name"];
  return out;
}

}  // namespace

TEST_CASE("profiler trace: chrome trace lanes, events, launch->kernel flows and base time") {
  register_mock();
  auto dir = temp_dir("trace");
  const std::uint64_t before = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch()).count());
  auto s = tp::start((dir / "tr").string(),
                     {.backend = "mock", .format = "chrome_trace", .hook = "launch"});
  MockBackend* mock = MockBackend::latest();
  std::uint64_t launch_ts = 0;
  {
    tp::Scope outer("outer");
    tp::Scope inner("inner", {tp::bytes(64)});
    tp::LaunchScope hook({.kernel = "gemm", .grid = {8, 4, 1}, .flops = 1 << 20, .flops_width = 16});
    launch_ts = tp::now_ns();
    tp::correlate_launch(7);
  }
  std::thread([] { tp::Scope t("side_thread"); }).join();
  mock->push(record("gemm", 7, launch_ts + 2000, 5000, /*stream=*/3));

  auto rep = tp::finalize(s);
  REQUIRE(rep.files.size() == 1);
  json trace = read_json(rep.files[0]);
  CHECK(rep.files[0] == (dir / "tr.chrome_trace").string());
  CHECK(trace["displayTimeUnit"] == "us");
  const auto base = trace["otherData"]["base_time_ns"].get<std::uint64_t>();
  CHECK(base >= before);
  CHECK(base < before + 60'000'000'000ull);
  CHECK(trace["otherData"]["phase"] == 0);

  // Metadata: the process and every lane are named.
  auto names = lanes(trace);
  int cpu_lanes = 0;
  long long gpu_tid = -1;
  for (auto& [tid, n] : names) {
    if (n.rfind("CPU Thread ", 0) == 0) ++cpu_lanes;
    if (n == "CUDA 0 Stream 3") gpu_tid = tid;
  }
  CHECK(cpu_lanes == 2);
  REQUIRE(gpu_tid >= 0);
  CHECK(named(events_where(trace, "M"), "process_name")["args"]["name"] == "tilejit " + (dir / "tr").string());

  // Scope events nest on the main thread's lane.
  auto scopes = events_where(trace, "X", "scope");
  CHECK(scopes.size() == 3);
  const json outer = named(scopes, "outer");
  const json inner = named(scopes, "inner");
  CHECK(outer["tid"] == inner["tid"]);
  CHECK(named(scopes, "side_thread")["tid"] != outer["tid"]);
  CHECK(inner["args"]["call_stack"] == json({"outer", "inner"}));
  CHECK(inner["args"]["metrics"]["bytes"] == 64);
  CHECK(outer["ts"].get<double>() >= 0.0);
  CHECK(inner["ts"].get<double>() >= outer["ts"].get<double>());
  CHECK(inner["ts"].get<double>() + inner["dur"].get<double>() <=
        outer["ts"].get<double>() + outer["dur"].get<double>());

  // The launch op and its kernel.
  const json op = named(events_where(trace, "X", "launch"), "gemm");
  CHECK(op["tid"] == outer["tid"]);
  CHECK(op["args"]["grid"] == json({8, 4, 1}));
  CHECK(op["args"]["metrics"]["flops16"] == 1 << 20);
  const json kernel = named(events_where(trace, "X", "kernel"), "gemm");
  CHECK(kernel["tid"] == gpu_tid);
  CHECK(kernel["dur"].get<double>() == doctest::Approx(5.0));
  CHECK(kernel["args"]["call_stack"] == json({"outer", "inner", "gemm"}));
  CHECK(kernel["args"]["correlation_id"] == 7);
  CHECK(kernel["args"]["stream_id"] == 3);
  CHECK(kernel["args"]["device_type"] == "CUDA");

  // One flow from the launch (CPU lane) to the kernel (GPU lane).
  const json s_ev = named(events_where(trace, "s", "flow"), "launch->kernel");
  const json f_ev = named(events_where(trace, "f", "flow"), "launch->kernel");
  CHECK(s_ev["id"] == "launch:7");
  CHECK(f_ev["id"] == "launch:7");
  CHECK(s_ev["tid"] == outer["tid"]);
  CHECK(f_ev["tid"] == gpu_tid);
  CHECK(f_ev["ts"] == kernel["ts"]);
  CHECK(f_ev["bp"] == "e");
  const double gap = f_ev["ts"].get<double>() - s_ev["ts"].get<double>();  // us
  CHECK(gap > 1.0);
  CHECK(gap <= 2.0 + 1e-9);  // correlate_launch read the clock after launch_ts
  CHECK(s_ev["ts"].get<double>() >= op["ts"].get<double>());  // inside the op slice
}

TEST_CASE("profiler trace: async producer/consumer pairs cross threads, scopes and phases") {
  auto dir = temp_dir("trace_async");
  auto s = tp::start((dir / "as").string(), {.format = "chrome_trace"});
  {
    tp::Scope p("producer_loop");
    tp::async_begin(42, "tma_load");
  }
  std::thread([] {
    tp::Scope c("consumer_region");
    tp::async_end(42);
  }).join();
  tp::async_begin(43, "wgmma");
  tp::advance_phase(s);
  tp::async_end(43);  // the next phase: same id, the name carried over

  json p0 = json::parse(*tp::get(s, 0));
  auto markers = events_where(p0, "X", "async");
  REQUIRE(markers.size() == 3);
  const json s42 = named(events_where(p0, "s", "async"), "tma_load");
  const json f42 = named(events_where(p0, "f", "async"), "tma_load");
  CHECK(s42["id"] == "async:42");
  CHECK(f42["id"] == "async:42");
  CHECK(s42["tid"] != f42["tid"]);
  CHECK(f42["ts"].get<double>() >= s42["ts"].get<double>());
  CHECK(f42["bp"] == "e");
  int producers = 0, consumers = 0;
  for (const auto& m : markers) {
    if (m["args"]["role"] == "producer") ++producers;
    if (m["args"]["role"] == "consumer") ++consumers;
    if (m["args"]["id"] == 42 && m["args"]["role"] == "consumer")
      CHECK(m["args"]["call_stack"] == json({"consumer_region"}));
  }
  CHECK(producers == 2);
  CHECK(consumers == 1);
  CHECK(named(events_where(p0, "s", "async"), "wgmma")["id"] == "async:43");

  json p1 = json::parse(*tp::get(s, 1));
  const json f43 = named(events_where(p1, "f", "async"), "wgmma");
  CHECK(f43["id"] == "async:43");
  CHECK(p1["otherData"]["base_time_ns"] == p0["otherData"]["base_time_ns"]);  // one time base
  CHECK(p1["otherData"]["phase"] == 1);
  tp::finalize(s);
}

TEST_CASE("profiler trace: hatchet sessions ignore async events; a trace of nothing is valid") {
  auto dir = temp_dir("trace_misc");
  auto h = tp::start((dir / "h").string());
  tp::async_begin(1, "ignored");
  tp::async_end(1);
  CHECK(json::parse(*tp::get(h, 0))[0]["children"].empty());
  tp::finalize(h);
  auto t = tp::start((dir / "t").string(), {.format = "chrome_trace"});
  json empty = json::parse(*tp::get(t, 0));
  CHECK(empty["traceEvents"].size() == 1);  // process_name only
  tp::finalize(t);
}

TEST_CASE("profiler trace: call stacks keep the 64 innermost scopes; scopes leaked in a loop stay linear") {
  // Scopes entered in a loop and never exited nest thousands deep; every event carries its stack, so full stacks made
  // the trace quadratic in the depth (a break-it pass: 20,000 leaked scopes, 370 MB, 6 GB to build).
  auto dir = temp_dir("trace_deep");
  auto s = tp::start((dir / "deep").string(), {.format = "chrome_trace"});
  constexpr int kDepth = 3000;
  for (int i = 0; i < kDepth; ++i) tp::enter_scope("d" + std::to_string(i % 3));
  tp::exit_scope();  // the innermost ends now: its event is written with its stack
  auto rep = tp::finalize(s);  // the rest are closed and reported
  CHECK(rep.open_scopes.size() == 1);
  const auto bytes = std::filesystem::file_size(dir / "deep.chrome_trace");
  CHECK(bytes < 40u * 1024 * 1024);  // ~kDepth events of <= 65 names each (full stacks: ~4.5M names)
  json trace = read_json(dir / "deep.chrome_trace");
  std::size_t scopes = 0, longest = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "scope") continue;
    ++scopes;
    const json& cs = e["args"]["call_stack"];
    longest = std::max(longest, cs.size());
    if (cs.size() == 65) {
      CHECK(cs[0].get<std::string>().rfind("... (", 0) == 0);
      CHECK(cs[0].get<std::string>().find("outer scopes)") != std::string::npos);
    }
  }
  CHECK(scopes == kDepth);
  CHECK(longest == 65);  // 64 names and the elision
  for (int i = 1; i < kDepth; ++i) tp::exit_scope();  // the thread's scope stack outlives the session: unwind it
  // A shallow stack is whole, with no elision.
  auto t = tp::start((dir / "shallow").string(), {.format = "chrome_trace"});
  {
    tp::Scope a("a");
    tp::Scope b("b");
  }
  json shallow = json::parse(*tp::get(t, 0));
  bool found = false;
  for (const json& e : shallow["traceEvents"])
    if (e.value("name", "") == "b") {
      CHECK(e["args"]["call_stack"] == json({"a", "b"}));
      found = true;
    }
  CHECK(found);
  tp::finalize(t);
}

// The example in docs/profiler.md, as written there.
TEST_CASE("profiler docs: the example in docs/profiler.md") {
  auto dir = temp_dir("docs");
  const std::string path = (dir / "train").string();
  // --- docs example begin
  namespace prof = tilejit::profiler;
  auto session = prof::start(path, {.mode = "periodic_flushing"});
  for (int step = 0; step < 3; ++step) {
    prof::Scope s("step");
    {
      prof::Scope fwd("forward", {prof::flops(16, 2'000'000), prof::bytes(4096)});
    }
    {
      prof::Scope opt("optimizer");
      prof::add_metric({"lr", 0.001, prof::MetricKind::property});
    }
  }
  prof::advance_phase(session);  // phase 0 -> train.part_0.hatchet, in the background
  prof::finalize(session);       // phase 1 -> train.part_1.hatchet
  // --- docs example end
  json root = read_json(dir / "train.part_0.hatchet")[0];
  CHECK(at(root, {"step", "forward"})["metrics"]["flops16"] == 6'000'000);
  CHECK(at(root, {"step"})["metrics"]["bytes (inc)"] == 3 * 4096);
  CHECK(at(root, {"step", "optimizer"})["metrics"]["lr"] == 0.001);
  CHECK(fs::exists(dir / "train.part_1.hatchet"));
}

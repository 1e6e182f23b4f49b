// Sessions, scopes, metrics, threads and kernel attribution through a backend.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <thread>

#include "profiler_test_util.hpp"
#include "tilejit/core/utf8.hpp"

using namespace prof_test;
namespace tp = tilejit::profiler;

namespace {
/// The depth of the chain of first children under `root`, and its last node.
std::pair<int, const json*> first_chain(const json& root) {
  int depth = 0;
  const json* n = &root;
  while (!n->at("children").empty()) {
    n = &n->at("children")[0];
    ++depth;
  }
  return {depth, n};
}
}  // namespace

TEST_CASE("profiler scopes: nesting deeper than 4096 is recorded in the 4096th scope, and the file stays readable") {
  // Review finding: 50,000 nested scopes (an exit_scope missing in a loop) overflowed the stack of the writer.
  auto dir = prof_test::temp_dir("deep");
  auto s = tp::start((dir / "deep").string());
  for (int i = 0; i < 20000; ++i) tp::enter_scope("deep");
  tp::add_metric({"deep_n", 1});
  for (int i = 0; i < 20000; ++i) tp::exit_scope();
  const auto text = tp::get(s, tp::current_phase(s));
  REQUIRE(text.has_value());
  const json root = json::parse(*text)[0];
  const auto [depth, n] = first_chain(root);
  CHECK(depth == 4096);
  CHECK(n->at("metrics").value("deep_n", 0) == 1);
  CHECK(root["metrics"].value("deep_n (inc)", 0) == 1);
  tp::finalize(s);
}

TEST_CASE("profiler scope: tree shape and inclusive / exclusive / property metrics") {
  auto dir = temp_dir("shape");
  auto s = tp::start((dir / "shape").string());
  {
    tp::Scope a("A");
    tp::add_metric(tp::bytes(100));
    {
      tp::Scope b("B", {tp::flops(16, 10)});
      tp::add_metric({"shape_exc", 5, tp::MetricKind::exclusive});
      tp::add_metric({"shape_pty", 1.5, tp::MetricKind::property});
      tp::add_metric({"shape_pty", 2.5, tp::MetricKind::property});  // last value wins
    }
    {
      tp::Scope b("B");  // same path: same node
      tp::add_metric(tp::bytes(1));
    }
    {
      tp::Scope c("C");
      tp::add_metrics({tp::flops(16, 7), {"shape_exc", 3, tp::MetricKind::exclusive}});
    }
  }
  tp::add_metric(tp::bytes(1000));  // no scope open: ROOT

  json j = json::parse(*tp::get(s, 0));
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 2);
  const json& root = j[0];
  CHECK(root["frame"]["name"] == "ROOT");
  CHECK(root["frame"]["type"] == "function");
  CHECK(child_names(root) == std::vector<std::string>{"A"});
  const json& A = at(root, {"A"});
  CHECK(child_names(A) == std::vector<std::string>{"B", "C"});
  const json& B = at(A, {"B"});
  const json& C = at(A, {"C"});
  CHECK(B["children"].empty());

  // Self values.
  CHECK(B["metrics"]["flops16"] == 10);
  CHECK(B["metrics"]["bytes"] == 1);
  CHECK(B["metrics"]["shape_exc"] == 5);
  CHECK(B["metrics"]["shape_pty"] == 2.5);
  CHECK(C["metrics"]["flops16"] == 7);
  CHECK(C["metrics"]["shape_exc"] == 3);
  CHECK(A["metrics"]["bytes"] == 100);
  CHECK(root["metrics"]["bytes"] == 1000);

  // Inclusive metrics add up the tree; exclusive and property ones do not.
  CHECK(B["metrics"]["bytes (inc)"] == 1);
  CHECK(A["metrics"]["bytes (inc)"] == 101);
  CHECK(A["metrics"]["flops16 (inc)"] == 17);
  CHECK(root["metrics"]["bytes (inc)"] == 1101);
  CHECK(root["metrics"]["flops16 (inc)"] == 17);
  CHECK_FALSE(A["metrics"].contains("shape_exc"));
  CHECK_FALSE(A["metrics"].contains("shape_exc (inc)"));
  CHECK_FALSE(A["metrics"].contains("shape_pty"));
  CHECK_FALSE(B["metrics"].contains("shape_pty (inc)"));
  CHECK(j[1] == json::object());  // no kernels: no devices

  auto rep = tp::finalize(s);
  CHECK(rep.files == std::vector<std::string>{(dir / "shape.hatchet").string()});
  CHECK(rep.open_scopes.empty());
  CHECK(read_json(dir / "shape.hatchet") == j);
}

TEST_CASE("profiler scope: enter_scope / exit_scope, Name, and a stray exit") {
  auto dir = temp_dir("enter");
  auto s = tp::start((dir / "enter").string());
  static const tp::Name step("step");
  tp::exit_scope();  // nothing open: no-op
  tp::enter_scope(step);
  tp::enter_scope("load");
  tp::add_metric({"enter_items", 3});
  tp::exit_scope();
  tp::enter_scope("load");
  tp::add_metric({"enter_items", 4});
  tp::exit_scope();
  tp::exit_scope();
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(at(root, {"step", "load"})["metrics"]["enter_items"] == 7);
  CHECK(child_names(at(root, {"step"})) == std::vector<std::string>{"load"});
  tp::finalize(s);
}

TEST_CASE("profiler scope: threads keep their own stacks and merge into one tree by path") {
  auto dir = temp_dir("threads");
  auto s = tp::start((dir / "threads").string());
  constexpr int kThreads = 4, kIters = 1000;
  json root;
  {
    tp::Scope main_scope("main");  // not a parent of the workers' scopes
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t)
      workers.emplace_back([t] {
        for (int i = 0; i < kIters; ++i) {
          tp::Scope step("step");
          tp::Scope work("work");
          tp::add_metric({"thr_items", 1});
        }
        tp::Scope own("thread" + std::to_string(t));
        tp::add_metric({"thr_id", static_cast<std::int64_t>(t), tp::MetricKind::property});
      });
    for (auto& w : workers) w.join();
    root = json::parse(*tp::get(s, 0))[0];
  }
  CHECK(at(root, {"step", "work"})["metrics"]["thr_items"] == kThreads * kIters);
  CHECK(at(root, {"step"})["metrics"]["thr_items (inc)"] == kThreads * kIters);
  for (int t = 0; t < kThreads; ++t)
    CHECK(at(root, {"thread" + std::to_string(t)})["metrics"]["thr_id"] == t);
  CHECK(at(root, {"main"})["children"].empty());
  CHECK(root["children"].size() == 2 + kThreads);  // main, step, thread0..3
  tp::finalize(s);
}

TEST_CASE("profiler metric: a name reused with another type or kind throws MetricTypeError") {
  auto dir = temp_dir("types");
  auto s = tp::start((dir / "types").string());
  tp::add_metric({"mm_value", 1});
  try {
    tp::add_metric({"mm_value", 1.0});
    FAIL("no MetricTypeError");
  } catch (const tp::MetricTypeError& e) {
    CHECK(e.metric() == "mm_value");
    CHECK(e.registered() == "int64 inclusive");
    CHECK(e.attempted() == "double inclusive");
    CHECK(std::string(e.what()).find("mm_value") != std::string::npos);
  }
  CHECK_THROWS_AS(tp::add_metric({"mm_value", 2, tp::MetricKind::property}), tp::MetricTypeError);
  CHECK_THROWS_AS(tp::add_metric({"bytes", 2.0}), tp::MetricTypeError);  // bytes is int64
  CHECK_THROWS_AS(tp::add_metric({"device_id", 1, tp::MetricKind::property}), tilejit::InvalidArgument);
  // " (inc)" names the writers' derived inclusive totals: a user metric of that name would be overwritten.
  CHECK_THROWS_WITH_AS(tp::add_metric({"mm_value (inc)", 100}), doctest::Contains("reserved"), tilejit::InvalidArgument);
  CHECK_THROWS_AS(tp::flops(12, 1), tilejit::InvalidArgument);
  // A scope whose metrics are rejected is not entered.
  CHECK_THROWS_AS(tp::Scope("bad", {{"mm_value", 0.5}}), tp::MetricTypeError);
  { tp::Scope after("after"); }
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(child_names(root) == std::vector<std::string>{"after"});
  CHECK(root["metrics"]["mm_value"] == 1);  // only the accepted value
  tp::finalize(s);
}

TEST_CASE("profiler session: deactivated sessions record nothing") {
  auto dir = temp_dir("deact");
  auto s = tp::start((dir / "deact").string());
  tp::deactivate(s);
  {
    tp::Scope hidden("hidden");
    tp::add_metric({"deact_n", 1});
  }
  tp::activate(s);
  {
    tp::Scope seen("seen");
    tp::add_metric({"deact_n", 2});
  }
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(child_names(root) == std::vector<std::string>{"seen"});
  CHECK(at(root, {"seen"})["metrics"]["deact_n"] == 2);
  tp::finalize(s);
}

TEST_CASE("profiler session: bad options and unknown ids are InvalidArgument") {
  using tilejit::InvalidArgument;
  CHECK_THROWS_AS(tp::start(""), InvalidArgument);
  CHECK_THROWS_AS(tp::start("x", {.format = "xml"}), InvalidArgument);
  CHECK_THROWS_AS(tp::start("x", {.mode = "periodic_flushing;format=hatchet"}), InvalidArgument);
  CHECK_THROWS_AS(tp::start("x", {.hook = "everything"}), InvalidArgument);
  CHECK_THROWS_AS(tp::start("x", {.buffer_size = 0}), InvalidArgument);
  CHECK_THROWS_AS(tp::start("x", {.backend = "no-such-backend"}), InvalidArgument);
  CHECK_THROWS_AS(tp::advance_phase(987654), InvalidArgument);
  CHECK_THROWS_AS(tp::finalize(987654), InvalidArgument);
  CHECK_THROWS_AS(tp::register_backend("none", [] { return std::unique_ptr<tp::Backend>(); }),
                  InvalidArgument);
}

// A mode that is not the session's own goes to the backend; with no backend nothing read it and a typo
// ({.mode = "periodic_flusing"}) was silently accepted.
TEST_CASE("profiler session: a backend's mode without a backend is InvalidArgument; with one it is passed on") {
  using tilejit::InvalidArgument;
  for (const char* backend : {"", "none"}) {
    CAPTURE(backend);
    CHECK_THROWS_WITH_AS(tp::start("x", {.backend = backend, .mode = "nonsense"}),
                         doctest::Contains("mode 'nonsense' is not \"\", \"periodic_flushing\""), InvalidArgument);
    CHECK_THROWS_WITH_AS(tp::start("x", {.backend = backend, .mode = "periodic_flusing"}),
                         doctest::Contains("need Options::backend"), InvalidArgument);
  }
  register_mock();
  auto dir = temp_dir("mode");
  auto s = tp::start((dir / "mode").string(), {.backend = "mock", .mode = "nonsense"});
  MockBackend* mock = MockBackend::latest();
  REQUIRE(mock != nullptr);
  CHECK(mock->config().mode == "nonsense");
  tp::finalize(s);
  // The session's own modes need no backend.
  auto p = tp::start((dir / "p").string(), {.mode = "periodic_flushing"});
  tp::finalize(p);
}

TEST_CASE("profiler backend: kernel records land under the scope that launched them") {
  register_mock();
  auto dir = temp_dir("attrib");
  auto s = tp::start((dir / "attrib").string(), {.backend = "mock", .buffer_size = 1 << 20});
  MockBackend* mock = MockBackend::latest();
  REQUIRE(mock != nullptr);
  CHECK(mock->config().buffer_size == (1u << 20));
  CHECK(tp::stats(s).kernel_records);

  {
    tp::Scope fwd("fwd");
    tp::correlate_launch(1);
    {
      tp::Scope attn("attn");
      tp::correlate_launch(2);
    }
    tp::correlate_launch(4);
  }
  std::thread([] {
    tp::Scope w("worker");
    tp::correlate_launch(3);
  }).join();
  CHECK(tp::stats(s).pending_launches == 4);

  // Records arrive after the scopes closed, out of order, one with an unknown id.
  const std::uint64_t t0 = tp::now_ns();
  mock->push(record("softmax", 2, t0 + 100, 50));
  mock->push(record("gemm", 1, t0 + 10, 1000));
  mock->push(record("orphan", 99, t0 + 200, 5));
  mock->push(record("gemm", 3, t0 + 300, 700));
  mock->push(record("gemm", 4, t0 + 400, 2000));

  json j = json::parse(*tp::get(s, 0));  // get() of the open phase flushes the backend
  const json& root = j[0];
  const json& gemm = at(root, {"fwd", "gemm"});
  CHECK(gemm["metrics"]["time (ns)"] == 3000);
  CHECK(gemm["metrics"]["count"] == 2);
  CHECK(gemm["metrics"]["device_id"] == "0");
  CHECK(gemm["metrics"]["device_type"] == "CUDA");
  CHECK(at(root, {"fwd", "attn", "softmax"})["metrics"]["time (ns)"] == 50);
  CHECK(at(root, {"worker", "gemm"})["metrics"]["time (ns)"] == 700);
  CHECK(at(root, {"orphan"})["metrics"]["count"] == 1);
  CHECK(at(root, {"fwd"})["metrics"]["time (ns) (inc)"] == 3050);
  CHECK(root["metrics"]["time (ns) (inc)"] == 3755);
  CHECK(root["metrics"]["count (inc)"] == 5);
  const json& dev = j[1]["CUDA"]["0"];
  CHECK(dev["num_sms"] == 132);
  CHECK(dev["arch"] == "90a");
  CHECK(dev["clock_rate"] == 1980000);
  CHECK(tp::stats(s).pending_launches == 0);

  // A record delivered straight from a backend thread, no flush needed.
  {
    tp::Scope late("late");
    tp::correlate_launch(5);
  }
  std::thread([&] { mock->deliver(record("k", 5, tp::now_ns(), 9)); }).join();
  json root2 = json::parse(*tp::get(s, 0))[0];
  CHECK(at(root2, {"late", "k"})["metrics"]["time (ns)"] == 9);

  const int stops_before = MockBackend::stops();
  auto rep = tp::finalize(s);
  CHECK(MockBackend::stops() == stops_before + 1);  // the backend is gone after finalize: count stops instead
  CHECK(rep.errors.empty());
}

TEST_CASE("profiler backend: launch-hook ops carry flops and bytes and receive their kernel") {
  register_mock();
  // Without a hooked session, LaunchScope does nothing.
  CHECK(tp::detail::g_hook_sessions.load() == 0);
  auto dir = temp_dir("hook");
  auto s = tp::start((dir / "hook").string(), {.backend = "mock", .hook = "launch"});
  MockBackend* mock = MockBackend::latest();
  CHECK(tp::detail::g_hook_sessions.load() == 1);
  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope step("step");
    for (int i = 0; i < 3; ++i) {
      tp::LaunchScope hook({.kernel = "vec_add", .grid = {4, 1, 1}, .flops = 1000,
                            .flops_width = 32, .bytes = 4096});
      tp::correlate_launch(100 + i);
      mock->push(record("vec_add", 100 + i, t0 + i * 1000, 250));
    }
  }
  json root = json::parse(*tp::get(s, 0))[0];
  const json& op = at(root, {"step", "vec_add"});
  CHECK(op["children"].empty());  // the kernel lands on the op itself
  CHECK(op["metrics"]["flops32"] == 3000);
  CHECK(op["metrics"]["bytes"] == 3 * 4096);
  CHECK(op["metrics"]["count"] == 3);
  CHECK(op["metrics"]["time (ns)"] == 750);
  tp::deactivate(s);
  CHECK(tp::detail::g_hook_sessions.load() == 0);
  tp::finalize(s);
}

TEST_CASE("profiler backend: an unavailable backend leaves a working session without kernels") {
  struct Broken final : tp::Backend {
    void start(tp::Sink&, const tp::BackendConfig&) override {
      throw tilejit::DeviceUnavailable("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (test)");
    }
    void flush() override {}
    void stop() override {}
  };
  tp::register_backend("broken", [] { return std::make_unique<Broken>(); });
  auto names = tp::registered_backends();
  CHECK(std::find(names.begin(), names.end(), "broken") != names.end());
  auto dir = temp_dir("broken");
  auto s = tp::start((dir / "broken").string(), {.backend = "broken"});
  CHECK_FALSE(tp::stats(s).kernel_records);
  {
    tp::Scope a("still_recorded");
    tp::correlate_launch(1);  // ignored: no kernel records will come
  }
  CHECK(tp::stats(s).pending_launches == 0);
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(child_names(root) == std::vector<std::string>{"still_recorded"});
  tp::finalize(s);
}

TEST_CASE("profiler metric: int64 sums saturate instead of wrapping") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max(), kMin = std::numeric_limits<std::int64_t>::min();
  auto dir = temp_dir("saturate");
  auto s = tp::start((dir / "saturate").string());
  {
    tp::Scope a("A");
    tp::add_metric({"sat_big", kMax});
    tp::add_metric({"sat_big", kMax});  // used to wrap to -2
    tp::add_metric({"sat_low", kMin});
    tp::add_metric({"sat_low", std::int64_t{-1}});
    {
      tp::Scope b("B");
      tp::add_metric({"sat_big", std::int64_t{5}});  // B alone is fine; A (inc) = A + B saturates
      tp::add_metric({"sat_exc", kMax - 1, tp::MetricKind::exclusive});
      tp::add_metric({"sat_exc", std::int64_t{3}, tp::MetricKind::exclusive});
    }
  }
  json j = json::parse(*tp::get(s, 0));
  const json& A = at(j[0], {"A"});
  const json& B = at(A, {"B"});
  CHECK(A["metrics"]["sat_big"] == kMax);
  CHECK(A["metrics"]["sat_big (inc)"] == kMax);
  CHECK(j[0]["metrics"]["sat_big (inc)"] == kMax);
  CHECK(A["metrics"]["sat_low"] == kMin);
  CHECK(B["metrics"]["sat_big"] == 5);
  CHECK(B["metrics"]["sat_exc"] == kMax);
  tp::finalize(s);
}

TEST_CASE("profiler session: names that cannot name files, and a name already running, are InvalidArgument") {
  using tilejit::InvalidArgument;
  auto dir = temp_dir("names");
  // The last path component names the files ("<name>.<format>"): a directory alone would write "<dir>/.hatchet".
  for (const std::string& bad : {(dir / "").string(), (dir / ".").string(), (dir / "..").string(), std::string("/")}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(tp::start(bad), doctest::Contains("the name's last path component names the files"), InvalidArgument);
  }
  // Two running sessions of one name would overwrite each other's files.
  const std::string name = (dir / "twice").string();
  auto s = tp::start(name);
  CHECK_THROWS_WITH_AS(tp::start(name), doctest::Contains("is already running"), InvalidArgument);
  CHECK_THROWS_WITH_AS(tp::start(name + ".hatchet"), doctest::Contains("is already running"), InvalidArgument);  // same files
  // The same files however the name is spelled.
  CHECK_THROWS_WITH_AS(tp::start((dir / "." / "twice").string()), doctest::Contains("is already running"), InvalidArgument);
  CHECK_THROWS_WITH_AS(tp::start((dir / "sub" / ".." / "twice").string()), doctest::Contains("is already running"), InvalidArgument);
  // A name that is one of a running session's part-file stems, or whose part files are the running session's file.
  CHECK_THROWS_WITH_AS(tp::start(name + ".part_0"), doctest::Contains("collides with the part files"), InvalidArgument);
  {
    auto part = tp::start((dir / "p.part_12").string());
    CHECK_THROWS_WITH_AS(tp::start((dir / "p").string(), {.mode = "periodic_flushing"}), doctest::Contains("collides with the part files"),
                         InvalidArgument);
    CHECK_NOTHROW(tp::finalize(tp::start((dir / "p.part_x").string())));  // not a part file's stem
    tp::finalize(part);
  }
  // A NUL byte cannot be in a file name: refused rather than cutting the name short.
  CHECK_THROWS_WITH_AS(tp::start(name + std::string("\0zz", 3)), doctest::Contains("NUL byte"), InvalidArgument);
  auto other = tp::start((dir / "other").string());  // another name is fine
  tp::finalize(other);
  tp::finalize(s);
  CHECK(std::filesystem::exists(name + ".hatchet"));
  auto again = tp::start(name);  // once finalized, the name is free again (a rerun replaces the file)
  tp::finalize(again);
}

TEST_CASE("profiler session: a final file name of 255 bytes is written (its temporary name stays within NAME_MAX)") {
  auto dir = temp_dir("longname");
  const std::string stem(255 - std::string(".hatchet").size(), 'a');
  auto s = tp::start((dir / stem).string());
  {
    tp::Scope a("long_named");
  }
  auto rep = tp::finalize(s);
  CHECK(rep.errors.empty());
  REQUIRE(rep.files.size() == 1);
  CHECK(std::filesystem::path(rep.files[0]).filename().string().size() == 255);
  CHECK(child_names(read_json(rep.files[0])[0]) == std::vector<std::string>{"long_named"});
  CHECK(files_in(dir).size() == 1);  // no temporary left behind
}

TEST_CASE("profiler writers: names that are not UTF-8 stay distinct in JSON (bytes as \\xHH) and exact in msgpack") {
  // nlohmann's replacement character made "bad\xff" and "bad\xfe" two nodes of one name (a break-it pass).
  auto dir = temp_dir("utf8");
  for (const std::string fmt : {"hatchet", "chrome_trace", "hatchet_msgpack"}) {
    CAPTURE(fmt);
    auto s = tp::start((dir / ("u_" + fmt)).string(), {.format = fmt});
    for (const std::string& name : {std::string("bad\xff"), std::string("bad\xfe"), std::string("\xed\xa0\x80sur"), std::string("ok\xe2\x82\xac")}) {
      tp::Scope a(name);
    }
    const auto rep = tp::finalize(s);
    REQUIRE(rep.files.size() == 1);
    const std::string bytes = read_file(rep.files[0]);
    if (fmt == "hatchet_msgpack") {
      const json root = json::from_msgpack(bytes)[0];
      auto names = child_names(root);
      std::sort(names.begin(), names.end());
      CHECK(names == std::vector<std::string>{"bad\xfe", "bad\xff", "ok\xe2\x82\xac", "\xed\xa0\x80sur"});
      continue;
    }
    CHECK(tilejit::utf8_valid(bytes));
    const json doc = json::parse(bytes);
    std::vector<std::string> names;
    if (fmt == "hatchet") {
      names = child_names(doc[0]);
    } else {
      for (const json& e : doc["traceEvents"])
        if (e.value("cat", "") == "scope") names.push_back(e["name"]);
    }
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"\\xed\\xa0\\x80sur", "bad\\xfe", "bad\\xff", "ok\xe2\x82\xac"});
  }
}

TEST_CASE("profiler writers: NaN and infinite metrics are null in hatchet JSON and floats in msgpack") {
  auto dir = temp_dir("nan");
  auto s = tp::start((dir / "nan").string());
  {
    tp::Scope a("A");
    tp::add_metric({"nan_m", std::numeric_limits<double>::quiet_NaN(), tp::MetricKind::property});
    tp::add_metric({"inf_m", std::numeric_limits<double>::infinity(), tp::MetricKind::property});
    tp::add_metric({"ok_m", 1.5, tp::MetricKind::property});
  }
  const json j = json::parse(*tp::get(s, 0));
  const json& A = at(j[0], {"A"});
  CHECK(A["metrics"]["nan_m"].is_null());
  CHECK(A["metrics"]["inf_m"].is_null());
  CHECK(A["metrics"]["ok_m"] == 1.5);
  const auto mp = tp::get_msgpack(s, 0);
  REQUIRE(mp.has_value());
  const json m = json::from_msgpack(*mp);
  const json& Am = at(m[0], {"A"});
  CHECK(std::isnan(Am["metrics"]["nan_m"].get<double>()));
  CHECK(std::isinf(Am["metrics"]["inf_m"].get<double>()));
  tp::finalize(s);
}

TEST_CASE("profiler scopes: the depth cap holds in every phase, not only the first") {
  // A break-it pass: advance_phase rebuilt each open frame as a child of the one above, so a leak past 4096 made the
  // next phase as deep as the leak (300,000 levels: a writer's recursion overflowed the stack, SIGSEGV).
  auto dir = prof_test::temp_dir("deep_phases");
  auto s = tp::start((dir / "deep").string());
  for (int i = 0; i < 6000; ++i) tp::enter_scope("deep");
  tp::advance_phase(s);
  tp::add_metric({"deep_after", 1});
  const auto text = tp::get(s, tp::current_phase(s));
  REQUIRE(text.has_value());
  const json root = json::parse(*text)[0];
  const auto [depth, n] = first_chain(root);
  CHECK(depth == 4096);
  CHECK(n->at("metrics").value("deep_after", 0) == 1);
  for (int i = 0; i < 6000; ++i) tp::exit_scope();
  tp::finalize(s);
}

namespace {
struct ScopeAtThreadExit {
  ~ScopeAtThreadExit() {
    tp::Scope x("at_thread_exit");
    tp::add_metric({"late_n", 1});
  }
};
}  // namespace

TEST_CASE("profiler scope: a Scope in a thread_local destructor is recorded, after the thread's own state is gone") {
  // A break-it pass: the thread's profiler state was a thread_local destroyed before this one: SIGSEGV.
  auto dir = temp_dir("tls_exit");
  auto s = tp::start((dir / "tls").string());
  for (int t = 0; t < 4; ++t)
    std::thread([] {
      thread_local ScopeAtThreadExit guard;  // constructed before the profiler's state: destroyed after it
      (void)&guard;
      tp::Scope body("body");
    }).join();
  const json root = json::parse(*tp::get(s, tp::current_phase(s)))[0];
  CHECK(at(root, {"at_thread_exit"})["metrics"]["late_n"] == 4);
  tp::finalize(s);
}

TEST_CASE("profiler metric: an unsigned value past INT64_MAX is recorded as INT64_MAX, not as a negative number") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  auto dir = temp_dir("u64");
  auto s = tp::start((dir / "u64").string());
  {
    tp::Scope a("A");
    tp::add_metric({"u_big", std::numeric_limits<std::uint64_t>::max()});
    tp::add_metric({"u_half", std::uint64_t{1} << 63});
    tp::add_metric({"u_fits", std::uint64_t{kMax}});
    tp::add_metric({"u32", std::numeric_limits<std::uint32_t>::max()});
  }
  const json A = at(json::parse(*tp::get(s, 0))[0], {"A"});
  CHECK(A["metrics"]["u_big"] == kMax);
  CHECK(A["metrics"]["u_half"] == kMax);
  CHECK(A["metrics"]["u_fits"] == kMax);
  CHECK(A["metrics"]["u32"] == std::int64_t{4294967295});
  tp::finalize(s);
}

TEST_CASE("profiler session: a backend whose flush throws at finalize is still stopped") {
  // A break-it pass: flush and stop shared one try, so CUPTI's unsubscribe and detach were skipped.
  register_mock();
  auto dir = temp_dir("flush_throws");
  auto s = tp::start((dir / "ft").string(), {.backend = "mock"});
  REQUIRE(MockBackend::latest() != nullptr);
  MockBackend::latest()->throw_on_flush = true;
  const int before = MockBackend::stops();
  StderrCapture err;
  const auto rep = tp::finalize(s);
  const std::string text = err.text();
  CHECK(MockBackend::stops() == before + 1);
  CHECK(text.find("failed to flush (its last records are lost): flush boom") != std::string::npos);
  CHECK(rep.files.size() == 1);
}

TEST_CASE("profiler writers: a stray byte and the text \\xHH stay distinct names (backslashes as \\x5c)") {
  // A break-it pass: "a\xff" (a byte) and "a\\xff" (text) were both written a\xff: two sibling nodes of one name, and
  // metrics named so collapsed into one key, losing a value.
  auto dir = temp_dir("utf8_inj");
  for (const std::string fmt : {"hatchet", "chrome_trace"}) {
    CAPTURE(fmt);
    auto s = tp::start((dir / ("i_" + fmt)).string(), {.format = fmt});
    {
      tp::Scope a(std::string("a\xff"));
      tp::add_metric({std::string("q\xfe"), 5});
      tp::add_metric({"q\\xfe", 7});
    }
    { tp::Scope b("a\\xff"); }
    const auto rep = tp::finalize(s);
    REQUIRE(rep.files.size() == 1);
    const std::string bytes = read_file(rep.files[0]);
    CHECK(tilejit::utf8_valid(bytes));
    const json doc = json::parse(bytes);
    std::vector<std::string> names;
    if (fmt == "hatchet") {
      names = child_names(doc[0]);
      const json& a = at(doc[0], {"a\\xff"});
      CHECK(a["metrics"]["q\\xfe"] == 5);
      CHECK(a["metrics"]["q\\x5cxfe"] == 7);
    } else {
      for (const json& e : doc["traceEvents"])
        if (e.value("cat", "") == "scope") names.push_back(e["name"]);
    }
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"a\\x5cxff", "a\\xff"});
  }
}

TEST_CASE("profiler scope: a Scope destroyed on another thread ends nothing there") {
  // A break-it pass: the destructor unwound the destroying thread's stack to the Scope's depth, silently ending that
  // thread's own scopes (a coroutine resumed on a pool thread).
  auto dir = temp_dir("cross_thread");
  auto s = tp::start((dir / "x").string());
  std::unique_ptr<tp::Scope> from_t1;
  std::thread([&] { from_t1 = std::make_unique<tp::Scope>("from_t1"); }).join();
  StderrCapture err;
  std::thread([&] {
    tp::Scope outer("t2outer");
    tp::Scope inner("t2inner");
    from_t1.reset();
    tp::add_metric({"t2_n", 1});
  }).join();
  const std::string text = err.text();
  const json root = json::parse(*tp::get(s, tp::current_phase(s)))[0];
  CHECK(at(root, {"t2outer", "t2inner"})["metrics"]["t2_n"] == 1);
  CHECK(root["metrics"].value("t2_n", 0) == 0);
  CHECK(text.find("destroyed on another thread") != std::string::npos);
  tp::finalize(s);
}

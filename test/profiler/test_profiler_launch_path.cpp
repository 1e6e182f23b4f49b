// The per-launch path: the pending-launch ring, name interning, batched
// record delivery (Sink::kernels) from another thread while launches go on,
// records out of order, and an open launch op across a phase boundary.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <random>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "profiler_test_util.hpp"
#include "src/profiler/cupti_backend.hpp"
#include "src/profiler/intern.hpp"
#include "src/profiler/pending.hpp"
#include "tilejit/profiler/launch.hpp"

using namespace prof_test;
namespace pd = tilejit::profiler::detail;

TEST_CASE("profiler pending launches: in order, out of order, rebinding, holes") {
  pd::PendingLaunches p;
  CHECK(p.empty());
  CHECK(p.find(1) == nullptr);

  SUBCASE("ids in launch order, records in launch order: a queue") {
    for (std::uint64_t id = 1; id <= 1000; ++id) p.put(id, {.node = static_cast<std::uint32_t>(id)});
    CHECK(p.size() == 1000);
    for (std::uint64_t id = 1; id <= 1000; ++id) {
      pd::PendingLaunch* l = p.find(id);
      REQUIRE(l != nullptr);
      CHECK(l->node == id);
      p.erase(l);
    }
    CHECK(p.empty());
    CHECK(p.held() == 0);
  }
  SUBCASE("ids bound out of order are found; binding an id again replaces it") {
    for (std::uint64_t id : {10, 30, 20, 5, 25, 40}) p.put(id, {.node = static_cast<std::uint32_t>(id)});
    p.put(20, {.node = 2000});
    CHECK(p.size() == 6);
    std::vector<std::uint64_t> order;
    p.for_each([&](std::uint64_t id, pd::PendingLaunch&) { order.push_back(id); });
    CHECK(order == std::vector<std::uint64_t>{5, 10, 20, 25, 30, 40});
    CHECK(p.find(20)->node == 2000);
    CHECK(p.find(15) == nullptr);
    CHECK(p.find(41) == nullptr);
    CHECK(p.find(1) == nullptr);
    p.erase(20);
    CHECK(p.find(20) == nullptr);
    p.put(20, {.node = 7});  // a hole is reused
    CHECK(p.find(20)->node == 7);
    CHECK(p.size() == 6);
  }
  SUBCASE("records in reverse order, and growth while out of order") {
    for (std::uint64_t id = 1; id <= 300; ++id) p.put(2 * id, {.node = static_cast<std::uint32_t>(id)});
    for (std::uint64_t id = 1; id <= 300; ++id) p.put(2 * id - 1, {.node = static_cast<std::uint32_t>(id + 1000)});
    CHECK(p.size() == 600);
    for (std::uint64_t id = 600; id >= 1; --id) {
      pd::PendingLaunch* l = p.find(id);
      REQUIRE(l != nullptr);
      CHECK(l->node == (id % 2 == 0 ? id / 2 : (id + 1) / 2 + 1000));
      p.erase(l);
    }
    CHECK(p.empty());
    CHECK(p.held() == 0);
  }
  SUBCASE("a launch whose record never comes does not keep the later ones") {
    for (std::uint64_t id = 1; id <= 10000; ++id) p.put(id, {});
    for (std::uint64_t id = 2; id <= 10000; ++id) p.erase(id);
    CHECK(p.size() == 1);
    CHECK(p.held() <= 2 * p.size() + 64);  // holes are compacted away
    CHECK(p.find(1) != nullptr);
    p.put(10001, {.node = 3});
    CHECK(p.find(10001)->node == 3);
  }
  SUBCASE("erase_if (phase aging) and clear") {
    for (std::uint64_t id = 1; id <= 100; ++id) p.put(id, {.age = static_cast<std::uint8_t>(id % 3)});
    p.erase_if([](std::uint64_t, pd::PendingLaunch& l) { return ++l.age > 2; });  // age 2 -> 3: dropped
    CHECK(p.size() == 67);
    p.for_each([](std::uint64_t id, pd::PendingLaunch& l) { CHECK(l.age == id % 3 + 1); });
    p.clear();
    CHECK(p.empty());
    CHECK(p.find(1) == nullptr);
  }
}

TEST_CASE("profiler names: interned once, by text, whatever buffer holds it") {
  std::string a = "kernel_name_interning_test_0123456789";  // longer than the small-string buffer
  const pd::NameId id = pd::intern(a);
  CHECK(pd::intern(a) == id);  // the same buffer again (the cached path)
  const std::string copy = a;
  CHECK(pd::intern(copy) == id);  // another buffer, same text
  CHECK(pd::name_of(id) == a);
  // The same buffer now holding another name of the same length: a new id, not the cached one.
  a[a.size() - 1] = 'X';
  const pd::NameId other = pd::intern(a);
  CHECK(other != id);
  CHECK(pd::name_of(other) == a);
  a[a.size() - 1] = '9';
  CHECK(pd::intern(a) == id);
  // Another thread, its own caches: the same ids.
  pd::NameId there = 0, there_other = 0;
  std::thread([&] {
    there = pd::intern(copy);
    there_other = pd::intern(std::string(pd::name_of(other)));
  }).join();
  CHECK(there == id);
  CHECK(there_other == other);
}

TEST_CASE("profiler names: a kernel interned in one session lands on its launch op in the next") {
  register_mock();
  const std::string kernel = "interned_across_sessions_kernel";
  for (int round = 0; round < 2; ++round) {
    auto dir = temp_dir("intern_sessions");
    auto s = tp::start((dir / "s").string(), {.backend = "mock", .hook = "launch"});
    MockBackend* mock = MockBackend::latest();
    {
      tp::Scope step("step");
      for (std::uint64_t i = 1; i <= 3; ++i) {
        tp::LaunchScope hook({.kernel = kernel, .grid = {1, 1, 1}, .bytes = 8});
        tp::correlate_launch(i);
      }
    }
    // The record's name lives in a buffer of its own, not the hook's.
    std::vector<tp::KernelRecord> recs;
    for (std::uint64_t i = 1; i <= 3; ++i) recs.push_back(record(std::string(kernel), i, tp::now_ns(), 100));
    mock->deliver(std::span<const tp::KernelRecord>(recs));
    json root = json::parse(*tp::get(s, 0))[0];
    const json& op = at(root, {"step", kernel});
    CHECK_MESSAGE(op["children"].empty(), "round " << round);
    CHECK(op["metrics"]["count"] == 3);
    CHECK(op["metrics"]["bytes"] == 24);
    CHECK(op["metrics"]["time (ns)"] == 300);
    CHECK(tp::stats(s).pending_launches == 0);
    tp::finalize(s);
  }
}

TEST_CASE("profiler records: batches from another thread while threads launch, in any order") {
  register_mock();
  auto dir = temp_dir("batches");
  auto s = tp::start((dir / "b").string(), {.backend = "mock", .hook = "launch"});
  MockBackend* mock = MockBackend::latest();
  constexpr int kThreads = 4, kLaunches = 3000;
  std::atomic<std::uint64_t> next_id{1};  // one process-wide counter, as CUPTI's correlation ids
  std::mutex qmu;
  std::vector<tp::KernelRecord> queue;  // launched, not yet delivered
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      tp::Scope outer("t" + std::to_string(t));
      tp::Scope inner("step");
      const std::string kernel = "k" + std::to_string(t);
      for (int i = 0; i < kLaunches; ++i) {
        tp::LaunchScope hook({.kernel = kernel, .grid = {1, 1, 1}, .flops = 2, .flops_width = 16});
        const std::uint64_t id = next_id.fetch_add(1);
        tp::correlate_launch(id);
        std::lock_guard g(qmu);
        queue.push_back(record(kernel, id, tp::now_ns(), 1 + t));
      }
      running.fetch_sub(1);
    });
  // The "completion thread": takes what is queued, shuffles it (records of
  // several streams come out of launch order) and hands it over in batches.
  std::thread completion([&] {
    std::mt19937 rng(7);
    for (;;) {
      const bool last = running.load() == 0;
      std::vector<tp::KernelRecord> got;
      {
        std::lock_guard g(qmu);
        got.swap(queue);
      }
      std::shuffle(got.begin(), got.end(), rng);
      for (std::size_t i = 0; i < got.size(); i += 100) {
        const std::size_t n = std::min<std::size_t>(100, got.size() - i);
        mock->deliver(std::span<const tp::KernelRecord>(got.data() + i, n));
      }
      if (last) break;
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  completion.join();
  CHECK(tp::stats(s).pending_launches == 0);
  json root = json::parse(*tp::get(s, 0))[0];
  for (int t = 0; t < kThreads; ++t) {
    const std::string kernel = "k" + std::to_string(t);
    const json& op = at(root, {"t" + std::to_string(t), "step", kernel});
    CHECK(op["children"].empty());
    CHECK(op["metrics"]["count"] == kLaunches);
    CHECK(op["metrics"]["flops16"] == 2 * kLaunches);
    CHECK(op["metrics"]["time (ns)"] == (1 + t) * kLaunches);
  }
  CHECK(root["metrics"]["count (inc)"] == kThreads * kLaunches);
  tp::finalize(s);
}

TEST_CASE("profiler records: a batch mixing known, unknown and other threads' launches") {
  register_mock();
  auto dir = temp_dir("mixed_batch");
  auto s = tp::start((dir / "m").string(), {.backend = "mock"});
  MockBackend* mock = MockBackend::latest();
  {
    tp::Scope a("a");
    tp::correlate_launch(1);
    tp::correlate_launch(3);
  }
  std::thread([] {
    tp::Scope b("b");
    tp::correlate_launch(2);
  }).join();
  const std::uint64_t t0 = tp::now_ns();
  const std::vector<tp::KernelRecord> batch = {record("x", 3, t0, 10), record("x", 2, t0, 20), record("y", 77, t0, 40),
                                               record("x", 1, t0, 30), record("z", 0, t0, 50)};
  mock->deliver(std::span<const tp::KernelRecord>(batch));
  CHECK(tp::stats(s).pending_launches == 0);
  json root = json::parse(*tp::get(s, 0))[0];
  CHECK(at(root, {"a", "x"})["metrics"]["time (ns)"] == 40);
  CHECK(at(root, {"a", "x"})["metrics"]["count"] == 2);
  CHECK(at(root, {"b", "x"})["metrics"]["time (ns)"] == 20);
  CHECK(at(root, {"y"})["metrics"]["time (ns)"] == 40);  // unknown id: under ROOT
  CHECK(at(root, {"z"})["metrics"]["time (ns)"] == 50);  // no id: under ROOT
  tp::finalize(s);
}

TEST_CASE("profiler launch hook: a launch op open across a phase boundary closes in the new phase") {
  register_mock();
  auto dir = temp_dir("op_phase");
  auto s = tp::start((dir / "op").string(), {.backend = "mock", .hook = "launch"});
  MockBackend* mock = MockBackend::latest();
  {
    tp::Scope step("step");
    {
      tp::LaunchScope hook({.kernel = "op_kernel", .grid = {1, 1, 1}, .bytes = 4});
      tp::correlate_launch(1);
      tp::advance_phase(s);  // moves the open op into phase 1's tree
      tp::correlate_launch(2);  // still inside the op
    }
    tp::correlate_launch(3);  // the op has closed: binds to "step"
  }
  const std::uint64_t t0 = tp::now_ns();
  for (std::uint64_t id : {1, 2, 3}) mock->push(record(id == 3 ? "other" : "op_kernel", id, t0, 10 * id));
  json p1 = json::parse(*tp::get(s, 1))[0];
  const json& op = at(p1, {"step", "op_kernel"});
  CHECK(op["children"].empty());
  CHECK(op["metrics"]["time (ns)"] == 30);  // ids 1 and 2 (1 came after its phase closed)
  CHECK(at(p1, {"step", "other"})["metrics"]["time (ns)"] == 30);
  CHECK(tp::stats(s).pending_launches == 0);
  tp::finalize(s);
}

TEST_CASE("profiler cupti: to_kernel_record into a reused record resets what the next one lacks") {
  tilejit::profiler::cupti::ClockMap clock{};
  struct WithGraph {
    std::uint64_t start, end;
    std::uint32_t deviceId, streamId, correlationId;
    const char* name;
    std::uint64_t graphNodeId;
    std::uint32_t graphId;
  } g{1000, 2000, 1, 2, 9, "a_rather_long_kernel_name_for_the_heap", 77, 5};
  struct Plain {
    std::uint64_t start, end;
    std::uint32_t deviceId, streamId, correlationId;
    const char* name;
  } p{3000, 3500, 0, 4, 10, "short"};
  tp::KernelRecord r;
  REQUIRE(tilejit::profiler::cupti::to_kernel_record(g, clock, r));
  CHECK(r.graph_node_id == 77);
  CHECK(r.graph_id == 5);
  CHECK(r.name == "a_rather_long_kernel_name_for_the_heap");
  REQUIRE(tilejit::profiler::cupti::to_kernel_record(p, clock, r));
  CHECK(r.name == "short");
  CHECK(r.correlation_id == 10);
  CHECK(r.graph_node_id == 0);
  CHECK(r.graph_id == 0);
  CHECK(r.end_ns - r.start_ns == 500);
  Plain bad = p;
  bad.end = 0;
  CHECK_FALSE(tilejit::profiler::cupti::to_kernel_record(bad, clock, r));
}

TEST_CASE("profiler launch hook: threads launch while another thread advances phases") {
  // Launch ops end without the thread's lock (hatchet sessions) while
  // collect() moves them into the next phase's tree: every kernel must still
  // land on its op, in some phase.
  register_mock();
  auto dir = temp_dir("op_race");
  auto s = tp::start((dir / "r").string(), {.backend = "mock", .hook = "launch"});
  MockBackend* mock = MockBackend::latest();
  constexpr int kThreads = 3, kLaunches = 2000;
  std::atomic<std::uint64_t> next_id{1};
  std::atomic<int> running{kThreads};
  std::shared_mutex phase_mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      tp::Scope outer("t" + std::to_string(t));
      const std::string kernel = "k" + std::to_string(t);
      for (int i = 0; i < kLaunches; ++i) {
        tp::LaunchScope hook({.kernel = kernel, .grid = {1, 1, 1}, .bytes = 1});
        // Binding and record together with respect to advance_phase: the next
        // phase boundary delivers the record, so no launch ages out waiting.
        std::shared_lock g(phase_mu);
        const std::uint64_t id = next_id.fetch_add(1);
        tp::correlate_launch(id);
        mock->push(record(kernel, id, tp::now_ns(), 1));
      }  // the op ends here, racing with collect()
      running.fetch_sub(1);
    });
  std::size_t phase = 0;
  while (running.load() > 0) {
    {
      std::unique_lock g(phase_mu);
      phase = tp::advance_phase(s);  // flushes the mock: every record so far lands first
    }
    std::this_thread::yield();
  }
  for (auto& th : threads) th.join();
  std::vector<std::int64_t> count(kThreads, 0), bytes(kThreads, 0);
  for (std::size_t p = 0; p <= phase; ++p) {
    json root = json::parse(*tp::get(s, p))[0];
    CHECK_MESSAGE(child(root, "k0") == nullptr, "phase " << p);  // nothing flat under ROOT
    for (int t = 0; t < kThreads; ++t) {
      const json* th = child(root, "t" + std::to_string(t));
      const json* op = th ? child(*th, "k" + std::to_string(t)) : nullptr;
      if (!op) continue;
      CHECK(op->at("children").empty());
      count[t] += op->at("metrics").value("count", std::int64_t{0});
      bytes[t] += op->at("metrics").value("bytes", std::int64_t{0});
    }
  }
  for (int t = 0; t < kThreads; ++t) {
    CHECK(count[t] == kLaunches);
    CHECK(bytes[t] == kLaunches);
  }
  CHECK(tp::stats(s).pending_launches == 0);
  tp::finalize(s);
}

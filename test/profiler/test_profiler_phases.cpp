// Phases, periodic flushing, get / clear, bounded memory, and faults while
// writing or finalizing.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <numeric>
#include <algorithm>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <thread>

#include "profiler_test_util.hpp"
#include "src/profiler/io.hpp"

using namespace prof_test;
namespace tp = tilejit::profiler;

TEST_CASE("profiler phase: advance_phase writes a JSON part file in the background and drops it") {
  auto dir = temp_dir("phase_json");
  auto s = tp::start((dir / "run").string(), {.mode = "periodic_flushing"});
  {
    tp::Scope a("phase0_scope");
    tp::add_metric({"ph_items", 1});
  }
  CHECK(tp::advance_phase(s) == 1);
  CHECK(tp::current_phase(s) == 1);
  CHECK(tp::is_phase_complete(s, 0));
  CHECK_FALSE(tp::is_phase_complete(s, 1));
  CHECK(tp::wait_for_flush(s, 0));
  CHECK(tp::is_phase_flushed(s, 0));
  CHECK(tp::part_path(s, 0) == (dir / "run.part_0.hatchet").string());

  json part = read_json(dir / "run.part_0.hatchet");
  CHECK(at(part[0], {"phase0_scope"})["metrics"]["ph_items"] == 1);
  // Dropped from memory: the tree is gone; only the (empty) open phase remains.
  CHECK_FALSE(tp::get(s, 0).has_value());
  auto st = tp::stats(s);
  CHECK(st.phases_in_memory == 0);
  CHECK(st.phases_written == 1);
  CHECK(st.nodes_in_memory <= 2);  // ROOT of this thread's open phase (+ the backend lane)

  {
    tp::Scope b("phase1_scope");
  }
  json open = json::parse(*tp::get(s, 1));
  CHECK(child_names(open[0]) == std::vector<std::string>{"phase1_scope"});
  auto rep = tp::finalize(s);
  CHECK(rep.errors.empty());
  // Once parts exist, the open phase is written as the last part.
  CHECK(rep.files == std::vector<std::string>{(dir / "run.part_0.hatchet").string(),
                                              (dir / "run.part_1.hatchet").string()});
  CHECK(files_in(dir) == std::vector<std::string>{"run.part_0.hatchet", "run.part_1.hatchet"});
  CHECK(child_names(read_json(dir / "run.part_1.hatchet")[0]) ==
        std::vector<std::string>{"phase1_scope"});
}

TEST_CASE("profiler phase: msgpack part files hold the same structure as JSON") {
  auto dir = temp_dir("phase_msgpack");
  auto s = tp::start((dir / "mp").string(), {.mode = "periodic_flushing:format=hatchet_msgpack"});
  {
    tp::Scope a("mp_scope");
    tp::add_metric({"mp_val", 2.25});
  }
  json as_json = json::parse(*tp::get(s, 0));
  auto packed = *tp::get_msgpack(s, 0);
  CHECK(json::from_msgpack(packed) == as_json);
  tp::advance_phase(s);
  REQUIRE(tp::wait_for_flush(s, 0));
  json part = read_msgpack(dir / "mp.part_0.hatchet_msgpack");
  CHECK(part == as_json);
  CHECK(at(part[0], {"mp_scope"})["metrics"]["mp_val"] == 2.25);
  tp::finalize(s);
  CHECK(fs::exists(dir / "mp.part_1.hatchet_msgpack"));
}

TEST_CASE("profiler phase: without periodic flushing phases stay in memory for get and clear") {
  auto dir = temp_dir("phase_keep");
  auto s = tp::start((dir / "keep").string());
  for (int p = 0; p < 4; ++p) {
    tp::Scope sc("p" + std::to_string(p));
    tp::advance_phase(s);  // the scope spans the boundary: it also appears in phase p+1
  }
  // Phases 0..3 closed and in memory, 4 open.
  for (int p = 0; p < 4; ++p) {
    auto text = tp::get(s, static_cast<std::size_t>(p));
    REQUIRE(text.has_value());
    json root = json::parse(*text)[0];
    CHECK(child(root, "p" + std::to_string(p)) != nullptr);
  }
  CHECK(tp::stats(s).phases_in_memory == 4);
  CHECK_FALSE(tp::get(s, 9).has_value());  // not started

  tp::clear(s, 1);  // just phase 1
  CHECK(tp::get(s, 0).has_value());
  CHECK_FALSE(tp::get(s, 1).has_value());
  CHECK(tp::get(s, 2).has_value());
  tp::clear(s, 2, /*clear_up_to_phase=*/true);  // 0 and 2 (1 already gone)
  CHECK_FALSE(tp::get(s, 0).has_value());
  CHECK_FALSE(tp::get(s, 2).has_value());
  CHECK(tp::get(s, 3).has_value());
  CHECK(tp::stats(s).phases_in_memory == 1);

  // Clearing the open phase empties it; an open scope stays open.
  {
    tp::Scope keep("keep");
    tp::add_metric({"keep_n", 1});
    tp::clear(s, tp::current_phase(s));
    tp::add_metric({"keep_n", 5});
  }
  json open = json::parse(*tp::get(s, 4))[0];
  CHECK(at(open, {"keep"})["metrics"]["keep_n"] == 5);
  CHECK(files_in(dir).empty());  // nothing written without periodic flushing

  auto rep = tp::finalize(s);
  CHECK(files_in(dir) == std::vector<std::string>{"keep.part_3.hatchet", "keep.part_4.hatchet"});
  CHECK(rep.files.size() == 2);
}

TEST_CASE("profiler phase: an unwritable path keeps the phase in memory and reports once") {
  auto dir = temp_dir("phase_unwritable");
  { std::ofstream(dir / "not_a_dir") << "x"; }
  const std::string name = (dir / "not_a_dir" / "run").string();  // ENOTDIR, even for root
  auto s = tp::start(name, {.mode = "periodic_flushing"});
  {
    tp::Scope a("unwritten");
    tp::add_metric({"unw_n", 1});
  }
  tp::advance_phase(s);
  CHECK_FALSE(tp::wait_for_flush(s, 0));
  auto errors = tp::flush_errors(s);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].phase == 0);
  CHECK(errors[0].error_code == ENOTDIR);
  CHECK(errors[0].path == name + ".part_0.hatchet");
  CHECK(errors[0].message.find("Not a directory") != std::string::npos);
  // The phase stays in memory, whole.
  auto text = tp::get(s, 0);
  REQUIRE(text.has_value());
  CHECK(at(json::parse(*text)[0], {"unwritten"})["metrics"]["unw_n"] == 1);
  CHECK(tp::stats(s).phases_in_memory == 1);
  CHECK_FALSE(tp::is_phase_flushed(s, 0));

  tp::advance_phase(s);  // retries phase 0, tries phase 1
  tp::wait_for_flush(s, 1);
  errors = tp::flush_errors(s);  // one entry per phase, its latest failure: not one per attempt
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].phase == 0);
  CHECK(errors[1].phase == 1);
  auto rep = tp::finalize(s);
  CHECK(rep.files.empty());
  CHECK(rep.errors.size() == 3);  // phases 0, 1 and the open phase 2, each once
  CHECK(files_in(dir) == std::vector<std::string>{"not_a_dir"});
}

TEST_CASE("profiler phase: disk full during a flush leaves no partial file; a later flush recovers") {
  auto dir = temp_dir("phase_diskfull");
  auto s = tp::start((dir / "full").string(), {.mode = "periodic_flushing"});
  {
    tp::Scope a("first");
  }
  tp::detail::inject_write_fault(ENOSPC, 16);  // 16 bytes fit, then the disk is full
  tp::advance_phase(s);
  CHECK_FALSE(tp::wait_for_flush(s, 0));
  tp::detail::inject_write_fault(0, 0);
  auto errors = tp::flush_errors(s);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].error_code == ENOSPC);
  CHECK(files_in(dir).empty());  // neither the final name nor a temporary
  CHECK(tp::get(s, 0).has_value());

  {
    tp::Scope b("second");
  }
  tp::advance_phase(s);  // space is back: phase 0 is retried, phase 1 written
  CHECK(tp::wait_for_flush(s, 1));
  CHECK(tp::is_phase_flushed(s, 0));
  CHECK(child_names(read_json(dir / "full.part_0.hatchet")[0]) == std::vector<std::string>{"first"});
  CHECK(child_names(read_json(dir / "full.part_1.hatchet")[0]) == std::vector<std::string>{"second"});
  CHECK_FALSE(tp::get(s, 0).has_value());
  tp::finalize(s);
  CHECK(files_in(dir).size() == 3);
}

TEST_CASE("profiler phase: many phases on a failing disk: one error each, then all written once space is back") {
  // Each advance_phase retries only the oldest failed phase (a failing path costs one phase's serialisation per call,
  // not one per failed phase); once it is written the writer queues every other failed phase.
  auto dir = temp_dir("phase_many_failed");
  auto s = tp::start((dir / "many").string(), {.mode = "periodic_flushing", .fsync = false});
  constexpr std::size_t kPhases = 30;
  tp::detail::inject_write_fault(ENOSPC, 0);
  for (std::size_t p = 0; p < kPhases; ++p) {
    {
      tp::Scope a("many_" + std::to_string(p));
    }
    CHECK(tp::advance_phase(s) == p + 1);
    tp::wait_for_flush(s, p);
  }
  auto errors = tp::flush_errors(s);
  CHECK(errors.size() == kPhases);
  for (std::size_t p = 0; p < errors.size(); ++p) CHECK(errors[p].phase == p);
  CHECK(tp::stats(s).phases_in_memory == kPhases);
  CHECK(files_in(dir).empty());

  tp::detail::inject_write_fault(0, 0);  // space is back
  tp::advance_phase(s);                  // phase 0 retried and written; the writer then queues phases 1..29
  CHECK(tp::wait_for_flush(s, kPhases));
  for (std::size_t p = 0; p <= kPhases; ++p) CHECK(tp::is_phase_flushed(s, p));
  CHECK(tp::stats(s).phases_in_memory == 0);
  CHECK(child_names(read_json(dir / "many.part_17.hatchet")[0]) == std::vector<std::string>{"many_17"});
  CHECK(tp::flush_errors(s).size() == kPhases);  // the record of what failed stays
  tp::finalize(s);
  CHECK(files_in(dir).size() == kPhases + 2);  // parts 0..30 and the last open phase
}

TEST_CASE("profiler phase: finalize closes open scopes and reports them; finalize twice is a no-op") {
  auto dir = temp_dir("phase_final");
  auto s = tp::start((dir / "fin").string(), {.format = "chrome_trace"});
  tp::enter_scope("outer");
  tp::enter_scope("inner");
  std::thread([] {
    tp::enter_scope("left_open_by_a_thread");  // the thread exits without closing it
  }).join();
  auto rep = tp::finalize(s);
  CHECK_FALSE(rep.already_finalized);
  REQUIRE(rep.open_scopes.size() == 2);
  std::vector<std::string> paths{rep.open_scopes[0].path, rep.open_scopes[1].path};
  std::sort(paths.begin(), paths.end());
  CHECK(paths == std::vector<std::string>{"left_open_by_a_thread", "outer/inner"});
  // The trace has them as complete events ending at finalize.
  json trace = read_json(dir / "fin.chrome_trace");
  int scopes = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "scope") ++scopes;
  CHECK(scopes == 3);

  auto again = tp::finalize(s);
  CHECK(again.already_finalized);
  CHECK(again.files.empty());
  CHECK_THROWS_AS(tp::advance_phase(s), tilejit::InvalidArgument);
  tp::activate(s);  // warning, no-op
  CHECK_FALSE(tp::get(s, 0).has_value());
  tp::exit_scope();  // the thread's own stack still unwinds normally
  tp::exit_scope();
  CHECK(files_in(dir) == std::vector<std::string>{"fin.chrome_trace"});
}

TEST_CASE("profiler phase: 200 phases of 10K scopes keep the in-memory node count bounded") {
  auto dir = temp_dir("phase_bounded");
  auto s = tp::start((dir / "long").string(),
                     {.mode = "periodic_flushing:format=hatchet_msgpack", .max_pending_phases = 4});
  std::vector<tp::Name> outer, inner;
  for (int i = 0; i < 10; ++i) outer.emplace_back("layer" + std::to_string(i));
  for (int i = 0; i < 100; ++i) inner.emplace_back("op" + std::to_string(i));
  constexpr std::size_t kPerPhase = 1 + 10 + 10 * 100;  // ROOT, layers, layer x op
  std::size_t max_nodes = 0;
  for (int p = 0; p < 200; ++p) {
    for (int i = 0; i < 5000; ++i) {  // 10K scopes
      tp::Scope o(outer[i % 10]);
      tp::Scope n(inner[i % 100]);
    }
    tp::advance_phase(s);
    max_nodes = std::max(max_nodes, tp::stats(s).nodes_in_memory);
  }
  // At most max_pending_phases queued + one batch being written (the writer
  // takes what is queued: at most max_pending_phases) + the open phase.
  CHECK(max_nodes <= (2 * 4 + 1) * kPerPhase);
  CHECK(tp::wait_for_flush(s, 199));
  auto st = tp::stats(s);
  CHECK(st.phases_in_memory == 0);
  CHECK(st.nodes_in_memory <= 2);
  CHECK(st.phases_written == 200);
  json last = read_msgpack(dir / "long.part_199.hatchet_msgpack");
  CHECK(child_names(last[0]).size() == 10);
  CHECK(at(last[0], {"layer3", "op13"})["children"].empty());
  tp::finalize(s);
  CHECK(files_in(dir).size() == 201);
}

TEST_CASE("profiler phase: TILEJIT_PROFILE_FLUSH_TIMING=1 prints serialise / write / clear times") {
  auto dir = temp_dir("phase_timing");
  ::setenv("TILEJIT_PROFILE_FLUSH_TIMING", "1", 1);
  auto s = tp::start((dir / "timed").string(), {.mode = "periodic_flushing"});
  ::unsetenv("TILEJIT_PROFILE_FLUSH_TIMING");
  // Capture stderr while the worker writes.
  const fs::path log = dir / "stderr.txt";
  std::fflush(stderr);
  int saved = ::dup(2);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 2);
  {
    tp::Scope a("timed_scope");
  }
  tp::advance_phase(s);
  tp::wait_for_flush(s, 0);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(fd);
  ::close(saved);
  std::string text = read_file(log);
  CHECK(text.find("phase 0: serialise") != std::string::npos);
  CHECK(text.find("write") != std::string::npos);
  CHECK(text.find("clear") != std::string::npos);
  tp::finalize(s);
}

TEST_CASE("profiler phase: threads keep recording while phases advance; nothing is lost") {
  register_mock();
  auto dir = temp_dir("phase_concurrent");
  auto s = tp::start((dir / "conc").string(), {.backend = "mock"});
  MockBackend* mock = MockBackend::latest();
  constexpr int kThreads = 3, kIters = 3000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        tp::Scope outer("conc_outer");
        tp::Scope inner("conc_inner", {{"conc_n", 1}});
        const std::uint64_t corr = 1'000'000ull * (t + 1) + i;
        tp::correlate_launch(corr);
        mock->deliver(record("conc_kernel", corr, tp::now_ns(), 10));  // straight from this thread
      }
      --running;
    });
  std::size_t phases = 0;
  while (running.load() > 0 && phases < 50) {
    tp::advance_phase(s);
    ++phases;
    std::this_thread::yield();
  }
  for (auto& w : workers) w.join();
  std::int64_t items = 0, kernels = 0;
  for (std::size_t p = 0; p <= tp::current_phase(s); ++p) {
    json root = json::parse(*tp::get(s, p))[0];
    items += root["metrics"].value("conc_n (inc)", 0);
    kernels += root["metrics"].value("count (inc)", 0);
  }
  CHECK(items == kThreads * kIters);
  CHECK(kernels == kThreads * kIters);
  tp::finalize(s);
}

TEST_CASE("profiler phase: advance_phase from several threads returns each opened phase once") {
  // With a writer that falls behind (max_pending_phases = 1) callers wait inside advance_phase while others advance;
  // each must still get the phase its own call opened, not the session's phase when it wakes.
  auto dir = temp_dir("phase_advance_threads");
  auto s = tp::start((dir / "adv").string(), {.mode = "periodic_flushing", .fsync = false, .max_pending_phases = 1});
  constexpr int kThreads = 4, kCalls = 100;
  std::vector<std::vector<std::size_t>> got(kThreads);
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t)
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) got[t].push_back(tp::advance_phase(s));
    });
  for (auto& c : callers) c.join();
  std::vector<std::size_t> all;
  for (auto& g : got) {
    CHECK(std::is_sorted(g.begin(), g.end()));  // one thread's calls open later phases each time
    all.insert(all.end(), g.begin(), g.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<std::size_t> want(kThreads * kCalls);
  std::iota(want.begin(), want.end(), std::size_t{1});
  CHECK(all == want);
  CHECK(tp::current_phase(s) == kThreads * kCalls);
  tp::finalize(s);
}

TEST_CASE("profiler phase: threads that exit while phases advance lose nothing") {
  // Review finding: a thread that recorded between the phase collector's taking its data and its dropping the
  // thread's (exited) state lost those metrics — up to 28% of them when workers ended during advance_phase.
  auto dir = temp_dir("phase_exit");
  auto s = tp::start((dir / "exit").string());
  std::atomic<bool> done{false};
  std::thread advancer([&] {
    while (!done.load()) tp::advance_phase(s);
  });
  constexpr int kRounds = 8, kThreads = 2, kIters = 20000;
  for (int r = 0; r < kRounds; ++r) {
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t)
      workers.emplace_back([] {
        for (int i = 0; i < kIters; ++i) {
          tp::Scope sc("exit_work");
          tp::add_metric({"exit_n", 1});
        }
      });
    for (auto& w : workers) w.join();  // they exit while the advancer is still collecting
  }
  done = true;
  advancer.join();
  std::int64_t total = 0;
  for (std::size_t p = 0; p <= tp::current_phase(s); ++p)
    if (auto text = tp::get(s, p)) total += json::parse(*text)[0]["metrics"].value("exit_n (inc)", std::int64_t{0});
  CHECK(total == std::int64_t{kRounds} * kThreads * kIters);
  tp::finalize(s);
}

TEST_CASE("profiler phase: periodic flushing flushes the backend on the writer thread; late records land in their launch's phase") {
  register_mock();
  auto dir = temp_dir("phase_late");
  auto s = tp::start((dir / "late").string(), {.backend = "mock", .mode = "periodic_flushing"});
  MockBackend* mock = MockBackend::latest();
  const std::uint64_t t0 = tp::now_ns();
  {
    tp::Scope a("a");
    tp::correlate_launch(1);
    mock->push(record("k1", 1, t0 + 10, 100));  // completes "late": delivered at the next flush
    tp::correlate_launch(3);                     // its record comes only after phase 0 is written
  }
  const int flushes_before = mock->flushes;
  CHECK(tp::advance_phase(s) == 1);
  {
    tp::Scope b("b");
    tp::correlate_launch(2);
    mock->push(record("k2", 2, t0 + 20, 100));
  }
  REQUIRE(tp::wait_for_flush(s, 0));
  CHECK(mock->flushes > flushes_before);
  for (std::size_t i = static_cast<std::size_t>(flushes_before); i < mock->flush_threads.size(); ++i)
    CHECK(mock->flush_threads[i] != std::this_thread::get_id());  // never on the caller of advance_phase
  json p0 = read_json(dir / "late.part_0.hatchet")[0];
  CAPTURE(p0.dump());
  CHECK(at(p0, {"a", "k1"})["metrics"]["count"] == 1);  // the phase it was launched in, though it came after
  CHECK(child_names(p0) == std::vector<std::string>{"a"});
  mock->deliver(record("k3", 3, t0 + 30, 100));  // phase 0 is written: lands in the open phase, same path
  tp::advance_phase(s);
  REQUIRE(tp::wait_for_flush(s, 1));
  json p1 = read_json(dir / "late.part_1.hatchet")[0];
  CAPTURE(p1.dump());
  CHECK(at(p1, {"b", "k2"})["metrics"]["count"] == 1);
  CHECK(at(p1, {"a", "k3"})["metrics"]["count"] == 1);
  CHECK(tp::stats(s).pending_launches == 0);
  auto rep = tp::finalize(s);
  CHECK(rep.errors.empty());
}

namespace {
/// A backend whose flush takes `delay` (as a CUPTI flush waits for the GPU's
/// last records): it delivers what was queued before the flush began.
class SlowFlushBackend final : public tp::Backend {
 public:
  static inline std::chrono::milliseconds delay{20};
  static inline SlowFlushBackend* latest = nullptr;
  void start(tp::Sink& sink, const tp::BackendConfig&) override {
    sink_ = &sink;
    latest = this;
  }
  void flush() override {
    std::vector<tp::KernelRecord> now;
    {
      std::lock_guard g(mu_);
      now.swap(queued_);
    }
    std::this_thread::sleep_for(delay);
    for (const auto& r : now) sink_->kernel(r);
    flushes.fetch_add(1);
  }
  void stop() override {}
  void push(tp::KernelRecord r) {
    std::lock_guard g(mu_);
    queued_.push_back(std::move(r));
  }
  std::atomic<int> flushes{0};

 private:
  tp::Sink* sink_ = nullptr;
  std::mutex mu_;
  std::vector<tp::KernelRecord> queued_;
};
}  // namespace

TEST_CASE("profiler phase: the writer takes every queued phase at once; a slow backend flush does not hold up advance_phase") {
  static const bool registered = [] {
    tp::register_backend("slow_flush", [] { return std::make_unique<SlowFlushBackend>(); });
    return true;
  }();
  (void)registered;
  auto dir = temp_dir("phase_batches");
  constexpr int kPhases = 40;
  std::size_t bound = 64;  // the default: room for the writer's flush latency
  SUBCASE("default max_pending_phases") {}
  SUBCASE("max_pending_phases = 2: advance_phase waits, nothing is lost") { bound = 2; }
  auto s = tp::start((dir / "b").string(),
                     {.backend = "slow_flush", .mode = "periodic_flushing", .max_pending_phases = bound});
  SlowFlushBackend* be = SlowFlushBackend::latest;
  const std::uint64_t t0 = tp::now_ns();
  std::uint64_t advancing_ns = 0;
  for (int p = 0; p < kPhases; ++p) {
    {
      tp::Scope a("step");
      tp::correlate_launch(1000 + p);
      be->push(record("k" + std::to_string(p), 1000 + p, t0 + p, 10));  // arrives with the writer's flush
    }
    const std::uint64_t a0 = tp::now_ns();
    tp::advance_phase(s);
    advancing_ns += tp::now_ns() - a0;
  }
  REQUIRE(tp::wait_for_flush(s, kPhases - 1));
  const auto st = tp::stats(s);
  MESSAGE("bound " << bound << ": " << st.writer_batches << " batches, " << st.writer_flushes << " backend flushes, "
                   << st.advance_waits << " waits (" << st.advance_wait_ns / 1e6 << " ms), advance_phase "
                   << advancing_ns / 1e6 << " ms in all");
  CHECK(st.writer_batches >= 1);
  CHECK(st.writer_flushes <= st.writer_batches);
  if (bound == 64) {
    CHECK(st.advance_waits == 0);               // never more than 64 queued
    CHECK(st.writer_batches < kPhases);         // phases that queued during a flush went in one batch
    CHECK(advancing_ns < kPhases * 20'000'000ull / 2);  // far less than one 20 ms flush per phase
  } else {
    CHECK(st.advance_waits >= 1);  // the bound holds memory: the caller waited for the writer
  }
  CHECK(st.pending_launches == 0);
  auto rep = tp::finalize(s);
  CHECK(rep.errors.empty());
  for (int p = 0; p < kPhases; ++p) {  // each kernel in the phase it was launched in, once
    CAPTURE(p);
    json root = read_json(dir / ("b.part_" + std::to_string(p) + ".hatchet"))[0];
    REQUIRE(child_names(root) == std::vector<std::string>{"step"});
    CHECK(child_names(at(root, {"step"})) == std::vector<std::string>{"k" + std::to_string(p)});
    CHECK(at(root, {"step", "k" + std::to_string(p)})["metrics"]["count"] == 1);
  }
}

TEST_CASE("profiler phase: a batch of part files is written atomically, file by file; a failure spares the others") {
  auto dir = temp_dir("phase_batch_io");
  const std::string a = (dir / "a.txt").string(), b = (dir / "b.txt").string();
  std::vector<tp::detail::BatchFile> files{{a, "alpha", {}, 0}, {b, "beta", {}, 0}};
  tp::detail::write_atomic_batch(files, /*do_fsync=*/true);
  CHECK(files[0].result.error == 0);
  CHECK(files[1].result.error == 0);
  CHECK(read_file(a) == "alpha");
  CHECK(read_file(b) == "beta");
  std::vector<tp::detail::BatchFile> bad{{(dir / "c.txt").string(), "gamma", {}, 0},
                                         {(dir / "no_such_dir" / "d.txt").string(), "delta", {}, 0}};
  tp::detail::write_atomic_batch(bad, true);
  CHECK(bad[0].result.error == 0);
  CHECK(bad[1].result.error == ENOENT);
  CHECK(read_file(dir / "c.txt") == "gamma");
  tp::detail::inject_write_fault(ENOSPC, 2);
  std::vector<tp::detail::BatchFile> full{{(dir / "e.txt").string(), "epsilon", {}, 0}};
  tp::detail::write_atomic_batch(full, true);
  tp::detail::inject_write_fault(0, 0);
  CHECK(full[0].result.error == ENOSPC);
  CHECK(files_in(dir) == std::vector<std::string>{"a.txt", "b.txt", "c.txt"});  // no partial file, no temporary
}

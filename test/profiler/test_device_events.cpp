// Device events (lang/events.hpp): recorded inside kernels, paired, drawn in the Chrome trace, summed per site.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/gemm/matmul_v5.hpp"
#include "test/common/mirror.hpp"
#include "src/profiler/device_events.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace prof = tilejit::profiler;
using json = nlohmann::json;

namespace device_events_test {

/// Sums `chunks` 32-wide chunks per program. "chunk" i begins when chunk i is loaded and ends in the next iteration
/// (through a helper function) or, for the last, after the loop: pairs that cross iterations. Iteration 0 ends id -1,
/// which no begin has (an unmatched end per program). "sum" spans the loop (literal id 0).
struct ChunkSum {
  static void consumed(const tj::Int& i) { tj::async_end("chunk", i); }
  void operator()(tj::Ptr<float> x, tj::Ptr<float> out, tj::Size chunks) const {
    auto p = tj::program_id(0);
    auto lane = tj::arange<32>();
    tj::async_begin("sum");
    auto acc = tj::for_range(0, chunks, 1, tj::zeros<float, 32>(), [&](tj::Int i, auto acc) {
      tj::async_begin("chunk", i);
      auto v = tj::load(x + (p * chunks + i) * 32 + lane);
      consumed(i - 1);
      return acc + v;
    });
    consumed(chunks - 1);
    tj::async_end("sum", 0);
    tj::store(out + p * 32 + lane, acc);
  }
};

struct BadName {
  std::string name;
  void operator()(tj::Ptr<float> x) const {
    tj::async_begin(name, 1);
    tj::store(x + tj::arange<32>(), 1.0f);
  }
};

/// A session with the launch hook in `format`; finalized and its directory removed at scope exit.
struct Session {
  std::filesystem::path dir;
  prof::SessionId id;
  Session(const std::string& tag, const std::string& format, const std::string& backend = "")
      : dir(std::filesystem::temp_directory_path() / ("tj_devev_" + tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    prof::Options o;
    o.hook = "launch";
    o.format = format;
    o.backend = backend;
    id = prof::start((dir / "run").string(), o);
  }
  ~Session() {
    prof::finalize(id);
    std::filesystem::remove_all(dir);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  json phase() const { return json::parse(*prof::get(id, prof::current_phase(id))); }  // flushes the backend
};

const json* child(const json& node, const std::string& name) {
  for (const auto& c : node.at("children"))
    if (c.at("frame").at("name") == name) return &c;
  return nullptr;
}

/// The trace's device-event summaries ("device events" instants), flows by id, and device lanes' names.
struct TraceView {
  std::vector<json> summaries;
  std::map<std::string, std::pair<json, json>> flows;  // id -> (s, f)
  std::map<long long, std::string> lanes;               // device lanes (tid >= 3e9) -> name
  std::vector<json> programs, markers;
  bool kernel_records = false;  // the session's backend delivered kernel records
  explicit TraceView(const json& t) {
    for (const auto& e : t.at("traceEvents")) {
      const std::string ph = e.at("ph");
      kernel_records |= e.value("cat", "") == "kernel";
      if (ph == "M" && e.at("name") == "thread_name" && e.at("tid").get<long long>() >= 3'000'000'000LL)
        lanes[e.at("tid").get<long long>()] = e.at("args").at("name");
      if (ph == "i" && e.at("name") == "device events") summaries.push_back(e);
      if ((ph == "s" || ph == "f") && e.at("id").get<std::string>().rfind("dev:", 0) == 0)
        (ph == "s" ? flows[e.at("id")].first : flows[e.at("id")].second) = e;
      if (ph == "X" && e.value("cat", "") == "device")
        (e.at("name").get<std::string>().rfind("program ", 0) == 0 ? programs : markers).push_back(e);
    }
  }
};

/// Launch ChunkSum on `dev` (grid programs x chunks) with device events; checks the sums.
void launch_chunk_sum(const tj::Device& dev, int programs, int chunks, tj::CompileOptions opt) {
  auto x = testing::random_floats(static_cast<std::size_t>(programs) * chunks * 32, -1, 1, 7);
  std::vector<float> out(static_cast<std::size_t>(programs) * 32, std::nanf(""));
  testing::Mirror m{dev, {}};
  float *dx = m.up(x), *dout = m.up(out);
  opt.device_events = true;
  auto k = tj::compile<ChunkSum>(dev, opt);
  k.launch(tj::Grid{programs}, dx, dout, chunks);
  m.down();
  for (int p = 0; p < programs; ++p)
    for (int l = 0; l < 32; ++l) {
      float s = 0;
      for (int c = 0; c < chunks; ++c) s += x[(static_cast<std::size_t>(p) * chunks + c) * 32 + l];
      REQUIRE(out[static_cast<std::size_t>(p) * 32 + l] == doctest::Approx(s).epsilon(1e-5));
    }
}

/// What ChunkSum's trace must hold for `programs` x `chunks`: per program 1 "sum" pair, `chunks` "chunk" pairs, one
/// unmatched end (id -1), its span; every flow begins no later than it ends.
void check_chunk_trace(const json& trace, int programs, int chunks, std::string aligned_to) {
  TraceView v(trace);
  if (aligned_to == "kernel record" && !v.kernel_records) {
    MESSAGE("no kernel records in this session (CUPTI taken, e.g. by compute-sanitizer): placed at the launch");
    aligned_to = "launch";
  }
  REQUIRE(v.summaries.size() == 1);
  const json& s = v.summaries[0].at("args");
  CHECK(s.at("events") == programs * (2 + 2 + chunks + (chunks + 1)));
  CHECK(s.at("pairs") == programs * (1 + 1 + chunks));
  CHECK(s.at("unmatched_ends") == programs);
  CHECK(s.at("unmatched_begins") == 0);
  CHECK(s.at("dropped") == 0);
  CHECK(s.at("aligned_to") == aligned_to);
  CHECK(v.flows.size() == static_cast<std::size_t>(programs * (1 + chunks)));
  std::map<std::string, int> by_name;
  for (const auto& [id, sf] : v.flows) {
    REQUIRE(!sf.first.is_null());
    REQUIRE(!sf.second.is_null());
    CHECK(sf.first.at("ts").get<double>() <= sf.second.at("ts").get<double>());
    CHECK(sf.first.at("tid") == sf.second.at("tid"));  // one thread records both ends of a DSL pair
    by_name[sf.first.at("name")] += 1;
  }
  CHECK(by_name["chunk"] == programs * chunks);
  CHECK(by_name["sum"] == programs);
  CHECK(v.programs.size() == static_cast<std::size_t>(programs));
  CHECK(v.lanes.size() == static_cast<std::size_t>(programs));  // warp 0 of each program
  for (const auto& [tid, name] : v.lanes) CHECK(name.find("program") != std::string::npos);
  std::size_t unpaired = 0;
  for (const auto& mk : v.markers) unpaired += mk.at("args").at("paired") == false;
  CHECK(unpaired == static_cast<std::size_t>(programs));
  for (const auto& pr : v.programs) CHECK(pr.at("dur").get<double>() >= 0);
}

}  // namespace device_events_test

using namespace device_events_test;

TEST_CASE("device_events_trace_into_event_nodes_with_named_sites") {
  const auto ir = tj::trace(ChunkSum{});
  CHECK(ir.event_sites == std::vector<std::string>{"sum", "chunk"});
  int begins = 0, ends = 0;
  for (const auto& n : ir.nodes)
    if (n.op == tj::ir::Op::event) (n.axis == 0 ? begins : ends) += 1;
  CHECK(begins == 2);
  CHECK(ends == 3);
  const std::string text = tj::ir::print(ir);
  CHECK(text.find("event") != std::string::npos);
  CHECK(text.find("begin 'chunk'") != std::string::npos);
  CHECK(text.find("end 'sum'") != std::string::npos);
}

TEST_CASE("device_event_names_are_checked") {
  CHECK_THROWS_WITH_AS(tj::trace(BadName{""}), doctest::Contains("1 to 64 characters"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(BadName{std::string(65, 'a')}), doctest::Contains("65 characters"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(BadName{"a\nb"}), doctest::Contains("control character (code 10) at position 1"), tj::InvalidArgument);
  // Outside a trace the id's constant already cannot be recorded: the DSL's own error.
  CHECK_THROWS_WITH_AS(tj::async_begin("outside", 1), doctest::Contains("only run while a kernel is traced"), tj::Error);
  CHECK_THROWS_WITH_AS(tj::trace(BadName{"program"}), doctest::Contains("reserved"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::trace(BadName{"TMA loop %3"}), doctest::Contains("reserved"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::compile<ChunkSum>(tj::Device::interpreter(), {.device_events_wgmma = true}),
                       doctest::Contains("needs device_events = true"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::compile<ChunkSum>(tj::Device::interpreter(), {.device_events = true, .device_event_capacity = 0}),
                       doctest::Contains("device_event_capacity = 0"), tj::InvalidArgument);
  // Checked without device_events too (the option is invalid either way).
  CHECK_THROWS_WITH_AS(tj::compile<ChunkSum>(tj::Device::interpreter(), {.device_event_capacity = 0}),
                       doctest::Contains("device_event_capacity = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(tj::compile<ChunkSum>(tj::Device::interpreter(), {.device_events = true, .device_event_capacity = (1u << 26) + 1}),
                       doctest::Contains("[1, 2^26]"), tj::InvalidArgument);
}

struct HugeId {
  void operator()(tj::Ptr<float> x) const {
    tj::async_begin("huge", 1LL << 40);
    tj::store(x + tj::arange<32>(), 1.0f);
  }
};
struct OddName {
  void operator()(tj::Ptr<float> x) const {
    tj::async_begin("x\xffy", 1);
    tj::async_end("x\xffy", 1);
    tj::store(x + tj::arange<32>(), 1.0f);
  }
};

TEST_CASE("device_event_ids_are_i32_and_any_byte_of_a_name_compiles") {
  CHECK_THROWS_WITH_AS(tj::trace(HugeId{}), doctest::Contains("async event id 1099511627776: an id is an i32"), tj::InvalidArgument);
  // A byte NVRTC would take for the end of the source stays out of the generated text's comments.
  const auto r = tj::compile_for_arch<OddName>("sm_90a", {.num_warps = 1, .device_events = true});
  CHECK(!r.binary.bytes.empty());
}

TEST_CASE("device_events_pair_by_the_cycle_counter_when_the_global_timer_ties") {
  using prof::DeviceEvent;
  auto ev = [](std::uint64_t clock, std::uint8_t kind, std::uint32_t id = 0) {
    return DeviceEvent{.time_ns = 1000, .clock = clock, .program = 0, .id = id, .site = 0, .warp = 0, .kind = kind, .sm = 0};
  };
  // begin, end, begin, end of one id, all in one global-timer tick: two pairs.
  const std::vector<DeviceEvent> a{ev(10, 0), ev(11, 1), ev(12, 0), ev(13, 1)};
  const auto pa = prof::detail::pair_device_events(a);
  REQUIRE(pa.pairs.size() == 2);
  CHECK(pa.pairs[0].begin == 0);
  CHECK(pa.pairs[0].end == 1);
  CHECK(pa.pairs[1].begin == 2);
  CHECK(pa.pairs[1].end == 3);
  CHECK(pa.unmatched_begins == 0);
  CHECK(pa.unmatched_ends == 0);
  // An end before its begin (same tick) is unmatched; the begin too.
  const std::vector<DeviceEvent> b{ev(5, 1), ev(6, 0)};
  const auto pb = prof::detail::pair_device_events(b);
  CHECK(pb.pairs.empty());
  CHECK(pb.unmatched_ends == 1);
  CHECK(pb.unmatched_begins == 1);
  // Two ends (two consumer warp groups) share one begin.
  const std::vector<DeviceEvent> c{ev(7, 1, 3), ev(1, 0, 3), ev(9, 1, 3)};
  const auto pc = prof::detail::pair_device_events(c);
  CHECK(pc.pairs.size() == 2);
  CHECK(pc.unmatched_begins + pc.unmatched_ends == 0);
}

TEST_CASE("device_events_of_two_phases_keep_their_own_flow_ids_and_share_lanes") {
  Session s("phases", "chrome_trace");
  launch_chunk_sum(tj::Device::interpreter(), 2, 3, {.num_warps = 1});
  const json first = json::parse(*prof::get(s.id, 0));
  prof::advance_phase(s.id);
  launch_chunk_sum(tj::Device::interpreter(), 2, 3, {.num_warps = 1});
  const TraceView v0(first), v1(s.phase());
  REQUIRE(!v0.flows.empty());
  REQUIRE(!v1.flows.empty());
  for (const auto& [id, sf] : v0.flows) CHECK(v1.flows.count(id) == 0);  // ids name the phase
  CHECK(v0.lanes == v1.lanes);  // a lane is a (program, warp): the same tid and name in every part file
}

TEST_CASE("device_events_generate_nothing_unless_asked_and_compile_for_every_target") {
  const auto ir = tj::trace(ChunkSum{});
  const auto plain = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"), {.num_warps = 1});
  CHECK(plain.source.find("tj_event") == std::string::npos);
  CHECK(plain.event_sites.empty());
  for (const char* arch : {"sm_90a", "sm_80", "gfx942"}) {
    CAPTURE(arch);
    const auto g = tj::codegen::generate(ir, {}, tj::codegen::target_for(arch), {.num_warps = 1, .device_events = true});
    CHECK(g.event_sites == std::vector<std::string>{"sum", "chunk", "program"});
    CHECK(g.source.find("tj_evbuf* tj_events)") != std::string::npos);  // the last parameter
    std::size_t calls = 0;
    for (std::size_t at = 0; (at = g.source.find("tj_event(tj_events, tj_evc,", at)) != std::string::npos; ++at) ++calls;
    CHECK(calls == 2 + 3 + 2);  // the DSL's five, the program's two
    const auto r = tj::compile_for_arch<ChunkSum>(arch, {.num_warps = 1, .device_events = true});
    CHECK(!r.binary.bytes.empty());
  }
}

TEST_CASE("device_events_mark_the_tma_pipeline_between_producer_and_consumer_warp_groups") {
  const auto ir = tj::trace(examples::MatmulV5<128, 128, tj::bf16>{});
  const auto g = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"),
                                       {.num_warps = 8, .num_stages = 3, .warp_specialize = true, .device_events = true,
                                        .device_events_wgmma = true});
  REQUIRE(g.event_sites.size() == 3);
  CHECK(g.event_sites[0] == "program");
  CHECK(g.event_sites[1].rfind("TMA loop %", 0) == 0);
  CHECK(g.event_sites[2] == "wgmma");
  // Each wgmma group: begin at its commit, end at the wait that sees it complete.
  CHECK(g.source.find("if (tj_tid % 128 == 0) tj_event(tj_events, tj_evc, 2u, 0u, (unsigned)(((unsigned)(tj_tid / 128) << 24) | tj_wgi)") !=
        std::string::npos);
  CHECK(g.source.find("; ++tj_wgd) if (tj_tid % 128 == 0) tj_event(tj_events, tj_evc, 2u, 1u,") != std::string::npos);
  // The producer's issue (in tj_issue<L>, its first lane) and each consumer warp group's arrival.
  CHECK(g.source.find("tj_event(tj_events, tj_evc, 1u, 0u, (unsigned)(it), tj_warp);") != std::string::npos);
  CHECK(g.source.find("if (tj_tid % 128 == 0) tj_event(tj_events, tj_evc, 1u, 1u,") != std::string::npos);
  const auto r = tj::compile_for_arch<examples::MatmulV5<128, 128, tj::bf16>>(
      "sm_90a", {.num_warps = 8, .num_stages = 3, .warp_specialize = true, .device_events = true});
  CHECK(!r.binary.bytes.empty());
  // Without warp specialisation thread 0 issues: the same sites.
  const auto plain = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"),
                                           {.num_warps = 8, .num_stages = 3, .device_events = true, .device_events_wgmma = true});
  CHECK(plain.event_sites == g.event_sites);
  // wgmma pairs only when asked for.
  const auto no_wgmma = tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_90a"),
                                              {.num_warps = 8, .num_stages = 3, .warp_specialize = true, .device_events = true});
  CHECK(no_wgmma.event_sites == std::vector<std::string>(g.event_sites.begin(), g.event_sites.begin() + 2));
  CHECK(no_wgmma.source.find("++tj_wgd") == std::string::npos);
}

TEST_CASE("device_events_from_the_interpreter_reach_the_trace_and_the_tree") {
  const int programs = 3, chunks = 4;
  {
    Session s("trace", "chrome_trace");
    launch_chunk_sum(tj::Device::interpreter(), programs, chunks, {.num_warps = 1});
    check_chunk_trace(s.phase(), programs, chunks, "launch");
  }
  Session s("tree", "hatchet");
  launch_chunk_sum(tj::Device::interpreter(), programs, chunks, {.num_warps = 1});
  const json root = s.phase()[0];
  const json* op = nullptr;
  for (const auto& c : root.at("children"))
    if (c.at("frame").at("name").get<std::string>().find("ChunkSum") != std::string::npos) op = &c;
  REQUIRE(op != nullptr);
  const json* chunk = child(*op, "chunk");
  const json* sum = child(*op, "sum");
  const json* program = child(*op, "program");
  REQUIRE(chunk);
  REQUIRE(sum);
  REQUIRE(program);
  CHECK(chunk->at("metrics").at("async_pairs") == programs * chunks);
  CHECK(sum->at("metrics").at("async_pairs") == programs);
  CHECK(program->at("metrics").at("async_pairs") == programs);
  CHECK(chunk->at("metrics").at("async_ns").get<long long>() >= 0);
  CHECK(op->at("metrics").count("device_events_dropped") == 0);
}

TEST_CASE("device_events_past_the_capacity_are_counted_as_dropped") {
  Session s("drop", "chrome_trace");
  launch_chunk_sum(tj::Device::interpreter(), 3, 4, {.num_warps = 1, .device_event_capacity = 5});
  const TraceView v(s.phase());
  REQUIRE(v.summaries.size() == 1);
  CHECK(v.summaries[0].at("args").at("events") == 5);
  CHECK(v.summaries[0].at("args").at("dropped") == 3 * 13 - 5);
}

TEST_CASE("device_events_without_a_session_record_nothing_and_the_kernel_still_runs") {
  launch_chunk_sum(tj::Device::interpreter(), 2, 3, {.num_warps = 1});  // checks the sums
  Session s("plain", "chrome_trace");
  auto x = testing::random_floats(32 * 3, -1, 1, 3);
  std::vector<float> out(32);
  auto k = tj::compile<ChunkSum>(tj::Device::interpreter(), {.num_warps = 1});  // not instrumented
  k.launch(tj::Grid{1}, x.data(), out.data(), 3);
  CHECK(TraceView(s.phase()).summaries.empty());
}

TEST_CASE("device_events_gpu_chunk_sum_and_warp_specialised_gemm") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no CUDA GPU: skipping");
    return;
  }
  {
    Session s("gpu", "chrome_trace", "cupti");
    launch_chunk_sum(dev, 6, 5, {.num_warps = 1});
    dev.synchronize();
    check_chunk_trace(s.phase(), 6, 5, "kernel record");
  }
  if (dev.compute_capability() < 90) return;
  // Rung 5, warp-specialised: 2 consumer warp groups, 4 programs, 6 K steps of 64.
  const int M = 256, N = 256, K = 64 * 6;
  auto a = testing::random_tensor<tj::bf16>(static_cast<std::size_t>(M) * K, 11);
  auto b = testing::random_tensor<tj::bf16>(static_cast<std::size_t>(N) * K, 12);
  std::vector<float> c(static_cast<std::size_t>(M) * N, std::nanf(""));
  testing::Mirror m{dev, {}};
  auto *da = m.up(a), *db = m.up(b);
  float* dc = m.up(c);
  using D = tj::TensorDescriptor;
  D ad(dev, da, tj::DType::bf16, {M, K}, {K, 1}, {128, 64}, {.swizzle = D::Swizzle::b128});
  D bd(dev, db, tj::DType::bf16, {N, K}, {K, 1}, {128, 64}, {.swizzle = D::Swizzle::b128});
  Session s("gemm", "chrome_trace", "cupti");
  auto k = tj::compile<examples::MatmulV5<128, 128, tj::bf16>>(
      dev, {.num_warps = 8, .num_stages = 3, .warp_specialize = true, .device_events = true, .device_events_wgmma = true});
  k.launch(tj::Grid{4}, ad, bd, dc, M, N, K);
  m.down();
  double err = 0, ref2 = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double r = 0;
      for (int q = 0; q < K; ++q)
        r += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(i) * K + q])) * static_cast<float>(b[static_cast<std::size_t>(j) * K + q]);
      const double d = c[static_cast<std::size_t>(i) * N + j] - r;
      err += d * d, ref2 += r * r;
    }
  CHECK(std::sqrt(err / ref2) < 1e-5);
  dev.synchronize();
  const TraceView v(s.phase());
  REQUIRE(v.summaries.size() == 1);
  const json& sum = v.summaries[0].at("args");
  CHECK(sum.at("aligned_to") == (v.kernel_records ? "kernel record" : "launch"));
  CHECK(sum.at("unmatched_ends") == 0);
  CHECK(sum.at("unmatched_begins") == 0);
  std::map<std::string, int> flows;
  for (const auto& [id, sf] : v.flows) flows[sf.first.at("name")] += 1;
  CHECK(flows["wgmma"] == 4 * 6 * 2);  // per program, K step and consumer warp group
  CHECK(v.flows.size() == 2u * 4 * 6 * 2);  // and as many TMA stages
  std::set<long long> producer_lanes, consumer_lanes;
  double min_gap = 1e30;
  for (const auto& [id, sf] : v.flows) {
    if (sf.first.at("name") == "wgmma") {
      CHECK(sf.first.at("tid") == sf.second.at("tid"));  // issued and completed in one warp group
      continue;
    }
    producer_lanes.insert(sf.first.at("tid").get<long long>());
    consumer_lanes.insert(sf.second.at("tid").get<long long>());
    const double gap = sf.second.at("ts").get<double>() - sf.first.at("ts").get<double>();
    CHECK(gap >= 0);
    if (gap > 0) min_gap = std::min(min_gap, gap);
  }
  CHECK(producer_lanes.size() == 4);  // the producer warp of each program
  CHECK(consumer_lanes.size() == 8);  // warps 0 and 4 of each program
  for (long long t : producer_lanes) CHECK(v.lanes.at(t).find("warp 8") != std::string::npos);
  MESSAGE("smallest TMA issue -> arrival seen: " << min_gap * 1000 << " ns (global timer)");
}

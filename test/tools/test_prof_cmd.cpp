// `tilejit prof view` / `tilejit prof html` (tools/prof_cmd.hpp): the printed
// tree and its filters, derived metrics with known numbers, JSON and
// MessagePack input, diffs, every error case, and the HTML flame graph —
// on hand-written hatchet files and on profiles the profiler itself writes
// (kernel records from the mock backend of test/profiler).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test/profiler/profiler_test_util.hpp"
#include "tools/prof_cmd.hpp"
#include "tilejit/core/utf8.hpp"

namespace {

using namespace tilejit::tools;
using prof_test::json;
namespace fs = std::filesystem;
namespace tp = tilejit::profiler;

// ROOT (10 ms, 4 kernels) / step / {softmax<float> 2 ms x2, gemm 8 ms x2, optimizer}.
const char* kProfileA = R"J([
 {"frame": {"name": "ROOT", "type": "function"},
  "metrics": {"time (ns) (inc)": 10000000, "count (inc)": 4, "flops16 (inc)": 8000000000, "bytes (inc)": 1000000},
  "children": [
   {"frame": {"name": "step", "type": "function"},
    "metrics": {"time (ns) (inc)": 10000000, "count (inc)": 4, "flops16 (inc)": 8000000000, "bytes (inc)": 1000000},
    "children": [
     {"frame": {"name": "softmax<float>", "type": "function"},
      "metrics": {"time (ns)": 2000000, "time (ns) (inc)": 2000000, "count": 2, "count (inc)": 2,
                  "bytes": 1000000, "bytes (inc)": 1000000, "device_id": "0", "device_type": "CUDA"},
      "children": []},
     {"frame": {"name": "gemm", "type": "function"},
      "metrics": {"time (ns)": 8000000, "time (ns) (inc)": 8000000, "count": 2, "count (inc)": 2,
                  "flops16": 8000000000, "flops16 (inc)": 8000000000, "device_id": "0", "device_type": "CUDA"},
      "children": []},
     {"frame": {"name": "optimizer", "type": "function"}, "metrics": {"lr": 0.001}, "children": []}]}]},
 {"CUDA": {"0": {"arch": "90a", "num_sms": 132, "clock_rate": 1980000, "memory_clock_rate": 2619000, "bus_width": 6144}}}
])J";

// The same run later: gemm twice as fast, softmax gone, a new kernel "extra".
const char* kProfileB = R"J([
 {"frame": {"name": "ROOT", "type": "function"},
  "metrics": {"time (ns) (inc)": 5000000, "count (inc)": 3},
  "children": [
   {"frame": {"name": "step", "type": "function"},
    "metrics": {"time (ns) (inc)": 5000000, "count (inc)": 3},
    "children": [
     {"frame": {"name": "gemm", "type": "function"},
      "metrics": {"time (ns)": 4000000, "time (ns) (inc)": 4000000, "count": 2, "count (inc)": 2}, "children": []},
     {"frame": {"name": "extra", "type": "function"},
      "metrics": {"time (ns)": 1000000, "time (ns) (inc)": 1000000, "count": 1, "count (inc)": 1}, "children": []}]}]},
 {}
])J";

fs::path dir() {
  static const fs::path d = prof_test::temp_dir("prof_cmd");
  return d;
}

std::string write(const std::string& name, std::string_view bytes) {
  fs::path p = dir() / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string to_msgpack(std::string_view json_text) {
  std::vector<std::uint8_t> v = json::to_msgpack(json::parse(json_text));
  return {v.begin(), v.end()};
}

Profile A() { return parse_profile(kProfileA, "a.hatchet"); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

struct Row {
  int depth = 0;
  std::string name;
  std::vector<std::string> cells;
};

/// The rows under the header ("... name") of render_view's output.
std::vector<Row> rows_of(const std::string& text) {
  std::vector<std::string> ls = lines_of(text);
  std::size_t h = 0;
  while (h < ls.size() && !(ls[h].size() >= 4 && ls[h].substr(ls[h].size() - 4) == "name")) ++h;
  REQUIRE(h < ls.size());
  const std::size_t col = ls[h].size() - 4;
  std::vector<Row> rows;
  for (std::size_t i = h + 1; i < ls.size(); ++i) {
    REQUIRE(ls[i].size() >= col);
    Row r;
    std::istringstream cells(ls[i].substr(0, col));
    for (std::string c; cells >> c;) r.cells.push_back(c);
    std::string_view rest = std::string_view(ls[i]).substr(col);
    for (bool more = true; more;) {
      more = false;
      for (std::string_view g : {"│  ", "   ", "├─ ", "└─ "}) {
        if (rest.substr(0, g.size()) == g) {
          rest.remove_prefix(g.size());
          ++r.depth;
          more = true;
        }
      }
    }
    r.name = std::string(rest);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::string> names(const std::vector<Row>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.name);
  return out;
}

std::vector<std::string> view_names(const ViewOptions& o) { return names(rows_of(render_view(A(), o))); }

const ProfNode& node(const Profile& p, std::initializer_list<std::string_view> path) {
  const ProfNode* n = &p.root;
  for (auto name : path) {
    const ProfNode* next = nullptr;
    for (const auto& c : n->children)
      if (c.name == name) next = &c;
    REQUIRE_MESSAGE(next != nullptr, "no node " << name);
    n = next;
  }
  return *n;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("prof view: the tree in file order, default metric time/ms, depth from the glyphs") {
  const std::string text = render_view(A(), {});
  auto rows = rows_of(text);
  CHECK(lines_of(text).front() == "time/ms  name");
  REQUIRE(rows.size() == 5);
  CHECK(names(rows) == Names{"ROOT", "step", "softmax<float>", "gemm", "optimizer"});
  CHECK(rows[0].depth == 0);
  CHECK(rows[1].depth == 1);
  CHECK(rows[2].depth == 2);
  CHECK(rows[4].depth == 2);
  CHECK(rows[0].cells == Names{"10"});
  CHECK(rows[2].cells == Names{"2"});
  CHECK(rows[3].cells == Names{"8"});
  CHECK(rows[4].cells == Names{"-"});  // no time recorded there
  // Glyphs: the last child of a level gets └─.
  CHECK(text.find("└─ optimizer") != std::string::npos);
  CHECK(text.find("├─ gemm") != std::string::npos);
}

TEST_CASE("prof view: derived metrics with known numbers") {
  const Profile p = A();
  const DevicePeaks h200 = h200_peaks();
  const ProfNode& gemm = node(p, {"step", "gemm"});
  const ProfNode& soft = node(p, {"step", "softmax<float>"});
  const ProfNode& opt = node(p, {"step", "optimizer"});
  auto v = [&](const ProfNode& n, std::string_view m) { return metric_value(p, n, m, h200); };
  CHECK(*v(gemm, "time/ms") == doctest::Approx(8));
  CHECK(*v(gemm, "time/us") == doctest::Approx(8000));
  CHECK(*v(gemm, "TIME/S") == doctest::Approx(0.008));  // case-insensitive
  CHECK(*v(gemm, "avg_time/ms") == doctest::Approx(4));
  CHECK(*v(p.root, "avg_time/ms") == doctest::Approx(2.5));
  CHECK(*v(gemm, "flop/s") == doctest::Approx(1e12));  // 8e9 flops in 8 ms
  CHECK(*v(gemm, "tflop16/s") == doctest::Approx(1.0));
  CHECK(*v(gemm, "gflop/s") == doctest::Approx(1000));
  CHECK_FALSE(v(soft, "flop/s").has_value());  // no flops there
  CHECK(*v(soft, "byte/s") == doctest::Approx(5e8));  // 1 MB in 2 ms
  CHECK(*v(soft, "gbyte/s") == doctest::Approx(0.5));
  CHECK(*v(p.root, "tbyte/s") == doctest::Approx(1e-4));
  // util: max(flops / peak flops, bytes / peak bandwidth) / time.
  CHECK(*v(gemm, "util") == doctest::Approx(8e9 / 989.5e12 / 0.008));
  CHECK(*v(soft, "util") == doctest::Approx(1e6 / 4.8e12 / 0.002));
  CHECK(*v(p.root, "util") == doctest::Approx(8e9 / 989.5e12 / 0.010));
  // Raw metrics, with or without their unit.
  CHECK(*v(gemm, "count") == 2);
  CHECK(*v(p.root, "count") == 4);
  CHECK(*v(gemm, "time") == 8000000);
  CHECK(*v(gemm, "time (ns)") == 8000000);
  CHECK(*v(p.root, "flops16") == 8e9);
  CHECK(*v(opt, "lr") == doctest::Approx(0.001));
  CHECK_FALSE(v(opt, "time/ms").has_value());
  CHECK_FALSE(v(opt, "avg_time/ms").has_value());
  CHECK_FALSE(v(opt, "util").has_value());

  // A peaks file: util against its numbers.
  const std::string peaks =
      write("peaks.json", R"J({"name": "toy", "flop16/s": 2e12, "byte/s": 1e9})J");
  const DevicePeaks toy = load_peaks(peaks);
  CHECK(toy.flop_per_s.at(16) == 2e12);
  CHECK(metric_value(p, gemm, "util", toy).value() == doctest::Approx(0.5));  // 1e12 of 2e12
  CHECK(metric_value(p, soft, "util", toy).value() == doctest::Approx(0.5));  // 5e8 of 1e9
  CHECK(load_peaks("H200").byte_per_s == 4.8e12);

  // The printed columns.
  ViewOptions o;
  o.metrics = {"time/ms", "avg_time/ms", "count", "tflop/s", "gbyte/s", "util", "lr"};
  o.peaks = peaks;
  const std::string text = render_view(p, o);
  CHECK(text.find("util: against toy") != std::string::npos);
  auto rows = rows_of(text);
  CHECK(rows[3].name == "gemm");
  CHECK(rows[3].cells == Names{"8", "4", "2", "1", "-", "50%", "-"});
  CHECK(rows[2].cells == Names{"2", "1", "2", "-", "0.5", "50%", "-"});
  CHECK(rows[4].cells == Names{"-", "-", "-", "-", "-", "-", "0.001"});
  CHECK(lines_of(text)[1].find("avg_time/ms") != std::string::npos);
  // The H200 table is labelled as datasheet figures.
  o.peaks = "h200";
  CHECK(render_view(p, o).find("H200 SXM, datasheet figures") != std::string::npos);
}

TEST_CASE("prof view: --sort orders siblings, largest first, nodes without a value last") {
  ViewOptions o;
  o.sort = "time/ms";
  CHECK(view_names(o) == Names{"ROOT", "step", "gemm", "softmax<float>", "optimizer"});
  o.sort = "byte/s";  // only softmax has bytes
  CHECK(view_names(o) == Names{"ROOT", "step", "softmax<float>", "gemm", "optimizer"});
  o.sort = "lr";
  CHECK(view_names(o) == Names{"ROOT", "step", "optimizer", "softmax<float>", "gemm"});
}

TEST_CASE("prof view: --depth and --threshold") {
  ViewOptions o;
  o.depth = 0;
  CHECK(view_names(o) == Names{"ROOT"});
  o.depth = 1;
  CHECK(view_names(o) == Names{"ROOT", "step"});
  o.depth = 2;
  CHECK(view_names(o).size() == 5);
  o.depth = -1;
  o.threshold = 0.5;  // softmax is 20% of ROOT, optimizer has no time
  CHECK(view_names(o) == Names{"ROOT", "step", "gemm"});
  o.threshold = 0.15;
  CHECK(view_names(o) == Names{"ROOT", "step", "softmax<float>", "gemm"});
  o.threshold = 1;
  CHECK(view_names(o) == Names{"ROOT", "step"});
}

TEST_CASE("prof view: --include keeps the paths through matches, --exclude drops subtrees") {
  ViewOptions o;
  o.include = "gem";  // matched anywhere in the name; ancestors kept
  CHECK(view_names(o) == Names{"ROOT", "step", "gemm"});
  o.include = "^step$";  // a match keeps its whole subtree
  CHECK(view_names(o) == Names{"ROOT", "step", "softmax<float>", "gemm", "optimizer"});
  o.include = "softmax|optim";
  CHECK(view_names(o) == Names{"ROOT", "step", "softmax<float>", "optimizer"});
  o.include = "nothing-matches";
  CHECK(view_names(o) == Names{"ROOT"});
  o.include = "ROOT";  // ROOT itself is not a match; it is always shown
  CHECK(view_names(o) == Names{"ROOT"});
  o.include.clear();
  o.exclude = "<float>";
  CHECK(view_names(o) == Names{"ROOT", "step", "gemm", "optimizer"});
  o.exclude = "^step$";
  CHECK(view_names(o) == Names{"ROOT"});
  o.include = "s";  // step, softmax, then exclude soft
  o.exclude = "soft";
  CHECK(view_names(o) == Names{"ROOT", "step", "gemm", "optimizer"});
}

TEST_CASE("prof view: files without \"(inc)\" values (Proton's) are summed up the tree") {
  const char* text = R"J([{"frame": {"name": "ROOT", "type": "function"}, "metrics": {},
    "children": [{"frame": {"name": "a", "type": "function"}, "metrics": {"user_exc": 7},
      "children": [
        {"frame": {"name": "k1", "type": "function"}, "metrics": {"time (ns)": 3000, "count": 1, "flops32": 6000}, "children": []},
        {"frame": {"name": "k2", "type": "function"}, "metrics": {"time (ns)": 1000, "count": 3, "bytes": 400}, "children": []}]}]},
    {}])J";
  const Profile p = parse_profile(text, "proton.hatchet");
  CHECK(p.inclusive_metrics == std::set<std::string>{"bytes", "count", "flops32", "time (ns)"});
  CHECK(p.plain_metrics == std::set<std::string>{"user_exc"});
  const DevicePeaks pk = h200_peaks();
  const ProfNode& a = node(p, {"a"});
  CHECK(*metric_value(p, a, "time/us", pk) == doctest::Approx(4));
  CHECK(*metric_value(p, a, "avg_time/ns", pk) == doctest::Approx(1000));
  CHECK(*metric_value(p, a, "flop32/s", pk) == doctest::Approx(6000 / 4e-6));
  CHECK(*metric_value(p, p.root, "count", pk) == 4);
  CHECK(*metric_value(p, a, "user_exc", pk) == 7);
  CHECK_FALSE(metric_value(p, p.root, "user_exc", pk).has_value());  // not propagated
}

TEST_CASE("prof view: a profile written by the profiler, as hatchet JSON and MessagePack") {
  prof_test::register_mock();
  const fs::path d = prof_test::temp_dir("prof_cmd_session");
  auto s = tp::start((d / "run").string(), {.backend = "mock", .hook = "launch"});
  prof_test::MockBackend* mock = prof_test::MockBackend::latest();
  REQUIRE(mock != nullptr);
  const std::uint64_t t0 = tp::now_ns();
  std::uint64_t corr = 500;
  for (int step = 0; step < 2; ++step) {
    tp::Scope st("step");
    {
      tp::Scope fwd("forward");
      // gemm: 2 launches of 1 ms each, 4e9 flops16 per launch.
      tp::LaunchScope hook({.kernel = "gemm", .grid = {8, 8, 1}, .flops = 4'000'000'000,
                            .flops_width = 16, .bytes = 0});
      tp::correlate_launch(++corr);
      mock->push(prof_test::record("gemm", corr, t0 + step * 10'000'000, 1'000'000));
    }
    {
      tp::Scope opt("optimizer");
      tp::correlate_launch(++corr);  // a plain kernel under a scope: 250 us each
      mock->push(prof_test::record("adam", corr, t0 + step * 10'000'000 + 2'000'000, 250'000));
    }
  }
  const std::string json_text = *tp::get(s, 0);
  const std::vector<std::uint8_t> mp = *tp::get_msgpack(s, 0);
  tp::finalize(s);
  const std::string jpath = write("run.hatchet", json_text);
  const std::string mpath = write("run.hatchet_msgpack", std::string(mp.begin(), mp.end()));

  const Profile pj = load_profile(jpath);
  const Profile pm = load_profile(mpath);
  CHECK_FALSE(pj.msgpack);
  CHECK(pm.msgpack);
  CHECK(pj.node_count() == pm.node_count());
  REQUIRE(pj.devices.size() == 1);
  CHECK(pj.devices[0].arch == "90a");
  CHECK(pj.devices[0].num_sms == 132);

  const DevicePeaks pk = h200_peaks();
  const ProfNode& gemm = node(pj, {"step", "forward", "gemm"});
  const ProfNode& adam = node(pj, {"step", "optimizer", "adam"});
  CHECK(*metric_value(pj, gemm, "time/ms", pk) == doctest::Approx(2));
  CHECK(*metric_value(pj, gemm, "avg_time/ms", pk) == doctest::Approx(1));
  CHECK(*metric_value(pj, gemm, "count", pk) == 2);
  CHECK(*metric_value(pj, gemm, "tflop16/s", pk) == doctest::Approx(4));  // 8e9 in 2 ms
  CHECK(*metric_value(pj, gemm, "util", pk) == doctest::Approx(4e12 / 989.5e12));
  CHECK(*metric_value(pj, adam, "avg_time/us", pk) == doctest::Approx(250));
  CHECK(*metric_value(pj, pj.root, "time/ms", pk) == doctest::Approx(2.5));
  CHECK(*metric_value(pj, node(pj, {"step"}), "avg_time/us", pk) == doctest::Approx(625));

  ViewOptions o;
  o.metrics = {"time/ms", "avg_time/us", "count", "tflop/s", "util"};
  o.sort = "time/ms";
  const std::string a = render_view(pj, o);
  CHECK(a == render_view(pm, o));
  CHECK(names(rows_of(a)) == Names{"ROOT", "step", "forward", "gemm", "optimizer", "adam"});
  auto rows = rows_of(a);
  CHECK(rows[3].cells == Names{"2", "1000", "2", "4", "0.404%"});
  // The command returns 0 on both.
  ProfViewArgs args{mpath, "", o};
  CHECK(run_prof_view(args) == 0);
}

TEST_CASE("prof view: MessagePack input gives the same output as JSON") {
  const std::string j = write("a.hatchet", kProfileA);
  const std::string m = write("a.hatchet_msgpack", to_msgpack(kProfileA));
  ViewOptions o;
  o.metrics = {"time/ms", "avg_time/ms", "flop/s", "byte/s", "util", "count", "lr"};
  o.sort = "avg_time/ms";
  o.threshold = 0.1;
  CHECK(render_view(load_profile(j), o) == render_view(load_profile(m), o));
  CHECK(load_profile(m).msgpack);
  // Leading blanks before JSON are fine.
  CHECK(render_view(parse_profile(std::string("\n  ") + kProfileA, "x"), o) ==
        render_view(load_profile(j), o));
}

TEST_CASE("prof view: --diff matches nodes by path and shows a, b, b-a, b/a") {
  const Profile a = A();
  const Profile b = parse_profile(kProfileB, "b.hatchet");
  ViewOptions o;
  o.metrics = {"time/ms", "count"};
  const std::string text = render_view(a, o, &b);
  auto ls = lines_of(text);
  CHECK(ls[0] == "a: a.hatchet");
  CHECK(ls[1] == "b: b.hatchet");
  CHECK(ls[2].find("time/ms:a") != std::string::npos);
  CHECK(ls[2].find("time/ms:b/a") != std::string::npos);
  CHECK(ls[2].find("count:b-a") != std::string::npos);
  auto rows = rows_of(text);
  CHECK(names(rows) == Names{"ROOT", "step", "softmax<float>", "gemm", "optimizer", "extra"});
  CHECK(rows[0].cells == Names{"10", "5", "-5", "0.5x", "4", "3", "-1", "0.75x"});
  CHECK(rows[3].cells == Names{"8", "4", "-4", "0.5x", "2", "2", "+0", "1x"});
  CHECK(rows[2].cells == Names{"2", "-", "-", "-", "2", "-", "-", "-"});   // a only
  CHECK(rows[5].cells == Names{"-", "1", "-", "-", "-", "1", "-", "-"});   // b only
  // Sorting and thresholds in a diff use b's value, else a's.
  o.sort = "time/ms";
  CHECK(names(rows_of(render_view(a, o, &b))) ==
        Names{"ROOT", "step", "gemm", "softmax<float>", "extra", "optimizer"});
  o.threshold = 0.25;  // a: softmax 20% of a's ROOT, b: extra 20% of b's
  CHECK(names(rows_of(render_view(a, o, &b))) == Names{"ROOT", "step", "gemm"});
  o.threshold = 0.15;  // each side against its own ROOT
  CHECK(names(rows_of(render_view(a, o, &b))) ==
        Names{"ROOT", "step", "gemm", "softmax<float>", "extra"});
  // A metric only one side has is allowed.
  o = {};
  o.metrics = {"flop/s"};
  auto r2 = rows_of(render_view(b, o, &a));
  CHECK(names(r2) == Names{"ROOT", "step", "gemm", "extra", "softmax<float>", "optimizer"});
  CHECK(r2[2].cells == Names{"-", "1e+12", "-", "-"});  // gemm: flops only in a (= b here)
  // Through the command.
  ProfViewArgs args{write("a2.hatchet", kProfileA), write("b2.hatchet", kProfileB), {}};
  CHECK(run_prof_view(args) == 0);
}

TEST_CASE("prof view: a NaN metric (written as null) reads as missing") {
  // Review finding: one NaN anywhere (it spreads into ROOT's inclusive total) made the whole file unreadable.
  const std::string text = R"J([{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"loss (inc)": null, "time (ns) (inc)": 2000},
    "children": [{"frame": {"name": "a", "type": "function"}, "metrics": {"loss": null, "loss (inc)": null, "time (ns)": 2000,
    "time (ns) (inc)": 2000}, "children": []}]}])J";
  const Profile p = parse_profile(text, "nan.hatchet");
  REQUIRE(p.root.children.size() == 1);
  CHECK(p.root.children[0].metrics.count("loss") == 0);
  CHECK(p.root.children[0].metrics.at("time (ns)") == 2000);
}

TEST_CASE("prof view: NaN and infinite MessagePack floats read as missing, as JSON's null does") {
  // A helper agent's finding: the same NaN read as missing from JSON (null) spread "nan" through ROOT from
  // MessagePack (a float), and the flame graph drew every node 0 wide.
  for (const double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    CAPTURE(bad);
    json j = json::array({{{"frame", {{"name", "ROOT"}}}, {"metrics", json::object()},
                           {"children", json::array({{{"frame", {{"name", "k1"}}}, {"metrics", {{"time (ns)", bad}}}},
                                                     {{"frame", {{"name", "k2"}}}, {"metrics", {{"time (ns)", 5e6}}}}})}}});
    const std::vector<std::uint8_t> mp = json::to_msgpack(j);
    const Profile p = parse_profile(std::string_view(reinterpret_cast<const char*>(mp.data()), mp.size()), "nan.mp");
    REQUIRE(p.root.children.size() == 2);
    CHECK(p.root.children[0].metrics.count("time (ns)") == 0);
    CHECK(p.root.children[0].nulls.count("time (ns)") == 1);
    const auto rows = rows_of(render_view(p, {}));
    CHECK(rows[0].cells == Names{"5"});  // ROOT: k2's 5 ms, not nan
    CHECK(rows[1].cells == Names{"-"});
  }
}

TEST_CASE("prof view: a JSON profile nested past the depth rule is refused with a short message") {
  // The message named the whole path: 16 KB for one-character names nested 8192 deep (a break-it pass).
  std::string text;
  constexpr int kLevels = 8300;
  for (int i = 0; i < kLevels; ++i) text += R"({"frame": {"name": "n"}, "metrics": {}, "children": [)";
  text += R"({"frame": {"name": "leaf"}, "metrics": {}, "children": []})";
  for (int i = 0; i < kLevels; ++i) text += "]}";
  text = "[" + text + "]";
  std::string what;
  try {
    (void)parse_profile(text, "deep.hatchet");
  } catch (const tilejit::InvalidArgument& e) {
    what = e.what();
  }
  CHECK(what.find("nested deeper than 8192 levels") != std::string::npos);
  CHECK(what.find("/...(") != std::string::npos);
  CHECK(what.size() < 300);
}

TEST_CASE("prof view: MessagePack nested past the depth rule is refused before it is parsed") {
  // nlohmann's MessagePack reader recurses per level: 200,000 nested arrays overflowed the stack (a segfault)
  // before to_node's depth rule ran. msgpack_depth counts the nesting without recursion first.
  std::string deep = "\x92" + std::string(200000, '\x91') + "\xc0\x80";
  CHECK_THROWS_WITH_AS(parse_profile(deep, "deep.mp"), doctest::Contains("deep.mp: not a hatchet profile: nested deeper than 8192 levels"),
                       tilejit::InvalidArgument);
  // A profile 1000 levels deep (2000 containers) is read.
  json node = {{"frame", {{"name", "leaf"}}}, {"metrics", {{"time (ns)", 1.0}}}};
  for (int i = 0; i < 1000; ++i) node = {{"frame", {{"name", "n"}}}, {"metrics", json::object()}, {"children", json::array({node})}};
  const std::vector<std::uint8_t> mp = json::to_msgpack(json::array({node}));
  CHECK(parse_profile(std::string_view(reinterpret_cast<const char*>(mp.data()), mp.size()), "d.mp").node_count() == 1001);
}

TEST_CASE("prof view: --diff pairs the k-th sibling of a name in a with the k-th in b") {
  const Profile a = parse_profile(R"J([{"frame": {"name": "ROOT"}, "metrics": {}, "children": [
    {"frame": {"name": "x"}, "metrics": {"time (ns)": 1e6}}, {"frame": {"name": "y"}, "metrics": {"time (ns)": 2e6}},
    {"frame": {"name": "x"}, "metrics": {"time (ns)": 3e6}}]}])J", "a.json");
  const Profile b = parse_profile(R"J([{"frame": {"name": "ROOT"}, "metrics": {}, "children": [
    {"frame": {"name": "x"}, "metrics": {"time (ns)": 10e6}}, {"frame": {"name": "z"}, "metrics": {"time (ns)": 20e6}},
    {"frame": {"name": "x"}, "metrics": {"time (ns)": 30e6}}, {"frame": {"name": "x"}, "metrics": {"time (ns)": 40e6}}]}])J", "b.json");
  const auto rows = rows_of(render_view(a, {}, &b));
  CHECK(names(rows) == Names{"ROOT", "x", "y", "x", "z", "x"});
  CHECK(rows[1].cells == Names{"1", "10", "+9", "10x"});
  CHECK(rows[2].cells == Names{"2", "-", "-", "-"});   // y: a only
  CHECK(rows[3].cells == Names{"3", "30", "+27", "10x"});  // the second x of each
  CHECK(rows[4].cells == Names{"-", "20", "-", "-"});  // z: b only
  CHECK(rows[5].cells == Names{"-", "40", "-", "-"});  // b's third x has no partner
}

TEST_CASE("prof view: --include / --exclude match long names in linear time") {
  // std::regex recursed once per character (a 30,000-character name with -i '.*gemm' was a segfault) and backtracked
  // exponentially on ^(a+)+$ (a 40-character name that fails at its end: minutes). RE2 does neither.
  const std::string longname(100000, 'a');
  const std::string name_b = std::string(40, 'a') + "b";
  const Profile p = parse_profile(R"J([{"frame": {"name": "ROOT"}, "metrics": {}, "children": [{"frame": {"name": ")J" + longname +
                                      R"J("}, "metrics": {"time (ns)": 1e6}}, {"frame": {"name": ")J" + name_b +
                                      R"J("}, "metrics": {"time (ns)": 2e6}}]}])J", "long.json");
  ViewOptions o;
  o.include = ".*gemm";
  CHECK(names(rows_of(render_view(p, o))) == Names{"ROOT"});
  o.include = "a{5}$";  // the long name ends in a's; the other in b
  CHECK(names(rows_of(render_view(p, o))) == Names{"ROOT", longname});
  const auto t0 = std::chrono::steady_clock::now();
  o.include = "^(a+)+$";
  CHECK(names(rows_of(render_view(p, o))) == Names{"ROOT", longname});  // name_b fails at its last character
  o = {};
  o.exclude = "^(a|aa)+$";
  CHECK(names(rows_of(render_view(p, o))) == Names{"ROOT", name_b});
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));  // backtracking: longer than the universe
}

TEST_CASE("prof view: control characters in frame names are escaped, UTF-8 kept") {
  const std::string text = R"J([{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 10},
    "children": [{"frame": {"name": "a\nb\u001b[31mred\tµs"}, "metrics": {"time (ns)": 10}, "children": []}]}])J";
  const std::string out = render_view(parse_profile(text, "ctl.hatchet"), {});
  CHECK(out.find("a\\nb\\x1b[31mred\\tµs") != std::string::npos);
  CHECK(out.find('\x1b') == std::string::npos);
  std::size_t lines = 0;
  for (char c : out) lines += c == '\n';
  CHECK(lines == 3);  // header, ROOT, the one child: the name's newline did not split its row
}

TEST_CASE("prof view: C1 controls and bytes that are not UTF-8 are escaped") {
  // U+009B is an 8-bit CSI (C2 9B in UTF-8); MessagePack names may hold any bytes. Well-formed UTF-8 passes.
  json j = json::parse(R"J([{"frame": {"name": "ROOT"}, "metrics": {"time (ns)": 10}, "children": []}])J");
  for (const std::string& name : {std::string("a\xc2\x9b" "31mred"), std::string("x\xffy\xc3"), std::string("\xed\xa0\x80s"),
                                 std::string("\xe2\x82\xac\xf0\x9f\x98\x80ok")}) {
    json child;
    child["frame"]["name"] = name;
    child["metrics"]["time (ns)"] = 1;
    child["children"] = json::array();
    j[0]["children"].push_back(child);
  }
  const std::vector<std::uint8_t> mp = json::to_msgpack(j);
  const std::string out = render_view(parse_profile(std::string(mp.begin(), mp.end()), "c1.hatchet_msgpack"), {});
  CHECK(out.find("a\\u009b31mred") != std::string::npos);
  CHECK(out.find("x\\xffy\\xc3") != std::string::npos);
  CHECK(out.find("\\xed\\xa0\\x80s") != std::string::npos);  // a surrogate's encoding: not UTF-8
  CHECK(out.find("\xe2\x82\xac\xf0\x9f\x98\x80ok") != std::string::npos);  // a euro sign and an emoji, kept
  CHECK(out.find("\xc2\x9b") == std::string::npos);
  CHECK(out.find('\xff') == std::string::npos);
  // The HTML page declares UTF-8: the same names, and a NUL, written as text there too (tooltips keep their newlines).
  json withnul;
  withnul["frame"]["name"] = std::string("nul\0byte", 8);
  withnul["metrics"]["time (ns)"] = 1;
  withnul["children"] = json::array();
  j[0]["children"].push_back(withnul);
  const std::vector<std::uint8_t> mp2 = json::to_msgpack(j);
  const std::string html = render_html(parse_profile(std::string(mp2.begin(), mp2.end()), "c1.hatchet_msgpack"));
  CHECK(tilejit::utf8_valid(html));
  CHECK(html.find('\0') == std::string::npos);
  CHECK(html.find("x\\xffy\\xc3") != std::string::npos);
  CHECK(html.find("nul\\x00byte") != std::string::npos);
  CHECK(html.find("\xe2\x82\xac\xf0\x9f\x98\x80ok") != std::string::npos);
  CHECK(html.find("% of ROOT&#39;s time") != std::string::npos);  // the tooltip's newline kept, not escaped
}

TEST_CASE("prof view: a document that is not a profile names what it is") {
  using tilejit::InvalidArgument;
  CHECK_THROWS_WITH_AS(parse_profile("null", "n.json"), doctest::Contains("n.json: not a hatchet profile: expected [tree, device_info] or a tree object, got null"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(parse_profile("[]", "e.json"), doctest::Contains("got an empty array"), InvalidArgument);
  CHECK_THROWS_WITH_AS(parse_profile("42", "x.json"), doctest::Contains("got number"), InvalidArgument);
}

TEST_CASE("prof view: bad input is InvalidArgument and exit code 2") {
  using tilejit::InvalidArgument;
  const Profile a = A();
  auto bad_view = [&](ViewOptions o) { return render_view(a, o); };
  // Unreadable, empty, malformed files.
  CHECK_THROWS_AS(load_profile((dir() / "missing.hatchet").string()), InvalidArgument);
  CHECK_THROWS_AS(load_profile(dir().string()), InvalidArgument);  // a directory
  CHECK_THROWS_AS(parse_profile("", "e"), InvalidArgument);
  CHECK_THROWS_AS(parse_profile("[{\"frame\": ", "t"), InvalidArgument);
  CHECK_THROWS_WITH_AS(parse_profile("[{\"frame\": ", "t.hatchet"),
                       doctest::Contains("t.hatchet: not valid JSON"), InvalidArgument);
  CHECK_THROWS_AS(parse_profile("\x92\x81", "m"), InvalidArgument);  // truncated MessagePack
  CHECK_THROWS_AS(parse_profile("not json", "m"), InvalidArgument);
  CHECK_THROWS_WITH_AS(parse_profile(R"J({"traceEvents": []})J", "c"),
                       doctest::Contains("Chrome trace"), InvalidArgument);
  CHECK_THROWS_AS(parse_profile("[1, 2]", "x"), InvalidArgument);
  CHECK_THROWS_AS(parse_profile("[]", "x"), InvalidArgument);
  CHECK_THROWS_AS(parse_profile(R"J([{"frame": {"name": 3}}])J", "x"), InvalidArgument);
  CHECK_THROWS_AS(parse_profile(R"J([{"frame": {"name": "R"}, "children": {}}])J", "x"),
                  InvalidArgument);
  CHECK_THROWS_AS(parse_profile(R"J([{"frame": {"name": "R"}, "metrics": {"m": [1]}}])J", "x"),
                  InvalidArgument);
  // Metrics.
  ViewOptions o;
  o.metrics = {"foo"};
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("unknown metric 'foo'"), InvalidArgument);
  o.metrics = {"time/min"};
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  // A metric the file has only as null (NaN or infinite when recorded) is named as such, not as unknown.
  {
    const Profile nul = parse_profile(R"J([{"frame": {"name": "R"}, "metrics": {"time (ns)": 5, "flt": null},
                                           "children": [{"frame": {"name": "k"}, "metrics": {"flt": null}}]}])J", "n.hatchet");
    ViewOptions on;
    on.metrics = {"flt"};
    CHECK_THROWS_WITH_AS(render_view(nul, on), doctest::Contains("'flt' has no numeric value in n.hatchet"), InvalidArgument);
    CHECK(nul.null_metrics == std::set<std::string>{"flt"});
  }
  o.metrics = {"flop8/s"};  // derivable, but the profile has no flops8
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("flops8"), InvalidArgument);
  o.metrics = {"flop12/s"};
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  o = {};
  o.sort = "nope";
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  const Profile no_time = parse_profile(
      R"J([{"frame": {"name": "ROOT"}, "metrics": {"flops16 (inc)": 5}, "children": []}, {}])J", "s");
  o = {};
  o.metrics = {"flop/s"};
  CHECK_THROWS_WITH_AS(render_view(no_time, o), doctest::Contains("time (ns)"), InvalidArgument);
  o.metrics = {"util"};
  CHECK_THROWS_AS(render_view(no_time, o), InvalidArgument);
  // Regexes and the threshold.
  o = {};
  o.include = "(";
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("--include"), InvalidArgument);
  o = {};
  o.exclude = "[a-";
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("--exclude"), InvalidArgument);
  // A long pattern and its reason are cut to 80 bytes; control bytes are escaped.
  auto message_of = [&](const ViewOptions& v) {  // the InvalidArgument's text, or "" if none was thrown
    try {
      bad_view(v);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  o = {};
  o.include = std::string(100000, '(');
  std::string msg = message_of(o);
  CHECK(msg.find("--include regex '((((") != std::string::npos);
  CHECK(msg.find("... (100000 bytes)' is longer than 1024 bytes") != std::string::npos);
  CHECK(msg.size() < 400);
  o.include = std::string(1000, '(');  // taken, rejected by RE2: its reason quotes the pattern, cut too
  msg = message_of(o);
  CHECK(msg.find("bad --include regex '((((") != std::string::npos);
  CHECK(msg.find("missing )") != std::string::npos);
  CHECK(msg.size() < 400);
  o.include = "x\xff(";  // not UTF-8: escaped in the message
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("'x\\xff('"), InvalidArgument);
  o.include = "\x1b[31m(";
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("\\x1b"), InvalidArgument);
  o = {};
  o.threshold = 2;
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  o.threshold = -0.5;
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  // Peaks.
  o = {};
  o.metrics = {"util"};
  o.peaks = (dir() / "no-peaks.json").string();
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  o.peaks = write("bad-peaks.json", "{\"flop16/s\": ");
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  o.peaks = write("bad-key.json", R"J({"flops16": 1e12})J");
  CHECK_THROWS_WITH_AS(bad_view(o), doctest::Contains("unknown key"), InvalidArgument);
  o.peaks = write("neg.json", R"J({"byte/s": -1})J");
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  o.peaks = write("empty.json", R"J({"name": "x"})J");
  CHECK_THROWS_AS(bad_view(o), InvalidArgument);
  // The command: exit code 2 for each kind.
  const std::string good = write("good.hatchet", kProfileA);
  CHECK(run_prof_view({(dir() / "missing.hatchet").string(), "", {}}) == 2);
  CHECK(run_prof_view({write("bad.hatchet", "[{"), "", {}}) == 2);
  CHECK(run_prof_view({good, (dir() / "missing.hatchet").string(), {}}) == 2);
  ViewOptions unknown;
  unknown.metrics = {"bogus"};
  CHECK(run_prof_view({good, "", unknown}) == 2);
  ViewOptions regex;
  regex.include = "(";
  CHECK(run_prof_view({good, "", regex}) == 2);
}

namespace {

/// Checks that tags nest (void <meta> and the doctype aside) and that text
/// holds no raw '<'; returns the number of <rect> elements.
int check_well_formed(const std::string& html) {
  std::vector<std::string> stack;
  int rects = 0;
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    const std::size_t end = html.find('>', i);
    REQUIRE(end != std::string::npos);
    std::string tag = html.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.rfind("!DOCTYPE", 0) == 0) continue;
    CHECK(tag.find('<') == std::string::npos);
    CHECK_MESSAGE(tag.back() != '/', "self-closing tag " << tag);
    if (tag[0] == '/') {
      REQUIRE_MESSAGE(!stack.empty(), "stray </" << tag << ">");
      CHECK(stack.back() == tag.substr(1));
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find(' '));
    if (name == "meta") continue;
    if (name == "rect") ++rects;
    stack.push_back(name);
  }
  CHECK_MESSAGE(stack.empty(), "unclosed <" << (stack.empty() ? "" : stack.back()) << ">");
  return rects;
}

}  // namespace

TEST_CASE("prof html: a write that fails leaves the file already there whole, and no temporary") {
  // A helper agent's finding: html was written straight to its name, so a full disk (here a file-size limit)
  // left a truncated page under the final name and destroyed the good one.
  const std::string in = write("big.hatchet", kProfileA);
  const fs::path out_dir = dir() / "html_out";
  fs::create_directories(out_dir);
  const std::string out = (out_dir / "page.html").string();
  { std::ofstream(out) << "the page from before"; }
  struct rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto* prev = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 64;  // bytes: less than any page
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  const int rc = run_prof_html({in, out, {}});
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, prev);
  CHECK(rc == 1);
  std::ifstream f(out);
  std::string kept((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(kept == "the page from before");
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(out_dir)) files += e.is_regular_file();
  CHECK(files == 1);  // the temporary was removed
  // A directory as the output: refused, and left as it was.
  CHECK(run_prof_html({in, out_dir.string(), {}}) == 1);
  CHECK(fs::is_directory(out_dir));
  // Written whole when it can be.
  CHECK(run_prof_html({in, out, {}}) == 0);
  CHECK(fs::file_size(out) > 1000);
}

TEST_CASE("prof html: a tooltip names the last 16 frames of a deep node's path") {
  // Whole paths per node grew as depth² × name length (a helper agent's 8000-level file: gigabytes, no output).
  json node = {{"frame", {{"name", "f20"}}}, {"metrics", {{"time (ns)", 1e6}}}};
  for (int i = 19; i >= 1; --i)
    node = {{"frame", {{"name", "f" + std::to_string(i)}}}, {"metrics", json::object()}, {"children", json::array({node})}};
  node = {{"frame", {{"name", "ROOT"}}}, {"metrics", json::object()}, {"children", json::array({node})}};
  const std::string html = render_html(parse_profile(json::array({node}).dump(), "deep.json"));
  CHECK(html.find("<title>…/f5/f6/f7/f8/f9/f10/f11/f12/f13/f14/f15/f16/f17/f18/f19/f20\n") != std::string::npos);
  CHECK(html.find("<title>ROOT/f1/f2/f3/f4/f5/f6/f7/f8/f9/f10/f11/f12/f13/f14/f15\n") != std::string::npos);  // 16 names
}

TEST_CASE("prof view: --diff '' is an error, and file names are shown terminal-safe") {
  const std::string in = write("plain.hatchet", kProfileA);
  ProfViewArgs args{in, "", {}};
  args.diff_given = true;
  CHECK(run_prof_view(args) == 2);  // it was ignored: no diff, exit 0
  const Profile a = A();
  Profile b = parse_profile(kProfileB, "b\x1b[31m.hatchet");
  const std::string text = render_view(a, {}, &b);
  CHECK(text.find("b: b\\x1b[31m.hatchet\n") != std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("prof view: standard output that refuses the text is exit code 1") {
  const std::string in = write("full.hatchet", kProfileA);
  std::fflush(stdout);
  const int saved = ::dup(1);
  const int fd = ::open("/dev/full", O_WRONLY);
  REQUIRE(fd >= 0);
  ::dup2(fd, 1);
  const int rc = run_prof_view({in, {}, {}});
  std::clearerr(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  ::close(fd);
  CHECK(rc == 1);  // it was 0: fwrite's result was not checked
}

TEST_CASE("prof_cmd html: a self-contained, well-formed flame graph, one rect per node") {
  const Profile p = A();
  const std::string html = render_html(p);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(check_well_formed(html) == static_cast<int>(p.node_count()));
  CHECK(p.node_count() == 5);
  CHECK(html.find("http") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  // Names escaped, labels and tooltips present.
  CHECK(html.find("softmax<float>") == std::string::npos);
  CHECK(html.find(">softmax&lt;float&gt;</text>") != std::string::npos);
  CHECK(html.find("<title>ROOT/step/gemm\n80.00% of ROOT&#39;s time") != std::string::npos);
  CHECK(html.find("time (ms): 8\n") != std::string::npos);
  CHECK(html.find("FLOP/s: 1e+12") != std::string::npos);
  CHECK(html.find("avg time (us): 4000") != std::string::npos);
  // Widths follow inclusive time: gemm 80% of 1200 px, softmax 20%, ROOT all.
  CHECK(html.find("width=\"960.00\" height=\"17\"") != std::string::npos);
  CHECK(html.find("x=\"240.00\" y=\"4\" width=\"960.00\"") != std::string::npos);
  CHECK(html.find("x=\"0.00\" y=\"4\" width=\"240.00\"") != std::string::npos);
  CHECK(html.find("x=\"0.00\" y=\"40\" width=\"1200.00\"") != std::string::npos);  // ROOT at the bottom

  // A profile without time: widths by leaf count; a deeper tree.
  const Profile q = parse_profile(R"J([{"frame": {"name": "ROOT"}, "metrics": {},
      "children": [{"frame": {"name": "a"}, "metrics": {"n": 1}, "children": [
        {"frame": {"name": "b"}, "metrics": {}, "children": [{"frame": {"name": "c"}, "metrics": {}, "children": []}]},
        {"frame": {"name": "d"}, "metrics": {}, "children": []}]},
        {"frame": {"name": "e"}, "metrics": {}, "children": []}]}, {}])J",
                                  "q");
  const std::string h2 = render_html(q);
  CHECK(check_well_formed(h2) == 6);
  CHECK(h2.find("leaf count") != std::string::npos);
  CHECK(h2.find("x=\"800.00\" y=\"40\" width=\"400.00\"") != std::string::npos);  // e: 1 of 3 leaves
  CHECK(h2.find("http") == std::string::npos);

  // The command writes the file; an unwritable output is exit code 1, bad input 2.
  const std::string in = write("h.hatchet_msgpack", to_msgpack(kProfileA));
  const std::string out = (dir() / "h.html").string();
  CHECK(run_prof_html({in, out, {}}) == 0);
  CHECK(prof_test::read_file(out) == render_html(load_profile(in)));
  CHECK(check_well_formed(prof_test::read_file(out)) == 5);
  CHECK(run_prof_html({in, (dir() / "no-such-dir" / "x.html").string(), {}}) == 1);
  CHECK(run_prof_html({write("bad2.hatchet", "{"), out, {}}) == 2);
}

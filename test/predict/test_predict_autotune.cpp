// The predictor inside the autotuner (TuneOptions::rank / top_k, predict/ranker.hpp) on the interpreter: only the
// best-scored configs are compiled and timed, power-of-two variants stay in the race, a batch that fails hands over
// to the next, a broken rank function costs nothing but the ranking, and the Recorder turns a race into samples.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "examples/vector_add.hpp"
#include "test/common/random.hpp"
#include "test/common/scratch.hpp"
#include "tilejit/predict/ranker.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace pr = tilejit::predict;
using S = tj::CandidateReport::Status;

namespace {

using testing::Log;

tj::TuneOptions options(const Log& log) {
  tj::TuneOptions o;
  o.device = tj::Device::interpreter();
  o.cache_dir = std::filesystem::path{};
  o.warmup = 0;
  o.reps = 1;
  o.log = log.sink();
  return o;
}

template <int B>
using Add = examples::VecAdd<B>;

/// VecAdd with BLOCK 96, 128, 192, 256 (NPOT and power-of-two side by side).
std::vector<tj::CandidateFor<Add<128>>> candidates() {
  return {tj::cand<Add<96>>({.params = {{"BLOCK", 96}}, .num_warps = 1}), tj::cand<Add<128>>({.params = {{"BLOCK", 128}}, .num_warps = 1}),
          tj::cand<Add<192>>({.params = {{"BLOCK", 192}}, .num_warps = 2}), tj::cand<Add<256>>({.params = {{"BLOCK", 256}}, .num_warps = 2})};
}

/// A rank function that scores each config by a table of BLOCK -> score, and counts its calls.
tj::RankFn by_block(std::vector<std::pair<long long, double>> table, std::shared_ptr<int> calls) {
  return [table, calls](const tj::TuneKey&, std::span<const tj::RankInput> c, std::span<const tj::runtime::ArgSlot>) {
    ++*calls;
    std::vector<double> s;
    for (const auto& x : c) {
      double v = std::nan("");
      for (const auto& [b, sc] : table)
        if (x.config.param("BLOCK") == b) v = sc;
      s.push_back(v);
    }
    return s;
  };
}

struct Problem {
  static constexpr long long n = 1000;
  std::vector<float> x = testing::random_floats(n, -4, 4, 11), y = testing::random_floats(n, -4, 4, 12), out = std::vector<float>(n, -1);
  static auto grid() {
    return [](const tj::Config& c) { return tj::Grid{tj::cdiv(n, c.param("BLOCK"))}; };
  }
  bool correct() const {
    for (long long i = 0; i < n; ++i)
      if (out[static_cast<std::size_t>(i)] != x[static_cast<std::size_t>(i)] + y[static_cast<std::size_t>(i)]) return false;
    return true;
  }
};

const tj::CandidateReport& of(const tj::TuneReport& r, long long block) {
  for (const auto& c : r.candidates)
    if (c.config.param("BLOCK") == block) return c;
  FAIL("no candidate of BLOCK " << block);
  return r.candidates.front();
}

}  // namespace

TEST_CASE("predict in the autotuner: only the top k are compiled and timed; the others are ranked out with their score") {
  Log log;
  Problem p;
  auto calls = std::make_shared<int>(0);
  auto o = options(log);
  o.rank = by_block({{96, 1}, {128, 4}, {192, 3}, {256, 2}}, calls);
  o.top_k = 2;
  tj::Autotuner tuner("vecadd_ranked", candidates(), o);
  const tj::TuneKey key{{"n", Problem::n}};
  tuner.launch(key, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  CHECK(p.correct());
  const auto& r = tuner.report(key);
  MESSAGE(r.str());
  CHECK(*calls == 1);
  CHECK(of(r, 128).status == S::timed);
  CHECK(of(r, 192).status == S::timed);
  CHECK(of(r, 256).status == S::ranked_out);
  CHECK(of(r, 96).status == S::ranked_out);
  CHECK(of(r, 128).rank == 0);
  CHECK(of(r, 192).rank == 1);
  CHECK(of(r, 256).rank == 2);
  CHECK(of(r, 96).rank == 3);
  CHECK(of(r, 256).score == 2);
  CHECK(of(r, 96).reason.find("ranked 4 of 4 by the rank function") != std::string::npos);
  CHECK(of(r, 96).jit_source.empty());  // traced, never compiled
  CHECK(of(r, 96).median_ms < 0);
  CHECK(r.rank_ms > 0);
  CHECK(r.str().find("ranked out") != std::string::npos);
  const long long best = r.best_config().param("BLOCK");
  CHECK((best == 128 || best == 192));
  // Tuning the key again reuses the report: no second ranking.
  tuner.tune(key, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  CHECK(*calls == 1);
}

TEST_CASE("predict in the autotuner: a negative top_k is refused by name") {
  Log log;
  auto o = options(log);
  o.top_k = -1;
  CHECK_THROWS_WITH_AS(tj::Autotuner("vecadd_neg", candidates(), o), doctest::Contains("TuneOptions::top_k = -1"), tj::InvalidArgument);
}

TEST_CASE("predict in the autotuner: a power-of-two config joins a top k of NPOT ones") {
  Log log;
  Problem p;
  auto o = options(log);
  o.rank = by_block({{96, 9}, {192, 8}, {128, 2}, {256, 3}}, std::make_shared<int>(0));
  o.top_k = 1;
  tj::Autotuner tuner("vecadd_pot", candidates(), o);
  const auto& r = tuner.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  MESSAGE(r.str());
  CHECK(of(r, 96).status == S::timed);   // the top 1
  CHECK(of(r, 256).status == S::timed);  // the best-scored power-of-two config
  CHECK(of(r, 192).status == S::ranked_out);
  CHECK(of(r, 128).status == S::ranked_out);
}

TEST_CASE("predict in the autotuner: when every config of the top k fails, the next k are tried") {
  Log log;
  Problem p;
  auto o = options(log);
  o.rank = by_block({{96, 9}, {128, 8}, {192, 1}, {256, 2}}, std::make_shared<int>(0));
  o.top_k = 2;
  tj::Autotuner tuner("vecadd_next", candidates(), o);
  // The two best-scored configs get a grid of 0 programs: their launches fail.
  auto grid = [](const tj::Config& c) {
    const long long b = c.param("BLOCK");
    return b == 96 || b == 128 ? tj::Grid{0} : tj::Grid{tj::cdiv(Problem::n, b)};
  };
  tuner.launch(tj::TuneKey{{"n", Problem::n}}, grid, p.x.data(), p.y.data(), p.out.data(), Problem::n);
  CHECK(p.correct());
  const auto& r = tuner.report(tj::TuneKey{{"n", Problem::n}});
  MESSAGE(r.str());
  CHECK(of(r, 96).status == S::launch_failed);
  CHECK(of(r, 128).status == S::launch_failed);
  CHECK(of(r, 256).status == S::timed);
  CHECK(of(r, 192).status == S::timed);
  CHECK(log.has("skipped BLOCK=96"));
}

TEST_CASE("predict in the autotuner: a rank function that throws or miscounts is logged and every config is timed") {
  Problem p;
  for (int variant = 0; variant < 2; ++variant) {
    Log log;
    auto o = options(log);
    o.rank = [variant](const tj::TuneKey&, std::span<const tj::RankInput> c, std::span<const tj::runtime::ArgSlot>) {
      if (variant == 0) throw tj::InvalidArgument("no model for this kernel");
      return std::vector<double>(c.size() + 1, 1.0);
    };
    o.top_k = 1;
    tj::Autotuner tuner("vecadd_badrank", candidates(), o);
    const auto& r = tuner.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
    CHECK(std::count_if(r.candidates.begin(), r.candidates.end(), [](const auto& c) { return c.status == S::timed; }) == 4);
    CHECK(log.has(variant == 0 ? "the rank function failed (InvalidArgument: no model for this kernel)"
                               : "it returned 5 scores for 4 candidates"));
  }
}

TEST_CASE("predict: the Recorder turns a full race into samples with summaries; the roofline ranker needs no model") {
  Log log;
  Problem p;
  pr::Recorder rec;
  auto o = options(log);
  o.rank = rec.rank_function("vecadd");
  o.top_k = 1;  // all-NaN scores order nothing: the recorder's race still times every candidate
  tj::Autotuner tuner("vecadd_rec", candidates(), o);
  const auto& r = tuner.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  CHECK(std::count_if(r.candidates.begin(), r.candidates.end(), [](const auto& c) { return c.status == S::timed; }) == 4);
  const auto s = rec.samples("vecadd", r);
  REQUIRE(s.size() == 4);
  for (const auto& x : s) {
    CHECK(x.family == "vecadd");
    CHECK(x.key == "n=1000");
    CHECK(x.ms > 0);
    CHECK(x.point.kernel.codegen_ok);
    CHECK(x.point.kernel.loads == 2);
    const long long block = std::stoll(x.config.substr(x.config.find('=') + 1));
    CHECK(x.point.launch.programs == tj::cdiv(Problem::n, block));
    // Requested bytes: three [BLOCK] f32 tiles per program, the masked tail included.
    CHECK(x.point.launch.bytes == doctest::Approx(12.0 * block * tj::cdiv(Problem::n, block)));
  }
  tj::TuneReport other = r;
  other.key = "n=5";
  CHECK_THROWS_WITH_AS(rec.samples("vecadd", other), doctest::Contains("{n=5}"), tj::InvalidArgument);

  // The roofline ranker orders by estimated time: with equal work per element, the config with the least requested
  // (masked tail) traffic is first.
  auto o2 = options(log);
  o2.rank = pr::roofline_ranker(pr::device_spec("H200"));
  o2.top_k = 1;
  tj::Autotuner t2("vecadd_roof", candidates(), o2);
  const auto& r2 = t2.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  MESSAGE(r2.str());
  for (const auto& c : r2.candidates) CHECK(std::isfinite(c.score));
  CHECK(std::count_if(r2.candidates.begin(), r2.candidates.end(), [](const auto& c) { return c.status == S::timed; }) >= 1);
  CHECK_THROWS_AS(pr::ranker(nullptr), tj::InvalidArgument);
}

TEST_CASE("predict: a trained model ranks a race end to end (interpreter)") {
  std::string why;
  REQUIRE_MESSAGE(pr::xgboost_available(&why), why);
  Log log;
  Problem p;
  // Data: two races recorded, the times made up so that bigger blocks are faster (a rule the model learns).
  pr::Dataset d;
  d.device = pr::device_spec("H200");
  for (long long n : {1000LL, 3000LL}) {
    pr::Recorder rec;
    auto o = options(log);
    const std::string fam = n == 1000 ? "fam_a" : "fam_b";
    o.rank = rec.rank_function(fam);
    tj::Autotuner t("vecadd_data", candidates(), o);
    const auto& r = t.tune(tj::TuneKey{{"n", n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
    for (auto s : rec.samples(fam, r)) {
      s.ms = 1000.0 / static_cast<double>(std::stoll(s.config.substr(s.config.find('=') + 1)));
      d.samples.push_back(s);
    }
  }
  auto model = std::make_shared<const pr::RankModel>(pr::RankModel::train(d, {.rounds = 30}));
  auto o = options(log);
  o.rank = pr::ranker(model, pr::device_spec("H200"));
  o.top_k = 1;
  tj::Autotuner tuner("vecadd_model", candidates(), o);
  const auto& r = tuner.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  MESSAGE(r.str());
  CHECK(of(r, 256).rank == 0);
  CHECK(of(r, 256).status == S::timed);
  CHECK(of(r, 96).status == S::ranked_out);
}

TEST_CASE("predict in the autotuner: what the helper's break-it pass found stays fixed") {
  Problem p;
  SUBCASE("a rank function that throws a non-std exception is logged; ranks stay unset") {
    Log log;
    auto o = options(log);
    o.rank = [](const tj::TuneKey&, std::span<const tj::RankInput>, std::span<const tj::runtime::ArgSlot>) -> std::vector<double> {
      throw 42;
    };
    o.top_k = 1;
    tj::Autotuner tuner("vecadd_throw42", candidates(), o);
    const auto& r = tuner.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
    CHECK(std::count_if(r.candidates.begin(), r.candidates.end(), [](const auto& c) { return c.status == S::timed; }) == 4);
    for (const auto& c : r.candidates) CHECK(c.rank == -1);
    CHECK(log.has("not a std::exception"));
  }
  SUBCASE("one candidate that cannot be summarised is ranked last; the others are ranked and recorded") {
    Log log;
    auto grid = [](const tj::Config& c) {
      const long long b = c.param("BLOCK");
      return b == 256 ? tj::Grid{0} : tj::Grid{tj::cdiv(Problem::n, b)};
    };
    auto o = options(log);
    o.rank = pr::roofline_ranker(pr::device_spec("H200"));
    o.top_k = 2;
    tj::Autotuner tuner("vecadd_grid0", candidates(), o);
    const auto& r = tuner.tune(tj::TuneKey{{"n", Problem::n}}, grid, p.x.data(), p.y.data(), p.out.data(), Problem::n);
    MESSAGE(r.str());
    CHECK(std::isnan(of(r, 256).score));
    CHECK(of(r, 256).rank == 3);
    for (long long b : {96, 128, 192}) CHECK(std::isfinite(of(r, b).score));
    CHECK_FALSE(log.has("the rank function failed"));

    pr::Recorder rec;
    auto o2 = options(log);
    o2.rank = rec.rank_function("vecadd");
    tj::Autotuner t2("vecadd_grid0_rec", candidates(), o2);
    const auto& r2 = t2.tune(tj::TuneKey{{"n", Problem::n}}, grid, p.x.data(), p.y.data(), p.out.data(), Problem::n);
    CHECK(of(r2, 256).status == S::launch_failed);
    CHECK(rec.samples("vecadd", r2).size() == 3);
  }
  SUBCASE("one recorder serving two tuners keeps their points apart") {
    Log log;
    pr::Recorder rec;
    std::vector<double> xd(Problem::n, 1.0), yd(Problem::n, 2.0), od(Problem::n);
    auto o1 = options(log);
    o1.rank = rec.rank_function("f32");
    auto o2 = options(log);
    o2.rank = rec.rank_function("f64");
    tj::Autotuner t1("vecadd_f32_rec", candidates(), o1);
    tj::Autotuner t2("vecadd_f64_rec", {tj::cand<examples::VecAdd<128, double>>({.params = {{"BLOCK", 128}}, .num_warps = 1})}, o2);
    const tj::TuneKey key{{"n", Problem::n}};
    const auto& r1 = t1.tune(key, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
    const auto& r2 = t2.tune(key, Problem::grid(), xd.data(), yd.data(), od.data(), Problem::n);
    for (const auto& s : rec.samples("f32", r1))
      if (s.config.starts_with("BLOCK=128 ")) CHECK(s.point.launch.bytes == doctest::Approx(12.0 * 128 * 8));
    const auto s64 = rec.samples("f64", r2);
    REQUIRE(s64.size() == 1);
    CHECK(s64[0].point.launch.bytes == doctest::Approx(24.0 * 128 * 8));
    CHECK_THROWS_AS(rec.rank_function(""), tj::InvalidArgument);
  }
}

TEST_CASE("predict: a model of another device is not used to rank; the tuner says so and times everything") {
  std::string why;
  REQUIRE_MESSAGE(pr::xgboost_available(&why), why);
  Log log;
  Problem p;
  pr::Dataset d;
  d.device = pr::device_spec("H200");
  pr::Recorder rec;
  auto o = options(log);
  o.rank = rec.rank_function("v");
  tj::Autotuner t("vecadd_dev_data", candidates(), o);
  const auto& r = t.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  for (auto s : rec.samples("v", r)) d.samples.push_back(s);
  auto model = std::make_shared<const pr::RankModel>(pr::RankModel::train(d, {.rounds = 5}));
  auto o2 = options(log);
  o2.rank = pr::ranker(model);  // the interpreter's spec, not the H200's
  o2.top_k = 1;
  tj::Autotuner tuner("vecadd_other_device", candidates(), o2);
  const auto& r2 = tuner.tune(tj::TuneKey{{"n", Problem::n}}, Problem::grid(), p.x.data(), p.y.data(), p.out.data(), Problem::n);
  CHECK(std::count_if(r2.candidates.begin(), r2.candidates.end(), [](const auto& c) { return c.status == S::timed; }) == 4);
  CHECK(log.has("trained on H200 data, the candidates run on interpreter"));
}

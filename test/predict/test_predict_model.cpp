// The predictor's data, metrics and learned ranker (predict/dataset.hpp, evaluate.hpp, model.hpp): file round trips
// and their errors, Spearman and regret against hand-computed values, and an XGBoost ranking model that must learn
// a rule from some families and apply it to a family it never saw.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "test/common/scratch.hpp"
#include "tilejit/predict/evaluate.hpp"
#include "tilejit/predict/model.hpp"

namespace tj = tilejit;
namespace pr = tilejit::predict;

namespace {

using testing::TempDir;

void write(const std::filesystem::path& p, const std::string& s) { std::ofstream(p) << s; }

/// A synthetic device-independent rule the model must learn: a config's time is its roofline estimate, times 1.6
/// when it uses 8 warps with a register-heavy accumulator (it "spills"), times 1.25 with a single stage (no
/// prefetch); plus 2% noise. Each family has its own tile sizes and problem sizes, so what carries over between
/// families is the rule, not the values.
pr::Dataset synthetic(unsigned seed, int families = 4, int keys = 6) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> noise(0.99, 1.01);
  pr::Dataset d;
  d.device = pr::device_spec("H200");
  for (int f = 0; f < families; ++f) {
    const int base = 32 << (f % 3);
    for (int k = 0; k < keys; ++k) {
      const double size = std::pow(2.0, 10 + k + f);
      int c = 0;
      for (int bm : {base, 2 * base})
        for (int nw : {4, 8})
          for (int st : {1, 3}) {
            pr::Sample s;
            s.family = "fam" + std::to_string(f);
            s.key = "size=" + std::to_string(static_cast<long long>(size));
            s.config = "c" + std::to_string(c++);
            auto& p = s.point;
            p.kernel.num_warps = nw;
            p.kernel.num_stages = st;
            p.kernel.threads = 32 * nw;
            p.kernel.codegen_ok = true;
            p.kernel.dot_m = bm, p.kernel.dot_n = bm, p.kernel.dot_k = 32, p.kernel.dot_bits = 16;
            p.kernel.carried_regs = bm * bm / (32.0 * nw);
            p.kernel.shared_bytes = st * bm * 64 * 2;
            p.launch.programs = std::max(1LL, static_cast<long long>(size * size / (bm * bm)));
            p.launch.flops = 2 * size * size * 1024;
            p.launch.bytes = size * size * 4 + size * 1024 * 2 * 2 * (size / bm);
            p.launch.flops_width = 16;
            double t = pr::roofline_us(p, d.device) / 1e3;
            if (nw == 8 && p.kernel.carried_regs >= 64) t *= 1.6;
            if (st == 1) t *= 1.25;
            s.ms = t * noise(g);
            d.samples.push_back(std::move(s));
          }
    }
  }
  return d;
}

}  // namespace

TEST_CASE("predict: Spearman's rho and top-k regret against hand-computed values") {
  const std::vector<double> a{1, 2, 3, 4}, rev{4, 3, 2, 1}, tie{1, 1, 2, 2};
  CHECK(pr::spearman(a, a) == doctest::Approx(1));
  CHECK(pr::spearman(a, rev) == doctest::Approx(-1));
  // Average ranks 1.5 1.5 3.5 3.5 against 1 2 3 4: 4 / sqrt(4 · 5) = 0.894.
  CHECK(pr::spearman(tie, a) == doctest::Approx(4 / std::sqrt(20.0)));
  CHECK(std::isnan(pr::spearman(std::vector<double>{1, 1}, std::vector<double>{1, 2})));
  CHECK_THROWS_AS(pr::spearman(a, std::vector<double>{1}), tj::InvalidArgument);

  const std::vector<double> ms{2, 1, 4, 3};
  CHECK(pr::topk_regret(ms, std::vector<double>{0, 9, 0, 0}, 1) == doctest::Approx(0));  // picked the fastest
  CHECK(pr::topk_regret(ms, std::vector<double>{0, 0, 9, 8}, 1) == doctest::Approx(3));  // 4 ms against 1
  CHECK(pr::topk_regret(ms, std::vector<double>{0, 0, 9, 8}, 2) == doctest::Approx(2));  // best of {4, 3}
  CHECK(pr::topk_regret(ms, std::vector<double>{0, 0, 9, 8}, 99) == doctest::Approx(0));  // k past the group: all
  // NaN scores go last.
  CHECK(pr::topk_regret(ms, std::vector<double>{NAN, NAN, 1, NAN}, 1) == doctest::Approx(3));
  CHECK_THROWS_WITH_AS(pr::topk_regret(ms, std::vector<double>{1, 2, 3, 4}, 0), doctest::Contains("k = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::topk_regret(std::vector<double>{1, -1}, std::vector<double>{1, 2}, 1), doctest::Contains("-1 ms"),
                       tj::InvalidArgument);
  CHECK_THROWS_AS(pr::topk_regret(std::vector<double>{}, std::vector<double>{}, 1), tj::InvalidArgument);

  // A random order's expected regret: {1, 2}: k = 1 picks 2 ms half the time.
  CHECK(pr::random_topk_regret(std::vector<double>{1, 2}, 1) == doctest::Approx(0.5));
  // {1, 2, 4}, k = 2: the best of a random pair is 1 in 2 of 3 pairs, 2 in 1: 1/3 · 1 = 0.333.
  CHECK(pr::random_topk_regret(std::vector<double>{4, 1, 2}, 2) == doctest::Approx(1.0 / 3));
  CHECK(pr::random_topk_regret(std::vector<double>{4, 1, 2}, 3) == doctest::Approx(0));
}

TEST_CASE("predict: a dataset round-trips through its file, NaN included; bad files are refused by name") {
  TempDir t;
  pr::Dataset d = synthetic(1, 2, 2);
  d.samples[3].point.launch.flops = std::nan("");
  d.samples[3].point.launch.bytes = std::nan("");
  d.samples[5].point.kernel.codegen_ok = false;
  pr::save_dataset(d, t.path / "d.json");
  const pr::Dataset e = pr::load_dataset(t.path / "d.json");
  CHECK(e.device == d.device);
  REQUIRE(e.samples.size() == d.samples.size());
  for (std::size_t i = 0; i < d.samples.size(); ++i) {
    CHECK(e.samples[i].family == d.samples[i].family);
    CHECK(e.samples[i].key == d.samples[i].key);
    CHECK(e.samples[i].config == d.samples[i].config);
    CHECK(e.samples[i].ms == d.samples[i].ms);
    CHECK(e.samples[i].point.kernel == d.samples[i].point.kernel);
    CHECK(e.samples[i].point.launch.programs == d.samples[i].point.launch.programs);
  }
  CHECK(std::isnan(e.samples[3].point.launch.flops));
  CHECK(e.groups().size() == 4);
  CHECK(e.families() == std::vector<std::string>{"fam0", "fam1"});

  // Two files of one device concatenate; of two devices they are refused.
  pr::Dataset other = d;
  other.device = pr::device_spec("H100");
  pr::save_dataset(other, t.path / "h100.json");
  pr::Dataset more = synthetic(2, 2, 2);
  for (auto& s : more.samples) s.family += "_more";
  pr::save_dataset(more, t.path / "more.json");
  CHECK(pr::load_datasets({t.path / "d.json", t.path / "more.json"}).samples.size() == d.samples.size() + more.samples.size());
  CHECK_THROWS_WITH_AS(pr::load_datasets({t.path / "d.json", t.path / "h100.json"}), doctest::Contains("one model per device"),
                       tj::InvalidArgument);

  write(t.path / "bad.json", "{");
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "bad.json"), doctest::Contains("bad.json"), tj::InvalidArgument);
  write(t.path / "other.json", R"({"format": "something-else"})");
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "other.json"), doctest::Contains("not a \"tilejit-predict-data\" file"),
                       tj::InvalidArgument);
  // A time that is not positive names the sample.
  std::ifstream in(t.path / "d.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"ms\":");
  REQUIRE(at != std::string::npos);
  const auto end = text.find_first_of(",}", at);
  write(t.path / "neg.json", text.substr(0, at) + "\"ms\": -1" + text.substr(end));
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "neg.json"), doctest::Contains("\"ms\" = -1 is not a positive time"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "absent.json"), doctest::Contains("cannot open"), tj::InvalidArgument);
  // A failed write leaves the file that was there whole.
  const auto before = std::filesystem::file_size(t.path / "d.json");
  CHECK_THROWS_AS(pr::save_dataset(d, t.path / "d.json" / "x"), tj::InvalidArgument);
  CHECK(std::filesystem::file_size(t.path / "d.json") == before);
}

TEST_CASE("predict: the XGBoost ranker learns a rule on some families and ranks a family it never saw") {
  std::string why;
  REQUIRE_MESSAGE(pr::xgboost_available(&why), why);  // CI installs libxgboost-dev (scripts/install-deps.sh)
  const pr::Dataset d = synthetic(7);
  const auto loko = pr::leave_one_kernel_out(d, std::vector<int>{1, 3});
  REQUIRE(loko.size() == 4);
  for (const auto& h : loko) {
    INFO(h.family);
    CHECK(h.model.groups == 6);
    CHECK(h.model.spearman > 0.8);
    // Tuning only the top 3 costs at most a few percent, far below a random order's expectation.
    CHECK(h.model.regret[1] < 0.05);
    CHECK(h.model.regret[1] < h.random.regret[1] / 3);
    CHECK(h.random.spearman == 0);
  }
  const std::string table = pr::format_evaluation(loko, std::vector<int>{1, 3});
  CHECK(table.find("mean over families") != std::string::npos);
  CHECK(table.find("regret@3") != std::string::npos);

  // Fewer than two families: nothing to leave out.
  pr::Dataset one = synthetic(7, 1);
  CHECK_THROWS_WITH_AS(pr::leave_one_kernel_out(one, std::vector<int>{1}), doctest::Contains("two families"), tj::InvalidArgument);
}

TEST_CASE("predict: a model saved and loaded scores alike; bad models, options and rows are refused") {
  std::string why;
  REQUIRE_MESSAGE(pr::xgboost_available(&why), why);
  TempDir t;
  const pr::Dataset d = synthetic(3, 2, 3);
  const pr::RankModel m = pr::RankModel::train(d, {.rounds = 40});
  CHECK(m.device() == "H200");
  CHECK(m.trained_samples() == d.samples.size());
  CHECK(m.trained_groups() == 6);
  CHECK(m.trained_families() == std::vector<std::string>{"fam0", "fam1"});
  const auto x = d.features();
  const auto s = m.score(x);
  REQUIRE(s.size() == x.size());
  m.save(t.path / "m.json");
  const pr::RankModel back = pr::RankModel::load(t.path / "m.json");
  const auto s2 = back.score(x);
  REQUIRE(s2.size() == s.size());
  for (std::size_t i = 0; i < s.size(); ++i) CHECK(s2[i] == doctest::Approx(s[i]).epsilon(1e-6));
  CHECK(back.trained_groups() == 6);

  CHECK_THROWS_WITH_AS(m.score({{1.0f, 2.0f}}), doctest::Contains("has 2 values"), tj::InvalidArgument);
  CHECK(m.score({}).empty());
  CHECK_THROWS_WITH_AS(pr::RankModel::train(d, {.rounds = 0}), doctest::Contains("rounds = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::RankModel::train(d, {.eta = 0}), doctest::Contains("eta = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::RankModel::train(d, {.max_depth = 40}), doctest::Contains("max_depth = 40"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::RankModel::train_on(d, std::vector<std::size_t>{0}), doctest::Contains("no group"), tj::InvalidArgument);

  // A model of other features (an older build's) must be retrained, not misread.
  std::ifstream in(t.path / "m.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"num_warps\"");
  REQUIRE(at != std::string::npos);
  write(t.path / "old.json", text.substr(0, at) + "\"warps\"" + text.substr(at + 11));
  CHECK_THROWS_WITH_AS(pr::RankModel::load(t.path / "old.json"), doctest::Contains("retrain it"), tj::InvalidArgument);
  write(t.path / "junk.json", "[1, 2]");
  CHECK_THROWS_WITH_AS(pr::RankModel::load(t.path / "junk.json"), doctest::Contains("not a \"tilejit-predict-model\" file"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::RankModel::load(t.path / "none.json"), doctest::Contains("cannot open"), tj::InvalidArgument);
}

TEST_CASE("predict: what the helper's break-it pass found stays fixed (data and metrics)") {
  TempDir t;
  pr::Dataset d = synthetic(5, 2, 2);
  // NaN scores rank below every number (not as a made-up order), and an all-NaN order has no correlation.
  const std::vector<double> up{1, 2, 3};
  CHECK(std::isnan(pr::spearman(std::vector<double>{NAN, NAN, NAN}, up)));
  CHECK(pr::spearman(std::vector<double>{NAN, 1, 2}, up) == doctest::Approx(1));
  // Exact random expectations for groups far past a double's factorials.
  std::vector<double> big(2000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 1 + static_cast<double>(i) / 1000;
  const double r = pr::random_topk_regret(big, 1000);
  CHECK(std::isfinite(r));
  CHECK(r >= 0);
  CHECK(r < 0.01);

  // A program count past 2^53, a config measured twice, a time of 0: refused by name, on load and on save.
  pr::Dataset bad = d;
  bad.samples[1].ms = 0;
  CHECK_THROWS_WITH_AS(pr::save_dataset(bad, t.path / "bad.json"), doctest::Contains("sample 1: \"ms\" = 0"), tj::InvalidArgument);
  CHECK_FALSE(std::filesystem::exists(t.path / "bad.json"));
  bad = d;
  bad.samples[0].point.launch.bytes = INFINITY;
  CHECK_THROWS_WITH_AS(pr::save_dataset(bad, t.path / "bad.json"), doctest::Contains("\"bytes\" = inf"), tj::InvalidArgument);
  bad = d;
  bad.samples.push_back(bad.samples[2]);
  CHECK_THROWS_WITH_AS(pr::save_dataset(bad, t.path / "dup.json"), doctest::Contains("appears twice"), tj::InvalidArgument);
  CHECK_FALSE(std::filesystem::exists(t.path / "dup.json"));
  // A file that holds a duplicate anyway (written by hand) is refused on load.
  pr::save_dataset(d, t.path / "d.json");
  {
    std::ifstream f(t.path / "d.json");
    nlohmann::json j = nlohmann::json::parse(f);
    j["samples"].push_back(j["samples"][0]);
    write(t.path / "dup.json", j.dump());
  }
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "dup.json"), doctest::Contains("appears twice"), tj::InvalidArgument);
  pr::save_dataset(d, t.path / "d.json");
  CHECK_THROWS_WITH_AS(pr::load_datasets({t.path / "d.json", t.path / "d.json"}), doctest::Contains("measures config"),
                       tj::InvalidArgument);
  std::ifstream in(t.path / "d.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"programs\":");
  REQUIRE(at != std::string::npos);
  write(t.path / "huge.json", text.substr(0, at) + "\"programs\": 1e30" + text.substr(text.find_first_of(",}", at)));
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "huge.json"), doctest::Contains("not a count in [1, 2^53]"), tj::InvalidArgument);
  // The first sample's error names it too; a file without a device says so.
  write(t.path / "nodev.json", R"({"format": "tilejit-predict-data", "version": 1, "samples": []})");
  CHECK_THROWS_WITH_AS(pr::load_dataset(t.path / "nodev.json"), doctest::Contains("no \"device\" object"), tj::InvalidArgument);
  // Two files of one device name but other specs: the field that differs is named.
  pr::Dataset other = synthetic(6, 1, 1);
  other.samples[0].family = "other";
  other.device.num_sms = 114;
  pr::save_dataset(other, t.path / "o.json");
  CHECK_THROWS_WITH_AS(pr::load_datasets({t.path / "d.json", t.path / "o.json"}), doctest::Contains("num_sms 132 vs 114"),
                       tj::InvalidArgument);
  // Output paths: no missing directory is created, an empty name is refused, a link is written through.
  CHECK_THROWS_WITH_AS(pr::save_dataset(d, t.path / "missing" / "x.json"), doctest::Contains("does not exist"), tj::InvalidArgument);
  CHECK_FALSE(std::filesystem::exists(t.path / "missing"));
  CHECK_THROWS_WITH_AS(pr::save_dataset(d, ""), doctest::Contains("empty"), tj::InvalidArgument);
  std::filesystem::create_symlink(t.path / "target.json", t.path / "link.json");
  pr::save_dataset(d, t.path / "link.json");
  CHECK(std::filesystem::is_symlink(t.path / "link.json"));
  CHECK(pr::load_dataset(t.path / "target.json").samples.size() == d.samples.size());

  // Features are finite or NaN, never inf: zero work over a zero best.
  pr::Point zero;
  zero.kernel.threads = 128;
  zero.kernel.codegen_ok = true;
  zero.launch.flops = 0, zero.launch.bytes = 0;
  zero.kernel.carried_regs = -1e308;
  for (const auto& row : pr::group_features(std::vector<pr::Point>{zero, zero}, d.device))
    for (float v : row) CHECK_FALSE(std::isinf(v));
}

TEST_CASE("predict: damaged models, bad thread counts and mismatched tables are refused, never a crash") {
  std::string why;
  REQUIRE_MESSAGE(pr::xgboost_available(&why), why);
  TempDir t;
  const pr::Dataset d = synthetic(3, 2, 2);
  CHECK_THROWS_WITH_AS(pr::RankModel::train(d, {.rounds = 5, .threads = 2000}), doctest::Contains("threads = 2000"), tj::InvalidArgument);
  pr::RankModel m = pr::RankModel::train(d, {.rounds = 5, .max_depth = 3});
  m.save(t.path / "m.json");
  std::ifstream in(t.path / "m.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto damaged = [&](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    write(t.path / "x.json", text.substr(0, at) + to + text.substr(at + from.size()));
    return t.path / "x.json";
  };
  CHECK_THROWS_WITH_AS(pr::RankModel::load(damaged("\"left_children\":[1", "\"left_children\":[100000")),
                       doctest::Contains("has children 100000"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::RankModel::load(damaged("\"num_feature\":\"29\"", "\"num_feature\":\"3\"")), doctest::Contains("reads 3 features"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(pr::RankModel::load(damaged("\"num_trees\":\"5\"", "\"num_trees\":\"100000\"")),
                       doctest::Contains("declares 100000 trees and holds 5"), tj::InvalidArgument);
  // A moved-from model says so.
  pr::RankModel moved = std::move(m);
  CHECK_THROWS_WITH_AS((void)m.device(), doctest::Contains("moved from"), tj::InvalidArgument);
  CHECK(moved.device() == "H200");
  // A table asked for other k than evaluated.
  const auto r = pr::leave_one_kernel_out(d, std::vector<int>{1});
  CHECK_THROWS_WITH_AS(pr::format_evaluation(r, std::vector<int>{1, 3}), doctest::Contains("evaluated at k = 1"), tj::InvalidArgument);
  // The random baseline honours the tolerance: within 100% of the best, any order's top 1 counts.
  const auto tol = pr::leave_one_kernel_out(d, std::vector<int>{1}, {.rounds = 5}, 10.0);
  for (const auto& h : tol) CHECK(h.random.zero_regret[0] == doctest::Approx(1));
  CHECK_THROWS_WITH_AS(pr::leave_one_kernel_out(d, std::vector<int>{1}, {}, NAN), doctest::Contains("tolerance = nan"), tj::InvalidArgument);
}

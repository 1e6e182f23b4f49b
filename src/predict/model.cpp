// src/predict/model.cpp — see tilejit/predict/model.hpp. XGBoost's C API through dlopen (src/runtime/dl.hpp).
#include "tilejit/predict/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "../runtime/dl.hpp"
#include "output_path.hpp"
#include "tilejit/runtime/atomic_file.hpp"

namespace tilejit::predict {
namespace {

using json = nlohmann::json;
constexpr const char* kFormat = "tilejit-predict-model";
constexpr int kVersion = 1;

/// The entry points used, resolved once.
struct Xgb {
  std::string error;  // non-empty: not usable
  decltype(&::XGBGetLastError) last_error = nullptr;
  decltype(&::XGDMatrixCreateFromMat) dmatrix_from_mat = nullptr;
  decltype(&::XGDMatrixSetFloatInfo) set_float_info = nullptr;
  decltype(&::XGDMatrixSetUIntInfo) set_uint_info = nullptr;
  decltype(&::XGDMatrixFree) dmatrix_free = nullptr;
  decltype(&::XGBoosterCreate) booster_create = nullptr;
  decltype(&::XGBoosterFree) booster_free = nullptr;
  decltype(&::XGBoosterSetParam) set_param = nullptr;
  decltype(&::XGBoosterUpdateOneIter) update = nullptr;
  decltype(&::XGBoosterPredict) predict = nullptr;
  decltype(&::XGBoosterSaveModelToBuffer) save = nullptr;
  decltype(&::XGBoosterLoadModelFromBuffer) load = nullptr;
};

const Xgb& xgb() {
  static const Xgb x = [] {
    Xgb r;
    std::vector<std::string> names{"libxgboost.so.0", "libxgboost.so"};
    if (const char* env = std::getenv("TILEJIT_XGBOOST"); env && *env) names = {env};  // that one, or a clear failure
    const auto& lib = runtime::detail::open_library(names);
    if (!lib) {
      r.error = "XGBoost (libxgboost.so.0, Debian's libxgboost0) could not be loaded: " + lib.error;
      return r;
    }
    std::vector<std::string> missing;
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lib.symbol(name));
      if (!fn) missing.emplace_back(name);
    };
    get(r.last_error, "XGBGetLastError");
    get(r.dmatrix_from_mat, "XGDMatrixCreateFromMat");
    get(r.set_float_info, "XGDMatrixSetFloatInfo");
    get(r.set_uint_info, "XGDMatrixSetUIntInfo");
    get(r.dmatrix_free, "XGDMatrixFree");
    get(r.booster_create, "XGBoosterCreate");
    get(r.booster_free, "XGBoosterFree");
    get(r.set_param, "XGBoosterSetParam");
    get(r.update, "XGBoosterUpdateOneIter");
    get(r.predict, "XGBoosterPredict");
    get(r.save, "XGBoosterSaveModelToBuffer");
    get(r.load, "XGBoosterLoadModelFromBuffer");
    if (!missing.empty())
      r.error = fmt::format("{} lacks {} (XGBoost 1.7's C API is needed)", lib.path, fmt::join(missing, ", "));
    return r;
  }();
  return x;
}

const Xgb& need_xgb() {
  const Xgb& x = xgb();
  if (!x.error.empty()) throw Unsupported("predict: " + x.error);
  return x;
}

void check(int rc, const char* what) {
  if (rc != 0) {
    const char* e = xgb().last_error ? xgb().last_error() : nullptr;
    throw Error(fmt::format("predict: XGBoost's {} failed: {}", what, e ? e : "no message"));
  }
}

/// Owning handles.
struct DMatrix {
  DMatrixHandle h = nullptr;
  ~DMatrix() {
    if (h) xgb().dmatrix_free(h);
  }
};

DMatrix dense(const std::vector<std::vector<float>>& x, std::size_t ncol) {
  std::vector<float> flat;
  flat.reserve(x.size() * ncol);
  for (const auto& r : x) {
    if (r.size() != ncol)
      throw InvalidArgument(fmt::format("predict: a feature row has {} values, the model takes {}", r.size(), ncol));
    flat.insert(flat.end(), r.begin(), r.end());
  }
  DMatrix m;
  check(need_xgb().dmatrix_from_mat(flat.data(), x.size(), ncol, std::numeric_limits<float>::quiet_NaN(), &m.h),
        "XGDMatrixCreateFromMat");
  return m;
}

/// Checks what XGBoost trusts without checking in its JSON model: the feature count, the tree count against the trees,
/// and every tree's arrays (lengths, child indices, split features). A damaged file that passed XGBoost's own parser
/// could otherwise read out of bounds at load or at scoring. Throws std::runtime_error naming what is wrong.
void check_trees(const json& xgb, std::size_t num_feature) {
  const json& learner = xgb.at("learner");
  const std::string nf = learner.at("learner_model_param").at("num_feature").get<std::string>();
  if (nf != std::to_string(num_feature))
    throw std::runtime_error(fmt::format("its trees read {} features, this build computes {}", nf, num_feature));
  const json& model = learner.at("gradient_booster").at("model");
  const json& trees = model.at("trees");
  const std::string nt = model.at("gbtree_model_param").at("num_trees").get<std::string>();
  if (!trees.is_array() || nt != std::to_string(trees.size()) || model.at("tree_info").size() != trees.size())
    throw std::runtime_error(fmt::format("it declares {} trees and holds {} (tree_info: {})", nt, trees.is_array() ? trees.size() : 0,
                                         model.at("tree_info").size()));
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const json& tree = trees[t];
    const long long n = std::stoll(tree.at("tree_param").at("num_nodes").get<std::string>());
    if (const std::string tf = tree.at("tree_param").at("num_feature").get<std::string>(); tf != std::to_string(num_feature))
      throw std::runtime_error(fmt::format("tree {} reads {} features, this build computes {}", t, tf, num_feature));
    if (n < 1 || n > (1LL << 24)) throw std::runtime_error(fmt::format("tree {} has {} nodes", t, n));
    for (const char* field : {"left_children", "right_children", "parents", "split_indices", "split_conditions", "default_left",
                              "base_weights", "loss_changes", "sum_hessian"})
      if (!tree.at(field).is_array() || static_cast<long long>(tree.at(field).size()) != n)
        throw std::runtime_error(fmt::format("tree {}: {} does not hold its {} nodes", t, field, n));
    const json &left = tree.at("left_children"), &right = tree.at("right_children"), &split = tree.at("split_indices");
    for (long long i = 0; i < n; ++i) {
      const long long l = left[static_cast<std::size_t>(i)].get<long long>(), r = right[static_cast<std::size_t>(i)].get<long long>();
      if ((l == -1) != (r == -1) || (l != -1 && (l <= i || l >= n || r <= i || r >= n)))
        throw std::runtime_error(fmt::format("tree {}: node {} has children {} and {} (of {} nodes)", t, i, l, r, n));
      if (l != -1) {
        const long long f = split[static_cast<std::size_t>(i)].get<long long>();
        if (f < 0 || f >= static_cast<long long>(num_feature))
          throw std::runtime_error(fmt::format("tree {}: node {} splits on feature {} (of {})", t, i, f, num_feature));
      }
    }
  }
}

}  // namespace

bool xgboost_available(std::string* why) {
  const Xgb& x = xgb();
  if (why) *why = x.error;
  return x.error.empty();
}

struct RankModel::Impl {
  BoosterHandle booster = nullptr;
  std::string device;
  std::size_t samples = 0, groups = 0;
  std::vector<std::string> families;
  json params;
  mutable std::mutex mu;  // one XGBoost call on the booster at a time
  ~Impl() {
    if (booster) xgb().booster_free(booster);
  }
};

RankModel::RankModel(std::unique_ptr<Impl> p) : p_(std::move(p)) {}
RankModel::RankModel(RankModel&&) noexcept = default;
RankModel& RankModel::operator=(RankModel&&) noexcept = default;
RankModel::~RankModel() = default;

RankModel RankModel::train(const Dataset& d, const TrainOptions& o) {
  std::vector<std::size_t> all(d.samples.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return train_on(d, all, o);
}

RankModel RankModel::train_on(const Dataset& d, const std::vector<std::size_t>& rows, const TrainOptions& o) {
  if (o.rounds < 1 || o.rounds > 10000) throw InvalidArgument(fmt::format("predict: rounds = {}: must be in [1, 10000]", o.rounds));
  if (o.max_depth < 1 || o.max_depth > 16) throw InvalidArgument(fmt::format("predict: max_depth = {}: must be in [1, 16]", o.max_depth));
  if (!(o.eta > 0 && o.eta <= 1)) throw InvalidArgument(fmt::format("predict: eta = {}: must be in (0, 1]", o.eta));
  if (!(o.min_child_weight >= 0)) throw InvalidArgument(fmt::format("predict: min_child_weight = {}: must be >= 0", o.min_child_weight));
  if (o.threads < 0 || o.threads > 1024) throw InvalidArgument(fmt::format("predict: threads = {}: must be in [0, 1024]", o.threads));
  const Xgb& x = need_xgb();
  const std::set<std::size_t> keep(rows.begin(), rows.end());
  const auto feats = d.features();
  std::vector<std::vector<float>> xs;
  std::vector<float> labels;
  std::vector<unsigned> sizes;
  std::set<std::string> fams;
  for (const auto& g : d.groups()) {
    std::vector<std::size_t> in;
    for (std::size_t i : g)
      if (keep.contains(i)) in.push_back(i);
    if (in.size() < 2) continue;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i : in) best = std::min(best, d.samples[i].ms);
    for (std::size_t i : in) {
      xs.push_back(feats[i]);
      labels.push_back(static_cast<float>(best / d.samples[i].ms));
    }
    sizes.push_back(static_cast<unsigned>(in.size()));
    fams.insert(d.samples[in.front()].family);
  }
  if (sizes.empty()) throw InvalidArgument("predict: nothing to train on: no group (family and key) has two timed configs");
  DMatrix m = dense(xs, feature_names().size());
  check(x.set_float_info(m.h, "label", labels.data(), labels.size()), "XGDMatrixSetFloatInfo(label)");
  check(x.set_uint_info(m.h, "group", sizes.data(), sizes.size()), "XGDMatrixSetUIntInfo(group)");
  auto impl = std::make_unique<Impl>();
  check(x.booster_create(&m.h, 1, &impl->booster), "XGBoosterCreate");
  const int threads = o.threads ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl->params = json{{"objective", "rank:pairwise"}, {"eta", o.eta},     {"max_depth", o.max_depth},
                      {"min_child_weight", o.min_child_weight}, {"seed", o.seed}, {"rounds", o.rounds}};
  const std::vector<std::pair<std::string, std::string>> params{
      {"objective", "rank:pairwise"},      {"eta", fmt::format("{}", o.eta)},
      {"max_depth", std::to_string(o.max_depth)}, {"min_child_weight", fmt::format("{}", o.min_child_weight)},
      {"seed", std::to_string(o.seed)},    {"nthread", std::to_string(threads)},
      {"tree_method", "exact"},            {"verbosity", "0"}};
  for (const auto& [k, v] : params) check(x.set_param(impl->booster, k.c_str(), v.c_str()), "XGBoosterSetParam");
  for (int it = 0; it < o.rounds; ++it) check(x.update(impl->booster, it, m.h), "XGBoosterUpdateOneIter");
  impl->device = d.device.name;
  impl->samples = xs.size();
  impl->groups = sizes.size();
  impl->families.assign(fams.begin(), fams.end());
  return RankModel(std::move(impl));
}

std::vector<double> RankModel::score(const std::vector<std::vector<float>>& xs) const {
  if (xs.empty()) return {};
  const Impl& p = impl();
  DMatrix m = dense(xs, feature_names().size());
  std::lock_guard lock(p.mu);
  bst_ulong n = 0;
  const float* out = nullptr;
  check(xgb().predict(p.booster, m.h, 0, 0, 0, &n, &out), "XGBoosterPredict");
  if (n != xs.size()) throw Error(fmt::format("predict: XGBoost returned {} scores for {} rows", n, xs.size()));
  return std::vector<double>(out, out + n);
}

void RankModel::save(const std::filesystem::path& file) const {
  (void)impl();
  const std::filesystem::path to = detail::output_path(file, "model");
  json model;
  {
    std::lock_guard lock(p_->mu);
    bst_ulong n = 0;
    const char* buf = nullptr;
    check(xgb().save(p_->booster, R"({"format": "json"})", &n, &buf), "XGBoosterSaveModelToBuffer");
    model = json::parse(buf, buf + n);
  }
  const json j{{"format", kFormat},
               {"version", kVersion},
               {"features", feature_names()},
               {"device", p_->device},
               {"trained_on", {{"samples", p_->samples}, {"groups", p_->groups}, {"families", p_->families}}},
               {"params", p_->params},
               {"xgboost", std::move(model)}};
  if (const std::string err = runtime::write_file_atomically(to, j.dump() + "\n"); !err.empty())
    throw InvalidArgument(fmt::format("predict: cannot write model '{}': {}", file.string(), err));
}

RankModel RankModel::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InvalidArgument(fmt::format("predict: cannot open model '{}'", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  auto impl = std::make_unique<Impl>();
  std::string xgb_model;
  try {
    const json j = json::parse(ss.str());
    if (!j.is_object() || j.value("format", "") != kFormat) throw std::runtime_error(fmt::format("it is not a \"{}\" file", kFormat));
    if (!j.contains("version") || j["version"] != kVersion)
      throw std::runtime_error(fmt::format("its version {} is not {} (this build's)", j.value("version", json()).dump(), kVersion));
    const auto names = j.at("features").get<std::vector<std::string>>();
    if (names != feature_names())
      throw std::runtime_error(fmt::format("it was trained on {} features ({}), this build computes {} ({}): retrain it", names.size(),
                                           fmt::join(names, ","), feature_names().size(), fmt::join(feature_names(), ",")));
    impl->device = j.at("device").get<std::string>();
    impl->samples = j.at("trained_on").at("samples").get<std::size_t>();
    impl->groups = j.at("trained_on").at("groups").get<std::size_t>();
    impl->families = j.at("trained_on").at("families").get<std::vector<std::string>>();
    impl->params = j.value("params", json::object());
    check_trees(j.at("xgboost"), names.size());
    xgb_model = j.at("xgboost").dump();
  } catch (const std::exception& e) {
    throw InvalidArgument(fmt::format("predict: model '{}': {}", file.string(), e.what()));
  }
  const Xgb& x = need_xgb();
  check(x.booster_create(nullptr, 0, &impl->booster), "XGBoosterCreate");
  try {
    check(x.load(impl->booster, xgb_model.data(), xgb_model.size()), "XGBoosterLoadModelFromBuffer");
  } catch (const Error& e) {
    throw InvalidArgument(fmt::format("predict: model '{}': {}", file.string(), e.what()));
  }
  return RankModel(std::move(impl));
}

const RankModel::Impl& RankModel::impl() const {
  if (!p_) throw InvalidArgument("predict: this RankModel was moved from");
  return *p_;
}
const std::string& RankModel::device() const { return impl().device; }
std::size_t RankModel::trained_samples() const { return impl().samples; }
std::size_t RankModel::trained_groups() const { return impl().groups; }
const std::vector<std::string>& RankModel::trained_families() const { return impl().families; }

}  // namespace tilejit::predict

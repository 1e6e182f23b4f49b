// tilejit/predict/model.hpp — the learned ranker: gradient-boosted trees (XGBoost's C API, `rank:pairwise`) that
// order a tuning key's configs by their feature vectors (features.hpp), fastest first.
//
//   auto m = predict::RankModel::train(predict::load_datasets({"h200.json"}));
//   m.save("gemm.model.json");
//   auto scores = predict::RankModel::load("gemm.model.json").score(x);   // higher: predicted faster
//
// Labels: within a group (one family and key), a config's label is best_ms / ms — 1 for the fastest, toward 0 for
// slow ones — so the pairwise objective learns which of two configs of one key is faster; groups are never
// compared with each other.
//
// XGBoost is loaded at first use (dlopen of libxgboost.so.0, as Debian's libxgboost0 ships it; TILEJIT_XGBOOST names
// the file to load instead, with no fallback), so programs that never rank start without it. When it cannot be
// loaded, train / load throw Unsupported with dlopen's reason. load() checks the trees' structure (feature count,
// node arrays, child and split indices) before XGBoost reads them: a damaged file is InvalidArgument, never a crash.
//
// File format (JSON, written atomically): {"format": "tilejit-predict-model", "version": 1, "features": [names],
// "device": "H200", "trained_on": {"samples", "groups", "families": [...]}, "params": {...}, "xgboost": {XGBoost's
// own JSON model}}. A model whose feature names differ from this build's (features.hpp changed) is refused on load.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tilejit/predict/dataset.hpp"

namespace tilejit::predict {

struct TrainOptions {
  int rounds = 200;          ///< boosting rounds (trees), 1..10000
  int max_depth = 6;         ///< 1..16
  double eta = 0.1;          ///< learning rate, (0, 1]
  double min_child_weight = 1;
  int threads = 0;           ///< XGBoost's nthread, 0..1024; 0: all cores
  int seed = 0;
};

/// Whether XGBoost can be loaded; `why` gets dlopen's reason when not.
bool xgboost_available(std::string* why = nullptr);

class RankModel {
 public:
  /// Train on every group of `d` with at least two samples. Throws InvalidArgument for bad options or no group of
  /// two, Unsupported when XGBoost cannot be loaded, Error with XGBoost's message when it fails.
  static RankModel train(const Dataset& d, const TrainOptions& o = {});
  /// Train on the samples `rows` of `d` only (leave-one-out evaluation); groups are still those of d.
  static RankModel train_on(const Dataset& d, const std::vector<std::size_t>& rows, const TrainOptions& o = {});
  /// Read a model file. Throws InvalidArgument (not a model, another version, other feature names), Unsupported.
  static RankModel load(const std::filesystem::path& file);
  /// Write it atomically (a file already there stays whole on failure). Throws InvalidArgument for an empty path, a
  /// parent directory that does not exist, or the OS's reason.
  void save(const std::filesystem::path& file) const;

  /// One score per row of `x` (each of feature_names().size() values): higher = predicted faster. Scores compare
  /// only within a group. Thread-safe. Throws InvalidArgument for a row of another length.
  std::vector<double> score(const std::vector<std::vector<float>>& x) const;

  /// The device spec the training data was measured on (its name in the file).
  const std::string& device() const;
  /// Samples, groups and families it was trained on.
  std::size_t trained_samples() const;
  std::size_t trained_groups() const;
  const std::vector<std::string>& trained_families() const;

  RankModel(RankModel&&) noexcept;
  RankModel& operator=(RankModel&&) noexcept;
  ~RankModel();

 private:
  struct Impl;
  explicit RankModel(std::unique_ptr<Impl> p);
  const Impl& impl() const;  // InvalidArgument for a moved-from model
  std::unique_ptr<Impl> p_;
};

}  // namespace tilejit::predict

// tilejit/predict/ranker.hpp — the predictor in the autotuner: rank functions for TuneOptions::rank, and the
// recorder that turns a full tuning race into training samples.
//
//   auto model = std::make_shared<const predict::RankModel>(predict::RankModel::load("h200.model.json"));
//   tj::TuneOptions o;
//   o.rank = predict::ranker(model);   // score every candidate from its static features, no JIT
//   o.top_k = 3;                       // compile and time only the 3 best-scored (+ a power-of-two one)
//
//   predict::Recorder rec;             // a race that times everything and keeps what the model learns from
//   o.rank = rec.rank_function("gemm_tn_bf16");
//   ... tuner.tune(key, grid, args...);
//   auto samples = rec.samples("gemm_tn_bf16", tuner.report(key));
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tilejit/predict/model.hpp"
#include "tilejit/runtime/autotune.hpp"

namespace tilejit::predict {

/// The Points of a tuner's traced candidates: summarize() each kernel (code generation, no JIT) and summarize_launch()
/// it with its grid and the arguments, on `threads` threads (0: all cores). A candidate that cannot be summarised (a
/// grid of 0 programs, ...) has no point: the rank functions below score it NaN (last), and the tuner finds out why.
std::vector<std::optional<Point>> points(std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args,
                                         unsigned threads = 0);

/// Scores by `model` (higher = predicted faster) against `spec` (default: device_spec of the candidates' device).
/// The scores are InvalidArgument (logged by the tuner, which then times every candidate) when the spec's name is not
/// the device the model was trained on.
RankFn ranker(std::shared_ptr<const RankModel> model, std::optional<DeviceSpec> spec = {});
/// Scores by the analytic estimate alone: −roofline_us (features.hpp); NaN where flops or bytes are not derivable.
/// Needs no model and no XGBoost.
RankFn roofline_ranker(std::optional<DeviceSpec> spec = {});

/// Keeps every candidate's Point per family and tuning key while ranking nothing (all scores NaN: the tuner times
/// every candidate in its own order). Thread-safe; one recorder may serve several tuners, each through its own
/// rank_function(family).
class Recorder {
 public:
  /// The rank function for the tuner of `family` (not empty: InvalidArgument).
  RankFn rank_function(std::string family);
  /// The timed candidates of `report` as samples of `family` (report.key's Points joined by config). Candidates
  /// that were not timed are left out. Throws InvalidArgument when rank_function(family) never saw report.key.
  std::vector<Sample> samples(const std::string& family, const TuneReport& report) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::map<std::string, Point>> seen_;  // (family, key) -> config -> point
};

}  // namespace tilejit::predict

// tilejit/predict/evaluate.hpp — how good a ranking is: Spearman correlation, top-k regret, zero-regret rate, and
// leave-one-kernel-out evaluation of the learned ranker against the analytic roofline and a random order.
//
// For one group (a key's configs, each with a measured time and a score, higher = predicted faster):
//  - Spearman's ρ between the scores and the speeds (1 / time), ties ranked by their average rank;
//  - top-k regret = (fastest measured time among the k best-scored configs) / (fastest of all) − 1: what tuning only
//    the predicted top k would cost over tuning everything; 0 when the top k hold the fastest;
//  - zero-regret: regret ≤ `tolerance` (default 0: the fastest itself is among the top k).
// Leave-one-kernel-out: for each family, a model trained on every other family ranks that family's groups. The
// random baseline's regret is its expectation over all orders (exact, not sampled).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "tilejit/predict/model.hpp"

namespace tilejit::predict {

/// Spearman's rank correlation of x and y (average ranks for ties; NaN values rank below every number, tied with
/// each other); NaN when either is constant or n < 2. Throws InvalidArgument when the sizes differ.
double spearman(std::span<const double> x, std::span<const double> y);

/// Top-k regret of ranking `ms` by `score` (higher first; ties keep the earlier config first). k >= 1 (clamped to
/// the group's size). Throws InvalidArgument for sizes that differ, an empty group, k < 1, or a time that is not
/// positive.
double topk_regret(std::span<const double> ms, std::span<const double> score, int k);
/// The expected top-k regret of a uniformly random order (exact).
double random_topk_regret(std::span<const double> ms, int k);

/// Metrics averaged over groups.
struct RankMetrics {
  std::size_t groups = 0;
  double spearman = 0;               ///< mean over groups with a defined ρ
  std::vector<int> k;                ///< the k evaluated
  std::vector<double> regret;        ///< mean top-k regret, per k
  std::vector<double> max_regret;    ///< worst group's top-k regret, per k
  std::vector<double> zero_regret;   ///< fraction of groups with regret <= tolerance, per k
};

/// Metrics of the scores `score[i]` of d.samples[i] over `groups` (indices into d.samples). Throws InvalidArgument for
/// a score count other than the samples', an index past them, k < 1 or a tolerance that is negative or NaN.
RankMetrics rank_metrics(const Dataset& d, const std::vector<std::vector<std::size_t>>& groups, std::span<const double> score,
                         std::span<const int> ks, double tolerance = 0);

/// One family's result in leave-one-kernel-out evaluation.
struct HeldOut {
  std::string family;
  RankMetrics model;     ///< the model trained on the other families
  RankMetrics roofline;  ///< ordered by roofline_us (faster estimate first; configs without one last)
  RankMetrics random;    ///< expectation over random orders (spearman 0 by definition)
};

/// Leave-one-kernel-out over every family of `d` with a group of two or more configs; needs two families at least
/// (InvalidArgument otherwise).
std::vector<HeldOut> leave_one_kernel_out(const Dataset& d, std::span<const int> ks, const TrainOptions& o = {},
                                          double tolerance = 0);

/// A plain-text table of leave_one_kernel_out's results (one line per family and method, then the mean over families).
/// `ks` must be the k the results were evaluated at (InvalidArgument otherwise).
std::string format_evaluation(const std::vector<HeldOut>& r, std::span<const int> ks);

}  // namespace tilejit::predict

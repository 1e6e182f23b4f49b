// src/predict/evaluate.cpp — see tilejit/predict/evaluate.hpp.
#include "tilejit/predict/evaluate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tilejit::predict {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Average ranks (1-based) of v; NaN (no score) ranks below every number, NaNs tied with each other.
std::vector<double> ranks(std::span<const double> v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto less = [&](std::size_t a, std::size_t b) {
    const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
    if (na || nb) return na && !nb;
    return v[a] < v[b];
  };
  std::stable_sort(idx.begin(), idx.end(), less);
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && !less(idx[i], idx[j + 1])) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (std::size_t t = i; t <= j; ++t) r[idx[t]] = avg;
    i = j + 1;
  }
  return r;
}

void check_group(std::span<const double> ms, std::size_t n_score, int k) {
  if (ms.size() != n_score) throw InvalidArgument(fmt::format("predict: {} times but {} scores", ms.size(), n_score));
  if (ms.empty()) throw InvalidArgument("predict: an empty group has no regret");
  if (k < 1) throw InvalidArgument(fmt::format("predict: k = {}: must be >= 1", k));
  for (double t : ms)
    if (!(t > 0) || !std::isfinite(t)) throw InvalidArgument(fmt::format("predict: a time of {} ms: times must be positive", t));
}

/// log C(n, r) (lgamma: no overflow for any group size).
double log_choose(std::size_t n, std::size_t r) {
  const double nn = static_cast<double>(n), rr = static_cast<double>(r);
  return std::lgamma(nn + 1) - std::lgamma(rr + 1) - std::lgamma(nn - rr + 1);
}

/// The exact expectation over uniformly random orders for one group: mean top-k regret, and the probability that
/// the top k hold a config within `tolerance` of the fastest.
std::pair<double, double> random_expectation(std::span<const double> ms, int k, double tolerance) {
  std::vector<double> t(ms.begin(), ms.end());
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size(), kk = std::min<std::size_t>(static_cast<std::size_t>(k), n);
  // P(the best of a random k-subset is the i-th fastest, 0-based) = C(n-1-i, k-1) / C(n, k).
  const double all = log_choose(n, kk);
  double e = 0;
  for (std::size_t i = 0; i + kk <= n; ++i) e += std::exp(log_choose(n - 1 - i, kk - 1) - all) * (t[i] / t[0] - 1);
  // P(some config of regret <= tolerance among the k) = 1 - C(n - m, k) / C(n, k), m = how many there are.
  std::size_t m = 0;
  while (m < n && t[m] / t[0] - 1 <= tolerance) ++m;
  const double p = n - m < kk ? 1.0 : 1.0 - std::exp(log_choose(n - m, kk) - all);
  return {e, p};
}

}  // namespace

double spearman(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw InvalidArgument(fmt::format("predict: spearman of {} and {} values", x.size(), y.size()));
  if (x.size() < 2) return kNaN;
  const auto rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size()), mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

double topk_regret(std::span<const double> ms, std::span<const double> score, int k) {
  check_group(ms, score.size(), k);
  std::vector<std::size_t> idx(ms.size());
  std::iota(idx.begin(), idx.end(), 0);
  // NaN scores last.
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const bool na = std::isnan(score[a]), nb = std::isnan(score[b]);
    if (na != nb) return nb;
    return !na && score[a] > score[b];
  });
  const std::size_t kk = std::min<std::size_t>(static_cast<std::size_t>(k), ms.size());
  double picked = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < kk; ++i) picked = std::min(picked, ms[idx[i]]);
  return picked / *std::min_element(ms.begin(), ms.end()) - 1;
}

double random_topk_regret(std::span<const double> ms, int k) {
  check_group(ms, ms.size(), k);
  return random_expectation(ms, k, 0).first;
}

RankMetrics rank_metrics(const Dataset& d, const std::vector<std::vector<std::size_t>>& groups, std::span<const double> score,
                         std::span<const int> ks, double tolerance) {
  if (score.size() != d.samples.size())
    throw InvalidArgument(fmt::format("predict: {} scores for {} samples", score.size(), d.samples.size()));
  if (!(tolerance >= 0)) throw InvalidArgument(fmt::format("predict: tolerance = {}: must be a fraction >= 0", tolerance));
  for (const auto& g : groups)
    for (std::size_t i : g)
      if (i >= d.samples.size()) throw InvalidArgument(fmt::format("predict: group index {} of {} samples", i, d.samples.size()));
  RankMetrics m;
  m.k.assign(ks.begin(), ks.end());
  m.regret.assign(ks.size(), 0);
  m.max_regret.assign(ks.size(), 0);
  m.zero_regret.assign(ks.size(), 0);
  double rho_sum = 0;
  std::size_t rho_n = 0;
  for (const auto& g : groups) {
    if (g.size() < 2) continue;
    std::vector<double> ms, sc, speed;
    for (std::size_t i : g) ms.push_back(d.samples[i].ms), sc.push_back(score[i]), speed.push_back(1 / d.samples[i].ms);
    ++m.groups;
    if (const double r = spearman(sc, speed); !std::isnan(r)) rho_sum += r, ++rho_n;
    for (std::size_t j = 0; j < ks.size(); ++j) {
      const double reg = topk_regret(ms, sc, ks[j]);
      m.regret[j] += reg;
      m.max_regret[j] = std::max(m.max_regret[j], reg);
      m.zero_regret[j] += reg <= tolerance;
    }
  }
  m.spearman = rho_n ? rho_sum / static_cast<double>(rho_n) : kNaN;
  for (std::size_t j = 0; j < ks.size() && m.groups; ++j) {
    m.regret[j] /= static_cast<double>(m.groups);
    m.zero_regret[j] /= static_cast<double>(m.groups);
  }
  return m;
}

std::vector<HeldOut> leave_one_kernel_out(const Dataset& d, std::span<const int> ks, const TrainOptions& o, double tolerance) {
  const auto groups = d.groups();
  std::vector<std::string> fams;
  for (const auto& g : groups)
    if (g.size() >= 2 && std::find(fams.begin(), fams.end(), d.samples[g.front()].family) == fams.end())
      fams.push_back(d.samples[g.front()].family);
  if (fams.size() < 2)
    throw InvalidArgument(fmt::format("predict: leave-one-kernel-out needs two families with a group of two configs; the data has {}",
                                      fams.size()));
  for (int k : ks)
    if (k < 1) throw InvalidArgument(fmt::format("predict: k = {}: must be >= 1", k));
  if (!(tolerance >= 0)) throw InvalidArgument(fmt::format("predict: tolerance = {}: must be a fraction >= 0", tolerance));
  // The roofline order: the negated estimate (NaN: last).
  std::vector<double> roof(d.samples.size());
  for (std::size_t i = 0; i < d.samples.size(); ++i) roof[i] = -roofline_us(d.samples[i].point, d.device);
  const auto feats = d.features();  // once: every held-out family's rows are read from it
  std::vector<HeldOut> out;
  for (const std::string& f : fams) {
    std::vector<std::size_t> train_rows;
    std::vector<std::vector<std::size_t>> test_groups;
    for (const auto& g : groups) {
      if (d.samples[g.front()].family == f)
        test_groups.push_back(g);
      else
        train_rows.insert(train_rows.end(), g.begin(), g.end());
    }
    const RankModel m = RankModel::train_on(d, train_rows, o);
    std::vector<double> score(d.samples.size(), kNaN);
    std::vector<std::vector<float>> x;
    std::vector<std::size_t> rows;
    for (const auto& g : test_groups)
      for (std::size_t i : g) x.push_back(feats[i]), rows.push_back(i);
    const auto s = m.score(x);
    for (std::size_t j = 0; j < rows.size(); ++j) score[rows[j]] = s[j];
    HeldOut h;
    h.family = f;
    h.model = rank_metrics(d, test_groups, score, ks, tolerance);
    h.roofline = rank_metrics(d, test_groups, roof, ks, tolerance);
    // Random: the exact expectation per group.
    h.random.k.assign(ks.begin(), ks.end());
    h.random.regret.assign(ks.size(), 0);
    h.random.max_regret.assign(ks.size(), 0);
    h.random.zero_regret.assign(ks.size(), 0);
    for (const auto& g : test_groups) {
      if (g.size() < 2) continue;
      std::vector<double> ms;
      for (std::size_t i : g) ms.push_back(d.samples[i].ms);
      ++h.random.groups;
      for (std::size_t j = 0; j < ks.size(); ++j) {
        const auto [r, p] = random_expectation(ms, ks[j], tolerance);
        h.random.regret[j] += r;
        h.random.max_regret[j] = std::max(h.random.max_regret[j], r);
        h.random.zero_regret[j] += p;
      }
    }
    for (std::size_t j = 0; j < ks.size() && h.random.groups; ++j) {
      h.random.regret[j] /= static_cast<double>(h.random.groups);
      h.random.zero_regret[j] /= static_cast<double>(h.random.groups);
    }
    h.random.spearman = 0;
    out.push_back(std::move(h));
  }
  return out;
}

std::string format_evaluation(const std::vector<HeldOut>& r, std::span<const int> ks) {
  for (const auto& h : r)
    for (const RankMetrics* m : {&h.model, &h.roofline, &h.random})
      if (m->k != std::vector<int>(ks.begin(), ks.end()))
        throw InvalidArgument(fmt::format("predict: {} was evaluated at k = {}, not at the {} k given", h.family, fmt::join(m->k, ","),
                                          ks.size()));
  std::string s = fmt::format("{:<24} {:<9} {:>6} {:>8}", "held-out family", "method", "groups", "spearman");
  for (int k : ks) s += fmt::format("  {:>10} {:>9} {:>8}", fmt::format("regret@{}", k), fmt::format("worst@{}", k), fmt::format("zero@{}", k));
  s += '\n';
  auto line = [&](const std::string& fam, const char* method, const RankMetrics& m) {
    s += fmt::format("{:<24} {:<9} {:>6} {:>8.3f}", fam, method, m.groups, m.spearman);
    for (std::size_t j = 0; j < ks.size(); ++j)
      s += fmt::format("  {:>9.2f}% {:>8.2f}% {:>7.0f}%", 100 * m.regret[j], 100 * m.max_regret[j], 100 * m.zero_regret[j]);
    s += '\n';
  };
  std::vector<RankMetrics> mean(3);
  for (auto& m : mean) m.regret.assign(ks.size(), 0), m.max_regret.assign(ks.size(), 0), m.zero_regret.assign(ks.size(), 0);
  for (const auto& h : r) {
    const RankMetrics* ms[3] = {&h.model, &h.roofline, &h.random};
    const char* names[3] = {"model", "roofline", "random"};
    for (int t = 0; t < 3; ++t) {
      line(h.family, names[t], *ms[t]);
      mean[t].groups += ms[t]->groups;
      mean[t].spearman += std::isnan(ms[t]->spearman) ? 0 : ms[t]->spearman / static_cast<double>(r.size());
      for (std::size_t j = 0; j < ks.size(); ++j) {
        mean[t].regret[j] += ms[t]->regret[j] / static_cast<double>(r.size());
        mean[t].max_regret[j] = std::max(mean[t].max_regret[j], ms[t]->max_regret[j]);
        mean[t].zero_regret[j] += ms[t]->zero_regret[j] / static_cast<double>(r.size());
      }
    }
  }
  const char* names[3] = {"model", "roofline", "random"};
  for (int t = 0; t < 3; ++t) line("mean over families", names[t], mean[t]);
  return s;
}

}  // namespace tilejit::predict

// src/predict/ranker.cpp — see tilejit/predict/ranker.hpp.
#include "tilejit/predict/ranker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>

#include "../runtime/parallel.hpp"

namespace tilejit::predict {

std::vector<std::optional<Point>> points(std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args, unsigned threads) {
  std::vector<std::optional<Point>> out(cands.size());
  runtime::detail::parallel_for(cands.size(), threads, [&](std::size_t i) {
    try {
      Point p;
      p.kernel = summarize(cands[i].kernel);
      p.launch = summarize_launch(cands[i].kernel, cands[i].grid, args);
      out[i] = p;
    } catch (const std::exception&) {
      // This candidate cannot be summarised (a grid of 0 programs, ...): no point; the tuner finds out why.
    }
  });
  return out;
}

namespace {

/// Scores by `score_of` for the candidates that have a point; NaN (last) for the others.
std::vector<double> scored(const std::vector<std::optional<Point>>& pts,
                           const std::function<std::vector<double>(const std::vector<Point>&)>& score_of) {
  std::vector<Point> have;
  for (const auto& p : pts)
    if (p) have.push_back(*p);
  std::vector<double> out(pts.size(), std::numeric_limits<double>::quiet_NaN());
  if (have.empty()) return out;
  const std::vector<double> s = score_of(have);
  for (std::size_t i = 0, j = 0; i < pts.size(); ++i)
    if (pts[i]) out[i] = s[j++];
  return out;
}

}  // namespace

RankFn ranker(std::shared_ptr<const RankModel> model, std::optional<DeviceSpec> spec) {
  if (!model) throw InvalidArgument("predict::ranker: no model");
  return [model = std::move(model), spec](const TuneKey&, std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
    if (cands.empty()) return std::vector<double>{};
    const DeviceSpec d = spec ? *spec : device_spec(cands.front().kernel.device());
    if (d.name != model->device())
      throw InvalidArgument(fmt::format("predict::ranker: the model was trained on {} data, the candidates run on {}: train one on "
                                        "this device's data (or pass the spec to rank against)",
                                        model->device(), d.name));
    return scored(points(cands, args), [&](const std::vector<Point>& p) { return model->score(group_features(p, d)); });
  };
}

RankFn roofline_ranker(std::optional<DeviceSpec> spec) {
  return [spec](const TuneKey&, std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
    if (cands.empty()) return std::vector<double>{};
    const DeviceSpec d = spec ? *spec : device_spec(cands.front().kernel.device());
    return scored(points(cands, args), [&](const std::vector<Point>& p) {
      std::vector<double> s;
      for (const Point& x : p) s.push_back(-roofline_us(x, d));
      return s;
    });
  };
}

RankFn Recorder::rank_function(std::string family) {
  if (family.empty()) throw InvalidArgument("predict::Recorder: the family name is empty");
  return [this, family = std::move(family)](const TuneKey& key, std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
    const auto pts = points(cands, args);
    std::lock_guard lock(mu_);
    auto& m = seen_[{family, key.str()}];
    for (std::size_t i = 0; i < cands.size(); ++i)
      if (pts[i]) m[cands[i].config.str()] = *pts[i];
    return std::vector<double>(cands.size(), std::numeric_limits<double>::quiet_NaN());
  };
}

std::vector<Sample> Recorder::samples(const std::string& family, const TuneReport& report) const {
  std::lock_guard lock(mu_);
  const auto it = seen_.find({family, report.key});
  if (it == seen_.end())
    throw InvalidArgument(fmt::format("predict::Recorder: no candidates of {} for key {{{}}} were ranked through rank_function(\"{}\")",
                                      family, report.key, family));
  std::vector<Sample> out;
  for (const auto& c : report.candidates) {
    if (c.status != CandidateReport::Status::timed) continue;
    const auto p = it->second.find(c.config.str());
    if (p == it->second.end()) continue;
    out.push_back(Sample{family, report.key, c.config.str(), c.median_ms, p->second});
  }
  return out;
}

}  // namespace tilejit::predict

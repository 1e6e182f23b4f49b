// src/predict/ranker.cpp — see tilejit/predict/ranker.hpp.
#include "tilejit/predict/ranker.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <system_error>
#include <thread>

namespace tilejit::predict {

std::vector<Point> points(std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
  std::vector<Point> out(cands.size());
  std::vector<std::exception_ptr> err(cands.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < cands.size();) {
      try {
        out[i].kernel = summarize(cands[i].kernel);
        out[i].launch = summarize_launch(cands[i].kernel, cands[i].grid, args);
      } catch (...) {
        err[i] = std::current_exception();
      }
    }
  };
  const unsigned nt = static_cast<unsigned>(std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), cands.size()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < nt; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : pool) t.join();
  for (const auto& e : err)
    if (e) std::rethrow_exception(e);
  return out;
}

RankFn ranker(std::shared_ptr<const RankModel> model, std::optional<DeviceSpec> spec) {
  if (!model) throw InvalidArgument("predict::ranker: no model");
  return [model = std::move(model), spec](const TuneKey&, std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
    if (cands.empty()) return std::vector<double>{};
    const auto pts = points(cands, args);
    const DeviceSpec d = spec ? *spec : device_spec(cands.front().kernel.device());
    return model->score(group_features(pts, d));
  };
}

RankFn roofline_ranker(std::optional<DeviceSpec> spec) {
  return [spec](const TuneKey&, std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
    std::vector<double> s;
    if (cands.empty()) return s;
    const auto pts = points(cands, args);
    const DeviceSpec d = spec ? *spec : device_spec(cands.front().kernel.device());
    for (const Point& p : pts) s.push_back(-roofline_us(p, d));
    return s;
  };
}

RankFn Recorder::rank_function() {
  return [this](const TuneKey& key, std::span<const RankInput> cands, std::span<const runtime::ArgSlot> args) {
    const auto pts = points(cands, args);
    std::lock_guard lock(mu_);
    auto& m = seen_[key.str()];
    for (std::size_t i = 0; i < cands.size(); ++i) m[cands[i].config.str()] = pts[i];
    return std::vector<double>(cands.size(), std::numeric_limits<double>::quiet_NaN());
  };
}

std::vector<Sample> Recorder::samples(const std::string& family, const TuneReport& report) const {
  std::lock_guard lock(mu_);
  const auto it = seen_.find(report.key);
  if (it == seen_.end())
    throw InvalidArgument(fmt::format("predict::Recorder: no candidates of key {{{}}} were ranked through this recorder", report.key));
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

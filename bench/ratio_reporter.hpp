// bench/ratio_reporter.hpp — Google Benchmark's console output, then a table of each tilejit row's TFLOP/s
// as a ratio to the cuBLAS row of the same shape measured in the same run.
//
// A row's shape is the last three integer components of its name (M/N/K). Its baseline is chosen by what the
// row computes (`baseline_of`): a bf16 C against BM_CublasTNBf16Out, f16 against BM_CublasTNF16, f8 against
// BM_CublasLtF8, i8 against BM_CublasI8, tf32 against BM_CublasTF32, the early rungs (B stored [K, N]) against
// BM_Cublas, everything else (f32 C, B stored [N, K]) against BM_CublasTN. Rows whose baseline did not run are left
// out. With repetitions, each row's median TFLOP/s is used.
#pragma once
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ratio_rows.hpp"

namespace bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const auto it = r.counters.find("TFLOP/s");
      if (it == r.counters.end()) continue;
      std::string name = r.benchmark_name();
      if (const auto p = name.rfind("/manual_time"); p != std::string::npos && p + 12 == name.size()) name.resize(p);
      values_[name].push_back(it->second.value);
      if (std::find(order_.begin(), order_.end(), name) == order_.end()) order_.push_back(name);
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    // The baselines measured, by family and shape.
    std::map<std::pair<std::string, std::string>, double> base;
    for (const auto& name : order_) {
      const auto shape = ratio_rows::shape_of(name);
      if (shape && name.rfind("BM_Cublas", 0) == 0) base[{ratio_rows::family_of(name), *shape}] = median(values_[name]);
    }
    std::vector<std::array<std::string, 5>> rows;
    for (const auto& name : order_) {
      const auto shape = ratio_rows::shape_of(name);
      if (!shape || name.rfind("BM_Tilejit", 0) != 0) continue;
      const std::string b = ratio_rows::baseline_of(name);
      const auto it = base.find({b, *shape});
      if (it == base.end()) continue;
      const double ours = median(values_[name]);
      rows.push_back({name, fmt::format("{:.1f}", ours), b, fmt::format("{:.1f}", it->second), fmt::format("{:.3f}", ours / it->second)});
    }
    if (rows.empty()) return;
    std::size_t w = 4;
    for (const auto& r : rows) w = std::max(w, r[0].size());
    auto& out = GetOutputStream();
    out << "\nRatio to cuBLAS, same run (TFLOP/s; shape M/N/K from the name):\n";
    out << fmt::format("{:<{}}  {:>8}  {:<20} {:>8}  {:>6}\n", "row", w, "tilejit", "baseline", "cuBLAS", "ratio");
    for (const auto& r : rows) out << fmt::format("{:<{}}  {:>8}  {:<20} {:>8}  {:>6}\n", r[0], w, r[1], r[2], r[3], r[4]);
    out.flush();
  }

 private:
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  }
  std::map<std::string, std::vector<double>> values_;
  std::vector<std::string> order_;
};

}  // namespace bench

// tools/predict_cmd.cpp — see predict_cmd.hpp.
#include "tools/predict_cmd.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "tilejit/core/error.hpp"
#include "tilejit/predict/evaluate.hpp"

namespace tilejit::tools {
namespace {

predict::Dataset load(const std::vector<std::string>& files) {
  std::vector<std::filesystem::path> p(files.begin(), files.end());
  return predict::load_datasets(p);
}

}  // namespace

int run_predict_eval(const PredictArgs& a) {
  const predict::Dataset d = load(a.data);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = predict::leave_one_kernel_out(d, a.k, a.train, a.tolerance);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu samples, %zu groups, %zu families, measured on %s; leave-one-kernel-out (%d rounds, depth %d), %.1f s\n",
              d.samples.size(), d.groups().size(), d.families().size(), d.device.name.c_str(), a.train.rounds, a.train.max_depth, s);
  std::printf("regret@k: time of the best of the top k over the best of all, minus 1 (mean over groups); worst@k: the "
              "worst group's; zero@k: groups whose top k %s\n",
              a.tolerance > 0 ? fmt::format("come within {:.1f}% of the best", 100 * a.tolerance).c_str() : "hold the best");
  std::fputs(predict::format_evaluation(r, a.k).c_str(), stdout);
  return 0;
}

int run_predict_train(const PredictArgs& a) {
  std::error_code ec;
  for (const auto& f : a.data)
    if (std::filesystem::equivalent(f, a.out, ec))
      throw InvalidArgument(fmt::format("predict train: -o {} is the dataset {}: the model would replace it", a.out, f));
  const predict::Dataset d = load(a.data);
  const auto t0 = std::chrono::steady_clock::now();
  const auto m = predict::RankModel::train(d, a.train);
  m.save(a.out);
  std::printf("trained on %zu samples in %zu groups of %zu families (%s), %.1f s -> %s\n", m.trained_samples(), m.trained_groups(),
              m.trained_families().size(), m.device().c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), a.out.c_str());
  return 0;
}

}  // namespace tilejit::tools

// The predictor on real measurements: bench/predict/data/h200.json, every candidate of 10 kernel families timed on
// the lent H200 (predict_sweep; docs/predictor.md). Leave-one-kernel-out must keep what docs/predictor.md reports:
// the learned ranker orders a GEMM family it never saw nearly as the GPU does, and tuning its top 3 costs a small
// fraction of a random top 3's regret.
#include <doctest/doctest.h>

#include <string>

#include "tilejit/predict/evaluate.hpp"

namespace pr = tilejit::predict;

TEST_CASE("predict: leave-one-kernel-out on the H200 measurements") {
  std::string why;
  REQUIRE_MESSAGE(pr::xgboost_available(&why), why);
  const pr::Dataset d = pr::load_dataset(TILEJIT_PREDICT_DATA);
  CHECK(d.device.name == "H200");
  CHECK(d.families().size() == 10);
  CHECK(d.groups().size() >= 100);
  const std::vector<int> ks{1, 3};
  const auto r = pr::leave_one_kernel_out(d, ks);
  MESSAGE(pr::format_evaluation(r, ks));
  double model = 0, roofline = 0, random = 0;
  for (const auto& h : r) {
    model += h.model.regret[1] / static_cast<double>(r.size());
    roofline += h.roofline.regret[1] / static_cast<double>(r.size());
    random += h.random.regret[1] / static_cast<double>(r.size());
    if (h.family == "gemm_tn_bf16" || h.family == "gemm_tn_f16") {
      INFO(h.family);
      CHECK(h.model.spearman > 0.9);
      CHECK(h.model.regret[1] < 0.01);
      CHECK(h.model.zero_regret[1] >= 0.8);
    }
  }
  CHECK(model < random / 3);
  CHECK(model < roofline);
}

// tools/predict_cmd.hpp — `tilejit predict eval|train`: the predictor's offline side (DESIGN §7; docs/predictor.md).
//
//   tilejit predict eval h200.json [--k 1,3,5] [--rounds 200]   leave-one-kernel-out table: the model against the
//                                                                roofline order and a random one
//   tilejit predict train h200.json [more.json ...] -o model.json   train on every family, write the model
#pragma once
#include <string>
#include <vector>

#include "tilejit/predict/model.hpp"

namespace tilejit::tools {

struct PredictArgs {
  std::vector<std::string> data;  ///< dataset files (predict_sweep's output), one device
  std::vector<int> k{1, 3, 5};    ///< eval: the top-k sizes
  double tolerance = 0;           ///< eval: a regret at most this counts as zero-regret (0.01: within 1%)
  std::string out;                ///< train: the model file
  predict::TrainOptions train;
};

/// Prints the leave-one-kernel-out table to stdout; returns the exit status. Throws tilejit::Error for bad input.
int run_predict_eval(const PredictArgs& a);
/// Trains on every group, writes a.out, prints what it trained on. Throws tilejit::Error for bad input.
int run_predict_train(const PredictArgs& a);

}  // namespace tilejit::tools

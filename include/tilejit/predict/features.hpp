// tilejit/predict/features.hpp — per-config feature vectors for the ranking model (DESIGN §7).
//
//   std::vector<predict::Point> pts = ...;                  // one per candidate config of one tuning key
//   auto x = predict::group_features(pts, predict::device_spec(dev));   // x[i].size() == feature_names().size()
//
// A feature vector mixes three kinds of quantity, all derived from a Point (a KernelSummary and a LaunchSummary)
// and the device's peaks — evaluated in microseconds per config:
//  - the config and its code: num_warps, num_stages, block size, shared memory, wgmma / TMA / warp specialisation,
//    the largest dot's tile, registers per thread held by loop-carried tiles;
//  - occupancy and waves: programs resident per SM (the least of the shared-memory, thread, register and program
//    limits), waves = programs / (SMs × resident), and the last wave's fill;
//  - roofline times: flops / tensor peak at the dot's width and bytes / DRAM bandwidth, per launch and per
//    program; their max divided by the last wave's fill estimates the launch's time.
// Some features are relative to the other configs of the same key (log2 of the estimated time over the group's
// least), because a ranking model compares configs within a key. Values not derivable — and any that would be
// infinite or past float's range — are NaN (missing to XGBoost).
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/predict/summary.hpp"
#include "tilejit/runtime/device.hpp"

namespace tilejit::predict {

/// A device's limits and peaks, the constants the features are computed against.
struct DeviceSpec {
  std::string name;                 ///< "H200", "H100", "A100", "MI300X", "interpreter"
  int num_sms = 1;                  ///< SMs / CUs (CPU threads for the interpreter)
  double dram_bytes_per_s = 1e10;   ///< DRAM bandwidth (bytes/s; the datasheet's figure)
  double flops_per_s_8 = 1e11;      ///< dense tensor-core peak for 8-bit inputs (flop/s)
  double flops_per_s_16 = 1e11;     ///< ... f16 / bf16 inputs
  double flops_per_s_32 = 1e11;     ///< ... tf32 inputs (and f32 products without tensor cores)
  int smem_per_sm = 228 * 1024;     ///< shared memory per SM (bytes)
  int regs_per_sm = 65536;          ///< 32-bit registers per SM
  int threads_per_sm = 2048;        ///< resident threads per SM
  int programs_per_sm = 32;         ///< resident programs (CTAs) per SM
  bool operator==(const DeviceSpec&) const = default;
};

/// The spec of a named device ("H200", "H100", "A100", "MI300X", "interpreter"; datasheet peaks, dense).
/// Throws InvalidArgument naming the unknown name and listing the known ones.
DeviceSpec device_spec(std::string_view name);
/// The spec of `dev`: by its name (an "NVIDIA H200" is "H200"); a GPU not in the table gets the spec of the nearest
/// known one of its architecture with `num_sms` from the device. The interpreter: "interpreter" with its threads.
DeviceSpec device_spec(const Device& dev);

/// One candidate config of one tuning key: what its kernel is and what the launch amounts to.
struct Point {
  KernelSummary kernel;
  LaunchSummary launch;
};

/// The feature names, in vector order (stable within a model's version; a model stores the names it was trained on).
const std::vector<std::string>& feature_names();

/// The feature vectors of one key's candidates (the group a ranking model orders).
std::vector<std::vector<float>> group_features(std::span<const Point> group, const DeviceSpec& spec);

/// The analytic estimate alone: the launch's roofline time over its last wave's fill (µs), NaN where flops or bytes
/// are not derivable. The baseline the learned model is compared with (docs/predictor.md).
double roofline_us(const Point& p, const DeviceSpec& spec);

}  // namespace tilejit::predict

// tilejit/predict/dataset.hpp — measured configs: what the ranking model learns from and is evaluated on.
//
// One Sample per (kernel family, tuning key, config) that was timed: the static summary and launch summary of the
// candidate (summary.hpp), and the autotuner's median time. Samples of one family and key form a group — the set a
// model ranks. A file holds the device's spec too, so features are recomputed against the peaks of the machine
// that measured them (features change; the measured facts do not).
//
// File format (JSON, written atomically): {"format": "tilejit-predict-data", "version": 1, "device": {spec},
// "samples": [{"family", "key", "config", "ms", "kernel": {...}, "launch": {...}}, ...]}. NaN (a launch's flops
// or bytes that are not derivable) is written as null.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "tilejit/predict/features.hpp"

namespace tilejit::predict {

struct Sample {
  std::string family;  ///< the kernel family (the autotuner's name, e.g. "gemm_tn_bf16"): the unit left out in evaluation
  std::string key;     ///< TuneKey::str()
  std::string config;  ///< Config::str()
  double ms = 0;       ///< measured median (ms), > 0
  Point point;
};

struct Dataset {
  DeviceSpec device;
  std::vector<Sample> samples;

  /// Groups: indices of samples sharing (family, key), in first-appearance order.
  std::vector<std::vector<std::size_t>> groups() const;
  /// Distinct families, in first-appearance order.
  std::vector<std::string> families() const;
  /// The feature matrix, row i for samples[i], each group's relative features computed within the group.
  std::vector<std::vector<float>> features() const;
};

/// Read a dataset file. Throws InvalidArgument naming the file, the sample and what is wrong: not JSON, another format
/// or version, a missing field, a time that is not positive and finite, a program count outside [1, 2^53], flops or
/// bytes that are infinite or negative, a config measured twice in one group.
Dataset load_dataset(const std::filesystem::path& file);
/// Several files into one; every file must be of the same device spec (InvalidArgument naming the field that
/// differs) and no sample may appear in two files.
Dataset load_datasets(const std::vector<std::filesystem::path>& files);
/// Write atomically (a file already at `file` stays whole on failure; a symbolic link is written through). Throws
/// InvalidArgument for a sample that breaks load_dataset's rules (nothing is written then), an empty path, a parent
/// directory that does not exist, or the OS's reason.
void save_dataset(const Dataset& d, const std::filesystem::path& file);

}  // namespace tilejit::predict

// test/common/scratch.hpp — a temporary directory per test and a log sink that keeps its lines (the autotuner's,
// the cache's and the predictor's tests).
#pragma once
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace testing {

/// A fresh directory under the system's temporary directory (mkdtemp), removed with everything in it at the end.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "tilejit-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// The names of the entries directly in the directory.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
};

/// Collects what a component logs (TuneOptions::log and the like); copies share the lines.
struct Log {
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  std::function<void(const std::string&)> sink() const {
    return [l = lines](const std::string& s) { l->push_back(s); };
  }
  bool has(const std::string& needle) const {
    return std::any_of(lines->begin(), lines->end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
  }
};

}  // namespace testing

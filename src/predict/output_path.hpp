// src/predict/output_path.hpp — the rules for a file the predictor writes (a dataset or a model), private to it.
#pragma once
#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "tilejit/core/error.hpp"

namespace tilejit::predict::detail {

/// The path to write for `file`: its target when it is a symbolic link (so the link stays), else itself.
/// InvalidArgument unless it names a file in a directory that exists: not empty, not a directory. (The atomic
/// writer would create missing directories: a mistyped path would then write somewhere unexpected.)
inline std::filesystem::path output_path(std::filesystem::path file, const char* what) {
  if (file.empty()) throw InvalidArgument(fmt::format("predict: the {} file name is empty", what));
  std::error_code ec;
  if (std::filesystem::is_symlink(file, ec)) {
    const auto target = std::filesystem::read_symlink(file, ec);
    if (!ec) file = target.is_absolute() ? target : file.parent_path() / target;
  }
  if (std::filesystem::is_directory(file, ec))
    throw InvalidArgument(fmt::format("predict: cannot write the {} to '{}': it is a directory", what, file.string()));
  const auto parent = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  if (!std::filesystem::is_directory(parent, ec))
    throw InvalidArgument(fmt::format("predict: cannot write the {} to '{}': directory '{}' does not exist", what, file.string(),
                                      parent.string()));
  return file;
}

}  // namespace tilejit::predict::detail

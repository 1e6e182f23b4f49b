// tools/output.hpp — how the `tilejit` tool writes its files and its standard output.
#pragma once
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tilejit/runtime/atomic_file.hpp"

namespace tilejit::tools {

/// Writes an output file (prof html's -o, layout show's --svg) whole or not at all: through a temporary beside it
/// and a rename (runtime::write_file_atomically), so a full disk or a file-size limit leaves no partial file under
/// `path` and a file already there whole. Unlike the kernel cache it creates no directory. Returns "" or why not,
/// with the OS's reason.
inline std::string write_output_file(const std::string& path, std::string_view data) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (const auto dir = p.parent_path(); !dir.empty() && !std::filesystem::is_directory(dir, ec))
    return fmt::format("no directory '{}'", dir.string());
  if (std::filesystem::is_directory(p, ec)) return "it is a directory";
  return runtime::write_file_atomically(p, data);
}

/// Writes `text` to `out` and flushes it; false when the stream refused any of it (a full disk, a closed pipe,
/// /dev/full), so the command can exit non-zero instead of reporting success.
inline bool write_stream(std::FILE* out, std::string_view text) {
  const bool all = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  return std::fflush(out) == 0 && all && !std::ferror(out);
}

}  // namespace tilejit::tools

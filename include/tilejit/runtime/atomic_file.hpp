// tilejit/runtime/atomic_file.hpp — installing a file so that its final name never holds a partial one.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace tilejit::runtime {

/// Writes `data` to `path` atomically: creates the parent directory if needed, writes
/// <dir>/.<file name>.<pid>.<random>.tmp (a name of its own, so parallel writers of one path never share it),
/// fsyncs it and renames it over `path`. Returns "" or what went wrong, with the OS's reason (strerror); on failure
/// the temporary is removed and `path` is as it was — a file already there is kept whole. Used by the kernel
/// cache's entries, TILEJIT_DUMP_DIR and the `tilejit` tool's output files.
std::string write_file_atomically(const std::filesystem::path& path, std::string_view data);

}  // namespace tilejit::runtime

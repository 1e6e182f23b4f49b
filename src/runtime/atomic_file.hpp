// src/runtime/atomic_file.hpp — installing a file so that its final name never holds a partial one (internal).
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace tilejit::runtime::detail {

/// Writes `data` to `path` atomically: creates the parent directory if needed, writes
/// <dir>/.<file name>.<pid>.<random>.tmp (a name of its own, so parallel writers of one path never share it),
/// fsyncs it and renames it over `path`. Returns "" or what went wrong; on failure the temporary is removed and
/// `path` is as it was. Used by the kernel cache's entries and by TILEJIT_DUMP_DIR.
std::string write_file_atomically(const std::filesystem::path& path, std::string_view data);

/// Writes all `n` bytes at `p` to `fd`, retrying after EINTR and short writes; false on any other failure.
bool write_all(int fd, const void* p, std::size_t n);

}  // namespace tilejit::runtime::detail

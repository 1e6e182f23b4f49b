// src/runtime/atomic_file.hpp — installing a file so that its final name never holds a partial one (internal).
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "tilejit/runtime/atomic_file.hpp"

namespace tilejit::runtime::detail {

using runtime::write_file_atomically;  // declared in the public header (the tool writes its output files with it)

/// Writes all `n` bytes at `p` to `fd`, retrying after EINTR and short writes; false on any other failure.
bool write_all(int fd, const void* p, std::size_t n);

}  // namespace tilejit::runtime::detail

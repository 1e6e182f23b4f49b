// Crash-safe file writes: temporary file in the same directory, fsync, rename.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tilejit::profiler::detail {

struct WriteResult {
  int error = 0;        // errno; 0 = written
  std::string message;  // what failed, with strerror text
};

/// Write `bytes` to `path` so that `path` either keeps its old state or holds
/// all of `bytes`: never a partial file under the final name.
WriteResult write_atomic(const std::string& path, std::string_view bytes, bool do_fsync);

/// Test seam: make writes fail with `error` (e.g. ENOSPC) after `after_bytes`
/// bytes of the temporary file were written. error == 0 turns it off.
void inject_write_fault(int error, std::size_t after_bytes) noexcept;

}  // namespace tilejit::profiler::detail

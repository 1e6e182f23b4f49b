// Crash-safe file writes: temporary file in the same directory, fsync, rename.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tilejit::profiler::detail {

struct WriteResult {
  int error = 0;        // errno; 0 = written
  std::string message;  // what failed, with strerror text
};

/// Write `bytes` to `path` so that `path` either keeps its old state or holds
/// all of `bytes`: never a partial file under the final name.
WriteResult write_atomic(const std::string& path, std::string_view bytes, bool do_fsync);

/// One file of a batch for write_atomic_batch.
struct BatchFile {
  std::string path;
  std::string_view bytes;
  WriteResult result;    // out: this file's outcome
  double write_ms = 0;   // out: time spent on this file (write, its fsync, rename)
};

/// write_atomic for several files at once: every temporary is written first,
/// then each is fsync'ed and renamed, then each directory is fsync'ed once.
/// With do_fsync, one journal commit serves the batch instead of one (plus a
/// directory fsync) per file. Each file keeps the guarantee of write_atomic;
/// a failed one does not stop the others.
void write_atomic_batch(std::vector<BatchFile>& files, bool do_fsync);

/// Test seam: make writes fail with `error` (e.g. ENOSPC) after `after_bytes`
/// bytes of the temporary file were written. error == 0 turns it off.
void inject_write_fault(int error, std::size_t after_bytes) noexcept;

}  // namespace tilejit::profiler::detail

// tilejit/runtime/cache.hpp — the kernel cache: in memory (thread-safe) and on
// disk ($TILEJIT_CACHE_DIR, default ~/.cache/tilejit).
//
// Key: XXH3-128 over the source text, the options, the target arch, the
// compiler version and a caller-supplied extra string (driver version).
// Disk entries are written to a temporary file in the same directory and
// renamed into place (atomic on POSIX), so a reader sees either nothing or a
// whole entry. Each entry carries a header (magic, version, its own key,
// format, payload length) and ends in a checksum of every byte before it; an
// entry that fails any check (damaged anywhere, another key's entry under this
// file name, an older version) or cannot be read at all (a directory at its
// path, an I/O error) is deleted where possible and rebuilt, never loaded, and
// never an error of the lookup. Entry file (<key>.tjkc): "TJKC", version byte
// (2), key, format string ("cubin", "hsaco"), u64 payload length, payload,
// XXH3-128 of all the preceding bytes. When such an entry cannot be replaced,
// the rebuilt kernel is kept in memory only (with a warning on stderr).
#pragma once
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tilejit/runtime/jit.hpp"

namespace tilejit::runtime {

class KernelCache {
 public:
  enum class Source { compiled, memory, disk };

  struct Entry {
    std::shared_ptr<const Binary> binary;
    Source source = Source::compiled;
    double compile_ms = 0;  // 0 unless compiled by this lookup
    double lookup_ms = 0;   // wall time of the whole lookup (compile included)
    std::string key;        // 32 hex digits
  };

  /// `dir` empty: memory only. The directory is created on first write;
  /// an unwritable directory degrades to memory-only with a warning on stderr.
  /// A relative `dir` is made absolute against the working directory here, once,
  /// so a later chdir does not move the cache.
  explicit KernelCache(std::filesystem::path dir);

  /// The process-wide cache: $TILEJIT_CACHE_DIR (relative: against the working
  /// directory of the first call), else $HOME/.cache/tilejit;
  /// TILEJIT_CACHE_DIR="" or "off" disables the disk level. The environment
  /// is read once, at the first call.
  static KernelCache& global();

  /// Returns the binary for `req`, compiling it on a miss. Compile errors
  /// propagate (nothing is stored for them), as does everything compile() and
  /// key() throw. Thread-safe: concurrent lookups of one key compile it once.
  Entry get_or_compile(const JitRequest& req, std::string_view extra_key = {});

  /// The cache key of `req` (32 lowercase hex digits). Includes
  /// compiler_version(), so throws DeviceUnavailable without the compiler.
  static std::string key(const JitRequest& req, std::string_view extra_key = {});

  /// Path of the disk entry for `key` (whether or not it exists); empty in memory-only mode.
  std::filesystem::path entry_path(const std::string& key) const;

  /// Drop the in-memory level (the disk level stays).
  void clear_memory();

  const std::filesystem::path& dir() const { return dir_; }

  struct Stats { std::uint64_t compiled = 0, memory_hits = 0, disk_hits = 0, corrupt_rebuilt = 0; };
  Stats stats() const;

 private:
  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const Binary>> mem_;
  Stats stats_;
  bool disk_writable_ = true;  // false once a write to the directory failed (warned once); reads go on
  // Lookups of a key some thread is compiling or reading from disk right now wait for it.
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<const Binary>>> inflight_;
};

}  // namespace tilejit::runtime

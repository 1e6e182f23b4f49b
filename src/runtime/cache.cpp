// src/runtime/cache.cpp — KernelCache (see cache.hpp).
//
// Disk entry <dir>/<key>.tjkc, all integers little-endian:
//   "TJKC"  u8 version (2)  u8 k  key[k]  u8 n  format[n]  u64 payload size  payload
//   16-byte XXH3-128 (canonical) of every byte before it
// The format is one the compilers write ("cubin", "ptx", "hsaco") and the payload is not empty.
// The checksum covers the whole header, so a damaged format string or key is detected like a damaged payload, and
// the entry names its own key, so an intact entry under another key's file name is not served for that key.
// Version 1 (checksum of the payload only, no key) is not read: such entries are rebuilt.
// An entry is installed by writing <dir>/.<key>.tjkc.<pid>.<random>.tmp, fsync, rename (write_file_atomically).
#include "tilejit/runtime/cache.hpp"

#include <xxhash.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <iterator>

#include "atomic_file.hpp"
#include "jit_internal.hpp"

namespace tilejit::runtime {
namespace {

constexpr char kMagic[4] = {'T', 'J', 'K', 'C'};
constexpr std::uint8_t kVersion = 2;

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

XXH128_canonical_t checksum(const void* data, std::size_t n) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data, n));
  return c;
}

std::string serialize(const std::string& key, const Binary& b) {
  std::string out(kMagic, 4);
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(key.size()));
  out += key;
  out.push_back(static_cast<char>(b.format.size()));
  out += b.format;
  put_u64(out, b.bytes.size());
  out.append(reinterpret_cast<const char*>(b.bytes.data()), b.bytes.size());
  const auto sum = checksum(out.data(), out.size());
  out.append(reinterpret_cast<const char*>(sum.digest), sizeof sum.digest);
  return out;
}

// The entry's binary, or nullptr when `data` is not a whole, intact entry of `key` in this version's format.
std::shared_ptr<const Binary> deserialize(const std::string& data, const std::string& key) {
  const std::size_t fixed = 4 + 1 + 1 + 1 + 8 + 16;  // magic, version, key length, format length, size, checksum
  if (data.size() < fixed + key.size() || std::memcmp(data.data(), kMagic, 4) != 0 ||
      static_cast<std::uint8_t>(data[4]) != kVersion)
    return nullptr;
  const std::size_t body = data.size() - 16;
  const auto actual = checksum(data.data(), body);
  if (std::memcmp(actual.digest, data.data() + body, 16) != 0) return nullptr;
  const char* p = data.data() + 5;
  const std::size_t key_len = static_cast<std::uint8_t>(*p++);
  if (key_len != key.size() || std::memcmp(p, key.data(), key_len) != 0) return nullptr;  // another key's entry
  p += key_len;
  const std::size_t fmt_len = static_cast<std::uint8_t>(*p++);
  if (fmt_len == 0 || data.size() < fixed + key_len + fmt_len) return nullptr;
  std::string format(p, fmt_len);
  p += fmt_len;
  // Only what the compilers write (a forged or future entry naming another format is not handed to a loader).
  if (format != "cubin" && format != "ptx" && format != "hsaco") return nullptr;
  const std::uint64_t size = get_u64(p);
  p += 8;
  if (size == 0 || size != data.size() - fixed - key_len - fmt_len) return nullptr;
  auto b = std::make_shared<Binary>();
  b->format = std::move(format);
  b->bytes.assign(reinterpret_cast<const std::uint8_t*>(p), reinterpret_cast<const std::uint8_t*>(p) + size);
  return b;
}

enum class DiskRead { missing, hit, corrupt };

// An entry that exists but cannot be read whole (a directory at its path, an I/O error) is corrupt, like one that
// fails a check: deleted where possible and rebuilt, never an error of the lookup.
DiskRead read_entry(const std::filesystem::path& path, const std::string& key, std::shared_ptr<const Binary>& out) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  // Absent, or its status unknowable (e.g. no permission on the directory): treated as absent, and the write
  // after the compile says whether the directory is usable.
  if (ec || st.type() == std::filesystem::file_type::not_found) return DiskRead::missing;
  std::string data;
  bool readable = std::filesystem::is_regular_file(st);
  // No entry is this large (cubins and code objects are a few MiB): a file that is, is not read into memory.
  constexpr std::uintmax_t kMaxEntryBytes = std::uintmax_t{256} << 20;
  if (readable) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    readable = !ec && size <= kMaxEntryBytes;
  }
  if (readable) {
    try {
      std::ifstream in(path, std::ios::binary);
      if (!in) return DiskRead::missing;  // cannot be opened (removed meanwhile, no permission): treated as absent
      data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      readable = !in.bad();
    } catch (const std::exception&) {  // libstdc++'s filebuf throws ios_base::failure on a read error
      readable = false;
    }
  }
  if (readable) out = deserialize(data, key);
  if (out) return DiskRead::hit;
  std::filesystem::remove(path, ec);  // never load it again; the rebuild rewrites it
  return DiskRead::corrupt;
}

void hash_field(XXH3_state_t* st, std::string_view s) {
  std::string len;
  put_u64(len, s.size());
  XXH3_128bits_update(st, len.data(), len.size());
  XXH3_128bits_update(st, s.data(), s.size());
}

}  // namespace

namespace {
// A relative directory is fixed against the working directory now: a chdir later in the process must not move the
// cache (entries written in one place, looked up in another). Where the working directory cannot be read, the path
// stays as given.
std::filesystem::path fixed_dir(std::filesystem::path dir) {
  if (dir.empty() || dir.is_absolute()) return dir;
  std::error_code ec;
  auto abs = std::filesystem::absolute(dir, ec);
  if (ec) return dir;
  abs = abs.lexically_normal();
  return abs.has_filename() ? abs : abs.parent_path();  // "a/x/.." normalises to "a/": the same directory as "a"
}
}  // namespace

KernelCache::KernelCache(std::filesystem::path dir) : dir_(fixed_dir(std::move(dir))) {}

KernelCache& KernelCache::global() {
  // Leaked on purpose: kernels may be looked up from static destructors.
  static KernelCache* cache = [] {
    std::filesystem::path dir;
    if (const char* env = std::getenv("TILEJIT_CACHE_DIR")) {
      if (std::string_view(env) != "off") dir = env;
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      dir = std::filesystem::path(home) / ".cache" / "tilejit";
    }
    return new KernelCache(std::move(dir));
  }();
  return *cache;
}

std::string KernelCache::key(const JitRequest& req, std::string_view extra_key) {
  XXH3_state_t* st = XXH3_createState();
  if (!st) throw std::bad_alloc();
  XXH3_128bits_reset(st);
  hash_field(st, "tilejit kernel cache v2");  // v2: NVRTC adds --generate-line-info
  hash_field(st, req.compiler == Compiler::nvrtc ? "nvrtc" : "hiprtc");
  hash_field(st, req.compiler == Compiler::hiprtc ? detail::hip_compiler_for(req.arch) : compiler_version(req.compiler));
  hash_field(st, req.arch);
  hash_field(st, req.name);
  hash_field(st, std::to_string(req.options.size()));
  for (const auto& o : req.options) hash_field(st, o);
  hash_field(st, req.source);
  hash_field(st, extra_key);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
  XXH3_freeState(st);
  std::string hex;
  for (unsigned char byte : c.digest) hex += fmt::format("{:02x}", byte);
  return hex;
}

std::filesystem::path KernelCache::entry_path(const std::string& key) const {
  return dir_.empty() ? std::filesystem::path{} : dir_ / (key + ".tjkc");
}

void KernelCache::clear_memory() {
  std::lock_guard lock(mu_);
  mem_.clear();
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

KernelCache::Entry KernelCache::get_or_compile(const JitRequest& req, std::string_view extra_key) {
  const auto t0 = Clock::now();
  Entry e;
  e.key = key(req, extra_key);

  std::promise<std::shared_ptr<const Binary>> promise;
  bool use_disk = false, write_disk = false;
  {
    std::unique_lock lock(mu_);
    if (auto it = mem_.find(e.key); it != mem_.end()) {
      ++stats_.memory_hits;
      e.binary = it->second;
      e.source = Source::memory;
      e.lookup_ms = ms_since(t0);
      return e;
    }
    if (auto it = inflight_.find(e.key); it != inflight_.end()) {
      // Another thread is producing this key: share its result (or its error).
      auto fut = it->second;
      lock.unlock();
      e.binary = fut.get();
      lock.lock();
      ++stats_.memory_hits;
      e.source = Source::memory;
      e.lookup_ms = ms_since(t0);
      return e;
    }
    inflight_.emplace(e.key, promise.get_future().share());
    use_disk = !dir_.empty();
    write_disk = use_disk && disk_writable_;
  }

  try {
    bool corrupt = false;
    std::string disk_error;
    const auto path = entry_path(e.key);
    if (use_disk) {
      switch (read_entry(path, e.key, e.binary)) {
        case DiskRead::hit: e.source = Source::disk; break;
        case DiskRead::corrupt: corrupt = true; break;
        case DiskRead::missing: break;
      }
    }
    if (!e.binary) {
      JitResult r = compile(req);
      e.compile_ms = r.compile_ms;
      e.source = Source::compiled;
      e.binary = std::make_shared<const Binary>(std::move(r.binary));
      if (write_disk || (use_disk && corrupt)) disk_error = detail::write_file_atomically(path, serialize(e.key, *e.binary));
    }
    {
      std::lock_guard lock(mu_);
      mem_[e.key] = e.binary;
      inflight_.erase(e.key);
      if (e.source == Source::disk) ++stats_.disk_hits;
      if (e.source == Source::compiled) ++stats_.compiled;
      if (corrupt) ++stats_.corrupt_rebuilt;
      if (!disk_error.empty() && corrupt) {
        // Only this entry's path is unusable (e.g. a directory stands there): the others still go to disk.
        std::cerr << fmt::format("tilejit: warning: kernel cache entry {} is unreadable and could not be replaced ({}); "
                                 "keeping this kernel in memory only\n",
                                 path.string(), disk_error);
      } else if (!disk_error.empty() && disk_writable_) {
        // Entries already there are still read (a read-only, pre-filled cache keeps serving them).
        disk_writable_ = false;
        std::cerr << fmt::format("tilejit: warning: kernel cache directory {} is not writable ({}); new kernels are "
                                 "cached in memory only, entries already there are still read\n",
                                 dir_.string(), disk_error);
      }
    }
    promise.set_value(e.binary);
  } catch (...) {
    {
      std::lock_guard lock(mu_);
      inflight_.erase(e.key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  e.lookup_ms = ms_since(t0);
  return e;
}

}  // namespace tilejit::runtime

// src/runtime/atomic_file.cpp — see atomic_file.hpp.
#include "atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>

#include <fmt/format.h>

namespace tilejit::runtime {
namespace detail {
bool write_all(int fd, const void* p, std::size_t n) {
  auto* b = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    b += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}
}  // namespace detail

std::string write_file_atomically(const std::filesystem::path& path, std::string_view data) {
  std::error_code ec;
  const std::filesystem::path dir = path.parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return fmt::format("cannot create {}: {}", dir.string(), ec.message());
  thread_local std::mt19937_64 rng{std::random_device{}() ^ std::uint64_t(::getpid()) << 32};
  const auto tmp = dir / fmt::format(".{}.{}.{:016x}.tmp", path.filename().string(), ::getpid(), rng());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot create {}: {}", tmp.string(), std::strerror(errno));
  std::string err;
  if (!detail::write_all(fd, data.data(), data.size())) err = fmt::format("write failed: {}", std::strerror(errno));
  else if (::fsync(fd) != 0) err = fmt::format("fsync failed: {}", std::strerror(errno));
  if (::close(fd) != 0 && err.empty()) err = fmt::format("close failed: {}", std::strerror(errno));
  if (err.empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
    err = fmt::format("rename to {} failed: {}", path.string(), std::strerror(errno));
  if (!err.empty()) ::unlink(tmp.c_str());
  return err;
}

}  // namespace tilejit::runtime

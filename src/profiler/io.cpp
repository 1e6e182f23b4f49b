#include "io.hpp"

#include <atomic>
#include <algorithm>
#include <chrono>
#include <set>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace tilejit::profiler::detail {
namespace {

std::atomic<int> g_fault_error{0};
std::atomic<std::size_t> g_fault_after{0};
std::atomic<unsigned> g_tmp_counter{0};

std::string dir_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

WriteResult fail(int err, const std::string& what, const std::string& file) {
  return {err, what + " '" + file + "': " + std::strerror(err)};
}

}  // namespace

void inject_write_fault(int error, std::size_t after_bytes) noexcept {
  g_fault_after.store(after_bytes);
  g_fault_error.store(error);
}

namespace {

/// A temporary file being written for `path`.
struct Pending {
  std::string tmp;
  int fd = -1;
};

/// Create the temporary for `path` and write `bytes` into it (no fsync).
WriteResult write_tmp(const std::string& path, std::string_view bytes, Pending& out) {
  // <path>.tmp.<pid>.<n>, or <dir>/.tilejit.tmp.<pid>.<n> where that would pass the file-name limit (NAME_MAX)
  // while the final name does not.
  const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(g_tmp_counter.fetch_add(1));
  const std::size_t slash = path.rfind('/'), dir_len = slash == std::string::npos ? 0 : slash + 1;
  out.tmp = path.size() - dir_len + suffix.size() <= NAME_MAX ? path + suffix : path.substr(0, dir_len) + ".tilejit" + suffix;
  int fd = ::open(out.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errno, "cannot create", out.tmp);
  auto abandon = [&](int err, const char* what) {
    ::close(fd);
    ::unlink(out.tmp.c_str());
    return fail(err, what, out.tmp);
  };
  const int fault = g_fault_error.load();
  const std::size_t fault_after = g_fault_after.load();
  std::size_t done = 0;
  while (done < bytes.size()) {
    std::size_t want = bytes.size() - done;
    if (fault != 0) {
      if (done >= fault_after) return abandon(fault, "cannot write");
      want = std::min(want, fault_after - done);
    }
    ssize_t n = ::write(fd, bytes.data() + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      return abandon(errno, "cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (fault != 0) return abandon(fault, "cannot write");  // fault_after >= size: fail at the end
  out.fd = fd;
  return {};
}

/// fsync (optionally), close and rename the temporary into place.
WriteResult finish_tmp(const std::string& path, Pending& p, bool do_fsync) {
  if (do_fsync && ::fsync(p.fd) != 0) {
    int err = errno;
    ::close(p.fd);
    ::unlink(p.tmp.c_str());
    return fail(err, "cannot fsync", p.tmp);
  }
  if (::close(p.fd) != 0) {
    int err = errno;
    ::unlink(p.tmp.c_str());
    return fail(err, "cannot close", p.tmp);
  }
  p.fd = -1;
  if (::rename(p.tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(p.tmp.c_str());
    return fail(err, "cannot rename to", path);
  }
  return {};
}

void fsync_dir(const std::string& dir) {  // make renames durable
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

WriteResult write_atomic(const std::string& path, std::string_view bytes, bool do_fsync) {
  Pending p;
  if (WriteResult r = write_tmp(path, bytes, p); r.error != 0) return r;
  if (WriteResult r = finish_tmp(path, p, do_fsync); r.error != 0) return r;
  if (do_fsync) fsync_dir(dir_of(path));
  return {};
}

void write_atomic_batch(std::vector<BatchFile>& files, bool do_fsync) {
  std::vector<Pending> tmp(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    files[i].result = write_tmp(files[i].path, files[i].bytes, tmp[i]);
    files[i].write_ms = ms_since(t0);
  }
  std::set<std::string> dirs;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (files[i].result.error != 0) continue;
    const auto t0 = std::chrono::steady_clock::now();
    files[i].result = finish_tmp(files[i].path, tmp[i], do_fsync);
    files[i].write_ms += ms_since(t0);
    if (files[i].result.error == 0) dirs.insert(dir_of(files[i].path));
  }
  if (do_fsync)
    for (const auto& d : dirs) fsync_dir(d);
}

}  // namespace tilejit::profiler::detail

#include "io.hpp"

#include <atomic>
#include <cerrno>
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

WriteResult write_atomic(const std::string& path, std::string_view bytes, bool do_fsync) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(g_tmp_counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errno, "cannot create", tmp);

  auto abandon = [&](int err, const char* what) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return fail(err, what, tmp);
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
  if (do_fsync && ::fsync(fd) != 0) return abandon(errno, "cannot fsync");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return fail(err, "cannot close", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return fail(err, "cannot rename to", path);
  }
  if (do_fsync) {  // make the rename itself durable
    int dfd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  return {};
}

}  // namespace tilejit::profiler::detail

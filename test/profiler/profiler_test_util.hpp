// Helpers shared by the profiler tests: a temporary directory, JSON tree
// navigation, and MockBackend — a test double of a GPU activity source that
// delivers the kernel records a test queues, on flush.
#pragma once
#include <stdexcept>
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <tilejit/profiler/profiler.hpp>

namespace prof_test {

namespace fs = std::filesystem;
using json = nlohmann::json;
namespace tp = tilejit::profiler;

inline fs::path temp_dir(std::string_view tag) {
  fs::path p = fs::temp_directory_path() /
               ("tilejit_prof_" + std::to_string(::getpid()) + "_" + std::string(tag));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
inline json read_json(const fs::path& p) { return json::parse(read_file(p)); }
inline json read_msgpack(const fs::path& p) {
  std::string bytes = read_file(p);
  return json::from_msgpack(bytes.begin(), bytes.end());
}

/// The child of a hatchet node named `name`, or nullptr.
inline const json* child(const json& node, std::string_view name) {
  for (const auto& c : node.at("children"))
    if (c.at("frame").at("name") == name) return &c;
  return nullptr;
}

/// The node at `path` below `root` (a hatchet node); fails the test if absent.
inline const json& at(const json& root, std::initializer_list<std::string_view> path) {
  const json* n = &root;
  for (auto name : path) {
    const json* c = child(*n, name);
    REQUIRE_MESSAGE(c != nullptr, "no node '" << name << "'");
    n = c;
  }
  return *n;
}

inline std::vector<std::string> child_names(const json& node) {
  std::vector<std::string> out;
  for (const auto& c : node.at("children")) out.push_back(c.at("frame").at("name"));
  return out;
}

/// Files in a directory, sorted by name.
inline std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// Captures what the process writes to stderr (fd 2) while alive.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    path_ = fs::temp_directory_path() / ("tj_cupti_stderr_" + std::to_string(::getpid()));
    int fd = ::open(path_.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    saved_ = ::dup(2);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() { restore(); }
  std::string text() {
    restore();
    return read_file(path_);
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  fs::path path_;
  int saved_ = -1;
};

class MockBackend final : public tp::Backend {
 public:
  void start(tp::Sink& sink, const tp::BackendConfig& config) override {
    sink_ = &sink;
    config_ = config;
    sink.device(tp::DeviceType::CUDA, 0, {1980000, 2619000, 6144, 132, "90a"});
    latest() = this;
  }
  void flush() override {
    if (throw_on_flush) throw std::runtime_error("flush boom");
    std::lock_guard g(mu_);
    for (const auto& r : queued_) sink_->kernel(r);
    queued_.clear();
    ++flushes;
    flush_threads.push_back(std::this_thread::get_id());
  }
  void stop() override {
    stopped = true;
    stops() += 1;  // outlives the backend, which the session deletes at finalize
  }
  /// How many MockBackends have been stopped in this process.
  static int& stops() {
    static int n = 0;
    return n;
  }

  /// Queue a record; it is delivered at the session's next flush.
  void push(tp::KernelRecord r) {
    std::lock_guard g(mu_);
    queued_.push_back(std::move(r));
  }
  /// Deliver right away, as a backend's own buffer-completion thread would.
  void deliver(const tp::KernelRecord& r) { sink_->kernel(r); }
  /// The same for a batch (Sink::kernels), as the CUPTI backend hands over a buffer.
  void deliver(std::span<const tp::KernelRecord> records) { sink_->kernels(records); }

  const tp::BackendConfig& config() const { return config_; }
  int flushes = 0;
  std::vector<std::thread::id> flush_threads;  // where each flush ran
  bool stopped = false;
  bool throw_on_flush = false;  // flush() throws (a backend failing at the end)

  /// The most recently started MockBackend.
  static MockBackend*& latest() {
    static MockBackend* p = nullptr;
    return p;
  }

 private:
  tp::Sink* sink_ = nullptr;
  tp::BackendConfig config_;
  std::mutex mu_;
  std::vector<tp::KernelRecord> queued_;
};

inline void register_mock() {
  static const bool once = [] {
    tp::register_backend("mock", [] { return std::make_unique<MockBackend>(); });
    return true;
  }();
  (void)once;
}

/// A kernel record at [start, start + dur) on the profiler clock.
inline tp::KernelRecord record(std::string name, std::uint64_t corr, std::uint64_t start,
                               std::uint64_t dur, std::uint32_t stream = 7) {
  tp::KernelRecord r;
  r.name = std::move(name);
  r.correlation_id = corr;
  r.start_ns = start;
  r.end_ns = start + dur;
  r.stream_id = stream;
  return r;
}

}  // namespace prof_test

// examples/profiler_plugin/toy_gpu_plugin.cpp — an out-of-tree profiler backend.
//
// "toy_gpu" is a simulated GPU with its own activity source, built as a
// plugin with tilejit_add_profiler_plugin() (see CMakeLists.txt here) and
// loaded with tilejit::profiler::load_plugin() or TILEJIT_PROFILER_PLUGINS.
// It needs no GPU, so it shows — and the tests check — the whole backend
// contract of tilejit/profiler/backend.hpp from outside tilejit's tree:
//
//   toygpu_launch("gemm", 5000, 1)   the application "launches" a kernel of
//                                    5 us on stream 1: the plugin correlates
//                                    the launch on the calling thread
//                                    (host->correlate_launch) and queues it on
//                                    the stream's timeline;
//   a completion thread              delivers each kernel's record to every
//                                    session's sink once its simulated end
//                                    time has passed (asynchronously, as
//                                    CUPTI's buffer callbacks do);
//   Backend::flush()                 waits for the kernels launched before it
//                                    and delivers them.
//
// The plugin links no tilejit library: it calls tilejit only through the
// PluginHost table it is handed at load time.
#include <tilejit/profiler/plugin.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace tp = tilejit::profiler;

namespace {

const tp::PluginHost* g_host = nullptr;

struct Launched {
  std::string name;
  std::uint64_t correlation, start, end;
  std::uint32_t stream;
};

/// The simulated device, shared by every session using the backend.
class ToyGpu {
 public:
  static ToyGpu& instance() {
    static auto* g = new ToyGpu;  // never destroyed: the completion thread may outlive statics
    return *g;
  }

  std::uint64_t launch(const char* kernel, std::uint64_t duration_ns, std::uint32_t stream) {
    std::uint64_t corr;
    {
      std::lock_guard g(mu_);
      corr = next_correlation_++;
    }
    g_host->correlate_launch(corr);  // on the launching thread, before the kernel can complete
    std::lock_guard g(mu_);
    const std::uint64_t now = g_host->now_ns();
    std::uint64_t& free_at = stream_free_[stream];
    const std::uint64_t start = std::max(now, free_at);
    free_at = start + duration_ns;
    running_.push_back({kernel ? kernel : "<null>", corr, start, start + duration_ns, stream});
    return corr;
  }

  /// Block until every kernel launched so far has ended (simulated time).
  void synchronize() {
    std::uint64_t last = 0;
    {
      std::lock_guard g(mu_);
      for (const auto& k : running_) last = std::max(last, k.end);
    }
    while (g_host->now_ns() < last) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }

  void attach(tp::Sink* sink) {
    std::lock_guard g(mu_);
    sinks_.push_back(sink);
    if (sinks_.size() == 1) {
      stop_ = false;
      completer_ = std::thread([this] { run(); });
    }
  }

  void detach(tp::Sink* sink) {
    std::thread t;
    {
      std::lock_guard g(mu_);
      std::erase(sinks_, sink);
      if (!sinks_.empty()) return;
      stop_ = true;
      t = std::move(completer_);
    }
    cv_.notify_all();
    if (t.joinable()) t.join();
  }

  /// Deliver every kernel launched before this call.
  void flush() {
    synchronize();
    std::lock_guard g(mu_);
    deliver_locked();
  }

 private:
  void run() {
    std::unique_lock lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::milliseconds(1));
      deliver_locked();
    }
  }

  void deliver_locked() {
    const std::uint64_t now = g_host->now_ns();
    auto done = std::stable_partition(running_.begin(), running_.end(),
                                      [&](const Launched& k) { return k.end > now; });
    for (auto it = done; it != running_.end(); ++it) {
      tp::KernelRecord r;
      r.name = it->name;
      r.correlation_id = it->correlation;
      r.start_ns = it->start;
      r.end_ns = it->end;
      r.device_id = kDevice;
      r.device_type = tp::DeviceType::CUDA;
      r.stream_id = it->stream;
      for (tp::Sink* s : sinks_) s->kernel(r);
    }
    running_.erase(done, running_.end());
  }

 public:
  static constexpr std::uint32_t kDevice = 7;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_correlation_ = 1;
  std::map<std::uint32_t, std::uint64_t> stream_free_;
  std::vector<Launched> running_;
  std::vector<tp::Sink*> sinks_;
  std::thread completer_;
  bool stop_ = false;
};

class ToyBackend final : public tp::Backend {
 public:
  void start(tp::Sink& sink, const tp::BackendConfig& config) override {
    if (!config.mode.empty())
      throw std::invalid_argument("toy_gpu: no modes are supported (got '" + config.mode + "')");
    sink.device(tp::DeviceType::CUDA, ToyGpu::kDevice, {1'000'000, 500'000, 128, 4, "toy"});
    ToyGpu::instance().attach(&sink);
    sink_ = &sink;
  }
  void flush() override { ToyGpu::instance().flush(); }
  void stop() override {
    if (sink_) ToyGpu::instance().detach(std::exchange(sink_, nullptr));
  }
  ~ToyBackend() override { stop(); }

 private:
  tp::Sink* sink_ = nullptr;
};

std::unique_ptr<tp::Backend> create(const tp::PluginHost&) { return std::make_unique<ToyBackend>(); }

const tp::ProfilerPart kProfilerPart{.backend = "toy_gpu", .create = &create};
const tp::PluginRegistration kRegistration{
    .abi_version = tp::kPluginAbiVersion, .name = "toy_gpu", .version = "1.0", .profiler = &kProfilerPart};

}  // namespace

TILEJIT_PROFILER_PLUGIN(const tp::PluginHost& host) {
  if (host.abi_version != tp::kPluginAbiVersion) return nullptr;
  g_host = &host;
  return &kRegistration;
}

// The toy device's own API, found by the application with dlsym.
extern "C" __attribute__((visibility("default"))) std::uint64_t toygpu_launch(const char* kernel,
                                                                             std::uint64_t duration_ns,
                                                                             std::uint32_t stream) {
  return ToyGpu::instance().launch(kernel, duration_ns, stream);
}
extern "C" __attribute__((visibility("default"))) void toygpu_synchronize() { ToyGpu::instance().synchronize(); }

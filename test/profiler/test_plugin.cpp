// Backend plugins (tilejit/profiler/plugin.hpp): the toy_gpu example plugin
// (examples/profiler_plugin, built with tilejit_add_profiler_plugin and linked
// against no tilejit library) loaded with dlopen and driven through a session;
// register_plugin's checks; load_plugin's errors.
#include <dlfcn.h>

#include <thread>

#include "profiler_test_util.hpp"
#include <tilejit/profiler/plugin.hpp>

using namespace prof_test;
namespace tp = tilejit::profiler;

namespace tilejit::profiler::detail {
std::size_t load_plugin_list(std::string_view list);  // plugin.cpp: TILEJIT_PROFILER_PLUGINS
}

namespace {

using LaunchFn = std::uint64_t (*)(const char*, std::uint64_t, std::uint32_t);
using SyncFn = void (*)();

struct ToyGpu {
  tp::PluginInfo info;
  LaunchFn launch = nullptr;
  SyncFn synchronize = nullptr;
};

const ToyGpu& toy_gpu() {
  static const ToyGpu t = [] {
    ToyGpu x;
    x.info = tp::load_plugin(TILEJIT_TOY_GPU_PLUGIN);
    x.launch = reinterpret_cast<LaunchFn>(::dlsym(x.info.handle, "toygpu_launch"));
    x.synchronize = reinterpret_cast<SyncFn>(::dlsym(x.info.handle, "toygpu_synchronize"));
    return x;
  }();
  return t;
}

bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const tilejit::InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument thrown)";
}

}  // namespace

TEST_CASE("profiler plugin: the toy_gpu plugin loads and registers its backend") {
  const ToyGpu& t = toy_gpu();
  CHECK(t.info.name == "toy_gpu");
  CHECK(t.info.version == "1.0");
  CHECK(t.info.backends == std::vector<std::string>{"toy_gpu"});
  CHECK(t.info.path.ends_with("tilejit_toy_gpu.so"));
  REQUIRE((t.launch != nullptr));
  REQUIRE((t.synchronize != nullptr));
  auto names = tp::registered_backends();
  CHECK(std::find(names.begin(), names.end(), "toy_gpu") != names.end());
  auto all = tp::plugins();
  CHECK(std::count_if(all.begin(), all.end(), [](const tp::PluginInfo& p) { return p.name == "toy_gpu"; }) == 1);
  // Loading the same file again is a no-op returning the first load.
  CHECK(tp::load_plugin(TILEJIT_TOY_GPU_PLUGIN).handle == t.info.handle);
  // The plugin links no libtilejit: it cannot define tilejit's own symbols.
  CHECK(::dlsym(t.info.handle, "_ZN7tilejit8profiler16correlate_launchEm") == nullptr);
}

TEST_CASE("profiler plugin: toy_gpu kernels land under the scopes that launched them") {
  const ToyGpu& t = toy_gpu();
  auto dir = temp_dir("plugin_toy");
  auto s = tp::start((dir / "toy").string(), {.backend = "toy_gpu", .format = "hatchet"});
  REQUIRE(tp::stats(s).kernel_records);
  {
    tp::Scope step("step");
    {
      tp::Scope f("forward");
      t.launch("gemm", 20'000, 1);
      t.launch("gemm", 20'000, 1);
    }
    std::thread other([&] {  // another thread, its own scope stack
      tp::Scope o("loader");
      t.launch("copy", 5'000, 2);
    });
    other.join();
  }
  t.launch("outside", 1'000, 1);  // no scope open: under ROOT
  // Let the plugin's completion thread deliver some records asynchronously,
  // then finalize flushes the rest.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto rep = tp::finalize(s);
  REQUIRE(rep.files.size() == 1);
  json j = read_json(rep.files[0]);
  const json& root = j[0];
  CAPTURE(root.dump());
  const json& gemm = at(root, {"step", "forward", "gemm"});
  CHECK(gemm["metrics"]["count"] == 2);
  CHECK(gemm["metrics"]["time (ns)"] == 40'000);  // simulated durations, exact
  CHECK(gemm["metrics"]["device_id"] == "7");
  CHECK(at(root, {"loader", "copy"})["metrics"]["time (ns)"] == 5'000);
  CHECK(at(root, {"outside"})["metrics"]["count"] == 1);
  CHECK(at(root, {"step"})["metrics"]["time (ns) (inc)"] == 40'000);
  CHECK(j[1]["CUDA"]["7"]["arch"] == "toy");
  CHECK(j[1]["CUDA"]["7"]["num_sms"] == 4);
}

TEST_CASE("profiler plugin: a toy_gpu Chrome trace has the plugin's stream lanes and launch flows") {
  const ToyGpu& t = toy_gpu();
  auto dir = temp_dir("plugin_trace");
  auto s = tp::start((dir / "trace").string(), {.backend = "toy_gpu", .format = "chrome_trace"});
  {
    tp::Scope a("a");
    t.launch("k", 3'000, 4);
  }
  t.synchronize();
  auto rep = tp::finalize(s);
  REQUIRE(rep.files.size() == 1);
  json j = read_json(rep.files[0]);
  int kernels = 0, flows = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") == "kernel") {
      ++kernels;
      CHECK(e["name"] == "k");
      CHECK(e["tid"] == 1'000'000 + 100'000 * 7 + 4);
      CHECK(e["args"]["call_stack"] == json::array({"a", "k"}));
      CHECK(e["dur"].get<double>() == doctest::Approx(3.0));
    }
    if (e.value("name", "") == "launch->kernel") ++flows;
  }
  CHECK(kernels == 1);
  CHECK(flows == 2);
}

TEST_CASE("profiler plugin: a backend's start() error leaves a session without kernel records") {
  toy_gpu();
  auto dir = temp_dir("plugin_mode");
  auto s = tp::start((dir / "m").string(), {.backend = "toy_gpu", .mode = "turbo"});
  CHECK_FALSE(tp::stats(s).kernel_records);
  tp::finalize(s);
}

namespace {
struct NullBackend final : tp::Backend {
  void start(tp::Sink&, const tp::BackendConfig&) override {}
  void flush() override {}
  void stop() override {}
};
std::unique_ptr<tp::Backend> make_null(const tp::PluginHost&) { return std::make_unique<NullBackend>(); }
}  // namespace

TEST_CASE("profiler plugin: register_plugin checks the registration") {
  static const tp::ProfilerPart part{.backend = "linked_null", .create = &make_null};
  static const tp::PluginRegistration good{.name = "linked", .version = "0.1", .profiler = &part};
  auto info = tp::register_plugin(good);
  CHECK(info.name == "linked");
  CHECK(info.path.empty());
  CHECK(info.handle == nullptr);
  CHECK(info.backends == std::vector<std::string>{"linked_null"});
  auto dir = temp_dir("plugin_linked");
  auto s = tp::start((dir / "l").string(), {.backend = "linked_null"});
  CHECK(tp::stats(s).kernel_records);
  tp::finalize(s);

  CHECK(contains(error_of([&] { tp::register_plugin(good); }), "already registered"));
  tp::PluginRegistration r = good;
  r.name = "other";
  r.abi_version = tp::kPluginAbiVersion + 1;
  CHECK(contains(error_of([&] { tp::register_plugin(r); }), "ABI version"));
  r.abi_version = tp::kPluginAbiVersion;
  r.name = "";
  CHECK(contains(error_of([&] { tp::register_plugin(r); }), "no name"));
  const tp::ProfilerPart reserved{.backend = "none", .create = &make_null};
  r = {.name = "reserved", .profiler = &reserved};
  CHECK(contains(error_of([&] { tp::register_plugin(r); }), "reserved"));
  const tp::ProfilerPart no_create{.backend = "x", .create = nullptr};
  r = {.name = "nocreate", .profiler = &no_create};
  CHECK(contains(error_of([&] { tp::register_plugin(r); }), "no create function"));
  // A plugin with no profiler part registers no backend.
  static const tp::PluginRegistration bare{.name = "bare"};
  CHECK(tp::register_plugin(bare).backends.empty());
  const tp::PluginHost& h = tp::plugin_host();
  CHECK(h.abi_version == tp::kPluginAbiVersion);
  CHECK((h.correlate_launch != nullptr && h.correlate_graph_launch != nullptr && h.cancel_launch != nullptr));
  CHECK((h.now_ns != nullptr && h.graph_node_captured != nullptr && h.graph_node_cloned != nullptr && h.graph_node_destroyed != nullptr));
  const auto t0 = tp::now_ns();
  CHECK(h.now_ns() >= t0);
}

TEST_CASE("profiler plugin: load_plugin errors name the file and the reason") {
  auto missing = error_of([] { tp::load_plugin("/nonexistent/plugin.so"); });
  CHECK(contains(missing, "/nonexistent/plugin.so"));
  CHECK(contains(missing, "cannot load"));
  // A shared library without the entry point (libc's loader is one).
  auto not_plugin = error_of([] { tp::load_plugin("libm.so.6"); });
  CHECK(contains(not_plugin, "no entry point 'tilejit_profiler_plugin_v1'"));
}

TEST_CASE("profiler plugin: a TILEJIT_PROFILER_PLUGINS list loads what it can and reports the rest") {
  toy_gpu();
  StderrCapture err;
  const std::string list = std::string("/nonexistent/a.so::") + TILEJIT_TOY_GPU_PLUGIN;
  CHECK(tp::detail::load_plugin_list(list) == 1);  // toy_gpu (already loaded: the same PluginInfo)
  const std::string text = err.text();
  CHECK(contains(text, "TILEJIT_PROFILER_PLUGINS"));
  CHECK(contains(text, "/nonexistent/a.so"));
  CHECK(contains(text, "skipped"));
}

// tilejit/profiler/plugin.hpp — out-of-tree backends (plugins).
//
// A plugin is a shared library, built outside tilejit's tree with the CMake
// helper `tilejit_add_profiler_plugin()` (cmake/tilejitProfilerPlugin.cmake,
// installed with find_package(tilejit)), that exports one C entry point:
//
//   #include <tilejit/profiler/plugin.hpp>
//   namespace tp = tilejit::profiler;
//   static const tp::PluginHost* host;            // tilejit's calls, as pointers
//   static std::unique_ptr<tp::Backend> create(const tp::PluginHost& h) { ... }
//   static const tp::ProfilerPart part{.backend = "toy_gpu", .create = &create};
//   static const tp::PluginRegistration reg{.name = "toy_gpu", .version = "1.0", .profiler = &part};
//   TILEJIT_PROFILER_PLUGIN(const tp::PluginHost& h) { host = &h; return &reg; }
//
// and an application loads it with `load_plugin(path)` or by listing it in
// TILEJIT_PROFILER_PLUGINS (colon-separated paths, read at the first start()).
// Its backend is then `Options::backend = "toy_gpu"` like any other.
//
// A plugin does not link against libtilejit: everything it calls in tilejit
// comes through the PluginHost table (correlate_launch, now_ns ...), so the
// one profiler of the host process is the one it feeds, whether tilejit is a
// static or a shared library there. It includes tilejit's headers only, and
// shares tilejit's C++ ABI (the same compiler family and standard library):
// Backend, Sink and KernelRecord cross the boundary as C++ types.
//
// A library linked into the application (not dlopen'ed) can call
// register_plugin() itself with the same registration struct.
//
// The registration struct has a profiler part only: the device and runtime
// parts of DESIGN.md §5 belong to the runtime and are not part of the ABI.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tilejit/profiler/backend.hpp>

namespace tilejit::profiler {

/// Bumped whenever PluginHost, ProfilerPart, PluginRegistration or the
/// virtual functions of Backend / Sink change. 2: Sink::kernels (a batch).
inline constexpr std::uint32_t kPluginAbiVersion = 2;

/// tilejit's backend-facing calls, handed to a plugin at load time.
struct PluginHost {
  std::uint32_t abi_version = kPluginAbiVersion;
  /// correlate_launch() (backend.hpp): on the launching thread, at launch time.
  void (*correlate_launch)(std::uint64_t correlation_id) noexcept = nullptr;
  /// now_ns(): the profiler clock every KernelRecord time must use.
  std::uint64_t (*now_ns)() noexcept = nullptr;
  /// CUDA-graph calls (backend.hpp, "CUDA graphs").
  void (*graph_node_captured)(std::uint64_t node_id) noexcept = nullptr;
  void (*graph_node_cloned)(std::uint64_t original_id, std::uint64_t clone_id) noexcept = nullptr;
  void (*graph_node_destroyed)(std::uint64_t node_id) noexcept = nullptr;
  void (*correlate_graph_launch)(std::uint64_t correlation_id, std::uint32_t kernels) noexcept = nullptr;
  void (*cancel_launch)(std::uint64_t correlation_id) noexcept = nullptr;
};

/// The profiler part of a plugin: one backend.
struct ProfilerPart {
  /// The name sessions select it by (Options::backend). Not "", "none".
  const char* backend = nullptr;
  /// Make one backend per session. May throw (start() then reports it).
  std::unique_ptr<Backend> (*create)(const PluginHost& host) = nullptr;
};

/// What a plugin's entry point returns. Must stay valid for the life of the
/// process (plugins are never unloaded): a static object.
struct PluginRegistration {
  std::uint32_t abi_version = kPluginAbiVersion;  ///< must equal kPluginAbiVersion
  const char* name = nullptr;                     ///< required, unique per process
  const char* version = nullptr;                  ///< free text, may be null
  const ProfilerPart* profiler = nullptr;         ///< optional
};

/// A plugin known to this process.
struct PluginInfo {
  std::string name;
  std::string version;
  std::string path;                   ///< "" for register_plugin()
  std::vector<std::string> backends;  ///< backend names it registered
  void* handle = nullptr;             ///< dlopen handle (dlsym the plugin's own API); null if linked in
};

/// The table tilejit hands to plugins (also usable by linked-in backends).
const PluginHost& plugin_host() noexcept;

/// Register a plugin linked into the application. Throws InvalidArgument for
/// a wrong ABI version, a missing name, a name already registered or an
/// invalid profiler part (no backend name, reserved name, no create).
PluginInfo register_plugin(const PluginRegistration& registration);

/// dlopen `path` (RTLD_NOW | RTLD_LOCAL), call its entry point
/// (`tilejit_profiler_plugin_v1`) and register what it returns. Loading the
/// same file again returns the first load's PluginInfo. Throws InvalidArgument
/// naming the path and the reason: not loadable (dlerror), no entry point, a
/// null registration, or any reason register_plugin() throws.
PluginInfo load_plugin(const std::string& path);

/// Every plugin registered so far, in registration order.
std::vector<PluginInfo> plugins();

}  // namespace tilejit::profiler

/// The entry point's C name and type.
#define TILEJIT_PROFILER_PLUGIN_ENTRY "tilejit_profiler_plugin_v1"
extern "C" {
using tilejit_profiler_plugin_fn =
    const tilejit::profiler::PluginRegistration* (*)(const tilejit::profiler::PluginHost* host);
}

/// Define the entry point in one source file of a plugin:
///   TILEJIT_PROFILER_PLUGIN(const tilejit::profiler::PluginHost& host) { ...; return &registration; }
#define TILEJIT_PROFILER_PLUGIN(host_param)                                                          \
  static const ::tilejit::profiler::PluginRegistration* tilejit_profiler_plugin_body(host_param);    \
  extern "C" __attribute__((visibility("default"))) const ::tilejit::profiler::PluginRegistration*   \
  tilejit_profiler_plugin_v1(const ::tilejit::profiler::PluginHost* host) {                        \
    return host ? tilejit_profiler_plugin_body(*host) : nullptr;                                     \
  }                                                                                                  \
  static const ::tilejit::profiler::PluginRegistration* tilejit_profiler_plugin_body(host_param)

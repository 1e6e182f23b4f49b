// Backend plugins: the host table, register_plugin, load_plugin (dlopen) and
// TILEJIT_PROFILER_PLUGINS. See include/tilejit/profiler/plugin.hpp.
#include <tilejit/profiler/plugin.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string_view>

#include <fmt/core.h>

#include "tilejit/core/error.hpp"

namespace tilejit::profiler {
namespace {

struct Plugins {
  std::mutex mu;
  std::vector<PluginInfo> list;
};
Plugins& plugins_state() {
  static auto* p = new Plugins;  // never destroyed: plugins are never unloaded
  return *p;
}

void host_correlate_launch(std::uint64_t id) noexcept { correlate_launch(id); }
std::uint64_t host_now_ns() noexcept { return now_ns(); }

/// Validate and register (plugins_state().mu held).
PluginInfo register_locked(const PluginRegistration& r, const std::string& path, void* handle) {
  const std::string where = path.empty() ? std::string("register_plugin") : "load_plugin('" + path + "')";
  if (r.abi_version != kPluginAbiVersion)
    throw InvalidArgument(fmt::format("profiler::{}: plugin ABI version {} is not this tilejit's ({}); "
                                      "rebuild the plugin against this tilejit",
                                      where, r.abi_version, kPluginAbiVersion));
  if (!r.name || !*r.name) throw InvalidArgument("profiler::" + where + ": the plugin has no name");
  for (const auto& p : plugins_state().list)
    if (p.name == r.name)
      throw InvalidArgument(fmt::format("profiler::{}: a plugin named '{}' is already registered{}", where,
                                        r.name, p.path.empty() ? "" : " (from " + p.path + ")"));
  PluginInfo info{r.name, r.version ? r.version : "", path, {}, handle};
  if (const ProfilerPart* part = r.profiler) {
    const std::string_view b = part->backend ? part->backend : "";
    if (b.empty() || b == "none")
      throw InvalidArgument(fmt::format("profiler::{}: plugin '{}' names its backend '{}', which is reserved",
                                        where, r.name, b));
    if (!part->create)
      throw InvalidArgument(fmt::format("profiler::{}: plugin '{}' gives backend '{}' no create function",
                                        where, r.name, b));
    auto create = part->create;
    register_backend(std::string(b), [create] { return create(plugin_host()); });
    info.backends.emplace_back(b);
  }
  plugins_state().list.push_back(info);
  return info;
}

}  // namespace

const PluginHost& plugin_host() noexcept {
  static const PluginHost host = [] {
    PluginHost h;
    h.abi_version = kPluginAbiVersion;
    h.correlate_launch = &host_correlate_launch;
    h.now_ns = &host_now_ns;
    h.graph_node_captured = &graph_node_captured;
    h.graph_node_cloned = &graph_node_cloned;
    h.graph_node_destroyed = &graph_node_destroyed;
    h.correlate_graph_launch = &correlate_graph_launch;
    h.cancel_launch = &cancel_launch;
    return h;
  }();
  return host;
}

PluginInfo register_plugin(const PluginRegistration& registration) {
  std::lock_guard g(plugins_state().mu);
  return register_locked(registration, "", nullptr);
}

PluginInfo load_plugin(const std::string& path) {
  // A path is made canonical (so one file loads once); a bare name is left to
  // dlopen's search.
  std::string key = path;
  if (path.find('/') != std::string::npos) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(path, ec);
    if (!ec) key = canonical.string();
  }
  std::lock_guard g(plugins_state().mu);
  for (const auto& p : plugins_state().list)
    if (p.path == key) return p;
  void* h = ::dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    throw InvalidArgument(fmt::format("profiler::load_plugin('{}'): cannot load it: {}", path, e ? e : "?"));
  }
  auto entry = reinterpret_cast<tilejit_profiler_plugin_fn>(::dlsym(h, TILEJIT_PROFILER_PLUGIN_ENTRY));
  if (!entry) {
    ::dlclose(h);
    throw InvalidArgument(fmt::format("profiler::load_plugin('{}'): no entry point '{}' (define it with "
                                      "TILEJIT_PROFILER_PLUGIN, tilejit/profiler/plugin.hpp)",
                                      path, TILEJIT_PROFILER_PLUGIN_ENTRY));
  }
  const PluginRegistration* r = entry(&plugin_host());
  if (!r) {
    ::dlclose(h);
    throw InvalidArgument(fmt::format("profiler::load_plugin('{}'): its entry point returned no registration", path));
  }
  // On a registration error the library stays loaded: its entry point ran
  // and may have started threads.
  return register_locked(*r, key, h);
}

std::vector<PluginInfo> plugins() {
  std::lock_guard g(plugins_state().mu);
  return plugins_state().list;
}

namespace detail {
/// Load each plugin of a colon-separated list; one that fails is reported and
/// skipped. Returns how many loaded.
std::size_t load_plugin_list(std::string_view list) {
  std::size_t loaded = 0;
  while (!list.empty()) {
    const auto colon = list.find(':');
    const std::string item(list.substr(0, colon));
    list = colon == std::string_view::npos ? std::string_view{} : list.substr(colon + 1);
    if (item.empty()) continue;
    try {
      load_plugin(item);
      ++loaded;
    } catch (const std::exception& e) {
      fmt::print(stderr, "[tilejit.profiler] TILEJIT_PROFILER_PLUGINS: {}; skipped\n", e.what());
    }
  }
  return loaded;
}

/// TILEJIT_PROFILER_PLUGINS, loaded once, at the first start().
void load_env_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* env = std::getenv("TILEJIT_PROFILER_PLUGINS")) load_plugin_list(env);
  });
}
}  // namespace detail

}  // namespace tilejit::profiler

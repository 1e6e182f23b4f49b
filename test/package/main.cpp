// Built against an installed tilejit: traces a kernel, runs it in the interpreter.
#include <tilejit/profiler/plugin.hpp>
#include <tilejit/tilejit.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace tj = tilejit;

struct Scale {
  void operator()(tj::Ptr<float> x, tj::Size n) const {
    auto i = tj::program_id(0) * 96 + tj::arange<96>();
    auto m = i < n;
    tj::store(x + i, tj::load(x + i, m) * 2.0f, m);
  }
};

// An out-of-tree profiler backend (examples/profiler_plugin) built with the
// installed tilejit_add_profiler_plugin(): load it, profile a "kernel" of its
// simulated GPU under a scope.
static bool plugin_ok() {
  namespace tp = tj::profiler;
  auto info = tp::load_plugin(TOY_GPU_PLUGIN);
  auto launch = reinterpret_cast<std::uint64_t (*)(const char*, std::uint64_t, std::uint32_t)>(
      ::dlsym(info.handle, "toygpu_launch"));
  if (!launch) return false;
  auto dir = std::filesystem::temp_directory_path() / "tilejit_consumer_plugin";
  std::filesystem::create_directories(dir);
  auto s = tp::start((dir / "toy").string(), {.backend = "toy_gpu"});
  {
    tp::Scope step("consumer_step");
    launch("toy_kernel", 1000, 0);
  }
  auto text = tp::get(s, 0);  // flushes the plugin
  tp::finalize(s);
  return text && text->find("\"consumer_step\"") != std::string::npos &&
         text->find("\"toy_kernel\"") != std::string::npos && text->find("\"arch\":\"toy\"") != std::string::npos;
}

int main() {
  if (!plugin_ok()) {
    std::puts("consumer: the toy_gpu profiler plugin did not record its kernel");
    return 1;
  }
  std::vector<float> v(200, 1.5f);
  auto k = tj::compile<Scale>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{tj::cdiv(200, 96)}, v.data(), 200);
  for (float x : v)
    if (x != 3.0f) return 1;
  std::puts("consumer ok");
  return 0;
}

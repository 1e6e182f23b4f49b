// src/runtime/dl.cpp — see dl.hpp.
#include "dl.hpp"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

namespace tilejit::runtime::detail {

void* Library::symbol(const char* name) const {
  return handle ? ::dlsym(handle, name) : nullptr;
}

std::string Library::real_path() const {
  if (!handle) return {};
  link_map* lm = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name) return {};
  std::error_code ec;
  auto p = std::filesystem::canonical(lm->l_name, ec);
  return ec ? std::string(lm->l_name) : p.string();
}

const Library& open_library(const std::vector<std::string>& candidates) {
  static std::mutex mu;
  // unique_ptr keeps returned references stable while the map grows.
  static std::map<std::vector<std::string>, std::unique_ptr<Library>> opened;
  std::lock_guard lock(mu);
  auto& slot = opened[candidates];
  if (slot) return *slot;
  slot = std::make_unique<Library>();
  std::string tried;
  for (const auto& name : candidates) {
    if (void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      slot->handle = h;
      slot->path = name;
      return *slot;
    }
    const char* err = ::dlerror();
    tried += "\n  " + name + ": " + (err ? err : "unknown dlopen error");
  }
  slot->error = candidates.empty() ? "no library names given"
                                   : "none of these could be loaded:" + tried;
  return *slot;
}

}  // namespace tilejit::runtime::detail

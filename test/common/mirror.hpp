// Host vectors mirrored on a device for a test: up() copies one to the device
// (on the interpreter it is used in place), down() copies every one back, and
// the device buffers are freed on destruction.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "tilejit/tilejit.hpp"

namespace testing {

struct Mirror {
  const tilejit::Device& dev;
  std::vector<std::pair<void*, std::pair<void*, std::size_t>>> bufs;
  template <class V>
  auto* up(V& h) {
    using E = typename V::value_type;
    if (dev.backend() == tilejit::Backend::interpreter) return h.data();
    auto* p = static_cast<E*>(dev.alloc(h.size() * sizeof(E)));
    dev.copy_to_device(p, h.data(), h.size() * sizeof(E));
    bufs.push_back({p, {h.data(), h.size() * sizeof(E)}});
    return p;
  }
  void down() {
    for (auto& [d, h] : bufs) dev.copy_to_host(h.first, d, h.second);
  }
  ~Mirror() {
    for (auto& [d, h] : bufs) dev.free(d);
  }
};

}  // namespace testing

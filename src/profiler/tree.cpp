#include "tree.hpp"

namespace tilejit::profiler::detail {

std::uint32_t Tree::copy_path(const Tree& from, std::uint32_t node) {
  if (node == 0) return 0;
  thread_local std::vector<NameId> path;
  path.clear();
  for (std::uint32_t n = node; n != 0; n = from.nodes[n].parent) path.push_back(from.nodes[n].name);
  std::uint32_t here = 0;
  for (auto it = path.rbegin(); it != path.rend(); ++it) here = child(here, *it);
  return here;
}

void Tree::merge(const Tree& other) {
  std::vector<std::uint32_t> map(other.nodes.size());
  map[0] = 0;
  for (std::size_t i = 0; i < other.nodes.size(); ++i) {
    const Node& n = other.nodes[i];
    if (i != 0) map[i] = child(map[n.parent], n.name);  // parents come first
    for (const auto& s : n.metrics) add_slot(nodes[map[i]].metrics, s);
  }
}

}  // namespace tilejit::profiler::detail

// A calling-context tree: node 0 is ROOT; a node's parent always has a smaller
// id, so id order is a pre-order-compatible topological order (parents first)
// and reverse id order visits children before parents.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "intern.hpp"

namespace tilejit::profiler::detail {

inline constexpr std::uint32_t kNoNode = 0xffffffffu;

/// a + b clamped to [INT64_MIN, INT64_MAX]: integer metrics saturate rather than wrap (metric.hpp).
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

struct MetricSlot {
  std::uint32_t id = 0;
  MetricType type = MetricType::int64;
  MetricKind kind = MetricKind::inclusive;
  union {
    std::int64_t i;
    double d;
  };
  MetricSlot() : i(0) {}
  static MetricSlot of_int(std::uint32_t id, MetricKind k, std::int64_t v) {
    MetricSlot s;
    s.id = id, s.type = MetricType::int64, s.kind = k, s.i = v;
    return s;
  }
  static MetricSlot of_double(std::uint32_t id, MetricKind k, double v) {
    MetricSlot s;
    s.id = id, s.type = MetricType::float64, s.kind = k, s.d = v;
    return s;
  }
  /// Combine another value of the same metric: sum, or replace for properties.
  void combine(const MetricSlot& o) {
    if (kind == MetricKind::property) {
      if (type == MetricType::int64) i = o.i;
      else d = o.d;
    } else if (type == MetricType::int64) {
      i = saturating_add(i, o.i);
    } else {
      d += o.d;
    }
  }
};

/// Add `s` into a small list of slots (one per metric id).
inline void add_slot(std::vector<MetricSlot>& slots, const MetricSlot& s) {
  for (auto& x : slots)
    if (x.id == s.id) return x.combine(s);
  slots.push_back(s);
}

struct Node {
  NameId name;
  std::uint32_t parent;
  std::vector<MetricSlot> metrics;
};

class Tree {
 public:
  Tree() { nodes.push_back(Node{root_name(), kNoNode, {}}); }

  /// The child of `parent` named `name`, created if absent.
  std::uint32_t child(std::uint32_t parent, NameId name) {
    const std::uint64_t key = (std::uint64_t{parent} << 32) | name;
    // A loop asks for the same few children again and again (the launch op
    // under the innermost scope, the kernel under it): remember the last ones.
    Memo& m = memo[(parent ^ name) & (kMemo - 1)];
    if (m.key == key) return m.node;
    auto [it, fresh] = index.try_emplace(key, static_cast<std::uint32_t>(nodes.size()));
    if (fresh) nodes.push_back(Node{name, parent, {}});
    m = {key, it->second};
    return it->second;
  }

  /// The node with the same name path as `node` of `from`, created if absent.
  std::uint32_t copy_path(const Tree& from, std::uint32_t node);

  /// Add every node and metric of `other` (merging by path).
  void merge(const Tree& other);

  std::size_t size() const { return nodes.size(); }

  std::vector<Node> nodes;
  std::unordered_map<std::uint64_t, std::uint32_t> index;

 private:
  static constexpr std::size_t kMemo = 4;
  struct Memo {
    std::uint64_t key = ~std::uint64_t{0};  // no (parent, name) has this key: ids are < 2^32 - 1
    std::uint32_t node = 0;
  };
  Memo memo[kMemo];  // copied and moved with `nodes` and `index`, so always valid for them
};

}  // namespace tilejit::profiler::detail

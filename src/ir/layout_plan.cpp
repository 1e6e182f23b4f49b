// The layout-assignment pass. See include/tilejit/ir/layout_plan.hpp.
#include "tilejit/ir/layout_plan.hpp"

#include <fmt/format.h>

#include <numeric>

#include "tilejit/core/error.hpp"

namespace tilejit::ir {
namespace {

int largest_pow2_dividing(int n, int cap) {
  int p = 1;
  while (p * 2 <= cap && n % (p * 2) == 0) p *= 2;
  return p;
}

/// Union-find over node ids (rank-1 values that must share a dim).
struct Classes {
  std::vector<int> parent;
  explicit Classes(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[static_cast<std::size_t>(x)] == x ? x : parent[static_cast<std::size_t>(x)] = find(parent[static_cast<std::size_t>(x)]); }
  void unite(int a, int b) { parent[static_cast<std::size_t>(find(a))] = find(b); }
};

}  // namespace

int Distributed::register_coord(int r, int d) const {
  int c = 0;
  for (const auto& g : reg) {
    int digit = (r / g.stride) % g.radix;
    if (additive)
      c += digit * g.image[static_cast<std::size_t>(d)];
    else if (digit)
      c ^= g.image[static_cast<std::size_t>(d)];
  }
  return c;
}

Distributed distributed_from(const layout::LinearLayout& l, int warp_size) {
  Distributed d;
  d.rank = l.num_out_dims();
  for (int j = 0; j < d.rank; ++j) d.shape[static_cast<std::size_t>(j)] = l.out_digits(j).size();
  d.warp_size = warp_size;
  bool all_binary = true;
  // Which output digit positions each input digit touches (for the additivity test).
  std::vector<std::vector<int>> used(static_cast<std::size_t>(d.rank));
  for (int j = 0; j < d.rank; ++j) used[static_cast<std::size_t>(j)].assign(static_cast<std::size_t>(l.out_digits(j).num_digits()), 0);
  bool additive = true;
  for (int i = 0; i < l.num_in_dims(); ++i) {
    const std::string_view name = l.in_name(i).view();
    std::vector<InputDigit>* dst = name == "register" ? &d.reg : name == "lane" ? &d.lane : name == "warp" ? &d.warp : nullptr;
    if (!dst) throw Unsupported(fmt::format("codegen: layout input dim '{}' is not register/lane/warp", name));
    const auto& ds = l.in_digits(i);
    for (int k = 0; k < ds.num_digits(); ++k) {
      InputDigit g;
      g.radix = ds.radix(k);
      g.stride = ds.stride(k);
      if (g.radix != 2) all_binary = false;
      auto img = l.image(i, k);
      for (int j = 0; j < d.rank; ++j) {
        g.image[static_cast<std::size_t>(j)] = img[static_cast<std::size_t>(j)];
        const auto& os = l.out_digits(j);
        for (int m = 0; m < os.num_digits(); ++m) {
          int od = os.digit(img[static_cast<std::size_t>(j)], m);
          if (od == 0) continue;
          if (od != 1 || used[static_cast<std::size_t>(j)][static_cast<std::size_t>(m)]) additive = false;
          used[static_cast<std::size_t>(j)][static_cast<std::size_t>(m)] = 1;
        }
      }
      dst->push_back(g);
    }
    if (dst == &d.reg) d.registers = ds.size();
    if (dst == &d.warp) d.num_warps = ds.size();
  }
  d.additive = additive;
  if (!additive && !all_binary)
    throw Unsupported("codegen: layout mixes digits of radix > 2 non-additively; lowering such layouts is not supported yet");
  // A compact description: per input digit, its image.
  std::string desc = fmt::format("shape [{}", d.shape[0]);
  if (d.rank == 2) desc += fmt::format(",{}", d.shape[1]);
  desc += "]";
  auto list = [&](const char* nm, const std::vector<InputDigit>& v) {
    desc += fmt::format("; {}:", nm);
    for (const auto& g : v)
      desc += d.rank == 2 ? fmt::format(" r{}({},{})", g.radix, g.image[0], g.image[1]) : fmt::format(" r{}({})", g.radix, g.image[0]);
  };
  list("register", d.reg);
  list("lane", d.lane);
  list("warp", d.warp);
  d.description = desc;
  return d;
}

LayoutPlan assign_layouts(const Kernel& k, int num_warps, int warp_size) {
  LayoutPlan plan;
  plan.values.resize(k.nodes.size());
  // 1. The parent shape: the largest 2-D shape, else the 1-D size.
  int rank = 0;
  std::array<int, kMaxRank> shape{1, 1};
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Type& t = k.nodes[id].type;
    if (t.rank == 2) {
      if (rank < 2) { rank = 2; shape = {1, 1}; }
      for (int d = 0; d < 2; ++d) {
        int s = t.shape[static_cast<std::size_t>(d)], &p = shape[static_cast<std::size_t>(d)];
        if (s != 1 && p != 1 && s != p)
          throw Unsupported(fmt::format("node %{} has shape {} but the kernel's tiles are [{},{}]: tiles of different "
                                        "extents along one dim need a layout conversion (not supported yet)",
                                        id, to_string(t), shape[0], shape[1]));
        p = std::max(p, s);
      }
    }
  }
  if (rank == 0) {
    for (std::size_t id = 0; id < k.nodes.size(); ++id) {
      const Type& t = k.nodes[id].type;
      if (t.rank != 1 || t.shape[0] == 1) continue;
      if (rank == 1 && shape[0] != t.shape[0])
        throw Unsupported(fmt::format("node %{} is {} but another 1-D tile has {} elements: tiles of different sizes in "
                                      "one kernel need a layout conversion (not supported yet)", id, to_string(t), shape[0]));
      rank = 1;
      shape[0] = t.shape[0];
    }
  }
  if (rank == 0) rank = 1;  // scalar-only kernel: a trivial parent

  // 2. The parent: a blocked layout (Triton's BlockedEncoding built as a
  //    product of identities), lanes first along the minor dim so a warp's
  //    accesses are contiguous, then warps, then registers; the NPOT part of
  //    each extent lands in the register digits (96 = 32 lanes x 3 registers).
  //    Lanes or warps beyond the tile's extent map to zero: they hold copies.
  using layout::LinearLayout;
  const int minor = rank - 1;
  std::array<int, kMaxRank> lanes{1, 1}, warps{1, 1}, regs{1, 1};
  int lane_room = warp_size, warp_room = num_warps;
  for (int d = minor; d >= 0; --d) {
    const int e = shape[static_cast<std::size_t>(d)];
    lanes[static_cast<std::size_t>(d)] = largest_pow2_dividing(e, lane_room);
    lane_room /= lanes[static_cast<std::size_t>(d)];
  }
  for (int d = minor; d >= 0; --d) {
    const int e = shape[static_cast<std::size_t>(d)] / lanes[static_cast<std::size_t>(d)];
    warps[static_cast<std::size_t>(d)] = largest_pow2_dividing(e, warp_room);
    warp_room /= warps[static_cast<std::size_t>(d)];
    regs[static_cast<std::size_t>(d)] = e / warps[static_cast<std::size_t>(d)];
  }
  const char* dim_name[2] = {"dim0", "dim1"};
  LinearLayout p = LinearLayout::identity1D(1, "register", "dim0") * LinearLayout::identity1D(1, "lane", dim_name[minor]) *
                   LinearLayout::identity1D(1, "warp", "dim0");
  for (int d = minor; d >= 0; --d) p *= LinearLayout::identity1D(lanes[static_cast<std::size_t>(d)], "lane", dim_name[d]);
  p *= LinearLayout::zeros1D(lane_room, "lane", dim_name[minor]);
  for (int d = minor; d >= 0; --d) p *= LinearLayout::identity1D(warps[static_cast<std::size_t>(d)], "warp", dim_name[d]);
  p *= LinearLayout::zeros1D(warp_room, "warp", dim_name[minor]);
  for (int d = minor; d >= 0; --d) p *= LinearLayout::identity1D(regs[static_cast<std::size_t>(d)], "register", dim_name[d]);
  plan.parent = p;
  plan.diagnostics.push_back(fmt::format(
      "parent layout: blocked {} lanes {} warps {} registers {}{}", rank == 2 ? fmt::format("[{},{}]", shape[0], shape[1]) : fmt::format("[{}]", shape[0]),
      rank == 2 ? fmt::format("[{},{}]", lanes[0], lanes[1]) : fmt::format("[{}]", lanes[0]),
      rank == 2 ? fmt::format("[{},{}]", warps[0], warps[1]) : fmt::format("[{}]", warps[0]),
      rank == 2 ? fmt::format("[{},{}]", regs[0], regs[1]) : fmt::format("[{}]", regs[0]),
      lane_room * warp_room > 1 ? fmt::format(" ({} lane and {} warp copies: the tile is smaller than the program)", lane_room, warp_room) : ""));
  plan.dist = distributed_from(plan.parent, warp_size);
  plan.dist.num_warps = num_warps;

  // 3. Dim maps. Rank-2 values: their non-unit dims are the parent's.
  //    Rank-1 values: found by propagation through expand_dims / reductions,
  //    shared by everything they meet elementwise.
  Classes cls(k.nodes.size());
  std::vector<int> tag(k.nodes.size(), -1);  // parent dim of a rank-1 class root
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.type.rank != 1) continue;
    if (n.op == Op::expand_dims || n.op == Op::param || n.op == Op::program_id) continue;
    for (int a : n.args)
      if (a >= 0 && k.nodes[static_cast<std::size_t>(a)].type.rank == 1) cls.unite(static_cast<int>(id), a);
  }
  auto set_tag = [&](int node, int dim) {
    int root = cls.find(node);
    int& t = tag[static_cast<std::size_t>(root)];
    if (t >= 0 && t != dim)
      throw Unsupported(fmt::format("node %{} ({}): a 1-D tile is used along both dims of the 2-D tiles; that needs a "
                                    "layout conversion, which this version does not do yet", node, to_string(k.nodes[static_cast<std::size_t>(node)].type)));
    t = dim;
  };
  if (rank == 2) {
    for (std::size_t id = 0; id < k.nodes.size(); ++id) {
      const Node& n = k.nodes[id];
      if (n.op == Op::expand_dims && n.type.rank == 2 && k.nodes[static_cast<std::size_t>(n.args[0])].type.rank == 1)
        set_tag(n.args[0], 1 - n.axis);
      if (is_reduce(n.op) && n.type.rank == 1) set_tag(static_cast<int>(id), 1 - n.axis);
    }
  }
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Type& t = k.nodes[id].type;
    TileLayout& tl = plan.values[id];
    if (t.rank == 0) continue;
    tl.scalar = false;
    if (t.rank == 2) {
      for (int d = 0; d < 2; ++d) tl.dim_of[static_cast<std::size_t>(d)] = t.shape[static_cast<std::size_t>(d)] == 1 && shape[static_cast<std::size_t>(d)] != 1 ? -1 : d;
      continue;
    }
    if (t.shape[0] == 1) continue;  // a 1-element tile: broadcast everywhere
    int dim = 0;
    if (rank == 2) {
      dim = tag[static_cast<std::size_t>(cls.find(static_cast<int>(id)))];
      if (dim < 0) dim = t.shape[0] == shape[1] ? 1 : 0;  // unconstrained: prefer the minor dim
    }
    if (shape[static_cast<std::size_t>(dim)] != t.shape[0])
      throw Unsupported(fmt::format("node %{} ({}) does not match the kernel's tile extent {} along dim {}: needs a layout "
                                    "conversion (not supported yet)", id, to_string(t), shape[static_cast<std::size_t>(dim)], dim));
    tl.dim_of[0] = dim;
  }
  return plan;
}

}  // namespace tilejit::ir

// Rematerialisation of cheap 1-D index chains. See include/tilejit/ir/remat.hpp.
#include "tilejit/ir/remat.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tilejit/ir/layout_plan.hpp"

namespace tilejit::ir {
namespace {

/// Longest chain worth recomputing: index arithmetic is a handful of nodes.
constexpr std::size_t kMaxChain = 32;

/// Pure and about one instruction per register (an arange costs nothing: its
/// registers are coordinates). Division and remainder are not cheap.
bool cheap(const Kernel& k, int id) {
  const Node& n = k[id];
  switch (n.op) {
    case Op::arange: case Op::constant: case Op::broadcast: case Op::cast: case Op::where: case Op::addptr:
    case Op::add: case Op::sub: case Op::mul: case Op::maximum: case Op::minimum:
    case Op::bit_and: case Op::bit_or: case Op::bit_xor: case Op::neg: case Op::logical_not:
      return true;
    case Op::expand_dims:
      return k[n.args[0]].type.rank == 0;
    default:
      return is_compare(n.op);
  }
}

/// The innermost loop (its loop_begin) whose body holds each node; -1 at top level.
std::vector<int> loop_owner(const Kernel& k) {
  std::vector<int> owner(k.nodes.size(), -1), stack;
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::loop_end && !stack.empty()) stack.pop_back();
    owner[id] = stack.empty() ? -1 : stack.back();
    if (n.op == Op::loop_begin) stack.push_back(static_cast<int>(id));
  }
  return owner;
}

struct Use {
  int node;                // the expand_dims or reshape
  std::vector<int> chain;  // its operand and the operand's 1-D ancestors, ascending
};
struct Group {  // uses that want the same layout, in the same loop body: one set of clones
  TileLayout want;
  int loop;
  std::vector<Use> uses;
};

/// One round: clone for every conversion the plan of `r.kernel` would make. False when there is none.
bool remat_round(Rematerialized& r, int num_warps, int warp_size, const std::string& arch) {
  const Kernel& k = r.kernel;
  const std::size_t N = k.nodes.size();
  const LayoutPlan plan = assign_layouts(k, num_warps, warp_size, arch);
  const auto owner = loop_owner(k);
  std::vector<Group> groups;
  std::vector<std::string> left;  // reported by the last round only (every round finds them again)
  std::set<int> reported;
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if ((n.op != Op::expand_dims && n.op != Op::reshape) || n.type.rank != 2 || k[n.args[0]].type.rank != 1) continue;
    const int a = n.args[0];
    TileLayout want = plan.operand_layout(k, static_cast<int>(id), 0);
    if (n.op == Op::reshape) {
      // A [N] -> [A, B] reshape wants its operand in the result's layout flattened (the planner's choice for a free
      // 1-D class); one whose class another use fixed would move through shared memory. The key names the result's
      // layout (dim_of -2: "flattened"), so reshapes into one layout share their clones.
      const TileLayout& mine = plan.values[id];
      const auto flat = reshaped_layout(plan, mine, n.type, k[a].type);
      const TileLayout& have = plan.values[static_cast<std::size_t>(a)];
      if (!flat.ok() || (have.dim_of[0] == 0 && have.dim_of[1] == -1 && plan.linear[static_cast<std::size_t>(have.layout)] == flat.value()))
        continue;
      want = TileLayout{mine.layout, {-2, -2}, false};
    } else if (want == plan.values[static_cast<std::size_t>(a)]) {
      continue;
    }
    // The operand's 1-D ancestors (scalars are shared, not cloned).
    std::set<int> chain;
    std::vector<int> todo{a};
    int blocker = -1;
    while (!todo.empty()) {
      const int x = todo.back();
      todo.pop_back();
      if (!chain.insert(x).second) continue;
      if (!cheap(k, x) || chain.size() > kMaxChain) {
        blocker = x;
        break;
      }
      for (int y : k[x].args)
        if (y >= 0 && k[y].type.rank == 1) todo.push_back(y);
    }
    if (blocker >= 0) {
      // (A reshape reports its own path: the code generator may still find every element in its thread.)
      if (n.op == Op::expand_dims && reported.insert(a).second)
        left.push_back(fmt::format(
            "remat: %{} ({}) is converted for {} %{}: its chain reaches %{} ({}{}), which is not cheap to recompute",
            a, to_string(k[a].type), name(n.op), id, blocker, name(k[blocker].op), chain.size() > kMaxChain ? ", or is too long" : ""));
      continue;
    }
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.want == want && x.loop == owner[id]; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{want, owner[id], {}});
    g->uses.push_back(Use{static_cast<int>(id), std::vector<int>(chain.begin(), chain.end())});
  }
  if (groups.empty()) {
    r.diagnostics.insert(r.diagnostics.end(), left.begin(), left.end());
    return false;
  }

  // Rebuild in program order. Before each use, the clones its chain still
  // lacks in its group (a later use of the group reuses the earlier clones:
  // same loop body, defined before it); scalar operands are the originals,
  // defined before the original chain and so before the use. Original chain
  // nodes left without users are dropped.
  std::vector<int> use_group(N, -1);
  std::vector<char> in_chain(N, 0), alive(N, 1);
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const Use& u : groups[g].uses) {
      use_group[static_cast<std::size_t>(u.node)] = static_cast<int>(g);
      for (int x : u.chain) in_chain[static_cast<std::size_t>(x)] = 1;
    }
  {
    std::vector<char> used(N, 0);
    for (std::size_t id = N; id-- > 0;) {
      if (in_chain[id] && !used[id]) {
        alive[id] = 0;
        continue;
      }
      const Node& n = k.nodes[id];
      for (std::size_t j = 0; j < n.args.size(); ++j)
        if (n.args[j] >= 0 && !(j == 0 && use_group[id] >= 0)) used[static_cast<std::size_t>(n.args[j])] = 1;
    }
  }
  std::vector<std::vector<int>> clone(groups.size(), std::vector<int>(N, -1));
  std::vector<int> map(N, -1);
  Kernel out = without_nodes(k);
  int cloned = 0;
  for (std::size_t id = 0; id < N; ++id) {
    if (!alive[id]) continue;
    Node n = k.nodes[id];
    const int g = use_group[id];
    if (g >= 0) {
      auto& cl = clone[static_cast<std::size_t>(g)];
      const auto& uses = groups[static_cast<std::size_t>(g)].uses;
      const auto u = std::find_if(uses.begin(), uses.end(), [&](const Use& x) { return x.node == static_cast<int>(id); });
      for (int x : u->chain) {
        if (cl[static_cast<std::size_t>(x)] >= 0) continue;
        Node c = k[x];
        for (int& y : c.args)
          if (y >= 0) y = k[y].type.rank == 1 ? cl[static_cast<std::size_t>(y)] : map[static_cast<std::size_t>(y)];
        cl[static_cast<std::size_t>(x)] = out.add(c);
        ++cloned;
      }
      n.args[0] = cl[static_cast<std::size_t>(n.args[0])];
      for (std::size_t j = 1; j < n.args.size(); ++j)
        if (n.args[j] >= 0) n.args[j] = map[static_cast<std::size_t>(n.args[j])];
    } else {
      for (int& y : n.args)
        if (y >= 0) y = map[static_cast<std::size_t>(y)];
    }
    map[id] = out.add(n);
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const Group& gr = groups[g];
    std::string uses, values;
    std::set<int> seen;
    int count = 0;
    for (const Use& u : gr.uses) {
      uses += fmt::format("{}%{}", uses.empty() ? "" : ", ", map[static_cast<std::size_t>(u.node)]);
      const int a = k[u.node].args[0];
      if (seen.insert(a).second)
        values += fmt::format("{}%{} ({})", values.empty() ? "" : ", ", clone[g][static_cast<std::size_t>(a)], to_string(k[a].type));
    }
    for (int c : clone[g]) count += c >= 0 ? 1 : 0;
    const bool reshapes = gr.want.dim_of[0] == -2;
    r.diagnostics.push_back(fmt::format(
        "remat: {} {}{} want{} layout L{}{}: their operands are recomputed there as {} ({} cloned node{}) instead "
        "of converted through shared memory", reshapes ? "reshape" : "expand_dims", uses, gr.loop >= 0 ? fmt::format(" in the loop at %{}", map[static_cast<std::size_t>(gr.loop)]) : "",
        gr.uses.size() == 1 ? "s" : "", gr.want.layout, reshapes ? " flattened" : "", values, count, count == 1 ? "" : "s"));
  }
  r.cloned_nodes += cloned;
  r.kernel = std::move(out);
  return true;
}

}  // namespace

namespace {

/// An expand_dims result ([1,N] or [M,1]) broadcast into tiles of different
/// extents would tie those tiles into one layout family (and fail when their
/// extents differ): give every user beyond the first its own copy, emitted
/// right after the original so it is in scope wherever the original is.
Kernel split_shared_expand_dims(const Kernel& k, std::vector<std::string>& diag) {
  const std::size_t N = k.nodes.size();
  std::vector<std::vector<int>> users(N);
  for (std::size_t id = 0; id < N; ++id)
    for (int a : k.nodes[id].args)
      if (a >= 0 && (users[static_cast<std::size_t>(a)].empty() || users[static_cast<std::size_t>(a)].back() != static_cast<int>(id)))
        users[static_cast<std::size_t>(a)].push_back(static_cast<int>(id));
  std::vector<char> split(N, 0);
  bool any = false;
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::expand_dims && n.type.rank == 2 && users[id].size() > 1) split[id] = 1, any = true;
  }
  if (!any) return k;
  Kernel out = without_nodes(k);
  std::vector<int> remap(N, -1);
  std::vector<std::vector<std::pair<int, int>>> copy_for(N);  // original -> (user, copy id)
  for (std::size_t id = 0; id < N; ++id) {
    Node n = k.nodes[id];
    for (int& a : n.args) {
      if (a < 0) continue;
      int mapped = remap[static_cast<std::size_t>(a)];
      for (const auto& [user, copy] : copy_for[static_cast<std::size_t>(a)])
        if (user == static_cast<int>(id)) mapped = copy;
      a = mapped;
    }
    remap[id] = out.add(n);
    if (split[id]) {
      for (std::size_t u = 1; u < users[id].size(); ++u) copy_for[id].push_back({users[id][u], out.add(n)});
      diag.push_back(fmt::format("expand_dims %{} has {} users: each gets its own copy (a [1,N]/[M,1] value may meet tiles of "
                                 "different extents)", id, users[id].size()));
    }
  }
  return out;
}

}  // namespace

Rematerialized rematerialize(const Kernel& k, int num_warps, int warp_size, const std::string& arch) {
  Rematerialized r;
  r.kernel = split_shared_expand_dims(k, r.diagnostics);
  // One round removes every conversion it can (each group's clones form a
  // class of their own with the one layout its uses want, and the original
  // keeps the layout it had); a second round only confirms that.
  for (int round = 0; round < 3 && remat_round(r, num_warps, warp_size, arch); ++round) {
  }
  return r;
}

}  // namespace tilejit::ir

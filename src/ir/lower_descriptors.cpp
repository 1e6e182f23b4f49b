#include "tilejit/ir/lower_descriptors.hpp"

#include <limits>
#include <utility>
#include <vector>

namespace tilejit::ir {
namespace {

/// Builds nodes into `out`, the kernel being rewritten.
struct Builder {
  Kernel& out;

  int add(Op op, Type t, int a0 = -1, int a1 = -1, int a2 = -1, int axis = 0, std::int64_t i = 0) {
    Node n;
    n.op = op;
    n.type = t;
    n.args = {a0, a1, a2, -1};
    n.axis = axis;
    n.i = i;
    return out.add(n);
  }
  static Type scalar(DType d, bool ptr = false) {
    Type t;
    t.dtype = d;
    t.is_ptr = ptr;
    return t;
  }
  static Type tile(DType d, int s0, int s1 = 0, bool ptr = false) {
    Type t = scalar(d, ptr);
    t.rank = s1 ? 2 : 1;
    t.shape = {s0, s1 ? s1 : 1};
    return t;
  }
  int bcast(int id, Type to) {
    const Type& from = out[id].type;
    if (from.rank == to.rank && from.shape == to.shape) return id;
    to.dtype = from.dtype;
    to.is_ptr = from.is_ptr;
    return add(Op::broadcast, to, id);
  }
  int binary(Op op, int a, int b, Type shape) {
    Type t = shape;
    t.dtype = is_compare(op) ? DType::i1 : out[a].type.dtype;
    t.is_ptr = false;
    return add(op, t, bcast(a, shape), bcast(b, shape));
  }

  /// 0 <= idx < bound, idx of type `shape` (i32).
  int in_range(int idx, int bound, Type shape) {
    Type zt = scalar(DType::i32);
    const int zero = add(Op::constant, zt);
    return binary(Op::bit_and, binary(Op::ge, idx, zero, shape), binary(Op::lt, idx, bound, shape), shape);
  }

  /// The 2-D descriptor a block is read from: base, rows, columns, row stride (i32 elements) and the parameter
  /// holding its OobFill.
  struct View {
    int base, rows, cols, rstride, param;
  };
  int field(int param, int f, DType dt = DType::i32, bool ptr = false) {
    return add(Op::desc_field, scalar(dt, ptr), param, -1, -1, 0, f);
  }
  /// A 2-D descriptor parameter as it is.
  View view2(int d, DType dt) { return {field(d, 0, dt, true), field(d, 1), field(d, 2), field(d, 3), d}; }
  /// desc_view of parameter `param` (rank R, rows along `row_dim`) at `outer`, the coordinates of its other
  /// dims but the last (dim order): the base moved to them, and no rows when one of them is out of bounds.
  View view_nd(int param, int R, int row_dim, const std::vector<int>& outer, DType dt) {
    const Type it = scalar(DType::i32), bt = scalar(DType::i1);
    int base = field(param, 0, dt, true), inb = -1;
    std::size_t slot = 0;
    for (int d = 0; d + 1 < R; ++d) {
      if (d == row_dim) continue;
      const int u = outer[slot++];
      base = add(Op::addptr, scalar(dt, true), base, add(Op::mul, it, u, field(param, kDescStride + d)));
      const int ok = binary(Op::bit_and, binary(Op::ge, u, add(Op::constant, it), bt),
                            binary(Op::lt, u, field(param, kDescShape + d), bt), bt);
      inb = inb < 0 ? ok : binary(Op::bit_and, inb, ok, bt);
    }
    const int rows = add(Op::where, it, inb, field(param, kDescShape + row_dim), add(Op::constant, it));
    return {base, rows, field(param, kDescShape + R - 1), field(param, kDescStride + row_dim), param};
  }

  /// The pointers and the in-bounds mask of the block of view `w` at (c0, c1); [B0, B1], or [B1, B0] when
  /// `transposed`.
  std::pair<int, int> addresses(const View& w, int c0, int c1, const Type& block, bool transposed) {
    const DType dt = block.dtype;
    const int B0 = block.shape[0], B1 = block.shape[1];
    const int rows = binary(Op::add, c0, add(Op::arange, tile(DType::i32, B0)), tile(DType::i32, B0));
    const int cols = binary(Op::add, c1, add(Op::arange, tile(DType::i32, B1)), tile(DType::i32, B1));
    // Row index along result dim rdim, column index along the other.
    const int rdim = transposed ? 1 : 0;
    const Type out_t = transposed ? tile(DType::i32, B1, B0) : tile(DType::i32, B0, B1);
    const Type row_t = transposed ? tile(DType::i32, 1, B0) : tile(DType::i32, B0, 1);
    const Type col_t = transposed ? tile(DType::i32, B1, 1) : tile(DType::i32, 1, B1);
    const int r2 = add(Op::expand_dims, row_t, rows, -1, -1, 1 - rdim);
    const int c2 = add(Op::expand_dims, col_t, cols, -1, -1, rdim);
    const int roff = binary(Op::mul, r2, w.rstride, row_t);
    const int off = binary(Op::add, roff, c2, out_t);
    Type pt = out_t;
    pt.dtype = dt;
    pt.is_ptr = true;
    const int ptrs = add(Op::addptr, pt, bcast(w.base, pt), off);
    const int mr = in_range(r2, w.rows, row_t), mc = in_range(c2, w.cols, col_t);
    const int mask = binary(Op::bit_and, mr, mc, out_t);
    return {ptrs, mask};
  }

  /// The block of view `w` at (c0, c1) as a masked load; [B0, B1], or [B1, B0] when `transposed`.
  int load(const View& w, int c0, int c1, const Type& block, bool transposed) {
    const DType dt = block.dtype;
    const auto [ptrs, mask] = addresses(w, c0, c1, block, transposed);
    Type lt = block;
    if (transposed) std::swap(lt.shape[0], lt.shape[1]);
    lt.dtype = dt;
    int other = -1;  // zero
    if (is_float(dt)) {
      // The descriptor's OobFill: NaN where it asks for it (field 4), zero otherwise — as a TMA copy fills.
      Node nan;
      nan.op = Op::constant;
      nan.type = scalar(dt);
      nan.f = std::numeric_limits<double>::quiet_NaN();
      const int zero = add(Op::constant, scalar(dt));
      const int flag = add(Op::desc_field, scalar(DType::i32), w.param, -1, -1, 0, 4);
      const int izero = add(Op::constant, scalar(DType::i32));
      Type bt = scalar(DType::i1);
      const int is_nan = add(Op::ne, bt, flag, izero);
      other = add(Op::where, scalar(dt), is_nan, out.add(nan), zero);
    }
    return add(Op::load, lt, ptrs, mask, other);
  }

  /// `value` stored as the block of view `w` at (c0, c1), out-of-bounds elements dropped.
  void store(const View& w, int c0, int c1, int value, const Type& block) {
    const auto [ptrs, mask] = addresses(w, c0, c1, block, false);
    add(Op::store, block, ptrs, value, mask);
  }
};

}  // namespace

Kernel lower_descriptors(const Kernel& k, const std::function<bool(int)>& keep) {
  const std::size_t N = k.nodes.size();
  std::vector<char> lowered(N, 0), direct_use(N, 0), view_kept(N, 0);
  bool any = false;
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op != Op::desc_load && n.op != Op::desc_store) continue;
    if (!(keep && keep(static_cast<int>(id))))
      lowered[id] = any = 1;
    else if (k[n.args[0]].op == Op::desc_view)
      view_kept[static_cast<std::size_t>(n.args[0])] = 1;  // a block the backend copies itself reads the view
  }
  if (!any) return k;
  for (const Node& n : k.nodes)
    for (int a : n.args)
      if (a >= 0 && lowered[static_cast<std::size_t>(a)] && n.op != Op::trans) direct_use[static_cast<std::size_t>(a)] = 1;

  Kernel out = without_nodes(k);
  Builder b{out};
  std::vector<int> map(N, -1);
  auto m = [&](int a) { return a < 0 ? -1 : map[static_cast<std::size_t>(a)]; };
  // The 2-D view a lowered load or store of `n` reads, built at that load or store (a desc_view's coordinates may
  // be defined in the loop that holds it).
  auto view = [&](int x) {
    const DescRef r = desc_ref(k, x);
    const DType dt = k[x].type.dtype;
    if (r.rank == 2) return b.view2(m(r.param), dt);
    std::vector<int> outer;
    for (int u : r.outer) outer.push_back(m(u));
    return b.view_nd(m(r.param), r.rank, r.row_dim, outer, dt);
  };
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::desc_view && !view_kept[id]) continue;  // read only by lowered blocks: built at each of them
    if (n.op == Op::desc_load && lowered[id]) {
      // Built here only when something uses the block itself; `trans` users build their own.
      if (direct_use[id]) map[id] = b.load(view(static_cast<int>(id)), m(n.args[1]), m(n.args[2]), n.type, false);
      continue;
    }
    if (n.op == Op::desc_store && lowered[id]) {
      b.store(view(static_cast<int>(id)), m(n.args[1]), m(n.args[2]), m(n.args[3]), n.type);
      continue;
    }
    if (n.op == Op::trans && lowered[static_cast<std::size_t>(n.args[0])]) {
      const Node& src = k.nodes[static_cast<std::size_t>(n.args[0])];
      map[id] = b.load(view(n.args[0]), m(src.args[1]), m(src.args[2]), src.type, true);
      continue;
    }
    Node c = n;
    for (int& a : c.args) a = m(a);
    map[id] = out.add(c);
  }
  return out;
}

}  // namespace tilejit::ir

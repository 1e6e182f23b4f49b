#include "tilejit/ir/ir.hpp"

#include <fmt/format.h>

#include "tilejit/core/error.hpp"

namespace tilejit::ir {

const char* name(Op op) {
  switch (op) {
    case Op::param: return "param";
    case Op::program_id: return "program_id";
    case Op::num_programs: return "num_programs";
    case Op::constant: return "constant";
    case Op::arange: return "arange";
    case Op::add: return "add";
    case Op::sub: return "sub";
    case Op::mul: return "mul";
    case Op::div: return "div";
    case Op::rem: return "rem";
    case Op::maximum: return "maximum";
    case Op::minimum: return "minimum";
    case Op::bit_and: return "and";
    case Op::bit_or: return "or";
    case Op::bit_xor: return "xor";
    case Op::lt: return "lt";
    case Op::le: return "le";
    case Op::gt: return "gt";
    case Op::ge: return "ge";
    case Op::eq: return "eq";
    case Op::ne: return "ne";
    case Op::neg: return "neg";
    case Op::logical_not: return "not";
    case Op::exp: return "exp";
    case Op::exp2: return "exp2";
    case Op::log: return "log";
    case Op::sqrt: return "sqrt";
    case Op::rsqrt: return "rsqrt";
    case Op::abs: return "abs";
    case Op::where: return "where";
    case Op::cast: return "cast";
    case Op::broadcast: return "broadcast";
    case Op::expand_dims: return "expand_dims";
    case Op::addptr: return "addptr";
    case Op::load: return "load";
    case Op::store: return "store";
    case Op::reduce_sum: return "reduce_sum";
    case Op::reduce_max: return "reduce_max";
    case Op::reduce_min: return "reduce_min";
    case Op::dot: return "dot";
    case Op::loop_begin: return "loop_begin";
    case Op::loop_carry: return "loop_carry";
    case Op::loop_yield: return "loop_yield";
    case Op::loop_end: return "loop_end";
    case Op::loop_result: return "loop_result";
    case Op::desc_load: return "desc_load";
    case Op::desc_field: return "desc_field";
    case Op::trans: return "trans";
    case Op::desc_store: return "desc_store";
    case Op::desc_view: return "desc_view";
    case Op::event: return "event";
    case Op::scan_sum: return "scan_sum";
    case Op::scan_prod: return "scan_prod";
    case Op::scan_max: return "scan_max";
    case Op::scan_min: return "scan_min";
    case Op::atomic_add: return "atomic_add";
    case Op::atomic_max: return "atomic_max";
    case Op::atomic_min: return "atomic_min";
    case Op::atomic_xchg: return "atomic_xchg";
    case Op::atomic_cas: return "atomic_cas";
    case Op::log2: return "log2";
    case Op::sin: return "sin";
    case Op::cos: return "cos";
    case Op::tanh: return "tanh";
    case Op::erf: return "erf";
    case Op::floor: return "floor";
    case Op::ceil: return "ceil";
    case Op::sigmoid: return "sigmoid";
    case Op::scan_custom: return "scan_custom";
    case Op::combine_arg: return "combine_arg";
    case Op::reduce_custom: return "reduce_custom";
    case Op::tuple_get: return "tuple_get";
    case Op::reshape: return "reshape";
  }
  return "?";
}

bool is_binary(Op op) { return op >= Op::add && op <= Op::ne; }
bool is_compare(Op op) { return op >= Op::lt && op <= Op::ne; }
bool is_unary(Op op) { return (op >= Op::neg && op <= Op::abs) || (op >= Op::log2 && op <= Op::sigmoid); }
bool is_reduce(Op op) { return op == Op::reduce_sum || op == Op::reduce_max || op == Op::reduce_min || op == Op::reduce_custom; }
bool is_scan(Op op) { return (op >= Op::scan_sum && op <= Op::scan_min) || op == Op::scan_custom; }
bool is_atomic(Op op) { return op >= Op::atomic_add && op <= Op::atomic_cas; }

std::vector<int> loop_ends(const Kernel& k) {
  std::vector<int> ends(k.nodes.size(), -1), stack;
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    if (k.nodes[id].op == Op::loop_begin) stack.push_back(static_cast<int>(id));
    if (k.nodes[id].op == Op::loop_end) {
      if (stack.empty() || stack.back() != k.nodes[id].args[0])
        throw Unsupported(fmt::format("IR: loop_end %{} does not close the innermost open loop", id));
      ends[static_cast<std::size_t>(stack.back())] = static_cast<int>(id);
      stack.pop_back();
    }
  }
  if (!stack.empty()) throw Unsupported(fmt::format("IR: loop_begin %{} is never closed", stack.back()));
  return ends;
}

DescRef desc_ref(const Kernel& k, int x) {
  const int id = k[x].args[0];
  const Node& d = k[id];
  if (d.op != Op::desc_view) return {id, 2, 0, {}};
  DescRef r{d.args[0], static_cast<int>(d.i), d.axis, {}};
  for (int j = 1; j + 1 < r.rank; ++j) r.outer.push_back(d.args[static_cast<std::size_t>(j)]);
  return r;
}

std::vector<char> stored_pointer_params(const Kernel& k) {
  std::vector<char> out(k.params.size(), 0), seen(k.nodes.size(), 0);
  std::vector<std::vector<int>> yielded(k.nodes.size());  // per loop_carry: the values its loop_yields give it
  std::vector<int> todo;
  for (const Node& n : k.nodes) {
    if (n.op == Op::store || is_atomic(n.op)) todo.push_back(n.args[0]);
    if (n.op == Op::loop_yield) yielded[static_cast<std::size_t>(n.args[0])].push_back(n.args[1]);
  }
  while (!todo.empty()) {
    const int x = todo.back();
    todo.pop_back();
    if (x < 0 || seen[static_cast<std::size_t>(x)]) continue;
    seen[static_cast<std::size_t>(x)] = 1;
    const Node& d = k[x];
    switch (d.op) {
      case Op::param:
        if (d.type.is_ptr && static_cast<std::size_t>(d.i) < out.size()) out[static_cast<std::size_t>(d.i)] = 1;
        break;
      case Op::addptr: case Op::broadcast: case Op::expand_dims: case Op::trans: case Op::reshape: case Op::loop_result:
        todo.push_back(d.args[0]);
        break;
      case Op::where:
        todo.push_back(d.args[1]);
        todo.push_back(d.args[2]);
        break;
      case Op::loop_carry:
        todo.push_back(d.args[0]);
        for (int y : yielded[static_cast<std::size_t>(x)]) todo.push_back(y);
        break;
      default: break;
    }
  }
  return out;
}

Kernel without_nodes(const Kernel& k) {
  Kernel out;
  out.name = k.name;
  out.params = k.params;
  out.event_sites = k.event_sites;
  out.combines = k.combines;
  return out;
}

bool is_combine_op(Op op) {
  return op == Op::combine_arg || op == Op::constant || is_binary(op) || is_unary(op) || op == Op::where || op == Op::cast;
}

namespace {
/// A Combine's own rules: combine_arg 0 .. 2·arity-1 first (operand k of the earlier element, then of the later,
/// each of operand k's element type), then rank-0 elementwise nodes with operands defined before use, and results
/// of the operands' element types.
void verify_combine(const Kernel& k, int id) {
  const Node& scan = k.nodes[static_cast<std::size_t>(id)];
  if (scan.fn < 0 || static_cast<std::size_t>(scan.fn) >= k.combines.size())
    throw Unsupported(fmt::format("IR: {} %{} names combine {} (the kernel has {})", name(scan.op), id, scan.fn, k.combines.size()));
  const Combine& c = k.combines[static_cast<std::size_t>(scan.fn)];
  const int size = static_cast<int>(c.nodes.size()), n = c.arity();
  if (n < 1 || n > kMaxCombineArity)
    throw Unsupported(fmt::format("IR: combine {} of {} %{} has arity {}", scan.fn, name(scan.op), id, n));
  auto operand_type = [&](int j) -> const Type& { return k.nodes[static_cast<std::size_t>(scan.args[static_cast<std::size_t>(j)])].type; };
  for (int j = 0; j < n; ++j) {
    if (scan.args[static_cast<std::size_t>(j)] < 0)
      throw Unsupported(fmt::format("IR: {} %{} of arity {} has no operand {}", name(scan.op), id, n, j));
    if (operand_type(j).shape != operand_type(0).shape || operand_type(j).rank != operand_type(0).rank)
      throw Unsupported(fmt::format("IR: {} %{}: operand {} is {} but operand 0 is {}", name(scan.op), id, j,
                                    to_string(operand_type(j)), to_string(operand_type(0))));
  }
  if (size < 2 * n)
    throw Unsupported(fmt::format("IR: combine {} does not start with its {} operands", scan.fn, 2 * n));
  for (int j = 0; j < size; ++j) {
    const Node& x = c.nodes[static_cast<std::size_t>(j)];
    const bool arg = j < 2 * n;
    if (!is_combine_op(x.op) || x.type.rank != 0 || (x.op == Op::combine_arg) != arg || (arg && x.i != j) ||
        (arg && x.type.dtype != operand_type(j % n).dtype))
      throw Unsupported(fmt::format("IR: combine {} node %{} ({} {}) is not {}", scan.fn, j, name(x.op), to_string(x.type),
                                    arg ? fmt::format("combine_arg #{} of {}", j, tilejit::name(operand_type(j % n).dtype))
                                        : std::string("a scalar elementwise op")));
    for (int a : x.args)
      if (a >= j) throw Unsupported(fmt::format("IR: combine {} node %{} uses %{} before it is defined", scan.fn, j, a));
  }
  for (int j = 0; j < n; ++j) {
    const int r = c.results[static_cast<std::size_t>(j)];
    if (r < 0 || r >= size || c.nodes[static_cast<std::size_t>(r)].type.dtype != operand_type(j).dtype)
      throw Unsupported(fmt::format("IR: combine {}'s result {} (%{}) is not a {} value", scan.fn, j, r,
                                    tilejit::name(operand_type(j).dtype)));
  }
}

/// tuple_get i of a scan_custom or reduce_custom of arity > i: of its operand i's element type, in its shape.
void verify_tuple_get(const Kernel& k, int id) {
  const Node& n = k.nodes[static_cast<std::size_t>(id)];
  const int s = n.args[0];
  const Node* of = s >= 0 && s < id ? &k.nodes[static_cast<std::size_t>(s)] : nullptr;
  const int arity = of && (of->op == Op::scan_custom || of->op == Op::reduce_custom) && of->fn >= 0 &&
                            static_cast<std::size_t>(of->fn) < k.combines.size()
                        ? k.combines[static_cast<std::size_t>(of->fn)].arity() : 0;
  Type want;
  if (arity > 0 && n.i >= 1 && n.i < arity) {
    want = of->type;
    want.dtype = k.nodes[static_cast<std::size_t>(of->args[static_cast<std::size_t>(n.i)])].type.dtype;
  }
  if (arity == 0 || n.i < 1 || n.i >= arity || !(n.type == want))
    throw Unsupported(fmt::format("IR: tuple_get %{} takes value {} of %{}, not a custom scan or reduction of that many "
                                  "operands of type {}", id, n.i, s, to_string(n.type)));
}

/// reshape: a tile of rank 1 or 2 to another of rank 1 or 2, of the same element type and element count.
void verify_reshape(const Kernel& k, int id) {
  const Node& n = k.nodes[static_cast<std::size_t>(id)];
  const int a = n.args[0];
  const Type* from = a >= 0 && a < id ? &k.nodes[static_cast<std::size_t>(a)].type : nullptr;
  if (!from || from->rank < 1 || from->rank > 2 || n.type.rank < 1 || n.type.rank > 2 || from->numel() != n.type.numel() ||
      from->dtype != n.type.dtype || from->is_ptr != n.type.is_ptr)
    throw Unsupported(fmt::format("IR: reshape %{} makes {} of %{} ({}): a reshape keeps the element type and count, ranks 1 or 2",
                                  id, to_string(n.type), a, from ? to_string(*from) : std::string("nothing")));
}
}  // namespace

void verify(const Kernel& k) {
  const auto ends = loop_ends(k);
  // depth-first: the loop (begin id) that directly contains each node, -1 at top level
  std::vector<int> owner(k.nodes.size(), -1), stack;
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::loop_end) stack.pop_back();
    owner[id] = stack.empty() ? -1 : stack.back();
    if (n.op == Op::loop_begin) stack.push_back(static_cast<int>(id));
  }
  auto inside = [&](int node, int loop) {  // is `node` nested (at any depth) in `loop`?
    return node > loop && node < ends[static_cast<std::size_t>(loop)];
  };
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::scan_custom || n.op == Op::reduce_custom) verify_combine(k, static_cast<int>(id));
    if (n.op == Op::tuple_get) verify_tuple_get(k, static_cast<int>(id));
    if (n.op == Op::reshape) verify_reshape(k, static_cast<int>(id));
    if (n.op == Op::combine_arg) throw Unsupported(fmt::format("IR: node %{} is a combine's operand outside a combine", id));
    if (n.op == Op::exp2 && (n.i < 0 || (n.i > 0 && n.type.dtype != DType::f32)))
      throw Unsupported(fmt::format("IR: exp2 %{} splits one register in {} onto the FMA pipe: that needs k >= 0 and an f32 tile, not {}",
                                    id, n.i, to_string(n.type)));
    if (n.op == Op::event && (n.i < 0 || static_cast<std::size_t>(n.i) >= k.event_sites.size() || n.axis < 0 || n.axis > 1))
      throw Unsupported(fmt::format("IR: event %{} names site {} (the kernel has {}) with kind {} (0 begin, 1 end)", id, n.i,
                                    k.event_sites.size(), n.axis));
    for (int a : n.args) {
      if (a < 0) continue;
      if (a >= static_cast<int>(id)) throw Unsupported(fmt::format("IR: node %{} uses %{} before it is defined", id, a));
      // A value from inside a loop may only be used inside that loop (loop_carry's
      // second operand names its loop_begin, which is outside the body by design).
      if (n.op == Op::loop_result && k.nodes[static_cast<std::size_t>(a)].op == Op::loop_carry) continue;
      // The induction variable (the loop_begin node's value) exists inside its loop only.
      if (k.nodes[static_cast<std::size_t>(a)].op == Op::loop_begin && !inside(static_cast<int>(id), a) && n.op != Op::loop_end)
        throw Unsupported(fmt::format("IR: node %{} ({}) uses %{}, the induction variable of that loop, outside the loop: "
                                      "return it from the loop body (a carried value) instead", id, name(n.op), a));
      for (int l = owner[static_cast<std::size_t>(a)]; l >= 0; l = owner[static_cast<std::size_t>(l)])
        if (!inside(static_cast<int>(id), l) && !(n.op == Op::loop_end && a == l))
          throw Unsupported(fmt::format("IR: node %{} ({}) uses %{}, defined inside the loop at %{}: return it from the "
                                        "loop body instead", id, name(n.op), a, l));
    }
  }
}

std::string to_string(const Type& t) {
  std::string s = t.is_ptr ? fmt::format("ptr<{}>", tilejit::name(t.dtype))
                  : t.is_desc ? fmt::format("desc<{}>", tilejit::name(t.dtype))
                              : std::string(tilejit::name(t.dtype));
  if (t.rank == 0) return s;
  s += "[";
  for (int d = 0; d < t.rank; ++d) s += fmt::format("{}{}", d ? "," : "", t.shape[d]);
  return s + "]";
}

std::string print(const Kernel& k) {
  std::string out = fmt::format("kernel {}(", k.name);
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const Param& p = k.params[i];
    out += fmt::format("{}{}: {}", i ? ", " : "", p.name, to_string(p.type));
    if (p.type.is_desc && p.rank > 2) {  // (rank 2 prints as it always has)
      out += " block [";
      for (int d = 0; d < p.rank; ++d) out += fmt::format("{}{}", d ? "," : "", p.block[static_cast<std::size_t>(d)]);
      out += "]";
    }
  }
  out += ")\n";
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::store || n.op == Op::desc_store || n.op == Op::event)
      out += fmt::format("  {}", name(n.op));
    else
      out += fmt::format("  %{} = {} {}", id, name(n.op), to_string(n.type));
    for (int a : n.args)
      if (a >= 0) out += fmt::format(" %{}", a);
    if (n.op == Op::constant) out += is_float(n.type.dtype) ? fmt::format(" {}", n.f) : fmt::format(" {}", n.i);
    if (n.op == Op::param) out += fmt::format(" #{}", n.i);
    if (n.op == Op::desc_field) out += fmt::format(" field={}", n.i);
    if (n.op == Op::desc_load && n.i == 1) out += " multicast";
    if (n.op == Op::exp2 && n.i > 0) out += fmt::format(" split={}", n.i);
    if (n.op == Op::desc_view) out += fmt::format(" rank={} row_dim={}", n.i, n.axis);
    if (n.op == Op::event)
      out += fmt::format(" {} '{}'", n.axis == 0 ? "begin" : "end",
                         n.i >= 0 && static_cast<std::size_t>(n.i) < k.event_sites.size() ? k.event_sites[static_cast<std::size_t>(n.i)] : "?");
    if (n.op == Op::program_id || n.op == Op::num_programs || n.op == Op::expand_dims || is_reduce(n.op))
      out += fmt::format(" axis={}", n.axis);
    if (is_scan(n.op)) out += fmt::format(" axis={}{}", n.axis, n.i == 1 ? " reverse" : "");
    if (n.op == Op::scan_custom || n.op == Op::reduce_custom) {
      out += fmt::format(" combine={}", n.fn);
      // several operands: the node is value 0 of a tuple; its tuple_get nodes name the others
      const int arity = n.fn >= 0 && static_cast<std::size_t>(n.fn) < k.combines.size() ? k.combines[static_cast<std::size_t>(n.fn)].arity() : 1;
      for (int j = 1; j < arity; ++j)
        if (n.args[static_cast<std::size_t>(j)] >= 0)
          out += fmt::format("{}{}", j == 1 ? fmt::format(" (value 0 of {}", tilejit::name(n.type.dtype)) : "",
                             fmt::format(", {}{}", tilejit::name(k.nodes[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])].type.dtype),
                                         j == arity - 1 ? ")" : ""));
    }
    if (n.op == Op::tuple_get) out += fmt::format(" #{}", n.i);
    out += "\n";
  }
  for (std::size_t c = 0; c < k.combines.size(); ++c) {
    out += fmt::format("combine {} ->", c);
    for (int r : k.combines[c].results) out += fmt::format(" %{}", r);
    out += "\n";
    for (std::size_t j = 0; j < k.combines[c].nodes.size(); ++j) {
      const Node& n = k.combines[c].nodes[j];
      out += fmt::format("  %{} = {} {}", j, name(n.op), to_string(n.type));
      for (int a : n.args)
        if (a >= 0) out += fmt::format(" %{}", a);
      if (n.op == Op::constant) out += is_float(n.type.dtype) ? fmt::format(" {}", n.f) : fmt::format(" {}", n.i);
      if (n.op == Op::combine_arg) out += fmt::format(" #{}", n.i);
      if (n.op == Op::exp2 && n.i > 0) out += fmt::format(" split={}", n.i);
      out += "\n";
    }
  }
  return out;
}

}  // namespace tilejit::ir

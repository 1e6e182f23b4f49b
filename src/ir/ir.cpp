#include "tilejit/ir/ir.hpp"

#include <fmt/format.h>

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
  }
  return "?";
}

bool is_binary(Op op) { return op >= Op::add && op <= Op::ne; }
bool is_compare(Op op) { return op >= Op::lt && op <= Op::ne; }
bool is_unary(Op op) { return op >= Op::neg && op <= Op::abs; }
bool is_reduce(Op op) { return op == Op::reduce_sum || op == Op::reduce_max || op == Op::reduce_min; }

std::string to_string(const Type& t) {
  std::string s = t.is_ptr ? fmt::format("ptr<{}>", tilejit::name(t.dtype)) : std::string(tilejit::name(t.dtype));
  if (t.rank == 0) return s;
  s += "[";
  for (int d = 0; d < t.rank; ++d) s += fmt::format("{}{}", d ? "," : "", t.shape[d]);
  return s + "]";
}

std::string print(const Kernel& k) {
  std::string out = fmt::format("kernel {}(", k.name);
  for (std::size_t i = 0; i < k.params.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", k.params[i].name, to_string(k.params[i].type));
  out += ")\n";
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::store)
      out += fmt::format("  store");
    else
      out += fmt::format("  %{} = {} {}", id, name(n.op), to_string(n.type));
    for (int a : n.args)
      if (a >= 0) out += fmt::format(" %{}", a);
    if (n.op == Op::constant) out += is_float(n.type.dtype) ? fmt::format(" {}", n.f) : fmt::format(" {}", n.i);
    if (n.op == Op::param) out += fmt::format(" #{}", n.i);
    if (n.op == Op::program_id || n.op == Op::num_programs || n.op == Op::expand_dims || is_reduce(n.op))
      out += fmt::format(" axis={}", n.axis);
    out += "\n";
  }
  return out;
}

}  // namespace tilejit::ir

#include "tilejit/lang/trace.hpp"

#include <cctype>

namespace tilejit::lang {

ir::Kernel*& current_kernel() {
  thread_local ir::Kernel* k = nullptr;
  return k;
}

int record(ir::Node n) {
  ir::Kernel* k = current_kernel();
  if (!k) throw Error("tile operations can only run while a kernel is traced (inside tilejit::trace / compile)");
  return k->add(n);
}

int adopt_combine(ir::Kernel& sub, int base, std::span<const int> results, const char* what) {
  ir::Kernel* k = current_kernel();
  if (!k) throw Error("tile operations can only run while a kernel is traced (inside tilejit::trace / compile)");
  // What a value traced outside the combine is, in the user's terms.
  auto outside = [&](int id, const std::string& in) {
    const ir::Node& o = (*k)[id];
    const std::string is = o.op == ir::Op::param
                               ? fmt::format("kernel argument {} (the kernel's parameter {}, from 0)",
                                             k->params.at(static_cast<std::size_t>(o.i)).name, o.i)
                               : fmt::format("a {} {} computed before the combine (kernel node %{})", ir::to_string(o.type),
                                             ir::name(o.op), id);
    return InvalidArgument(fmt::format("{}: its combine{} reads {}; a combine may read only its operands (the two "
                                       "elements it combines) and literals: fold other values into the tiles it combines",
                                       what, in, is));
  };
  ir::Combine c;
  std::vector<int> own(sub.nodes.size(), -1);  // a node of `sub` -> its index in c.nodes
  // A rank-0 literal made before the combine (`auto two = tj::scalar<float>(2)`) is copied in: it is a value of
  // no program, the same everywhere.
  auto adopt_outer = [&](int id, const std::string& in) {
    const ir::Node& o = (*k)[id];
    if (o.op != ir::Op::constant || o.type.rank != 0) throw outside(id, in);
    if (own[static_cast<std::size_t>(id)] < 0) {
      own[static_cast<std::size_t>(id)] = static_cast<int>(c.nodes.size());
      c.nodes.push_back(o);
    }
    return own[static_cast<std::size_t>(id)];
  };
  for (std::size_t id = static_cast<std::size_t>(base); id < sub.nodes.size(); ++id) {
    ir::Node n = sub.nodes[id];
    const auto as_seen = [&] { return fmt::format(" (its {} {})", ir::name(n.op), ir::to_string(n.type)); };
    for (int& a : n.args)
      if (a >= 0) a = a < base ? adopt_outer(a, as_seen()) : own[static_cast<std::size_t>(a)];
    if (!ir::is_combine_op(n.op) || n.type.rank != 0)
      throw Unsupported(fmt::format("{}: its combine may only compute on scalars with elementwise operations "
                                    "(arithmetic, compares, tj::where, math, tj::cast, literals); it makes a {} {}",
                                    what, ir::name(n.op), ir::to_string(n.type)));
    own[id] = static_cast<int>(c.nodes.size());
    c.nodes.push_back(n);
  }
  for (int r : results) c.results.push_back(r < base ? adopt_outer(r, " (its result)") : own[static_cast<std::size_t>(r)]);
  k->combines.push_back(std::move(c));
  return static_cast<int>(k->combines.size()) - 1;
}

int broadcast_id(int id, const ir::Type& target) {
  ir::Kernel* k = current_kernel();
  if (!k) throw Error("tile operations can only run while a kernel is traced (inside tilejit::trace / compile)");
  const ir::Type& from = (*k)[id].type;
  if (from.rank == target.rank && from.shape == target.shape) return id;
  ir::Node n;
  n.op = ir::Op::broadcast;
  n.type = target;
  n.type.dtype = from.dtype;
  n.type.is_ptr = from.is_ptr;
  n.args[0] = id;
  return k->add(n);
}

std::string kernel_name_from(const std::string& demangled) {
  std::string out;
  // Keep the last component of a qualified name but all template arguments.
  std::string s = demangled;
  auto lt = s.find('<');
  auto head = s.substr(0, lt);
  auto colon = head.rfind("::");
  if (colon != std::string::npos) s = s.substr(colon + 2);
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "k_" + out;
  return out;
}

}  // namespace tilejit::lang

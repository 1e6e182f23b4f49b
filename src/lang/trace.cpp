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

int adopt_combine(ir::Kernel& sub, int base, int result, const char* what) {
  ir::Kernel* k = current_kernel();
  if (!k) throw Error("tile operations can only run while a kernel is traced (inside tilejit::trace / compile)");
  auto outside = [&](int id) {
    return InvalidArgument(fmt::format("{}: its combine uses %{}, a value of the kernel traced outside the combine "
                                       "(a kernel argument, or a tile computed before it); a combine may read only its "
                                       "two operands and literals: fold other values into the tile it combines",
                                       what, id));
  };
  if (result < base) throw outside(result);
  ir::Combine c;
  for (std::size_t id = static_cast<std::size_t>(base); id < sub.nodes.size(); ++id) {
    ir::Node n = sub.nodes[id];
    const int own = static_cast<int>(id) - base;
    if (!ir::is_combine_op(n.op) || n.type.rank != 0)
      throw Unsupported(fmt::format("{}: its combine may only compute on scalars with elementwise operations "
                                    "(arithmetic, compares, tj::where, math, tj::cast, literals); its node %{} is {} {}",
                                    what, own, ir::name(n.op), ir::to_string(n.type)));
    for (int& a : n.args) {
      if (a < 0) continue;
      if (a < base) throw outside(a);
      a -= base;
    }
    c.nodes.push_back(n);
  }
  c.result = result - base;
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

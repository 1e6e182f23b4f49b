#include "tilejit/lang/ops.hpp"

namespace tilejit {

namespace {
Int grid_query(ir::Op op, int axis) {
  if (axis < 0 || axis > 2)
    throw InvalidArgument("program_id/num_programs: axis " + std::to_string(axis) + " is not a grid axis (0, 1 or 2)");
  ir::Node n;
  n.op = op;
  n.type = lang::type_of<std::int32_t>();
  n.axis = axis;
  return Int(lang::record(n));
}
}  // namespace

Int program_id(int axis) { return grid_query(ir::Op::program_id, axis); }
Int num_programs(int axis) { return grid_query(ir::Op::num_programs, axis); }

}  // namespace tilejit

// tilejit/ir/ir.hpp — the typed IR that tracing records and every backend
// consumes (codegen to CUDA/HIP text, the CPU interpreter).
//
// A kernel is a list of SSA nodes in program order. Every value has a static
// type: an element dtype (or pointer-to-dtype) and a shape of rank 0..2.
// Elementwise nodes always see operands of exactly their own shape: the DSL
// inserts explicit `broadcast` nodes, so no backend re-derives broadcasting.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/core/dtype.hpp"

namespace tilejit::ir {

inline constexpr int kMaxRank = 2;

struct Type {
  DType dtype = DType::f32;  // element dtype; for pointers, the pointee
  bool is_ptr = false;
  bool is_desc = false;  // a tensor descriptor handle (rank 0; dtype = its element type)
  int rank = 0;
  std::array<int, kMaxRank> shape{1, 1};

  int numel() const {
    int n = 1;
    for (int d = 0; d < rank; ++d) n *= shape[d];
    return n;
  }
  bool operator==(const Type&) const = default;
};

enum class Op : std::uint8_t {
  param,         // i = parameter index
  program_id,    // axis
  num_programs,  // axis
  constant,      // f (floats) or i (ints, bools), splat to the node's shape
  arange,        // 0 .. shape[0]-1
  // binary elementwise (args[0], args[1]); mul with i = 1 (tj::rescale): a thread whose args[1] values are all
  // exactly 1 may skip its multiplies (the result is args[0] either way)
  add, sub, mul, div, rem, maximum, minimum, bit_and, bit_or, bit_xor,
  lt, le, gt, ge, eq, ne,
  // unary elementwise (args[0])
  neg, logical_not, exp, exp2, log, sqrt, rsqrt, abs,
  where,         // args: cond, a, b
  cast,          // args[0] -> type.dtype
  broadcast,     // args[0] (rank 0, or same rank with 1s) -> type.shape
  expand_dims,   // args[0]; axis = the new unit axis
  addptr,        // args: pointer tile, integer offset tile (in elements)
  load,          // args: pointers, mask (-1 = none), other (-1 = zero)
  store,         // args: pointers, value, mask (-1 = none); no result
  reduce_sum,    // args[0]; axis
  reduce_max,
  reduce_min,
  dot,           // args: a [M,K], b [K,N], acc [M,N] (f32): acc + a·b
  // structured loop: for (iv = lo; iv < hi; iv += step), see `for_range`
  loop_begin,    // args: lo, hi, step (i32 scalars); the node's value is the induction variable
  loop_carry,    // args[0] = init value, args[1] = its loop_begin; inside the body: the carried value
  loop_yield,    // args[0] = loop_carry, args[1] = the body's next value for it; no result
  loop_end,      // args[0] = loop_begin; no result
  loop_result,   // args[0] = loop_carry: the carried value after the loop
  // tensor descriptors (runtime/tensor_descriptor.hpp)
  desc_load,     // args: descriptor (a 2-D descriptor parameter or a desc_view), c0, c1 (i32 element offsets of
                 // its rows and columns): the block at (c0, c1), out-of-bounds elements zero; type = [block0,
                 // block1]; i = 1: the same block in every program of a cluster (Desc::load_multicast)
  desc_field,    // args[0] = descriptor parameter; i: 0 base (ptr), 1 shape[0], 2 shape[1], 3 strides[0] (i32
                 // elements), 4 OobFill (i32: 1 = NaN) — 1..3 of rank-2 descriptors only; kDescShape + d
                 // shape[d], kDescStride + d strides[d] (i32 elements) of any rank
  trans,         // args[0] [M,N] -> [N,M]
  desc_store,    // args: descriptor, c0, c1, value [block0, block1]: stores the block at (c0, c1), out-of-bounds
                 // elements dropped; no result. Backends see it only where codegen stores it through TMA
                 // (lower_descriptors rewrites the others into masked stores)
  event,         // a device event (lang/events.hpp): args[0] = its id (i32 scalar); i = index into
                 // Kernel::event_sites; axis: 0 = async_begin (producer), 1 = async_end (consumer); no result.
                 // Backends record it only when the kernel is instrumented (codegen::Options::device_events)
  desc_view,     // args[0] = a descriptor parameter of rank R in 3..5, args[1..R-2] = i32 coordinates of its dims
                 // other than the row dim (axis) and the last dim, in dim order: the 2-D descriptor [shape[axis],
                 // shape[R-1]] at those coordinates (every element out of bounds when one of them is); type is_desc;
                 // i = R. Used only as desc_load's / desc_store's descriptor (Desc<T, B...> of rank > 2)
  // inclusive scans along `axis` (args[0]; the type is the operand's): element j is x[0] op ... op x[j], or with
  // i = 1 (reverse) x[j] op ... op x[n-1]
  scan_sum, scan_prod, scan_max, scan_min,
  // atomic read-modify-writes, relaxed, device scope: args: pointers, value, mask (-1 = none); the node's value is
  // what each address held before (0 where masked off)
  atomic_add, atomic_max, atomic_min, atomic_xchg,
  atomic_cas,    // args: pointers, compare, value: stores value where memory equals compare; the value held before
  // more unary math (args[0], floating point)
  log2, sin, cos, tanh, erf, floor, ceil, sigmoid,
  scan_custom,   // an inclusive scan as scan_sum (axis, i = 1: reverse) whose operator is a user's combine: fn = index
                 // into Kernel::combines; element j is ((x[0] op x[1]) op ...) op x[j], in any grouping (the operator
                 // must be associative; it need not be commutative: operands keep their order). It scans the
                 // combine's arity (1..3) of operands together, args[0..arity-1], all of one shape: the node's value is
                 // the scan of args[0]; tuple_get nodes name the others
  combine_arg,   // inside a Combine only: a rank-0 operand; of arity n, i = k < n is operand k of the earlier element
                 // (the prefix), i = n + k operand k of the later one
  reduce_custom, // a reduction as reduce_sum (axis) whose operator is a user's combine (fn, operands and values as
                 // scan_custom's; associative and commutative: lanes and warps combine in an order the layout decides)
  tuple_get,     // value i (1 <= i < arity) of the scan_custom or reduce_custom args[0] of several operands
  reshape,       // args[0] -> type.shape (rank 1 or 2, the same element count): the elements in row-major order
};

/// desc_field's i for shape[d] and strides[d] of a descriptor of any rank (d < 5).
inline constexpr int kDescShape = 8, kDescStride = 16;

/// The device-event sites the code generator records itself (codegen::Options::device_events); a kernel's own
/// async_begin / async_end may not use these names.
inline constexpr std::string_view kProgramSite = "program", kWgmmaSite = "wgmma", kTmaSitePrefix = "TMA loop %";
inline bool is_reserved_event_site(std::string_view name) {
  return name == kProgramSite || name == kWgmmaSite || name.substr(0, kTmaSitePrefix.size()) == kTmaSitePrefix;
}

const char* name(Op op);
bool is_binary(Op op);
bool is_compare(Op op);
bool is_unary(Op op);
bool is_reduce(Op op);
bool is_scan(Op op);
bool is_atomic(Op op);
/// The ops a Combine may hold: combine_arg, constant, binary (compares too), unary, where, cast.
bool is_combine_op(Op op);
/// The most operands one scan_custom / reduce_custom combines together (a Node's args).
inline constexpr int kMaxCombineArity = 3;

struct Node {
  Op op = Op::constant;
  Type type;
  std::array<int, 4> args{-1, -1, -1, -1};  // args[3]: desc_store's value only
  int axis = 0;
  double f = 0;        // float constant
  std::int64_t i = 0;  // integer constant / parameter index
  int fn = -1;         // scan_custom, reduce_custom: its Combine in Kernel::combines
};

/// The operator of a scan_custom or reduce_custom, traced from the user's combine (tj::associative_scan,
/// tj::reduce): a function of two elements — each a tuple of `arity()` rank-0 values, one per operand — returning
/// one. nodes are its own (ids index them): combine_arg 0 .. 2·arity-1 first, in order, then rank-0 elementwise ops
/// (constant, binary, compare, unary, where, cast); results[k] is the id of its value for operand k.
struct Combine {
  std::vector<Node> nodes;
  std::vector<int> results;
  int arity() const { return static_cast<int>(results.size()); }
};

/// Kernel parameter: a scalar (rank-0 Type) or a pointer (Type.is_ptr).
struct Param {
  std::string name;
  Type type;
  bool is_size = false;  // declared as tj::Size: checked >= 0 at launch
  /// Descriptor parameters (type.is_desc): the tensor's rank (2..5; the launch
  /// argument's must equal it), the block the kernel's Desc moves (entries past
  /// `rank` are 0) and the row dim of that block's 2-D tile (its one outer dim
  /// above 1, else rank - 2; the columns are dim rank - 1).
  int rank = 2;
  std::array<int, 5> block{};
  int row_dim = 0;
};

/// Properties of the launch arguments that change the generated code
/// (Triton's specialisation): pointer 16-byte alignment, integer
/// divisibility by 16, integer equal to 1, a descriptor's rows being whole
/// 16-byte chunks. One entry per parameter.
struct Specialization {
  /// bit 0: a pointer aligned to 16 bytes / an integer divisible by 16 / a descriptor whose shape[-1] x element
  /// size is a multiple of 16 bytes (what a TMA store needs to write nothing past a row); bit 1: an integer equal to 1
  std::vector<std::uint8_t> flags;
  static constexpr std::uint8_t kDiv16 = 1, kEqual1 = 2;
  bool operator==(const Specialization&) const = default;
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  std::vector<Node> nodes;
  /// Names of the device events' sites (Op::event's i), in order of first use.
  std::vector<std::string> event_sites;
  /// The operators of the kernel's scan_custom and reduce_custom nodes (Node::fn).
  std::vector<Combine> combines;

  int add(Node n) {
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }
  const Node& operator[](int id) const { return nodes.at(static_cast<std::size_t>(id)); }
};

/// A kernel with k's name, parameters, event sites and combines, and no nodes: what a pass that rebuilds the node
/// list starts from.
Kernel without_nodes(const Kernel& k);

/// What desc_load / desc_store `x` reads through: the descriptor parameter node, its rank, the row dim of the
/// block's tile, and the coordinate nodes of its other dims but the last (a desc_view's, dim order; none at rank 2).
struct DescRef {
  int param = -1, rank = 2, row_dim = 0;
  std::vector<int> outer;
};
DescRef desc_ref(const Kernel& k, int x);

/// Per parameter: 1 for a pointer parameter some store writes through — its address reaches the store through
/// addptr, broadcast, expand_dims, trans, where or a loop-carried value (a pointer loaded from memory is not
/// followed). The launch refuses a pointer to const for such a parameter.
std::vector<char> stored_pointer_params(const Kernel& k);

/// Index of the loop_end matching each loop_begin (-1 elsewhere).
std::vector<int> loop_ends(const Kernel& k);

/// Structural checks every backend relies on: operands defined before use,
/// loops properly nested, no value defined inside a loop used outside it
/// (return it from the body instead). Throws Unsupported naming the node.
void verify(const Kernel& k);

/// Human-readable listing, one node per line (`%3 = add f32[96] %1, %2`).
std::string print(const Kernel& k);
std::string to_string(const Type& t);

}  // namespace tilejit::ir

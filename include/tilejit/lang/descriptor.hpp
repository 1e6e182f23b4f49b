// tilejit/lang/descriptor.hpp — tensor descriptors in kernels (Triton's
// `desc.load([i, j])`), and `trans`.
//
//   struct Copy {
//     void operator()(tj::Desc<tj::bf16, 128, 64> in, tj::Ptr<tj::bf16> out, tj::Size ld) const {
//       auto t = in.load(tj::program_id(0) * 128, 0);   // Tile<bf16, 128, 64>
//       ...
//     }
//   };
//   // host: TensorDescriptor d(dev, ptr, DType::bf16, {M, K}, {K, 1}, {128, 64}, {.swizzle = Swizzle::b128});
//   kernel.launch(grid, d, out, ld);
//
// A `Desc<T, B0, B1>` parameter takes a 2-D runtime::TensorDescriptor whose
// dtype is T (checked at launch). The kernel's [B0, B1] is the block it
// loads: where its copies go through TMA and the argument was built with
// another block_shape or swizzle, the launch re-encodes the same tensor with
// [B0, B1] and the 128B swizzle once (cached per kernel), so one descriptor
// serves every config an autotuner tries.
// `load(i, j)` reads the [B0, B1] block whose first element is (i, j) — element
// offsets, outermost first — with out-of-bounds elements (past the shape, or at
// negative offsets) read as the descriptor's OobFill: zero, or NaN for float
// types built with OobFill::nan — on every target, as a TMA copy fills. (One
// difference remains: TMA's NaN fill is NAN_REQUEST_ZERO_FMA, which a wgmma
// fed straight from the copy multiplies as zero; a NaN-filled block loaded any
// other way is an ordinary NaN, and a dot over it gives NaN.)
//
// Lowering: on sm_90a a block that only feeds `dot` (directly as operand a,
// or through `trans` as operand b; K · element size a multiple of 32 bytes)
// inside a loop is copied by TMA into a 128B-swizzled shared-memory ring of
// `num_stages` buffers and handed to wgmma without passing through registers
// (codegen, "TMA pipeline"). Its boxes are 128 bytes wide, one per 128-byte
// slab of a row: rows of a multiple of 128 bytes (B1 = 128 / sizeof(T) per
// slab) copy exactly the block; narrower rows (or a last, partial slab) copy
// the columns up to the slab's end too — a [64, 64] i8 block moves 8 KiB for
// its 4 KiB — and a diagnostic of the generated kernel says so. Every other load is rewritten into ordinary masked
// loads from the descriptor's base, shape and strides (ir/lower_descriptors.hpp),
// which is also how the interpreter, HIP and sm_80 run them. `store(i, j, t)`
// records a desc_store: a masked store of the same block (lower_descriptors),
// or on sm_90a with CompileOptions::tma_store a TMA bulk store through a
// 128B-swizzled shared-memory staging buffer (codegen, "TMA store").
#pragma once
#include <cstdint>

#include "tilejit/lang/ops.hpp"

namespace tilejit {
namespace lang {
template <class X>
Int index_of(const X& x) {
  if constexpr (Literal<X>) {
    return scalar_constant<std::int32_t>(static_cast<double>(x));
  } else {
    auto t = tile_of(x);
    static_assert(std::is_same_v<elem_t<decltype(t)>, std::int32_t> && shape_t<decltype(t)>::rank == 0,
                  "descriptor offsets are i32 scalars (tj::Int) or integer literals");
    return t;
  }
}
}  // namespace lang

/// A kernel parameter holding a 2-D tensor descriptor of T that moves
/// [B0, B1] blocks. See the file comment.
template <class T, int B0, int B1>
class Desc {
  static_assert(lang::is_smooth(B0) && lang::is_smooth(B1), "descriptor block dims must be 2^a*3^b*5^c*7^d");
  static_assert(B0 <= 256 && B1 <= 256, "descriptor block dims are at most 256 (TMA boxDim)");

 public:
  using element = T;
  static constexpr int block0 = B0, block1 = B1;

  explicit Desc(int id) : id_(id) {}
  int id() const { return id_; }

  /// The [B0, B1] block at element offsets (i, j); out-of-bounds elements are the descriptor's OobFill (0 or NaN).
  template <class I, class J>
  Tile<T, B0, B1> load(const I& i, const J& j) const {
    return load_node(i, j, false);
  }

  /// load(i, j) of a block that every program of a thread-block cluster loads at the same (i, j) in the same
  /// iteration (e.g. GEMM's B block for programs that share output columns): with CompileOptions::num_ctas > 1 on
  /// sm_90a, in a warp-specialised TMA pipeline, the cluster's first program copies it once from L2 into every
  /// program's shared memory (TMA multicast). The coordinates, and the bounds of the loop (and of the loop over work
  /// items around it), must be the same in every program of the cluster: the code generator applies clusters only
  /// where it can show that (values built from parameters, constants, grid sizes, program ids along y / z,
  /// program_id(0) / c with c a multiple of num_ctas, loads at such addresses); else none, with a diagnostic.
  /// Everywhere else this is load(i, j).
  template <class I, class J>
  Tile<T, B0, B1> load_multicast(const I& i, const J& j) const {
    return load_node(i, j, true);
  }

  /// The tensor's extent along dim 0 (its rows) and dim 1, read from the argument at run time.
  Int rows() const { return field(1); }
  Int cols() const { return field(2); }

  /// Store `t` as the [B0, B1] block at element offsets (i, j); elements out of
  /// bounds are dropped.
  template <class I, class J>
  void store(const I& i, const J& j, const Tile<T, B0, B1>& t) const {
    const Int ci = lang::index_of(i), cj = lang::index_of(j);
    ir::Node n;
    n.op = ir::Op::desc_store;
    n.type = lang::type_of<T, B0, B1>();
    n.args = {id_, ci.id(), cj.id(), t.id()};
    lang::record(n);
  }

 private:
  /// The desc_load node; i = 1 marks a multicast block.
  template <class I, class J>
  Tile<T, B0, B1> load_node(const I& i, const J& j, bool multicast) const {
    const Int ci = lang::index_of(i), cj = lang::index_of(j);
    ir::Node n;
    n.op = ir::Op::desc_load;
    n.type = lang::type_of<T, B0, B1>();
    n.args = {id_, ci.id(), cj.id(), -1};
    n.i = multicast ? 1 : 0;
    return Tile<T, B0, B1>(lang::record(n));
  }
  Int field(int f) const {
    ir::Node n;
    n.op = ir::Op::desc_field;
    n.type = lang::type_of<std::int32_t>();
    n.args[0] = id_;
    n.i = f;
    return Int(lang::record(n));
  }
  Ptr<T> base() const {
    ir::Node n;
    n.op = ir::Op::desc_field;
    n.type = lang::type_of<ptr<T>>();
    n.args[0] = id_;
    n.i = 0;
    return Ptr<T>(lang::record(n));
  }
  int id_;
};

/// A descriptor parameter of any block shape: what `Desc<T, B0, B1>` parameters
/// become in an autotuner's signature, so candidates with different blocks tune together.
template <class T>
struct AnyDesc {
  using element = T;
};

namespace lang {
template <class X> struct is_desc : std::false_type {};
template <class T, int B0, int B1> struct is_desc<Desc<T, B0, B1>> : std::true_type {};
template <class T> struct is_desc<AnyDesc<T>> : std::true_type {};
template <class X> inline constexpr bool is_desc_v = is_desc<std::remove_cvref_t<X>>::value;
}  // namespace lang

/// The transpose of a 2-D tile: [M, N] -> [N, M]. On sm_90a, `trans` of a
/// descriptor block feeding `dot` as operand b is free (wgmma reads the
/// K-major block as B); elsewhere a descriptor block is loaded transposed.
/// Of a register tile it is free too when nothing forces another layout: the
/// result's layout is the operand's with dim0 and dim1 swapped, so every
/// element stays in its register (a value that meets its own transpose
/// elementwise, or a dot accumulator, costs one conversion through shared
/// memory).
template <class T, int M, int N>
Tile<T, N, M> trans(const Tile<T, M, N>& t) {
  ir::Node n;
  n.op = ir::Op::trans;
  n.type = lang::type_of<T, N, M>();
  n.args[0] = t.id();
  return Tile<T, N, M>(lang::record(n));
}

}  // namespace tilejit

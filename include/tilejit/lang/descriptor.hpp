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
// serves every config an autotuner tries. `Desc<T, B...>` of rank 3..5 (e.g.
// `Desc<bf16, 1, 128, 64>` over [B·H, S, D]) takes a descriptor of that rank:
// its block has one row dim and the last dim above 1, loads and stores take
// one coordinate per dim, and bounds hold per dim (see Desc).
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
// inside a loop is copied by TMA into a swizzled shared-memory ring of
// `num_stages` buffers and handed to wgmma without passing through registers
// (codegen, "TMA pipeline"). It is held in swizzled slabs as wide as its rows allow — 128 bytes, or 64 / 32
// bytes when the rows are not whole 128-byte slabs (a [rows, 96] bf16 block is three 64-byte slabs) — and copied
// one box per slab, so the block is copied exactly (codegen plan_slab_widths). From sm_80 without wgmma the same
// blocks (read by mma.sync, directly or through `trans`) are copied by every thread with cp.async into a ring of
// `num_stages` 128-byte-swizzled stages (codegen, "cp.async ring"). Every other load is rewritten into ordinary
// masked loads from the descriptor's base, shape and strides (ir/lower_descriptors.hpp), which is also how the
// interpreter and HIP run them. A ring copies a block ahead of the iterations before it (up to num_stages - 1
// of them, and TMA reads through the async proxy): a loop must not store to memory that a later iteration of it
// block-loads, as with Triton's pipelined loads. `store(i, j, t)`
// records a desc_store: a masked store of the same block (lower_descriptors),
// or on sm_90a with CompileOptions::tma_store a TMA bulk store through a
// 128B-swizzled shared-memory staging buffer (codegen, "TMA store").
#pragma once
#include <array>
#include <limits>
#include <cstdint>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "tilejit/core/error.hpp"
#include "tilejit/lang/ops.hpp"

namespace tilejit {
namespace lang {
template <class X>
Int index_of(const X& x) {
  if constexpr (Literal<X>) {
    return i32_literal(x, "descriptor coordinate");  // 1.9 or 2^32 are errors, not row 1 or row 0
  } else {
    auto t = tile_of(x);
    static_assert(std::is_same_v<elem_t<decltype(t)>, std::int32_t> && shape_t<decltype(t)>::rank == 0,
                  "descriptor offsets are i32 scalars (tj::Int) or integer literals");
    return t;
  }
}

/// The row dim of a rank-R descriptor block's 2-D tile: its one dim above 1 other than the last, else R - 2.
template <int... B>
constexpr int desc_row_dim() {
  constexpr int R = sizeof...(B);
  constexpr int b[] = {B...};
  int p = R - 2;
  for (int d = 0; d + 1 < R; ++d)
    if (b[d] > 1) p = d;
  return p;
}
/// How many dims other than the last exceed 1 in a descriptor block.
template <int... B>
constexpr int desc_outer_above_one() {
  constexpr int R = sizeof...(B);
  constexpr int b[] = {B...};
  int n = 0;
  for (int d = 0; d + 1 < R; ++d) n += b[d] > 1;
  return n;
}
}  // namespace lang

/// A kernel parameter holding a tensor descriptor of T and rank R =
/// sizeof...(B) (1..5) that moves blocks of shape [B...], outermost first.
/// See the file comment.
///
/// Rank 2 (`Desc<T, B0, B1>`): `load(i, j)` is the [B0, B1] block at element
/// offsets (i, j). Rank 3..5 (`Desc<bf16, 1, 128, 64>` over [B·H, S, D],
/// `Desc<bf16, 1, 128, 1, 64>` over [B, S, H, D]): at most one dim besides the
/// last may exceed 1; the block's tile is 2-D, [B[row_dim], B[R-1]], with
/// row_dim that dim (else R - 2) — Triton's rank-N descriptors with the unit
/// dims squeezed. `load(c0, ..., c{R-1})` takes one element offset per dim;
/// bounds hold per dim, so a block past S in one head reads the fill, not the
/// next head's rows (a [B·H·S, D] 2-D view cannot do that). On sm_90a such a
/// block goes through TMA as an R-d box; elsewhere it is the masked load of
/// the 2-D slice at the outer coordinates (every element out of bounds when
/// one of them is).
///
/// Rank 1 (`Desc<f32, 1024>` over a vector of n elements): `load(i)` is the
/// 1-D tile [B0] of elements i .. i + B0 - 1, out-of-bounds elements the
/// OobFill; `store(i, t)` drops them. On every target it is a masked vector
/// load / store from the descriptor's base and shape (a 1-D block feeds no
/// wgmma, so it never goes through TMA; the base is 16-byte aligned, which
/// the load's vectorisation uses).
template <class T, int... B>
class Desc {
  static constexpr int R = sizeof...(B);
  static_assert(R >= 1 && R <= 5, "a Desc has rank 1..5 (TMA's tensorRank)");
  static_assert((lang::is_smooth(B) && ...), "descriptor block dims must be 2^a*3^b*5^c*7^d");
  static_assert(((B >= 1 && B <= 256) && ...), "descriptor block dims are 1..256 (TMA boxDim)");
  static_assert(lang::desc_outer_above_one<B...>() <= 1,
                "a Desc block has at most one dim above 1 besides the last: its tile is 2-D [rows, cols]");

 public:
  using element = T;
  static constexpr int rank = R;
  /// The dim the tile's rows run along (columns: dim R - 1).
  static constexpr int row_dim = R == 1 ? -1 : lang::desc_row_dim<B...>();  // (-1: a 1-D block has no rows)
  static constexpr std::array<int, R> block_shape{B...};
  static constexpr int block0 = R == 1 ? 1 : block_shape[static_cast<std::size_t>(row_dim)], block1 = block_shape[R - 1];

  explicit Desc(int id) : id_(id) {}
  int id() const { return id_; }

  /// The block at element offsets (c0, ..., c{R-1}) as a [block0, block1] tile; out-of-bounds elements are the
  /// descriptor's OobFill (0 or NaN).
  template <class... C>
    requires(R >= 2 && sizeof...(C) == R)
  Tile<T, block0, block1> load(const C&... c) const {
    return load_node({lang::index_of(c)...}, false);
  }
  /// Rank 1: the [B0] block at element offset `i`; out-of-bounds elements are the descriptor's OobFill (0 or NaN).
  template <class C>
    requires(R == 1)
  Tile<T, block1> load(const C& i) const {
    const auto [ptrs, mask] = vector_block(lang::index_of(i));
    if constexpr (is_float(dtype_v<T>)) {
      const Int nan_fill = field(4);  // OobFill: 1 = NaN
      return tilejit::load(ptrs, mask, where(nan_fill != 0, lang::scalar_constant<T>(std::numeric_limits<double>::quiet_NaN()),
                                             lang::scalar_constant<T>(0.0)));
    } else {
      return tilejit::load(ptrs, mask);
    }
  }

  /// load(...) of a block that every program of a thread-block cluster loads at the same coordinates in the same
  /// iteration (e.g. GEMM's B block for programs that share output columns): with CompileOptions::num_ctas > 1 on
  /// sm_90a, in a warp-specialised TMA pipeline, the cluster's first program copies it once from L2 into every
  /// program's shared memory (TMA multicast). The coordinates, and the bounds of the loop (and of the loop over work
  /// items around it), must be the same in every program of the cluster: the code generator applies clusters only
  /// where it can show that (values built from parameters, constants, grid sizes, program ids along y / z,
  /// program_id(0) / c with c a multiple of num_ctas, loads at such addresses); else none, with a diagnostic.
  /// Everywhere else this is load(...).
  template <class... C>
    requires(R >= 2 && sizeof...(C) == R)
  Tile<T, block0, block1> load_multicast(const C&... c) const {
    return load_node({lang::index_of(c)...}, true);
  }

  /// The tensor's extent along dim 0 (its rows) and dim 1 of a 2-D descriptor, read from the argument at run time.
  Int rows() const
    requires(R == 2)
  {
    return field(1);
  }
  Int cols() const
    requires(R == 2)
  {
    return field(2);
  }
  /// The tensor's extent along dim `d` (0 <= d < rank), elements; throws InvalidArgument for another d.
  Int shape(int d) const { return field(ir::kDescShape + checked(d, "shape")); }
  /// The tensor's stride along dim `d` (0 <= d < rank), elements; throws InvalidArgument for another d.
  Int stride(int d) const { return field(ir::kDescStride + checked(d, "stride")); }

  /// Store the tile `t` (the last argument, [block0, block1]) as the block at element offsets (c0, ..., c{R-1});
  /// elements out of bounds are dropped.
  /// Rank 1: store the [B0] tile `t` at element offset `i`; elements out of bounds are dropped.
  template <class C>
    requires(R == 1)
  void store(const C& i, const Tile<T, block1>& t) const {
    const auto [ptrs, mask] = vector_block(lang::index_of(i));
    tilejit::store(ptrs, t, mask);
  }
  template <class... A>
    requires(R >= 2 && sizeof...(A) == R + 1)
  void store(const A&... a) const {
    const auto args = std::forward_as_tuple(a...);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      const Tile<T, block0, block1> t = std::get<R>(args);
      const auto [d, ci, cj] = coordinates({lang::index_of(std::get<I>(args))...});
      ir::Node n;
      n.op = ir::Op::desc_store;
      n.type = lang::type_of<T, block0, block1>();
      n.args = {d, ci, cj, t.id()};
      lang::record(n);
    }(std::make_index_sequence<R>{});
  }

 private:
  /// Rank 1: the addresses of elements i .. i + B0 - 1 and where they are in bounds (0 <= index < shape(0)).
  std::pair<Tile<ptr<T>, block1>, Tile<bool, block1>> vector_block(const Int& i) const {
    ir::Node b;
    b.op = ir::Op::desc_field;
    b.type = lang::type_of<ptr<T>>();
    b.args[0] = id_;
    b.i = 0;  // the base
    const Tile<ptr<T>> base(lang::record(b));
    const auto idx = arange<block1>() + i;
    return {base + idx, (idx >= 0) & (idx < shape(0))};
  }
  /// The descriptor node a block at coordinates `c` is read from (this parameter, or a desc_view of it at the
  /// coordinates of the dims other than row_dim and the last), with the row and column offsets.
  std::array<int, 3> coordinates(const std::array<Int, R>& c) const {
    if constexpr (R == 2) {
      return {id_, c[0].id(), c[1].id()};
    } else {
      ir::Node v;
      v.op = ir::Op::desc_view;
      v.type = lang::type_of<T>();
      v.type.is_desc = true;
      v.args[0] = id_;
      int slot = 1;
      for (int d = 0; d + 1 < R; ++d)
        if (d != row_dim) v.args[static_cast<std::size_t>(slot++)] = c[static_cast<std::size_t>(d)].id();
      v.axis = row_dim;
      v.i = R;
      return {lang::record(v), c[static_cast<std::size_t>(row_dim)].id(), c[R - 1].id()};
    }
  }
  /// The desc_load node; i = 1 marks a multicast block.
  Tile<T, block0, block1> load_node(const std::array<Int, R>& c, bool multicast) const {
    const auto [d, ci, cj] = coordinates(c);
    ir::Node n;
    n.op = ir::Op::desc_load;
    n.type = lang::type_of<T, block0, block1>();
    n.args = {d, ci, cj, -1};
    n.i = multicast ? 1 : 0;
    return Tile<T, block0, block1>(lang::record(n));
  }
  static int checked(int d, const char* what) {
    if (d < 0 || d >= R)
      throw InvalidArgument(fmt::format("Desc::{}({}): the descriptor has rank {}, dims 0..{}", what, d, R, R - 1));
    return d;
  }
  Int field(int f) const {
    ir::Node n;
    n.op = ir::Op::desc_field;
    n.type = lang::type_of<std::int32_t>();
    n.args[0] = id_;
    n.i = f;
    return Int(lang::record(n));
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
template <class T, int... B> struct is_desc<Desc<T, B...>> : std::true_type {};
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

// tilejit/layout/encodings/slice.hpp — the layout of a reduction's result.
//
// Reducing a tile along dimension `dim` leaves a tile of one rank less. Its
// layout is the parent's with output `dim` removed (Triton's SliceEncodingAttr;
// LinearLayoutConversions.cpp builds it by composing the parent with a map that
// sends `dim` to nothing). Every thread keeps its position; what changes is
// what its digits mean:
//
// * a digit whose image lay only in `dim` now has image 0 — it becomes a
//   *broadcast copy*: the threads (or registers) it tells apart hold the same
//   reduced value;
// * a digit whose image also had other components keeps those components;
// * the remaining output dims keep their digit systems unchanged — in
//   particular their non-power-of-two sizes. (The one other NPOT linear-layout
//   implementation lost NPOT sizes when slicing, because it rebuilt the
//   output sizes from bit counts; here sizes are never recomputed, only
//   carried over.)
//
// Output dims after the removed one are renamed down (dim2 → dim1, ...) when
// they carry the standard names, so the result is again dim0..dim(r-2).
//
// Registers: Triton drops register bases that became zero, so that a thread
// keeps one register per distinct value. `SliceRegisters::drop_copies` does
// the same (for digits of any radix); the default keeps them, so that the
// result has the same inputs as the parent and the reduction is a pure
// relabelling.
//
// Worked example: mma.sync accumulator of a 16×8 tile (one warp), reduced
// along dim1 (row sums). In the parent, register digits map to (0,1) and (8,0),
// lane digits to (0,2) (0,4) (1,0) (2,0) (4,0). Sliced:
//
//     register → (0) (8)          lane → (0) (0) (1) (2) (4)      dim0 size 16
//
// so lanes 4t..4t+3 hold the same row sum (broadcast over the quad) and
// register 1 is a copy of register 0; with drop_copies the register dim keeps
// one digit, → (8).
#pragma once

#include <string_view>

#include "tilejit/layout/encodings/common.hpp"

namespace tilejit::layout {

/// What slice() does with register digits whose image became 0.
enum class SliceRegisters {
  keep,         ///< keep them: broadcast copies, inputs unchanged
  drop_copies,  ///< remove them from "register" (Triton's SliceEncodingAttr)
};

/// The layout of `layout` reduced along output dim `dim` (0 <= dim <
/// num_out_dims()).
///
/// Postconditions:
/// * num_out_dims() is one less; the other output dims keep their order and
///   digit systems (so their sizes, NPOT included); names dim<k> for k > dim
///   become dim<k-1>;
/// * for every input x: slice(L, d).apply(x) == L.apply(x) without entry d
///   (with SliceRegisters::keep; with drop_copies, for x whose dropped
///   register digits are 0);
/// * with drop_copies, the "register" input has no digit of image 0.
/// Throws LayoutError if dim is out of range.
[[nodiscard]] constexpr LinearLayout slice(const LinearLayout& layout, int dim,
                                           SliceRegisters registers = SliceRegisters::keep) {
  if (dim < 0 || dim >= layout.num_out_dims()) {
    detail::throw_layout_error(Reason("slice: dim ")
                               << dim << " is outside [0, " << layout.num_out_dims() << ")");
  }
  LinearLayout r = layout.remove_out_dim(dim);
  for (int j = dim; j < r.num_out_dims() && j + 1 < kMaxDims; ++j) {
    if (r.out_name(j) == Name(detail::kStandardOutNames[j + 1])) {
      r = r.rename_out_dim(j, detail::kStandardOutNames[j]);
    }
  }
  const int reg = r.in_dim_index("register");
  if (registers == SliceRegisters::keep || reg < 0) return r;

  // Rebuild with the zero-image register digits left out.
  LayoutBuilder b;
  for (int j = 0; j < r.num_out_dims(); ++j) b.add_out_dim(r.out_name(j), r.out_digits(j));
  for (int i = 0; i < r.num_in_dims(); ++i) {
    const DigitSystem& ds = r.in_digits(i);
    DigitSystem kept;
    for (int k = 0; k < ds.num_digits(); ++k) {
      if (i != reg || r.image(i, k) != Image{}) kept.push_back(ds.radix(k));
    }
    const int bi = b.add_in_dim(r.in_name(i), kept);
    int n = 0;
    for (int k = 0; k < ds.num_digits(); ++k) {
      if (i != reg || r.image(i, k) != Image{}) b.set_image(bi, n++, r.image(i, k));
    }
  }
  return b.build();
}

}  // namespace tilejit::layout

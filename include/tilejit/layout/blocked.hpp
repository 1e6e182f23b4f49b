// tilejit/layout/blocked.hpp — the blocked encoding as a linear layout.
//
// A blocked layout (Triton's BlockedEncodingAttr) cuts a tile into equal
// pieces, outermost first: warps_per_cta[d] warps along dim d, each warp
// threads_per_warp[d] lanes along d, each lane size_per_thread[d] contiguous
// elements along d. `order` lists the dims minor first (order = {1, 0}:
// dim1 is contiguous, "row-major"); it decides which dim a flat register,
// lane or warp number walks first.
//
// As a linear layout it is a product of identities, exactly as in Triton:
//
//   for each of register, lane, warp:  for d in order (minor first):
//       L *= identity1D(count[d], "register"/"lane"/"warp", "dim<d>")
//
// so along each dim the output digits are [register digits | lane digits |
// warp digits], and the coordinate of (r, l, w) along dim d is
//
//   x_d = r_d + spt_d · (l_d + tpw_d · (w_d + wpc_d · rep_d))  (mod shape_d)
//
// where r_d, l_d, w_d are the dim-d parts of the flat numbers (minor dim of
// `order` first) and rep_d counts repetitions (below).
//
// Shape vs coverage. The pieces cover spt·tpw·wpc elements along each dim.
// * Larger shape: the pattern repeats. Extra register digits of
//   factor(shape/coverage) go on top (in order of `order`), as Triton's
//   ensureLayoutNotSmallerThan does. The factor may be NPOT: shape 96 over 32
//   lanes (spt 1) gives dim0 digits [2,2,2,2,2,3], register image 32.
// * Smaller shape: the top digits of the dim are cut away (warps first, then
//   lanes, then registers — Triton zeroes the largest bases first); the
//   inputs that fed them map to 0, i.e. several threads hold the same element
//   (replication / broadcast). The shape must be the size of a prefix of the
//   dim's digits: 48 = 3·2·2·2·2 is a prefix of [3,2,2,2,2,2]; 32 is not, and
//   is rejected.
//
// Only a single CTA is modelled: inputs are "register", "lane", "warp"
// (no "block"). size_per_thread and shape may be any 2^a·3^b·5^c·7^d;
// threads and warps are powers of two, and the threads of a warp number 32
// (NVIDIA) or 64 (AMD wave64).
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>

#include "tilejit/layout/linear_layout.hpp"

namespace tilejit::layout {

/// A short list of per-dimension integers (rank <= kMaxDims): {16, 96}.
struct DimValues {
  std::array<int, kMaxDims> v{};
  int rank = 0;

  constexpr DimValues() = default;
  constexpr DimValues(std::initializer_list<int> values) {
    if (values.size() > static_cast<std::size_t>(kMaxDims)) {
      detail::throw_layout_error(Reason("at most ")
                                 << kMaxDims << " dims, got " << static_cast<int>(values.size()));
    }
    for (int x : values) v[rank++] = x;
  }
  template <std::size_t N>
  constexpr DimValues(const std::array<int, N>& values) {
    static_assert(N <= static_cast<std::size_t>(kMaxDims), "at most kMaxDims dims");
    for (int x : values) v[rank++] = x;
  }
  [[nodiscard]] constexpr int operator[](int d) const { return v[d]; }
  [[nodiscard]] constexpr int product() const {
    int p = 1;
    for (int d = 0; d < rank; ++d) p *= v[d];
    return p;
  }
};

namespace detail {

inline constexpr std::array<const char*, kMaxDims> kStandardOutNames = {"dim0", "dim1", "dim2",
                                                                        "dim3"};

constexpr bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/// The layout with output dim j cut to its lowest digits of total size
/// `size` (images keep their low digits: v mod size). Throws LayoutError if
/// no prefix of the digits has that size.
constexpr LinearLayout cut_out_dim(const LinearLayout& l, int j, int size) {
  const DigitSystem& ds = l.out_digits(j);
  int n = 0;
  while (n < ds.num_digits() && ds.stride(n) < size) ++n;
  if (ds.stride(n) != size) {
    throw_layout_error(Reason("blocked: shape ")
                       << size << " along " << l.out_name(j) << " is smaller than the coverage "
                       << ds.size() << " with digits " << ds
                       << " but is not the size of a prefix of them");
  }
  LayoutBuilder b;
  for (int i = 0; i < l.num_in_dims(); ++i) b.add_in_dim(l.in_name(i), l.in_digits(i));
  for (int o = 0; o < l.num_out_dims(); ++o) {
    b.add_out_dim(l.out_name(o), o == j ? ds.prefix(n) : l.out_digits(o));
  }
  for (int i = 0; i < l.num_in_dims(); ++i) {
    for (int k = 0; k < l.in_digits(i).num_digits(); ++k) {
      Image img = l.image(i, k);
      img[j] %= size;
      b.set_image(i, k, img);
    }
  }
  return b.build();
}

constexpr void check_blocked_arg(bool ok, const char* what, const DimValues& v, int d) {
  if (!ok) {
    throw_layout_error(Reason("blocked: ") << what << " (dim " << d << " has " << v[d] << ")");
  }
}

}  // namespace detail

/// The blocked layout of a tile of `shape` (rank 1..kMaxDims): inputs
/// "register", "lane", "warp"; outputs "dim0", "dim1", ... in dimension order.
///
/// Postconditions (x_d as in the file comment):
/// * apply({r, l, w})[d] == x_d for every register r, lane l, warp w;
/// * in_size("lane") == product(threads_per_warp), in_size("warp") ==
///   product(warps_per_cta);
/// * out_size(d) == shape[d], and every element has at least one holder
///   (the layout is surjective);
/// * injective exactly when the shape is at least the coverage in every dim.
/// Throws LayoutError on mismatched ranks, a bad `order`, non-power-of-two
/// thread or warp counts, a warp that is not 32 or 64 threads, or a shape
/// the pattern does not fit (neither a multiple nor a digit prefix of the
/// coverage).
[[nodiscard]] constexpr LinearLayout blocked(const DimValues& shape,
                                             const DimValues& size_per_thread,
                                             const DimValues& threads_per_warp,
                                             const DimValues& warps_per_cta,
                                             const DimValues& order) {
  const int rank = shape.rank;
  if (rank < 1 || size_per_thread.rank != rank || threads_per_warp.rank != rank ||
      warps_per_cta.rank != rank || order.rank != rank) {
    detail::throw_layout_error(
        Reason("blocked: shape, size_per_thread, threads_per_warp, "
               "warps_per_cta and order must have the same rank >= 1"));
  }
  std::array<bool, kMaxDims> seen{};
  for (int i = 0; i < rank; ++i) {
    const int d = order[i];
    if (d < 0 || d >= rank || seen[d]) {
      detail::throw_layout_error(Reason("blocked: order is not a permutation of 0..") << rank - 1);
    }
    seen[d] = true;
  }
  for (int d = 0; d < rank; ++d) {
    detail::check_blocked_arg(shape[d] >= 1, "shape must be positive", shape, d);
    detail::check_blocked_arg(size_per_thread[d] >= 1, "size_per_thread must be positive",
                              size_per_thread, d);
    detail::check_blocked_arg(detail::is_pow2(threads_per_warp[d]),
                              "threads_per_warp must be powers of two", threads_per_warp, d);
    detail::check_blocked_arg(detail::is_pow2(warps_per_cta[d]),
                              "warps_per_cta must be powers of two", warps_per_cta, d);
  }
  const int warp = threads_per_warp.product();
  if (warp != 32 && warp != 64) {
    detail::throw_layout_error(Reason("blocked: a warp has 32 or 64 threads; threads_per_warp "
                                      "multiply to ")
                               << warp);
  }

  // Output dims in standard order first, so the product keeps that order.
  LayoutBuilder outs;
  for (int d = 0; d < rank; ++d) outs.add_out_dim(detail::kStandardOutNames[d], DigitSystem{});
  LinearLayout l = outs.build();

  const std::array<Name, 3> hw = {"register", "lane", "warp"};
  const std::array<const DimValues*, 3> count = {&size_per_thread, &threads_per_warp,
                                                 &warps_per_cta};
  for (int h = 0; h < 3; ++h) {
    for (int i = 0; i < rank; ++i) {
      const int d = order[i];
      l *= LinearLayout::identity1D((*count[h])[d], hw[h], detail::kStandardOutNames[d]);
    }
  }
  // Repeat the pattern where the shape is larger; cut it where smaller.
  for (int i = 0; i < rank; ++i) {
    const int d = order[i];
    const int cover = l.out_size(d);
    if (shape[d] > cover) {
      if (shape[d] % cover != 0) {
        detail::throw_layout_error(Reason("blocked: shape ")
                                   << shape[d] << " along dim" << d
                                   << " is not a multiple of the coverage " << cover
                                   << " (size_per_thread · threads_per_warp · warps_per_cta)");
      }
      l *= LinearLayout::identity1D(shape[d] / cover, "register", detail::kStandardOutNames[d]);
    } else if (shape[d] < cover) {
      l = detail::cut_out_dim(l, d, shape[d]);
    }
  }
  return l;
}

/// A 1-D blocked layout of `size` elements: size_per_thread contiguous
/// elements per lane, warp_size lanes, num_warps warps, repeated or cut to
/// `size` as blocked() does.
[[nodiscard]] constexpr LinearLayout blocked_1d(int size, int num_warps, int warp_size = 32,
                                                int size_per_thread = 1) {
  return blocked({size}, {size_per_thread}, {warp_size}, {num_warps}, {0});
}

}  // namespace tilejit::layout

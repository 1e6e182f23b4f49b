// tilejit/layout/fp_matrix.hpp — small matrices over the prime fields F_2, F_3, F_5, F_7.
//
// Why this exists
// ---------------
// A valid mixed-radix layout (linear_layout.hpp) is a direct sum of one matrix
// per prime p: rows are the output digits of radix p, columns the input digits
// of radix p, entries in F_p = {0, ..., p-1} with arithmetic mod p. Because p
// is prime, F_p is a field: every nonzero entry has an inverse, so Gaussian
// elimination works exactly as over the reals. Every question the layout
// algebra asks — rank, surjectivity, injectivity, inverses, "which input holds
// this element", free variables — is one row reduction of such a matrix.
//
// (A ring like Z/6 is *not* a field: 2·3 ≡ 0, so 2 has no inverse and
// elimination breaks. That is why a radix-6 digit does not exist here: it is a
// radix-2 digit and a radix-3 digit, solved in F_2 and F_3 separately.)
//
// Reduced row-echelon form with lowest-first pivots
// --------------------------------------------------
// row_reduce(pivot_cols) scans the first pivot_cols columns from left to
// right and makes column c a pivot exactly when it is not a combination of
// the columns left of it. Afterwards pivot row r has a 1 in its pivot column,
// zeros in every other pivot column, and the non-pivot ("free") columns are
// written in terms of the pivot columns *to their left*. Two consequences the
// layout algebra relies on:
//
//   * rank = number of pivots (never "number of bits" or sizes);
//   * for a consistent system [A | b], the solution with every free variable
//     set to 0 is the lexicographically smallest solution when columns further
//     right are more significant: each kernel vector has its highest nonzero
//     entry (a 1) in a free column, so a nonzero free value can only make the
//     solution larger. invert_and_compose uses this to pick the minimum
//     offset among broadcast copies.
//
// Everything is constexpr and heap-free; capacities cover every layout whose
// total size fits in an int (at most 30 digits of any one radix).
#pragma once

#include <array>
#include <cstdint>

#include "tilejit/layout/digits.hpp"

namespace tilejit::layout {

/// x⁻¹ mod p for a prime p and x ≢ 0 (mod p). Throws LayoutError for x ≡ 0.
[[nodiscard]] constexpr int inverse_mod(int x, int p) {
  x = ((x % p) + p) % p;
  for (int y = 1; y < p; ++y) {
    if (x * y % p == 1) return y;
  }
  detail::throw_layout_error(Reason("inverse_mod: ") << x << " has no inverse mod " << p);
}

/// A rows × cols matrix over F_p, p in {2, 3, 5, 7}, entries stored reduced
/// into [0, p).
class FpMatrix {
 public:
  static constexpr int kMaxRows = 32;
  static constexpr int kMaxCols = 64;

  constexpr FpMatrix() = default;
  /// The zero matrix. Throws LayoutError if p is not 2, 3, 5 or 7 or a
  /// dimension is outside the capacity.
  constexpr FpMatrix(int p, int rows, int cols) : p_(p), rows_(rows), cols_(cols) {
    if (!detail::is_digit_prime(p)) {
      detail::throw_layout_error(Reason("FpMatrix: ") << p << " is not one of 2, 3, 5, 7");
    }
    if (rows < 0 || rows > kMaxRows || cols < 0 || cols > kMaxCols) {
      detail::throw_layout_error(Reason("FpMatrix: ") << rows << " x " << cols << " exceeds "
                                                      << kMaxRows << " x " << kMaxCols);
    }
  }

  [[nodiscard]] constexpr int p() const { return p_; }
  [[nodiscard]] constexpr int rows() const { return rows_; }
  [[nodiscard]] constexpr int cols() const { return cols_; }

  [[nodiscard]] constexpr int at(int r, int c) const {
    check(r, c);
    return a_[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
  }
  /// Sets entry (r, c) to v mod p (any integer v, negative included).
  constexpr void set(int r, int c, int v) {
    check(r, c);
    a_[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] =
        static_cast<std::uint8_t>(((v % p_) + p_) % p_);
  }

  /// Brings the matrix to reduced row-echelon form, choosing pivots among the
  /// first pivot_cols columns, lowest column first (see the file comment);
  /// row operations act on all columns, so columns past pivot_cols carry
  /// along as right-hand sides. Returns the rank r; pivot_col(0..r-1) are the
  /// pivot columns in increasing order, and rows r.. are zero in the first
  /// pivot_cols columns.
  constexpr int row_reduce(int pivot_cols) {
    if (pivot_cols < 0 || pivot_cols > cols_) {
      detail::throw_layout_error(Reason("FpMatrix::row_reduce: ")
                                 << pivot_cols << " pivot columns of " << cols_);
    }
    rank_ = 0;
    for (int c = 0; c < pivot_cols && rank_ < rows_; ++c) {
      int r = rank_;
      while (r < rows_ && a_[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)] == 0) ++r;
      if (r == rows_) continue;  // column c depends on the pivots left of it: free
      if (r != rank_) {
        const auto tmp = a_[static_cast<std::size_t>(r)];
        a_[static_cast<std::size_t>(r)] = a_[static_cast<std::size_t>(rank_)];
        a_[static_cast<std::size_t>(rank_)] = tmp;
      }
      auto& prow = a_[static_cast<std::size_t>(rank_)];
      const int inv = inverse_mod(prow[static_cast<std::size_t>(c)], p_);
      for (int cc = 0; cc < cols_; ++cc) {
        prow[static_cast<std::size_t>(cc)] =
            static_cast<std::uint8_t>(prow[static_cast<std::size_t>(cc)] * inv % p_);
      }
      for (int rr = 0; rr < rows_; ++rr) {
        auto& row = a_[static_cast<std::size_t>(rr)];
        const int f = row[static_cast<std::size_t>(c)];
        if (rr == rank_ || f == 0) continue;
        for (int cc = 0; cc < cols_; ++cc) {
          row[static_cast<std::size_t>(cc)] = static_cast<std::uint8_t>(
              (row[static_cast<std::size_t>(cc)] + (p_ - f) * prow[static_cast<std::size_t>(cc)]) %
              p_);
        }
      }
      pivot_[static_cast<std::size_t>(rank_++)] = c;
    }
    return rank_;
  }

  /// The pivot column of row r after row_reduce; r < the returned rank.
  [[nodiscard]] constexpr int pivot_col(int r) const {
    if (r < 0 || r >= rank_) {
      detail::throw_layout_error(Reason("FpMatrix::pivot_col: row ")
                                 << r << " is not a pivot row (rank " << rank_ << ")");
    }
    return pivot_[static_cast<std::size_t>(r)];
  }

  /// The rank of the first n columns (a copy is reduced; this is unchanged).
  [[nodiscard]] constexpr int rank_of_first(int n) const {
    FpMatrix m = *this;
    return m.row_reduce(n);
  }

 private:
  constexpr void check(int r, int c) const {
    if (r < 0 || r >= rows_ || c < 0 || c >= cols_) {
      detail::throw_layout_error(Reason("FpMatrix: entry (")
                                 << r << ", " << c << ") outside " << rows_ << " x " << cols_);
    }
  }

  std::array<std::array<std::uint8_t, kMaxCols>, kMaxRows> a_{};
  std::array<int, kMaxRows> pivot_{};
  int p_ = 2;
  int rows_ = 0;
  int cols_ = 0;
  int rank_ = 0;
};

}  // namespace tilejit::layout

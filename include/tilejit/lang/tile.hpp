// tilejit/lang/tile.hpp — tile values: the C++ types a kernel is written in.
//
// A `Tile<T, D...>` is a handle to one value of the kernel being traced: its
// C++ type carries the element type T and the static shape D... (rank 0..2),
// and operating on it records a node in the kernel's IR (tracing, DESIGN §1).
// Shapes and dtypes are checked at compile time: a mismatch instantiates
// `shapes_must_match<Shape<...>, Shape<...>>` or `dtypes_must_match<A, B>`
// (for dot: `dot_inner_dims_must_match`, `dot_accumulator_shape_must_be`),
// whose names in the compiler's message show both sides.
//
//   Tile<float, 16, 96>   a 16x96 tile of f32
//   Tile<std::int32_t>    a scalar (rank 0), e.g. program_id(0)
//   Ptr<float>            a scalar pointer (a kernel argument)
//   Tile<ptr<float>, 96>  a tile of pointers (ptr + arange<96>())
#pragma once
#include <array>
#include <cstdint>
#include <type_traits>

#include "tilejit/core/dtype.hpp"
#include "tilejit/core/error.hpp"
#include "tilejit/ir/ir.hpp"

namespace tilejit {

/// Element tag of pointer tiles: a `Tile<ptr<T>, D...>` holds addresses of T.
template <class T>
struct ptr {
  using pointee = T;
};

template <int... D>
struct Shape {
  static constexpr int rank = sizeof...(D);
  static constexpr std::array<int, sizeof...(D)> dims{D...};
};

namespace lang {

/// Sizes a tile dimension may have: 2^a·3^b·5^c·7^d (DESIGN §3).
constexpr bool is_smooth(int n) {
  if (n <= 0) return false;
  for (int p : {2, 3, 5, 7})
    while (n % p == 0) n /= p;
  return n == 1;
}

template <class T> struct is_ptr_elem : std::false_type {};
template <class T> struct is_ptr_elem<ptr<T>> : std::true_type {};
template <class T> inline constexpr bool is_ptr_v = is_ptr_elem<T>::value;

template <class T> struct elem_dtype { static constexpr DType value = dtype_v<T>; };
template <class T> struct elem_dtype<ptr<T>> { static constexpr DType value = dtype_v<T>; };

/// The IR type of a C++ tile type.
template <class T, int... D>
ir::Type type_of() {
  ir::Type t;
  t.dtype = elem_dtype<T>::value;
  t.is_ptr = is_ptr_v<T>;
  t.rank = sizeof...(D);
  int i = 0;
  ((t.shape[static_cast<std::size_t>(i++)] = D), ...);
  return t;
}

/// The kernel being traced on this thread (tracing is re-entrant per thread).
ir::Kernel*& current_kernel();

/// Record `n` in the kernel being traced; throws tilejit::Error if none is.
int record(ir::Node n);

/// RAII: makes `k` the kernel being traced on this thread (the previous one again when it ends, also by an
/// exception).
class TraceScope {
 public:
  explicit TraceScope(ir::Kernel& k) : prev_(current_kernel()) { current_kernel() = &k; }
  ~TraceScope() { current_kernel() = prev_; }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  ir::Kernel* prev_;
};

// ---- compile-time diagnostics ------------------------------------------
// Instantiating these with a false condition fails with both sides in the
// template arguments, which the compiler prints.
template <class A, class B, bool Ok>
struct shapes_must_match {
  static_assert(Ok, "tile shapes do not match (see the two Shape<...> arguments of shapes_must_match)");
  static constexpr bool value = Ok;
};
/// dot(a, b, acc): A = Shape<M, K> of a, B = Shape<K', N> of b; K must equal K'.
template <class A, class B, bool Ok>
struct dot_inner_dims_must_match {
  static_assert(Ok, "dot(a, b): a's dim 1 (K) must equal b's dim 0 (see the Shape<M, K> and Shape<K, N> arguments of "
                    "dot_inner_dims_must_match)");
  static constexpr bool value = Ok;
};
/// dot(a, b, acc): Acc = the accumulator's shape, Want = Shape<M, N> of a·b.
template <class Acc, class Want, bool Ok>
struct dot_accumulator_shape_must_be {
  static_assert(Ok, "dot(a, b, acc): acc must be [M, N] for a [M, K] and b [K, N] (see the two Shape<...> arguments of "
                    "dot_accumulator_shape_must_be: acc's, then a·b's)");
  static constexpr bool value = Ok;
};
/// reshape<D...>(x): From = x's shape, To = Shape<D...>; their element counts must be equal.
template <class From, class To, bool Ok>
struct reshape_element_counts_must_match {
  static_assert(Ok, "reshape<D...>(x): the new shape must hold as many elements as x (see the two Shape<...> arguments of "
                    "reshape_element_counts_must_match: x's, then the new one)");
  static constexpr bool value = Ok;
};
template <class A, class B, bool Ok>
struct dtypes_must_match {
  static_assert(Ok, "tile element types differ: cast one side with tj::cast<T>() (see the two types of dtypes_must_match)");
  static constexpr bool value = Ok;
};

}  // namespace lang

template <class T, int... D>
class Tile {
  static_assert(sizeof...(D) <= ir::kMaxRank, "tiles have rank 0, 1 or 2");
  static_assert(((lang::is_smooth(D)) && ...),
                "tile dimensions must be 2^a*3^b*5^c*7^d (mixed-radix layouts, DESIGN §3)");

 public:
  using element = T;
  using shape = Shape<D...>;
  static constexpr int rank = sizeof...(D);

  explicit Tile(int id) : id_(id) {}
  int id() const { return id_; }

 private:
  int id_;
};

/// A scalar of element type T (rank 0).
template <class T> using Scalar = Tile<T>;
/// A scalar pointer to T: the kernel-argument type for buffers.
template <class T> using Ptr = Tile<ptr<T>>;
/// A 32-bit integer scalar (kernel argument, program id ...).
using Int = Tile<std::int32_t>;
using Int64 = Tile<std::int64_t>;

/// A kernel argument that is a size: like Int, and checked >= 0 at launch
/// (a negative value throws InvalidArgument naming the parameter).
class Size : public Tile<std::int32_t> {
 public:
  using Tile<std::int32_t>::Tile;
};

namespace lang {
template <class X> struct tile_traits;
template <class T, int... D>
struct tile_traits<Tile<T, D...>> {
  using element = T;
  using shape = Shape<D...>;
};
template <> struct tile_traits<Size> : tile_traits<Tile<std::int32_t>> {};
template <class X> inline constexpr bool is_tile_v = requires { typename tile_traits<std::remove_cvref_t<X>>::shape; };
}  // namespace lang

}  // namespace tilejit

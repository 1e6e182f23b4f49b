// tilejit/lang/ops.hpp — the tile operations of the DSL (Triton's `tl.*`).
//
// Every function here records one or more IR nodes in the kernel being
// traced and returns a handle whose C++ type carries the result's dtype and
// shape. Broadcasting follows NumPy for equal ranks (a dimension of 1
// stretches) and lets a rank-0 scalar meet any tile; other mixes are compile
// errors. C++ arithmetic literals take the element type of the tile they meet
// (Triton's "weak" scalars).
#pragma once
#include <array>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "tilejit/lang/tile.hpp"

namespace tilejit {
namespace lang {

// ---- shapes -------------------------------------------------------------
template <class SA, class SB>
struct broadcast_shape {
  static constexpr bool ok = false;
  using type = Shape<>;
};
template <>
struct broadcast_shape<Shape<>, Shape<>> {
  static constexpr bool ok = true;
  using type = Shape<>;
};
template <int... B>
  requires(sizeof...(B) > 0)
struct broadcast_shape<Shape<>, Shape<B...>> {
  static constexpr bool ok = true;
  using type = Shape<B...>;
};
template <int... A>
  requires(sizeof...(A) > 0)
struct broadcast_shape<Shape<A...>, Shape<>> {
  static constexpr bool ok = true;
  using type = Shape<A...>;
};
constexpr bool dims_compatible(int a, int b) { return a == b || a == 1 || b == 1; }
constexpr int dims_result(int a, int b) { return a == 1 ? b : a; }
template <int A0, int B0>
struct broadcast_shape<Shape<A0>, Shape<B0>> {
  static constexpr bool ok = dims_compatible(A0, B0);
  using type = Shape<dims_result(A0, B0)>;
};
template <int A0, int A1, int B0, int B1>
struct broadcast_shape<Shape<A0, A1>, Shape<B0, B1>> {
  static constexpr bool ok = dims_compatible(A0, B0) && dims_compatible(A1, B1);
  using type = Shape<dims_result(A0, B0), dims_result(A1, B1)>;
};

template <class T, class S> struct make_tile;
template <class T, int... D> struct make_tile<T, Shape<D...>> { using type = Tile<T, D...>; };
template <class T, class S> using make_tile_t = typename make_tile<T, S>::type;

template <class X> using elem_t = typename tile_traits<std::remove_cvref_t<X>>::element;
template <class X> using shape_t = typename tile_traits<std::remove_cvref_t<X>>::shape;

template <class T, class S>
ir::Type ir_type() {
  return []<int... D>(Shape<D...>) { return type_of<T, D...>(); }(S{});
}

/// Broadcast value `id` to `target` (same dtype) if its shape differs.
int broadcast_id(int id, const ir::Type& target);

/// A scalar constant of element type T.
template <class T>
Tile<T> scalar_constant(double v) {
  ir::Node n;
  n.op = ir::Op::constant;
  n.type = type_of<T>();
  if (is_float(n.type.dtype))  // every floating type, f8 included, keeps its value in f (backends read f)
    n.f = v;
  else
    n.i = static_cast<std::int64_t>(v);
  return Tile<T>(record(n));
}

template <class X> concept TileArg = is_tile_v<X>;
template <class X> concept Literal = std::is_arithmetic_v<std::remove_cvref_t<X>>;

/// A C++ literal `x` as a scalar of the tile element type T it meets, exactly: an integer literal keeps every
/// bit (it does not pass through a double: INT64_MAX stays INT64_MAX). For an integer T, throws InvalidArgument
/// (while tracing) for a literal T cannot hold — `i8_tile < 200`, `i32_tile + 3.7` — naming it and T's type,
/// rather than wrapping or truncating it silently; for bool, anything but 0 / 1. Floating T takes the value
/// rounded to T (past T's range: ±inf, as the conversion does).
template <class T, class X>
Tile<T> literal_constant(const X& x) {
  using L = std::remove_cvref_t<X>;
  ir::Node n;
  n.op = ir::Op::constant;
  n.type = type_of<T>();
  if constexpr (!std::is_integral_v<T> || std::is_same_v<T, bool>) {  // floating types (f16, bf16, f8 too), bool
    if (is_float(n.type.dtype)) {
      n.f = static_cast<double>(x);
    } else {  // bool: 0 / 1 (false / true) only; 300 or 0.5 is a mistake, not true
      if (!(x == L{} || x == L{1}))
        throw InvalidArgument(fmt::format("the literal {} is not a value of the i1 (bool) tile it meets: use 0 / 1 or a "
                                          "comparison", static_cast<double>(x)));
      n.i = x != L{} ? 1 : 0;
    }
  } else if constexpr (std::is_integral_v<L>) {
    using W = std::conditional_t<std::is_signed_v<L>, long long, unsigned long long>;  // bool, char: in_range's types
    if (!std::in_range<T>(static_cast<W>(x)))
      throw InvalidArgument(fmt::format("the literal {} does not fit the {} tile it meets: cast the tile (tj::cast) or the "
                                        "literal", static_cast<W>(x), name(n.type.dtype)));
    n.i = static_cast<std::int64_t>(static_cast<T>(x));  // u64: its bit pattern
  } else {
    const auto d = static_cast<long double>(x);
    if (!(d == std::trunc(d)) || d < static_cast<long double>(std::numeric_limits<T>::min()) ||
        d > static_cast<long double>(std::numeric_limits<T>::max()))
      throw InvalidArgument(fmt::format("the literal {} is not a value of the {} tile it meets (an integer in its range): "
                                        "cast the tile (tj::cast) or the literal", static_cast<double>(x), name(n.type.dtype)));
    n.i = static_cast<std::int64_t>(static_cast<T>(d));
  }
  return Tile<T>(record(n));
}

template <class X>
auto tile_of(const X& x) {
  if constexpr (std::is_same_v<std::remove_cvref_t<X>, Size>)
    return static_cast<const Tile<std::int32_t>&>(x);
  else
    return x;
}

/// Turn an operand into a tile: tiles pass through; literals become a scalar
/// of the element type of `Other` (int32 when Other is a pointer tile).
template <class Other, class X>
auto as_tile(const X& x) {
  if constexpr (TileArg<X>) {
    return tile_of(x);
  } else {
    using OE = elem_t<Other>;
    if constexpr (is_ptr_v<OE>) {
      using L = std::remove_cvref_t<X>;
      if constexpr (std::is_integral_v<L>) {
        using W = std::conditional_t<std::is_signed_v<L>, long long, unsigned long long>;
        if (!std::in_range<std::int32_t>(static_cast<W>(x)))
          throw InvalidArgument(fmt::format("the literal {} added to a pointer tile does not fit an i32 offset: pass "
                                            "tj::scalar<std::int64_t>({}) for a 64-bit one", static_cast<W>(x), static_cast<W>(x)));
      }
      return literal_constant<std::int32_t>(x);
    }
    else
      return literal_constant<OE>(x);
  }
}

template <class A, class B>
concept Operands = (TileArg<A> && TileArg<B>) || (TileArg<A> && Literal<B>) || (Literal<A> && TileArg<B>);

template <class T> inline constexpr bool is_float_elem_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
template <class T> inline constexpr bool is_int_elem_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// Record an elementwise binary node, broadcasting both operands (`flag`: the node's `i`, see ir::Op::mul).
template <ir::Op OP, class A, class B>
auto binary(const A& a0, const B& b0, std::int64_t flag = 0) {
  auto a = tile_of(a0);
  auto b = tile_of(b0);
  using EA = elem_t<decltype(a)>;
  using EB = elem_t<decltype(b)>;
  using SA = shape_t<decltype(a)>;
  using SB = shape_t<decltype(b)>;
  using BS = broadcast_shape<SA, SB>;
  static_assert(shapes_must_match<SA, SB, BS::ok>::value);
  constexpr bool ptr_arith = is_ptr_v<EA> && (OP == ir::Op::add) && is_int_elem_v<EB>;
  static_assert(dtypes_must_match<EA, EB, ptr_arith || std::is_same_v<EA, EB>>::value);
  static_assert(ptr_arith || !is_ptr_v<EA>, "pointer tiles support only `ptr + integer offsets`");
  constexpr bool cmp = OP >= ir::Op::lt && OP <= ir::Op::ne;
  using RE = std::conditional_t<cmp, bool, EA>;
  using R = make_tile_t<RE, typename BS::type>;
  ir::Node n;
  n.op = ptr_arith ? ir::Op::addptr : OP;
  n.i = flag;
  n.type = ir_type<RE, typename BS::type>();
  n.args[0] = broadcast_id(a.id(), ir_type<EA, typename BS::type>());
  n.args[1] = broadcast_id(b.id(), ir_type<EB, typename BS::type>());
  return R(record(n));
}

template <ir::Op OP, class A, class B>
auto binary_any(const A& a, const B& b) {
  if constexpr (Literal<A>)
    return binary<OP>(as_tile<B>(a), b);
  else if constexpr (Literal<B>)
    return binary<OP>(a, as_tile<A>(b));
  else
    return binary<OP>(a, b);
}

/// A C++ number used where the IR wants an i32 scalar (a for_range bound or step, a descriptor coordinate), as a
/// constant. Throws InvalidArgument, naming the literal and `what`, unless it is a whole number in [-2^31, 2^31):
/// 3000000000LL or 2.5 would otherwise be narrowed silently (a loop of 0 iterations, a step of 2).
template <class X>
Int i32_literal(const X& x, const char* what) {
  static_assert(std::is_arithmetic_v<X> && !std::is_same_v<X, bool>, "an i32 literal is a number");
  if constexpr (std::is_floating_point_v<X>) {
    if (!std::isfinite(x) || x != std::trunc(x))
      throw InvalidArgument(fmt::format("{}: the literal {} is not a whole number (an i32 is wanted)", what, x));
    if (x < -2147483648.0 || x > 2147483647.0)
      throw InvalidArgument(fmt::format("{}: the literal {} does not fit an i32 ([-2^31, 2^31 - 1])", what, x));
    return scalar_constant<std::int32_t>(static_cast<double>(x));
  } else {
    if (!std::in_range<std::int32_t>(x))
      throw InvalidArgument(fmt::format("{}: the literal {} does not fit an i32 ([-2^31, 2^31 - 1])", what, x));
    return scalar_constant<std::int32_t>(static_cast<std::int32_t>(x));
  }
}

/// OP of x, elementwise; `flag` is the node's integer attribute (exp2_split's k), 0 for the plain op.
template <ir::Op OP, class X>
auto unary(const X& x0, std::int64_t flag = 0) {
  auto x = tile_of(x0);
  ir::Node n;
  n.op = OP;
  n.type = ir_type<elem_t<decltype(x)>, shape_t<decltype(x)>>();
  n.args[0] = x.id();
  n.i = flag;
  return decltype(x)(record(n));
}

template <ir::Op OP, int Axis, class X>
auto reduce(const X& x0, int fn = -1);

}  // namespace lang

// ---- arithmetic and comparison operators ----------------------------------
template <class A, class B> requires lang::Operands<A, B>
auto operator+(const A& a, const B& b) { return lang::binary_any<ir::Op::add>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator-(const A& a, const B& b) { return lang::binary_any<ir::Op::sub>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator*(const A& a, const B& b) { return lang::binary_any<ir::Op::mul>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator/(const A& a, const B& b) { return lang::binary_any<ir::Op::div>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator%(const A& a, const B& b) { return lang::binary_any<ir::Op::rem>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator&(const A& a, const B& b) { return lang::binary_any<ir::Op::bit_and>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator|(const A& a, const B& b) { return lang::binary_any<ir::Op::bit_or>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator^(const A& a, const B& b) { return lang::binary_any<ir::Op::bit_xor>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator<(const A& a, const B& b) { return lang::binary_any<ir::Op::lt>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator<=(const A& a, const B& b) { return lang::binary_any<ir::Op::le>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator>(const A& a, const B& b) { return lang::binary_any<ir::Op::gt>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator>=(const A& a, const B& b) { return lang::binary_any<ir::Op::ge>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator==(const A& a, const B& b) { return lang::binary_any<ir::Op::eq>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto operator!=(const A& a, const B& b) { return lang::binary_any<ir::Op::ne>(a, b); }
template <lang::TileArg X>
auto operator-(const X& x) { return lang::unary<ir::Op::neg>(x); }
template <lang::TileArg X>
auto operator!(const X& x) {
  static_assert(std::is_same_v<lang::elem_t<X>, bool>, "operator! needs a bool (mask) tile");
  return lang::unary<ir::Op::logical_not>(x);
}

// ---- creation -------------------------------------------------------------
/// The index of this program (CTA) along grid axis 0, 1 or 2.
/// Throws InvalidArgument for another axis.
Int program_id(int axis);
/// The number of programs along grid axis 0, 1 or 2. Throws InvalidArgument for another axis.
Int num_programs(int axis);

/// The tile [0, 1, ..., N-1] of int32. N must be 2^a·3^b·5^c·7^d: 96 is exact,
/// no padding to 128 (a 100-wide tile is allowed too: 2^2·5^2).
template <int N>
Tile<std::int32_t, N> arange() {
  static_assert(N > 0 && lang::is_smooth(N),
                "arange<N>: N must be 2^a*3^b*5^c*7^d (e.g. 96 = 2^5*3); other sizes have no mixed-radix layout");
  ir::Node n;
  n.op = ir::Op::arange;
  n.type = lang::type_of<std::int32_t, N>();
  return Tile<std::int32_t, N>(lang::record(n));
}

/// A tile of shape D... with every element `value`, a C++ number taken exactly as literals are
/// (lang::literal_constant): an integer keeps every bit; for an integer T, a value T cannot hold (300 for i8,
/// 2.5 for i32) throws InvalidArgument while tracing.
template <class T, int... D, class X>
  requires std::is_arithmetic_v<X>
Tile<T, D...> full(X value) {
  auto s = lang::literal_constant<T>(value);
  return Tile<T, D...>(lang::broadcast_id(s.id(), lang::type_of<T, D...>()));
}
template <class T, int... D>
Tile<T, D...> zeros() { return full<T, D...>(0); }

/// A scalar constant of element type T (for explicit typing of literals); `value` is taken exactly, as by full.
template <class T, class X>
  requires std::is_arithmetic_v<X>
Tile<T> scalar(X value) { return lang::literal_constant<T>(value); }

// ---- elementwise math -----------------------------------------------------
// exp, exp2, log, sqrt, rsqrt of an f16, bf16, f32 or f64 tile (f8 tiles: cast to f32 first), elementwise. f16 /
// bf16 are computed in f32 and rounded back; f32 on CUDA: exp is __expf (the fast hardware approximation: ex2.approx
// of x·log2 e), exp2 is
// ex2.approx.ftz (2 ulp, results below 2^-126 flushed to zero), log is logf, sqrt is sqrtf (correctly rounded),
// rsqrt is rsqrtf (approximate); on HIP the matching clang builtins. f64 uses the double-precision functions
// (on HIP only sqrt and rsqrt: f64 exp, exp2 and log throw Unsupported there, as they need the ROCm device
// libraries). NaN propagates. The interpreter computes in double and rounds to the tile's type.
#define TILEJIT_FLOAT_UNARY(fn, opcode)                                                   \
  template <lang::TileArg X>                                                              \
  auto fn(const X& x) {                                                                   \
    static_assert(lang::is_float_elem_v<lang::elem_t<X>>, #fn " needs an f16, bf16, f32 or f64 tile (cast f8 to f32)"); \
    return lang::unary<ir::Op::opcode>(x);                                                \
  }
TILEJIT_FLOAT_UNARY(exp, exp)
TILEJIT_FLOAT_UNARY(exp2, exp2)
TILEJIT_FLOAT_UNARY(log, log)
TILEJIT_FLOAT_UNARY(sqrt, sqrt)
TILEJIT_FLOAT_UNARY(rsqrt, rsqrt)
// log2, sin, cos, tanh, erf, floor, ceil and sigmoid (1 / (1 + e^-x), through `exp`) of a floating-point tile,
// elementwise, of the same element types, f16 / bf16 computed in f32. CUDA: the CUDA math library's log2f, sinf, cosf (full range
// reduction), tanhf, erff (a few ulp). HIP: clang's builtins (AMD's native sin / cos / log2 instructions) and
// tilejit's own f32 tanh and erf (series near 0, closed forms elsewhere; measured on the CPU over [-8, 8]: within
// 7.5e-8 and 2.1e-7 of the true values); of f64 only floor and ceil (the others need the ROCm device libraries:
// Unsupported). The interpreter computes in double.
TILEJIT_FLOAT_UNARY(log2, log2)
TILEJIT_FLOAT_UNARY(sin, sin)
TILEJIT_FLOAT_UNARY(cos, cos)
TILEJIT_FLOAT_UNARY(tanh, tanh)
TILEJIT_FLOAT_UNARY(erf, erf)
TILEJIT_FLOAT_UNARY(floor, floor)
TILEJIT_FLOAT_UNARY(ceil, ceil)
TILEJIT_FLOAT_UNARY(sigmoid, sigmoid)
#undef TILEJIT_FLOAT_UNARY

/// 2^x of an f32 tile with the work split between two pipes: in each thread, the registers r with
/// r % every == every − 1 compute 2^x on the FMA pipe and the others with exp2's MUFU.EX2 (FlashAttention-4's
/// software exponential, Dao et al. 2025). The FMA form: x = j + f with j = round(x) and |f| ≤ ½ (Cody–Waite),
/// a degree-3 minimax polynomial for 2^f (relative error ≤ 7.5e-5 — bf16's half ulp is 2e-3), and 2^j built in
/// the exponent bits; x ≤ −127 gives 0 and NaN gives NaN as exp2 does, x ≥ 127.5 gives +inf. It is not exact at
/// integers (2^0 = 0.99993).
///
/// The SFU returns 16 results per clock per SM on Hopper; the FMA form costs about 11 of the 4 issue slots an SM
/// has per clock. Measured on the H200 with nothing but exp2 in flight (bench/rowwise_bench BM_Exp2Split,
/// docs/perf.md v0.34), results per clock per SM: every = 0 15.8, 8 17.9, 4 20.5, 3 20.7, 2 19.3, 1 11.5. Worth it
/// only where a kernel waits on the SFU's throughput: the attention forward, which waits on its softmax's chain
/// instead, lost 4–12% with every = 4 and keeps exp2. every = 0 is exp2; every = 1 puts every register on the FMA
/// pipe.
///
/// Which register holds which element is the tile's layout's business, so the split is even over the tile only in
/// count, and equal inputs at two positions may take different forms and differ in the last bits. A tile with fewer
/// registers per thread than `every`, and a rank-0 value (in a combine of tj::reduce / associative_scan too), stays
/// on the SFU unless every = 1. HIP gets the same split (AMD's v_exp_f32 is a quarter-rate transcendental too; not
/// measured: no AMD GPU here); the interpreter computes 2^x in double, as for exp2. Throws InvalidArgument while
/// tracing for every < 0.
template <lang::TileArg X>
auto exp2_split(const X& x0, int every) {
  static_assert(std::is_same_v<lang::elem_t<X>, float>, "exp2_split needs an f32 tile");
  if (every < 0) throw InvalidArgument(fmt::format("exp2_split: every = {} is negative (0: exp2 on the SFU only; k > 0: one register in k on the FMA pipe)", every));
  return lang::unary<ir::Op::exp2>(x0, every);
}

/// |x| elementwise, for any numeric tile (for signed integers, |INT_MIN| wraps to INT_MIN as in C).
template <lang::TileArg X>
auto abs(const X& x) { return lang::unary<ir::Op::abs>(x); }

/// Elementwise maximum / minimum (Triton's tl.maximum / tl.minimum).
template <class A, class B> requires lang::Operands<A, B>
auto maximum(const A& a, const B& b) { return lang::binary_any<ir::Op::maximum>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto minimum(const A& a, const B& b) { return lang::binary_any<ir::Op::minimum>(a, b); }
template <class A, class B> requires lang::Operands<A, B>
auto max(const A& a, const B& b) { return maximum(a, b); }

/// x · factor, factor broadcast to x's shape — e.g. an accumulator [M, N] times expand_dims<1>(alpha) [M, 1] —
/// with the same result as `x * factor`, where each thread skips its multiplies when every factor value it holds
/// is exactly 1 (x · 1 = x). Meant for the online softmax's correction alpha = exp2(m_old − m_new), which is 1
/// whenever a row's running max did not move: then the accumulator's registers are not touched. (FlashAttention-4
/// raises the running max only when it grows past a threshold so that this is the common case.) x and factor
/// are f32 tiles of the same dtype; elsewhere (other dtypes, the interpreter) it is a plain multiply.
template <class X, class F>
  requires lang::TileArg<X> && lang::TileArg<F>
auto rescale(const X& x, const F& factor) {
  static_assert(std::is_same_v<lang::elem_t<X>, float> && std::is_same_v<lang::elem_t<F>, float>,
                "rescale(x, factor): f32 tiles");
  return lang::binary<ir::Op::mul>(x, factor, 1);
}
template <class A, class B> requires lang::Operands<A, B>
auto min(const A& a, const B& b) { return minimum(a, b); }

/// cond ? a : b elementwise; all three broadcast together.
template <class C, class A, class B>
  requires lang::TileArg<C> && (lang::TileArg<A> || lang::TileArg<B>)
auto where(const C& cond, const A& a0, const B& b0) {
  static_assert(std::is_same_v<lang::elem_t<C>, bool>, "where(cond, a, b): cond must be a bool (mask) tile");
  auto a = [&] { if constexpr (lang::Literal<A>) return lang::as_tile<B>(a0); else return lang::tile_of(a0); }();
  auto b = [&] { if constexpr (lang::Literal<B>) return lang::as_tile<A>(b0); else return lang::tile_of(b0); }();
  using EA = lang::elem_t<decltype(a)>;
  using EB = lang::elem_t<decltype(b)>;
  static_assert(lang::dtypes_must_match<EA, EB, std::is_same_v<EA, EB>>::value);
  using S1 = lang::broadcast_shape<lang::shape_t<decltype(a)>, lang::shape_t<decltype(b)>>;
  static_assert(lang::shapes_must_match<lang::shape_t<decltype(a)>, lang::shape_t<decltype(b)>, S1::ok>::value);
  using S2 = lang::broadcast_shape<lang::shape_t<C>, typename S1::type>;
  static_assert(lang::shapes_must_match<lang::shape_t<C>, typename S1::type, S2::ok>::value);
  using S = typename S2::type;
  ir::Node n;
  n.op = ir::Op::where;
  n.type = lang::ir_type<EA, S>();
  n.args[0] = lang::broadcast_id(cond.id(), lang::ir_type<bool, S>());
  n.args[1] = lang::broadcast_id(a.id(), n.type);
  n.args[2] = lang::broadcast_id(b.id(), n.type);
  return lang::make_tile_t<EA, S>(lang::record(n));
}

/// Convert the element type (round to nearest even, once, for casts to a float
/// type that cannot hold every value: f64 or a 64-bit integer to f32, and f64
/// or an integer wider than 24 bits to f16 / bf16 / f8 through round-to-odd;
/// truncation toward zero for float -> int; f8 saturates to its largest finite value).
template <class U, lang::TileArg X>
auto cast(const X& x0) {
  auto x = lang::tile_of(x0);
  if constexpr (std::is_same_v<U, lang::elem_t<decltype(x)>>) {
    return x;  // already of type U: no node
  } else {
  ir::Node n;
  n.op = ir::Op::cast;
  n.type = lang::ir_type<U, lang::shape_t<decltype(x)>>();
  n.args[0] = x.id();
  return lang::make_tile_t<U, lang::shape_t<decltype(x)>>(lang::record(n));
  }
}

// ---- shape manipulation ---------------------------------------------------
namespace lang {
template <int Axis, class S> struct insert_unit;
template <> struct insert_unit<0, Shape<>> { using type = Shape<1>; };
template <int N> struct insert_unit<0, Shape<N>> { using type = Shape<1, N>; };
template <int N> struct insert_unit<1, Shape<N>> { using type = Shape<N, 1>; };
template <int Axis, class S> struct remove_axis;
template <int N> struct remove_axis<0, Shape<N>> { using type = Shape<>; };
template <int A, int B> struct remove_axis<0, Shape<A, B>> { using type = Shape<B>; };
template <int A, int B> struct remove_axis<1, Shape<A, B>> { using type = Shape<A>; };
}  // namespace lang

/// Insert a dimension of size 1 at `Axis` ([N] -> [1,N] for 0, [N,1] for 1).
template <int Axis, lang::TileArg X>
auto expand_dims(const X& x0) {
  auto x = lang::tile_of(x0);
  using S = lang::shape_t<decltype(x)>;
  static_assert(S::rank < 2 && Axis >= 0 && Axis <= S::rank, "expand_dims<Axis>: Axis must be in [0, rank] and rank < 2");
  using RS = typename lang::insert_unit<Axis, S>::type;
  using E = lang::elem_t<decltype(x)>;
  ir::Node n;
  n.op = ir::Op::expand_dims;
  n.type = lang::ir_type<E, RS>();
  n.args[0] = x.id();
  n.axis = Axis;
  return lang::make_tile_t<E, RS>(lang::record(n));
}

/// Stretch dimensions of size 1 (or a scalar) to the shape D....
template <int... D, lang::TileArg X>
auto broadcast_to(const X& x0) {
  auto x = lang::tile_of(x0);
  using S = lang::shape_t<decltype(x)>;
  using BS = lang::broadcast_shape<S, Shape<D...>>;
  static_assert(lang::shapes_must_match<S, Shape<D...>, BS::ok && std::is_same_v<typename BS::type, Shape<D...>>>::value);
  using E = lang::elem_t<decltype(x)>;
  return Tile<E, D...>(lang::broadcast_id(x.id(), lang::type_of<E, D...>()));
}

// ---- reductions -----------------------------------------------------------
template <ir::Op OP, int Axis, class X>
auto lang::reduce(const X& x0, int fn) {
  auto x = tile_of(x0);
  using S = shape_t<decltype(x)>;
  static_assert(S::rank >= 1 && Axis >= 0 && Axis < S::rank, "reduction axis out of range for this tile's rank");
  using RS = typename remove_axis<Axis, S>::type;
  using E = elem_t<decltype(x)>;
  static_assert(!is_ptr_v<E> && !std::is_same_v<E, bool>, "reductions need numeric tiles");
  ir::Node n;
  n.op = OP;
  n.type = ir_type<E, RS>();
  n.args[0] = x.id();
  n.axis = Axis;
  n.fn = fn;
  return make_tile_t<E, RS>(record(n));
}

/// Sum along `Axis` (the axis disappears: [M,N] -> [M] for Axis = 1).
template <int Axis, lang::TileArg X> auto sum(const X& x) { return lang::reduce<ir::Op::reduce_sum, Axis>(x); }
/// Maximum along `Axis`. NaN propagates; whether the maximum of -0 and +0 is -0 or +0 is unspecified (as fmax),
/// and can differ between the interpreter and a GPU (also for `minimum`, `min`, `cummax`, `cummin`).
template <int Axis, lang::TileArg X> auto max(const X& x) { return lang::reduce<ir::Op::reduce_max, Axis>(x); }
/// Minimum along `Axis`.
template <int Axis, lang::TileArg X> auto min(const X& x) { return lang::reduce<ir::Op::reduce_min, Axis>(x); }

namespace lang {
/// The first index along Axis where `hit` is true (the extent where none is): a minimum of indices.
template <int Axis, class H>
auto first_index(const H& hit) {
  using S = shape_t<H>;
  constexpr int L = S::dims[Axis];
  auto idx = [] {
    if constexpr (S::rank == 1) return tilejit::arange<L>();
    else if constexpr (Axis == 0) return tilejit::expand_dims<1>(tilejit::arange<L>());
    else return tilejit::expand_dims<0>(tilejit::arange<L>());
  }();
  return tilejit::min<Axis>(tilejit::where(hit, idx, L));
}
/// x's extremum along Axis (max or min), broadcast back over Axis.
template <bool Max, int Axis, class X>
auto extremum_kept(const X& x) {
  auto m = [&] {
    if constexpr (Max) return tilejit::max<Axis>(x);
    else return tilejit::min<Axis>(x);
  }();
  if constexpr (shape_t<X>::rank == 1) return m;
  else return tilejit::expand_dims<Axis>(m);
}
template <bool Max, int Axis, class X>
auto arg_extremum(const X& x0) {
  auto x = tile_of(x0);
  using S = shape_t<decltype(x)>;
  static_assert(S::rank >= 1 && Axis >= 0 && Axis < S::rank, "argmax / argmin: axis out of range for this tile's rank");
  auto hit = x == extremum_kept<Max, Axis>(x);
  if constexpr (is_float_elem_v<elem_t<decltype(x)>>) return first_index<Axis>(hit | (x != x));  // NaN: the extremum
  else return first_index<Axis>(hit);
}
}  // namespace lang

/// Index (i32) of the maximum along `Axis`, the axis removed ([M,N] -> [M] for Axis = 1), Triton's tl.argmax: the
/// first index among equal maxima; a NaN counts as the maximum (its first index), as torch.argmax. Composed from
/// max, a compare and a min of indices (two reductions).
template <int Axis, lang::TileArg X> auto argmax(const X& x) { return lang::arg_extremum<true, Axis>(x); }
/// Index (i32) of the minimum along `Axis`; as `argmax` (a NaN counts as the minimum).
template <int Axis, lang::TileArg X> auto argmin(const X& x) { return lang::arg_extremum<false, Axis>(x); }

// ---- scans ----------------------------------------------------------------
namespace lang {
template <ir::Op OP, int Axis, bool Reverse, class X>
auto scan(const X& x0, int fn = -1) {
  auto x = tile_of(x0);
  using S = shape_t<decltype(x)>;
  static_assert(S::rank >= 1 && Axis >= 0 && Axis < S::rank, "scan axis out of range for this tile's rank");
  using E = elem_t<decltype(x)>;
  static_assert(!is_ptr_v<E> && !std::is_same_v<E, bool>, "scans need numeric tiles");
  ir::Node n;
  n.op = OP;
  n.type = ir_type<E, S>();
  n.args[0] = x.id();
  n.axis = Axis;
  n.i = Reverse ? 1 : 0;
  n.fn = fn;
  return make_tile_t<E, S>(record(n));
}
}  // namespace lang

/// Inclusive prefix sum along `Axis`, Triton's tl.cumsum: same shape and element type, element j is
/// x[0] + ... + x[j] (Reverse: x[j] + ... + x[n-1]). Integers wrap; f16 / bf16 accumulate in f32 and each result
/// is rounded once. Lowered per layout, whatever digits the axis has (registers, lanes, warps of radix 2, 3, 5, 7):
/// each digit, least significant first, adds the totals of the blocks before it — in registers, by a lane
/// butterfly (shfl.xor), or through shared memory across warps (the mixed-radix form of a Kogge-Stone scan).
/// The order of f32 additions therefore differs from a sequential sum (as Triton's does).
template <int Axis, bool Reverse = false, lang::TileArg X> auto cumsum(const X& x) {
  return lang::scan<ir::Op::scan_sum, Axis, Reverse>(x);
}
/// Inclusive prefix product along `Axis` (tl.cumprod); as `cumsum`.
template <int Axis, bool Reverse = false, lang::TileArg X> auto cumprod(const X& x) {
  return lang::scan<ir::Op::scan_prod, Axis, Reverse>(x);
}
/// Running maximum along `Axis`: element j is max(x[0..j]) (Reverse: max(x[j..n-1])). NaN propagates as in `max`.
template <int Axis, bool Reverse = false, lang::TileArg X> auto cummax(const X& x) {
  return lang::scan<ir::Op::scan_max, Axis, Reverse>(x);
}
/// Running minimum along `Axis`; as `cummax`.
template <int Axis, bool Reverse = false, lang::TileArg X> auto cummin(const X& x) {
  return lang::scan<ir::Op::scan_min, Axis, Reverse>(x);
}

namespace lang {
/// Moves the combine traced into `sub` — nodes `base` .. end, the first 2·arity its combine_args — into the kernel
/// being traced as an ir::Combine, with `results` its values (one per operand); returns the Combine's index. A rank-0 literal traced
/// outside it is copied in; any other value traced outside it throws InvalidArgument (naming the kernel argument or
/// the node), a node that is not a rank-0 elementwise op Unsupported; `what` names the caller (trace.cpp).
int adopt_combine(ir::Kernel& sub, int base, std::span<const int> results, const char* what);

/// Instantiated when a combine returns the wrong type: the compiler's "in instantiation of" line names both —
/// Returned, what combine(a, b) returns, and Due, what it must.
template <class Returned, class Due>
struct combine_returns_the_wrong_type {
  static_assert(std::is_same_v<Returned, Due>,
                "combine(a, b) must return the element type of what it combines: a tj::Scalar<T> (one tile) or a "
                "std::tuple<tj::Scalar<T>...> in the tiles' order (several); tj::cast<T> a value whose type differs "
                "(this struct's template arguments: Returned, then Due)");
  static constexpr int value = -1;
};

/// Traces `combine(a, b)` on two Scalar<E> into the kernel being traced as an ir::Combine (adopt_combine's rules)
/// and returns its index: the operator of a scan_custom or reduce_custom node.
template <class E, class F>
int trace_combine(F& combine, const char* what) {
  static_assert(!is_ptr_v<E> && !std::is_same_v<E, bool>, "a combine needs a numeric tile (tj::cast a bool tile to i8 or i32)");
  if constexpr (!std::is_invocable_v<F&, Scalar<E>, Scalar<E>>) {
    static_assert(std::is_invocable_v<F&, Scalar<E>, Scalar<E>>, "combine(a, b) must accept two tj::Scalar<T> of the tile's element type");
    return -1;  // (not reached: only the static_assert is reported, not errors that follow from it)
  } else if constexpr (!std::is_same_v<std::remove_cvref_t<std::invoke_result_t<F&, Scalar<E>, Scalar<E>>>, Scalar<E>>) {
    return combine_returns_the_wrong_type<std::remove_cvref_t<std::invoke_result_t<F&, Scalar<E>, Scalar<E>>>, Scalar<E>>::value;
  } else {
    ir::Kernel* outer = current_kernel();
    if (!outer) throw Error("tile operations can only run while a kernel is traced (inside tilejit::trace / compile)");
    // The combine is traced into a kernel of its own whose first `base` nodes stand for the outer kernel's: an
    // operand id below `base` is a value it captured from outside, which adopt_combine refuses (a literal it copies).
    ir::Kernel sub;
    const int base = static_cast<int>(outer->nodes.size());
    sub.nodes.resize(static_cast<std::size_t>(base));
    int result = -1;
    {
      TraceScope scope(sub);
      ir::Node arg;
      arg.op = ir::Op::combine_arg;
      arg.type = type_of<E>();
      arg.i = 0;
      const Scalar<E> a(record(arg));
      arg.i = 1;
      const Scalar<E> b(record(arg));
      result = combine(a, b).id();
    }
    return adopt_combine(sub, base, std::span<const int>(&result, 1), what);
  }
}

/// trace_combine for a scan of several operands together: combine(a, b) takes two std::tuple<Scalar<E>...> (the
/// earlier element, the later) and returns a std::tuple<Scalar<E>...> of the same element types.
template <class... E, class F>
int trace_combine_tuple(F& combine, const char* what) {
  using Elem = std::tuple<Scalar<E>...>;
  static_assert(((!is_ptr_v<E> && !std::is_same_v<E, bool>) && ...), "a combine needs numeric tiles (tj::cast a bool tile to i8 or i32)");
  if constexpr (!std::is_invocable_v<F&, Elem, Elem>) {
    static_assert(std::is_invocable_v<F&, Elem, Elem>,
                  "combine(a, b) must accept two std::tuple<tj::Scalar<T>...> of the tiles' element types, in order");
    return -1;
  } else if constexpr (!std::is_same_v<std::remove_cvref_t<std::invoke_result_t<F&, Elem, Elem>>, Elem>) {
    return combine_returns_the_wrong_type<std::remove_cvref_t<std::invoke_result_t<F&, Elem, Elem>>, Elem>::value;
  } else {
    ir::Kernel* outer = current_kernel();
    if (!outer) throw Error("tile operations can only run while a kernel is traced (inside tilejit::trace / compile)");
    ir::Kernel sub;  // as trace_combine's
    const int base = static_cast<int>(outer->nodes.size());
    sub.nodes.resize(static_cast<std::size_t>(base));
    constexpr int n = static_cast<int>(sizeof...(E));
    std::array<int, n> results{};
    {
      TraceScope scope(sub);
      auto operands = [&](int first) {
        int i = first;
        auto one = [&]<class T>(std::type_identity<T>) {
          ir::Node arg;
          arg.op = ir::Op::combine_arg;
          arg.type = type_of<T>();
          arg.i = i++;
          return Scalar<T>(record(arg));
        };
        return Elem{one(std::type_identity<E>{})...};  // (braced: evaluated in order)
      };
      const Elem a = operands(0);
      const Elem b = operands(n);
      const Elem r = combine(a, b);
      [&]<std::size_t... I>(std::index_sequence<I...>) { ((results[I] = std::get<I>(r).id()), ...); }(std::index_sequence_for<E...>{});
    }
    return adopt_combine(sub, base, results, what);
  }
}
}  // namespace lang

/// Inclusive scan along `Axis` with a user's operator, Triton's tl.associative_scan for one tile: element j is
/// combine(... combine(combine(x[0], x[1]), x[2]) ..., x[j]) (Reverse: x[j] ⊕ ... ⊕ x[n-1], operands in index
/// order). `combine(a, b)` receives two tj::Scalar<T> of the tile's element type — a the earlier operand, b the
/// later — and returns a tj::Scalar<T>, computed with elementwise DSL operations (+, *, compares, tj::where,
/// tj::maximum, math, tj::cast, literals). It is traced once, not called per element.
/// The operator must be associative: the generated code groups the elements by the layout's digits (registers,
/// then lanes, then warps; docs/layouts.md), so a non-associative one gives results that depend on the layout. It
/// need not be commutative: every application keeps the earlier operand first.
/// Floating-point values are computed in registers of the element type (f16 / bf16 in f32, rounded after each
/// operation, as elsewhere), so sums may differ from a sequential order by rounding.
/// Throws InvalidArgument if the combine reads a value traced outside it (a kernel argument — a load through a
/// kernel's pointer too — or another tile: fold it into the scanned tile instead; a literal made outside,
/// `tj::scalar<float>(2)`, is copied in, a value computed from literals is not), Unsupported if it makes a tile or
/// reduces one of its own.
template <int Axis, bool Reverse = false, lang::TileArg X, class F>
auto associative_scan(const X& x0, F&& combine) {
  using E = lang::elem_t<decltype(lang::tile_of(x0))>;
  const int fn = lang::trace_combine<E>(combine, "associative_scan");
  return lang::scan<ir::Op::scan_custom, Axis, Reverse>(x0, fn);
}

namespace lang {
/// A scan_custom (OP, result shape S) or reduce_custom (the shape without Axis) of several tiles together with a
/// user's combine (trace_combine_tuple's rules): the std::tuple of its values, operand 0's the node's own, the
/// others' tuple_get nodes.
template <ir::Op OP, int Axis, bool Reverse, class... X, class F>
auto combine_tuple(const std::tuple<X...>& xs0, F& combine, const char* what) {
  using Xs = std::tuple<std::remove_cvref_t<decltype(tile_of(std::declval<const X&>()))>...>;
  const Xs xs = std::apply([](const auto&... x) { return Xs{tile_of(x)...}; }, xs0);
  using S = shape_t<std::tuple_element_t<0, Xs>>;
  static_assert([]<std::size_t... I>(std::index_sequence<I...>) {
    return (std::is_same_v<shape_t<std::tuple_element_t<I, Xs>>, S> && ...);
  }(std::index_sequence_for<X...>{}), "a scan or reduction of several tiles: they must have one shape (tj::broadcast_to them)");
  static_assert(S::rank >= 1 && Axis >= 0 && Axis < S::rank, "scan / reduction axis out of range for this tile's rank");
  // (an axis out of range has failed the static_assert above: only its message is reported)
  using RS = std::conditional_t<OP == ir::Op::scan_custom, S, typename remove_axis<(Axis < S::rank ? Axis : 0), S>::type>;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    const int fn = trace_combine_tuple<elem_t<std::tuple_element_t<I, Xs>>...>(combine, what);
    ir::Node n;
    n.op = OP;
    n.type = ir_type<elem_t<std::tuple_element_t<0, Xs>>, RS>();
    ((n.args[I] = std::get<I>(xs).id()), ...);
    n.axis = Axis;
    n.i = Reverse ? 1 : 0;
    n.fn = fn;
    const int node = record(n);
    auto part = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using E = elem_t<std::tuple_element_t<K, Xs>>;
      if constexpr (K == 0) {
        return make_tile_t<E, RS>(node);
      } else {
        ir::Node g;
        g.op = ir::Op::tuple_get;
        g.type = ir_type<E, RS>();
        g.args[0] = node;
        g.i = static_cast<std::int64_t>(K);
        return make_tile_t<E, RS>(record(g));
      }
    };
    return std::tuple{part(std::integral_constant<std::size_t, I>{})...};
  }(std::index_sequence_for<X...>{});
}
}  // namespace lang

/// Scans several tiles together, Triton's tl.associative_scan on a tuple: xs = std::tuple{x0, x1} or {x0, x1, x2},
/// tiles of one shape (their element types may differ); element j of the scan is the tuple
/// combine(... combine((x0[0], x1[0]), (x0[1], x1[1])) ..., (x0[j], x1[j])). combine(a, b) receives the earlier
/// and the later element as std::tuple<tj::Scalar<T>...> (structured bindings unpack them) and returns one of the
/// same element types; it is traced once, with associative_scan's rules (associative, need not be commutative).
/// Returns the std::tuple of the scanned tiles. Example, the linear recurrence h[t] = a[t]·h[t-1] + b[t] of
/// state-space models: `auto [ap, h] = tj::associative_scan<0>(std::tuple{a, b}, [](auto l, auto r) {
///   auto [a1, b1] = l; auto [a2, b2] = r; return std::tuple{a1 * a2, a2 * b1 + b2}; });`
/// Lowered as a one-operand scan whose registers hold the tuple (a struct in the generated code). Throws as
/// associative_scan.
template <int Axis, bool Reverse = false, class... X, class F>
  requires(sizeof...(X) >= 2 && sizeof...(X) <= ir::kMaxCombineArity && (lang::TileArg<X> && ...))
auto associative_scan(const std::tuple<X...>& xs, F&& combine) {
  return lang::combine_tuple<ir::Op::scan_custom, Axis, Reverse>(xs, combine, "associative_scan");
}

/// Reduces several tiles together, Triton's tl.reduce on a tuple: xs = std::tuple{x0, x1} or {x0, x1, x2}, tiles of
/// one shape (element types may differ), combine(a, b) on std::tuple<tj::Scalar<T>...> as the tuple
/// associative_scan's; the operator must be associative and commutative (tj::reduce's rule). Returns the std::tuple
/// of the reduced tiles ([M, N] -> [M] for Axis = 1; a 1-D tile gives scalars). Examples: an argmax that breaks
/// ties toward the lower index, (value, index); Welford's mean and variance, (count, mean, m2) merged by Chan et
/// al.'s formula (commutative up to rounding). Throws as associative_scan.
template <int Axis, class... X, class F>
  requires(sizeof...(X) >= 2 && sizeof...(X) <= ir::kMaxCombineArity && (lang::TileArg<X> && ...))
auto reduce(const std::tuple<X...>& xs, F&& combine) {
  return lang::combine_tuple<ir::Op::reduce_custom, Axis, false>(xs, combine, "reduce");
}

/// Reduction along `Axis` with a user's operator, Triton's tl.reduce for one tile: [M, N] -> [M] for Axis = 1,
/// combine(a, b) as for associative_scan. The operator must be associative and commutative: lanes and warps
/// combine their partial results in an order the layout decides (a butterfly gives each lane its partner's value
/// second). The interpreter folds in index order. Throws as associative_scan.
template <int Axis, lang::TileArg X, class F>
auto reduce(const X& x0, F&& combine) {
  using E = lang::elem_t<decltype(lang::tile_of(x0))>;
  const int fn = lang::trace_combine<E>(combine, "reduce");
  return lang::reduce<ir::Op::reduce_custom, Axis>(x0, fn);
}

// ---- reshape, join, split ------------------------------------------------
namespace lang {
template <class S> inline constexpr int numel_v = [] {
  int n = 1;
  for (int d : S::dims) n *= d;
  return n;
}();
}  // namespace lang

/// The elements of x in row-major order as a tile of shape D... (rank 1 or 2, the same element count), Triton's
/// tl.reshape (without can_reorder): [96] -> [3, 32] puts elements 0..31 in row 0. Same shape: x itself, no node.
/// Free when the operand's layout already cuts its digits as the new shape needs (mixed-radix layouts, DESIGN §3):
/// each thread keeps its registers, and the layout planner gives a reshape's result the relabelled layout of its
/// operand, or a 1-D operand the flattened layout of the result. When the digit order forbids it — [96] held as
/// digits [2,2,2,2,2,3] read as [32, 3] needs a radix-3 minor digit, a permutation of elements no linear layout
/// describes — or other uses fix both layouts, the elements move once through shared memory instead, and the
/// compile diagnostics (`reshape %N: ...`) name which way was taken and why.
template <int... D, lang::TileArg X>
auto reshape(const X& x0) {
  auto x = lang::tile_of(x0);
  using S = lang::shape_t<decltype(x)>;
  using E = lang::elem_t<decltype(x)>;
  static_assert(S::rank >= 1 && sizeof...(D) >= 1 && sizeof...(D) <= 2,
                "reshape<D...>(x): x and the new shape must have rank 1 or 2 (a scalar has nothing to reshape)");
  static_assert(lang::reshape_element_counts_must_match<S, Shape<D...>, S::rank == 0 || lang::numel_v<S> == (D * ... * 1)>::value);
  if constexpr (std::is_same_v<S, Shape<D...>>) {
    return x;
  } else {
    // A reshape of a reshape is one reshape of the first operand, and none when that has the new shape already (the
    // round trip [64, 64] -> [4096] -> [64, 64] moves nothing).
    int src = x.id();
    const ir::Kernel* k = lang::current_kernel();
    if (k && src >= 0 && k->nodes[static_cast<std::size_t>(src)].op == ir::Op::reshape) src = k->nodes[static_cast<std::size_t>(src)].args[0];
    ir::Node n;
    n.op = ir::Op::reshape;
    n.type = lang::type_of<E, D...>();
    if (k && k->nodes[static_cast<std::size_t>(src)].type == n.type) return Tile<E, D...>(src);
    n.args[0] = src;
    return Tile<E, D...>(lang::record(n));
  }
}

/// a and b side by side along a new minor dim of size 2, Triton's tl.join: scalars -> [2], [N] -> [N, 2]
/// (out[i][0] = a[i], out[i][1] = b[i]). a and b: the same element type and shape (a scalar or 1-D tile: tiles
/// have rank 2 at most). Composed from expand_dims, broadcasting and where.
template <lang::TileArg A, lang::TileArg B>
auto join(const A& a0, const B& b0) {
  auto a = lang::tile_of(a0);
  auto b = lang::tile_of(b0);
  using SA = lang::shape_t<decltype(a)>;
  using EA = lang::elem_t<decltype(a)>;
  using EB = lang::elem_t<decltype(b)>;
  static_assert(lang::dtypes_must_match<EA, EB, std::is_same_v<EA, EB>>::value);
  static_assert(lang::shapes_must_match<SA, lang::shape_t<decltype(b)>, std::is_same_v<SA, lang::shape_t<decltype(b)>>>::value);
  static_assert(SA::rank <= 1, "join(a, b): a and b must be scalars or 1-D tiles (the result gains a dim; tiles have rank 2 at most)");
  auto second = tilejit::arange<2>() == 1;  // [2]: false, true
  if constexpr (SA::rank == 0) {
    return tilejit::where(second, broadcast_to<2>(b), broadcast_to<2>(a));
  } else {
    return tilejit::where(tilejit::expand_dims<0>(second), tilejit::expand_dims<1>(b), tilejit::expand_dims<1>(a));
  }
}

/// The two halves of x's minor dim of size 2, Triton's tl.split (join's inverse): [2] -> two scalars, [N, 2] -> two
/// [N] (first[i] = x[i][0], second[i] = x[i][1]), returned as a std::pair. Every bit is kept on
/// GPUs (-0, NaN payloads); the interpreter keeps -0 but, holding values as doubles, quiets NaN payloads (as its
/// loads and stores do).
/// Numeric and bool tiles (not pointers). Composed from a two-element reduction along the minor dim that keeps the
/// element whose index is 0 (or 1): within a thread when the layout holds both there.
template <lang::TileArg X>
auto split(const X& x0) {
  auto x = lang::tile_of(x0);
  using S = lang::shape_t<decltype(x)>;
  using E = lang::elem_t<decltype(x)>;
  static_assert(S::rank >= 1 && S::dims[S::rank - 1] == 2, "split(x): x's minor (last) dim must have size 2, as join makes");
  static_assert(!lang::is_ptr_v<E>, "split(x): x must hold numbers or bools, not pointers");
  if constexpr (std::is_same_v<E, bool>) {
    auto [lo, hi] = tilejit::split(tilejit::cast<std::int8_t>(x));
    return std::pair{lo != 0, hi != 0};
  } else {
    constexpr int Axis = S::rank - 1;
    auto idx = [] {
      if constexpr (S::rank == 1) return tilejit::arange<2>();
      else return tilejit::broadcast_to<S::dims[0], 2>(tilejit::expand_dims<0>(tilejit::arange<2>()));
    }();
    auto pick = [&](int want) {
      // combine keeps the operand whose index is `want`: of the two elements exactly one is, so the operator is
      // associative and commutative on them and the reduction returns that element's bits unchanged.
      auto [v, i] = tilejit::reduce<Axis>(std::tuple{x, idx}, [want](auto l, auto r) {
        auto [lv, li] = l;
        auto [rv, ri] = r;
        return std::tuple{tilejit::where(li == want, lv, rv), tilejit::where(li == want, li, ri)};
      });
      (void)i;
      return v;
    };
    return std::pair{pick(0), pick(1)};
  }
}

/// a and b interleaved, Triton's tl.interleave: [N] and [N] -> [2N] with out[2i] = a[i], out[2i + 1] = b[i]
/// (reshape of join). Scalars give [2].
template <lang::TileArg A, lang::TileArg B>
auto interleave(const A& a, const B& b) {
  auto j = tilejit::join(a, b);
  using SJ = lang::shape_t<decltype(j)>;
  if constexpr (SJ::rank == 1) return j;
  else return tilejit::reshape<SJ::dims[0] * 2>(j);
}

// ---- matrix product -------------------------------------------------------
namespace lang {
template <class E> using dot_acc_t = std::conditional_t<std::is_same_v<E, std::int8_t>, std::int32_t, float>;
}
/// acc + a·b for a [M,K] and b [K,N] of the same element type, Triton's tl.dot. Element types and accumulators:
/// f16 / bf16 / f8e4m3 / f8e5m2 → f32, f32 → f32 (multiplied as tf32 on NVIDIA), i8 → i32. Lowering per target:
///  - sm_90a: wgmma when the accumulator is [16·num_warps, N] with M a multiple of 64 and N a wgmma N (a multiple
///    of 8 up to 256), from TMA blocks (descriptor loads feeding the dot: K · element size a multiple of 32 bytes)
///    or, for f16 / bf16, from registers (staged: K a multiple of 64); otherwise mma.sync, with a diagnostic
///    naming the rule the shape breaks (TMA-block operands that are not a wgmma shape throw Unsupported);
///  - sm_80+ (and sm_90 without the a): mma.sync m16n8k16 (f16 / bf16), m16n8k8 (tf32), m16n8k32 (i8, and f8
///    from sm_89); K must be a multiple of the instruction's K (16, 8, 32). f8 below sm_89 throws Unsupported;
///  - gfx90a / gfx94x: MFMA 32x32 or 16x16 (operands staged through shared memory).
///  An accumulator with fewer instruction tiles than the program has warps (16x16 over 4 warps) is computed by the
///  warps that divide it; the others hold copies (a diagnostic says so; stores and reductions count one copy).
///  Shapes no instruction fits (M not a multiple of 16, N of 8; on MFMA of 16) throw Unsupported naming the rule.
///  TMA blocks are held in swizzled slabs as wide as their rows allow (128, 64 or 32 bytes), so a block is copied
///  exactly (codegen plan_slab_widths); a mismatched K or accumulator shape fails to compile
///  (dot_inner_dims_must_match, dot_accumulator_shape_must_be).
/// The interpreter computes exact products (the GPU's tf32 keeps 10 mantissa bits of each f32 input; MFMA's f32
/// products are full precision; the f8 accumulation keeps ~14 bits per step).
template <lang::TileArg A, lang::TileArg B, lang::TileArg C>
auto dot(const A& a, const B& b, const C& acc) {
  using SA = lang::shape_t<A>;
  using SB = lang::shape_t<B>;
  using SC = lang::shape_t<C>;
  static_assert(SA::rank == 2 && SB::rank == 2 && SC::rank == 2, "dot(a, b, acc): all three must be 2-D tiles");
  static_assert(lang::dot_inner_dims_must_match<SA, SB, SA::dims[1] == SB::dims[0]>::value);
  static_assert(lang::dot_accumulator_shape_must_be<SC, Shape<SA::dims[0], SB::dims[1]>,
                                                    SC::dims[0] == SA::dims[0] && SC::dims[1] == SB::dims[1]>::value);
  using EA = lang::elem_t<A>;
  using EB = lang::elem_t<B>;
  static_assert(lang::dtypes_must_match<EA, EB, std::is_same_v<EA, EB>>::value);
  static_assert(std::is_same_v<EA, f16> || std::is_same_v<EA, bf16> || std::is_same_v<EA, f8e4m3> || std::is_same_v<EA, f8e5m2> ||
                    std::is_same_v<EA, float> || std::is_same_v<EA, std::int8_t>,
                "dot: operands must be f16, bf16, f8e4m3, f8e5m2, f32 (tf32) or i8");
  using Acc = lang::dot_acc_t<EA>;
  static_assert(std::is_same_v<lang::elem_t<C>, Acc>, "dot: the accumulator must be f32 (i32 for i8 operands)");
  ir::Node n;
  n.op = ir::Op::dot;
  n.type = lang::type_of<Acc, SC::dims[0], SC::dims[1]>();
  n.args = {a.id(), b.id(), acc.id(), -1};
  return Tile<Acc, SC::dims[0], SC::dims[1]>(lang::record(n));
}
/// a·b with a fresh accumulator (f32; i32 for i8 operands).
template <lang::TileArg A, lang::TileArg B>
auto dot(const A& a, const B& b) {
  return dot(a, b, zeros<lang::dot_acc_t<lang::elem_t<A>>, lang::shape_t<A>::dims[0], lang::shape_t<B>::dims[1]>());
}

// ---- memory -----------------------------------------------------------------
/// Load the elements addressed by a pointer tile. Where `mask` is false the
/// memory is not touched and the result is `other` (0 when omitted).
template <lang::TileArg P>
auto load(const P& p) {
  using PE = lang::elem_t<P>;
  static_assert(lang::is_ptr_v<PE>, "load() needs a pointer tile (ptr + offsets)");
  using T = typename PE::pointee;
  ir::Node n;
  n.op = ir::Op::load;
  n.type = lang::ir_type<T, lang::shape_t<P>>();
  n.args[0] = p.id();
  return lang::make_tile_t<T, lang::shape_t<P>>(lang::record(n));
}
template <lang::TileArg P, lang::TileArg M>
auto load(const P& p, const M& mask) {
  using PE = lang::elem_t<P>;
  static_assert(lang::is_ptr_v<PE>, "load() needs a pointer tile (ptr + offsets)");
  static_assert(std::is_same_v<lang::elem_t<M>, bool>, "load(ptrs, mask): mask must be a bool tile");
  using BS = lang::broadcast_shape<lang::shape_t<P>, lang::shape_t<M>>;
  static_assert(lang::shapes_must_match<lang::shape_t<P>, lang::shape_t<M>, BS::ok>::value);
  using S = typename BS::type;
  using T = typename PE::pointee;
  ir::Node n;
  n.op = ir::Op::load;
  n.type = lang::ir_type<T, S>();
  n.args[0] = lang::broadcast_id(p.id(), lang::ir_type<PE, S>());
  n.args[1] = lang::broadcast_id(mask.id(), lang::ir_type<bool, S>());
  return lang::make_tile_t<T, S>(lang::record(n));
}
template <lang::TileArg P, lang::TileArg M, class O>
auto load(const P& p, const M& mask, const O& other) {
  using T = typename lang::elem_t<P>::pointee;
  // `other` is recorded before the load so that the IR stays in def-use order.
  auto o = [&] {
    if constexpr (lang::Literal<O>) return lang::literal_constant<T>(other);
    else return lang::tile_of(other);
  }();
  static_assert(lang::dtypes_must_match<T, lang::elem_t<decltype(o)>, std::is_same_v<T, lang::elem_t<decltype(o)>>>::value);
  static_assert(lang::shape_t<decltype(o)>::rank == 0, "load(ptrs, mask, other): other must be a scalar");
  auto v = load(p, mask);
  lang::current_kernel()->nodes[static_cast<std::size_t>(v.id())].args[2] = o.id();
  return v;
}

/// Store `value` at the addresses of a pointer tile where `mask` is true.
template <lang::TileArg P, class V>
void store(const P& p, const V& value0) {
  using PE = lang::elem_t<P>;
  static_assert(lang::is_ptr_v<PE>, "store() needs a pointer tile (ptr + offsets)");
  using T = typename PE::pointee;
  auto value = [&] {
    if constexpr (lang::Literal<V>) return lang::literal_constant<T>(value0);
    else return lang::tile_of(value0);
  }();
  using E = lang::elem_t<decltype(value)>;
  static_assert(lang::dtypes_must_match<T, E, std::is_same_v<T, E>>::value);
  using BS = lang::broadcast_shape<lang::shape_t<P>, lang::shape_t<decltype(value)>>;
  static_assert(lang::shapes_must_match<lang::shape_t<P>, lang::shape_t<decltype(value)>, BS::ok &&
                std::is_same_v<typename BS::type, lang::shape_t<P>>>::value);
  ir::Node n;
  n.op = ir::Op::store;
  n.type = lang::ir_type<T, lang::shape_t<P>>();
  n.args[0] = p.id();
  n.args[1] = lang::broadcast_id(value.id(), n.type);
  lang::record(n);
}
template <lang::TileArg P, class V, lang::TileArg M>
void store(const P& p, const V& value0, const M& mask) {
  using PE = lang::elem_t<P>;
  static_assert(lang::is_ptr_v<PE>, "store() needs a pointer tile (ptr + offsets)");
  static_assert(std::is_same_v<lang::elem_t<M>, bool>, "store(ptrs, value, mask): mask must be a bool tile");
  using T = typename PE::pointee;
  auto value = [&] {
    if constexpr (lang::Literal<V>) return lang::literal_constant<T>(value0);
    else return lang::tile_of(value0);
  }();
  using E = lang::elem_t<decltype(value)>;
  static_assert(lang::dtypes_must_match<T, E, std::is_same_v<T, E>>::value);
  using B1 = lang::broadcast_shape<lang::shape_t<P>, lang::shape_t<M>>;
  static_assert(lang::shapes_must_match<lang::shape_t<P>, lang::shape_t<M>, B1::ok>::value);
  using S = typename B1::type;
  using B2 = lang::broadcast_shape<S, lang::shape_t<decltype(value)>>;
  static_assert(lang::shapes_must_match<S, lang::shape_t<decltype(value)>, B2::ok && std::is_same_v<typename B2::type, S>>::value);
  ir::Node n;
  n.op = ir::Op::store;
  n.type = lang::ir_type<T, S>();
  n.args[0] = lang::broadcast_id(p.id(), lang::ir_type<PE, S>());
  n.args[1] = lang::broadcast_id(value.id(), n.type);
  n.args[2] = lang::broadcast_id(mask.id(), lang::ir_type<bool, S>());
  lang::record(n);
}

// ---- atomics ---------------------------------------------------------------
namespace lang {
template <class T>
inline constexpr bool atomic_int_v = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
                                     std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t>;
template <ir::Op OP, class T>
inline constexpr bool atomic_type_v =
    OP == ir::Op::atomic_cas ? atomic_int_v<T>
    : OP == ir::Op::atomic_max || OP == ir::Op::atomic_min ? atomic_int_v<T> || std::is_same_v<T, float>
                                                             : atomic_int_v<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;
template <ir::Op OP, class T, bool ok = atomic_type_v<OP, T>>
struct atomic_element_type_must_be_supported {
  static_assert(ok, "atomics take 32- and 64-bit integers, f32 and f64 (add, xchg), f32 (max, min) and integers (cas); "
                    "not 16-bit floats, 8/16-bit integers or bool");
  static constexpr bool value = ok;
};

/// An atomic node: pointers p, operand a (the compare of a cas) and b (a cas's value), an optional mask.
template <ir::Op OP, class P, class A, class B, class M>
auto atomic(const P& p, const A& a0, const B* b0, const M* mask) {
  using PE = elem_t<P>;
  static_assert(is_ptr_v<PE>, "atomics need a pointer tile (ptr + offsets)");
  using T = typename PE::pointee;
  static_assert(atomic_element_type_must_be_supported<OP, T>::value);
  auto operand = [](const auto& x) {
    if constexpr (Literal<std::decay_t<decltype(x)>>) return literal_constant<T>(x);
    else return tile_of(x);
  };
  auto a = operand(a0);
  static_assert(dtypes_must_match<T, elem_t<decltype(a)>, std::is_same_v<T, elem_t<decltype(a)>>>::value);
  using MS = shape_t<std::conditional_t<std::is_same_v<M, void>, P, M>>;  // the mask's shape (the pointers' without one)
  using B0 = broadcast_shape<shape_t<P>, MS>;
  static_assert(shapes_must_match<shape_t<P>, MS, B0::ok>::value);
  if constexpr (!std::is_same_v<M, void>) static_assert(std::is_same_v<elem_t<M>, bool>, "atomic mask must be a bool tile");
  using S = typename B0::type;
  using BA = broadcast_shape<S, shape_t<decltype(a)>>;
  static_assert(shapes_must_match<S, shape_t<decltype(a)>, BA::ok && std::is_same_v<typename BA::type, S>>::value);
  ir::Node n;
  n.op = OP;
  n.type = ir_type<T, S>();
  n.args[0] = broadcast_id(p.id(), ir_type<PE, S>());
  n.args[1] = broadcast_id(a.id(), n.type);
  if constexpr (!std::is_same_v<B, void>) {
    auto b = operand(*b0);
    static_assert(dtypes_must_match<T, elem_t<decltype(b)>, std::is_same_v<T, elem_t<decltype(b)>>>::value);
    using BB = broadcast_shape<S, shape_t<decltype(b)>>;
    static_assert(shapes_must_match<S, shape_t<decltype(b)>, BB::ok && std::is_same_v<typename BB::type, S>>::value);
    n.args[2] = broadcast_id(b.id(), n.type);
  }
  if constexpr (!std::is_same_v<M, void>) n.args[2] = broadcast_id(mask->id(), ir_type<bool, S>());
  return make_tile_t<T, S>(record(n));
}
}  // namespace lang

/// Atomic read-modify-writes at the addresses of a pointer tile (Triton's tl.atomic_add / max / min / xchg):
/// each address where `mask` is true (all, without one) takes `old + value` (max, min, value), and the result is
/// the tile of old values (0 where masked off). Value and mask broadcast to the pointers' shape. A literal value is
/// converted to the pointee type while tracing; one it cannot hold exactly (1.5 for an i32 pointer) throws
/// InvalidArgument, and a negative literal for an unsigned pointee wraps as in C. Memory order relaxed, device
/// scope (CUDA's atomicAdd and kin; HIP's agent-scope atomics); each element is done once however many threads
/// hold a copy of it. Elements: 32- and 64-bit integers, f32 and f64 (add, xchg), f32 (max, min: through the
/// integer order of its bits, +0 above -0, NaN not supported); others fail to compile
/// (atomic_element_type_must_be_supported). Two elements with the same address both apply, in an unspecified
/// order (the interpreter: row-major order, one program at a time per atomic).
template <lang::TileArg P, class V> auto atomic_add(const P& p, const V& value) {
  return lang::atomic<ir::Op::atomic_add, P, V, void, void>(p, value, nullptr, nullptr);
}
template <lang::TileArg P, class V, lang::TileArg M> auto atomic_add(const P& p, const V& value, const M& mask) {
  return lang::atomic<ir::Op::atomic_add, P, V, void, M>(p, value, nullptr, &mask);
}
/// Atomic maximum; as `atomic_add`.
template <lang::TileArg P, class V> auto atomic_max(const P& p, const V& value) {
  return lang::atomic<ir::Op::atomic_max, P, V, void, void>(p, value, nullptr, nullptr);
}
template <lang::TileArg P, class V, lang::TileArg M> auto atomic_max(const P& p, const V& value, const M& mask) {
  return lang::atomic<ir::Op::atomic_max, P, V, void, M>(p, value, nullptr, &mask);
}
/// Atomic minimum; as `atomic_add`.
template <lang::TileArg P, class V> auto atomic_min(const P& p, const V& value) {
  return lang::atomic<ir::Op::atomic_min, P, V, void, void>(p, value, nullptr, nullptr);
}
template <lang::TileArg P, class V, lang::TileArg M> auto atomic_min(const P& p, const V& value, const M& mask) {
  return lang::atomic<ir::Op::atomic_min, P, V, void, M>(p, value, nullptr, &mask);
}
/// Atomic exchange: stores `value`, returns the old values; as `atomic_add`.
template <lang::TileArg P, class V> auto atomic_xchg(const P& p, const V& value) {
  return lang::atomic<ir::Op::atomic_xchg, P, V, void, void>(p, value, nullptr, nullptr);
}
template <lang::TileArg P, class V, lang::TileArg M> auto atomic_xchg(const P& p, const V& value, const M& mask) {
  return lang::atomic<ir::Op::atomic_xchg, P, V, void, M>(p, value, nullptr, &mask);
}
/// Atomic compare-and-swap (tl.atomic_cas): where memory equals `compare` it takes `value`; returns the old values
/// (so an element succeeded where the result equals `compare`). 32- and 64-bit integers; relaxed, device scope.
/// No mask (as Triton's): point masked-off elements at a scratch address, or compare against a value they never hold.
template <lang::TileArg P, class C, class V> auto atomic_cas(const P& p, const C& compare, const V& value) {
  return lang::atomic<ir::Op::atomic_cas, P, C, V, void>(p, compare, &value, nullptr);
}

/// Ceiling division for grids (host side): cdiv(n, 96). b must be > 0; a >= 0.
constexpr long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace tilejit

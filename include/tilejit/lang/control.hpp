// tilejit/lang/control.hpp — structured control flow: loops with
// loop-carried tiles (Triton's `for k in range(lo, hi, step)` whose body
// updates accumulators).
//
//   auto acc = tj::zeros<float, 64, 96>();
//   acc = tj::for_range(0, k_tiles, 1, acc, [&](tj::Int k, auto acc) {
//     return acc + tj::load(...);
//   });
//
//   auto [m, l] = tj::for_range(0, n, BLOCK, std::tuple{m0, l0},
//                              [&](tj::Int i, auto m, auto l) { ...; return std::tuple{m2, l2}; });
//
// The body is traced once; each carried value keeps its type (dtype and
// shape) across iterations — returning another type is a compile error.
// Values made inside the body cannot be used after the loop except by
// returning them (checked when the kernel is compiled).
#pragma once
#include <string>
#include <tuple>
#include <type_traits>

#include "tilejit/core/error.hpp"
#include "tilejit/lang/ops.hpp"

namespace tilejit {
namespace lang {

inline Int as_int(const Int& v) { return v; }
inline Int as_int(const Size& v) { return static_cast<const Int&>(v); }
inline Int as_int(int v) { return scalar_constant<std::int32_t>(v); }
/// Other C++ numbers as bounds or steps: whole numbers that fit an i32, else InvalidArgument naming the literal.
template <class X>
  requires(std::is_arithmetic_v<X> && !std::is_same_v<X, int> && !std::is_same_v<X, bool>)
Int as_int(X v) {
  return i32_literal(v, "for_range bound or step");
}

template <class T>
T make_carry(const T& init, int begin) {
  ir::Node n;
  n.op = ir::Op::loop_carry;
  n.type = current_kernel()->nodes[static_cast<std::size_t>(init.id())].type;
  n.args[0] = init.id();
  n.args[1] = begin;
  return T(record(n));
}

template <class T>
void yield(const T& carry, const T& next) {
  ir::Node n;
  n.op = ir::Op::loop_yield;
  n.type = current_kernel()->nodes[static_cast<std::size_t>(carry.id())].type;
  n.args[0] = carry.id();
  n.args[1] = next.id();
  record(n);
}

template <class T>
T result_of(const T& carry) {
  ir::Node n;
  n.op = ir::Op::loop_result;
  n.type = current_kernel()->nodes[static_cast<std::size_t>(carry.id())].type;
  n.args[0] = carry.id();
  return T(record(n));
}

template <class X> struct carried_tile { using type = decltype(tile_of(std::declval<X>())); };
template <class X> using carried_t = typename carried_tile<std::remove_cvref_t<X>>::type;

/// A constant step of 0 or less is rejected while tracing: `for (s = lo; s < hi; s += step)` would never end on
/// a GPU. (A step known only at run time is checked there: the interpreter throws, the generated code traps.)
inline void require_positive_step(const Int& step) {
  const ir::Node& n = current_kernel()->nodes[static_cast<std::size_t>(step.id())];
  if (n.op == ir::Op::constant && n.i <= 0)
    throw InvalidArgument("for_range: step = " + std::to_string(n.i) +
                          ": the step must be positive (a loop `for (s = lo; s < hi; s += step)` with a step <= 0 never ends)");
}

/// Records a loop_begin over [lo, hi) by step; returns its node (the induction variable).
template <class Lo, class Hi, class Step>
int begin_loop(const Lo& lo, const Hi& hi, const Step& step) {
  const Int l = as_int(lo), h = as_int(hi), s = as_int(step);
  require_positive_step(s);
  ir::Node b;
  b.op = ir::Op::loop_begin;
  b.type = type_of<std::int32_t>();
  b.args = {l.id(), h.id(), s.id(), -1};
  return record(b);
}

/// Records the loop_end of the loop begun at node `begin`.
inline void end_loop(int begin) {
  ir::Node e;
  e.op = ir::Op::loop_end;
  e.args[0] = begin;
  record(e);
}

}  // namespace lang

/// for (iv = lo; iv < hi; iv += step) with carried tiles. `init` is one tile
/// or a std::tuple of tiles; `body(iv, carried...)` returns the next values
/// (one tile, or a tuple in the same order and of the same types). Returns
/// the values after the last iteration (`init` when the loop runs zero times).
/// lo, hi, step: Int / Size scalars or C++ whole numbers that fit an i32 (others throw InvalidArgument while tracing);
/// step must be positive (a constant step <= 0 throws InvalidArgument while tracing; a run-time one makes the
/// interpreter throw and the generated code trap), and a loop that runs must keep hi + step - 1 <= 2^31 - 1, so the
/// i32 induction variable cannot overflow: a launch whose arguments, descriptor shapes or grid give such bounds throws
/// InvalidArgument before anything runs; the interpreter also refuses loops whose bounds the kernel computes (a
/// compiled kernel does not check those: the caller's).
template <class Lo, class Hi, class Step, class Init, class Body>
auto for_range(const Lo& lo, const Hi& hi, const Step& step, const Init& init, Body&& body) {
  const int begin = lang::begin_loop(lo, hi, step);
  const Int iv(begin);
  if constexpr (requires { std::tuple_size<Init>::value; }) {
    auto carries = std::apply(
        [&](const auto&... x) { return std::tuple{lang::make_carry(lang::tile_of(x), begin)...}; }, init);
    auto next = std::apply([&](const auto&... c) { return body(iv, c...); }, carries);
    static_assert(std::is_same_v<decltype(next), decltype(carries)>,
                  "for_range: the body must return the carried tiles with their types unchanged (same order, dtype, shape)");
    [&]<std::size_t... I>(std::index_sequence<I...>) { (lang::yield(std::get<I>(carries), std::get<I>(next)), ...); }(
        std::make_index_sequence<std::tuple_size_v<decltype(carries)>>{});
    lang::end_loop(begin);
    return std::apply([&](const auto&... c) { return std::tuple{lang::result_of(c)...}; }, carries);
  } else {
    auto carry = lang::make_carry(lang::tile_of(init), begin);
    auto next = lang::tile_of(body(iv, carry));
    static_assert(std::is_same_v<decltype(next), decltype(carry)>,
                  "for_range: the body must return the carried tile with its type unchanged (same dtype and shape)");
    lang::yield(carry, next);
    lang::end_loop(begin);
    return lang::result_of(carry);
  }
}

/// for (iv = lo; iv < hi; iv += step) with nothing carried: `body(iv)` returns nothing and works through
/// side effects (stores), e.g. a persistent program's loop over the output tiles it owns:
///   tj::for_range(tj::program_id(0), num_tiles, tj::num_programs(0), [&](tj::Int tile) { ...; tj::store(...); });
template <class Lo, class Hi, class Step, class Body>
  requires std::is_void_v<std::invoke_result_t<Body&, Int>>
void for_range(const Lo& lo, const Hi& hi, const Step& step, Body&& body) {
  const int begin = lang::begin_loop(lo, hi, step);
  body(Int(begin));
  lang::end_loop(begin);
}

}  // namespace tilejit

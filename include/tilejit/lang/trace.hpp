// tilejit/lang/trace.hpp — tracing a kernel callable into the IR.
//
// A kernel is any C++ callable whose operator() takes tile handles:
//   Ptr<T> (a buffer), Int / Size / Scalar<T> (a scalar argument),
//   Desc<T, B0, B1> (a tensor descriptor, lang/descriptor.hpp).
// trace<K>() calls it once with symbolic arguments; every tile operation in
// its body records a node. Compile-time parameters are the callable's own
// template arguments, so each specialisation traces to its own IR.
#pragma once
#include <boost/core/demangle.hpp>
#include <boost/hana.hpp>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "tilejit/lang/descriptor.hpp"
#include "tilejit/lang/ops.hpp"

namespace tilejit {
namespace lang {

template <class F> struct call_signature;
template <class C, class... A>
struct call_signature<void (C::*)(A...) const> {
  static constexpr auto args = boost::hana::tuple_t<std::remove_cvref_t<A>...>;
  static constexpr std::size_t arity = sizeof...(A);
};
template <class C, class... A>
struct call_signature<void (C::*)(A...)> : call_signature<void (C::*)(A...) const> {};

/// The argument types of K::operator(), as a hana tuple of types.
template <class K>
using kernel_signature = call_signature<decltype(&K::operator())>;

/// A C identifier derived from K's type name ("VecAdd<96>" -> "VecAdd_96").
std::string kernel_name_from(const std::string& demangled);

template <class A>
A make_param(ir::Kernel& k, int index) {
  ir::Param p;
  p.name = "arg" + std::to_string(index);
  if constexpr (is_desc_v<A>) {
    p.type = type_of<typename A::element>();
    p.type.is_desc = true;
    if constexpr (requires { A::rank; }) {  // (AnyDesc<T>, an autotuner's signature type, is never traced)
      p.rank = A::rank;
      p.row_dim = A::row_dim;
      for (int d = 0; d < A::rank; ++d) p.block[static_cast<std::size_t>(d)] = A::block_shape[static_cast<std::size_t>(d)];
    }
  } else {
    static_assert(is_tile_v<A> && tile_traits<A>::shape::rank == 0,
                  "kernel parameters are scalars: tj::Ptr<T>, tj::Int, tj::Size, tj::Scalar<T>, or tj::Desc<T, B...>");
    p.type = type_of<typename tile_traits<A>::element>();
    p.is_size = std::is_same_v<A, Size>;
  }
  k.params.push_back(p);
  ir::Node n;
  n.op = ir::Op::param;
  n.type = p.type;
  n.i = index;
  return A(record(n));
}

}  // namespace lang

/// Trace the callable `kernel` into IR. Throws whatever the body throws.
template <class K>
ir::Kernel trace(const K& kernel = K{}) {
  namespace hana = boost::hana;
  ir::Kernel k;
  k.name = lang::kernel_name_from(boost::core::demangle(typeid(K).name()));
  lang::TraceScope scope(k);
  constexpr auto types = lang::kernel_signature<K>::args;
  // Build the symbolic arguments in declaration order (a braced list is
  // evaluated left to right), then call the body once.
  auto args = hana::unpack(types, [&](auto... t) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return hana::tuple<typename decltype(t)::type...>{
          lang::make_param<typename decltype(t)::type>(k, static_cast<int>(I))...};
    }(std::index_sequence_for<decltype(t)...>{});
  });
  hana::unpack(args, [&](auto&&... a) { kernel(a...); });
  return k;
}

}  // namespace tilejit

// tilejit/lang/events.hpp — device events: producer/consumer pairs recorded inside a kernel.
//
//   for_range(0, k_tiles, 1, [&](Int k) {
//     tj::async_begin("A·B", k);          // this iteration's product is issued
//     acc = dot(a, b, acc);
//     ...
//     tj::async_end("A·B", k - 1);         // the previous one's result has been read
//   });
//
// Each call records, when the kernel is compiled with CompileOptions::device_events and launched under a
// profiler session with the launch hook, one event of the program's first thread: the site's name, begin or end,
// the id, the program, the warp, the SM and the GPU's global timer (ns). A begin and an end of one program with
// the same site and id form a pair, drawn as a flow in the Chrome trace (docs/profiler.md "Device events") —
// across loop iterations, functions and, for the events the code generator adds itself, warp-specialised roles
// (the producer warp's TMA issue → each consumer warp group's wait). Without device_events the calls record
// nothing and generate no code. Proton's intra-kernel instrumentation is the model; the names are ours.
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tilejit/lang/ops.hpp"

namespace tilejit {
namespace lang {
/// Record an Op::event node: `kind` 0 = begin, 1 = end; `id_node` an i32 scalar node. Throws InvalidArgument
/// for an empty name, one longer than 64 characters, with a control character, or reserved ("program", "wgmma",
/// "TMA loop %..."); Error outside a trace.
void record_event(std::string_view name, int id_node, int kind);

/// Throws InvalidArgument for a literal id outside the i32 range.
void check_event_id(long long id);

template <class X>
int event_id(const X& x) {
  if constexpr (Literal<X>) {
    static_assert(std::is_integral_v<std::remove_cvref_t<X>>, "a device event's id is an integer");
    check_event_id(static_cast<long long>(x));
    return scalar_constant<std::int32_t>(static_cast<double>(x)).id();
  } else {
    auto t = tile_of(x);
    static_assert(shape_t<decltype(t)>::rank == 0, "a device event's id is a scalar (rank-0 tile), e.g. a loop index");
    static_assert(std::is_same_v<elem_t<decltype(t)>, std::int32_t>, "a device event's id is an i32 scalar");
    return t.id();
  }
}
}  // namespace lang

/// The producer side of the pair (`name`, `id`) in this program: e.g. an asynchronous copy or product is issued.
template <class I = int>
void async_begin(std::string_view name, const I& id = 0) { lang::record_event(name, lang::event_id(id), 0); }

/// The consumer side of the pair (`name`, `id`): its result is in use. Several ends may follow one begin.
template <class I = int>
void async_end(std::string_view name, const I& id = 0) { lang::record_event(name, lang::event_id(id), 1); }

}  // namespace tilejit

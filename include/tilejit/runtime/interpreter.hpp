// tilejit/runtime/interpreter.hpp — the CPU interpreter: executes a traced
// kernel's IR directly, one program (CTA) at a time, on whole tiles in their
// logical (row-major) order. It is the reference semantics of the DSL — no
// layouts, no warps — and what CI uses to check every kernel without a GPU
// (TILEJIT_INTERPRET=1 or Device::interpreter()).
//
// Arithmetic: floats are computed in double and rounded to the node's dtype
// after each operation (f32, f16, bf16 round-to-nearest-even); integers wrap
// at their width. Masked-off lanes of loads and stores never touch memory.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "tilejit/ir/ir.hpp"
#include "tilejit/profiler/launch.hpp"

namespace tilejit::runtime {

/// One launch argument as the interpreter sees it.
struct ArgValue {
  enum class Kind { pointer, integer, floating, descriptor } kind = Kind::integer;
  std::uintptr_t address = 0;  // pointer: host address of element 0; descriptor: of its base
  int rank = 0;                                             // descriptor: 1..5
  std::array<std::int64_t, 5> shape{}, strides{};           // descriptor: elements, outermost first
  bool oob_nan = false;                                     // descriptor: out-of-bounds loads read NaN
  std::int64_t i = 0;
  double f = 0;
};

/// Run `k` over the grid. Programs run in parallel on up to `threads` CPU
/// threads (0 = hardware concurrency); programs must be independent, as on a
/// GPU. Throws InvalidArgument for a null-pointer access by an unmasked lane,
/// a wrong argument count/kind, or an integer division or remainder by zero whose
/// lane reaches a store, a load's address or mask, or a loop bound (naming the node,
/// the element and the division). Lanes that divide by zero but are masked off, or
/// selected away by where(), are not errors: the GPU gives an unspecified value there.
/// Also throws InvalidArgument when an unmasked lane loads or stores outside the
/// Device::interpreter().alloc allocation its pointer or descriptor argument points
/// into (naming the element, the byte offset and the argument); addresses into other
/// host memory (a std::vector passed directly) are not bounds-checked.
/// `events` (not null): the device events (lang/events.hpp) are appended to it — each Op::event with site =
/// its index in k.event_sites, and each program's span with site = k.event_sites.size() ("program"); times from
/// the steady clock (ns), warp 0, `sm` = the CPU worker that ran the program. Null: events are not recorded.
void interpret(const ir::Kernel& k, std::array<unsigned, 3> grid, std::span<const ArgValue> args,
               unsigned threads = 0, std::vector<profiler::DeviceEvent>* events = nullptr);

}  // namespace tilejit::runtime

// Pairing of device events (lang/events.hpp): which end closes which begin.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include <tilejit/profiler/launch.hpp>

namespace tilejit::profiler::detail {

struct DevicePairing {
  struct Pair {
    std::uint32_t begin, end;  // indices into the events
  };
  std::vector<Pair> pairs;          // sorted by (program, site, id, end time)
  std::vector<char> paired;         // per event: part of some pair
  std::size_t unmatched_begins = 0; // begins no end followed
  std::size_t unmatched_ends = 0;   // ends with no earlier begin of their (program, site, id)
};

/// Within each (program, site, id), every end pairs with the latest begin before it (several ends may share one
/// begin: a stage consumed by each consumer warp group). "Before": by `clock` (the SM's cycle counter: a program's
/// warps share one SM), then by position in `events`.
DevicePairing pair_device_events(std::span<const DeviceEvent> events);

}  // namespace tilejit::profiler::detail

#include "device_events.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>

namespace tilejit::profiler::detail {

DevicePairing pair_device_events(std::span<const DeviceEvent> ev) {
  DevicePairing out;
  out.paired.assign(ev.size(), 0);
  std::vector<std::uint32_t> order(ev.size());
  std::iota(order.begin(), order.end(), 0u);
  // Within a program, order by the SM's cycle counter (every warp of a program runs on one SM, and the global timer
  // ticks far more coarsely: back-to-back events often share its value), then by position in the buffer (one
  // thread's records are appended in order).
  auto key = [&](std::uint32_t i) { return std::tuple(ev[i].program, ev[i].site, ev[i].id, ev[i].clock, i); };
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  for (std::size_t g = 0; g < order.size();) {
    std::size_t e = g;
    const DeviceEvent& first = ev[order[g]];
    while (e < order.size() && ev[order[e]].program == first.program && ev[order[e]].site == first.site && ev[order[e]].id == first.id) ++e;
    long latest = -1;  // the latest begin so far in this group
    for (std::size_t j = g; j < e; ++j) {
      const std::uint32_t i = order[j];
      if (ev[i].kind == 0) {
        if (latest >= 0 && !out.paired[static_cast<std::size_t>(latest)]) ++out.unmatched_begins;  // superseded unused
        latest = i;
      } else if (latest < 0) {
        ++out.unmatched_ends;
      } else {
        out.pairs.push_back({static_cast<std::uint32_t>(latest), i});
        out.paired[static_cast<std::size_t>(latest)] = out.paired[i] = 1;
      }
    }
    if (latest >= 0 && !out.paired[static_cast<std::size_t>(latest)]) ++out.unmatched_begins;
    g = e;
  }
  return out;
}

}  // namespace tilejit::profiler::detail

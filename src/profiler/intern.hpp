// Interned scope names and the process-wide metric registry.
//
// Names: an id per distinct string, for the life of the process. Lookups go
// through a thread-local cache first; the shared table takes a mutex only on a
// cache miss. name_of() is lock-free: strings live in fixed chunks that never
// move, published before their id can be seen by another thread.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <tilejit/profiler/metric.hpp>

namespace tilejit::profiler::detail {

using NameId = std::uint32_t;

NameId intern(std::string_view s);
std::string_view name_of(NameId id) noexcept;
NameId root_name() noexcept;  // "ROOT"

struct MetricDesc {
  std::string name;
  MetricType type;
  MetricKind kind;
  bool reserved;  // kernel-record metrics users may not write
};

// Fixed metric ids (registered first, in this order).
inline constexpr std::uint32_t kTimeNs = 0, kCount = 1, kDeviceId = 2, kDeviceType = 3,
                               kFlops8 = 4, kFlops16 = 5, kFlops32 = 6, kFlops64 = 7, kBytes = 8;

/// Id of `name`, registering it with (type, kind) on first use. Throws
/// MetricTypeError on a mismatch, InvalidArgument for reserved names when
/// `user` is set.
std::uint32_t metric_id(std::string_view name, MetricType type, MetricKind kind, bool user = true);

/// Snapshot of every registered metric, indexed by id.
std::vector<MetricDesc> metric_table();

/// The flops metric id of a width (8/16/32/64), or -1.
int flops_metric(int width) noexcept;

}  // namespace tilejit::profiler::detail

// tilejit/profiler/metric.hpp — the values a profile attaches to its scopes.
//
// A metric is a name, a type (int64 or double) and a kind. The first use of a
// name in the process fixes its type and kind; a later use with another type
// or kind throws `MetricTypeError` naming the metric and both types, so that a
// tree can never hold "bytes" as an integer in one node and a double in the
// next.
//
// Kinds (Proton's inc / exc / pty):
//   inclusive  summed at the node where it is added; the writers also report
//              "<name> (inc)", the sum over the node and all its descendants.
//   exclusive  summed at the node; never propagated to its ancestors.
//   property   not summed: the last value written wins; never propagated.
//
// Sums of int64 metrics saturate: a total that would pass INT64_MAX (or
// INT64_MIN) stays there, in the node's own value and in "<name> (inc)" alike,
// rather than wrapping to a meaningless negative (or positive) number. A
// saturated total reads as "at least this much"; recording never throws for it.
// (double metrics follow IEEE arithmetic: they overflow to inf.)
//
// Reserved names: "time (ns)" and "count" (int64, inclusive) are shared with
// kernel records, so a user "count" adds up with kernel invocations;
// "device_id" and "device_type" belong to kernel records only.
#pragma once
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <string_view>
#include <variant>

#include <tilejit/core/error.hpp>

namespace tilejit::profiler {

/// How values of one metric combine; fixed by the metric's first use.
enum class MetricKind : std::uint8_t { inclusive, exclusive, property };

/// The value type of a metric; fixed by the metric's first use.
enum class MetricType : std::uint8_t { int64, float64 };

constexpr std::string_view name(MetricKind k) {
  switch (k) {
    case MetricKind::inclusive: return "inclusive";
    case MetricKind::exclusive: return "exclusive";
    case MetricKind::property: return "property";
  }
  return "?";
}
constexpr std::string_view name(MetricType t) {
  return t == MetricType::int64 ? "int64" : "double";
}

/// One value to attach to the innermost open scope. `name` is copied when the
/// metric is recorded; it need only live as long as this object.
struct Metric {
  std::string_view name;
  std::variant<std::int64_t, double> value;
  MetricKind kind = MetricKind::inclusive;

  Metric(std::string_view n, std::int64_t v, MetricKind k = MetricKind::inclusive)
      : name(n), value(v), kind(k) {}
  Metric(std::string_view n, double v, MetricKind k = MetricKind::inclusive)
      : name(n), value(v), kind(k) {}
  /// Any other integer type is an int64 metric (so {"n", 1} is int64, {"x", 1.0} double).
  /// Any other integer; an unsigned value past INT64_MAX is recorded as INT64_MAX (saturated, as totals are; a
  /// cast would have made it negative).
  template <std::integral I>
    requires(!std::same_as<I, std::int64_t> && !std::same_as<I, bool>)
  Metric(std::string_view n, I v, MetricKind k = MetricKind::inclusive)
      : name(n), value(saturated(v)), kind(k) {}

  template <std::integral I>
  static std::int64_t saturated(I v) {
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(std::int64_t))
      if (v > static_cast<I>(std::numeric_limits<std::int64_t>::max())) return std::numeric_limits<std::int64_t>::max();
    return static_cast<std::int64_t>(v);
  }

  MetricType type() const {
    return value.index() == 0 ? MetricType::int64 : MetricType::float64;
  }
};

/// Floating-point operations at a given width: metric "flops<width>", int64,
/// inclusive. `width` must be 8, 16, 32 or 64, else InvalidArgument.
Metric flops(int width, std::int64_t n);

/// Bytes moved: metric "bytes", int64, inclusive.
inline Metric bytes(std::int64_t n) { return Metric("bytes", n); }

/// A metric name was used with a type or kind other than the one its first use
/// fixed. `registered()` and `attempted()` read like "int64 inclusive".
class MetricTypeError : public Error {
 public:
  MetricTypeError(std::string metric, std::string registered, std::string attempted)
      : Error("metric '" + metric + "' was first used as " + registered + ", now as " +
              attempted + "; a metric keeps one type and kind for the whole process"),
        metric_(std::move(metric)), registered_(std::move(registered)),
        attempted_(std::move(attempted)) {}
  const std::string& metric() const noexcept { return metric_; }
  const std::string& registered() const noexcept { return registered_; }
  const std::string& attempted() const noexcept { return attempted_; }

 private:
  std::string metric_, registered_, attempted_;
};

}  // namespace tilejit::profiler

// tilejit/profiler/rocprofiler_pc_sampling.hpp — the configuration of PC
// sampling on AMD GPUs through rocprofiler-sdk. COMPILE-ONLY and UNTESTED on
// hardware here: no AMD GPU or rocprofiler-sdk is available to this project's
// CI or device runs, so nothing drives rocprofiler with it yet. It fixes the
// settings and their checks so that a rocprofiler backend (or plugin) has one
// documented place to read them from.
//
// What rocprofiler-sdk needs (rocprofiler-sdk/pc_sampling.h, ROCm >= 6.2):
//   rocprofiler_configure_pc_sampling_service(context_id, agent_id, method,
//                                             unit, interval, buffer_id, flags)
// with
//   method  ROCPROFILER_PC_SAMPLING_METHOD_HOST_TRAP   (unit TIME, interval in µs;
//           a host thread interrupts waves: any supported Instinct GPU)
//           ROCPROFILER_PC_SAMPLING_METHOD_STOCHASTIC  (unit CYCLES, interval a
//           power of two; hardware sampling, MI300 (gfx942) and later; gives
//           issue/stall reasons per sample)
//   a buffered service: a context and a buffer are created in tool_init, and
//   the agent's supported configurations can be listed first with
//   rocprofiler_query_pc_sampling_agent_configurations. The feature is beta:
//   rocprofiler only enables it with ROCPROFILER_PC_SAMPLING_BETA_ENABLED=1.
// Samples carry the PC as (code object id, offset); source lines come from the
// code object's DWARF (kernels built with -g / line info).
#pragma once
#include <cstdint>
#include <string_view>

namespace tilejit::profiler::rocm {

struct PcSamplingConfig {
  enum class Method : std::uint8_t {
    host_trap,   ///< ROCPROFILER_PC_SAMPLING_METHOD_HOST_TRAP; interval in microseconds
    stochastic,  ///< ROCPROFILER_PC_SAMPLING_METHOD_STOCHASTIC; interval in cycles, a power of two
  };
  enum class Unit : std::uint8_t {
    time,    ///< ROCPROFILER_PC_SAMPLING_UNIT_TIME (microseconds)
    cycles,  ///< ROCPROFILER_PC_SAMPLING_UNIT_CYCLES
  };
  Method method = Method::host_trap;
  /// Microseconds (host_trap) or cycles (stochastic). 0: the method's default below.
  std::uint64_t interval = 0;
  /// Bytes of the rocprofiler buffer the samples are delivered to, and bytes
  /// filled before rocprofiler calls back (rocprofiler_create_buffer's size and watermark).
  std::uint64_t buffer_size = 8ull << 20;
  std::uint64_t watermark = 4ull << 20;

  static constexpr std::uint64_t kDefaultHostTrapUs = 1;             // 1 µs
  static constexpr std::uint64_t kDefaultStochasticCycles = 1u << 20;  // 2^20 cycles

  /// The unit rocprofiler expects for the method.
  constexpr Unit unit() const { return method == Method::host_trap ? Unit::time : Unit::cycles; }
  constexpr std::uint64_t effective_interval() const {
    if (interval != 0) return interval;
    return method == Method::host_trap ? kDefaultHostTrapUs : kDefaultStochasticCycles;
  }
  /// "" when the configuration is one rocprofiler accepts, else why not.
  constexpr std::string_view problem() const {
    const std::uint64_t i = effective_interval();
    if (method == Method::stochastic && (i & (i - 1)) != 0)
      return "stochastic PC sampling needs an interval that is a power of two (cycles)";
    if (method == Method::host_trap && i > 1'000'000)
      return "a host-trap interval above 1 s (1e6 µs) samples almost nothing";
    if (buffer_size < 4096) return "the sample buffer must be at least 4 KiB";
    if (watermark == 0 || watermark > buffer_size) return "the watermark must be in (0, buffer_size]";
    return {};
  }
  constexpr bool valid() const { return problem().empty(); }
};

constexpr std::string_view name(PcSamplingConfig::Method m) {
  return m == PcSamplingConfig::Method::host_trap ? "host_trap" : "stochastic";
}
constexpr std::string_view name(PcSamplingConfig::Unit u) {
  return u == PcSamplingConfig::Unit::time ? "time" : "cycles";
}

}  // namespace tilejit::profiler::rocm

// src/predict/features.cpp — see tilejit/predict/features.hpp.
#include "tilejit/predict/features.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tilejit::predict {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Datasheet figures (dense, no sparsity): NVIDIA H100/H200 SXM and A100 SXM, AMD MI300X.
const std::array<DeviceSpec, 5> kSpecs{{
    {"H200", 132, 4.8e12, 1978.9e12, 989.4e12, 494.7e12, 228 * 1024, 65536, 2048, 32},
    {"H100", 132, 3.35e12, 1978.9e12, 989.4e12, 494.7e12, 228 * 1024, 65536, 2048, 32},
    {"A100", 108, 2.039e12, 624e12, 312e12, 156e12, 164 * 1024, 65536, 2048, 32},
    {"MI300X", 304, 5.3e12, 2614.9e12, 1307.4e12, 653.7e12, 64 * 1024, 131072, 2048, 32},
    {"interpreter", 1, 2e10, 1e11, 1e11, 1e11, 228 * 1024, 65536, 2048, 32},
}};

double log2_or_nan(double x) { return x > 0 && std::isfinite(x) ? std::log2(x) : kNaN; }

double peak_flops(const DeviceSpec& d, int bits) {
  if (bits <= 8) return d.flops_per_s_8;
  if (bits <= 16) return d.flops_per_s_16;
  return d.flops_per_s_32;
}

/// Programs of this kernel resident on one SM: the least of the four limits (at least 1: a program that fits nowhere
/// does not launch, which the tuner finds out; the feature stays finite).
double resident_programs(const KernelSummary& k, const DeviceSpec& d) {
  const int threads = k.threads > 0 ? k.threads : k.num_warps * 32;
  double r = d.programs_per_sm;
  r = std::min(r, std::floor(static_cast<double>(d.threads_per_sm) / threads));
  if (k.shared_bytes > 0) r = std::min(r, std::floor(static_cast<double>(d.smem_per_sm) / k.shared_bytes));
  // Registers: the carried tiles and the largest live tile, plus a base for addresses and indices; at most 255.
  const double regs = std::clamp(24.0 + k.carried_regs + k.tile_regs, 24.0, 255.0);
  r = std::min(r, std::floor(d.regs_per_sm / (regs * threads)));
  return std::max(r, 1.0);
}

struct Derived {
  double resident, waves, fill, t_compute_us, t_memory_us, t_est_us;
};

Derived derive(const Point& p, const DeviceSpec& d) {
  Derived r{};
  r.resident = resident_programs(p.kernel, d);
  const double slots = r.resident * d.num_sms;
  r.waves = static_cast<double>(p.launch.programs) / slots;
  r.fill = r.waves / std::ceil(r.waves);
  const int bits = p.launch.flops_width ? p.launch.flops_width : p.kernel.dot_bits ? p.kernel.dot_bits : 16;
  r.t_compute_us = p.launch.flops / peak_flops(d, bits) * 1e6;  // NaN stays NaN
  r.t_memory_us = p.launch.bytes / d.dram_bytes_per_s * 1e6;
  r.t_est_us = std::max(r.t_compute_us, r.t_memory_us) / r.fill;
  if (std::isnan(p.launch.flops) || std::isnan(p.launch.bytes)) r.t_est_us = kNaN;
  return r;
}

}  // namespace

DeviceSpec device_spec(std::string_view name) {
  for (const auto& s : kSpecs)
    if (s.name == name) return s;
  std::vector<std::string> known;
  for (const auto& s : kSpecs) known.push_back(s.name);
  throw InvalidArgument(fmt::format("predict: no device spec named '{}': known are {}", name, fmt::join(known, ", ")));
}

DeviceSpec device_spec(const Device& dev) {
  if (dev.backend() == Backend::interpreter) {
    DeviceSpec s = device_spec("interpreter");
    s.num_sms = std::max(dev.num_sms(), 1);
    return s;
  }
  const std::string n = dev.name();
  for (const auto& s : kSpecs)
    if (s.name != "interpreter" && n.find(s.name) != std::string::npos) return s;
  // Not in the table: the nearest of its architecture, with the device's own SM count.
  DeviceSpec s = dev.backend() == Backend::hip ? device_spec("MI300X") : dev.compute_capability() >= 90 ? device_spec("H100") : device_spec("A100");
  s.name = n;
  s.num_sms = std::max(dev.num_sms(), 1);
  return s;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names{
      "num_warps",        "num_stages",        "threads",          "shared_kib",      "num_ctas",
      "wgmma",            "tma",               "warp_specialized", "dot_m",           "dot_n",
      "dot_k",            "dot_bits",          "carried_regs",     "tile_regs",       "log2_programs",
      "resident",         "waves",             "last_wave_fill",   "log2_flops_per_program",
      "log2_bytes_per_program",                "log2_intensity",   "log2_dot_steps",  "log2_t_compute_us",
      "log2_t_memory_us", "log2_t_est_us",     "rel_t_est",        "rel_programs",    "rel_shared",
      "rel_tile",
  };
  return names;
}

double roofline_us(const Point& p, const DeviceSpec& spec) { return derive(p, spec).t_est_us; }

std::vector<std::vector<float>> group_features(std::span<const Point> group, const DeviceSpec& d) {
  std::vector<Derived> dv;
  dv.reserve(group.size());
  double best_t = kNaN, most_programs = 0, most_shared = 0, biggest_tile = 0;
  for (const Point& p : group) {
    dv.push_back(derive(p, d));
    if (!std::isnan(dv.back().t_est_us) && !(dv.back().t_est_us >= best_t)) best_t = dv.back().t_est_us;
    most_programs = std::max(most_programs, static_cast<double>(p.launch.programs));
    most_shared = std::max(most_shared, static_cast<double>(p.kernel.shared_bytes));
    biggest_tile = std::max(biggest_tile, 1.0 * p.kernel.dot_m * p.kernel.dot_n);
  }
  std::vector<std::vector<float>> out;
  out.reserve(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) {
    const KernelSummary& k = group[i].kernel;
    const LaunchSummary& l = group[i].launch;
    const Derived& r = dv[i];
    const double programs = static_cast<double>(l.programs);
    const double flops_pp = l.flops / programs, bytes_pp = l.bytes / programs;
    const double mnk2 = 2.0 * k.dot_m * k.dot_n * k.dot_k;
    const double na = k.codegen_ok ? 0 : kNaN;  // facts only the generated code knows
    const std::vector<double> v{
        static_cast<double>(k.num_warps),
        static_cast<double>(k.num_stages),
        k.codegen_ok ? k.threads : kNaN,
        k.shared_bytes / 1024.0 + na,
        k.num_ctas + na,
        (k.wgmma ? 1.0 : 0.0) + na,
        (k.tma ? 1.0 : 0.0) + na,
        (k.warp_specialized ? 1.0 : 0.0) + na,
        static_cast<double>(k.dot_m),
        static_cast<double>(k.dot_n),
        static_cast<double>(k.dot_k),
        static_cast<double>(k.dot_bits),
        k.carried_regs,
        k.tile_regs,
        std::log2(programs),
        r.resident,
        r.waves,
        r.fill,
        log2_or_nan(flops_pp),
        log2_or_nan(bytes_pp),
        l.flops > 0 && l.bytes > 0 ? std::log2(l.flops / l.bytes) : kNaN,
        mnk2 > 0 ? log2_or_nan(flops_pp / mnk2) : kNaN,
        log2_or_nan(r.t_compute_us),
        log2_or_nan(r.t_memory_us),
        log2_or_nan(r.t_est_us),
        std::isnan(best_t) || std::isnan(r.t_est_us) ? kNaN : std::log2(r.t_est_us / best_t),
        std::log2(programs / most_programs),
        most_shared > 0 ? k.shared_bytes / most_shared + na : kNaN,
        biggest_tile > 0 ? k.dot_m * k.dot_n / biggest_tile : kNaN,
    };
    if (v.size() != feature_names().size()) throw std::logic_error("predict: feature vector and names differ in length");
    std::vector<float> f(v.size());
    // Missing, not infinite: a value past float's range (or an estimate over a zero best) is NaN to XGBoost, which
    // refuses a matrix holding inf.
    std::transform(v.begin(), v.end(), f.begin(), [](double x) {
      const float y = static_cast<float>(x);
      return std::isfinite(y) ? y : std::numeric_limits<float>::quiet_NaN();
    });
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace tilejit::predict

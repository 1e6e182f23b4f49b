// src/predict/dataset.cpp — see tilejit/predict/dataset.hpp.
#include "tilejit/predict/dataset.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <nlohmann/json.hpp>
#include <sstream>

#include "output_path.hpp"
#include "tilejit/runtime/atomic_file.hpp"

namespace tilejit::predict {
namespace {

using json = nlohmann::json;
constexpr const char* kFormat = "tilejit-predict-data";
constexpr int kVersion = 1;

json num(double x) { return std::isnan(x) ? json(nullptr) : json(x); }

double get_num(const json& j, const char* name) {
  if (!j.contains(name)) throw std::runtime_error(fmt::format("no \"{}\"", name));
  const json& v = j.at(name);
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number()) throw std::runtime_error(fmt::format("\"{}\" is not a number", name));
  return v.get<double>();
}
int get_int(const json& j, const char* name) {
  const double v = get_num(j, name);
  if (!(v == std::floor(v)) || std::fabs(v) > 2147483647.0) throw std::runtime_error(fmt::format("\"{}\" is not an integer", name));
  return static_cast<int>(v);
}
bool get_bool(const json& j, const char* name) {
  if (!j.contains(name) || !j.at(name).is_boolean()) throw std::runtime_error(fmt::format("\"{}\" is not true or false", name));
  return j.at(name).get<bool>();
}
std::string get_str(const json& j, const char* name) {
  if (!j.contains(name) || !j.at(name).is_string()) throw std::runtime_error(fmt::format("\"{}\" is not a string", name));
  return j.at(name).get<std::string>();
}

json to_json(const DeviceSpec& d) {
  return {{"name", d.name},
          {"num_sms", d.num_sms},
          {"dram_bytes_per_s", d.dram_bytes_per_s},
          {"flops_per_s_8", d.flops_per_s_8},
          {"flops_per_s_16", d.flops_per_s_16},
          {"flops_per_s_32", d.flops_per_s_32},
          {"smem_per_sm", d.smem_per_sm},
          {"regs_per_sm", d.regs_per_sm},
          {"threads_per_sm", d.threads_per_sm},
          {"programs_per_sm", d.programs_per_sm}};
}
DeviceSpec spec_from_json(const json& j) {
  DeviceSpec d;
  d.name = get_str(j, "name");
  d.num_sms = get_int(j, "num_sms");
  d.dram_bytes_per_s = get_num(j, "dram_bytes_per_s");
  d.flops_per_s_8 = get_num(j, "flops_per_s_8");
  d.flops_per_s_16 = get_num(j, "flops_per_s_16");
  d.flops_per_s_32 = get_num(j, "flops_per_s_32");
  d.smem_per_sm = get_int(j, "smem_per_sm");
  d.regs_per_sm = get_int(j, "regs_per_sm");
  d.threads_per_sm = get_int(j, "threads_per_sm");
  d.programs_per_sm = get_int(j, "programs_per_sm");
  if (d.num_sms < 1 || !(d.dram_bytes_per_s > 0) || !(d.flops_per_s_8 > 0) || !(d.flops_per_s_16 > 0) || !(d.flops_per_s_32 > 0) ||
      d.smem_per_sm < 1 || d.regs_per_sm < 1 || d.threads_per_sm < 1 || d.programs_per_sm < 1)
    throw std::runtime_error("the device spec has a count or peak that is not positive");
  return d;
}

json to_json(const KernelSummary& k) {
  return {{"num_warps", k.num_warps}, {"num_stages", k.num_stages}, {"threads", k.threads},
          {"shared_bytes", k.shared_bytes}, {"num_ctas", k.num_ctas}, {"wgmma", k.wgmma},
          {"tma", k.tma}, {"warp_specialized", k.warp_specialized}, {"codegen_ok", k.codegen_ok},
          {"dots", k.dots}, {"dot_m", k.dot_m}, {"dot_n", k.dot_n}, {"dot_k", k.dot_k}, {"dot_bits", k.dot_bits},
          {"loads", k.loads}, {"stores", k.stores}, {"loops", k.loops},
          {"carried_regs", k.carried_regs}, {"tile_regs", k.tile_regs}};
}
KernelSummary kernel_from_json(const json& j) {
  KernelSummary k;
  k.num_warps = get_int(j, "num_warps");
  k.num_stages = get_int(j, "num_stages");
  k.threads = get_int(j, "threads");
  k.shared_bytes = get_int(j, "shared_bytes");
  k.num_ctas = get_int(j, "num_ctas");
  k.wgmma = get_bool(j, "wgmma");
  k.tma = get_bool(j, "tma");
  k.warp_specialized = get_bool(j, "warp_specialized");
  k.codegen_ok = get_bool(j, "codegen_ok");
  k.dots = get_int(j, "dots");
  k.dot_m = get_int(j, "dot_m");
  k.dot_n = get_int(j, "dot_n");
  k.dot_k = get_int(j, "dot_k");
  k.dot_bits = get_int(j, "dot_bits");
  k.loads = get_int(j, "loads");
  k.stores = get_int(j, "stores");
  k.loops = get_int(j, "loops");
  k.carried_regs = get_num(j, "carried_regs");
  k.tile_regs = get_num(j, "tile_regs");
  return k;
}

/// The largest program count stored exactly (a double's integers).
constexpr double kMaxPrograms = 9007199254740992.0;  // 2^53

/// The first field in which two specs differ, as "name a vs b".
std::string spec_difference(const DeviceSpec& a, const DeviceSpec& b) {
  const json ja = to_json(a), jb = to_json(b);
  for (auto it = ja.begin(); it != ja.end(); ++it)
    if (jb.at(it.key()) != it.value()) return fmt::format("{} {} vs {}", it.key(), it.value().dump(), jb.at(it.key()).dump());
  return "none";
}

/// The rules a sample must keep, on load and on save: a positive finite time, a program count in [1, 2^53], flops and
/// bytes finite and >= 0 or NaN (not derivable). Throws std::runtime_error naming the field.
void check_sample(const Sample& x) {
  if (!(x.ms > 0) || !std::isfinite(x.ms)) throw std::runtime_error(fmt::format("\"ms\" = {} is not a positive time", x.ms));
  if (x.point.launch.programs < 1 || static_cast<double>(x.point.launch.programs) > kMaxPrograms)
    throw std::runtime_error(fmt::format("\"programs\" = {} is not a count in [1, 2^53]", x.point.launch.programs));
  for (const auto& [name, v] : {std::pair{"flops", x.point.launch.flops}, std::pair{"bytes", x.point.launch.bytes}})
    if (!std::isnan(v) && !(v >= 0 && std::isfinite(v)))
      throw std::runtime_error(fmt::format("\"{}\" = {} is neither a finite count >= 0 nor null (not derivable)", name, v));
}

}  // namespace

std::vector<std::vector<std::size_t>> Dataset::groups() const {
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    auto [it, fresh] = index.try_emplace({samples[i].family, samples[i].key}, out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(i);
  }
  return out;
}

std::vector<std::string> Dataset::families() const {
  std::vector<std::string> out;
  for (const auto& s : samples)
    if (std::find(out.begin(), out.end(), s.family) == out.end()) out.push_back(s.family);
  return out;
}

std::vector<std::vector<float>> Dataset::features() const {
  std::vector<std::vector<float>> x(samples.size());
  for (const auto& g : groups()) {
    std::vector<Point> pts;
    pts.reserve(g.size());
    for (std::size_t i : g) pts.push_back(samples[i].point);
    auto f = group_features(pts, device);
    for (std::size_t j = 0; j < g.size(); ++j) x[g[j]] = std::move(f[j]);
  }
  return x;
}

Dataset load_dataset(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InvalidArgument(fmt::format("predict: cannot open dataset '{}'", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  Dataset d;
  std::optional<std::size_t> at;  // the sample being read
  try {
    const json j = json::parse(ss.str());
    if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
      throw std::runtime_error(fmt::format("it is not a \"{}\" file", kFormat));
    const int v = get_int(j, "version");
    if (v != kVersion) throw std::runtime_error(fmt::format("its version {} is not {} (this build's)", v, kVersion));
    if (!j.contains("device") || !j["device"].is_object()) throw std::runtime_error("no \"device\" object");
    d.device = spec_from_json(j.at("device"));
    if (!j.contains("samples") || !j["samples"].is_array()) throw std::runtime_error("no \"samples\" array");
    std::set<std::tuple<std::string, std::string, std::string>> seen;
    at = 0;
    for (const json& s : j["samples"]) {
      Sample x;
      x.family = get_str(s, "family");
      x.key = get_str(s, "key");
      x.config = get_str(s, "config");
      x.ms = get_num(s, "ms");
      if (!s.contains("kernel") || !s["kernel"].is_object() || !s.contains("launch") || !s["launch"].is_object())
        throw std::runtime_error("no \"kernel\" and \"launch\" objects");
      x.point.kernel = kernel_from_json(s.at("kernel"));
      const json& l = s.at("launch");
      const double programs = get_num(l, "programs");
      if (!(programs >= 1 && programs <= kMaxPrograms) || programs != std::floor(programs))
        throw std::runtime_error(fmt::format("\"programs\" = {} is not a count in [1, 2^53]", programs));
      x.point.launch.programs = static_cast<long long>(programs);
      x.point.launch.flops = get_num(l, "flops");
      x.point.launch.bytes = get_num(l, "bytes");
      x.point.launch.flops_width = get_int(l, "flops_width");
      check_sample(x);
      if (!seen.emplace(x.family, x.key, x.config).second)
        throw std::runtime_error(fmt::format("config \"{}\" of {} {{{}}} appears twice (tuned the same key twice?)", x.config, x.family, x.key));
      d.samples.push_back(std::move(x));
      ++*at;
    }
  } catch (const std::exception& e) {
    throw InvalidArgument(fmt::format("predict: dataset '{}'{}: {}", file.string(), at ? fmt::format(", sample {}", *at) : std::string(),
                                      e.what()));
  }
  return d;
}

Dataset load_datasets(const std::vector<std::filesystem::path>& files) {
  if (files.empty()) throw InvalidArgument("predict: no dataset files given");
  Dataset all = load_dataset(files.front());
  for (std::size_t i = 1; i < files.size(); ++i) {
    Dataset d = load_dataset(files[i]);
    if (!(d.device == all.device))
      throw InvalidArgument(fmt::format("predict: '{}' was measured on {} and '{}' on {} (device specs differ: {}): one model per device",
                                        files.front().string(), all.device.name, files[i].string(), d.device.name,
                                        spec_difference(all.device, d.device)));
    std::set<std::tuple<std::string, std::string, std::string>> seen;
    for (const auto& s : all.samples) seen.emplace(s.family, s.key, s.config);
    for (auto& s : d.samples) {
      if (seen.contains({s.family, s.key, s.config}))
        throw InvalidArgument(fmt::format("predict: '{}' measures config \"{}\" of {} {{{}}} again (an earlier file has it): each "
                                          "sample once",
                                          files[i].string(), s.config, s.family, s.key));
      all.samples.push_back(std::move(s));
    }
  }
  return all;
}

void save_dataset(const Dataset& d, const std::filesystem::path& file) {
  const std::filesystem::path to = detail::output_path(file, "dataset");
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (std::size_t i = 0; i < d.samples.size(); ++i) {
    try {
      const Sample& x = d.samples[i];
      check_sample(x);
      if (!seen.emplace(x.family, x.key, x.config).second)
        throw std::runtime_error(fmt::format("config \"{}\" of {} {{{}}} appears twice (tuned the same key twice?)", x.config, x.family, x.key));
    } catch (const std::exception& e) {
      throw InvalidArgument(fmt::format("predict: not writing dataset '{}': sample {}: {}", file.string(), i, e.what()));
    }
  }
  json samples = json::array();
  for (const Sample& s : d.samples)
    samples.push_back({{"family", s.family},
                       {"key", s.key},
                       {"config", s.config},
                       {"ms", s.ms},
                       {"kernel", to_json(s.point.kernel)},
                       {"launch",
                        {{"programs", s.point.launch.programs},
                         {"flops", num(s.point.launch.flops)},
                         {"bytes", num(s.point.launch.bytes)},
                         {"flops_width", s.point.launch.flops_width}}}});
  const json j{{"format", kFormat}, {"version", kVersion}, {"device", to_json(d.device)}, {"samples", std::move(samples)}};
  if (const std::string err = runtime::write_file_atomically(to, j.dump(1) + "\n"); !err.empty())
    throw InvalidArgument(fmt::format("predict: cannot write dataset '{}': {}", file.string(), err));
}

}  // namespace tilejit::predict

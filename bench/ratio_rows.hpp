// bench/ratio_rows.hpp — how bench/ratio_reporter.hpp pairs a tilejit benchmark row with its cuBLAS baseline (pure
// functions of the row names; no Google Benchmark dependency, so the tests can include it).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace bench::ratio_rows {

/// "BM_CublasTN<>/8192/96/8192" -> "BM_CublasTN"; "BM_CublasTN/large/..." -> "BM_CublasTN".
inline std::string family_of(const std::string& name) {
  std::string f = name.substr(0, name.find('/'));
  if (const auto p = f.find('<'); p != std::string::npos) f.resize(p);
  return f;
}
/// "M/N/K" from the last three integer components ("batch/M/N/K", the last four, for a family named "...Batched..."),
/// or nothing.
inline std::optional<std::string> shape_of(const std::string& name) {
  const std::size_t dims = family_of(name).find("Batched") != std::string::npos ? 4 : 3;
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (at <= name.size()) {
    const auto next = name.find('/', at);
    parts.push_back(name.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 1;
  }
  if (parts.size() < dims + 1) return std::nullopt;
  std::string shape;
  for (std::size_t i = parts.size() - dims; i < parts.size(); ++i) {
    if (parts[i].empty() || parts[i].find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    shape += (shape.empty() ? "" : "/") + parts[i];
  }
  return shape;
}
/// The cuBLAS family a tilejit row is compared with (see the file comment).
inline std::string baseline_of(const std::string& name) {
  const std::string f = family_of(name);
  auto has = [&](const char* s) { return f.find(s) != std::string::npos; };
  if (has("Batched")) return has("Bf16") ? "BM_CublasBatchedBf16Out" : "BM_CublasBatched";
  if (has("F8")) return "BM_CublasLtF8";
  if (has("I8")) return "BM_CublasI8";
  if (has("TF32")) return "BM_CublasTF32";
  if (has("F16")) return "BM_CublasTNF16";
  if (has("F32")) return "BM_CublasTN";  // BM_TilejitV6StoreF32: an f32 C through the store path
  if (has("Bf16Out") || has("Store") || has("Fused")) return "BM_CublasTNBf16Out";
  if (f == "BM_TilejitV1" || f == "BM_TilejitV2" || f == "BM_TilejitV3" || f == "BM_TilejitV4") return "BM_Cublas";
  return "BM_CublasTN";
}

}  // namespace bench::ratio_rows

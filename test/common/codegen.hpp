// Checks on generated kernels shared by the code-generation tests: whether a
// diagnostic was reported, and whether NVRTC compiles the text for sm_90a.
#pragma once
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tilejit/tilejit.hpp"

namespace testing {

/// True when one of g's diagnostics contains `text`.
inline bool has_diagnostic(const tilejit::codegen::Generated& g, const std::string& text) {
  for (const auto& d : g.diagnostics)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

/// The specialisation of a launch whose arguments are all "16": pointers 16-byte aligned, integers divisible by 16,
/// descriptors with rows of whole 16-byte chunks (what a TMA store needs).
inline tilejit::ir::Specialization all_div16(const tilejit::ir::Kernel& k) {
  tilejit::ir::Specialization s;
  s.flags.assign(k.params.size(), tilejit::ir::Specialization::kDiv16);
  return s;
}

/// NVRTC's result for `src` (named `name` in its log) on `arch` with `options`; nullopt when NVRTC is absent.
inline std::optional<tilejit::runtime::JitResult> compile_for(const std::string& src, const std::string& arch, const std::string& name,
                                                              std::vector<std::string> options = {}) {
  std::string why;
  if (!tilejit::runtime::compiler_available(tilejit::runtime::Compiler::nvrtc, &why)) return std::nullopt;
  tilejit::runtime::JitRequest req;
  req.source = src;
  req.name = name;
  req.arch = arch;
  req.options = std::move(options);
  return tilejit::runtime::compile(req);
}
inline std::optional<tilejit::runtime::JitResult> compile_sm90a(const std::string& src, const std::string& name,
                                                                std::vector<std::string> options = {}) {
  return compile_for(src, "sm_90a", name, std::move(options));
}

/// hiprtc (or clang, as the runtime picks) compiles `src` for gfx942 to a non-empty code object; skipped where no
/// HIP compiler is installed.
inline void compiles_for_gfx942(const std::string& src, const std::string& name) {
  std::string why;
  if (!tilejit::runtime::compiler_available(tilejit::runtime::Compiler::hiprtc, &why)) return;
  tilejit::runtime::JitRequest req;
  req.source = src;
  req.name = name;
  req.arch = "gfx942";
  req.compiler = tilejit::runtime::Compiler::hiprtc;
  CHECK(!tilejit::runtime::compile(req).binary.bytes.empty());
}

/// NVRTC compiles `src` (named `name` in its log) for `arch` to a non-empty binary; skipped when NVRTC is absent.
inline void compiles_for(const std::string& src, const std::string& arch, const std::string& name) {
  if (const auto res = compile_for(src, arch, name)) CHECK(!res->binary.bytes.empty());
}

/// NVRTC compiles `src` (named `name` in its log) for sm_90a to a non-empty binary; skipped when NVRTC is absent.
inline void compiles_for_sm90a(const std::string& src, const std::string& name) {
  if (const auto res = compile_sm90a(src, name)) CHECK(!res->binary.bytes.empty());
}

/// NVRTC compiles `src` for sm_90a with ptxas -v: a binary, 0 bytes of spill stores and loads, no serialised
/// wgmma; the registers used go to the test log. Skipped when NVRTC is absent.
inline void compiles_for_sm90a_without_spills(const std::string& src, const std::string& name) {
  CAPTURE(name);
  const auto res = compile_sm90a(src, name, {"--ptxas-options=-v"});
  if (!res) return;
  CHECK(!res->binary.bytes.empty());
  std::smatch m;
  REQUIRE(std::regex_search(res->log, m, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)")));
  CHECK(std::stoi(m[1]) == 0);
  CHECK(std::stoi(m[2]) == 0);
  CHECK(res->log.find("wgmma.mma_async instructions are serialized") == std::string::npos);
  MESSAGE(name, ": ", std::regex_search(res->log, m, std::regex(R"(Used (\d+) registers)")) ? m[0].str() : "?");
}

}  // namespace testing

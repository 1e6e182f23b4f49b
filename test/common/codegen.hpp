// Checks on generated kernels shared by the code-generation tests: whether a
// diagnostic was reported, and whether NVRTC compiles the text for sm_90a.
#pragma once
#include <string>

#include <doctest/doctest.h>

#include "tilejit/tilejit.hpp"

namespace testing {

/// True when one of g's diagnostics contains `text`.
inline bool has_diagnostic(const tilejit::codegen::Generated& g, const std::string& text) {
  for (const auto& d : g.diagnostics)
    if (d.find(text) != std::string::npos) return true;
  return false;
}

/// NVRTC compiles `src` (named `name` in its log) for sm_90a to a non-empty binary; skipped when NVRTC is absent.
inline void compiles_for_sm90a(const std::string& src, const std::string& name) {
  std::string why;
  if (!tilejit::runtime::compiler_available(tilejit::runtime::Compiler::nvrtc, &why)) return;
  tilejit::runtime::JitRequest req;
  req.source = src;
  req.name = name;
  req.arch = "sm_90a";
  CHECK(!tilejit::runtime::compile(req).binary.bytes.empty());
}

}  // namespace testing

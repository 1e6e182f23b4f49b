// src/runtime/jit.cpp — compile dispatch and compiler-error formatting.
#include "tilejit/runtime/jit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>

#include "atomic_file.hpp"
#include "jit_internal.hpp"

namespace tilejit::runtime {

bool compiler_available(Compiler c, std::string* why) {
  return c == Compiler::nvrtc ? detail::nvrtc_available(why) : detail::hip_available(why);
}

std::string compiler_version(Compiler c) {
  return c == Compiler::nvrtc ? detail::nvrtc_version() : detail::hip_version();
}

namespace {

/// TILEJIT_DUMP_DIR: where a request's dump goes — <name without .cu / .hip>-<arch> in that directory (created) —
/// and the source's extension: ".cu" for NVRTC, ".hip" for HIP (the log is <stem>.log).
struct DumpPaths {
  std::filesystem::path stem;
  std::string source_ext;
};
std::optional<DumpPaths> dump_paths(const JitRequest& req) {
  const char* dir = std::getenv("TILEJIT_DUMP_DIR");
  if (!dir || !*dir) return std::nullopt;
  std::string stem = req.name;
  for (std::string_view ext : {".cu", ".hip"})
    if (stem.size() > ext.size() && stem.ends_with(ext)) {
      stem.resize(stem.size() - ext.size());
      break;
    }
  std::replace(stem.begin(), stem.end(), '/', '_');
  return DumpPaths{std::filesystem::path(dir) / fmt::format("{}-{}", stem, req.arch), req.compiler == Compiler::nvrtc ? ".cu" : ".hip"};
}

/// Writes `text` to `path` (write_file_atomically: parallel compiles of one kernel write the same bytes). A
/// failure is reported once per process on stderr and never fails the compile.
void dump_file(const std::filesystem::path& path, const std::string& text) {
  const std::string err = detail::write_file_atomically(path, text);
  if (err.empty()) return;
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr, "[tilejit] TILEJIT_DUMP_DIR: cannot write %s (%s); kernels are compiled without their dump\n",
                 path.string().c_str(), err.c_str());
  });
}

}  // namespace

JitResult compile(const JitRequest& req) {
  if (req.arch.empty())
    throw InvalidArgument("JitRequest::arch is empty: name a target such as sm_90a or gfx942");
  if (req.name.empty()) throw InvalidArgument("JitRequest::name is empty: give the source a file name");
  // The target lives in `arch` only, so that it is part of every cache key once.
  for (const auto& o : req.options)
    for (const char* p : {"-arch", "--gpu-architecture", "--offload-arch"})
      if (o.rfind(p, 0) == 0)
        throw InvalidArgument(fmt::format(
            "JitRequest::options contains '{}': set the target with JitRequest::arch", o));
  // TILEJIT_DUMP_DIR: the source before the compiler runs (so a source it rejects is there too), its log after.
  const auto dump = dump_paths(req);
  if (dump) dump_file(dump->stem.string() + dump->source_ext, req.source);
  try {
    JitResult r = req.compiler == Compiler::nvrtc ? detail::nvrtc_compile(req) : detail::hip_compile(req);
    if (dump) dump_file(dump->stem.string() + ".log", r.log);
    return r;
  } catch (const CompileError& e) {
    if (dump) dump_file(dump->stem.string() + ".log", e.what());
    throw;
  }
}

std::string source_excerpt(const std::string& source, int line, int before, int after) {
  if (line < 1) return {};
  std::vector<std::string_view> lines;
  std::string_view rest(source);
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
  }
  const int count = static_cast<int>(lines.size());
  if (line > count) return {};
  const int first = static_cast<int>(std::max<long long>(1, static_cast<long long>(line) - std::max(0, before)));
  const int last = static_cast<int>(std::min<long long>(count, static_cast<long long>(line) + std::max(0, after)));  // no int overflow
  const int width = static_cast<int>(std::to_string(last).size());
  std::string out;
  for (int i = first; i <= last; ++i)
    out += fmt::format("{} {:>{}} | {}\n", i == line ? '>' : ' ', i, width, lines[i - 1]);
  return out;
}

namespace detail {

int first_error_line(const std::string& log) {
  // NVRTC (EDG): "kernel.cu(12): error: ..."; clang/hiprtc: "kernel.cu:12:5: error: ...".
  static const std::regex edg(R"(\((\d+)\): (?:catastrophic )?error)");
  static const std::regex clang(R"(:(\d+):(?:\d+:)? (?:fatal )?error)");
  std::istringstream in(log);
  std::string l;
  std::smatch m;
  while (std::getline(in, l))
    if (std::regex_search(l, m, edg) || std::regex_search(l, m, clang)) return std::stoi(m[1].str());
  return 0;
}

void throw_compile_error(const char* compiler, const JitRequest& req, const std::string& reason,
                         std::string log) {
  const int line = first_error_line(log);
  std::string excerpt = source_excerpt(req.source, line);
  std::string what = fmt::format("{} could not compile {} for {}: {}", compiler, req.name, req.arch, reason);
  if (!log.empty()) what += "\n" + log;
  if (!excerpt.empty()) what += fmt::format("\n{} around line {}:\n{}", req.name, line, excerpt);
  throw CompileError(std::move(what), compiler, std::move(log), std::move(excerpt));
}

}  // namespace detail
}  // namespace tilejit::runtime

// src/runtime/dl.hpp — a tiny dlopen/dlsym helper (private to the runtime).
//
// GPU libraries are loaded at first use so that a program built with tilejit
// starts on a machine without them. Libraries are opened once per process and
// never closed: their function pointers are cached all over the runtime.
#pragma once
#include <string>
#include <vector>

namespace tilejit::runtime::detail {

/// An opened shared library, or the reason none of the candidates loaded.
struct Library {
  void* handle = nullptr;  // dlopen handle; nullptr when loading failed
  std::string path;        // the candidate that loaded
  std::string error;       // when handle == nullptr: every name tried, with dlerror()

  explicit operator bool() const { return handle != nullptr; }
  /// dlsym(handle, name); nullptr when absent (or when the library is not loaded).
  void* symbol(const char* name) const;
  /// The file actually mapped (symlinks resolved), "" if unknown.
  std::string real_path() const;
};

/// Opens the first of `candidates` that dlopen accepts (RTLD_NOW | RTLD_LOCAL).
/// The result, success or failure, is cached per candidate list for the life of
/// the process. Thread-safe; never throws except std::bad_alloc.
const Library& open_library(const std::vector<std::string>& candidates);

}  // namespace tilejit::runtime::detail

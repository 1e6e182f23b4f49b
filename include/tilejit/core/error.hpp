// tilejit/core/error.hpp — the typed errors every layer throws.
//
// Rule: bad input is reported with the offending value and the rule it broke,
// as one of these types, before anything reaches a driver. Catch
// `tilejit::Error` to catch everything tilejit throws.
#pragma once
#include <stdexcept>
#include <string>

namespace tilejit {

/// Base of every tilejit exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A caller passed a bad value (null/misaligned pointer, zero grid, negative
/// size, wrong argument count ...). The message names the value and the rule.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// A layout operation that is not representable, or an invalid layout
/// (e.g. a radix-3 input digit mapped onto a radix-2 output digit).
class LayoutError : public Error {
 public:
  using Error::Error;
};

/// The traced kernel uses something this version cannot lower.
class Unsupported : public Error {
 public:
  using Error::Error;
};

/// NVRTC or hiprtc rejected generated source. Carries the compiler log and
/// the generated source lines around the first error.
class CompileError : public Error {
 public:
  CompileError(std::string what, std::string compiler, std::string log, std::string excerpt)
      : Error(std::move(what)), compiler_(std::move(compiler)), log_(std::move(log)),
        excerpt_(std::move(excerpt)) {}
  const std::string& compiler() const noexcept { return compiler_; }
  const std::string& log() const noexcept { return log_; }
  const std::string& excerpt() const noexcept { return excerpt_; }

 private:
  std::string compiler_, log_, excerpt_;
};

/// No driver, no GPU, or a device of the wrong architecture. The interpreter
/// keeps working when this is thrown for a GPU backend.
class DeviceUnavailable : public Error {
 public:
  using Error::Error;
};

/// A driver call failed. Carries the call name and the driver's code.
class DriverError : public Error {
 public:
  DriverError(std::string what, std::string call, int code)
      : Error(std::move(what)), call_(std::move(call)), code_(code) {}
  const std::string& call() const noexcept { return call_; }
  int code() const noexcept { return code_; }

 private:
  std::string call_;
  int code_;
};

/// Reserved for on-disk kernel cache failures; this version throws none. An
/// unusable cache directory (unwritable, or a file in its place) degrades to
/// memory-only caching with a warning on stderr, and corrupt or unreadable
/// entries are rebuilt (runtime/cache.hpp; test/runtime/test_cache.cpp).
class CacheError : public Error {
 public:
  using Error::Error;
};

}  // namespace tilejit

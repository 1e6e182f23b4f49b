// Text helpers for tests that inspect generated source and diagnostics.
#pragma once
#include <cstddef>
#include <string>

namespace testing {

/// Occurrences of `what` in `s`, overlapping ones included.
inline std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace testing

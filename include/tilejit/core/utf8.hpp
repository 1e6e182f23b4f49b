// tilejit/core/utf8.hpp — well-formed UTF-8, for text that must stay valid (JSON, HTML, a terminal) when a name may
// hold any bytes (profiler scope names, MessagePack strings).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace tilejit {

/// The length (1–4) of the well-formed UTF-8 sequence that starts at s[i], or 0 where s[i] starts none: RFC 3629,
/// section 4 (no overlong forms, no surrogates U+D800..U+DFFF, nothing past U+10FFFF). i < s.size().
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char u = byte(i);
  if (u < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range, from the lead byte
  if (u >= 0xC2 && u <= 0xDF) {
    n = 2;
  } else if (u >= 0xE0 && u <= 0xEF) {
    n = 3;
    if (u == 0xE0) lo = 0xA0;  // no overlongs
    if (u == 0xED) hi = 0x9F;  // no surrogates
  } else if (u >= 0xF0 && u <= 0xF4) {
    n = 4;
    if (u == 0xF0) lo = 0x90;  // no overlongs
    if (u == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  }
  if (n == 0 || i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

/// Whether every byte of s belongs to a well-formed UTF-8 sequence.
inline bool utf8_valid(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// s with each byte outside a well-formed sequence written as the four characters \xHH (lower-case hex); the
/// well-formed text unchanged. With `escape_backslash`, each backslash is written \x5c too, which makes the
/// escaping one-to-one (without it, the raw byte 0xff and the text \xff both come out as \xff); the profile
/// writers set it for every string of a file that holds any stray byte.
inline std::string utf8_escape_invalid(std::string_view s, bool escape_backslash = false) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0 || (escape_backslash && s[i] == '\\')) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace tilejit

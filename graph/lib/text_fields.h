// Internal to the text parsers (SNAP lines and Matrix Market): the blank
// characters between fields and the conversion of one field to a vertex id,
// with the messages a bad field gets.
// Thread rules: pure functions; any thread.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace peregrine::graph::detail {

// What Windows editors put before a UTF-8 file's first line: not part of
// it, for every parser.
inline constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// '\r' is blank so that CRLF lines parse like LF ones.
inline bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

inline const char* skip_blanks(const char* p, const char* e) {
  while (p < e && blank(*p)) ++p;
  return p;
}

// A field as an error message quotes it: at most 40 bytes, and bytes that
// are not printable ASCII (a NUL, an escape sequence of binary input) as
// \xNN, so that a message never carries control bytes to a terminal.
inline std::string shown_token(std::string_view tok) {
  constexpr size_t kShown = 40;
  std::string out;
  for (size_t i = 0; i < tok.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(tok[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (tok.size() > kShown) out += "...";
  return out;
}

// Parses the field at *p (no blanks before it) as an unsigned integer of
// type T and moves *p past it. On failure returns false and sets *error to
// what is wrong, `what` naming the field ("source vertex id").
template <class T>
bool parse_unsigned(const char** p, const char* e, T* out, const char* what, std::string* error) {
  if (*p == e) {
    *error = std::string("expected ") + what + ", found end of line";
    return false;
  }
  const char* end = *p;
  while (end < e && !blank(*end)) ++end;
  auto [ptr, ec] = std::from_chars(*p, end, *out);
  if (ec == std::errc() && ptr == end) {
    *p = end;
    return true;
  }
  std::string_view tok(*p, static_cast<size_t>(end - *p));
  if (ec == std::errc::result_out_of_range && ptr == end) {
    *error = std::string(what) + " '" + shown_token(tok) + "' does not fit in " + std::to_string(8 * sizeof(T)) +
             " bits (largest " + std::to_string(std::numeric_limits<T>::max()) + ")";
  } else {
    *error = std::string(what) + " '" + shown_token(tok) + "' is not a non-negative integer" +
             (tok.find(',') != std::string_view::npos ? " (comma-separated? separate ids by blanks or tabs)" : "");
  }
  return false;
}

// A vertex id: an unsigned 64-bit integer.
inline bool parse_id(const char** p, const char* e, uint64_t* out, const char* what, std::string* error) {
  return parse_unsigned(p, e, out, what, error);
}

// An edge weight: an unsigned integer below 2^32.
inline bool parse_weight(const char** p, const char* e, uint32_t* out, std::string* error) {
  return parse_unsigned(p, e, out, "edge weight", error);
}

}  // namespace peregrine::graph::detail

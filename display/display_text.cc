#include "hourglass/display_text.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace hourglass {
namespace {

// One character of `text` at `at`: its code point and length in bytes, or nullopt when the bytes
// there are not well-formed UTF-8 (overlong forms, surrogates and values past U+10FFFF included).
struct Char {
  char32_t code = 0;
  size_t size = 1;
};

std::optional<Char> DecodeAt(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return Char{b0, 1};
  size_t size = 0;
  char32_t code = 0, min = 0;
  if ((b0 & 0xe0) == 0xc0) {
    size = 2, code = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    size = 3, code = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    size = 4, code = b0 & 0x07, min = 0x10000;
  } else {
    return std::nullopt;
  }
  if (at + size > text.size()) return std::nullopt;
  for (size_t i = 1; i < size; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return std::nullopt;
    code = (code << 6) | (byte(i) & 0x3f);
  }
  if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return std::nullopt;
  return Char{code, size};
}

// Characters that show nothing of themselves but change what is shown around them.
bool Invisible(char32_t c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0x061c || (c >= 0x200b && c <= 0x200f) ||
         (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0xfeff;
}

// The piece of output for the character or byte at `at`, and how many bytes of `text` it took.
std::string PieceAt(std::string_view text, size_t at, size_t& taken) {
  const std::optional<Char> c = DecodeAt(text, at);
  taken = c ? c->size : 1;
  if (!c) return fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at]));
  switch (c->code) {
    case '\\':
      return "\\\\";
    case '\t':
      return "\\t";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    default:
      break;
  }
  if (c->code < 0x20 || c->code == 0x7f) {
    return fmt::format("\\x{:02x}", static_cast<uint32_t>(c->code));
  }
  if (Invisible(c->code)) return fmt::format("\\u{{{:04x}}}", static_cast<uint32_t>(c->code));
  return std::string(text.substr(at, c->size));
}

}  // namespace

std::string DisplayText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0, taken = 0; at < text.size(); at += taken) out += PieceAt(text, at, taken);
  return out;
}

std::string DisplayText(std::string_view text, size_t max_bytes) {
  std::string out;
  std::vector<size_t> ends;  // where each piece of `out` ends
  for (size_t at = 0, taken = 0; at < text.size(); at += taken) {
    const std::string piece = PieceAt(text, at, taken);
    if (out.size() + piece.size() > max_bytes) {  // whole pieces out until "..." fits
      while (!ends.empty() && ends.back() + 3 > max_bytes) ends.pop_back();
      out.resize(ends.empty() ? 0 : ends.back());
      return out + "...";
    }
    out += piece;
    ends.push_back(out.size());
  }
  return out;
}

}  // namespace hourglass

#include "hourglass/store_fallback.h"

#include <fmt/format.h>

#include <charconv>
#include <numeric>

namespace hourglass {
namespace {

Error BadShare(std::string_view text, std::string_view why) {
  return InvalidArgument(
      fmt::format("share \"{}\": {}; write a fraction of the limit above 0 and at most 1, such as "
                  "1/3 or 0.25",
                  text, why));
}

// Digits only, at most 9 of them.
bool ParseDigits(std::string_view text, uint64_t& out) {
  if (text.empty() || text.size() > 9) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

}  // namespace

uint64_t Share::Of(uint64_t max_hits) const {
  // max * num / den without overflow: num <= den, so the result is at most max_hits.
  return max_hits / den * num + max_hits % den * num / den;
}

std::string Share::ToString() const {
  if (num == 0) return "none";
  return num == den ? "1" : fmt::format("{}/{}", num, den);
}

Result<Share> ParseShare(std::string_view text) {
  Share share;
  if (const size_t slash = text.find('/'); slash != std::string_view::npos) {
    if (!ParseDigits(text.substr(0, slash), share.num) ||
        !ParseDigits(text.substr(slash + 1), share.den)) {
      return BadShare(text, "not a fraction of two whole numbers");
    }
  } else if (const size_t dot = text.find('.'); dot != std::string_view::npos) {
    const std::string_view whole = text.substr(0, dot), digits = text.substr(dot + 1);
    uint64_t w = 0;
    if ((!whole.empty() && !ParseDigits(whole, w)) || !ParseDigits(digits, share.num) || w > 1) {
      return BadShare(text, "not a decimal number from 0 to 1");
    }
    share.den = 1;
    for (size_t i = 0; i < digits.size(); ++i) share.den *= 10;
    share.num += w * share.den;
  } else if (!ParseDigits(text, share.num)) {
    return BadShare(text, "not a number");
  }
  if (share.den == 0 || share.num == 0 || share.num > share.den) {
    return BadShare(text, "out of range");
  }
  const uint64_t gcd = std::gcd(share.num, share.den);
  return Share{share.num / gcd, share.den / gcd};
}

}  // namespace hourglass

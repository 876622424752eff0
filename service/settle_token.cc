#include "hourglass/settle_token.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <fstream>
#include <iterator>
#include <optional>

namespace hourglass {
namespace {

constexpr size_t kMinKeyBytes = 32;
constexpr unsigned char kVersion = 1;
constexpr size_t kNonceBytes = 8;
using Mac = std::array<unsigned char, 32>;

void PutU64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void PutText(std::string& out, std::string_view text) {
  PutU64(out, text.size());
  out += text;
}

// Reads what PutU64 and PutText wrote, refusing to read past the end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  std::optional<uint64_t> U64() {
    if (bytes_.size() < 8) return std::nullopt;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(bytes_[i]);
    bytes_.remove_prefix(8);
    return v;
  }
  std::optional<std::string> Text() {
    const std::optional<uint64_t> size = U64();
    if (!size || *size > bytes_.size()) return std::nullopt;
    std::string text(bytes_.substr(0, *size));
    bytes_.remove_prefix(*size);
    return text;
  }
  std::optional<std::string_view> Bytes(size_t n) {
    if (bytes_.size() < n) return std::nullopt;
    std::string_view out = bytes_.substr(0, n);
    bytes_.remove_prefix(n);
    return out;
  }
  bool done() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

// URL-safe base64 without padding (RFC 4648 section 5), through OpenSSL's encoder.
std::string Base64Url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

std::optional<std::string> FromBase64Url(std::string_view text) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string padded(text);
  for (char& c : padded) {
    if (c == '+' || c == '/' || c == '=') return std::nullopt;  // only the URL-safe alphabet
    c = c == '-' ? '+' : c == '_' ? '/' : c;
  }
  const size_t pad = (4 - padded.size() % 4) % 4;
  padded.append(pad, '=');
  std::string out(3 * padded.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(padded.data()),
                                static_cast<int>(padded.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n) - pad);  // EVP_DecodeBlock counts the padding as zeros
  // One text per bytes: a last character differing only in bits the decoder drops is refused.
  if (Base64Url(out) != text) return std::nullopt;
  return out;
}

Mac Sign(const std::string& key, std::string_view payload) {
  Mac mac{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), mac.data(), &size);
  return mac;
}

std::string Hex(const unsigned char* bytes, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", bytes[i]);
  return out;
}

Error Refused(std::string_view why) {
  return Error(ErrorCode::kInvalidArgument, fmt::format("\"token\" {}", why));
}

}  // namespace

Result<SettleTokens> SettleTokens::WithKey(std::string key) {
  if (key.size() < kMinKeyBytes) {
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("a settlement key needs at least {} bytes, this one has {}",
                             kMinKeyBytes, key.size()));
  }
  return SettleTokens(std::move(key));
}

Result<SettleTokens> SettleTokens::FromKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("--settle-key-file {}: cannot be read", path));
  }
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  Result<SettleTokens> tokens = WithKey(std::move(key));
  if (!tokens.ok()) {
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("--settle-key-file {}: {} (make one with `head -c 32 /dev/urandom | "
                             "base64 > FILE`)",
                             path, tokens.error().message()));
  }
  return tokens;
}

SettleTokens SettleTokens::WithRandomKey() {
  std::string key(kMinKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    std::abort();  // no randomness: nothing here can be signed safely
  }
  return SettleTokens(std::move(key));
}

std::string SettleTokens::Issue(const SettleClaim& claim) const {
  std::string payload(1, static_cast<char>(kVersion));
  PutU64(payload, static_cast<uint64_t>(ToUnix(claim.at)));
  PutU64(payload, claim.cost);
  PutU64(payload, static_cast<uint64_t>(ToUnix(claim.expires)));
  std::array<unsigned char, kNonceBytes> nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) std::abort();
  payload.append(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  PutText(payload, claim.event);
  PutText(payload, claim.feature);
  const Mac mac = Sign(key_, payload);
  return Base64Url(payload) + "." +
         Base64Url(std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));
}

Result<SettleClaim> SettleTokens::Verify(std::string_view token, Instant now) const {
  const size_t dot = token.find('.');
  if (dot == std::string_view::npos) return Refused("is not a settlement token (no \".\")");
  const std::optional<std::string> payload = FromBase64Url(token.substr(0, dot));
  const std::optional<std::string> mac = FromBase64Url(token.substr(dot + 1));
  if (!payload || !mac || mac->size() != Mac{}.size()) {
    return Refused("is not a settlement token (not base64url)");
  }
  const Mac expected = Sign(key_, *payload);
  if (CRYPTO_memcmp(expected.data(), mac->data(), expected.size()) != 0) {
    return Refused(
        "was not signed by this deployment's key, or was altered (every service must share "
        "--settle-key-file)");
  }
  Reader r(*payload);
  const std::optional<std::string_view> version = r.Bytes(1);
  const std::optional<uint64_t> at = r.U64(), cost = r.U64(), expires = r.U64();
  const std::optional<std::string_view> nonce = r.Bytes(kNonceBytes);
  std::optional<std::string> event = r.Text(), feature = r.Text();
  if (!version || static_cast<unsigned char>((*version)[0]) != kVersion || !at || !cost ||
      !expires || !nonce || !event || !feature || !r.done()) {
    return Refused("is signed but not of a version this service reads");
  }
  SettleClaim claim{std::move(*event),
                    std::move(*feature),
                    FromUnix(static_cast<int64_t>(*at)),
                    *cost,
                    FromUnix(static_cast<int64_t>(*expires)),
                    Hex(expected.data(), 16)};
  if (now > claim.expires) {
    return Refused(fmt::format("expired at {} (now {}): the decision keeps the cost it was charged",
                               *expires, ToUnix(now)));
  }
  return claim;
}

}  // namespace hourglass

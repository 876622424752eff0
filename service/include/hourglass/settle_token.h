// Settlement tokens: what binds a settlement to the decision it settles.
//
// A check of an event with `settle: true` that admits and records its cost answers a token that
// names the decision (event, feature, second, cost, a random nonce) and an expiry, signed with
// HMAC-SHA256 under a key every service of a deployment shares. POST /v1/settle takes the token
// and the true cost: the difference is applied at the token's own second (so every window moves
// together), once (the token's id is marked in the store), and only while the token lasts; a
// forged, altered or expired token changes nothing.
//
//   SettleTokens tokens = *SettleTokens::FromKeyFile("/etc/hourglass/settle.key");
//   std::string token = tokens.Issue({"llm", "t1", at, 1200, at + Seconds{3600}});
//   Result<SettleClaim> claim = tokens.Verify(token, now);  // claim->id marks it once
//
// Tokens are URL-safe base64 text: "<payload>.<signature>".
//
// Thread-safety: const methods may be called from any thread.
#pragma once

#include <string>
#include <string_view>

#include "hourglass/clock.h"
#include "hourglass/status.h"

namespace hourglass {

// What a token says of its decision.
struct SettleClaim {
  std::string event;
  std::string feature;  // as counted (after the policy resolved it)
  Instant at{};         // the decision's second
  uint64_t cost = 0;    // what it was charged
  Instant expires{};    // settlements after this are refused
  std::string id;       // unique per token (32 hex digits of its signature)
};

class SettleTokens {
 public:
  // The key in `path`: its bytes, a trailing newline dropped; at least 32 bytes (e.g.
  // `head -c 32 /dev/urandom | base64 > FILE`). kInvalidArgument naming the file otherwise.
  static Result<SettleTokens> FromKeyFile(const std::string& path);
  // A key of this process alone: its tokens settle only here.
  static SettleTokens WithRandomKey();
  // `key` as given (at least 32 bytes).
  static Result<SettleTokens> WithKey(std::string key);

  // A token for `claim` (its id is ignored: a fresh nonce makes each token unique).
  std::string Issue(const SettleClaim& claim) const;
  // The claim of `token` if this key signed it and it has not expired at `now`: kInvalidArgument
  // for a malformed, forged or altered token, or one past its expiry (each said).
  Result<SettleClaim> Verify(std::string_view token, Instant now) const;

 private:
  explicit SettleTokens(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

}  // namespace hourglass

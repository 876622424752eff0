// Error handling for hourglass: precise error codes, an Error value, and Result<T>.
//
// Recoverable failures are returned, never thrown. A denial is a Decision, not an error.
//
//   hourglass::Result<Limit> limit = ParseLimit("5/m");
//   if (!limit.ok()) std::cerr << limit.error().message() << "\n";
//
// Thread-safety: plain values; safe to copy between threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hourglass {

enum class ErrorCode {
  kInvalidArgument,    // the caller's input is wrong; retrying will not help
  kUnavailable,        // the store cannot be reached right now; transient
  kDeadlineExceeded,   // the store did not answer within the configured timeout; transient
  kInternal,           // a broken invariant or an unexpected answer from the store
  kNotFound,           // a name the caller gave is not defined (an event the policy lacks)
  kDataLoss,           // the store lost data a decision needs (memcached evicted live buckets)
  kResourceExhausted,  // this process ran out of descriptors or memory; the store may be fine
  kStoreFull,  // the store has no room and refuses writes (an LMDB map, a Redis without eviction)
};

// "invalid argument", "unavailable", ...
std::string_view ErrorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "unavailable: memcached 127.0.0.1:11211: connection refused"
  std::string ToString() const;
  bool operator==(const Error&) const = default;

 private:
  ErrorCode code_;
  std::string message_;
};

inline Error InvalidArgument(std::string message) {
  return Error(ErrorCode::kInvalidArgument, std::move(message));
}

// Either a value or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Error> v_;
};

// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  bool ok() const { return !error_.has_value(); }
  const Error& error() const {
    assert(!ok());
    return *error_;
  }

 private:
  std::optional<Error> error_;
};

}  // namespace hourglass

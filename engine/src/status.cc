#include "hourglass/status.h"

#include <fmt/format.h>

namespace hourglass {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kDeadlineExceeded:
      return "deadline exceeded";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kDataLoss:
      return "data loss";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
    case ErrorCode::kStoreFull:
      return "store full";
  }
  return "unknown";
}

std::string Error::ToString() const {
  return fmt::format("{}: {}", ErrorCodeName(code_), message_);
}

}  // namespace hourglass

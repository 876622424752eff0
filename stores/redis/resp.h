// Internal to the Redis store: commands in RESP2 (hiredis's formatter) and the replies read back
// from a net::Connection (hiredis's reader), as plain values, so no hiredis type leaves this unit.
//
//   std::string request;
//   AppendCommand({"GET", "k"}, request);
//   ReplyReader reader;
//   Result<Reply> reply = reader.Read(connection);  // {kString, "5"} or {kNil}
//
// A reply larger than kMaxReplyBytes, or declaring more than kMaxReplyElements array elements, is
// refused before it is buffered or allocated whole (out of step, or not a Redis server), as the
// memcached store refuses a data block longer than an item.
//
// Thread-safety: AppendCommand is a pure function; a ReplyReader belongs to one connection, used by
// one thread at a time.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/net/connection.h"
#include "hourglass/status.h"

struct redisReader;
struct redisReadTask;

namespace hourglass::redis {

struct Reply {
  enum class Type { kString, kArray, kInteger, kNil, kStatus, kError };
  Type type = Type::kNil;
  long long integer = 0;        // kInteger
  std::string text;             // kString, kStatus, kError (the error's whole line: "MOVED 12 h:p")
  std::vector<Reply> elements;  // kArray

  bool error() const { return type == Type::kError; }
  // The error's first word ("MOVED", "NOSCRIPT", "ERR"); empty for other replies.
  std::string_view error_kind() const;
};

// Appends one command of `args` (binary-safe) to `out`.
void AppendCommand(std::span<const std::string_view> args, std::string& out);
void AppendCommand(std::initializer_list<std::string_view> args, std::string& out);

// The largest reply read: far beyond a batch's reads (a pack holds at most an hour of records).
constexpr size_t kMaxReplyBytes = 64 * 1024 * 1024;
// The most array elements one reply may declare, nested arrays included: far beyond CLUSTER
// SLOTS' 16384 ranges or a batch's reads. The reader allocates an array when its header arrives,
// so the bound is on the header, not on bytes received.
constexpr size_t kMaxReplyElements = 1 << 20;

class ReplyReader {
 public:
  // `max_elements`: the most array elements one reply may declare (tests use a small bound).
  explicit ReplyReader(size_t max_elements = kMaxReplyElements);
  ~ReplyReader();
  ReplyReader(const ReplyReader&) = delete;
  ReplyReader& operator=(const ReplyReader&) = delete;

  // The next reply, reading from `c` (within its exchange's deadline) as needed. Errors: the
  // connection's (kUnavailable, kDeadlineExceeded), kInternal for bytes that are not RESP or a
  // reply over kMaxReplyBytes or the element bound; after any error the connection is out of step.
  Result<Reply> Read(net::Connection& c);

 private:
  // Counts an array header of `elements` against the reply's bound; false refuses it.
  bool Declare(long long elements);
  static void* CreateArray(const redisReadTask* task, int elements);

  redisReader* reader_;
  size_t max_elements_;
  size_t declared_ = 0;      // array elements declared by the reply being read
  bool over_bound_ = false;  // the reply being read declared more than max_elements_
};

}  // namespace hourglass::redis

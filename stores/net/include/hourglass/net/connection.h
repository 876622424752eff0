// Shared by the network stores (memcached, Redis): one TCP connection to one server, written to in
// whole requests and read line by line, in data blocks or as it comes, every wait bounded by a
// timeout.
//
// A store builds one request per batch (every command of a check in one buffer) and sends it
// with one send(), so a check costs one write and one read system call.
//
//   Result<std::unique_ptr<Connection>> c =
//       Connection::Open("127.0.0.1", "11211", 100ms, 100ms);
//   (*c)->Send("mn\r\n");
//   Result<std::string_view> line = (*c)->ReadLine();  // "MN"
//
// Errors: kUnavailable (refused, reset, closed by the server, name lookup failed, a connect
// unanswered within its timeout: nothing was sent), kDeadlineExceeded (a wait for an answer or
// to send outlasted its timeout: what was sent may yet be applied), kResourceExhausted (this process is out of
// descriptors or memory: not the server's fault). After any error the connection is unusable:
// the caller drops it. Messages do not name the server; the caller prefixes them.
//
// Thread-safety: one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"

namespace hourglass::net {

class Connection {
 public:
  // `host` without brackets ("::1" for "[::1]").
  static Result<std::unique_ptr<Connection>> Open(const std::string& host, const std::string& port,
                                                  std::chrono::milliseconds connect_timeout,
                                                  std::chrono::milliseconds io_timeout);
  // Takes over `fd`, a connected stream socket (a socketpair's end in tests and fuzzers), and
  // closes it when destroyed or on error.
  static Result<std::unique_ptr<Connection>> Adopt(int fd, std::chrono::milliseconds io_timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts an exchange (a request and its answers): every read until the next BeginExchange ends
  // within io_timeout from now, however the server spreads its bytes. Without it each read alone
  // is bounded by io_timeout.
  void BeginExchange();
  // Sends all of `bytes` (one send() when the socket buffer has room, as it has for a check).
  Status Send(std::string_view bytes);
  // The next line without its "\r\n"; valid until the next read.
  Result<std::string_view> ReadLine();
  // The largest data block read: memcached's default item size. A counter takes 20 bytes; a
  // longer announced block is refused before anything is read or allocated for it.
  static constexpr size_t kMaxBlock = 1024 * 1024;
  // The next `n` bytes and the "\r\n" after them (a VALUE's data block); valid until the next read.
  Result<std::string_view> ReadBlock(size_t n);
  // Every byte received and not read yet, waiting (by the exchange's deadline) for some when there
  // are none; valid until the next read. For protocols parsed elsewhere (Redis replies).
  Result<std::string_view> ReadSome();

  // True when the server has closed or reset the connection (e.g. it restarted while the
  // connection sat idle in a pool). Does not wait.
  bool PeerClosed() const;

 private:
  Connection(int fd, std::chrono::milliseconds io_timeout);
  Error TimedOut(std::string_view what) const;
  // Reads more bytes into the buffer, by the exchange's deadline.
  Status Fill();
  // Lowers the socket's receive timeout to what is left of the exchange, when that is less.
  Status WaitAtMost(std::chrono::microseconds left);

  int fd_;
  std::chrono::milliseconds io_timeout_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::chrono::microseconds receive_timeout_;  // what SO_RCVTIMEO is set to
  std::vector<char> buffer_;
  size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  size_t end_ = 0;
};

}  // namespace hourglass::net

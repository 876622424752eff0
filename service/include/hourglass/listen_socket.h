// What every listener of the service does first: an IP address and port made a listening
// acceptor, with the errors an operator can act on; the I/O contexts its threads run; the count
// of its connections' high-water mark.
//
//   std::vector<std::unique_ptr<io_context>> contexts = IoContexts(threads);
//   tcp::acceptor acceptor(*contexts[0]);
//   if (Status s = ListenOn(acceptor, "0.0.0.0", 8081, "gRPC"); !s.ok()) return s.error();
//
// Thread-safety: ListenOn as the acceptor's (one thread); RaiseHighWater from any thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hourglass/status.h"

namespace hourglass {

// Opens `acceptor` on `host` (an IP address, IPv4 or IPv6, not a name) and `port` (0: a free one,
// see the acceptor's local_endpoint()), with SO_REUSEADDR, listening. `protocol` names the
// listener in the errors ("gRPC"; empty for the HTTP listener): kInvalidArgument when `host` is not
// an IP address, kUnavailable when the address cannot be bound.
Status ListenOn(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host, uint16_t port,
                std::string_view protocol);

// `threads` I/O contexts, one for each I/O thread (a connection lives on one, so its handlers wake
// no other thread), each with its reactor (epoll, eventfd and timerfd descriptors) made now, not
// with its first connection, which may come when the descriptors have run out.
std::vector<std::unique_ptr<boost::asio::io_context>> IoContexts(int threads);

// Raises `most` to `now` if `now` is higher: the most connections open at once.
void RaiseHighWater(std::atomic<size_t>& most, size_t now);

}  // namespace hourglass

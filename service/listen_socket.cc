#include "hourglass/listen_socket.h"

#include <fmt/format.h>

namespace hourglass {

std::vector<std::unique_ptr<boost::asio::io_context>> IoContexts(int threads) {
  std::vector<std::unique_ptr<boost::asio::io_context>> made;
  for (int i = 0; i < threads; ++i) {
    made.push_back(std::make_unique<boost::asio::io_context>(1));
    boost::asio::ip::tcp::socket warm{*made.back()};  // makes the reactor
  }
  return made;
}

void RaiseHighWater(std::atomic<size_t>& most, size_t now) {
  size_t seen = most;
  while (seen < now && !most.compare_exchange_weak(seen, now)) {
  }
}

Status ListenOn(boost::asio::ip::tcp::acceptor& acceptor, const std::string& host, uint16_t port,
                std::string_view protocol) {
  namespace net = boost::asio;
  boost::system::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) {
    return InvalidArgument(
        fmt::format("{}listen address \"{}\" is not an IP address (e.g. 127.0.0.1 or ::1)",
                    protocol.empty() ? "" : fmt::format("{} ", protocol), host));
  }
  const net::ip::tcp::endpoint endpoint(address, port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error(ErrorCode::kUnavailable,
                 fmt::format("cannot listen{} on {}:{}: {}",
                             protocol.empty() ? "" : fmt::format(" for {}", protocol), host, port,
                             ec.message()));
  }
  return {};
}

}  // namespace hourglass

// A fault real memcached cannot be made to show: a server that answers one byte at a time, slowly.
// It accepts one connection on 127.0.0.1, reads a request, then sends `answer` a byte every `gap`:
// each read alone is quick, the whole answer slow.
//
//   DrippingServer drip("VALUE k 0 1\r\n1\r\nEND\r\n", std::chrono::milliseconds{50});
//   options.servers = {drip.address()};
//
// Thread-safety: its own thread serves; construct and destroy it from one thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace hourglass::testing {

class DrippingServer {
 public:
  DrippingServer(std::string answer, std::chrono::milliseconds gap) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(listener_, 4);
    socklen_t length = sizeof addr;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, answer = std::move(answer), gap] { Serve(answer, gap); });
  }
  ~DrippingServer() {
    stop_ = true;
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    thread_.join();
  }
  DrippingServer(const DrippingServer&) = delete;
  DrippingServer& operator=(const DrippingServer&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve(const std::string& answer, std::chrono::milliseconds gap) {
    const int client = accept(listener_, nullptr, nullptr);
    if (client < 0) return;
    char request[4096];
    if (recv(client, request, sizeof request, 0) > 0) {
      for (char c : answer) {
        if (stop_ || send(client, &c, 1, MSG_NOSIGNAL) != 1) break;
        std::this_thread::sleep_for(gap);
      }
    }
    close(client);
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hourglass::testing

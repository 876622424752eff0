// A real `hourglass serve` for tests, on a free loopback port, stopped by its PID; and a real
// HTTP/1.1 client (Boost.Beast) that keeps its connection alive.
//
//   ServeProcess serve(HOURGLASS_CLI, {"--policy", path, "--servers", memcached.address()});
//   ASSERT_TRUE(serve.ready()) << serve.log();
//   HttpClient client(serve.port());
//   HttpReply r = client.Post("/v1/check", R"({"event":"signup","feature":"ann"})");
//   serve.Signal(SIGTERM);
//   EXPECT_EQ(serve.Wait(), 0);
//
// Thread-safety: one thread drives a process; one thread per client.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hourglass::testing {

class ServeProcess {
 public:
  // Starts `cli serve --listen 127.0.0.1:PORT ARGS...` (with `--timeout-ms 2000` unless ARGS set
  // it) and waits up to 10 s for /healthz, on another port if another process took PORT first.
  // With `open_files` > 0, the process's open file limit (soft and hard) is that, as systemd's
  // LimitNOFILE= sets it; `env` ("NAME=VALUE") is added to its environment.
  ServeProcess(const std::string& cli, const std::vector<std::string>& args, size_t open_files = 0,
               const std::vector<std::string>& env = {});
  ~ServeProcess();  // SIGKILL if still running
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  bool ready() const { return ready_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  void Signal(int signal) const;
  // The exit code (128 + signal if killed; also when it exited while starting), or -1 if it has
  // not exited within `timeout`.
  int Wait(std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000});
  // Everything the server wrote to stderr so far.
  std::string log() const;
  // Whether log() contains `text` within `timeout` (polled; true as soon as it does). Lines
  // written by the server's own threads (a periodic summary, a watcher) may come late on a busy
  // machine: the default bounds a failure, not a pass.
  bool WaitForLog(const std::string& text,
                  std::chrono::milliseconds timeout = std::chrono::milliseconds{10'000}) const;

 private:
  // Starts the process on port_, its stderr to `log_fd`.
  void Launch(const std::string& cli, const std::vector<std::string>& args, size_t open_files,
              const std::vector<std::string>& env, int log_fd);
  // Waits up to 10 s until it answers /healthz on port_ as the port's listener, or exits.
  bool AwaitReady();
  // Whether it exited because another process had bound port_ first.
  bool PortWasTaken() const;
  int port_ = 0;
  pid_t pid_ = -1;
  bool ready_ = false;
  int exit_code_ = -1;  // once it exited
  std::string log_path_;
};

// The environment ("NAME=VALUE" entries) that runs a process on libfaketime's clock (Debian's
// faketime; `library` its libfaketimeMT.so.1): `settings` ("FAKETIME=-10s", ...), the library
// preloaded, and AddressSanitizer told that a preloaded library comes before its runtime.
std::vector<std::string> FaketimeEnvironment(const std::string& library,
                                             std::vector<std::string> settings);

struct HttpReply {
  int status = 0;  // 0: no answer (connection refused or closed)
  std::string body;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string Header(const std::string& name) const;
};

// `raw` for a query value: every byte but [A-Za-z0-9] percent-encoded.
std::string UrlEncode(const std::string& raw);

class HttpClient {
 public:
  explicit HttpClient(int port);
  ~HttpClient();
  HttpReply Send(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::map<std::string, std::string>& headers = {});
  HttpReply Get(const std::string& target) { return Send("GET", target); }
  HttpReply Post(const std::string& target, const std::string& body) {
    return Send("POST", target, body);
  }

 private:
  struct Connection;
  int port_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace hourglass::testing

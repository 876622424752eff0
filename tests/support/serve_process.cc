#include "serve_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "loopback_port.h"
#include "run_process.h"

namespace hourglass::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::vector<std::string> FaketimeEnvironment(const std::string& library,
                                             std::vector<std::string> settings) {
  const char* inherited = std::getenv("ASAN_OPTIONS");
  settings.push_back("LD_PRELOAD=" + library);
  settings.push_back(std::string("ASAN_OPTIONS=") +
                     (inherited != nullptr ? std::string(inherited) + ":" : "") +
                     "verify_asan_link_order=0");
  return settings;
}

ServeProcess::ServeProcess(const std::string& cli, const std::vector<std::string>& args,
                           size_t open_files, const std::vector<std::string>& env) {
  char path[] = "/tmp/hourglass-serve-XXXXXX";
  const int log_fd = mkstemp(path);
  log_path_ = path;
  // Appended to by each attempt's process, whatever the offset an earlier one left.
  fcntl(log_fd, F_SETFL, fcntl(log_fd, F_GETFL) | O_APPEND);
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreeLoopbackPort();
    if (ftruncate(log_fd, 0) != 0) break;
    Launch(cli, args, open_files, env, log_fd);
    if (AwaitReady() || !PortWasTaken()) break;
  }
  close(log_fd);
}

void ServeProcess::Launch(const std::string& cli, const std::vector<std::string>& args,
                          size_t open_files, const std::vector<std::string>& env, int log_fd) {
  std::vector<std::string> argv = {cli, "serve", "--listen", "127.0.0.1:" + std::to_string(port_)};
  argv.insert(argv.end(), args.begin(), args.end());
  // Store timeouts a loaded box does not reach, unless the test sets its own: with the default
  // (500 ms), a stall there would fail a check open or closed, and read as a wrong decision.
  const bool own_timeout = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--timeout-ms" || a.starts_with("--timeout-ms=");
  });
  if (!own_timeout) argv.insert(argv.end(), {"--timeout-ms", "2000"});
  pid_ = ForkTiedToTest();
  if (pid_ != 0) return;
  dup2(log_fd, STDERR_FILENO);
  for (const std::string& variable : env) {
    const size_t eq = variable.find('=');
    setenv(variable.substr(0, eq).c_str(), variable.substr(eq + 1).c_str(), 1);
  }
  if (open_files > 0) {
    const rlimit limit{open_files, open_files};
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  execv(raw[0], raw.data());
  _exit(127);
}

bool ServeProcess::AwaitReady() {
  for (int i = 0; i < 200 && pid_ > 0; ++i) {
    // Another test's service may answer on the port until ours, failing to bind it, exits.
    if (HttpClient(port_).Get("/healthz").status == 200 && ListensOn(pid_, port_)) {
      ready_ = true;
      return true;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;  // it exited: log() says why
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

bool ServeProcess::PortWasTaken() const {
  return pid_ <= 0 && log().find("cannot listen on 127.0.0.1:" + std::to_string(port_) +
                                 ": Address already in use") != std::string::npos;
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  unlink(log_path_.c_str());
}

void ServeProcess::Signal(int signal) const {
  if (pid_ > 0) kill(pid_, signal);
}

int ServeProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (pid_ <= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return pid_ > 0 ? -1 : exit_code_;
}

std::string ServeProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool ServeProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return true;
}

std::string HttpReply::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

struct HttpClient::Connection {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
};

HttpClient::HttpClient(int port) : port_(port) {}
HttpClient::~HttpClient() = default;

HttpReply HttpClient::Send(const std::string& method, const std::string& target,
                           const std::string& body,
                           const std::map<std::string, std::string>& headers) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    beast::error_code ec;
    if (connection_ == nullptr) {
      connection_ = std::make_unique<Connection>();
      connection_->stream.expires_after(std::chrono::seconds{10});
      connection_->stream.connect(
          tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port_)), ec);
      if (ec) {
        connection_.reset();
        return {};
      }
    }
    http::request<http::string_body> request{http::string_to_verb(method), target, 11};
    request.set(http::field::host, "127.0.0.1");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = body;
    if (!body.empty()) request.set(http::field::content_type, "application/json");
    request.prepare_payload();
    connection_->stream.expires_after(std::chrono::seconds{10});
    http::write(connection_->stream, request, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    if (!ec) http::read(connection_->stream, connection_->buffer, parser, ec);
    if (ec) {
      connection_.reset();  // closed by the server between requests: try once more
      continue;
    }
    const auto& response = parser.get();
    HttpReply reply;
    reply.status = static_cast<int>(response.result_int());
    reply.body = response.body();
    for (const auto& field : response) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      reply.headers[name] = std::string(field.value());
    }
    if (!response.keep_alive()) connection_.reset();
    return reply;
  }
  return {};
}

std::string UrlEncode(const std::string& raw) {
  std::string out;
  for (unsigned char c : raw) {
    if (std::isalnum(c)) {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace hourglass::testing

#include "memcached_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include "loopback_port.h"
#include "run_process.h"

namespace hourglass::testing {
namespace {

bool IsV6(const std::string& host) { return host.find(':') != std::string::npos; }

int Connect(const std::string& host, int port) {
  const int fd = socket(IsV6(host) ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  int rc = -1;
  if (IsV6(host)) {
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    addr.sin6_addr = in6addr_loopback;
    rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string FindMemcached() {
  for (const char* path :
       {"/usr/bin/memcached", "/usr/local/bin/memcached", "/usr/sbin/memcached"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

}  // namespace

MemcachedServer::MemcachedServer(std::string host, int megabytes,
                                 std::vector<std::string> extra_args)
    : host_(std::move(host)), megabytes_(megabytes), extra_args_(std::move(extra_args)) {
  for (int attempt = 0; attempt < 5 && !running(); ++attempt) {
    port_ = FreeLoopbackPort();
    Start();
  }
}

MemcachedServer::~MemcachedServer() { Kill(); }

bool MemcachedServer::Start() {
  if (running()) return true;
  const std::string binary = FindMemcached();
  if (binary.empty()) {
    error_ = "memcached is not installed (apt-get install memcached)";
    return false;
  }
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {
      binary, "-l",  host_, "-p", port, "-U", "0", "-t", "2", "-m", std::to_string(megabytes_),
      "-c",   "4096"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  if (geteuid() == 0) {
    args.push_back("-u");
    args.push_back("root");
  }
  const pid_t pid = ForkTiedToTest();
  if (pid == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  for (int i = 0; i < 500; ++i) {  // up to 5 s
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "memcached exited at start (port " + port + " taken?)";
      return false;
    }
    const int fd = Connect(host_, port_);
    if (fd >= 0) {
      close(fd);
      // Another test's memcached may have bound the port between FreeLoopbackPort and this one
      // (which then exits): only a server that reports this PID is ours.
      if (Stat("pid") == pid_) return true;
      Kill();
      error_ = "port " + port + " is another memcached's";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  error_ = "memcached did not accept connections on port " + port;
  return false;
}

void MemcachedServer::Stop() {
  if (!running()) return;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 300; ++i) {  // up to 3 s, then SIGKILL
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

void MemcachedServer::Kill() {
  if (!running()) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool MemcachedServer::Freeze() { return running() && testing::Freeze(pid_); }

void MemcachedServer::Thaw() {
  if (running()) kill(pid_, SIGCONT);
}

std::string MemcachedServer::Raw(const std::string& command) const {
  // memcached answers "MN" to a meta no-op once everything before it is answered: the end of the
  // answer is known, however long the server takes (a fixed silence would cut a slow answer).
  constexpr std::string_view kEnd = "MN\r\n";
  std::string answer =
      RawUntil(command + "mn\r\n", [&](const std::string& a) { return a.ends_with(kEnd); });
  if (answer.ends_with(kEnd)) answer.resize(answer.size() - kEnd.size());
  return answer;
}

std::string MemcachedServer::RawUntil(const std::string& request,
                                      const std::function<bool(const std::string&)>& done) const {
  const int fd = Connect(host_, port_);
  if (fd < 0) return "";
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = write(fd, request.data() + sent, request.size() - sent);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  std::string answer;
  char buffer[4096];
  while (!done(answer)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return answer;
}

bool MemcachedServer::Fill(int items, const std::string& prefix, int reads) const {
  std::string request;
  for (int i = 0; i < items; ++i) {
    request += "set " + prefix + std::to_string(i) + " 0 0 8 noreply\r\n12345678\r\n";
  }
  for (int r = 0; r < reads; ++r) {
    for (int i = 0; i < items; ++i) request += "mg " + prefix + std::to_string(i) + " q\r\n";
  }
  return Raw(request + "get nothing\r\n").ends_with("END\r\n");  // after any HD of the reads
}

std::optional<std::string> MemcachedServer::MetaDump() const {
  // "key=<encoded key> exp=-1 la=... cas=... fetch=yes cls=1 size=75" per item, then "END". Its
  // answer comes from the crawler, after any "MN" of a no-op sent behind it: read to END. While
  // the crawler is busy with a crawl of its own (memcached crawls by itself from time to time),
  // it answers "BUSY": asked again until it has done, within a minute.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (std::chrono::steady_clock::now() < deadline) {
    std::string dump = RawUntil("lru_crawler metadump all\r\n", [](const std::string& a) {
      return a.ends_with("END\r\n") ||
             (a.find('\n') != std::string::npos && !a.starts_with("key="));
    });
    if (dump.ends_with("END\r\n")) return dump;
    if (!dump.starts_with("BUSY")) return std::nullopt;  // an error, or no answer
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return std::nullopt;
}

bool MemcachedServer::EvictKeysContaining(const std::string& needle, int rounds) const {
  std::set<size_t> sizes;
  for (int round = 0; round < rounds; ++round) {
    const std::optional<std::string> listed = MetaDump();
    if (!listed) return false;
    const std::string& dump = *listed;
    bool left = false;
    for (size_t at = 0, end; at < dump.size(); at = end + 1) {
      end = dump.find('\n', at);
      if (end == std::string::npos) end = dump.size();
      const std::string_view line(dump.data() + at, end - at);
      const size_t key_end = line.find(' ');
      if (!line.starts_with("key=") || line.substr(0, key_end).find(needle) == line.npos) continue;
      left = true;
      const size_t size_at = line.find(" size=");
      if (size_at != line.npos) sizes.insert(std::strtoul(line.data() + size_at + 6, nullptr, 10));
    }
    if (!left) return true;
    std::string request;
    constexpr int kItems = 20000;
    for (size_t size : sizes) {
      // An item takes about 72 bytes besides its value (header, CAS, this key, "\r\n").
      const std::string value(size > 80 ? size - 72 : 8, 'x');
      for (int i = 0; i < kItems; ++i) {
        request += "set zz" + std::to_string(round) + "." + std::to_string(size) + "." +
                   std::to_string(i) + " 0 0 " + std::to_string(value.size()) + " noreply\r\n" +
                   value + "\r\n";
      }
      for (int r = 0; r < 2; ++r) {
        for (int i = 0; i < kItems; ++i) {
          request += "mg zz" + std::to_string(round) + "." + std::to_string(size) + "." +
                     std::to_string(i) + " q\r\n";
        }
      }
    }
    if (!Raw(request + "get nothing\r\n").ends_with("END\r\n")) return false;  // unreachable
  }
  return false;
}

long long MemcachedServer::Stat(const std::string& name) const {
  const std::string stats = Raw("stats\r\n");
  const std::string needle = "STAT " + name + " ";
  const size_t at = stats.find(needle);
  if (at == std::string::npos) return -1;
  return std::atoll(stats.c_str() + at + needle.size());
}

}  // namespace hourglass::testing

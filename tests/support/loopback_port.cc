#include "loopback_port.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

namespace hourglass::testing {
namespace {

// The inodes of the sockets listening on `port` of 127.0.0.1 or 0.0.0.0.
std::set<std::string> ListeningInodes(int port) {
  std::set<std::string> inodes;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the column names
  while (std::getline(table, line)) {
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode;
    const size_t colon = local.find(':');
    if (state != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
    const std::string address = local.substr(0, colon);
    if (address != "0100007F" && address != "00000000") continue;
    if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) inodes.insert(inode);
  }
  return inodes;
}

}  // namespace

int FreeLoopbackPort() {
  // Below the kernel's ephemeral range (ip_local_port_range, 32768 and up here): a port the
  // kernel picked there could be taken as a client's local port by another test's connections
  // (a flood of thousands) before the server binds it.
  constexpr int kLow = 10000, kHigh = 32767;
  static std::atomic<unsigned> calls{0};
  std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u + calls++ * 104729u +
                   static_cast<unsigned>(time(nullptr)));
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = kLow + static_cast<int>(rng() % (kHigh - kLow + 1));
    const int fd = ListenOnLoopback(port);
    if (fd < 0) continue;
    close(fd);
    return port;
  }
  return 0;
}

int ListenOnLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 1) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool ListensOn(pid_t pid, int port) {
  const std::set<std::string> inodes = ListeningInodes(port);
  if (inodes.empty()) return false;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* fds = opendir(dir.c_str());
  if (fds == nullptr) return false;
  bool found = false;
  while (const dirent* entry = readdir(fds)) {
    char target[64] = {};
    const std::string link = dir + "/" + entry->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    const std::string socket(target, static_cast<size_t>(n));  // "socket:[INODE]"
    if (socket.starts_with("socket:[") && inodes.contains(socket.substr(8, socket.size() - 9))) {
      found = true;
      break;
    }
  }
  closedir(fds);
  return found;
}

}  // namespace hourglass::testing

#include "redis_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "loopback_port.h"
#include "run_process.h"

namespace hourglass::testing {
namespace {

std::string Find(std::initializer_list<const char*> paths) {
  for (const char* path : paths) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
  char tmpl[] = "/tmp/hourglass-redis-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error_ = "cannot make a directory for redis";
    return;
  }
  dir_ = tmpl;
  for (int attempt = 0; attempt < 5 && !running(); ++attempt) {
    port_ = FreeLoopbackPort();
    Start();
  }
}

RedisServer::~RedisServer() {
  Kill();
  if (!dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

bool RedisServer::Start() {
  if (running()) return true;
  const std::string binary = Find({"/usr/bin/redis-server", "/usr/local/bin/redis-server"});
  if (binary.empty()) {
    error_ = "redis-server is not installed (apt-get install redis-server)";
    return false;
  }
  std::vector<std::string> args = {binary,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--protected-mode",
                                   "no"};
  if (options_.cluster) {
    args.insert(args.end(),
                {"--cluster-enabled", "yes", "--cluster-config-file",
                 "nodes-" + std::to_string(port_) + ".conf", "--cluster-node-timeout", "2000"});
  }
  if (options_.maxmemory_mb > 0) {
    args.insert(args.end(), {"--maxmemory", std::to_string(options_.maxmemory_mb) + "mb"});
  }
  if (!options_.policy.empty()) args.insert(args.end(), {"--maxmemory-policy", options_.policy});
  if (!options_.password.empty()) args.insert(args.end(), {"--requirepass", options_.password});
  const pid_t pid = ForkTiedToTest();
  if (pid == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Its own output stays out of the test's.
    freopen("/dev/null", "w", stdout);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pid_ = pid;
  for (int i = 0; i < 500; ++i) {  // up to 5 s
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "redis-server exited at start (port " + std::to_string(port_) + " taken?)";
      return false;
    }
    if (Command({"PING"}) == "PONG") {
      // Another test's server may have bound the port between FreeLoopbackPort and this one
      // (which then exits): only a server that reports this PID is ours.
      if (Info("process_id") == pid_) return true;
      Kill();
      error_ = "port " + std::to_string(port_) + " is another redis-server's";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  error_ = "redis-server did not answer PING on port " + std::to_string(port_);
  return false;
}

void RedisServer::Stop() {
  if (!running()) return;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 500; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
}

void RedisServer::Kill() {
  if (!running()) return;
  kill(pid_, SIGCONT);
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool RedisServer::Freeze() { return running() && testing::Freeze(pid_); }

void RedisServer::Thaw() {
  if (running()) kill(pid_, SIGCONT);
}

std::string RedisServer::Command(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"/usr/bin/redis-cli", "-h", "127.0.0.1", "-p",
                                   std::to_string(port_)};
  std::vector<std::string> env;
  if (!options_.password.empty()) env.push_back("REDISCLI_AUTH=" + options_.password);
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = RunProcess(argv, env);
  if (r.code != 0) return "";
  return Trim(r.out);
}

long long RedisServer::Info(const std::string& field) const {
  const std::string info = Command({"INFO", "everything"});
  const std::string needle = field + ":";
  size_t at = info.find("\n" + needle);
  if (at == std::string::npos) {
    if (!info.starts_with(needle)) return -1;
    at = 0;
  } else {
    ++at;
  }
  return std::atoll(info.c_str() + at + needle.size());
}

RedisCluster::RedisCluster() {
  for (int i = 0; i < 3; ++i) {
    nodes_.push_back(std::make_unique<RedisServer>(RedisServerOptions{.cluster = true}));
    if (!nodes_.back()->running()) {
      error_ = nodes_.back()->error();
      return;
    }
  }
  // What redis-cli --cluster create does, without its one-second waits: a third of the slots
  // each, distinct config epochs, and every node met.
  const size_t n = nodes_.size();
  for (size_t i = 0; i < n; ++i) {
    const int lo = static_cast<int>(16384 * i / n), hi = static_cast<int>(16384 * (i + 1) / n) - 1;
    if (nodes_[i]->Command({"CLUSTER", "ADDSLOTSRANGE", std::to_string(lo), std::to_string(hi)}) !=
            "OK" ||
        nodes_[i]->Command({"CLUSTER", "SET-CONFIG-EPOCH", std::to_string(i + 1)}) != "OK") {
      error_ = "cannot give node " + std::to_string(i) + " its slots";
      return;
    }
  }
  for (size_t i = 1; i < n; ++i) {
    if (nodes_[0]->Command({"CLUSTER", "MEET", "127.0.0.1", std::to_string(nodes_[i]->port())}) !=
        "OK") {
      error_ = "CLUSTER MEET failed";
      return;
    }
  }
  ready_ = WaitUntilOk();
  if (!ready_) error_ = "the cluster did not reach cluster_state:ok";
}

bool RedisCluster::WaitUntilOk() {
  for (int i = 0; i < 1000; ++i) {  // up to 10 s
    bool ok = true;
    for (const auto& node : nodes_) {
      ok = ok && node->Command({"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
    }
    // Every node also agrees on every slot's owner.
    if (ok) {
      const std::string first = nodes_[0]->Command({"CLUSTER", "SLOTS"});
      for (const auto& node : nodes_) ok = ok && node->Command({"CLUSTER", "SLOTS"}) == first;
    }
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string RedisCluster::seeds() const {
  std::string out;
  for (const auto& node : nodes_) out += (out.empty() ? "" : ",") + node->address();
  return out;
}

std::string RedisCluster::NodeId(size_t i) const { return nodes_[i]->Command({"CLUSTER", "MYID"}); }

int RedisCluster::KeySlot(const std::string& key) const {
  return std::atoi(nodes_[0]->Command({"CLUSTER", "KEYSLOT", key}).c_str());
}

int RedisCluster::OwnerOf(int slot) const {
  // The owner is the node whose own line of CLUSTER NODES ("myself") lists the slot.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::string nodes = nodes_[i]->Command({"CLUSTER", "NODES"});
    size_t start = 0;
    while (start < nodes.size()) {
      size_t end = nodes.find('\n', start);
      if (end == std::string::npos) end = nodes.size();
      const std::string line = nodes.substr(start, end - start);
      start = end + 1;
      if (line.find("myself") == std::string::npos) continue;
      // Fields after the 8th are slot ranges: "a-b" or "a".
      size_t field = 0, pos = 0;
      while (pos < line.size()) {
        size_t space = line.find(' ', pos);
        if (space == std::string::npos) space = line.size();
        const std::string f = line.substr(pos, space - pos);
        pos = space + 1;
        if (++field <= 8 || f.empty() || f[0] == '[') continue;
        const size_t dash = f.find('-');
        const int lo = std::atoi(f.c_str());
        const int hi = dash == std::string::npos ? lo : std::atoi(f.c_str() + dash + 1);
        if (slot >= lo && slot <= hi) return static_cast<int>(i);
      }
    }
  }
  return -1;
}

bool RedisCluster::MoveSlot(int slot, size_t to, bool finish) {
  const int from = OwnerOf(slot);
  if (from < 0 || static_cast<size_t>(from) == to) return from >= 0;
  RedisServer& source = *nodes_[static_cast<size_t>(from)];
  RedisServer& target = *nodes_[to];
  const std::string s = std::to_string(slot);
  if (target.Command({"CLUSTER", "SETSLOT", s, "IMPORTING", NodeId(static_cast<size_t>(from))}) !=
          "OK" ||
      source.Command({"CLUSTER", "SETSLOT", s, "MIGRATING", NodeId(to)}) != "OK") {
    return false;
  }
  while (true) {
    const std::string keys = source.Command({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (keys.empty()) break;
    std::vector<std::string> args = {"MIGRATE", "127.0.0.1", std::to_string(target.port()), "", "0",
                                     "5000",    "KEYS"};
    size_t start = 0;
    while (start < keys.size()) {
      size_t end = keys.find('\n', start);
      if (end == std::string::npos) end = keys.size();
      args.push_back(keys.substr(start, end - start));
      start = end + 1;
    }
    if (source.Command(args) != "OK") return false;
  }
  return !finish || Finish(slot, to);
}

// The target first, then the rest, as redis-cli does: a source told first would send clients to
// a target that, still importing, sends them back.
bool RedisCluster::Finish(int slot, size_t to) {
  const std::string id = NodeId(to);
  std::vector<size_t> order = {to};
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (i != to) order.push_back(i);
  }
  for (size_t i : order) {
    if (nodes_[i]->Command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", id}) != "OK") {
      return false;
    }
  }
  return WaitUntilOk();
}

}  // namespace hourglass::testing

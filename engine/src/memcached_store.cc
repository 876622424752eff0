#include "hourglass/memcached_store.h"

#include <fmt/format.h>
#include <libmemcached-1.0/memcached.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <ctime>
#include <mutex>

#include "hourglass/key_codec.h"
#include "memcached_connection.h"

namespace hourglass {
namespace {

constexpr int64_t kMaxRelativeTtl = 30 * 86400;  // memcached reads larger values as Unix times

std::optional<uint64_t> ParseCounter(const char* data, size_t length) {
  // incr/decr values are decimal; decr may leave trailing spaces.
  uint64_t value = 0;
  size_t i = 0;
  for (; i < length && std::isdigit(static_cast<unsigned char>(data[i])); ++i) {
    value = value * 10 + static_cast<uint64_t>(data[i] - '0');
  }
  if (i == 0) return std::nullopt;
  for (; i < length; ++i) {
    if (data[i] != ' ') return std::nullopt;
  }
  return value;
}

bool ValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  int value = 0;
  for (char c : port) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  return value >= 1 && value <= 65535;
}

}  // namespace

Result<std::vector<std::string>> ParseServers(std::string_view list) {
  std::vector<std::string> servers;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view server = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (server.empty()) continue;
    const size_t colon = server.rfind(':');
    const std::string_view host =
        colon == std::string_view::npos ? server : server.substr(0, colon);
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    const bool host_ok = !host.empty() && (bracketed || host.find(':') == std::string_view::npos);
    bool chars_ok = true;
    for (unsigned char c : host) {
      chars_ok = chars_ok && (std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == '[' ||
                              c == ']' || c == ':');
    }
    if (colon == std::string_view::npos || !host_ok || !chars_ok ||
        !ValidPort(server.substr(colon + 1))) {
      return InvalidArgument(fmt::format(
          "server \"{}\": expected host:port (e.g. 127.0.0.1:11211 or [::1]:11211)", server));
    }
    servers.emplace_back(server);
  }
  if (servers.empty()) return InvalidArgument("no memcached server given; e.g. 127.0.0.1:11211");
  return servers;
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// More unanswered no-ops than this on one connection and a request waits for them first, so the
// answers of fire-and-forget requests never pile up in the socket.
constexpr int kMaxUnreadNoops = 32;

// A pooled connection idle this long is checked for a close by the server before it is used.
constexpr std::chrono::milliseconds kIdleProbeAfter{500};

// One memcached server: its address and its connections.
struct Server {
  std::string host;  // without brackets
  std::string port;
  std::string name;  // "memcached host:port", for messages

  std::mutex mu;
  std::condition_variable freed;
  std::vector<std::unique_ptr<MemcachedConnection>> idle;  // guarded by mu
  uint32_t open = 0;                                       // idle + leased; guarded by mu
  SteadyClock::time_point retry_at{};  // after a failure, fail fast until then; guarded by mu
  std::string failure;                 // what failed; guarded by mu
};

// "host:port", or "[v6]:port".
std::string HostPort(const Server& server) {
  if (server.host.find(':') != std::string::npos) {
    return fmt::format("[{}]:{}", server.host, server.port);
  }
  return fmt::format("{}:{}", server.host, server.port);
}

// What an answer line other than the expected ones means.
Error LineError(const Server& server, std::string_view line) {
  if (line == "ERROR") {
    return Error(ErrorCode::kInternal,
                 fmt::format("{}: the server does not understand a meta command (ma/md/mn); "
                             "hourglass needs memcached >= 1.6",
                             server.name));
  }
  const ErrorCode code =
      line.starts_with("SERVER_ERROR") ? ErrorCode::kUnavailable : ErrorCode::kInternal;
  return Error(code, fmt::format("{}: unexpected answer \"{}\"", server.name,
                                 line.substr(0, std::min<size_t>(line.size(), 200))));
}

// The request for a batch: one "ma" (meta arithmetic) per increment, then one "get" of every
// read key, or a "mn" no-op when nothing is read. With q, "ma" answers only when it creates a
// key ("HD"), misses one ("NF") or fails; the create-with-initial-value is atomic on the server.
void BuildRequest(const Batch& batch, std::string& out) {
  out.clear();
  const int64_t now = static_cast<int64_t>(time(nullptr));
  for (const Increment& inc : batch.increments) {
    if (inc.delta > 0) {
      const int64_t ttl = inc.ttl.count();
      fmt::format_to(std::back_inserter(out), "ma {} N{} J{} D{} q\r\n", inc.key,
                     ttl > kMaxRelativeTtl ? now + ttl : ttl, inc.delta, inc.delta);
    } else {
      // Decrement floors at 0; a missing key stays missing ("NF").
      fmt::format_to(std::back_inserter(out), "ma {} MD D{} q\r\n", inc.key, -inc.delta);
    }
  }
  if (batch.reads.empty()) {
    out += "mn\r\n";
    return;
  }
  out += "get";
  for (const std::string& key : batch.reads) {
    out += ' ';
    out += key;
  }
  out += "\r\n";
}

}  // namespace

struct MemcachedStore::Impl {
  MemcachedOptions options;
  std::string description;
  // libmemcached's consistent-hash (ketama) ring, used only to pick the server of a group, so
  // hourglass places keys where any libmemcached client listing the same servers does.
  memcached_st* ring = nullptr;
  std::vector<std::unique_ptr<Server>> servers;  // by ring position
  std::atomic<uint64_t> unconfirmed_failures{0};

  ~Impl() {
    // A process that ends right after a fire-and-forget batch (a one-shot check's take-back)
    // must not close a socket with unread answers (the kernel would send a reset).
    Settle();
    if (ring != nullptr) memcached_free(ring);
  }

  // Reads the answers of fire-and-forget batches on every idle connection (bounded by io_timeout
  // per connection); a connection that cannot answer counts as one unconfirmed failure.
  void Settle() {
    for (const std::unique_ptr<Server>& server : servers) {
      std::lock_guard lock(server->mu);
      std::erase_if(server->idle, [&](const std::unique_ptr<MemcachedConnection>& c) {
        if (c->unread_noops == 0 || ReadUnreadNoops(*server, *c).ok()) return false;
        unconfirmed_failures.fetch_add(1, std::memory_order_relaxed);
        --server->open;
        return true;  // out of step: dropped
      });
    }
  }

  Server& ServerOf(const std::string& group) const {
    if (servers.size() == 1) return *servers[0];
    // Read-only on the ring (no auto-eject), so safe from many threads.
    return *servers[memcached_generate_hash(ring, group.data(), group.size()) % servers.size()];
  }

  // A connection of one server, returned to its idle list when the lease ends unless dropped.
  class Lease {
   public:
    Lease(Impl& impl, Server& server) : impl_(impl), server_(server) {}
    ~Lease() {
      if (connection_ == nullptr) return;
      connection_->idle_since = SteadyClock::now();
      std::lock_guard lock(server_.mu);
      server_.idle.push_back(std::move(connection_));
      server_.freed.notify_one();
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    Status Acquire() {
      const auto& o = impl_.options;
      std::unique_lock lock(server_.mu);
      const auto deadline = SteadyClock::now() + o.pool_wait;
      while (true) {
        if (SteadyClock::now() < server_.retry_at) {
          return Error(ErrorCode::kUnavailable,
                       fmt::format("{}: failed less than {} s ago ({}); not retried yet",
                                   server_.name, o.retry_timeout.count(), server_.failure));
        }
        while (!server_.idle.empty()) {
          connection_ = std::move(server_.idle.back());
          server_.idle.pop_back();
          // A connection idle a while may have been closed by a server that restarted since:
          // use a new one rather than fail a request on it. Busy connections skip the check.
          if (SteadyClock::now() - connection_->idle_since < kIdleProbeAfter ||
              !connection_->PeerClosed()) {
            return {};
          }
          connection_.reset();
          --server_.open;
        }
        if (server_.open < o.pool_size) break;
        if (server_.freed.wait_until(lock, deadline) == std::cv_status::timeout &&
            server_.idle.empty()) {
          return Error(ErrorCode::kUnavailable,
                       fmt::format("{}: all {} connections busy for {} s", server_.name,
                                   o.pool_size, o.pool_wait.count()));
        }
      }
      ++server_.open;
      lock.unlock();
      Result<std::unique_ptr<MemcachedConnection>> opened =
          MemcachedConnection::Open(server_.host, server_.port, o.connect_timeout, o.io_timeout);
      if (!opened.ok()) {
        lock.lock();
        --server_.open;
        server_.freed.notify_one();
        lock.unlock();
        return Fail(opened.error());
      }
      connection_ = std::move(*opened);
      return {};
    }

    MemcachedConnection& operator*() const { return *connection_; }
    MemcachedConnection* operator->() const { return connection_.get(); }

    // Drops the connection (its state is unknown after `error`); an I/O failure also makes the
    // server fail fast for retry_timeout and drops its idle connections, which are likely dead
    // too. Returns the error, naming the server.
    Error Fail(const Error& error) {
      Error named(error.code(), error.message().starts_with(server_.name)
                                    ? error.message()
                                    : fmt::format("{}: {}", server_.name, error.message()));
      std::lock_guard lock(server_.mu);
      if (connection_ != nullptr) {
        connection_.reset();
        --server_.open;
      }
      if (error.code() == ErrorCode::kUnavailable || error.code() == ErrorCode::kDeadlineExceeded) {
        server_.retry_at = SteadyClock::now() + impl_.options.retry_timeout;
        server_.failure = error.message();
        server_.open -= static_cast<uint32_t>(server_.idle.size());
        server_.idle.clear();
      }
      server_.freed.notify_all();
      return named;
    }

   private:
    Impl& impl_;
    Server& server_;
    std::unique_ptr<MemcachedConnection> connection_;
  };

  // Reads the answers up to every unread "MN" ("mn" answers after everything sent before it).
  // Failures of requests sent without waiting cannot reach their callers any more: they are
  // counted. With `last`, the failures before the last MN belong to the caller (its own request)
  // and the first of them is stored there instead.
  Status ReadUnreadNoops(const Server& server, MemcachedConnection& c,
                         std::optional<Error>* last = nullptr) {
    while (c.unread_noops > 0) {
      Result<std::string_view> line = c.ReadLine();
      if (!line.ok()) return line.error();
      if (*line == "MN") {
        --c.unread_noops;
      } else if (*line == "ERROR") {
        return LineError(server, *line);
      } else if (*line != "HD" && *line != "NF") {
        if (last != nullptr && c.unread_noops == 1) {
          if (!*last) *last = LineError(server, *line);
        } else {
          unconfirmed_failures.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    return {};
  }
};

MemcachedStore::MemcachedStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MemcachedStore::~MemcachedStore() = default;

Result<std::unique_ptr<MemcachedStore>> MemcachedStore::Create(const MemcachedOptions& options) {
  if (options.servers.empty()) return InvalidArgument("no memcached server given");
  for (const std::string& server : options.servers) {
    if (Result<std::vector<std::string>> parsed = ParseServers(server); !parsed.ok()) {
      return parsed.error();
    }
  }
  if (options.pool_size < 1) return InvalidArgument("pool_size must be >= 1");
  if (options.connect_timeout.count() < 1 || options.io_timeout.count() < 1) {
    return InvalidArgument("connect_timeout and io_timeout must be >= 1ms");
  }
  std::string config;
  for (const std::string& server : options.servers) config += fmt::format("--SERVER={} ", server);
  config += "--DISTRIBUTION=consistent";
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->description = "memcached " + fmt::format("{}", fmt::join(options.servers, ","));
  impl->ring = memcached(config.data(), config.size());
  if (impl->ring == nullptr) {
    return Error(ErrorCode::kInternal, "libmemcached rejected the configuration: " + config);
  }
  const uint32_t count = memcached_server_count(impl->ring);
  for (uint32_t i = 0; i < count; ++i) {
    const memcached_instance_st* instance = memcached_server_instance_by_position(impl->ring, i);
    auto server = std::make_unique<Server>();
    server->host = memcached_server_name(instance);
    server->port = std::to_string(memcached_server_port(instance));
    server->name = "memcached " + HostPort(*server);
    impl->servers.push_back(std::move(server));
  }
  if (impl->servers.empty()) return InvalidArgument("no memcached server given");
  return std::unique_ptr<MemcachedStore>(new MemcachedStore(std::move(impl)));
}

std::string MemcachedStore::Describe() const { return impl_->description; }

uint64_t MemcachedStore::Settle() {
  impl_->Settle();
  return unconfirmed_failures();
}

uint64_t MemcachedStore::unconfirmed_failures() const {
  return impl_->unconfirmed_failures.load(std::memory_order_relaxed);
}

Result<std::vector<uint64_t>> MemcachedStore::Apply(const Batch& batch) {
  if (Status s = ValidateBatch(batch); !s.ok()) return s.error();
  Server& server = impl_->ServerOf(batch.group);
  Impl::Lease c(*impl_, server);
  if (Status s = c.Acquire(); !s.ok()) return s.error();
  if (c->unread_noops >= kMaxUnreadNoops) {
    if (Status s = impl_->ReadUnreadNoops(server, *c); !s.ok()) return c.Fail(s.error());
  }
  thread_local std::string request;
  BuildRequest(batch, request);
  if (Status s = c->Send(request); !s.ok()) return c.Fail(s.error());
  std::vector<uint64_t> values(batch.reads.size(), 0);
  if (batch.reads.empty()) {
    ++c->unread_noops;  // fire-and-forget: its answer is read by the connection's next user
    return values;
  }
  if (Status s = impl_->ReadUnreadNoops(server, *c); !s.ok()) return c.Fail(s.error());

  // One server answers a get in the order of its keys, skipping missing ones: match with a cursor
  // (and search from the start only if an answer ever comes out of order).
  size_t cursor = 0;
  const auto find = [&](std::string_view key) -> std::optional<size_t> {
    for (size_t i = cursor; i < batch.reads.size(); ++i) {
      if (batch.reads[i] == key) return cursor = i + 1, i;
    }
    for (size_t i = 0; i < cursor && i < batch.reads.size(); ++i) {
      if (batch.reads[i] == key) return i;
    }
    return std::nullopt;
  };
  std::optional<Error> error;  // an answer in step but unexpected: reported after END
  while (true) {
    Result<std::string_view> line = c->ReadLine();
    if (!line.ok()) return c.Fail(line.error());
    if (*line == "END") break;
    if (*line == "HD" || *line == "NF") continue;  // a key created, a decrement of a missing key
    if (!line->starts_with("VALUE ")) {
      if (*line == "ERROR") return c.Fail(LineError(server, *line));  // may be out of step
      if (!error) error = LineError(server, *line);
      continue;
    }
    // VALUE <key> <flags> <bytes>
    const std::string_view rest = line->substr(6);
    const size_t key_end = rest.find(' ');
    const size_t flags_end =
        key_end == std::string_view::npos ? key_end : rest.find(' ', key_end + 1);
    size_t bytes = 0;
    const std::string_view length =
        flags_end == std::string_view::npos ? std::string_view{} : rest.substr(flags_end + 1);
    if (length.empty() ||
        std::from_chars(length.data(), length.data() + length.size(), bytes).ec != std::errc{}) {
      return c.Fail(Error(ErrorCode::kInternal, fmt::format("malformed answer \"{}\"", *line)));
    }
    const std::string key(rest.substr(0, key_end));
    Result<std::string_view> data = c->ReadBlock(bytes);
    if (!data.ok()) return c.Fail(data.error());
    const std::optional<size_t> slot = find(key);
    const std::optional<uint64_t> value = ParseCounter(data->data(), data->size());
    if (!slot.has_value() || !value.has_value()) {
      if (!error) {
        error = Error(ErrorCode::kInternal,
                      fmt::format("{}: unexpected item \"{}\" in answer to get", server.name, key));
      }
      continue;  // read the rest of the answer
    }
    values[*slot] = *value;
  }
  if (error) return *error;
  return values;
}

Status MemcachedStore::Delete(const std::string& group, std::span<const std::string> keys) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  Server& server = impl_->ServerOf(group);
  Impl::Lease c(*impl_, server);
  if (Status s = c.Acquire(); !s.ok()) return s.error();
  std::string request;
  for (const std::string& key : keys) request += fmt::format("md {} q\r\n", key);
  request += "mn\r\n";  // answered after every delete: one round trip confirms them all
  if (Status s = c->Send(request); !s.ok()) return c.Fail(s.error());
  ++c->unread_noops;
  // The deletes' own failures come before the last MN; anything else is an earlier request's.
  std::optional<Error> error;
  if (Status s = impl_->ReadUnreadNoops(server, *c, &error); !s.ok()) return c.Fail(s.error());
  if (error) return *error;
  return {};
}

Result<std::string> MemcachedStore::ServerFor(const std::string& group) {
  return HostPort(impl_->ServerOf(group));
}

}  // namespace hourglass

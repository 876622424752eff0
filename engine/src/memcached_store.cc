#include "hourglass/memcached_store.h"

#include <fmt/format.h>
#include <libmemcached-1.0/memcached.h>
#include <libmemcachedutil-1.0/pool.h>

#include <cctype>
#include <ctime>

#include "hourglass/key_codec.h"

namespace hourglass {
namespace {

constexpr int64_t kMaxRelativeTtl = 30 * 86400;  // memcached reads larger values as Unix times

// The one place memcached's return codes become hourglass errors.
ErrorCode CodeFor(memcached_return_t rc) {
  switch (rc) {
    case MEMCACHED_TIMEOUT:
      return ErrorCode::kDeadlineExceeded;
    case MEMCACHED_CONNECTION_FAILURE:
    case MEMCACHED_CONNECTION_BIND_FAILURE:
    case MEMCACHED_CONNECTION_SOCKET_CREATE_FAILURE:
    case MEMCACHED_HOST_LOOKUP_FAILURE:
    case MEMCACHED_WRITE_FAILURE:
    case MEMCACHED_READ_FAILURE:
    case MEMCACHED_UNKNOWN_READ_FAILURE:
    case MEMCACHED_ERRNO:
    case MEMCACHED_SERVER_ERROR:
    case MEMCACHED_SERVER_MEMORY_ALLOCATION_FAILURE:
    case MEMCACHED_SERVER_TEMPORARILY_DISABLED:
    case MEMCACHED_SERVER_MARKED_DEAD:
    case MEMCACHED_NO_SERVERS:
    case MEMCACHED_IN_PROGRESS:
      return ErrorCode::kUnavailable;
    case MEMCACHED_BAD_KEY_PROVIDED:
    case MEMCACHED_KEY_TOO_BIG:
      return ErrorCode::kInvalidArgument;
    default:
      return ErrorCode::kInternal;
  }
}

bool IsStoreSuccess(memcached_return_t rc) {
  // With noreply, add answers nothing: SUCCESS or BUFFERED. NOTSTORED: the key already existed.
  return rc == MEMCACHED_SUCCESS || rc == MEMCACHED_BUFFERED || rc == MEMCACHED_NOTSTORED ||
         rc == MEMCACHED_STORED;
}

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

struct MemcachedStore::Impl {
  memcached_pool_st* pool = nullptr;
  MemcachedOptions options;
  std::string description;

  ~Impl() {
    if (pool != nullptr) memcached_pool_destroy(pool);
  }

  // A pooled connection, returned to the pool when it goes out of scope.
  class Lease {
   public:
    Lease(Impl& impl, memcached_return_t& rc) : impl_(impl) {
      timespec wait{static_cast<time_t>(impl.options.pool_wait.count()), 0};
      handle_ = memcached_pool_fetch(impl.pool, &wait, &rc);
    }
    ~Lease() {
      if (handle_ != nullptr) memcached_pool_release(impl_.pool, handle_);
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    memcached_st* get() const { return handle_; }

   private:
    Impl& impl_;
    memcached_st* handle_ = nullptr;
  };

  std::string ServerName(memcached_st* m, const std::string& group) const {
    memcached_return_t rc;
    const memcached_instance_st* server =
        memcached_server_by_key(m, group.data(), group.size(), &rc);
    if (server == nullptr) return description;
    return fmt::format("memcached {}:{}", memcached_server_name(server),
                       memcached_server_port(server));
  }

  Error Fail(memcached_st* m, memcached_return_t rc, const std::string& group,
             std::string_view what) const {
    const char* detail = m != nullptr ? memcached_last_error_message(m) : nullptr;
    std::string message =
        fmt::format("{}: {} failed: {}", m != nullptr ? ServerName(m, group) : description, what,
                    detail != nullptr && *detail != '\0' ? detail : memcached_strerror(m, rc));
    if (m != nullptr) {
      // Whatever was half sent or half read on this connection is abandoned with it, so the next
      // user of the handle starts on a clean connection.
      memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 0);
      memcached_quit(m);
    }
    return Error(CodeFor(rc), std::move(message));
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
  if (options.dead_timeout < std::chrono::seconds{1}) {
    return InvalidArgument("dead_timeout must be >= 1s, or an ejected server never comes back");
  }
  if (options.pool_size < 1) return InvalidArgument("pool_size must be >= 1");
  if (options.connect_timeout.count() < 1 || options.io_timeout.count() < 1) {
    return InvalidArgument("connect_timeout and io_timeout must be >= 1ms");
  }
  std::string config;
  for (const std::string& server : options.servers) config += fmt::format("--SERVER={} ", server);
  config += fmt::format(
      "--DISTRIBUTION=consistent --TCP-NODELAY --CONNECT-TIMEOUT={} --POLL-TIMEOUT={} "
      "--RETRY-TIMEOUT={} --REMOVE-FAILED-SERVERS=1 --POOL-MIN=1 --POOL-MAX={}",
      options.connect_timeout.count(), options.io_timeout.count(), options.retry_timeout.count(),
      options.pool_size);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->description = "memcached " + fmt::format("{}", fmt::join(options.servers, ","));
  impl->pool = memcached_pool(config.data(), config.size());
  if (impl->pool == nullptr) {
    return Error(ErrorCode::kInternal, "libmemcached rejected the configuration: " + config);
  }
  memcached_return_t rc =
      memcached_pool_behavior_set(impl->pool, MEMCACHED_BEHAVIOR_DEAD_TIMEOUT,
                                  static_cast<uint64_t>(options.dead_timeout.count()));
  if (rc != MEMCACHED_SUCCESS) {
    return Error(ErrorCode::kInternal, "libmemcached: cannot set DEAD_TIMEOUT");
  }
  return std::unique_ptr<MemcachedStore>(new MemcachedStore(std::move(impl)));
}

std::string MemcachedStore::Describe() const { return impl_->description; }

Result<std::vector<uint64_t>> MemcachedStore::Apply(const Batch& batch) {
  if (Status s = ValidateBatch(batch); !s.ok()) return s.error();
  memcached_return_t rc;
  Impl::Lease lease(*impl_, rc);
  memcached_st* m = lease.get();
  if (m == nullptr) return impl_->Fail(nullptr, rc, batch.group, "waiting for a free connection");
  const std::string& g = batch.group;

  if (!batch.increments.empty()) {
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 1);
    const time_t now = time(nullptr);
    for (const Increment& inc : batch.increments) {
      uint64_t ignored = 0;
      if (inc.delta > 0) {
        const int64_t ttl = inc.ttl.count();
        const time_t expiration = ttl > kMaxRelativeTtl ? now + ttl : static_cast<time_t>(ttl);
        rc = memcached_add_by_key(m, g.data(), g.size(), inc.key.data(), inc.key.size(), "0", 1,
                                  expiration, 0);
        if (!IsStoreSuccess(rc)) return impl_->Fail(m, rc, g, "add " + inc.key);
        rc = memcached_increment_by_key(m, g.data(), g.size(), inc.key.data(), inc.key.size(),
                                        static_cast<uint64_t>(inc.delta), &ignored);
      } else {
        rc = memcached_decrement_by_key(m, g.data(), g.size(), inc.key.data(), inc.key.size(),
                                        static_cast<uint64_t>(-inc.delta), &ignored);
      }
      if (!IsStoreSuccess(rc)) return impl_->Fail(m, rc, g, "incr/decr " + inc.key);
    }
    memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 0);
  }
  std::vector<uint64_t> values(batch.reads.size(), 0);
  if (batch.reads.empty()) {
    rc = memcached_flush_buffers(m);
    if (rc != MEMCACHED_SUCCESS) return impl_->Fail(m, rc, g, "flush");
    return values;
  }

  std::vector<const char*> keys;
  std::vector<size_t> lengths;
  keys.reserve(batch.reads.size());
  lengths.reserve(batch.reads.size());
  for (const std::string& key : batch.reads) {
    keys.push_back(key.data());
    lengths.push_back(key.size());
  }
  rc = memcached_mget_by_key(m, g.data(), g.size(), keys.data(), lengths.data(), keys.size());
  if (rc != MEMCACHED_SUCCESS) return impl_->Fail(m, rc, g, "get");

  memcached_result_st result_storage;
  memcached_result_st* result = memcached_result_create(m, &result_storage);
  std::optional<Error> error;
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
  while (memcached_fetch_result(m, result, &rc) != nullptr) {
    const std::string_view key(memcached_result_key_value(result),
                               memcached_result_key_length(result));
    const std::optional<size_t> slot = find(key);
    const std::optional<uint64_t> value =
        ParseCounter(memcached_result_value(result), memcached_result_length(result));
    if (!slot.has_value() || !value.has_value()) {
      error = Error(ErrorCode::kInternal, fmt::format("{}: unexpected item \"{}\" in answer to get",
                                                      impl_->ServerName(m, g), key));
      continue;  // drain the rest of the answer
    }
    values[*slot] = *value;
  }
  memcached_result_free(result);
  if (rc != MEMCACHED_END && rc != MEMCACHED_NOTFOUND && rc != MEMCACHED_SUCCESS) {
    return impl_->Fail(m, rc, g, "get");
  }
  if (error) return *error;
  return values;
}

Status MemcachedStore::Delete(const std::string& group, std::span<const std::string> keys) {
  if (Status s = ValidateKeys(group, keys); !s.ok()) return s;
  memcached_return_t rc;
  Impl::Lease lease(*impl_, rc);
  memcached_st* m = lease.get();
  if (m == nullptr) return impl_->Fail(nullptr, rc, group, "waiting for a free connection");
  memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 1);
  for (const std::string& key : keys) {
    rc = memcached_delete_by_key(m, group.data(), group.size(), key.data(), key.size(), 0);
    if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_BUFFERED && rc != MEMCACHED_NOTFOUND) {
      return impl_->Fail(m, rc, group, "delete " + key);
    }
  }
  memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 0);
  // A get of nothing-in-particular confirms the deletes reached the server: one round trip.
  const char* probe = group.data();
  const size_t probe_length = group.size();
  rc = memcached_mget_by_key(m, group.data(), group.size(), &probe, &probe_length, 1);
  if (rc != MEMCACHED_SUCCESS) return impl_->Fail(m, rc, group, "get after delete");
  memcached_result_st result_storage;
  memcached_result_st* result = memcached_result_create(m, &result_storage);
  while (memcached_fetch_result(m, result, &rc) != nullptr) {
  }
  memcached_result_free(result);
  if (rc != MEMCACHED_END && rc != MEMCACHED_NOTFOUND && rc != MEMCACHED_SUCCESS) {
    return impl_->Fail(m, rc, group, "get after delete");
  }
  return {};
}

Result<std::string> MemcachedStore::ServerFor(const std::string& group) {
  memcached_return_t rc;
  Impl::Lease lease(*impl_, rc);
  memcached_st* m = lease.get();
  if (m == nullptr) return impl_->Fail(nullptr, rc, group, "waiting for a free connection");
  const memcached_instance_st* server = memcached_server_by_key(m, group.data(), group.size(), &rc);
  if (server == nullptr) return impl_->Fail(m, rc, group, "server lookup");
  return fmt::format("{}:{}", memcached_server_name(server), memcached_server_port(server));
}

}  // namespace hourglass

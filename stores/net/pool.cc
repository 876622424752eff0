#include "hourglass/net/pool.h"

#include <fmt/format.h>

#include <utility>

namespace hourglass::net {

ServerPool::ServerPool(ServerAddress address, PoolOptions options, const Clock& clock,
                       std::string_view kind)
    : address_(std::move(address)),
      kind_(kind),
      name_(fmt::format("{} {}", kind, HostPort(address_))),
      options_(options),
      clock_(clock) {}

void ServerPool::SweepIdle(const std::function<bool(PooledConnection&)>& keep) {
  std::lock_guard lock(mu_);
  std::erase_if(idle_, [&](const std::unique_ptr<PooledConnection>& c) {
    if (keep(*c)) return false;
    --open_;
    return true;
  });
}

Lease::~Lease() {
  if (connection_ == nullptr) return;
  connection_->idle_since = pool_.clock_.Monotonic();
  bool back = false;
  {
    std::lock_guard lock(pool_.mu_);
    pool_.idle_.push_back(std::move(connection_));
    pool_.freed_.notify_one();
    back = std::exchange(pool_.down_, false);
  }
  // A lease handed back whole ended in a complete exchange: the server answers again.
  if (back && pool_.options_.on_transition) {
    pool_.options_.on_transition(
        {.kind = pool_.kind_, .server = HostPort(pool_.address_), .reachable = true, .error = ""});
  }
}

bool Lease::TakeIdle() {
  while (!pool_.idle_.empty()) {
    connection_ = std::move(pool_.idle_.back());
    pool_.idle_.pop_back();
    // A connection idle a while may have been closed by a server that restarted since: use a
    // new one rather than fail a request on it. Busy connections skip the check.
    const bool fresh =
        pool_.clock_.Monotonic() - connection_->idle_since < pool_.options_.idle_check_after;
    if (fresh || !connection_->socket->PeerClosed()) {
      reused_ = true;
      return true;
    }
    connection_.reset();
    --pool_.open_;
  }
  return false;
}

Status Lease::Acquire() {
  const PoolOptions& o = pool_.options_;
  std::unique_lock lock(pool_.mu_);
  const auto deadline = std::chrono::steady_clock::now() + o.pool_wait;  // an OS-timed wait
  while (true) {
    if (pool_.clock_.Monotonic() < pool_.retry_at_) {
      return Error(ErrorCode::kUnavailable,
                   fmt::format("{}: failed less than {} s ago ({}); not retried yet", pool_.name_,
                               o.retry_timeout.count(), pool_.failure_));
    }
    if (TakeIdle()) return {};
    if (pool_.open_ < o.pool_size) break;
    if (pool_.freed_.wait_until(lock, deadline) == std::cv_status::timeout && pool_.idle_.empty()) {
      return Error(ErrorCode::kUnavailable,
                   fmt::format("{}: all {} connections busy for {} s", pool_.name_, o.pool_size,
                               o.pool_wait.count()));
    }
  }
  ++pool_.open_;
  lock.unlock();
  return Open();
}

Status Lease::Open() {
  const PoolOptions& o = pool_.options_;
  Result<std::unique_ptr<Connection>> opened =
      Connection::Open(pool_.address_.host, pool_.address_.port, o.connect_timeout, o.io_timeout);
  if (!opened.ok()) {
    {
      std::lock_guard lock(pool_.mu_);
      --pool_.open_;
      pool_.freed_.notify_one();
    }
    return Fail(opened.error());
  }
  connection_ = std::make_unique<PooledConnection>();
  connection_->socket = std::move(*opened);
  if (o.on_open) {
    connection_->socket->BeginExchange();
    if (Status s = o.on_open(*connection_); !s.ok()) return Fail(s.error());
  }
  return {};
}

Error Lease::Fail(const Error& error) {
  Error named(error.code(), error.message().starts_with(pool_.name_)
                                ? error.message()
                                : fmt::format("{}: {}", pool_.name_, error.message()));
  bool lost = false;
  {
    std::lock_guard lock(pool_.mu_);
    if (connection_ != nullptr) {
      connection_.reset();
      --pool_.open_;
    }
    const bool transport =
        error.code() == ErrorCode::kUnavailable || error.code() == ErrorCode::kDeadlineExceeded;
    if (transport) {
      pool_.open_ -= static_cast<uint32_t>(pool_.idle_.size());
      pool_.idle_.clear();
    }
    if (transport && !(reused_ && error.code() == ErrorCode::kUnavailable)) {
      pool_.retry_at_ = pool_.clock_.Monotonic() + pool_.options_.retry_timeout;
      pool_.failure_ = error.message();
      lost = !std::exchange(pool_.down_, true);
    }
    pool_.freed_.notify_all();
  }
  if (lost && pool_.options_.on_transition) {
    pool_.options_.on_transition({.kind = pool_.kind_,
                                  .server = HostPort(pool_.address_),
                                  .reachable = false,
                                  .error = named.message()});
  }
  return named;
}

}  // namespace hourglass::net

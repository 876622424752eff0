#include "hourglass/check_front_end.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <optional>
#include <thread>

namespace hourglass {
namespace {

thread_local CheckFrontEnd::Gather* gathering = nullptr;  // this thread's innermost Gather

}  // namespace

// Batches at the store at once: while one is on its way, the next (of other features: the batcher
// keeps a feature in one batch at the store) is sent on another of the store's pooled connections.
constexpr size_t kBatchesInFlight = 2;

struct CheckFrontEnd::Impl {
  Impl(const Engine& e, ServiceMetrics* metrics, DecisionSink s)
      : engine(e),
        sink(std::move(s)),
        answering(std::max(1u, std::thread::hardware_concurrency())) {
    batcher.emplace(
        e, 256,
        [metrics](size_t checks) {
          if (metrics != nullptr) metrics->CountBatch(checks);
        },
        kBatchesInFlight);
  }
  // The batcher first: it waits for its jobs, whose answers may still go to the pool, which then
  // runs every answer it was given.
  ~Impl() {
    batcher.reset();
    answering.join();
  }

  const Engine& engine;
  const DecisionSink sink;
  std::atomic<int> in_flight{0};       // requests at the store and not yet answered
  boost::asio::thread_pool answering;  // builds the answers of requests that were not alone
  std::optional<CheckBatcher> batcher;
};

CheckFrontEnd::CheckFrontEnd(const Engine& engine, ServiceMetrics* metrics, DecisionSink sink)
    : impl_(std::make_unique<Impl>(engine, metrics, std::move(sink))) {}

CheckFrontEnd::~CheckFrontEnd() = default;

void CheckFrontEnd::Submit(std::vector<OwnedCheck> checks, Done done, Engine::LocalScope local) {
  if (std::optional<Engine::RequestDecision> decided = DecideAtOnce(checks, local)) {
    return done(std::move(checks), std::move(*decided));
  }
  SubmitToStore(std::move(checks), std::move(done), local);
}

std::optional<Engine::RequestDecision> CheckFrontEnd::DecideAtOnce(
    const std::vector<OwnedCheck>& checks, Engine::LocalScope local) {
  if (checks.empty()) return Engine::RequestDecision{true, {}};  // nothing decided: no sink
  std::optional<Engine::RequestDecision> decided =
      impl_->engine.CheckAllIfBlocked(RequestsOf(checks), local);  // denied moments ago
  if (decided && impl_->sink) impl_->sink(checks, *decided);
  return decided;
}

void CheckFrontEnd::SubmitToStore(std::vector<OwnedCheck> checks, Done done,
                                  Engine::LocalScope local) {
  if (impl_->sink) {
    done = [sink = &impl_->sink, done = std::move(done)](std::vector<OwnedCheck> decided_checks,
                                                         Result<Engine::RequestDecision> decided) {
      if (decided.ok()) (*sink)(decided_checks, *decided);
      done(std::move(decided_checks), std::move(decided));
    };
  }
  impl_->in_flight.fetch_add(1, std::memory_order_relaxed);
  CheckJob job{std::move(checks), nullptr, local};
  // Requests handed over whole are answered on the sending thread: their protocol's answers are
  // cheap and go to their connection's own thread anyway.
  const bool handed = gathering != nullptr && &gathering->front_ == this && gathering->hand_over_;
  job.done = [impl = impl_.get(), done = std::move(done), handed](
                 std::vector<OwnedCheck> decided_checks, Result<Engine::RequestDecision> decided) {
    // Alone, the request is answered here at once; otherwise off the sending thread, which
    // serves every request's batches.
    const bool alone = handed || impl->in_flight.load(std::memory_order_relaxed) == 1;
    auto answer =
        [impl, done,
         shared =
             std::make_shared<std::pair<std::vector<OwnedCheck>, Result<Engine::RequestDecision>>>(
                 std::move(decided_checks), std::move(decided))]() mutable {
          impl->in_flight.fetch_sub(1, std::memory_order_relaxed);
          done(std::move(shared->first), std::move(shared->second));
        };
    if (alone) return answer();
    boost::asio::post(impl->answering, std::move(answer));
  };
  if (gathering != nullptr && &gathering->front_ == this) {
    gathering->jobs_.push_back(std::move(job));
    return;
  }
  impl_->batcher->Submit(std::move(job));
}

CheckFrontEnd::Gather::Gather(CheckFrontEnd& front, bool hand_over)
    : front_(front), hand_over_(hand_over), outer_(gathering) {
  gathering = this;
}

CheckFrontEnd::Gather::~Gather() {
  gathering = outer_;
  front_.impl_->batcher->SubmitAll(std::move(jobs_), /*send_here=*/!hand_over_);
}

}  // namespace hourglass

// The one way in for every protocol that decides checks (the HTTP API, Envoy's rate limit
// service): the protocol parses its request and resolves its checks, the front end decides them,
// the protocol builds its answer.
//
//   CheckFrontEnd front(engine, &metrics);
//   front.Submit(std::move(checks), [](std::vector<OwnedCheck> checks,
//                                      Result<Engine::RequestDecision> decided) { ... });
//
// A request every check of which is a client denied moments ago (or, as the caller asks, one
// binding check of which is) is decided at once without the store (Engine::CheckAllIfBlocked),
// and so is a request without checks; any other is batched
// with the requests that arrive while others are at the store (CheckBatcher), whatever protocol
// they came by. `done` is called once, with the checks and their request's decision (as one
// Engine::CheckAll decides them): on the submitting thread when decided at once, on the thread
// that sent the batch when no other request was in flight, and otherwise on one of the front
// end's answering threads (one per core), so that the thread sending every request's batches
// never builds an answer while others wait. `done` must not block.
//
// Thread-safety: Submit may be called from many threads at once. Destroying the front end waits
// for the requests submitted so far to be answered.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "hourglass/check_batcher.h"
#include "hourglass/engine.h"
#include "hourglass/service_metrics.h"

namespace hourglass {

// Hears of every decided request, its checks and decision, on the thread that answers it, before
// its answer is built (an audit log). Must not block for long.
using DecisionSink =
    std::function<void(const std::vector<OwnedCheck>&, const Engine::RequestDecision&)>;

class CheckFrontEnd {
 public:
  using Done = std::function<void(std::vector<OwnedCheck>, Result<Engine::RequestDecision>)>;

  // `engine` and `metrics` (may be null: batches are not counted) must outlive the front end.
  // `sink`, when given, hears of every decided request.
  CheckFrontEnd(const Engine& engine, ServiceMetrics* metrics, DecisionSink sink = nullptr);
  ~CheckFrontEnd();
  CheckFrontEnd(const CheckFrontEnd&) = delete;
  CheckFrontEnd& operator=(const CheckFrontEnd&) = delete;

  // Decides `checks` (one request: all must pass) and calls `done` once. `local` says which
  // requests are answered at once without the store (Engine::CheckAllIfBlocked).
  void Submit(std::vector<OwnedCheck> checks, Done done,
              Engine::LocalScope local = Engine::LocalScope::kEveryCheck);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass

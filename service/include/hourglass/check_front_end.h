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
#include <optional>
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
  // Submit in two steps, for a caller that answers a request decided at once without building
  // `done`: the decision when `checks` can be decided at once (the sink told, unless there are no
  // checks), else nullopt and then SubmitToStore(checks, ...) with the same `local`.
  std::optional<Engine::RequestDecision> DecideAtOnce(
      const std::vector<OwnedCheck>& checks,
      Engine::LocalScope local = Engine::LocalScope::kEveryCheck);
  void SubmitToStore(std::vector<OwnedCheck> checks, Done done,
                     Engine::LocalScope local = Engine::LocalScope::kEveryCheck);

  // While it lives, the requests this thread submits to `front` (and not decided at once) are
  // held, then handed to the batcher together when it ends: for a protocol that reads many
  // requests at once (HTTP/2 carries many calls in one read), so that they share one batch
  // instead of the first going alone while the others wait for the thread. With `hand_over`, the
  // front end's own threads send them and this thread returns at once (an I/O thread whose one
  // connection carries every request: it goes on reading while they are at the store). One per
  // thread at a time; not to be moved across threads.
  class Gather {
   public:
    explicit Gather(CheckFrontEnd& front, bool hand_over = false);
    ~Gather();
    Gather(const Gather&) = delete;
    Gather& operator=(const Gather&) = delete;

   private:
    CheckFrontEnd& front_;
    const bool hand_over_;
    Gather* outer_;  // the thread's gathering before this one (another front end's), if any
    std::vector<CheckJob> jobs_;
    friend class CheckFrontEnd;
  };

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass

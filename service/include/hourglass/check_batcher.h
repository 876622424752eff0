// Gathers the requests that arrive while others are at the store and sends them together as one
// Engine::CheckAllMany, so that concurrent requests bound for one memcached server share one write
// and one read.
//
//   CheckBatcher batcher(engine);
//   batcher.Submit(std::move(job));  // job.done(checks, decisions): once, on a sending thread
//
// No timer: a submitter that finds fewer than max_in_flight batches at the store sends every job
// waiting (its own among them) at once, on its own thread, so a lone request costs no hand-off.
// Jobs arriving meanwhile wait; if any are waiting when that batch is back, one of the batcher's
// own threads sends them, batch after batch, until none waits, and the submitter's thread returns
// to its own work (an I/O thread must not stay away from its connections). A submitter may also
// hand its jobs over at once (SubmitAll's `send_here` false). Under load, batches grow with the
// number of requests arriving during one round trip. Each job's decision is exactly what a lone
// Engine::CheckAll would decide for its checks, in the order the jobs were submitted: a feature
// (event and feature) is in at most one batch at the store at a time, so a job whose feature is
// there waits for that batch, and jobs after it that share one of its features wait behind it;
// jobs of other features go on in the next batch. With batches in flight that shared a feature, a
// check on a store that increments first (memcached) could read the other batch's hit that is
// denied and not yet taken back, and be denied while there was room.
//
// Thread-safety: Submit may be called from many threads at once; `done` callbacks run on the
// sending thread, one after another, and must not block (hand heavy work to another thread).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "hourglass/engine.h"

namespace hourglass {

// One check of a job, owning its arguments.
struct OwnedCheck {
  OwnedCheck() = default;
  OwnedCheck(std::string e, std::string f, Policy p, uint64_t h = 1, bool r = true)
      : event(std::move(e)), feature(std::move(f)), policy(std::move(p)), hits(h), record(r) {}

  std::string event;
  std::string feature;
  Policy policy;
  uint64_t hits = 1;
  bool record = true;   // false: a peek (Engine::Peek), nothing counted
  bool binding = true;  // false: its denial does not deny the request (shadow mode)
  std::string label;    // how errors name it ("checks[2]"); empty for a lone check

  // This check as Engine::CheckAll takes it, at the engine's now; it points into this object,
  // so it is valid while this object lives unmoved.
  Engine::CheckRequest Request() const {
    Engine::CheckRequest request(event, feature, policy, hits);
    request.record = record;
    request.binding = binding;
    request.label = label;
    return request;
  }
};

// The checks of one request, which stand or fall together (Engine::CheckAll), as requests.
std::vector<Engine::CheckRequest> RequestsOf(const std::vector<OwnedCheck>& checks);

struct CheckJob {
  std::vector<OwnedCheck> checks;  // one request: decided by Engine::CheckAll
  // Called once with the checks and their request's decision (or the error refusing it).
  std::function<void(std::vector<OwnedCheck>, Result<Engine::RequestDecision>)> done;
  // Which decisions of the blocked-client cache may answer it once it waited for a batch of its
  // feature (Engine::CheckAllIfBlocked).
  Engine::LocalScope local = Engine::LocalScope::kEveryCheck;
};

class CheckBatcher {
 public:
  // `max_checks` bounds one CheckAllMany (a larger job is sent alone); `on_batch`, if set, is told
  // each batch's number of checks before it is sent; `max_in_flight` (at least 1) bounds the
  // batches at the store at once. `engine` must outlive this.
  explicit CheckBatcher(const Engine& engine, size_t max_checks = 256,
                        std::function<void(size_t)> on_batch = {}, size_t max_in_flight = 1);
  // Waits for the jobs submitted so far to be done.
  ~CheckBatcher();
  CheckBatcher(const CheckBatcher&) = delete;
  CheckBatcher& operator=(const CheckBatcher&) = delete;

  void Submit(CheckJob job);
  // Submits `jobs` together: in submission order, they go out in one batch (as far as max_checks
  // allows) rather than the first alone while the others wait for the submitting thread. With
  // `send_here` false, the batcher's threads send them and this thread returns at once.
  void SubmitAll(std::vector<CheckJob> jobs, bool send_here = true);

 private:
  // A job waiting, and whether it was left out of a batch (it waited for its feature's).
  struct Waiting {
    CheckJob job;
    bool left = false;
  };
  // Jobs taken to be sent together, and their features (FeatureKey), at the store until Sent.
  struct Batch {
    std::vector<CheckJob> jobs;
    std::vector<bool> left;  // per job: Waiting::left
    std::vector<std::string> features;
  };
  // Takes the jobs to send next (up to max_checks_ checks; a larger one alone), in submission
  // order, leaving those that share a feature with a batch at the store or with a job left before
  // them; no job when every waiting one is left. Holds mu_.
  Batch TakeJobs();
  // Decides `batch` (taken by TakeJobs), lets its features leave the store (taking mu_), then
  // calls its jobs' `done`. A job that was left is answered first, without the store, when the
  // blocked-client cache now denies it (Engine::CheckAllIfBlocked, per its `local`): the batch it
  // waited for may have denied its client. Called without mu_.
  void Send(Batch& batch);
  // Answers the jobs of `batch` that were left and that the blocked-client cache now denies, and
  // takes them out of it.
  void AnswerLeftIfBlocked(Batch& batch) const;
  // Calls `job.done` with `decided`; a callback that throws stops nothing else.
  static void Done(CheckJob& job, Result<Engine::RequestDecision> decided);
  // A batcher's thread: sends while jobs wait, after a submitter handed its place over.
  void SendHandedOver();

  const Engine& engine_;
  const size_t max_checks_;
  const std::function<void(size_t)> on_batch_;
  const size_t max_in_flight_;
  mutable std::mutex mu_;
  std::deque<Waiting> waiting_;               // guarded by mu_
  std::unordered_set<std::string> at_store_;  // the features of the batches at the store; mu_
  // Threads sending, each of which sends what waits before it stops; guarded by mu_.
  size_t senders_ = 0;
  size_t handed_over_ = 0;        // places of senders the batcher's threads are to take; mu_
  bool stopping_ = false;         // guarded by mu_
  std::condition_variable wake_;  // handed_over_ or stopping_ was set
  std::vector<std::thread> threads_;
};

}  // namespace hourglass

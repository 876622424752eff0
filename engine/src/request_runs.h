// Internal to the engine: requests of checks that stand or fall together, decided in shared
// steps. Engine::Check, CheckMany and CheckAll all decide through it.
//
//   RequestRuns runs(core, now);
//   runs.Add(checks, groups);            // one request: validated checks and their group keys
//   std::vector<Engine::RequestDecision> decided = runs.Decide();
//
// Requests are decided in rounds. A round holds requests whose event+features are distinct from
// those of every request before them that is still waiting, so deciding a round at once gives
// exactly what deciding its requests one after another would. Within a request, a repeated
// event+feature waits for the check before it (layers). Each step sends every run's next batch
// together (Store::ApplyMany); then the take-backs of the round (denied checks' hits, and in a
// denied request the admitted ones') go out together in one Store::Send. Before a round reads the
// store, the hits the fallback holds for its features are written back (EngineOptions::fallback);
// a feature whose write-back fails is decided as when the store fails.
//
// Thread-safety: one RequestRuns per engine call, on one thread.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "check_run.h"
#include "engine_core.h"

namespace hourglass::internal {

class RequestRuns {
 public:
  RequestRuns(const EngineCore& core, Instant now) : core_(core), now_(now) {}

  // One request: `checks` (valid, outliving this) and their group keys.
  void Add(std::span<const Engine::CheckRequest> checks, std::vector<std::string> groups);
  // Which requests Decide decides.
  enum class Local {
    kNo,                // every one
    kEveryCheck,        // only those every check of which the blocked-client cache answers
    kAnyBindingDenial,  // also those one binding check of which it answers (denied), when the
                        // others record nothing in a denied request: they are left unread
  };
  // The decisions of every request added, in order. A request `local` leaves out (one that would
  // need a store read) is left undecided (nullopt) and nothing of it is done.
  std::vector<std::optional<Engine::RequestDecision>> Decide(Local local = Local::kNo);

  // One check alone (Engine::Check, Peek) at the clock's `now`: the same steps as a request of
  // one check, without the containers a request needs. AnswerBlocked is the caller's to ask first.
  static Decision DecideAlone(const EngineCore& core, CheckRun& run, Instant now);

 private:
  struct Request {
    std::span<const Engine::CheckRequest> checks;
    std::vector<std::string> groups;
    // Per check, its layer: how many checks before it share its group (usually all 0).
    std::vector<uint32_t> layer_of;
    size_t layers = 1;
    std::vector<std::unique_ptr<CheckRun>> runs;  // per check, once its layer has started
    std::vector<bool> unread;                     // per check: left unread (kAnyBindingDenial)
    bool denied = false;
  };
  // The requests (indices into requests_) of the next round, from those waiting.
  std::vector<size_t> NextRound(std::vector<size_t>& waiting) const;
  void DecideRound(const std::vector<size_t>& round);
  // Writes back the local hits of the round's features (EngineOptions::fallback) before any of
  // them reads the store; the features whose write-back failed, with the error.
  std::unordered_map<std::string, Error> WriteBack(const std::vector<size_t>& round) const;
  // Fails the runs of `layer` whose feature's write-back failed: decided as when the store fails.
  static void FailWhereWriteBackFailed(Request& request, size_t layer,
                                       const std::unordered_map<std::string, Error>& failed);
  // Starts layer `layer` of every request of `round` that has it; returns the runs started.
  std::vector<CheckRun*> StartLayer(const std::vector<size_t>& round, size_t layer);
  // Sends the runs' batches, step by step, until none needs more.
  void Step(const std::vector<CheckRun*>& runs) const;
  // Sends the take-backs due after `layer`: in a request's last layer every hit of a denied
  // request and every denied check's, otherwise the denied checks' of that layer.
  void TakeBack(const std::vector<size_t>& round, size_t layer);
  // Whether `request` can be decided without a store read, as `local` allows; marks the checks
  // it leaves unread.
  bool Answerable(Request& request, Local local);
  Engine::RequestDecision Finish(Request& request) const;
  std::unique_ptr<CheckRun> MakeRun(const Request& request, size_t check) const;

  const EngineCore& core_;
  const Instant now_;
  bool reads_store_ = true;  // Decide(Local::kNo): the requests may read the store
  std::vector<Request> requests_;
  std::vector<std::optional<Engine::RequestDecision>> decided_;
};

}  // namespace hourglass::internal

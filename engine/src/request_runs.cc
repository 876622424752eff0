#include "request_runs.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "write_back.h"

namespace hourglass::internal {
namespace {

// A fire-and-forget send's outcome as the answer a run takes.
Result<std::vector<uint64_t>> AsAnswer(const Status& sent) {
  if (sent.ok()) return std::vector<uint64_t>{};
  return sent.error();
}

// Sends take-backs: awaited with EngineOptions::confirm_take_backs, else fire-and-forget.
std::vector<Status> SendTakeBacks(const EngineCore& core, std::span<const Batch> undo) {
  if (!core.options.confirm_take_backs) return core.store->Send(undo);
  std::vector<Status> sent;
  sent.reserve(undo.size());
  for (Result<std::vector<uint64_t>>& answer : core.store->ApplyMany(undo)) {
    sent.push_back(answer.ok() ? Status() : Status(answer.error()));
  }
  return sent;
}

}  // namespace

Decision RequestRuns::DecideAlone(const EngineCore& core, CheckRun& run, Instant now) {
  // A client answered from the blocked-client cache waits for nothing, write-backs included.
  if (!run.blocked() && core.options.fallback != nullptr && core.options.fallback->AnyPending()) {
    const std::optional<Error> failed = WriteBackGroups(core, {&run.group(), 1}, now).front();
    if (failed) run.FailBeforeStore(*failed);
  }
  while (Batch* batch = run.NextBatch()) {
    if (batch->reads.empty()) {
      run.TakeAnswer(AsAnswer(core.store->Send({batch, 1}).front()));
    } else {
      run.TakeAnswer(core.store->Apply(*batch));
    }
  }
  if (std::optional<TakeBackIntent> undo = run.TakeBack(false)) {
    run.TookBack(*undo, SendTakeBacks(core, {&undo->batch, 1}).front().ok());
  }
  return run.Finish();
}

void RequestRuns::Add(std::span<const Engine::CheckRequest> checks,
                      std::vector<std::string> groups) {
  Request r{checks, std::move(groups), {}, 1, {}, {}, false};
  r.layer_of.assign(r.checks.size(), 0);
  r.unread.assign(r.checks.size(), false);
  for (size_t i = 1; i < r.checks.size(); ++i) {
    for (size_t j = 0; j < i; ++j) r.layer_of[i] += r.groups[j] == r.groups[i] ? 1 : 0;
    r.layers = std::max<size_t>(r.layers, r.layer_of[i] + 1);
  }
  r.runs.resize(r.checks.size());
  requests_.push_back(std::move(r));
}

std::unique_ptr<CheckRun> RequestRuns::MakeRun(const Request& request, size_t i) const {
  const Engine::CheckRequest& c = request.checks[i];
  return std::make_unique<CheckRun>(core_, request.groups[i], *c.policy, c.hits,
                                    c.at.value_or(now_), now_, c.record);
}

std::vector<std::optional<Engine::RequestDecision>> RequestRuns::Decide(Local local) {
  decided_.assign(requests_.size(), std::nullopt);
  reads_store_ = local == Local::kNo;
  std::vector<size_t> waiting;
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (local == Local::kNo || Answerable(requests_[r], local)) waiting.push_back(r);
  }
  while (!waiting.empty()) DecideRound(NextRound(waiting));
  return std::move(decided_);
}

bool RequestRuns::Answerable(Request& request, Local local) {
  if (request.layers != 1) return false;  // a repeated feature reads its first check
  bool answerable = true, denied = false;
  for (size_t i = 0; i < request.checks.size() && answerable; ++i) {
    const Engine::CheckRequest& c = request.checks[i];
    request.runs[i] = MakeRun(request, i);
    const bool blocked = request.runs[i]->AnswerBlocked();
    denied = denied || (blocked && c.binding);
    // Unread only where a denied request records nothing of the check.
    const bool silent = !c.record || c.policy->mode == CountingMode::kAdmitted;
    request.unread[i] = !blocked;
    answerable = blocked || (local == Local::kAnyBindingDenial && silent);
  }
  const bool all_blocked =
      std::find(request.unread.begin(), request.unread.end(), true) == request.unread.end();
  if (answerable && (all_blocked || denied)) return true;
  for (auto& run : request.runs) run.reset();
  request.unread.assign(request.checks.size(), false);
  return false;
}

std::vector<size_t> RequestRuns::NextRound(std::vector<size_t>& waiting) const {
  std::vector<size_t> round, later;
  std::unordered_set<std::string_view> taken;
  for (size_t r : waiting) {
    const std::vector<std::string>& groups = requests_[r].groups;
    const bool free = std::none_of(groups.begin(), groups.end(),
                                   [&](const std::string& g) { return taken.contains(g); });
    taken.insert(groups.begin(), groups.end());  // no later request overtakes this one
    (free ? round : later).push_back(r);
  }
  waiting = std::move(later);
  return round;
}

void RequestRuns::DecideRound(const std::vector<size_t>& round) {
  size_t layers = 0;
  for (size_t r : round) layers = std::max(layers, requests_[r].layers);
  const std::unordered_map<std::string, Error> failed = WriteBack(round);
  for (size_t layer = 0; layer < layers; ++layer) {
    std::vector<CheckRun*> runs = StartLayer(round, layer);
    if (!failed.empty()) {
      for (size_t r : round) FailWhereWriteBackFailed(requests_[r], layer, failed);
    }
    Step(runs);
    TakeBack(round, layer);
  }
  for (size_t r : round) decided_[r] = Finish(requests_[r]);
}

std::unordered_map<std::string, Error> RequestRuns::WriteBack(
    const std::vector<size_t>& round) const {
  std::unordered_map<std::string, Error> failed;
  // Requests answered without the store (Local) wait for nothing, write-backs included.
  if (!reads_store_ || core_.options.fallback == nullptr || !core_.options.fallback->AnyPending()) {
    return failed;
  }
  std::vector<std::string> groups;
  for (size_t r : round) {
    groups.insert(groups.end(), requests_[r].groups.begin(), requests_[r].groups.end());
  }
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  std::vector<std::optional<Error>> errors = WriteBackGroups(core_, groups, now_);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (errors[g]) failed.emplace(std::move(groups[g]), std::move(*errors[g]));
  }
  return failed;
}

void RequestRuns::FailWhereWriteBackFailed(Request& request, size_t layer,
                                           const std::unordered_map<std::string, Error>& failed) {
  for (size_t i = 0; i < request.checks.size(); ++i) {
    if (request.layer_of[i] != layer || request.runs[i] == nullptr) continue;
    if (auto it = failed.find(request.groups[i]); it != failed.end()) {
      request.runs[i]->FailBeforeStore(it->second);
    }
  }
}

std::vector<CheckRun*> RequestRuns::StartLayer(const std::vector<size_t>& round, size_t layer) {
  std::vector<CheckRun*> runs;
  for (size_t r : round) {
    Request& request = requests_[r];
    if (layer >= request.layers) continue;
    for (size_t i = 0; i < request.checks.size(); ++i) {
      if (request.layer_of[i] != layer || request.unread[i]) continue;
      if (request.runs[i] == nullptr) {  // Answerable may have made it already
        request.runs[i] = MakeRun(request, i);
        if (layer > 0) request.runs[i]->DoNotRememberBlocked();
        request.runs[i]->AnswerBlocked();
      }
      runs.push_back(request.runs[i].get());
    }
  }
  return runs;
}

void RequestRuns::Step(const std::vector<CheckRun*>& runs) const {
  // Write-only batches (a blocked client's hits) are sent without waiting for their answer.
  std::vector<Batch> reading, writing;
  std::vector<CheckRun*> readers, writers;
  while (true) {
    reading.clear();
    writing.clear();
    readers.clear();
    writers.clear();
    for (CheckRun* run : runs) {
      Batch* batch = run->NextBatch();
      if (batch == nullptr) continue;
      const bool write_only = batch->reads.empty();
      (write_only ? writing : reading).push_back(std::move(*batch));
      (write_only ? writers : readers).push_back(run);
    }
    if (readers.empty() && writers.empty()) return;
    if (!writing.empty()) {
      std::vector<Status> sent = core_.store->Send(writing);
      for (size_t k = 0; k < writers.size(); ++k) writers[k]->TakeAnswer(AsAnswer(sent[k]));
    }
    if (!reading.empty()) {
      std::vector<Result<std::vector<uint64_t>>> answers = core_.store->ApplyMany(reading);
      for (size_t k = 0; k < readers.size(); ++k) readers[k]->TakeAnswer(std::move(answers[k]));
    }
  }
}

void RequestRuns::TakeBack(const std::vector<size_t>& round, size_t layer) {
  std::vector<Batch> undo;
  std::vector<TakeBackIntent> intents;
  std::vector<CheckRun*> owners;
  const auto ask = [&](Request& request, size_t i, bool request_denied) {
    if (std::optional<TakeBackIntent> intent = request.runs[i]->TakeBack(request_denied)) {
      undo.push_back(std::move(intent->batch));
      intents.push_back(std::move(*intent));
      owners.push_back(request.runs[i].get());
    }
  };
  for (size_t r : round) {
    Request& request = requests_[r];
    if (layer >= request.layers) continue;
    if (layer + 1 < request.layers) {
      for (size_t i = 0; i < request.checks.size(); ++i) {
        if (request.layer_of[i] == layer) ask(request, i, false);
      }
      continue;
    }
    for (size_t i = 0; i < request.checks.size(); ++i) {
      if (request.unread[i]) continue;
      if (request.checks[i].binding && !request.runs[i]->allowed()) request.denied = true;
    }
    for (size_t i = 0; i < request.checks.size(); ++i) {
      if (!request.unread[i]) ask(request, i, request.denied);
    }
  }
  if (undo.empty()) return;
  std::vector<Status> sent = SendTakeBacks(core_, undo);
  for (size_t k = 0; k < owners.size(); ++k) owners[k]->TookBack(intents[k], sent[k].ok());
}

Engine::RequestDecision RequestRuns::Finish(Request& request) const {
  Engine::RequestDecision out;
  out.allowed = !request.denied;
  out.decisions.reserve(request.runs.size());
  for (size_t i = 0; i < request.runs.size(); ++i) {
    if (!request.unread[i]) {
      out.decisions.push_back(request.runs[i]->Finish());
      continue;
    }
    Decision& unread = out.decisions.emplace_back();
    unread.unread = true;
    unread.at = request.checks[i].at.value_or(now_);
  }
  return out;
}

}  // namespace hourglass::internal

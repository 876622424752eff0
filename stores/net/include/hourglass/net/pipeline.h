// Shared by the network stores (memcached, Redis): every exchange of requests with the servers,
// the protocol given as a codec.
//
// A round: the requests are grouped by the server they go to; on each server's connection
// (leased from its pool and made ready) they leave in one send before any answer is read, so the
// servers work at once; then each server's answers are read in order, after what earlier
// fire-and-forget requests still owe there, and each is classified once by the codec: a result,
// a redirection (MOVED, ASK), "try again", scripts lost, or a broken connection. A request that
// left and got no answer may have been applied (now, or when a stalled server resumes): its error
// says so, and nothing takes it back. Redirected requests go again where they were sent, and a
// server that lost its scripts is asked again on a new connection, at once for kMaxResends rounds;
// requests told to try again (a migration split their slot's keys), and redirected ones after
// those rounds (two nodes that each name the other while a migration ends), go again after
// kTryAgainWait while the io_timeout since the first send lasts, by the injected clock's monotonic
// time.
//
// Fire-and-forget requests (Send) leave the same way; their answers are owed on their connection
// (Codec::Owe) and read by its next user.
//
// The protocol, a Codec type:
//   using Encoded = ...;  // a request as it goes on the wire, and what reading its answer needs
//   using Scratch = ...;  // what reading one connection's answers gathers (e.g. compactions)
//   Result<ServerPool*> Route(const Request<Encoded>&);  // its redirection's node, or its group's
//   void Append(const Request<Encoded>&, std::string& out);  // its bytes (ASKING first if asked)
//   Status ReadOwed(ServerPool&, PooledConnection&);  // what earlier fire-and-forget requests owe
//   Answer Read(ServerPool&, PooledConnection&, const Request<Encoded>&, Scratch&);
//   void Finish(Lease&, Scratch&);   // after a connection's answers were all read
//   void Owe(PooledConnection&, const Request<Encoded>&);  // sent, its answer left owed
//   void Moved(const Redirect&);     // a MOVED answer: the slot lives elsewhere now
//
// Thread-safety: a Pipeline may be used from many threads at once if its codec may.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hourglass/clock.h"
#include "hourglass/net/pool.h"
#include "hourglass/status.h"

namespace hourglass::net {

// Where a Redis Cluster sent a request instead: "MOVED 3999 127.0.0.1:6381" (the slot lives
// there now) or "ASK ..." (during a migration, ask there once, after ASKING).
struct Redirect {
  bool ask = false;
  uint16_t slot = 0;
  std::string node;  // "host:port"
};

// One request of a round.
template <typename Encoded>
struct Request {
  std::string_view group;  // the group key its server is chosen by
  Encoded encoded;
  bool writes = false;               // unanswered, its writes may have been applied
  std::optional<Redirect> redirect;  // where the last answer sent it
};

// An answer as the codec classified it.
struct Answer {
  enum class Kind {
    kResult,      // the request's outcome: its values, or an error that kept the connection in step
    kRedirected,  // MOVED or ASK: send it again to `redirect`'s node
    kTryAgain,    // TRYAGAIN: send it again, a little later
    kScriptsLost,  // NOSCRIPT: this and the later requests on the connection go again on a new one
    kBroken,       // the connection broke or fell out of step: this and later requests unanswered
  };
  Kind kind = Kind::kResult;
  Result<std::vector<uint64_t>> result = std::vector<uint64_t>{};  // kResult; else the error
  std::optional<Redirect> redirect;                                // kRedirected

  static Answer Broken(Error error) { return {Kind::kBroken, std::move(error), std::nullopt}; }
};

// `error`, for a request with writes that left: they may have been applied.
Error MaybeApplied(const Error& error, bool writes);

// More answers owed than this on one connection and a request reads them first, so the answers
// of fire-and-forget requests never pile up in the socket.
inline constexpr int kMaxOwed = 32;
// Rounds that send requests again at once because of a redirection or lost scripts.
inline constexpr int kMaxResends = 5;
// The wait before sending again a request told to try again, or redirected once more.
inline constexpr std::chrono::milliseconds kTryAgainWait{20};

// Takes a connection of `pool` into `c`, ready for a request: the exchange's deadline started,
// and no more than kMaxOwed answers owed (`read_owed(pool, connection)` reads them first).
template <typename ReadOwed>
Status Ready(ServerPool& pool, Lease& c, ReadOwed&& read_owed) {
  if (Status s = c.Acquire(); !s.ok()) return s;
  c->socket->BeginExchange();  // io_timeout bounds the whole exchange, not each read
  if (c->unread >= kMaxOwed) {
    if (Status s = read_owed(pool, *c); !s.ok()) return c.Fail(s.error());
  }
  return {};
}

template <typename Codec>
class Pipeline {
 public:
  using Encoded = typename Codec::Encoded;
  using Req = Request<Encoded>;
  using Values = Result<std::vector<uint64_t>>;

  // `codec` and `clock` must outlive the pipeline; `io_timeout` bounds the tries again.
  Pipeline(Codec& codec, const Clock& clock, std::chrono::milliseconds io_timeout)
      : codec_(codec), clock_(clock), io_timeout_(io_timeout) {}

  // Sends `requests` and reads their answers: results[i] is requests[i]'s.
  std::vector<Values> Exchange(std::span<Req> requests) {
    std::vector<Values> results(requests.size(), Values(std::vector<uint64_t>{}));
    std::vector<size_t> pending(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) pending[i] = i;
    const MonoTime deadline = clock_.Monotonic() + io_timeout_;
    // A clock that does not move (a test's) still ends the tries again after io_timeout's worth.
    const int64_t max_tries = io_timeout_ / kTryAgainWait + 1;
    for (int resends = 0, tries = 0; !pending.empty();) {
      Round round = Send(requests, pending, results);
      pending.clear();
      Again again;
      for (Sent& sent : round) ReadAnswers(requests, sent, results, pending, again);
      round.clear();  // hands the connections back before any wait
      if (pending.empty()) break;
      const bool at_once = again.resend && !again.try_again && ++resends <= kMaxResends;
      if (!at_once) {
        if (clock_.Monotonic() + kTryAgainWait >= deadline || ++tries >= max_tries) break;
        std::this_thread::sleep_for(kTryAgainWait);
      }
    }
    return results;
  }

  // Sends `requests` without waiting for their answers, which are left owed on their connections.
  std::vector<Status> SendOnly(std::span<Req> requests) {
    std::vector<Values> results(requests.size(), Values(std::vector<uint64_t>{}));
    std::vector<size_t> all(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) all[i] = i;
    for (Sent& sent : Send(requests, all, results)) {
      for (size_t i : sent.indices) codec_.Owe(**sent.lease, requests[i]);
    }
    std::vector<Status> out;
    out.reserve(results.size());
    for (Values& r : results) out.push_back(r.ok() ? Status() : Status(r.error()));
    return out;
  }

 private:
  // One server's share of a round: its connection and the requests sent on it, in order.
  struct Sent {
    ServerPool* pool = nullptr;
    std::unique_ptr<Lease> lease;
    std::vector<size_t> indices;
  };
  using Round = std::vector<Sent>;
  // Why requests of a round go again: a redirection or lost scripts; "try again".
  struct Again {
    bool resend = false;
    bool try_again = false;
  };

  // Groups `indices` by server and sends each server's requests in one send; the requests that
  // could not be routed or sent get their error in `results` and are not in the round.
  Round Send(std::span<Req> requests, const std::vector<size_t>& indices,
             std::vector<Values>& results) {
    Round round;
    for (size_t i : indices) {
      Result<ServerPool*> pool = codec_.Route(requests[i]);
      if (!pool.ok()) {
        results[i] = pool.error();
        continue;
      }
      auto it =
          std::find_if(round.begin(), round.end(), [&](const Sent& s) { return s.pool == *pool; });
      if (it == round.end()) it = round.insert(round.end(), Sent{*pool, nullptr, {}});
      it->indices.push_back(i);
    }
    thread_local std::string request;
    for (auto it = round.begin(); it != round.end();) {
      it->lease = std::make_unique<Lease>(*it->pool);
      Status s = Ready(*it->pool, *it->lease, [&](ServerPool& pool, PooledConnection& c) {
        return codec_.ReadOwed(pool, c);
      });
      const bool ready = s.ok();
      if (ready) {
        request.clear();
        for (size_t i : it->indices) codec_.Append(requests[i], request);
        s = (*it->lease)->socket->Send(request);
        if (!s.ok()) s = it->lease->Fail(s.error());
      }
      if (s.ok()) {
        ++it;
        continue;
      }
      for (size_t i : it->indices) {
        results[i] = ready ? MaybeApplied(s.error(), requests[i].writes) : s.error();
      }
      it = round.erase(it);
    }
    return round;
  }

  // Reads the answers of the requests `sent` carried, into `results`; those to send again go to
  // `pending`.
  void ReadAnswers(std::span<Req> requests, Sent& sent, std::vector<Values>& results,
                   std::vector<size_t>& pending, Again& again) {
    Lease& c = *sent.lease;
    typename Codec::Scratch scratch{};
    Status owed = codec_.ReadOwed(*sent.pool, *c);
    for (size_t k = 0; k < sent.indices.size(); ++k) {
      const size_t i = sent.indices[k];
      Answer answer = owed.ok() ? codec_.Read(*sent.pool, *c, requests[i], scratch)
                                : Answer::Broken(owed.error());
      switch (answer.kind) {
        case Answer::Kind::kResult:
          results[i] = std::move(answer.result);
          continue;
        case Answer::Kind::kRedirected:
          again.resend = true;
          if (!answer.redirect->ask) codec_.Moved(*answer.redirect);
          requests[i].redirect = answer.redirect->ask ? answer.redirect : std::nullopt;
          results[i] = std::move(answer.result);
          pending.push_back(i);
          continue;
        case Answer::Kind::kTryAgain:
          again.try_again = true;
          results[i] = std::move(answer.result);
          pending.push_back(i);
          continue;
        case Answer::Kind::kScriptsLost:  // every later request on it was refused the same way
          again.resend = true;
          for (size_t j = k; j < sent.indices.size(); ++j) {
            results[sent.indices[j]] = answer.result.error();
            pending.push_back(sent.indices[j]);
          }
          (void)c.Fail(answer.result.error());
          return;
        case Answer::Kind::kBroken: {  // out of step: this request and the later ones unanswered
          const Error failed = c.Fail(answer.result.error());
          for (size_t j = k; j < sent.indices.size(); ++j) {
            results[sent.indices[j]] = MaybeApplied(failed, requests[sent.indices[j]].writes);
          }
          return;
        }
      }
    }
    codec_.Finish(c, scratch);
  }

  Codec& codec_;
  const Clock& clock_;
  const std::chrono::milliseconds io_timeout_;
};

}  // namespace hourglass::net

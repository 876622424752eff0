#include "hourglass/service.h"

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <utility>

#include "hourglass/check_front_end.h"
#include "hourglass/denial_sampler.h"
#include "hourglass/periodic.h"
#include "hourglass/recent_top.h"
#include "hourglass/service_presence.h"
#include "hourglass/store_watch.h"
#include "hourglass/top_state.h"

namespace hourglass {
namespace {

// The policy file, checked against the engine's retention: a limit that could never be answered
// refuses the file (at start, and on reload, when the old one stays). No file: no limits.
Result<PolicySource> LoadPolicy(const std::string& path, Seconds retention) {
  if (path.empty()) return PolicySource();
  Result<PolicySource> source = PolicySource::FromFile(path);
  if (!source.ok()) return source;
  if (Status s = source->CheckWindows(retention); !s.ok()) return s.error();
  return source;
}

// The path of a request target, without its query.
std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace

ServerTransitionHandler TransitionLog(ServiceLog log) {
  return [log = std::move(log)](const ServerTransition& t) {
    if (t.reachable) {
      log(LogLevel::kInfo, fmt::format("{} {} answers again", t.kind, t.server));
      return;
    }
    std::string_view error = t.error;
    if (const std::string name = t.kind + " " + t.server + ": "; error.starts_with(name)) {
      error.remove_prefix(name.size());
    }
    log(LogLevel::kError,
        fmt::format("{} {} unreachable ({}): checks of its features answer per their failure "
                    "mode (open, closed, or local: decided here and written back) until it "
                    "answers",
                    t.kind, t.server, error));
  };
}

StoreLossHandler LossLog(StoreLosses& losses, ServiceLog log) {
  return [&losses, log = std::move(log)](const StoreLoss& loss) {
    if (losses.Record(loss)) log(LogLevel::kWarning, LossWarning(loss));
  };
}

struct Service::Impl {
  Impl(ServiceOptions o, Store& s, OffsetClock& c, ServiceLog l)
      : options(std::move(o)), store(s), clock(c), log(std::move(l)) {}

  ServiceOptions options;
  Store& store;
  OffsetClock& clock;
  ServiceLog log;
  StoreLosses own_losses;  // when the options name none
  StoreLosses& losses = options.losses != nullptr ? *options.losses : own_losses;
  std::optional<LocalLedger> ledger;        // on_store_failure local's
  std::optional<ServicePresence> presence;  // with count_services
  std::optional<Engine> engine;
  ServiceMetrics metrics;
  std::optional<StoreHealth> health;  // full store servers, as checks' errors tell
  std::optional<RecentTop> top;
  DenialSampler denials{std::chrono::seconds{1}};
  std::optional<Periodic> denial_flushes;  // with log_denials
  std::unique_ptr<CheckFrontEnd> front_end;
  std::unique_ptr<DecisionApi> api;
  std::vector<std::unique_ptr<ServiceProtocol>> protocols;
  std::unique_ptr<StoreWatch> watch;
  std::unique_ptr<HttpServer> server;
  std::mutex reload_mu;  // one reload at a time

  std::optional<Periodic> top_saves;    // with a top state path
  std::optional<Periodic> write_backs;  // the ledger's hits, once the store answers
  uint64_t written_back = 0;            // as last logged; on write_backs' thread (or after it)

  Status Start();
  // Writes back what the ledger holds for features not checked since the store answered again,
  // drops what aged out, and shows it in the metrics.
  void WriteBackLocal();
  // The policy's events' counters, at 0 until their first check.
  void PrimeEventMetrics(const PolicySource& policy) {
    std::vector<std::string> events;
    for (const auto& [event, summary] : policy.Summary()) {
      if (event != "*") events.push_back(event);  // "*": inline limits, no event of their own
    }
    metrics.PrimeEvents(events);
  }
  // Reads /v1/top's summaries from options.top_state_path, and writes them there every minute.
  void KeepTop();
  void SaveTop();
  void Serve(HttpRequest request, HttpResponder respond);
};

Status Service::Impl::Start() {
  options.engine.losses = &losses;  // what the servers lost, as the watch and the store saw
  options.fallback.keep = options.engine.retention;
  if (options.count_services) options.fallback.services = 0;  // not known until counted
  options.engine.fallback = &ledger.emplace(options.fallback);
  Result<Engine> made = Engine::Create(store, clock, options.engine);
  if (!made.ok()) return made.error();
  engine.emplace(std::move(*made));
  if (options.count_services) presence.emplace(*engine);
  metrics.SetFallback(ledger->stats());  // before the first write-back's figures
  write_backs.emplace(std::chrono::seconds{1}, [this] { WriteBackLocal(); });
  Result<PolicySource> policy = LoadPolicy(options.policy_path, options.engine.retention);
  if (!policy.ok()) return policy.error();
  metrics.PolicyLoaded(clock.Now());
  PrimeEventMetrics(*policy);
  metrics.SetBuildInfo(HOURGLASS_VERSION);
  health.emplace(
      clock, options.stats_interval.count() > 0 ? options.stats_interval : std::chrono::seconds{10},
      log);
  metrics.OnStoreError([this](const Error& e) { health->Observe(e); });
  front_end = std::make_unique<CheckFrontEnd>(*engine, &metrics, options.on_decided);
  DecisionApiOptions api_options = options.api;
  api_options.metrics = &metrics;
  api_options.health = &*health;
  api_options.store = &store;
  api_options.clock = &clock;
  api_options.policy_path = options.policy_path;
  api_options.front_end = front_end.get();
  if (options.top_capacity > 0) {
    api_options.top = &top.emplace(options.top_capacity);
    KeepTop();
  }
  if (options.log_denials) {
    api_options.on_denial = [this](std::string_view event, std::string_view feature,
                                   const Decision& d) {
      if (std::optional<std::string> line = denials.Offer(event, feature, d.at)) {
        log(LogLevel::kInfo, *line);
      }
    };
    // The rest of a burst is told within a second, not with the next denial.
    denial_flushes.emplace(std::chrono::seconds{1}, [this] {
      for (const std::string& line : denials.Flush(clock.Now())) log(LogLevel::kInfo, line);
    });
  }
  api = std::make_unique<DecisionApi>(
      *engine, std::make_shared<const PolicySource>(std::move(*policy)), std::move(api_options));
  const ProtocolContext context{*engine, *front_end, metrics, log, top ? &*top : nullptr};
  for (const ProtocolFactory& make : options.protocols) {
    Result<std::unique_ptr<ServiceProtocol>> protocol = make(context);
    if (!protocol.ok()) return protocol.error();
    protocols.push_back(std::move(*protocol));
  }
  // The engine follows the store's clock when this host's is off by 2 s or more.
  watch = std::make_unique<StoreWatch>(
      store, metrics, [this](const std::string& line) { log(LogLevel::kWarning, line); });
  if (options.stats_interval.count() > 0) {
    watch->FollowClock(SystemClock::Get(), clock);
    watch->RecordLosses(losses, clock);
    watch->Start(options.stats_interval);
  }
  HttpServerOptions http = options.http;
  http.on_connection_event = [this](ConnectionEvent e) { metrics.CountConnection("http", e); };
  Result<std::unique_ptr<HttpServer>> listening =
      HttpServer::Create(std::move(http), [this](HttpRequest request, HttpResponder respond) {
        Serve(std::move(request), std::move(respond));
      });
  if (!listening.ok()) return listening.error();
  server = std::move(*listening);
  return {};
}

void Service::Impl::WriteBackLocal() {
  if (presence) {
    if (std::optional<uint64_t> services = presence->Tick(clock.Now())) {
      ledger->SetServices(*services);
    }
  }
  engine->WriteBackLocal();
  ledger->Sweep(clock.Now());
  const LocalLedger::Stats stats = ledger->stats();
  metrics.SetFallback(stats);
  // By checks (a feature's before its own check reads) and by this task alike.
  const uint64_t written = stats.written_back - written_back;
  written_back = stats.written_back;
  if (written == 0) return;
  log(LogLevel::kInfo,
      fmt::format("wrote back {} hit{} decided here while the store failed ({} still to write)",
                  written, written == 1 ? "" : "s", stats.pending_hits));
}

void Service::Impl::KeepTop() {
  if (options.top_state_path.empty()) return;
  const Status loaded = LoadTopState(*top, options.top_state_path, clock.Now());
  if (loaded.ok()) {
    log(LogLevel::kInfo,
        "/v1/top: the last minutes' summaries read from " + options.top_state_path);
  } else if (loaded.error().code() != ErrorCode::kNotFound) {
    log(LogLevel::kWarning, loaded.error().message() + "; /v1/top starts afresh");
  }
  top_saves.emplace(std::chrono::minutes{1}, [this] { SaveTop(); });
}

void Service::Impl::SaveTop() {
  if (!top || options.top_state_path.empty()) return;
  if (const Status saved = SaveTopState(*top, options.top_state_path); !saved.ok()) {
    log(LogLevel::kWarning, saved.error().message());
  }
}

void Service::Impl::Serve(HttpRequest request, HttpResponder respond) {
  const Endpoint endpoint = RouteOf(PathOf(request.target())).endpoint;
  for (const auto& protocol : protocols) {
    if (protocol->Serves(endpoint)) return protocol->HandleHttp(request, std::move(respond));
  }
  api->HandleAsync(std::move(request), std::move(respond));
}

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

// The listener first (no new request), then the protocols, then the API and its front end (each
// waits for what it has in flight), and the engine last.
Service::~Service() {
  if (impl_ == nullptr) return;
  impl_->server.reset();
  impl_->write_backs.reset();
  impl_->watch.reset();
  impl_->denial_flushes.reset();
  impl_->top_saves.reset();
  for (auto& protocol : impl_->protocols) protocol->Stop();
  impl_->protocols.clear();
  impl_->api.reset();
  impl_->front_end.reset();
}

Result<std::unique_ptr<Service>> Service::Create(ServiceOptions options, Store& store,
                                                 OffsetClock& clock, ServiceLog log) {
  auto impl = std::make_unique<Impl>(std::move(options), store, clock, std::move(log));
  Status started = impl->Start();
  std::unique_ptr<Service> service(new Service(std::move(impl)));
  if (!started.ok()) return started.error();
  return service;
}

uint16_t Service::http_port() const { return impl_->server->port(); }
const Engine& Service::engine() const { return *impl_->engine; }
ServiceMetrics& Service::metrics() { return impl_->metrics; }
std::shared_ptr<const PolicySource> Service::policies() const { return impl_->api->Policies(); }

uint64_t Service::Run() {
  impl_->server->Run();
  for (auto& protocol : impl_->protocols) protocol->Stop();  // calls in flight get 5 s
  impl_->top_saves.reset();    // no save of its own beside the last one
  impl_->SaveTop();            // for the next process
  impl_->write_backs.reset();  // a last write-back of the local hits, then what is left is told
  impl_->WriteBackLocal();
  if (const uint64_t left = impl_->ledger->stats().pending_hits; left > 0) {
    impl_->log(LogLevel::kWarning,
               fmt::format("{} hit{} decided here while the store failed could not be written "
                           "back before stopping: the store's windows miss them",
                           left, left == 1 ? "" : "s"));
  }
  return impl_->store.Flush();  // settle fire-and-forget writes before leaving
}

void Service::Stop() { impl_->server->Stop(); }

bool Service::Reload() {
  std::lock_guard lock(impl_->reload_mu);
  Impl& s = *impl_;
  Result<PolicySource> policy = LoadPolicy(s.options.policy_path, s.options.engine.retention);
  std::vector<ServiceProtocol::Reloaded> reloaded;
  std::optional<Error> failed;
  if (!policy.ok()) failed = policy.error();
  for (size_t i = 0; i < s.protocols.size() && !failed; ++i) {
    Result<ServiceProtocol::Reloaded> r = s.protocols[i]->PrepareReload();
    if (r.ok()) {
      reloaded.push_back(std::move(*r));
    } else {
      failed = r.error();
    }
  }
  if (failed) {
    s.log(LogLevel::kError,
          "reload failed, keeping the configuration in force: " + failed->message());
    s.api->CountReload(false);
    return false;
  }
  const std::vector<std::string> changes = PolicyChanges(*s.api->Policies(), *policy);
  s.PrimeEventMetrics(*policy);
  s.api->SetPolicies(std::make_shared<const PolicySource>(std::move(*policy)));
  for (ServiceProtocol::Reloaded& r : reloaded) {
    r.apply();
    s.log(LogLevel::kInfo, r.summary);
  }
  s.api->CountReload(true);
  if (s.options.policy_path.empty()) return true;
  s.log(LogLevel::kInfo,
        fmt::format("reloaded {}: {}", s.options.policy_path,
                    changes.empty() ? std::string("no event changed")
                                    : fmt::format("{} event{} changed", changes.size(),
                                                  changes.size() == 1 ? "" : "s")));
  for (const std::string& change : changes) s.log(LogLevel::kInfo, "  " + change);
  return true;
}

}  // namespace hourglass

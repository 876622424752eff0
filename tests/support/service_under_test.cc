#include "service_under_test.h"

#include "hourglass/store_factory.h"

namespace hourglass::testing {
namespace {

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

}  // namespace

ServiceUnderTest::ServiceUnderTest(const std::string& store_url, ServiceOptions options,
                                   Instant start, StoreOptions store_options)
    : own_clock_(start) {
  store_options.network.on_transition = TransitionLog(log_to_text_);
  // As `hourglass serve`: the memory store expires keys on the engine's clock; the others live
  // in real time (TTLs, and the fail-fast window after a server failed).
  const Clock& store_clock =
      store_url == "memory://" ? static_cast<const Clock&>(clock_) : SystemClock::Get();
  Result<std::unique_ptr<Store>> store = OpenStore(store_url, store_clock, store_options);
  if (!store.ok()) {
    error_ = store.error().ToString();
    return;
  }
  own_store_ = std::move(*store);
  store_ = own_store_.get();
  Start(std::move(options));
}

ServiceUnderTest::ServiceUnderTest(Store& store, ManualClock& clock, ServiceOptions options)
    : base_(&clock), clock_(clock), store_(&store) {
  Start(std::move(options));
}

void ServiceUnderTest::Start(ServiceOptions options) {
  options.http.host = "127.0.0.1";
  options.http.port = 0;
  Result<std::unique_ptr<Service>> service =
      Service::Create(std::move(options), *store_, clock_, log_to_text_);
  if (!service.ok()) {
    error_ = service.error().ToString();
    return;
  }
  service_ = std::move(*service);
  serving_ = std::thread([this] { refused_ = service_->Run(); });
}

StoreOptions ServiceUnderTest::DefaultStoreOptions() {
  StoreOptions options;
  options.network.io_timeout = std::chrono::milliseconds{2000};  // a loaded box
  options.network.connect_timeout = std::chrono::milliseconds{2000};
  return options;
}

ServiceUnderTest::~ServiceUnderTest() { Stop(); }

void ServiceUnderTest::Log(LogLevel level, const std::string& line) {
  std::lock_guard lock(log_mu_);
  log_ += std::to_string(ToUnix(clock_.Now())) + " " + std::string(LevelName(level)) + " " + line +
          "\n";
}

uint64_t ServiceUnderTest::Stop() {
  if (!serving_.joinable()) return refused_;
  service_->Stop();
  serving_.join();
  return refused_;
}

std::string ServiceUnderTest::log() const {
  std::lock_guard lock(log_mu_);
  return log_;
}

bool ServiceUnderTest::WaitForLog(const std::string& text,
                                  std::chrono::milliseconds timeout) const {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return true;
}

}  // namespace hourglass::testing

#include "hourglass/audit_log.h"

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/rotating_file_sink.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "hourglass/audit_record.h"

namespace hourglass {

struct AuditLog::Impl {
  std::shared_ptr<spdlog::logger> logger;
  std::mutex mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::thread flusher;  // flushes every second until stopping
};

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path, size_t max_bytes,
                                                 size_t files) {
  if (max_bytes == 0 || files == 0) {
    return InvalidArgument("audit log: the size and the number of files must be at least 1");
  }
  auto impl = std::make_unique<Impl>();
  try {
    auto sink = std::make_shared<spdlog::sinks::rotating_file_sink_mt>(path, max_bytes, files - 1);
    impl->logger = std::make_shared<spdlog::logger>("audit", std::move(sink));
  } catch (const std::exception& e) {
    return InvalidArgument(fmt::format("audit log {}: {}", path, e.what()));
  }
  impl->logger->set_formatter(
      std::make_unique<spdlog::pattern_formatter>("%v", spdlog::pattern_time_type::utc, "\n"));
  impl->logger->set_level(spdlog::level::info);
  impl->logger->flush_on(spdlog::level::off);
  Impl* raw = impl.get();
  impl->flusher = std::thread([raw] {
    std::unique_lock lock(raw->mu);
    while (!raw->stop_cv.wait_for(lock, std::chrono::seconds{1}, [raw] { return raw->stopping; })) {
      raw->logger->flush();
    }
  });
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(impl)));
}

AuditLog::AuditLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AuditLog::~AuditLog() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  impl_->flusher.join();
  impl_->logger->flush();
}

void AuditLog::Write(std::span<const Engine::CheckRequest> checks,
                     const Engine::RequestDecision& decided, Instant answered) {
  for (size_t i = 0; i < checks.size() && i < decided.decisions.size(); ++i) {
    if (decided.decisions[i].unread) continue;  // neither read nor written: nothing to judge
    impl_->logger->info(
        AuditLine(AuditRecordOf(checks[i], decided.decisions[i], decided.allowed, answered)));
  }
}

void AuditLog::Flush() { impl_->logger->flush(); }

}  // namespace hourglass

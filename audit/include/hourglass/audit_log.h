// Where `hourglass serve --audit-log FILE` writes its decisions: one AuditLine per check of every
// decided request, rotated by size as spdlog's rotating file sink names the files (audit.log,
// then audit.1.log, audit.2.log ... the oldest), flushed every second and when closed. Off
// unless asked for: a line is about 300 bytes per check.
//
//   std::unique_ptr<AuditLog> log = *AuditLog::Open("/var/log/hourglass/audit.log", 100 << 20, 5);
//   log->Write(checks, decided, clock.Now());  // from any thread, once answered
//
// Thread-safety: Write may be called from many threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "hourglass/engine.h"
#include "hourglass/status.h"

namespace spdlog {
class logger;
}

namespace hourglass {

class AuditLog {
 public:
  // Errors: kInvalidArgument naming the file when it cannot be opened for appending, or when
  // max_bytes or files is 0.
  static Result<std::unique_ptr<AuditLog>> Open(const std::string& path, size_t max_bytes,
                                                size_t files);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // The lines of one request's checks and their decisions (those of decided.decisions), whose
  // answers were known at `answered` (each line's done).
  void Write(std::span<const Engine::CheckRequest> checks, const Engine::RequestDecision& decided,
             Instant answered);
  void Flush();

 private:
  struct Impl;
  explicit AuditLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass

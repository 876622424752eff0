// The log of the long-running service: a line per event worth an operator's attention (start,
// reload, stop, a store server lost or back, evictions, a clock followed), never one per request.
// Written to stderr, where journald or a container runtime keeps it, in one of two formats:
//
//   text: 2026-11-25T00:22:45.123Z warning memcached 10.0.0.5:11211 unreachable: ...
//   json: {"time":"2026-11-25T00:22:45.123Z","level":"warning","message":"memcached ..."}
//
// Times are UTC with milliseconds; levels are spdlog's (debug, info, warning, error).
//
//   auto log = MakeLogger({.level = Unwrap(ParseLogLevel("info")), .format = LogFormat::kJson});
//   log->warn("memcached {} unreachable: {}", server, error);
//
// Thread-safety: a logger from MakeLogger may be used from any thread (spdlog's _mt sinks).
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string_view>

#include "hourglass/status.h"

namespace hourglass {

enum class LogFormat { kText, kJson };

struct LogOptions {
  spdlog::level::level_enum level = spdlog::level::info;  // lines below it are dropped
  LogFormat format = LogFormat::kText;
};

// "debug", "info", "warning" (or "warn"), "error", "off"; kInvalidArgument naming the choices.
Result<spdlog::level::level_enum> ParseLogLevel(std::string_view name);
// "text" or "json"; kInvalidArgument naming the choices.
Result<LogFormat> ParseLogFormat(std::string_view name);

// A logger writing lines in `options`' format and above its level to `sink` (stderr when null),
// each flushed as written: a crash or SIGKILL loses no line already logged.
std::shared_ptr<spdlog::logger> MakeLogger(const LogOptions& options,
                                           spdlog::sink_ptr sink = nullptr);

}  // namespace hourglass

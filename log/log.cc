#include "hourglass/log.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <nlohmann/json.hpp>

#include "hourglass/display_text.h"
#include "hourglass/json.h"

namespace hourglass {
namespace {

// "2026-11-25T00:22:45.123Z"
std::string Timestamp(spdlog::log_clock::time_point time) {
  const auto seconds = std::chrono::time_point_cast<std::chrono::seconds>(time);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(time - seconds).count();
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", seconds, ms);
}

// One JSON object per line; the message is escaped, so any byte of a feature stays one line.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const nlohmann::json line = {
        {"time", Timestamp(msg.time)},
        {"level", std::string_view(spdlog::level::to_string_view(msg.level).data(),
                                   spdlog::level::to_string_view(msg.level).size())},
        {"message", std::string_view(msg.payload.data(), msg.payload.size())}};
    const std::string text = Dump(line) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

// "<time> <level> <message>", the message as DisplayText: a message quoting a feature or a
// file's bytes stays one line and cannot write escape sequences to a terminal tailing the log.
class TextFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string text =
        fmt::format("{} {} {}\n", Timestamp(msg.time), std::string_view(level.data(), level.size()),
                    DisplayText(std::string_view(msg.payload.data(), msg.payload.size())));
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextFormatter>();
  }
};

}  // namespace

Result<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  if (name == "warn") return spdlog::level::warn;
  for (auto level : {spdlog::level::debug, spdlog::level::info, spdlog::level::warn,
                     spdlog::level::err, spdlog::level::off}) {
    const auto known = spdlog::level::to_string_view(level);
    if (name == std::string_view(known.data(), known.size())) return level;
  }
  return Error(ErrorCode::kInvalidArgument,
               fmt::format("log level \"{}\": use debug, info, warning, error or off", name));
}

Result<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return Error(ErrorCode::kInvalidArgument,
               fmt::format("log format \"{}\": use text or json", name));
}

std::shared_ptr<spdlog::logger> MakeLogger(const LogOptions& options, spdlog::sink_ptr sink) {
  if (sink == nullptr) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("hourglass", std::move(sink));
  if (options.format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_formatter(std::make_unique<TextFormatter>());
  }
  logger->set_level(options.level);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

}  // namespace hourglass

#include "env_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace hourglass::cli {
namespace {

bool IsNameChar(char c, bool first) {
  return c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A value as written after '=': unquoted (trimmed), or in one pair of quotes; a double-quoted one
// keeps \" and \\ as the quote and the backslash. nullopt for a quote that does not close.
std::optional<std::string> Value(std::string_view raw) {
  raw = Trim(raw);
  if (raw.empty() || (raw.front() != '"' && raw.front() != '\'')) return std::string(raw);
  const char quote = raw.front();
  std::string value;
  for (size_t i = 1; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == quote) return Trim(raw.substr(i + 1)).empty() ? std::optional(value) : std::nullopt;
    if (quote == '"' && c == '\\' && i + 1 < raw.size() &&
        (raw[i + 1] == '"' || raw[i + 1] == '\\')) {
      c == '\\' ? value += raw[++i] : value += c;
      continue;
    }
    value += c;
  }
  return std::nullopt;
}

}  // namespace

Result<EnvFile> ParseEnvFile(std::string_view text, std::string path) {
  EnvFile file{std::move(path), {}};
  size_t number = 0;
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = Trim(text.substr(at, end - at));
    at = end + 1;
    ++number;
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export ")) line = Trim(line.substr(7));
    const size_t eq = line.find('=');
    bool named = eq != std::string_view::npos && eq > 0;
    for (size_t i = 0; named && i < eq; ++i) named = IsNameChar(line[i], i == 0);
    const std::optional<std::string> value =
        named ? Value(line.substr(eq + 1)) : std::optional<std::string>();
    if (!value) {
      return InvalidArgument(fmt::format(
          "{}:{}: expected NAME=VALUE (a value with spaces in quotes, each quote closed), got "
          "\"{}\"",
          file.path, number, line));
    }
    file.assignments.emplace_back(std::string(line.substr(0, eq)), *value);
  }
  return file;
}

Result<EnvFile> ReadEnvFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Error(ErrorCode::kNotFound, path + ": no such file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return InvalidArgument(fmt::format("{}: cannot read it ({})", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseEnvFile(text.str(), path);
}

Result<std::vector<std::string>> SplitArgs(std::string_view args) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const char c = args[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return InvalidArgument(
        fmt::format("HOURGLASS_SERVE_ARGS \"{}\": a quote does not close", args));
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

EnvFileChoice ChooseEnvFile(const std::string* flag, const char* environment) {
  if (flag != nullptr) return {*flag, true};
  if (environment != nullptr) return {environment, true};
  return {std::string(kDefaultEnvFile), false};
}

}  // namespace hourglass::cli

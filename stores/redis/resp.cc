#include "resp.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <cstdlib>

namespace hourglass::redis {
namespace {

Reply Convert(const redisReply& r) {
  Reply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::kString;
      out.text.assign(r.str, r.len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::kStatus;
      out.text.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::kError;
      out.text.assign(r.str, r.len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::kArray;
      out.elements.reserve(r.elements);
      for (size_t i = 0; i < r.elements; ++i) out.elements.push_back(Convert(*r.element[i]));
      break;
    default:
      out.type = Reply::Type::kNil;
  }
  return out;
}

// hiredis's default reply functions (static in hiredis), copied once from a reader it made.
const redisReplyObjectFunctions& DefaultFunctions() {
  static const redisReplyObjectFunctions functions = [] {
    redisReader* plain = redisReaderCreate();
    const redisReplyObjectFunctions f = *plain->fn;
    redisReaderFree(plain);
    return f;
  }();
  return functions;
}

}  // namespace

std::string_view Reply::error_kind() const {
  if (!error()) return {};
  const std::string_view line = text;
  return line.substr(0, line.find(' '));
}

void AppendCommand(std::span<const std::string_view> args, std::string& out) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  char* command = nullptr;
  const int length =
      redisFormatCommandArgv(&command, static_cast<int>(args.size()), argv.data(), lengths.data());
  if (length > 0) out.append(command, static_cast<size_t>(length));
  redisFreeCommand(command);
}

void AppendCommand(std::initializer_list<std::string_view> args, std::string& out) {
  AppendCommand(std::span<const std::string_view>(args.begin(), args.size()), out);
}

ReplyReader::ReplyReader(size_t max_elements) : max_elements_(max_elements) {
  // hiredis's functions with CreateArray in front of its array constructor.
  static redisReplyObjectFunctions bounded = [] {
    redisReplyObjectFunctions f = DefaultFunctions();
    f.createArray = &CreateArray;
    return f;
  }();
  reader_ = redisReaderCreateWithFunctions(&bounded);
  reader_->privdata = this;  // handed to CreateArray in each read task
}

bool ReplyReader::Declare(long long elements) {
  if (elements < 0 || static_cast<size_t>(elements) > max_elements_ - declared_) {
    over_bound_ = true;
    return false;
  }
  declared_ += static_cast<size_t>(elements);
  return true;
}

void* ReplyReader::CreateArray(const redisReadTask* task, int elements) {
  auto* self = static_cast<ReplyReader*>(task->privdata);
  if (!self->Declare(elements)) return nullptr;  // hiredis fails the read
  return DefaultFunctions().createArray(task, elements);
}

ReplyReader::~ReplyReader() { redisReaderFree(reader_); }

Result<Reply> ReplyReader::Read(net::Connection& c) {
  while (true) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
      if (over_bound_) {
        return Error(ErrorCode::kInternal,
                     fmt::format("a reply declaring more than {} array elements (out of step?)",
                                 max_elements_));
      }
      return Error(
          ErrorCode::kInternal,
          fmt::format("an answer that is not RESP ({}; not a Redis server, or out of step)",
                      reader_->errstr));
    }
    if (raw != nullptr) {
      declared_ = 0;
      Reply reply = Convert(*static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      return reply;
    }
    if (reader_->len - reader_->pos > kMaxReplyBytes) {
      return Error(ErrorCode::kInternal,
                   fmt::format("a reply longer than {} MiB (out of step?)", kMaxReplyBytes >> 20));
    }
    Result<std::string_view> some = c.ReadSome();
    if (!some.ok()) return some.error();
    if (redisReaderFeed(reader_, some->data(), some->size()) != REDIS_OK) {
      return Error(ErrorCode::kResourceExhausted, "out of memory buffering a reply");
    }
  }
}

}  // namespace hourglass::redis

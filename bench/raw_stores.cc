#include "raw_stores.h"

#include <hiredis/hiredis.h>
#include <lmdb.h>

#include <cstring>
#include <filesystem>
#include <vector>

namespace hourglass::bench {
namespace {

class RedisClient final : public RawClient {
 public:
  explicit RedisClient(redisContext* c) : c_(c) {}
  ~RedisClient() override { redisFree(c_); }
  bool Apply(const Batch& batch) override {
    size_t replies = 0;
    for (const Increment& inc : batch.increments) {
      if (inc.delta <= 0) continue;
      const std::string delta = std::to_string(inc.delta);
      const char* argv[] = {"INCRBY", inc.key.c_str(), delta.c_str()};
      const size_t lengths[] = {6, inc.key.size(), delta.size()};
      redisAppendCommandArgv(c_, 3, argv, lengths);
      ++replies;
    }
    if (!batch.reads.empty()) {
      std::vector<const char*> argv = {"MGET"};
      std::vector<size_t> lengths = {4};
      for (const std::string& key : batch.reads) {
        argv.push_back(key.c_str());
        lengths.push_back(key.size());
      }
      redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), lengths.data());
      ++replies;
    }
    bool ok = true;
    for (size_t i = 0; i < replies; ++i) {
      void* reply = nullptr;
      if (redisGetReply(c_, &reply) != REDIS_OK) return false;
      ok = ok && static_cast<redisReply*>(reply)->type != REDIS_REPLY_ERROR;
      freeReplyObject(reply);
    }
    return ok;
  }

 private:
  redisContext* c_;
};

class LmdbClient final : public RawClient {
 public:
  LmdbClient(MDB_env* env, MDB_dbi dbi) : env_(env), dbi_(dbi) {}
  bool Apply(const Batch& batch) override {
    MDB_txn* txn = nullptr;
    if (mdb_txn_begin(env_, nullptr, 0, &txn) != 0) return false;
    for (const Increment& inc : batch.increments) {
      MDB_val k{inc.key.size(), const_cast<char*>(inc.key.data())}, v{};
      uint64_t value = 0;
      if (mdb_get(txn, dbi_, &k, &v) == 0 && v.mv_size == sizeof value) {
        std::memcpy(&value, v.mv_data, sizeof value);
      }
      value += static_cast<uint64_t>(inc.delta);
      MDB_val nv{sizeof value, &value};
      if (mdb_put(txn, dbi_, &k, &nv, 0) != 0) {
        mdb_txn_abort(txn);
        return false;
      }
    }
    uint64_t sum = 0;
    for (const std::string& key : batch.reads) {
      MDB_val k{key.size(), const_cast<char*>(key.data())}, v{};
      if (mdb_get(txn, dbi_, &k, &v) == 0) sum += v.mv_size;
    }
    return mdb_txn_commit(txn) == 0 && sum < ~uint64_t{0};
  }

 private:
  MDB_env* env_;
  MDB_dbi dbi_;
};

}  // namespace

std::unique_ptr<RawClient> RawRedis(const std::string& server) {
  const size_t colon = server.rfind(':');
  const std::string host = server.substr(0, colon);
  timeval timeout{1, 0};
  redisContext* c =
      redisConnectWithTimeout(host.c_str(), std::stoi(server.substr(colon + 1)), timeout);
  if (c == nullptr || c->err != 0) {
    if (c != nullptr) redisFree(c);
    return nullptr;
  }
  redisSetTimeout(c, timeout);
  return std::make_unique<RedisClient>(c);
}

RawLmdbEnv::RawLmdbEnv(const std::string& dir) {
  std::filesystem::create_directories(dir);
  mdb_env_create(&env_);
  mdb_env_set_mapsize(env_, size_t{1} << 30);
  mdb_env_open(env_, dir.c_str(), MDB_NOTLS | MDB_NOSYNC, 0640);
  MDB_txn* txn = nullptr;
  mdb_txn_begin(env_, nullptr, 0, &txn);
  MDB_dbi dbi = 0;
  mdb_dbi_open(txn, nullptr, 0, &dbi);
  mdb_txn_commit(txn);
  dbi_ = dbi;
}

RawLmdbEnv::~RawLmdbEnv() { mdb_env_close(env_); }

std::unique_ptr<RawClient> RawLmdbEnv::Client() {
  return std::make_unique<LmdbClient>(env_, static_cast<MDB_dbi>(dbi_));
}

}  // namespace hourglass::bench

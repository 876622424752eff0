// The load driver's raw baselines on Redis and LMDB: what a store costs without hourglass, with
// the same keys. Redis: the hit's increments and the reads pipelined as INCRBY + MGET (one
// write, one wait, plain counters). LMDB: one write transaction that increments the hit's keys
// and reads the others (plain u64 values).
//
//   std::unique_ptr<RawClient> c = RawRedis("127.0.0.1:6379");
//   bool ok = c->Apply(batch);  // increments with delta > 0, then reads
//
// Thread-safety: a RawClient per thread; a RawLmdbEnv may be shared (its transactions serialize).
#pragma once

#include <memory>
#include <string>

#include "hourglass/store.h"

struct MDB_env;

namespace hourglass::bench {

class RawClient {
 public:
  virtual ~RawClient() = default;
  // The batch's positive increments, then its reads, as one request; false on any failure.
  virtual bool Apply(const Batch& batch) = 0;
};

// A hiredis connection to `server` ("host:port"); null when it cannot connect.
std::unique_ptr<RawClient> RawRedis(const std::string& server);

// An LMDB environment of its own in `dir` (made when missing).
class RawLmdbEnv {
 public:
  explicit RawLmdbEnv(const std::string& dir);
  ~RawLmdbEnv();
  std::unique_ptr<RawClient> Client();

 private:
  MDB_env* env_ = nullptr;
  unsigned dbi_ = 0;
};

}  // namespace hourglass::bench

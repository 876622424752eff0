// LmdbStore's own behaviour beyond the Store contract: URLs; processes sharing one file; counts
// that survive a restart and writers killed mid-run; expired values read as absent and their
// pages reused; a full map and a directory that cannot be used are clear errors; busy seconds
// compacted as they are written; a batch that fails fails alone; the stores of one process on a
// directory share one environment.
#include "hourglass/lmdb_store.h"

#include <gtest/gtest.h>
#include <lmdb.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "hourglass/engine.h"
#include "sliding_log.h"

namespace hourglass {
namespace {

constexpr int64_t kHourStart = 1'431'856'800;

TEST(LmdbUrl, PathMapSizeAndSync) {
  Result<LmdbOptions> o = ParseLmdbUrl("lmdb:///var/lib/hourglass");
  ASSERT_TRUE(o.ok()) << o.error().ToString();
  EXPECT_EQ(o->path, "/var/lib/hourglass");
  EXPECT_EQ(o->map_bytes, uint64_t{1} << 30);
  EXPECT_EQ(o->sync, LmdbSync::kNone);
  o = ParseLmdbUrl("lmdb:///d?map_size=4GiB&sync=meta");
  ASSERT_TRUE(o.ok()) << o.error().ToString();
  EXPECT_EQ(o->map_bytes, uint64_t{4} << 30);
  EXPECT_EQ(o->sync, LmdbSync::kMeta);
  EXPECT_EQ(ParseLmdbUrl("lmdb:///d?map_size=2097152")->map_bytes, 2097152u);
  for (const char* bad : {"lmdb://", "lmdb://relative/dir", "lmdb:///d?map_size=12",
                          "lmdb:///d?map_size=4GB", "lmdb:///d?map_size=99999999TiB",
                          "lmdb:///d?sync=always", "lmdb:///d?frobnicate=1", "redis://h:1"}) {
    Result<LmdbOptions> r = ParseLmdbUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("lmdb:///"), std::string::npos) << r.error().message();
  }
}

class LmdbStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hourglass-lmdb-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    path_ = dir;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::unique_ptr<LmdbStore> Open(const Clock& clock, uint64_t map_bytes = uint64_t{64} << 20) {
    Result<std::unique_ptr<LmdbStore>> store =
        LmdbStore::Create(LmdbOptions{.path = path_, .map_bytes = map_bytes}, clock);
    EXPECT_TRUE(store.ok()) << store.error().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  static Batch Hit(const std::string& group, int64_t t) {
    return Batch{group,
                 {{group + ":1:" + std::to_string(t), 1, Seconds{86460}},
                  {group + ":60:" + std::to_string(t / 60), 1, Seconds{90000}},
                  {group + ":3600:" + std::to_string(t / 3600), 1, Seconds{176400}}},
                 {}};
  }
  uint64_t HourCount(Store& store, const std::string& group, int64_t t) {
    Result<std::vector<uint64_t>> v =
        store.Apply(Batch{group, {}, {group + ":3600:" + std::to_string(t / 3600)}});
    EXPECT_TRUE(v.ok()) << v.error().ToString();
    return v.ok() ? v->front() : 0;
  }

  std::string path_;
};

TEST_F(LmdbStoreTest, AnHourOfAFeatureIsOneValueAndABusySecondStaysSmall) {
  ManualClock clock(FromUnix(kHourStart));
  std::unique_ptr<LmdbStore> store = Open(clock);
  for (int i = 0; i < 5000; ++i)
    ASSERT_TRUE(store->Apply(Hit("g", kHourStart + 7 + i / 1000)).ok());
  EXPECT_EQ(store->Stats().front()->curr_items, 1u) << "one pack holds the hour";
  Result<std::vector<uint64_t>> v = store->Apply(Batch{
      "g",
      {},
      {"g:1:" + std::to_string(kHourStart + 7), "g:3600:" + std::to_string(kHourStart / 3600)}});
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(*v, (std::vector<uint64_t>{1000, 5000}));
  EXPECT_LT(store->Stats().front()->bytes, uint64_t{64} * 1024) << "compacted as it is written";
}

// Processes that open the same directory share one file: their hits add up exactly, whatever
// the interleaving of their write transactions.
TEST_F(LmdbStoreTest, ProcessesSharingTheDirectoryCountEveryHit) {
  constexpr int kProcesses = 4, kHits = 300;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());
      bool ok = store != nullptr;
      for (int i = 0; ok && i < kHits; ++i) ok = store->Apply(Hit("g", kHourStart + i % 60)).ok();
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());
  EXPECT_EQ(HourCount(*store, "g", kHourStart), uint64_t{kProcesses * kHits});
}

// The files of `dir` this process holds open, by name ("lock.mdb": 2 for two descriptors).
std::map<std::string, int> OpenFilesUnder(const std::string& dir) {
  std::map<std::string, int> open;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(fd.path(), ec);
    if (!ec && target.parent_path() == dir) ++open[target.filename().string()];
  }
  return open;
}

// LMDB must not be opened twice in one process: a second open finds no other process holding the
// lock file (fcntl locks never conflict within a process) and initializes it again, writer mutex
// included, under the first; two write transactions then run at once and counts are lost. Two
// stores of one process on one directory share one environment: one descriptor of each file.
TEST_F(LmdbStoreTest, TwoStoresOfOneProcessOnADirectoryShareOneEnvironment) {
  std::unique_ptr<LmdbStore> first = Open(SystemClock::Get());
  ASSERT_NE(first, nullptr);
  const std::map<std::string, int> one = OpenFilesUnder(path_);
  EXPECT_EQ(one.at("lock.mdb"), 1);
  std::unique_ptr<LmdbStore> second = Open(SystemClock::Get(), uint64_t{128} << 20);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(OpenFilesUnder(path_), one) << "the files opened again: the lock can be reset";
  ASSERT_TRUE(first->Apply(Hit("g", kHourStart)).ok());
  EXPECT_EQ(HourCount(*second, "g", kHourStart), 1u);
  EXPECT_EQ(second->Stats().front()->limit_maxbytes, uint64_t{128} << 20) << "the larger map wins";
  first.reset();  // the other store keeps the environment open
  ASSERT_TRUE(second->Apply(Hit("g", kHourStart)).ok());
  EXPECT_EQ(HourCount(*second, "g", kHourStart), 2u);
  second.reset();
  EXPECT_TRUE(OpenFilesUnder(path_).empty()) << "closed with its last store";
}

// `rm -rf` of the directory under a running process, and a new process recreating it: the old
// process would go on counting in the unlinked file, apart from everyone else. Within a second
// it notices that the directory's data file is another (or gone) and counts nothing more, saying
// why; the new file is the one that counts.
TEST_F(LmdbStoreTest, ADirectoryDeletedUnderAProcessIsRefusedNotCountedApart) {
  ManualClock clock(FromUnix(kHourStart));
  std::unique_ptr<LmdbStore> old_store = Open(clock);
  ASSERT_NE(old_store, nullptr);
  ASSERT_TRUE(old_store->Apply(Hit("g", kHourStart)).ok());
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
  std::unique_ptr<LmdbStore> new_store = Open(clock);  // as a process started now would
  ASSERT_NE(new_store, nullptr);
  ASSERT_TRUE(new_store->Apply(Hit("g", kHourStart)).ok());
  clock.Advance(Seconds{1});  // the file is looked at once a second
  Result<std::vector<uint64_t>> refused = old_store->Apply(Hit("g", kHourStart));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kDataLoss);
  EXPECT_NE(refused.error().message().find("deleted, moved or replaced"), std::string::npos)
      << refused.error().message();
  std::vector<Result<ServerStats>> stats = old_store->Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_FALSE(stats[0].ok()) << "the watch sees it too";
  EXPECT_EQ(HourCount(*new_store, "g", kHourStart), 1u) << "counted once, in the current file";
}

// Threads writing through one store while others of the same process open, write through and
// close stores of their own on the same directory: every increment is counted once.
TEST_F(LmdbStoreTest, StoresOpenedAndClosedWhileOthersWriteLoseNoIncrement) {
  std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());
  ASSERT_NE(store, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> applied{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&] {
      while (!stop) applied += store->Apply(Hit("g", kHourStart + 1)).ok() ? 1 : 0;
    });
  }
  for (int i = 0; i < 100; ++i) {
    std::unique_ptr<LmdbStore> own = Open(SystemClock::Get());
    ASSERT_NE(own, nullptr);
    ASSERT_TRUE(own->Apply(Hit("g", kHourStart + 2)).ok());
    applied += 1;
  }
  stop = true;
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(HourCount(*store, "g", kHourStart), applied.load());
}

// Writers killed with SIGKILL at random instants, some while holding LMDB's write lock: the file
// opens again, every hit a writer saw committed is there (at most the one it was writing when
// killed is there too), and new writers are not locked out.
TEST_F(LmdbStoreTest, CountsSurviveWritersKilledMidRunAndARestart) {
  constexpr int kWriters = 4;
  std::mt19937_64 rng(7);
  uint64_t acknowledged = 0;
  for (int round = 0; round < 3; ++round) {
    int acks[2];
    ASSERT_EQ(pipe(acks), 0);
    std::vector<pid_t> writers;
    for (int w = 0; w < kWriters; ++w) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(acks[0]);
        std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());
        for (int i = 0; store != nullptr; ++i) {
          if (!store->Apply(Hit("g", kHourStart + i % 3600)).ok()) _exit(1);
          const char ack = 1;
          if (write(acks[1], &ack, 1) != 1) _exit(1);
        }
        _exit(1);
      }
      writers.push_back(pid);
    }
    close(acks[1]);
    // However slow the build (sanitizers), the writers are killed once they are under way, at a
    // random instant after.
    char buffer[4096];
    ssize_t n = 0;
    for (uint64_t seen = 0; seen < 50 && (n = read(acks[0], buffer, sizeof buffer)) > 0;) {
      seen += static_cast<uint64_t>(n);
      acknowledged += static_cast<uint64_t>(n);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 100));
    for (pid_t pid : writers) kill(pid, SIGKILL);
    for (pid_t pid : writers) waitpid(pid, nullptr, 0);
    while ((n = read(acks[0], buffer, sizeof buffer)) > 0) acknowledged += static_cast<uint64_t>(n);
    close(acks[0]);
    std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());  // a restart
    ASSERT_NE(store, nullptr);
    const uint64_t stored = HourCount(*store, "g", kHourStart);
    EXPECT_GE(stored, acknowledged) << "round " << round << ": a committed hit was lost";
    EXPECT_LE(stored, acknowledged + kWriters * (round + 1)) << "round " << round;
    acknowledged = stored;  // the unacknowledged ones that landed count from now on
    ASSERT_TRUE(store->Apply(Hit("g", kHourStart)).ok()) << "the write lock was recovered";
    ++acknowledged;
  }
  EXPECT_GT(acknowledged, 100u) << "the writers got going";
}

TEST_F(LmdbStoreTest, ExpiredValuesReadAsAbsentAndTheirPagesAreReused) {
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<LmdbStore> store = Open(clock);
  const auto fill = [&](const std::string& prefix) {
    for (int i = 0; i < 2000; ++i) {
      const std::string group = prefix + std::to_string(i);
      ASSERT_TRUE(store->Apply(Batch{group, {{group + ":k", 1, Seconds{60}}}, {}}).ok());
    }
  };
  fill("a");
  const uint64_t items = store->Stats().front()->curr_items;
  const uint64_t bytes = store->Stats().front()->bytes;
  EXPECT_EQ(items, 2000u);
  clock.Advance(Seconds{61});
  EXPECT_EQ(*store->Apply(Batch{"a7", {}, {"a7:k"}}), (std::vector<uint64_t>{0})) << "expired";
  ASSERT_TRUE(store->Apply(Batch{"a7", {{"a7:k", 2, Seconds{60}}}, {}}).ok());
  EXPECT_EQ(*store->Apply(Batch{"a7", {}, {"a7:k"}}), (std::vector<uint64_t>{2})) << "created anew";
  Result<uint64_t> reclaimed = store->Reclaim();
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.error().ToString();
  EXPECT_GE(*reclaimed, 1900u);
  EXPECT_EQ(store->Stats().front()->curr_items, 1u);
  // As many values again fit in the pages the expired ones left.
  fill("b");
  EXPECT_LE(store->Stats().front()->bytes, bytes + 64 * 1024);
  // Writes reclaim as they go, without Reclaim: a day of traffic keeps the file bounded.
  for (int hour = 0; hour < 24; ++hour) {
    clock.Advance(Seconds{3600});
    fill("c" + std::to_string(hour) + "-");
  }
  EXPECT_LE(store->Stats().front()->curr_items, 3u * 2000u);
}

TEST_F(LmdbStoreTest, AFullMapIsAClearErrorAndTheStoreServesOn) {
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<LmdbStore> store = Open(clock, uint64_t{1} << 20);
  Result<std::vector<uint64_t>> last = std::vector<uint64_t>{};
  int written = 0;
  for (; written < 100000 && last.ok(); ++written) {
    const std::string group = "g" + std::to_string(written);
    last = store->Apply(Batch{group, {{group + ":k", 1, Seconds{60}}}, {}});
  }
  ASSERT_FALSE(last.ok()) << "1 MiB holds fewer than 100,000 values";
  EXPECT_EQ(last.error().code(), ErrorCode::kStoreFull);
  EXPECT_NE(last.error().message().find("map_size"), std::string::npos) << last.error().message();
  EXPECT_EQ(*store->Apply(Batch{"g1", {}, {"g1:k"}}), (std::vector<uint64_t>{1}))
      << "what was written stays readable";
  clock.Advance(Seconds{61});
  Result<uint64_t> reclaimed = store->Reclaim();
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.error().ToString();
  EXPECT_TRUE(store->Apply(Batch{"g", {{"g:k", 1, Seconds{60}}}, {}}).ok()) << "room again";
}

TEST_F(LmdbStoreTest, ADirectoryThatCannotBeUsedIsAClearError) {
  std::ofstream(path_ + "/file") << "x";
  for (const std::string& bad : {path_ + "/file", path_ + "/file/sub", std::string("/proc/nope")}) {
    Result<std::unique_ptr<LmdbStore>> store =
        LmdbStore::Create(LmdbOptions{.path = bad}, SystemClock::Get());
    ASSERT_FALSE(store.ok()) << bad;
    EXPECT_EQ(store.error().code(), ErrorCode::kUnavailable) << store.error().ToString();
    EXPECT_NE(store.error().message().find(bad), std::string::npos) << store.error().message();
  }
  // A directory holding something that is not an environment.
  std::filesystem::create_directories(path_ + "/other");
  std::ofstream(path_ + "/other/data.mdb") << std::string(8192, 'z');
  Result<std::unique_ptr<LmdbStore>> store =
      LmdbStore::Create(LmdbOptions{.path = path_ + "/other"}, SystemClock::Get());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("environment"), std::string::npos)
      << store.error().message();
}

// Writes `payload` (after an expiry far ahead) under `key` with LMDB itself, in another process
// (LMDB wants one environment per file per process): a value hourglass did not write.
void PutForeignValue(const std::string& path, const std::string& key, const std::string& payload) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    MDB_dbi values = 0;
    std::string value(8, '\xff');
    value += payload;
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v{value.size(), value.data()};
    const bool ok = mdb_env_create(&env) == 0 && mdb_env_set_maxdbs(env, 4) == 0 &&
                    mdb_env_set_mapsize(env, uint64_t{64} << 20) == 0 &&
                    mdb_env_open(env, path.c_str(), 0, 0640) == 0 &&
                    mdb_txn_begin(env, nullptr, 0, &txn) == 0 &&
                    mdb_dbi_open(txn, "values", 0, &values) == 0 &&
                    mdb_put(txn, values, &k, &v, 0) == 0 && mdb_txn_commit(txn) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Batches share one write transaction; one that meets a value that is not ours fails alone, and
// the batches around it are applied once each.
TEST_F(LmdbStoreTest, ABatchThatFailsFailsAloneAndTheOthersApplyOnce) {
  ManualClock clock(FromUnix(1'700'000'000));
  std::unique_ptr<LmdbStore> store = Open(clock);
  store.reset();
  PutForeignValue(path_, "bad:k", "xyz");
  store = Open(clock);
  const Seconds ttl{60};
  const std::vector<Batch> batches = {Batch{"a", {{"a:k", 1, ttl}}, {"a:k"}},
                                      Batch{"bad", {{"bad:k", 1, ttl}}, {"bad:k"}},
                                      Batch{"c", {{"c:k", 2, ttl}}, {"c:k"}}};
  std::vector<Result<std::vector<uint64_t>>> results = store->ApplyMany(batches);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0].ok()) << results[0].error().ToString();
  EXPECT_EQ(*results[0], (std::vector<uint64_t>{1}));
  ASSERT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].error().code(), ErrorCode::kInternal);
  EXPECT_NE(results[1].error().message().find("bad:k"), std::string::npos)
      << results[1].error().message();
  ASSERT_TRUE(results[2].ok()) << results[2].error().ToString();
  EXPECT_EQ(*results[2], (std::vector<uint64_t>{2}));
  EXPECT_EQ(*store->Apply(Batch{"a", {}, {"a:k"}}), (std::vector<uint64_t>{1})) << "applied once";
  EXPECT_EQ(*store->Apply(Batch{"c", {}, {"c:k"}}), (std::vector<uint64_t>{2})) << "applied once";
}

// The same window counts from two engines in two processes on one file, checked against a
// brute-force log (the engine's exactness on a file shared by processes).
TEST_F(LmdbStoreTest, TwoProcessesRecordingARandomTraceCountExactly) {
  std::mt19937_64 rng(21);
  std::vector<int64_t> seconds;
  testing::SlidingLog log;
  int64_t t = kHourStart;
  for (int i = 0; i < 600; ++i) {
    t += static_cast<int64_t>(rng() % 30);
    seconds.push_back(t);
    log.Add(t, 1);
  }
  std::vector<pid_t> children;
  for (int p = 0; p < 2; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());
      ManualClock clock(FromUnix(t));
      EngineOptions options;
      options.retention = Seconds{3 * 86400};
      const Engine engine = *Engine::Create(*store, clock, options);
      bool ok = true;
      for (size_t i = static_cast<size_t>(p); i < seconds.size(); i += 2) {
        ok = ok && engine.Record("signup", "ann", 1, FromUnix(seconds[i])).ok();
      }
      _exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::unique_ptr<LmdbStore> store = Open(SystemClock::Get());
  ManualClock clock(FromUnix(t + 10));
  EngineOptions options;
  options.retention = Seconds{3 * 86400};
  const Engine engine = *Engine::Create(*store, clock, options);
  for (int q = 0; q < 50; ++q) {
    const int64_t at =
        kHourStart + static_cast<int64_t>(rng() % static_cast<uint64_t>(t - kHourStart + 60));
    const std::vector<Window> windows = {
        *Window::Sliding(Seconds{1}), *Window::Sliding(Seconds{60}),
        *Window::Sliding(Seconds{3600}), *Window::Sliding(Seconds{86400})};
    Result<Counts> counts = engine.Count("signup", "ann", windows, FromUnix(at));
    ASSERT_TRUE(counts.ok()) << counts.error().ToString();
    for (const WindowCount& w : counts->windows) {
      ASSERT_EQ(w.count, log.Window(at, w.window.length().count())) << "at " << at;
    }
  }
}

}  // namespace
}  // namespace hourglass

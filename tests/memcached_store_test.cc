// MemcachedStore's own behaviour with a real memcached, beyond the Store contract: refused
// increments are errors naming the server, fire-and-forget failures are counted, a failed server
// fails fast and comes back, a restart while idle costs no request, and a full pool is an error,
// not a hang.
#include "hourglass/memcached_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "dripping_server.h"
#include "hourglass/engine.h"
#include "hourglass/packed_layout.h"
#include "store_harness.h"

namespace hourglass {
namespace {

using std::chrono::milliseconds;

class MemcachedStoreTest : public ::testing::Test {
 protected:
  void Open(MemcachedOptions options = {}) {
    harness_ = std::make_unique<testing::MemcachedHarness>(options);
    ASSERT_FALSE(HasFailure());
  }
  testing::MemcachedServer& server() { return harness_->server(); }
  MemcachedStore& store() { return harness_->memcached(); }
  Result<std::vector<uint64_t>> Add(const std::string& key, int64_t delta) {
    return store().Apply(Batch{"g", {{key, delta, Seconds{60}}}, {key}});
  }
  std::string name() { return "memcached " + server().address(); }

  std::unique_ptr<testing::MemcachedHarness> harness_;
};

TEST_F(MemcachedStoreTest, RefusedIncrementIsAnErrorNamingTheServerAndTheAnswer) {
  Open();
  ASSERT_EQ(server().Raw("set text 0 60 5\r\nhello\r\n"), "STORED\r\n");
  Result<std::vector<uint64_t>> values = Add("text", 1);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().code(), ErrorCode::kInternal);
  EXPECT_NE(values.error().message().find(name()), std::string::npos) << values.error().message();
  EXPECT_NE(values.error().message().find("non-numeric"), std::string::npos)
      << values.error().message();
  // The connection stayed in step: the next batch on it is answered correctly.
  Result<std::vector<uint64_t>> next = Add("number", 2);
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ(*next, (std::vector<uint64_t>{2}));
}

// Another client's set can leave a value that is not a counter under a bucket key: reads name
// the key, increments name the batch's keys, and a reset's read sees it as present.
TEST_F(MemcachedStoreTest, AValueThatIsNotACounterIsNamedAndCanBeReadForDeletion) {
  Open();
  ASSERT_EQ(server().Raw("set g:bad 0 0 3\r\nabc\r\n"), "STORED\r\n");
  Result<std::vector<uint64_t>> read = store().Apply(Batch{"g", {}, {"g:ok", "g:bad"}});
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message().find("\"g:bad\" is not a counter"), std::string::npos)
      << read.error().message();
  Result<std::vector<uint64_t>> incremented = Add("g:bad", 1);
  ASSERT_FALSE(incremented.ok());
  EXPECT_NE(incremented.error().message().find("\"g:bad\""), std::string::npos)
      << incremented.error().message();
  EXPECT_NE(incremented.error().message().find("reset"), std::string::npos);
  Batch lenient{"g", {}, {"g:ok", "g:bad"}};
  lenient.non_counters_read_as_max = true;
  Result<std::vector<uint64_t>> seen = store().Apply(lenient);
  ASSERT_TRUE(seen.ok()) << seen.error().ToString();
  EXPECT_EQ(*seen, (std::vector<uint64_t>{0, std::numeric_limits<uint64_t>::max()}));
  EXPECT_TRUE(Add("g:ok", 1).ok()) << "the connection stayed in step";
}

// The packed layout on a real server: what it stores, how a busy second shrinks, what it does
// with bytes that are not a pack.
class MemcachedPackedLayoutTest : public MemcachedStoreTest {
 protected:
  // A loaded machine (the suite runs two tests at once) must not time an exchange out.
  void SetUp() override {
    Open(MemcachedOptions{.io_timeout = milliseconds{2000}, .layout = MemcachedLayout::kPacked});
  }
  static constexpr int64_t kHourStart = 1'431'856'800;
  static std::string Second(int64_t t) { return "g:1:" + std::to_string(t); }
  static std::string Minute(int64_t t) { return "g:60:" + std::to_string(t / 60); }
  static std::string Hour(int64_t t) { return "g:3600:" + std::to_string(t / 3600); }
  static std::string Pack() { return "g:p:" + std::to_string(kHourStart / 3600); }
  // A hit at `t` as the engine writes it: every level, one TTL per level.
  static Batch Hit(int64_t t, int64_t delta = 1) {
    return Batch{"g",
                 {{Second(t), delta, Seconds{86460}},
                  {Minute(t), delta, Seconds{90000}},
                  {Hour(t), delta, Seconds{176400}}},
                 {}};
  }
  // Writes 60 hits into the pack's hour, 40 seconds of them, in 60 records (`written` bytes): a
  // read of that hour alone leaves it as it is, open and not worth a rewrite.
  void WriteAnOpenHour(long long& written) {
    for (int64_t i = 0; i < 40; ++i) ASSERT_TRUE(store().Apply(Hit(kHourStart + i * 12)).ok());
    for (int64_t i = 0; i < 20; ++i) {
      ASSERT_TRUE(store().Apply(Hit(kHourStart + i % 10 * 12)).ok());
    }
    written = PackBytes();
    ASSERT_EQ(written, 4 + 60 * 2);
    ASSERT_EQ(*store().Apply(Batch{"g", {}, {Hour(kHourStart)}}), (std::vector<uint64_t>{60}));
    EXPECT_EQ(store().Flush(), 0u);
    EXPECT_EQ(PackBytes(), written) << "open: not worth a rewrite";
  }

  // The length of the pack's value on the server, or -1 when it is missing.
  long long PackBytes() {
    const std::string answer = server().Raw("mg " + Pack() + " s\r\n");
    if (!answer.starts_with("HD s")) return -1;
    return std::stoll(answer.substr(4));
  }
};

TEST_F(MemcachedPackedLayoutTest, AnHourOfSecondsIsOneItemOfTwoBytesPerHit) {
  for (int64_t i = 0; i < 300; ++i) ASSERT_TRUE(store().Apply(Hit(kHourStart + i * 12)).ok());
  EXPECT_EQ(server().Stat("curr_items"), 1) << "the pack, the hour's count included";
  EXPECT_EQ(PackBytes(), 4 + 300 * 2);
  Result<std::vector<uint64_t>> values =
      store().Apply(Batch{"g",
                          {},
                          {Second(kHourStart + 12), Second(kHourStart + 13),
                           Minute(kHourStart + 60), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{1, 0, 5, 300}));
}

TEST_F(MemcachedPackedLayoutTest, ABusySecondIsCompactedWhenReadAndKeepsItsCount) {
  std::vector<Batch> hits(500, Hit(kHourStart + 7));
  for (const Status& s : store().Send(hits)) ASSERT_TRUE(s.ok()) << s.error().ToString();
  store().Flush();
  EXPECT_EQ(PackBytes(), 4 + 500 * 2);
  const Batch read{"g", {}, {Second(kHourStart + 7), Minute(kHourStart + 7)}};
  Result<std::vector<uint64_t>> values = store().Apply(read);
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{500, 500}));
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_EQ(PackBytes(), 4 + 4) << "one record with a u16 magnitude";
  ASSERT_TRUE(store().Apply(Hit(kHourStart + 7)).ok());
  values = store().Apply(read);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<uint64_t>{501, 501}));
}

// A pack that a third less could not pay to rewrite at every read is rewritten once its hour has
// passed for the client: when a batch that writes a later hour reads it. A rewrite is sent after
// the answer, unawaited: Flush waits for it before the server's item is looked at.
TEST_F(MemcachedPackedLayoutTest, APastHourIsCompactedByTheFirstCheckOfALaterOne) {
  long long written = 0;
  ASSERT_NO_FATAL_FAILURE(WriteAnOpenHour(written));
  const Batch read{"g", {}, {Hour(kHourStart)}};
  Batch next_hour = Hit(kHourStart + 3600);
  next_hour.reads = read.reads;
  ASSERT_EQ(*store().Apply(next_hour), (std::vector<uint64_t>{60}));
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_LT(PackBytes(), written) << "settled: rewritten";
  EXPECT_GE(PackBytes() * 3, written * 2) << "not a gain an open pack would take";
  ASSERT_EQ(*store().Apply(read), (std::vector<uint64_t>{60}));
  Result<std::vector<uint64_t>> seconds =
      store().Apply(Batch{"g", {}, {Second(kHourStart), Second(kHourStart + 12 * 39)}});
  ASSERT_TRUE(seconds.ok()) << seconds.error().ToString();
  EXPECT_EQ(*seconds, (std::vector<uint64_t>{3, 1}));
}

// A check that only reads (a peek, a CLI's `check` of a month) settles every pack it reads but the
// last hour's: it rewrites them once, and later reads fold a few records instead of every hit.
TEST_F(MemcachedPackedLayoutTest, APastHourIsCompactedByAReadOfALaterOne) {
  long long written = 0;
  ASSERT_NO_FATAL_FAILURE(WriteAnOpenHour(written));
  const Batch two_hours{"g", {}, {Hour(kHourStart), Hour(kHourStart + 3600)}};
  ASSERT_EQ(*store().Apply(two_hours), (std::vector<uint64_t>{60, 0}));
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_LT(PackBytes(), written) << "settled by the read of the next hour: rewritten";
  Result<std::vector<uint64_t>> values = store().Apply(
      Batch{"g", {}, {Second(kHourStart), Second(kHourStart + 12 * 39), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{3, 1, 60}));
}

// Fire-and-forget hits (a blocked client's, counted in attempts mode) read nothing: the store
// compacts what it sent itself, so a flood written blind still costs bytes per second.
TEST_F(MemcachedPackedLayoutTest, FireAndForgetHitsAreCompactedWithoutAnyRead) {
  for (int round = 0; round < 50; ++round) {
    std::vector<Batch> hits(100, Hit(kHourStart + 9 + round / 10));
    for (const Status& s : store().Send(hits)) ASSERT_TRUE(s.ok()) << s.error().ToString();
  }
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_LT(PackBytes(), 4 + 2048 + 5 * 7) << "5,000 hits in 10,000 bytes of records, compacted";
  Result<std::vector<uint64_t>> values =
      store().Apply(Batch{"g", {}, {Second(kHourStart + 9), Minute(kHourStart), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{1000, 5000, 5000}));
}

// Recording (`hourglass hit`, replays, settlements) applies write-only batches and waits for
// them, reading nothing back: the store compacts those packs itself as it does blind sends.
TEST_F(MemcachedPackedLayoutTest, WriteOnlyAppliesAreCompactedWithoutAnyRead) {
  for (int i = 0; i < 5000; ++i) {
    Result<std::vector<uint64_t>> applied = store().Apply(Hit(kHourStart + 9 + i / 1000));
    ASSERT_TRUE(applied.ok()) << applied.error().ToString();
    ASSERT_TRUE(applied->empty());
  }
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_LT(PackBytes(), 4 + 2048 + 5 * 7) << "5,000 hits in 10,000 bytes of records, compacted";
  Result<std::vector<uint64_t>> values =
      store().Apply(Batch{"g", {}, {Second(kHourStart + 9), Minute(kHourStart), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{1000, 5000, 5000}));
}

// Threads hit and take back one second while reads keep compacting its pack: a compaction that
// races an append loses its CAS and is dropped, so no hit is lost or counted twice.
TEST_F(MemcachedPackedLayoutTest, CompactionsRacingAppendsLoseNothing) {
  constexpr int kThreads = 4, kRounds = 400;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Batch batch = Hit(kHourStart + 30);
        batch.reads = {Second(kHourStart + 30)};  // reads compact the pack as it grows
        if (!store().Apply(batch).ok()) ++errors;
        if (t % 2 == 1 && r % 4 == 0 && !store().Apply(Hit(kHourStart + 30, -1)).ok()) ++errors;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  const uint64_t expected = kThreads * kRounds - 2 * (kRounds / 4);
  Result<std::vector<uint64_t>> values = store().Apply(
      Batch{"g", {}, {Second(kHourStart + 30), Minute(kHourStart + 30), Hour(kHourStart)}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{expected, expected, expected}));
  EXPECT_LT(PackBytes(), 4 + 200) << "compacted along the way";
}

// Bases: a busy hour's compacted records go to an item of their own that readers keep, so a
// check reads what was appended since the last compaction, not the hour.
class MemcachedPackBasesTest : public MemcachedPackedLayoutTest {
 protected:
  // Another client of the same server, with nothing read yet.
  std::unique_ptr<MemcachedStore> Reader() {
    MemcachedOptions options{.io_timeout = milliseconds{2000}, .layout = MemcachedLayout::kPacked};
    options.servers = {server().address()};
    return std::move(*MemcachedStore::Create(options));
  }
  // `times` hits in each of `count` seconds from `from` on, sent without waiting (the store
  // compacts what it sent), then waited for.
  void HitSeconds(MemcachedStore& to, int64_t from, int64_t count, int times) {
    std::vector<Batch> hits;
    for (int64_t i = 0; i < count; ++i) {
      for (int k = 0; k < times; ++k) hits.push_back(Hit(from + i));
    }
    for (size_t at = 0; at < hits.size(); at += 100) {
      const size_t n = std::min<size_t>(100, hits.size() - at);
      for (const Status& s : to.Send({hits.data() + at, n})) {
        ASSERT_TRUE(s.ok()) << s.error().ToString();
      }
    }
    EXPECT_EQ(to.Flush(), 0u);
  }
  static Batch Probe() {
    return Batch{"g", {}, {Second(kHourStart + 5), Minute(kHourStart + 60), Hour(kHourStart)}};
  }
  std::vector<uint64_t> Read(MemcachedStore& from) {
    Result<std::vector<uint64_t>> values = from.Apply(Probe());
    EXPECT_TRUE(values.ok()) << values.error().ToString();
    EXPECT_EQ(from.Flush(), 0u);  // the compactions it sent were applied
    return values.ok() ? *values : std::vector<uint64_t>{};
  }
  // The pack's value as the server holds it.
  std::string PackValue() {
    const std::string answer = server().Raw("mg " + Pack() + " v\r\n");
    const size_t data = answer.find("\r\n");
    if (!answer.starts_with("VA ") || data == std::string::npos) return {};
    return answer.substr(data + 2, std::stoul(answer.substr(3)));
  }
  std::string BaseKey() {
    std::optional<packed::BaseRef> ref = packed::BaseRefOf(Pack(), PackValue());
    return ref ? ref->key : std::string();
  }
  // The bytes the server sent while `read` ran, less what a `stats` costs.
  long long BytesSentFor(const std::function<void()>& read) {
    const long long a = server().Stat("bytes_written");
    const long long b = server().Stat("bytes_written");
    read();
    const long long c = server().Stat("bytes_written");
    return (c - b) - (b - a);
  }
};

TEST_F(MemcachedPackBasesTest, ABusyHourGoesToABaseThatAReaderReadsOnce) {
  // 2,400 busy seconds: 1,200 bytes compacted as runs of 4-bit values, 9,600 as they came.
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 4800}));
  ASSERT_FALSE(BaseKey().empty()) << "the pack names a base";
  EXPECT_EQ(server().Stat("curr_items"), 2) << "the pack and one base: none left behind";
  EXPECT_EQ(PackBytes(), 4 + 8) << "the pack holds its header and its base's name";
  const std::string base = server().Raw("mg " + BaseKey() + " s\r\n");
  ASSERT_TRUE(base.starts_with("HD s")) << base;
  const long long base_bytes = std::stoll(base.substr(4));
  EXPECT_GE(base_bytes, static_cast<long long>(packed::kBaseAfterBytes));
  EXPECT_LT(base_bytes, 4 + 1300);

  // memcached's bytes_written can lag the replies a client already holds: on a busy machine a
  // first read once measured 94 bytes and the read after it 4,517, the first's bytes counted in
  // the second's window. A late count lowers the window it belongs to and raises a later one, so
  // each read is measured three times, with a fresh reader each: the most bytes any first read
  // cost, the least any read after it did.
  long long first = 0;
  long long again = std::numeric_limits<long long>::max();
  for (int trial = 0; trial < 3; ++trial) {
    std::unique_ptr<MemcachedStore> reader = Reader();
    first = std::max(first, BytesSentFor([&] {
                       EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{2, 120, 4800}));
                     }));
    again = std::min(again, BytesSentFor([&] {
                       EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{2, 120, 4800}));
                     }));
  }
  EXPECT_GE(first - again, base_bytes) << "the base is read once";
  EXPECT_LT(again, 100) << "a read of the pack alone: its header and the base's name";
  std::unique_ptr<MemcachedStore> reader = Reader();
  EXPECT_EQ(Read(*reader), Read(store()));

  // Hits appended after the base are read on top of it, by every reader.
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart + 5, 1, 3));
  EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{5, 120, 4803}));
  EXPECT_EQ(Read(*Reader()), (std::vector<uint64_t>{5, 120, 4803}));
  EXPECT_EQ(PackBytes(), 4 + 8 + 3 * 2);
}

TEST_F(MemcachedPackBasesTest, ANewBaseReplacesTheOldOneForEveryReader) {
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 4800}));
  const std::string first = BaseKey();
  std::unique_ptr<MemcachedStore> reader = Reader();
  EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{2, 120, 4800})) << "it keeps the first base";

  // 300 hits in new seconds: 600 bytes of records after the base, a compaction into a new one.
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart + 2400, 300, 1));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 5100}));
  EXPECT_NE(BaseKey(), first);
  EXPECT_EQ(PackBytes(), 4 + 8);
  EXPECT_EQ(server().Raw("mg " + first + " s\r\n"), "EN\r\n") << "the old base is deleted";
  EXPECT_EQ(server().Stat("curr_items"), 2);
  EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{2, 120, 5100})) << "it reads the new base";
  EXPECT_EQ(Read(*Reader()), (std::vector<uint64_t>{2, 120, 5100}));
}

// Once its hour has passed for a client (a batch of it writes the next hour), a pack with a base
// is read rarely: it goes back to one item, which holds it in less memory than two.
TEST_F(MemcachedPackBasesTest, APastHourGoesBackToOneItem) {
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 4800}));
  const std::string base = BaseKey();
  ASSERT_FALSE(base.empty());
  Batch next_hour = Hit(kHourStart + 3600);
  next_hour.reads = {Hour(kHourStart)};
  ASSERT_EQ(*store().Apply(next_hour), (std::vector<uint64_t>{4800}));
  EXPECT_EQ(store().Flush(), 0u);
  EXPECT_TRUE(BaseKey().empty()) << "the pack names no base";
  EXPECT_EQ(server().Raw("mg " + base + " s\r\n"), "EN\r\n") << "and the base is deleted";
  EXPECT_EQ(server().Stat("curr_items"), 2) << "this hour's pack and the next one's";
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 4800}));
  EXPECT_EQ(Read(*Reader()), (std::vector<uint64_t>{2, 120, 4800}));
}

// A store that only records (writes reading nothing) compacts a busy hour into a base as it
// sends; no read comes to settle it. Its first write to the next hour does: the past hour goes
// back to one item, and reads as before.
TEST_F(MemcachedPackBasesTest, ARecordedPastHourGoesBackToOneItemAtTheNextHoursFirstWrite) {
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  const std::string base = BaseKey();
  ASSERT_FALSE(base.empty()) << "its sends compacted the hour into a base";
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart + 1800, 1, 1));
  EXPECT_EQ(BaseKey(), base) << "the same hour: still open";
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart + 3600, 1, 1));
  EXPECT_TRUE(BaseKey().empty()) << "the pack names no base";
  EXPECT_EQ(server().Raw("mg " + base + " s\r\n"), "EN\r\n") << "and the base is deleted";
  EXPECT_EQ(server().Stat("curr_items"), 2) << "this hour's pack and the next one's";
  EXPECT_EQ(Read(*Reader()), (std::vector<uint64_t>{2, 120, 4801}));
}

// A reader that keeps a base reads only its pack on the server, which would see the base unused
// and evict it before the pack. So a base read from a copy is fetched on the server once every
// 30 s (on the store's clock), as one more get after its reader's next exchange.
TEST_F(MemcachedPackBasesTest, ABaseReadFromACopyIsFetchedOnTheServerEveryHalfMinute) {
  constexpr Seconds kTouchEvery{30};
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 4800}));
  ASSERT_FALSE(BaseKey().empty());
  ManualClock clock(FromUnix(kHourStart + 3000));
  MemcachedOptions options{.io_timeout = milliseconds{2000}, .layout = MemcachedLayout::kPacked};
  options.servers = {server().address()};
  std::unique_ptr<MemcachedStore> reader = std::move(*MemcachedStore::Create(options, clock));
  EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{2, 120, 4800})) << "the base read, and kept";
  const auto hits_for_a_read = [&] {
    const long long before = server().Stat("get_hits");
    EXPECT_EQ(Read(*reader), (std::vector<uint64_t>{2, 120, 4800}));
    return server().Stat("get_hits") - before;
  };
  const long long pack_only = hits_for_a_read();
  EXPECT_EQ(pack_only, 1) << "the pack alone";
  clock.Advance(kTouchEvery - Seconds{1});
  EXPECT_EQ(hits_for_a_read(), pack_only) << "not due yet";
  clock.Advance(Seconds{1});
  EXPECT_EQ(hits_for_a_read(), pack_only + 1) << "the base fetched on the server";
  EXPECT_EQ(hits_for_a_read(), pack_only) << "once";
  clock.Advance(kTouchEvery);
  EXPECT_EQ(hits_for_a_read(), pack_only + 1);
}

// A base deleted by hand (or evicted: memcached keeps it like any item) is lost like an evicted
// pack: a reader that never read it counts what the pack holds itself, and says nothing false.
TEST_F(MemcachedPackBasesTest, ALostBaseReadsAsTheRecordsAppendedSince) {
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{2, 120, 4800}));
  ASSERT_EQ(server().Raw("md " + BaseKey() + "\r\n"), "HD\r\n");
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart + 5, 1, 3));
  EXPECT_EQ(Read(*Reader()), (std::vector<uint64_t>{3, 0, 3}));
  EXPECT_EQ(Read(store()), (std::vector<uint64_t>{5, 120, 4803})) << "its own copy stays";
}

// Threads hit spread seconds (and take some back) while their reads keep compacting the pack
// into bases: a compaction that loses its race to an append deletes the base it wrote, and no hit
// is lost or counted twice.
TEST_F(MemcachedPackBasesTest, CompactionsIntoBasesRacingAppendsLoseNothing) {
  ASSERT_NO_FATAL_FAILURE(HitSeconds(store(), kHourStart, 2400, 2));
  constexpr int kThreads = 4, kRounds = 600;
  std::vector<std::unique_ptr<MemcachedStore>> clients;
  for (int t = 0; t < kThreads; ++t) clients.push_back(t % 2 == 0 ? nullptr : Reader());
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  const auto second = [](int t, int r) { return kHourStart + (r * 7 + t * 13) % 3000; };
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      MemcachedStore& to = clients[t] ? *clients[t] : store();
      for (int r = 0; r < kRounds; ++r) {
        Batch batch = Hit(second(t, r));
        batch.reads = {Second(second(t, r)), Hour(kHourStart)};
        if (!to.Apply(batch).ok()) ++errors;
        if (t % 2 == 1 && r % 4 == 0 && !to.Apply(Hit(second(t, r), -1)).ok()) ++errors;
      }
      to.Flush();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  std::map<int64_t, uint64_t> expected;
  for (int64_t i = 0; i < 2400; ++i) expected[kHourStart + i] = 2;
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRounds; ++r) {
      ++expected[second(t, r)];
      if (t % 2 == 1 && r % 4 == 0) --expected[second(t, r)];
    }
  }
  uint64_t hour = 0;
  for (const auto& [t, n] : expected) hour += n;
  Batch all{"g", {}, {Hour(kHourStart)}};
  for (const auto& [t, n] : expected) all.reads.push_back(Second(t));
  for (int k = 0; k < 2; ++k) {
    Result<std::vector<uint64_t>> values = Reader()->Apply(all);
    ASSERT_TRUE(values.ok()) << values.error().ToString();
    EXPECT_EQ((*values)[0], hour);
    size_t i = 1;
    for (const auto& [t, n] : expected) EXPECT_EQ((*values)[i++], n) << "second " << t;
  }
  EXPECT_FALSE(BaseKey().empty());
  EXPECT_EQ(server().Stat("curr_items"), 2) << "the pack and its base: every other base deleted";
}

TEST_F(MemcachedPackedLayoutTest, BytesThatAreNotAPackAreNamedAndAResetDeletesThem) {
  ASSERT_EQ(server().Raw("set " + Pack() + " 0 0 3\r\nabc\r\n"), "STORED\r\n");
  Result<std::vector<uint64_t>> read = store().Apply(Batch{"g", {}, {Second(kHourStart)}});
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message().find("\"" + Pack() + "\" is not a pack"), std::string::npos)
      << read.error().message();
  EXPECT_NE(read.error().message().find(name()), std::string::npos);
  // A reset reads every slot as present, and deleting every slot deletes the item.
  Batch lenient{"g", {}, {Second(kHourStart + 1), Minute(kHourStart)}};
  lenient.non_counters_read_as_max = true;
  Result<std::vector<uint64_t>> seen = store().Apply(lenient);
  ASSERT_TRUE(seen.ok()) << seen.error().ToString();
  EXPECT_EQ((*seen)[0], std::numeric_limits<uint64_t>::max());
  std::vector<std::string> every = {Hour(kHourStart)};
  for (int64_t t = kHourStart; t < kHourStart + 3600; ++t) every.push_back(Second(t));
  for (int64_t t = kHourStart; t < kHourStart + 3600; t += 60) every.push_back(Minute(t));
  ASSERT_TRUE(store().Delete("g", every).ok());
  EXPECT_EQ(PackBytes(), -1);
  ASSERT_TRUE(store().Apply(Hit(kHourStart)).ok());
  read = store().Apply(Batch{"g", {}, {Second(kHourStart)}});
  ASSERT_TRUE(read.ok()) << read.error().ToString();
  EXPECT_EQ(*read, (std::vector<uint64_t>{1}));
}

// Switching layout: clients on either layout that read both see every hit, wherever it was
// written and taken back; a client reading only its own layout misses the other's (why the switch
// needs the flag on every client).
// Clients of the two layouts that do not read both count into different keys, but the day ledger
// is one counter for both: a check with a day window tells, and still counts the other's hits.
TEST(MemcachedLayoutSwitch, ClientsOnBothLayoutsWithoutReadingBothAreToldNotSilent) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  const auto open = [&](MemcachedLayout layout) {
    MemcachedOptions options{.layout = layout};
    options.servers = {server.address()};
    return std::move(*MemcachedStore::Create(options));
  };
  std::unique_ptr<MemcachedStore> counters = open(MemcachedLayout::kCounters);
  std::unique_ptr<MemcachedStore> packed = open(MemcachedLayout::kPacked);
  const int64_t today = 1'431'820'800;
  ManualClock clock(FromUnix(today + 5 * 3600 + 100));
  const Engine old_layout = *Engine::Create(*counters, clock, EngineOptions{});
  const Engine new_layout = *Engine::Create(*packed, clock, EngineOptions{});
  ASSERT_TRUE(old_layout.Record("signup", "ann", 12, FromUnix(today + 3600)).ok());
  const Policy policy{*ParseLimits("5/m, 10/d"), CountingMode::kAdmitted, FailureMode::kFailOpen};
  Result<Decision> d = new_layout.Check("signup", "ann", policy);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->degraded);
  ASSERT_TRUE(d->store_error.has_value());
  EXPECT_EQ(d->store_error->code(), ErrorCode::kDataLoss) << d->store_error->ToString();
  EXPECT_FALSE(d->allowed) << "the day holds the 12 hits the other layout wrote";
  EXPECT_EQ(d->limits[1].count, 12u);
}

TEST(MemcachedLayoutSwitch, ClientsReadingBothLayoutsSeeEveryHitWhicheverWroteIt) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  const auto open = [&](MemcachedLayout layout, bool both) {
    MemcachedOptions options{.layout = layout, .read_both_layouts = both};
    options.servers = {server.address()};
    return std::move(*MemcachedStore::Create(options));
  };
  std::unique_ptr<MemcachedStore> stores[] = {open(MemcachedLayout::kCounters, true),
                                              open(MemcachedLayout::kPacked, true)};
  std::unique_ptr<MemcachedStore> packed_only = open(MemcachedLayout::kPacked, false);
  const int64_t t0 = 1'431'856'800;
  std::mt19937_64 rng(11);
  std::map<std::string, uint64_t> model;
  std::vector<std::string> keys;
  for (int i = 0; i < 600; ++i) {
    const int64_t t = t0 + static_cast<int64_t>(rng() % 5000);
    const std::vector<std::string> hit = {"g:1:" + std::to_string(t),
                                          "g:60:" + std::to_string(t / 60),
                                          "g:3600:" + std::to_string(t / 3600)};
    Store& writer = *stores[rng() % 2];
    Batch batch{"g", {}, {}};
    for (const std::string& k : hit) batch.increments.push_back({k, 1, Seconds{600}});
    ASSERT_TRUE(writer.Apply(batch).ok());
    if (rng() % 4 == 0) {  // taken back by the client that wrote it
      for (Increment& inc : batch.increments) inc.delta = -1;
      ASSERT_TRUE(writer.Apply(batch).ok());
    } else {
      for (const std::string& k : hit) ++model[k];
    }
    keys.insert(keys.end(), hit.begin(), hit.end());
  }
  std::vector<uint64_t> expected;
  for (const std::string& k : keys) expected.push_back(model[k]);
  for (const auto& store : stores) {
    Result<std::vector<uint64_t>> values = store->Apply(Batch{"g", {}, keys});
    ASSERT_TRUE(values.ok()) << values.error().ToString();
    EXPECT_EQ(*values, expected) << store->Describe();
  }
  Result<std::vector<uint64_t>> partial = packed_only->Apply(Batch{"g", {}, keys});
  ASSERT_TRUE(partial.ok());
  EXPECT_NE(*partial, expected) << "a client reading one layout misses the other's hits";
  // A delete through either removes the key in both layouts.
  const std::vector<std::string> doomed = {keys[0], keys[1]};
  ASSERT_TRUE(stores[1]->Delete("g", doomed).ok());
  Result<std::vector<uint64_t>> gone = stores[0]->Apply(Batch{"g", {}, doomed});
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, (std::vector<uint64_t>{0, 0}));
}

// One fire-and-forget batch (Store::Send).
Status SendOne(Store& store, const Batch& batch) { return store.Send({&batch, 1}).front(); }

// Apply waits for a write-only batch's answer: a refusal is its own error, not counted later.
TEST_F(MemcachedStoreTest, ApplyOfAWriteOnlyBatchWaitsForItsAnswer) {
  Open();
  ASSERT_EQ(server().Raw("set text 0 60 5\r\nhello\r\n"), "STORED\r\n");
  Result<std::vector<uint64_t>> refused = store().Apply(Batch{"g", {{"text", 1, Seconds{60}}}, {}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("non-numeric value"), std::string::npos)
      << refused.error().message();
  EXPECT_EQ(store().Flush(), 0u) << "nothing was left to learn later";
  ASSERT_TRUE(store().Apply(Batch{"g", {{"n", 3, Seconds{60}}}, {}}).ok());
  EXPECT_EQ(*store().Apply(Batch{"g", {}, {"n"}}), (std::vector<uint64_t>{3}));
}

TEST_F(MemcachedStoreTest, FireAndForgetFailuresAreCountedNotLost) {
  Open();
  ASSERT_EQ(server().Raw("set text 0 60 5\r\nhello\r\n"), "STORED\r\n");
  ASSERT_TRUE(SendOne(store(), Batch{"g", {{"text", 1, Seconds{60}}}, {}}).ok());
  EXPECT_EQ(store().unconfirmed_failures(), 0u) << "not known yet: nothing was read";
  Result<std::vector<uint64_t>> next = Add("number", 1);
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_EQ(*next, (std::vector<uint64_t>{1})) << "the earlier failure is not this batch's";
  EXPECT_EQ(store().unconfirmed_failures(), 1u);
  // Flush learns the same without another batch.
  ASSERT_TRUE(SendOne(store(), Batch{"g", {{"text", 1, Seconds{60}}}, {}}).ok());
  EXPECT_EQ(store().Flush(), 2u);
  EXPECT_EQ(store().Flush(), 2u) << "nothing left to read";
}

TEST_F(MemcachedStoreTest, FireAndForgetWritesSurviveTheStoreEndingAtOnce) {
  // A one-shot `hourglass check` that denies sends its take-back without waiting and exits.
  Open();
  constexpr int kRounds = 300;
  for (int i = 0; i < kRounds; ++i) {
    auto store =
        std::move(*MemcachedStore::Create(MemcachedOptions{.servers = {server().address()}}));
    ASSERT_TRUE(store->Apply(Batch{"g", {{"k", 2, Seconds{60}}}, {"k"}}).ok());
    ASSERT_TRUE(SendOne(*store, Batch{"g", {{"k", -1, Seconds{60}}}, {}}).ok());
  }  // each store ends right after its fire-and-forget batch
  Result<std::vector<uint64_t>> values = store().Apply(Batch{"g", {}, {"k"}});
  ASSERT_TRUE(values.ok()) << values.error().ToString();
  EXPECT_EQ(*values, (std::vector<uint64_t>{kRounds})) << "every take-back arrived";
}

TEST_F(MemcachedStoreTest, FailedServerFailsFastThenIsTriedAgain) {
  MemcachedOptions options;
  options.retry_timeout = std::chrono::seconds{1};
  Open(options);
  ASSERT_TRUE(Add("k", 1).ok());
  server().Kill();
  // The pooled connection's exchange fails; then connecting is refused: the server fails fast.
  Result<std::vector<uint64_t>> first = Add("k", 1);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code(), ErrorCode::kUnavailable) << first.error().ToString();
  EXPECT_NE(first.error().message().find(name()), std::string::npos) << first.error().message();
  Result<std::vector<uint64_t>> refused = Add("k", 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("connect"), std::string::npos)
      << refused.error().message();
  ASSERT_TRUE(server().Start()) << server().error();
  // Back already, but the store does not try it again before retry_timeout.
  Result<std::vector<uint64_t>> fast = Add("k", 1);
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.error().message().find("not retried yet"), std::string::npos)
      << fast.error().message();
  std::this_thread::sleep_for(milliseconds{1100});
  Result<std::vector<uint64_t>> back = Add("k", 1);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, (std::vector<uint64_t>{1})) << "a restarted memcached starts empty";
}

// ApplyMany over two servers sends each its own batches; a killed server fails only its own,
// and the connection of the live one stays in step for the next request.
TEST(MemcachedStoreApplyMany, EachServerAnswersItsBatchesAndAKilledOneFailsOnlyItsOwn) {
  testing::MemcachedServer a, b;
  ASSERT_TRUE(a.running() && b.running()) << a.error() << b.error();
  MemcachedOptions options;
  options.servers = {a.address(), b.address()};
  options.pool_size = 1;
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  std::vector<Batch> batches;
  std::vector<std::string> holders;
  for (int i = 0; i < 40; ++i) {
    const std::string group = "g" + std::to_string(i);
    batches.push_back(Batch{group, {{group + ":k", i + 1, Seconds{60}}}, {group + ":k"}});
    holders.push_back(*(*store)->ServerFor(group));
  }
  ASSERT_NE(std::count(holders.begin(), holders.end(), a.address()), 0);
  ASSERT_NE(std::count(holders.begin(), holders.end(), b.address()), 0);
  std::vector<Result<std::vector<uint64_t>>> results = (*store)->ApplyMany(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().ToString();
    EXPECT_EQ(*results[i], (std::vector<uint64_t>{i + 1}));
  }
  b.Kill();
  results = (*store)->ApplyMany(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    if (holders[i] == a.address()) {
      ASSERT_TRUE(results[i].ok()) << results[i].error().ToString();
      EXPECT_EQ(*results[i], (std::vector<uint64_t>{2 * (i + 1)}));
    } else {
      ASSERT_FALSE(results[i].ok());
      EXPECT_EQ(results[i].error().code(), ErrorCode::kUnavailable);
      EXPECT_NE(results[i].error().message().find(b.address()), std::string::npos)
          << results[i].error().message();
    }
  }
  Result<std::vector<uint64_t>> after = (*store)->Apply(batches[0]);
  if (holders[0] == a.address()) {
    ASSERT_TRUE(after.ok()) << after.error().ToString();
    EXPECT_EQ(*after, (std::vector<uint64_t>{3}));
  }
}

// The fail-fast window and the idle check run on the injected clock's monotonic time: a minute
// of retry_timeout passes in an instant on a manual clock, and not at all while it stands still.
TEST(MemcachedStoreClock, FailFastWindowFollowsTheInjectedMonotonicTime) {
  testing::MemcachedServer server;
  ASSERT_TRUE(server.running()) << server.error();
  ManualClock clock(FromUnix(1'700'000'000));
  MemcachedOptions options;
  options.servers = {server.address()};
  options.retry_timeout = std::chrono::seconds{60};
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options, clock);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  const Batch batch{"g", {{"g:k", 1, Seconds{60}}}, {"g:k"}};
  ASSERT_TRUE((*store)->Apply(batch).ok());
  server.Kill();
  ASSERT_FALSE((*store)->Apply(batch).ok()) << "the pooled connection's exchange";
  ASSERT_FALSE((*store)->Apply(batch).ok()) << "refused: the window starts";
  ASSERT_TRUE(server.Start()) << server.error();
  std::this_thread::sleep_for(milliseconds{50});  // real time passes; the injected clock does not
  Result<std::vector<uint64_t>> fast = (*store)->Apply(batch);
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.error().message().find("not retried yet"), std::string::npos)
      << fast.error().message();
  clock.AdvanceMonotonic(std::chrono::seconds{59});
  EXPECT_FALSE((*store)->Apply(batch).ok()) << "still inside retry_timeout";
  clock.AdvanceMonotonic(std::chrono::seconds{1});
  Result<std::vector<uint64_t>> back = (*store)->Apply(batch);
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, (std::vector<uint64_t>{1})) << "a restarted memcached starts empty";
}

TEST_F(MemcachedStoreTest, ARestartWhileIdleFailsNoRequest) {
  Open();
  ASSERT_TRUE(Add("k", 1).ok());  // leaves a connection in the pool
  server().Kill();
  ASSERT_TRUE(server().Start()) << server().error();
  std::this_thread::sleep_for(milliseconds{600});  // the pooled connection sat idle meanwhile
  Result<std::vector<uint64_t>> after = Add("k", 1);
  ASSERT_TRUE(after.ok()) << "the closed pooled connection was used: " << after.error().ToString();
  EXPECT_EQ(*after, (std::vector<uint64_t>{1}));
}

// A restart under traffic: the pooled connection, used too recently to be checked, fails its
// exchange; the next one connects to the new process at once instead of failing fast, and no
// transition is told, since the server never stopped taking connections.
TEST_F(MemcachedStoreTest, ARestartUnderTrafficFailsOnlyTheExchangeItCut) {
  std::vector<ServerTransition> told;
  std::mutex mu;
  MemcachedOptions options;
  options.idle_check_after = milliseconds{60000};    // unchecked, as a busy connection is
  options.retry_timeout = std::chrono::seconds{60};  // a fail-fast window would outlast the test
  options.on_transition = [&](const ServerTransition& t) {
    std::lock_guard lock(mu);
    told.push_back(t);
  };
  Open(options);
  ASSERT_TRUE(Add("k", 1).ok());  // leaves a connection in the pool
  server().Kill();
  ASSERT_TRUE(server().Start()) << server().error();
  Result<std::vector<uint64_t>> cut = Add("k", 1);
  ASSERT_FALSE(cut.ok()) << "the pooled connection was to the old process";
  EXPECT_EQ(cut.error().code(), ErrorCode::kUnavailable) << cut.error().ToString();
  Result<std::vector<uint64_t>> after = Add("k", 1);
  ASSERT_TRUE(after.ok()) << after.error().ToString();
  EXPECT_EQ(*after, (std::vector<uint64_t>{1})) << "a restarted memcached starts empty";
  std::lock_guard lock(mu);
  EXPECT_TRUE(told.empty()) << told.front().error;
}

TEST_F(MemcachedStoreTest, FullPoolIsAnErrorAfterPoolWait) {
  MemcachedOptions options;
  options.pool_size = 1;
  options.pool_wait = std::chrono::seconds{0};
  options.io_timeout = milliseconds{3000};
  Open(options);
  ASSERT_TRUE(Add("k", 1).ok());
  ASSERT_TRUE(server().Freeze());
  // The pool's only connection waits on the frozen server...
  std::thread holder([&] { (void)Add("k", 1); });
  std::this_thread::sleep_for(milliseconds{500});
  // ...so another caller gets an error at once instead of queueing behind it.
  Result<std::vector<uint64_t>> busy = Add("k", 1);
  server().Thaw();
  holder.join();
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(busy.error().message().find("busy"), std::string::npos) << busy.error().message();
  EXPECT_TRUE(Add("k", 1).ok()) << "the connection is back in the pool";
}

// io_timeout bounds the whole exchange: a server that drips its answer a byte every 50 ms (each
// read quick, the answer 1.3 s long) is a deadline error after about io_timeout, not a wait for
// the whole drip.
TEST(MemcachedStoreDeadline, IoTimeoutBoundsTheWholeExchange) {
  const std::string answer = "VALUE g:k 0 5\r\n12345\r\nEND\r\n";
  testing::DrippingServer drip(answer, milliseconds{50});
  MemcachedOptions options;
  options.servers = {drip.address()};
  options.io_timeout = milliseconds{300};
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  ASSERT_TRUE(store.ok()) << store.error().ToString();
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<uint64_t>> values = (*store)->Apply(Batch{"g", {}, {"g:k"}});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().code(), ErrorCode::kDeadlineExceeded) << values.error().ToString();
  EXPECT_LT(took, milliseconds{50} * static_cast<int>(answer.size()) / 2)
      << "held for most of the drip";
}

// IPv6: a server given as "[::1]:PORT" (the form the docs and errors show), alone and in a ring
// beside an IPv4 one; every group lands on one of them and counts there.
TEST(MemcachedStoreIpv6, ServesAMemcachedListeningOnTheIpv6Loopback) {
  testing::MemcachedServer v6("::1");
  ASSERT_TRUE(v6.running()) << v6.error();
  ASSERT_EQ(v6.address().front(), '[');
  testing::MemcachedServer v4;
  ASSERT_TRUE(v4.running()) << v4.error();
  for (const std::vector<std::string>& servers :
       std::vector<std::vector<std::string>>{{v6.address()}, {v4.address(), v6.address()}}) {
    MemcachedOptions options;
    options.servers = servers;
    Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    std::set<std::string> holders;
    for (int g = 0; g < 40; ++g) {
      const std::string group = "g" + std::to_string(g) + std::to_string(servers.size());
      const std::string key = group + ":k";
      Result<std::vector<uint64_t>> values =
          (*store)->Apply(Batch{group, {{key, 2, Seconds{60}}}, {key}});
      ASSERT_TRUE(values.ok()) << values.error().ToString();
      EXPECT_EQ(*values, (std::vector<uint64_t>{2}));
      holders.insert(*(*store)->ServerFor(group));
    }
    EXPECT_EQ(holders.size(), servers.size()) << "every server holds some groups";
  }
  EXPECT_GT(v6.Stat("curr_items"), 0);
}

TEST(MemcachedStoreCreate, RejectsBadOptionsNamingThem) {
  MemcachedOptions options;
  options.servers = {"localhost"};
  Result<std::unique_ptr<MemcachedStore>> store = MemcachedStore::Create(options);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("host:port"), std::string::npos);
  options.servers = {"127.0.0.1:11211"};
  options.pool_size = 0;
  store = MemcachedStore::Create(options);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message().find("pool_size"), std::string::npos);
}

// Each server keeps its own note, which every client of it reads; a note is checked before it
// is sent, and only a server of the store takes one. A stopped server's note is its error.
TEST(MemcachedStoreNotes, EachServerKeepsItsOwnNoteForEveryClient) {
  testing::MemcachedServer a, b;
  ASSERT_TRUE(a.running()) << a.error();
  ASSERT_TRUE(b.running()) << b.error();
  MemcachedOptions options;
  options.servers = {a.address(), b.address()};
  options.retry_timeout = std::chrono::seconds{0};
  Result<std::unique_ptr<MemcachedStore>> writer = MemcachedStore::Create(options);
  Result<std::unique_ptr<MemcachedStore>> reader = MemcachedStore::Create(options);
  ASSERT_TRUE(writer.ok() && reader.ok());
  const auto note_of = [&](const std::string& server) -> Result<ServerNote> {
    for (Result<ServerNote>& note : (*reader)->Notes()) {
      if (!note.ok() || note->server == server) return note;
    }
    return InvalidArgument("no note of " + server);
  };
  ASSERT_TRUE(note_of(a.address()).ok());
  EXPECT_FALSE(note_of(a.address())->text.has_value()) << "nothing written yet";
  EXPECT_EQ(note_of(a.address())->kind, "memcached");

  ASSERT_TRUE((*writer)->WriteNote(b.address(), "loss 2000000000 restarted").ok());
  EXPECT_EQ(note_of(b.address())->text, "loss 2000000000 restarted");
  EXPECT_FALSE(note_of(a.address())->text.has_value()) << "kept on its own server only";
  EXPECT_EQ(b.Raw("get hourglass::note\r\n"),
            "VALUE hourglass::note 0 25\r\nloss 2000000000 restarted\r\nEND\r\n");

  for (const std::string& bad :
       {std::string("x\r\nflush_all"), std::string(), std::string(201, 'n')}) {
    Status refused = (*writer)->WriteNote(a.address(), bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_FALSE(note_of(a.address())->text.has_value()) << "a refused note changed nothing";
  Status elsewhere = (*writer)->WriteNote("127.0.0.1:1", "loss none");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.error().message().find("has no server 127.0.0.1:1"), std::string::npos)
      << elsewhere.error().message();

  b.Stop();
  std::vector<Result<ServerNote>> notes = (*reader)->Notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(std::count_if(notes.begin(), notes.end(), [](auto& n) { return n.ok(); }), 1);
}

}  // namespace
}  // namespace hourglass

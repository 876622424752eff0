// The packed layout's pure parts: which keys pack where, the records a batch becomes, and how a
// pack's bytes fold back into counter values (and refuse bytes that are not a pack).
#include "hourglass/packed_layout.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace hourglass::packed {
namespace {

const std::string kGroup = "hg:signup:ann";
constexpr int64_t kHour = 397'738;          // 1'431'856'800 / 3600
constexpr int64_t kT = kHour * 3600 + 125;  // 2 min 5 s into the hour

std::string Key(int64_t width, int64_t t) {
  return kGroup + ":" + std::to_string(width) + ":" + std::to_string(t / width);
}

uint32_t GetExpiry(std::string_view header) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(header[static_cast<size_t>(i)]);
  return v;
}

// The value memcached would hold after `plan`'s appends to a fresh pack: header and records.
std::string Stored(const WireBatch& plan, size_t append = 0) {
  return PackHeader(FromUnix(kT), plan.appends[append].create_ttl) + plan.appends[append].records;
}

TEST(PackedLayoutTest, SecondsMinutesAndHoursPackPerHourOtherKeysStayCounters) {
  const std::optional<PackedSlot> second = PackedSlotOf(kGroup, Key(1, kT));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->pack, kGroup + ":p:" + std::to_string(kHour));
  EXPECT_EQ(second->level, PackedLevel::kSecond);
  EXPECT_EQ(second->offset, 125);
  const std::optional<PackedSlot> minute = PackedSlotOf(kGroup, Key(60, kT));
  ASSERT_TRUE(minute.has_value());
  EXPECT_EQ(minute->pack, second->pack);
  EXPECT_EQ(minute->level, PackedLevel::kMinute);
  EXPECT_EQ(minute->offset, 120);
  const std::optional<PackedSlot> hour = PackedSlotOf(kGroup, Key(3600, kT));
  ASSERT_TRUE(hour.has_value());
  EXPECT_EQ(hour->pack, second->pack);
  EXPECT_EQ(hour->level, PackedLevel::kHour);
  EXPECT_EQ(hour->offset, 0);
  for (const std::string& key :
       {Key(86400, kT), kGroup + ":g", kGroup + ":10:5", kGroup + ":1:x", kGroup + ":1:-5",
        kGroup + ":1:", std::string("hg:signup:bob:1:5"), kGroup + "x:1:5", kGroup + ":1:5:6"}) {
    EXPECT_FALSE(PackedSlotOf(kGroup, key).has_value()) << key;
  }
}

TEST(PackedLayoutTest, AHitIsOneTwoByteRecordInItsHoursPack) {
  Batch batch{kGroup,
              {{Key(1, kT), 1, Seconds{86460}},
               {Key(60, kT), 1, Seconds{90000}},
               {Key(3600, kT), 1, Seconds{176400}}},
              {Key(1, kT), Key(60, kT), Key(3600, kT), Key(1, kT + 1), kGroup + ":g"}};
  const WireBatch plan = PlanPacked(batch);
  EXPECT_TRUE(plan.counters.increments.empty());
  ASSERT_EQ(plan.appends.size(), 1u);
  EXPECT_EQ(plan.appends[0].records.size(), 2u);
  // The pack lives as long as its longest-lived bucket: here the hour's TTL.
  EXPECT_EQ(plan.appends[0].create_ttl, Seconds{176400});
  // Two distinct gets: the pack once, the generation counter.
  EXPECT_EQ(plan.counters.reads,
            (std::vector<std::string>{kGroup + ":p:" + std::to_string(kHour), kGroup + ":g"}));
  EXPECT_EQ(plan.get_is_pack, (std::vector<uint8_t>{1, 0}));
  ASSERT_EQ(plan.sources.size(), 5u);
  Result<PackFold> fold = PackFold::Parse("pack", Stored(plan));
  ASSERT_TRUE(fold.ok()) << fold.error().ToString();
  EXPECT_EQ(fold->Value(plan.sources[0].slot), 1u);
  EXPECT_EQ(fold->Value(plan.sources[1].slot), 1u);
  EXPECT_EQ(fold->Value(plan.sources[2].slot), 1u);
  EXPECT_EQ(fold->Value(plan.sources[3].slot), 0u);
}

TEST(PackedLayoutTest, TakeBacksAndLoneLevelsFoldLikeCounters) {
  Batch batch{kGroup,
              {{Key(1, kT), 3, Seconds{600}},
               {Key(60, kT), 3, Seconds{600}},
               {Key(3600, kT), 3, Seconds{600}},  // a hit of 3: one record with a u8 magnitude
               {Key(1, kT), -1, Seconds{600}},
               {Key(60, kT), -1, Seconds{600}},
               {Key(3600, kT), -1, Seconds{600}},    // a take-back: one record
               {Key(60, kT + 60), 2, Seconds{600}},  // a minute alone
               {Key(1, kT + 2), -4, Seconds{600}},   // floored at 0, creates nothing
               {Key(1, kT + 2), 1, Seconds{600}},
               {Key(1, kT + 3), 1, Seconds{600}},
               {Key(60, kT + 300), 1, Seconds{600}},  // not its minute: three records
               {Key(3600, kT), 1, Seconds{600}}},
              {}};
  const WireBatch plan = PlanPacked(batch);
  ASSERT_EQ(plan.appends.size(), 1u);
  Result<PackFold> fold = PackFold::Parse("pack", Stored(plan));
  ASSERT_TRUE(fold.ok()) << fold.error().ToString();
  const auto value = [&](int64_t width, int64_t t) {
    return fold->Value(*PackedSlotOf(kGroup, Key(width, t)));
  };
  EXPECT_EQ(value(1, kT), 2u);
  EXPECT_EQ(value(60, kT), 2u);  // the lone seconds of its minute are not its increments
  EXPECT_EQ(value(3600, kT), 3u);
  EXPECT_EQ(value(60, kT + 60), 2u);
  EXPECT_EQ(value(1, kT + 2), 1u);
  EXPECT_EQ(value(1, kT + 3), 1u);
  EXPECT_EQ(value(60, kT + 300), 1u);
  EXPECT_EQ(fold->records(), 8u);
  EXPECT_EQ(plan.appends[0].records.size(), 3u + 2 + 7 + 7 + 2 + 2 + 2 + 2);
}

TEST(PackedLayoutTest, OnlyIncrementsMayCreateAPack) {
  const WireBatch plan = PlanPacked(Batch{kGroup, {{Key(1, kT), -1, Seconds{600}}}, {}});
  ASSERT_EQ(plan.appends.size(), 1u);
  EXPECT_EQ(plan.appends[0].create_ttl, Seconds{0});
}

TEST(PackedLayoutTest, DeletesZeroTheirSlotsAndAWholeHourDeletesThePack) {
  std::vector<std::string> deletes;
  const std::vector<std::string> some = {Key(1, kT), Key(60, kT), Key(3600, kT), Key(1, kT),
                                         kGroup + ":g"};
  std::vector<PackAppend> appends = PlanPackedDelete(kGroup, some, {}, deletes);
  EXPECT_EQ(deletes, (std::vector<std::string>{kGroup + ":g"}));
  ASSERT_EQ(appends.size(), 1u);
  EXPECT_EQ(appends[0].create_ttl, Seconds{0});
  EXPECT_EQ(appends[0].records.size(), 6u) << "one zero record per distinct slot";
  // After a hit at kT and at kT + 1, the deletes leave kT + 1 alone.
  Batch hits{kGroup, {}, {}};
  for (int64_t t : {kT, kT + 1}) {
    for (int64_t width : {1, 60, 3600}) hits.increments.push_back({Key(width, t), 1, Seconds{600}});
  }
  Result<PackFold> fold = PackFold::Parse("pack", Stored(PlanPacked(hits)) + appends[0].records);
  ASSERT_TRUE(fold.ok());
  EXPECT_EQ(fold->Value(*PackedSlotOf(kGroup, Key(1, kT))), 0u);
  EXPECT_EQ(fold->Value(*PackedSlotOf(kGroup, Key(60, kT))), 0u);
  EXPECT_EQ(fold->Value(*PackedSlotOf(kGroup, Key(3600, kT))), 0u);
  EXPECT_EQ(fold->Value(*PackedSlotOf(kGroup, Key(1, kT + 1))), 1u);

  std::vector<std::string> every = {Key(3600, kT)};
  for (int64_t s = 0; s < 3600; ++s) every.push_back(Key(1, kHour * 3600 + s));
  for (int64_t m = 0; m < 60; ++m) every.push_back(Key(60, kHour * 3600 + m * 60));
  deletes.clear();
  EXPECT_TRUE(PlanPackedDelete(kGroup, every, {}, deletes).empty());
  EXPECT_EQ(deletes, (std::vector<std::string>{kGroup + ":p:" + std::to_string(kHour)}));
}

TEST(PackedLayoutTest, CompactionKeepsEveryValueInFewerBytes) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    Batch batch{kGroup, {}, {}};
    for (int i = 0; i < 400; ++i) {
      const int64_t t = kHour * 3600 + static_cast<int64_t>(rng() % 240);
      const int64_t delta = rng() % 5 == 0 ? -1 : 1;
      switch (rng() % 8) {
        case 0:
          batch.increments.push_back({Key(60, t), delta, Seconds{600}});
          break;
        case 1:
          batch.increments.push_back({Key(3600, t), delta, Seconds{600}});
          break;
        case 2:
          batch.increments.push_back({Key(1, t), delta, Seconds{600}});
          break;
        default:
          for (int64_t width : {1, 60, 3600}) {
            batch.increments.push_back({Key(width, t), delta, Seconds{600}});
          }
      }
    }
    const WireBatch plan = PlanPacked(batch);
    ASSERT_EQ(plan.appends.size(), 1u);
    Result<PackFold> fold = PackFold::Parse("pack", Stored(plan));
    ASSERT_TRUE(fold.ok());
    const std::string compact = fold->Compacted();
    EXPECT_LE(fold->CompactedBytesAtLeast(), compact.size()) << "the bound that skips building it";
    EXPECT_LT(compact.size(), Stored(plan).size());
    Result<PackFold> again = PackFold::Parse("pack", compact);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->expiry(), fold->expiry());
    for (int64_t s = 0; s < 3600; ++s) {
      const int64_t t = kHour * 3600 + s;
      ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(1, t))),
                fold->Value(*PackedSlotOf(kGroup, Key(1, t))));
      ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(60, t))),
                fold->Value(*PackedSlotOf(kGroup, Key(60, t))));
    }
    ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(3600, kT))),
              fold->Value(*PackedSlotOf(kGroup, Key(3600, kT))));
  }
}

// Raw records of every kind, in any order of seconds (late take-backs, lone levels, zeros,
// magnitudes), folded by the layout and by the rule it documents on a dense array of counters:
// every slot, the compaction bound and the compacted pack agree.
// A busy second compacts to 2 bytes when it holds 1, 3 up to 255, 4 up to 65535, else 7 a u32
// part; hits of such costs take the same records; values read back exactly.
TEST(PackedLayoutTest, ABusySecondCompactsToAFewBytesByItsValue) {
  for (const auto& [value, bytes] : std::vector<std::pair<uint64_t, size_t>>{
           {1, 2}, {2, 3}, {255, 3}, {256, 4}, {65535, 4}, {65536, 7}, {5'000'000'000, 14}}) {
    Batch batch{kGroup, {}, {}};
    for (int64_t s = 0; s < 3600; s += 36) {
      for (int64_t width : {1, 60, 3600}) {
        batch.increments.push_back(
            {Key(width, kHour * 3600 + s), static_cast<int64_t>(value), Seconds{600}});
      }
    }
    const WireBatch plan = PlanPacked(batch);
    ASSERT_EQ(plan.appends.size(), 1u);
    EXPECT_EQ(plan.appends[0].records.size(), 100 * bytes) << value;
    Result<PackFold> fold = PackFold::Parse("pack", Stored(plan));
    ASSERT_TRUE(fold.ok()) << fold.error().ToString();
    const std::string compact = fold->Compacted();
    EXPECT_EQ(compact.size(), kPackHeaderBytes + 100 * bytes) << value;
    Result<PackFold> again = PackFold::Parse("pack", compact);
    ASSERT_TRUE(again.ok());
    for (int64_t s = 0; s < 3600; s += 18) {
      const int64_t t = kHour * 3600 + s;
      ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(1, t))), s % 36 == 0 ? value : 0u);
      uint64_t in_minute = 0;  // its busy seconds
      for (int64_t m = s / 60 * 60; m < s / 60 * 60 + 60; ++m) in_minute += m % 36 == 0;
      ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(60, t))), in_minute * value);
    }
    EXPECT_EQ(again->Value(*PackedSlotOf(kGroup, Key(3600, kT))), 100 * value);
  }
}

TEST(PackedLayoutTest, AnyRecordsFoldAsDenseCountersWould) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint64_t> seconds(3600), minutes(60);
    uint64_t hour = 0;
    std::string pack = PackHeader(FromUnix(kT), Seconds{7200});
    const int records = static_cast<int>(rng() % 300);
    // Half the trials crowd a few seconds (collisions, floors); the others spread over the hour.
    const uint64_t spread = trial % 2 == 0 ? 7 : 3600;
    for (int r = 0; r < records; ++r) {
      const uint16_t offset = static_cast<uint16_t>(rng() % spread * (3600 / spread));
      if (rng() % 8 == 0) {  // a run (kind 13) of 4-, 8- or 16-bit values: a kAddAll each
        const int width_code = static_cast<int>(rng() % 3);
        const size_t count = 1 + rng() % std::min<uint64_t>(40, 3600 - offset);
        const uint16_t head = static_cast<uint16_t>(offset | 13 << 12);
        const uint16_t spec = static_cast<uint16_t>(count | width_code << 12);
        for (uint16_t u : {head, spec}) {
          pack.push_back(static_cast<char>(u & 0xff));
          pack.push_back(static_cast<char>(u >> 8));
        }
        std::string values((count * (4 << width_code) + 7) / 8, '\0');
        for (size_t i = 0; i < count; ++i) {
          const uint64_t v = rng() % 3 == 0 ? 0 : rng() % ((uint64_t{1} << (4 << width_code)) - 1);
          if (width_code == 0) values[i / 2] = static_cast<char>(values[i / 2] | v << (i % 2 * 4));
          if (width_code == 1) values[i] = static_cast<char>(v);
          if (width_code == 2) values[2 * i] = static_cast<char>(v & 0xff);
          if (width_code == 2) values[2 * i + 1] = static_cast<char>(v >> 8);
          if (v == 0) continue;
          seconds[offset + i] += v;
          minutes[(offset + i) / 60] += v;
          hour += v;
        }
        pack += values;
        continue;
      }
      const uint8_t kind = static_cast<uint8_t>(rng() % 11);  // kAddAll..kZeroHour
      const bool extended = kind < 8 && rng() % 4 == 0;
      // A hit by a u8 (kind 11) or u16 (kind 12) magnitude.
      const int width = !extended && kind == 0 ? static_cast<int>(rng() % 3) : 0;
      uint64_t d = extended ? rng() % 5 : 1;
      if (width == 1) d = 2 + rng() % 254;
      if (width == 2) d = 256 + rng() % 65280;
      const int head_kind = extended ? 15 : (width > 0 ? 10 + width : kind);
      const uint16_t head = static_cast<uint16_t>(offset | head_kind << 12);
      pack.push_back(static_cast<char>(head & 0xff));
      pack.push_back(static_cast<char>(head >> 8));
      if (extended) {
        pack.push_back(static_cast<char>(kind));
        for (int b = 0; b < 4; ++b) pack.push_back(static_cast<char>(d >> (8 * b) & 0xff));
      }
      for (int b = 0; b < width; ++b) pack.push_back(static_cast<char>(d >> (8 * b) & 0xff));
      const auto add = [d](uint64_t& v) { v += d; };
      const auto sub = [d](uint64_t& v) { v = v > d ? v - d : 0; };
      uint64_t& second = seconds[offset];
      uint64_t& minute = minutes[offset / 60];
      switch (kind) {
        case 0:
          add(second), add(minute), add(hour);
          break;
        case 1:
          sub(second), sub(minute), sub(hour);
          break;
        case 2:
          add(second);
          break;
        case 3:
          sub(second);
          break;
        case 4:
          add(minute);
          break;
        case 5:
          sub(minute);
          break;
        case 6:
          add(hour);
          break;
        case 7:
          sub(hour);
          break;
        case 8:
          second = 0;
          break;
        case 9:
          minute = 0;
          break;
        default:
          hour = 0;
      }
    }
    Result<PackFold> fold = PackFold::Parse("pack", pack);
    ASSERT_TRUE(fold.ok()) << fold.error().ToString();
    Result<PackFold> compacted = PackFold::Parse("pack", fold->Compacted());
    ASSERT_TRUE(compacted.ok());
    size_t half_bytes = 0;  // at least half a byte per busy second, a byte past 15, 2 past 255
    for (int64_t s = 0; s < 3600; ++s) {
      const uint64_t v = seconds[s];
      half_bytes += v == 0 ? 0 : (v <= 15 ? 1 : (v <= 255 ? 2 : 4));
      const PackedSlot second = *PackedSlotOf(kGroup, Key(1, kHour * 3600 + s));
      const PackedSlot minute = *PackedSlotOf(kGroup, Key(60, kHour * 3600 + s));
      ASSERT_EQ(fold->Value(second), seconds[s]) << "trial " << trial << " second " << s;
      ASSERT_EQ(fold->Value(minute), minutes[s / 60]) << "trial " << trial << " second " << s;
      ASSERT_EQ(compacted->Value(second), seconds[s]);
      ASSERT_EQ(compacted->Value(minute), minutes[s / 60]);
    }
    const PackedSlot whole = *PackedSlotOf(kGroup, Key(3600, kT));
    EXPECT_EQ(fold->Value(whole), hour);
    EXPECT_EQ(compacted->Value(whole), hour);
    EXPECT_EQ(fold->records(), static_cast<size_t>(records));
    EXPECT_EQ(fold->CompactedBytesAtLeast(), 4 + (half_bytes + 1) / 2);
    EXPECT_LE(fold->CompactedBytesAtLeast(), fold->Compacted().size());
    // Folded without its seconds: the same minutes and hour, and the same compaction decided.
    Result<PackFold> shallow = PackFold::Parse("pack", pack, PackFold::Depth::kMinutesAndHour);
    ASSERT_TRUE(shallow.ok()) << shallow.error().ToString();
    EXPECT_EQ(shallow->depth(), PackFold::Depth::kMinutesAndHour);
    for (int64_t m = 0; m < 60; ++m) {
      const PackedSlot minute = *PackedSlotOf(kGroup, Key(60, kHour * 3600 + m * 60));
      ASSERT_EQ(shallow->Value(minute), minutes[m]) << "trial " << trial << " minute " << m;
    }
    EXPECT_EQ(shallow->Value(whole), hour);
    EXPECT_EQ(shallow->records(), fold->records());
    EXPECT_EQ(shallow->run_bytes(), fold->run_bytes());
    EXPECT_EQ(shallow->expiry(), fold->expiry());
    for (bool settled : {false, true}) {
      EXPECT_EQ(CompactionOf(pack, *shallow, settled), CompactionOf(pack, *fold, settled))
          << "trial " << trial << (settled ? " settled" : " open");
    }
  }
}

// A run as long as a pack allows, of each width, at any offset, folded without its seconds (its
// values summed eight bytes at a time, a minute at once): every minute and the hour are the sums of
// its values, as a fold with its seconds finds them.
TEST(PackedLayoutTest, LongRunsFoldToTheirMinutesAndHourAtEitherDepth) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 300; ++trial) {
    const int width_code = trial % 3;
    const uint16_t offset = static_cast<uint16_t>(rng() % 3600);
    const size_t count = 1 + rng() % std::min<uint64_t>(4095, 3600 - offset);
    const uint64_t max = (uint64_t{1} << (4 << width_code)) - 1;
    std::string pack = PackHeader(FromUnix(kT), Seconds{7200});
    for (uint16_t u : {static_cast<uint16_t>(offset | 13 << 12),
                       static_cast<uint16_t>(count | width_code << 12)}) {
      pack.push_back(static_cast<char>(u & 0xff));
      pack.push_back(static_cast<char>(u >> 8));
    }
    std::string values((count * (4 << width_code) + 7) / 8, '\0');
    std::vector<uint64_t> minutes(60);
    uint64_t hour = 0;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t v = rng() % 4 == 0 ? max : rng() % (max + 1);  // the widest values often
      if (width_code == 0) values[i / 2] = static_cast<char>(values[i / 2] | v << (i % 2 * 4));
      if (width_code == 1) values[i] = static_cast<char>(v);
      if (width_code == 2) values[2 * i] = static_cast<char>(v & 0xff);
      if (width_code == 2) values[2 * i + 1] = static_cast<char>(v >> 8);
      minutes[(offset + i) / 60] += v;
      hour += v;
    }
    pack += values;
    Result<PackFold> deep = PackFold::Parse("pack", pack);
    Result<PackFold> shallow = PackFold::Parse("pack", pack, PackFold::Depth::kMinutesAndHour);
    ASSERT_TRUE(deep.ok() && shallow.ok()) << "trial " << trial;
    for (int64_t m = 0; m < 60; ++m) {
      const PackedSlot minute = *PackedSlotOf(kGroup, Key(60, kHour * 3600 + m * 60));
      ASSERT_EQ(shallow->Value(minute), minutes[m]) << "trial " << trial << " minute " << m;
      ASSERT_EQ(deep->Value(minute), minutes[m]) << "trial " << trial << " minute " << m;
    }
    const PackedSlot whole = *PackedSlotOf(kGroup, Key(3600, kT));
    EXPECT_EQ(shallow->Value(whole), hour) << "trial " << trial;
    EXPECT_EQ(deep->Value(whole), hour) << "trial " << trial;
  }
}

// A feature hit every second of the hour compacts to runs: half a byte a second while each holds
// at most 15, a byte up to 255; a second too busy for its run's width adds the rest in a record of
// its own. Every value reads back exactly.
TEST(PackedLayoutTest, BusyStretchesCompactToRunsOfAFewBitsASecond) {
  struct Case {
    std::function<uint64_t(int64_t)> hits;  // per second of the hour
    size_t most_bytes;
  };
  const std::vector<Case> cases = {
      {[](int64_t s) { return 1 + s % 15; }, 4 + 4 + 1800},
      {[](int64_t s) { return 1 + s % 200; }, 4 + 4 + 3600},
      // Mostly small, a few seconds far busier: 4-bit runs, and a 7-byte record each for the rest
      // of those.
      {[](int64_t s) { return s % 500 == 0 ? 70000 + s : 1 + s % 7; }, 4 + 4 + 1800 + 8 * 7},
      // Every other second: the zeros between busy seconds cost less than records.
      {[](int64_t s) { return s % 2 == 0 ? 3 : 0; }, 4 + 4 + 1800},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    Batch batch{kGroup, {}, {}};
    for (int64_t s = 0; s < 3600; ++s) {
      const uint64_t hits = cases[c].hits(s);
      if (hits == 0) continue;
      for (int64_t width : {1, 60, 3600}) {
        batch.increments.push_back(
            {Key(width, kHour * 3600 + s), static_cast<int64_t>(hits), Seconds{600}});
      }
    }
    const WireBatch plan = PlanPacked(batch);
    Result<PackFold> fold = PackFold::Parse("pack", Stored(plan));
    ASSERT_TRUE(fold.ok()) << fold.error().ToString();
    const std::string compact = fold->Compacted();
    EXPECT_LE(compact.size(), cases[c].most_bytes) << "case " << c;
    EXPECT_LE(fold->CompactedBytesAtLeast(), compact.size()) << "case " << c;
    Result<PackFold> again = PackFold::Parse("pack", compact);
    ASSERT_TRUE(again.ok()) << again.error().ToString();
    EXPECT_EQ(again->expiry(), fold->expiry());
    uint64_t hour = 0, minute = 0;
    for (int64_t s = 0; s < 3600; ++s) {
      const int64_t t = kHour * 3600 + s;
      hour += cases[c].hits(s);
      minute = s % 60 == 0 ? cases[c].hits(s) : minute + cases[c].hits(s);
      ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(1, t))), cases[c].hits(s)) << s;
      if (s % 60 == 59) {
        ASSERT_EQ(again->Value(*PackedSlotOf(kGroup, Key(60, t))), minute) << s;
      }
    }
    EXPECT_EQ(again->Value(*PackedSlotOf(kGroup, Key(3600, kT))), hour);
    // Compacted twice, the same bytes: a compacted pack is not rewritten for nothing.
    EXPECT_EQ(again->Compacted(), compact);
  }
}

// A busy stretch of an hour, compacted: 3,000 seconds of 1 to 5 hits.
std::string CompactedBusyPack() {
  Batch batch{kGroup, {}, {}};
  for (int64_t s = 0; s < 3000; ++s) {
    for (int64_t width : {1, 60, 3600}) {
      batch.increments.push_back({Key(width, kHour * 3600 + s), 1 + s % 5, Seconds{600}});
    }
  }
  return PackFold::Parse("pack", Stored(PlanPacked(batch)))->Compacted();
}

// Appends a hit on second `s` of the hour to `pack` (a 2-byte record).
void AppendHit(std::string& pack, int64_t s) {
  Batch one{kGroup, {}, {}};
  for (int64_t width : {1, 60, 3600}) {
    one.increments.push_back({Key(width, kHour * 3600 + s), 1, Seconds{600}});
  }
  pack += PlanPacked(one).appends[0].records;
}

// A compacted open pack is compacted again once what was appended since brings it to two thirds
// of the pack, not at every read before that, and not later.
TEST(PackedLayoutTest, ACompactedOpenPackIsCompactedAgainOnceItCanShrinkByAThird) {
  const std::string compact = CompactedBusyPack();
  std::string pack = compact;
  int appended = 0;
  while (true) {
    AppendHit(pack, 3000 + appended % 600);  // hits on the pack's latest seconds, as they come
    ++appended;
    Result<PackFold> fold = PackFold::Parse("pack", pack);
    ASSERT_TRUE(fold.ok());
    std::optional<std::string> again = CompactionOf(pack, *fold);
    if (!again) {
      // Skipped only where it would not pay: none is missed.
      ASSERT_GT(fold->Compacted().size() * 3, pack.size() * 2) << appended << " hits appended";
      continue;
    }
    EXPECT_LE(again->size() * 3, pack.size() * 2);
    // Not before the appends were a good part of the compacted pack's length, and before they
    // were as long as it (where halving would compact).
    EXPECT_GE(appended * 2, static_cast<int>(compact.size()) * 4 / 10);
    EXPECT_LE(appended * 2, static_cast<int>(compact.size()) * 9 / 10);
    break;
  }
}

// A settled pack (its hour has passed for the reader) is compacted when that saves an eighth,
// where an open one would wait for a third; fewer records than kCompactAfterRecords never are.
TEST(PackedLayoutTest, ASettledPackIsCompactedOnceItCanShrinkByAnEighth) {
  const std::string compact = CompactedBusyPack();
  std::string pack = compact;
  int appended = 0;
  while (true) {
    AppendHit(pack, 3000 + appended % 600);
    ++appended;
    Result<PackFold> fold = PackFold::Parse("pack", pack);
    ASSERT_TRUE(fold.ok());
    std::optional<std::string> settled = CompactionOf(pack, *fold, /*settled=*/true);
    if (!settled) {
      ASSERT_GT(fold->Compacted().size() * 8, pack.size() * 7) << appended << " hits appended";
      continue;
    }
    EXPECT_LE(settled->size() * 8, pack.size() * 7);
    EXPECT_FALSE(CompactionOf(pack, *fold)) << "open, it waits";
    break;
  }
  std::string sparse = PackHeader(FromUnix(kT), Seconds{600});
  for (size_t i = 0; i + 1 < kCompactAfterRecords; ++i) AppendHit(sparse, 7);
  Result<PackFold> fold = PackFold::Parse("pack", sparse);
  ASSERT_TRUE(fold.ok());
  EXPECT_FALSE(CompactionOf(sparse, *fold, /*settled=*/true)) << "31 records stay";
}

// Settled for a batch that appends to a later hour of the same group's pack: not for its own
// hour, an earlier one, another group's, or a batch that appends nothing.
TEST(PackedLayoutTest, APackIsSettledForABatchThatWritesALaterHourOfItsGroup) {
  const auto append = [](std::string key) { return PackAppend{std::move(key), Seconds{60}, ""}; };
  const std::vector<PackAppend> later = {append("hg:e:f:p:11")};
  EXPECT_TRUE(SettledBy("hg:e:f:p:10", later));
  EXPECT_FALSE(SettledBy("hg:e:f:p:11", later));
  EXPECT_FALSE(SettledBy("hg:e:f:p:12", later));
  EXPECT_FALSE(SettledBy("hg:e:g:p:10", later));
  EXPECT_FALSE(SettledBy("hg:e:f:p:10", {}));
  EXPECT_FALSE(SettledBy("hg:e:f:p:x", later));
  EXPECT_TRUE(SettledBy("hg:e:f:p:10", std::vector{append("hg:e:g:p:11"), append("hg:e:f:p:12")}));
}

// Settled too for a batch that reads a later hour of the group (a batch reads no bucket after its
// now): a read-only check of a month settles every hour but the last. Not by counters, by its own
// hour or an earlier one, or by another group's later hour.
TEST(PackedLayoutTest, APackIsSettledForABatchThatReadsALaterHourOfItsGroup) {
  const std::vector<std::string> reads = {"hg:e:f:p:9", "hg:e:f:p:10", "hg:e:f:3600:36003"};
  EXPECT_TRUE(SettledBy("hg:e:f:p:9", {}, reads));
  EXPECT_FALSE(SettledBy("hg:e:f:p:10", {}, reads));
  EXPECT_FALSE(SettledBy("hg:e:f:p:11", {}, reads));
  EXPECT_FALSE(SettledBy("hg:e:g:p:9", {}, reads));
  EXPECT_FALSE(SettledBy("hg:e:f:p:9", {}, std::vector<std::string>{"hg:e:g:p:10"}));
}

// A read folds a pack with its seconds only when it reads one of them; the fold it hands on (to
// compact the pack) says which it is, and the values are the same either way.
TEST(PackedLayoutTest, AReadFoldsThePacksWhoseSecondsItReadsWithThem) {
  Batch hits{kGroup, {}, {}};
  for (int64_t s : {0, 5, 3599}) {
    for (int64_t width : {1, 60, 3600}) {
      hits.increments.push_back({Key(width, kHour * 3600 + s), 1, Seconds{600}});
    }
  }
  const std::string pack = Stored(PlanPacked(hits));
  struct Case {
    std::string slot;  // read with the hour
    uint64_t value;
    PackFold::Depth depth;
  };
  for (const Case& c : {Case{Key(60, kHour * 3600), 2, PackFold::Depth::kMinutesAndHour},
                        Case{Key(1, kHour * 3600 + 5), 1, PackFold::Depth::kSeconds}}) {
    const WireBatch plan = PlanPacked(Batch{kGroup, {}, {Key(3600, kHour * 3600), c.slot}});
    ASSERT_EQ(plan.counters.reads.size(), 1u) << "one pack";
    const std::vector<uint64_t> counters(1, 0);
    const std::vector<std::optional<std::string>> packs = {pack};
    std::vector<PackFold::Depth> depths;
    Result<std::vector<uint64_t>> values = ResolveReads(
        "server", plan, counters, packs,
        [&](size_t, const std::string&, const PackFold& fold) { depths.push_back(fold.depth()); });
    ASSERT_TRUE(values.ok()) << values.error().ToString();
    EXPECT_EQ(*values, (std::vector<uint64_t>{3, c.value})) << c.slot;
    EXPECT_EQ(depths, std::vector{c.depth}) << c.slot;
  }
}

TEST(PackedLayoutTest, BytesThatAreNotAPackAreRefusedByName) {
  const std::string header = PackHeader(FromUnix(kT), Seconds{60});
  const auto record = [](uint16_t head) {
    return std::string{static_cast<char>(head & 0xff), static_cast<char>(head >> 8)};
  };
  for (const std::string& bad :
       {std::string("abc"), header + "x", header + record(3600), header + record(0xf000),
        header + record(0xb000), header + record(0xc000) + "x", header + record(0xd000),
        // Runs: no count, a fourth width, past the hour, values cut short.
        header + record(0xd000) + record(0x0000), header + record(0xd000) + record(0x3001) + "x",
        header + record(0xd000 | 3599) + record(0x1002) + "xy",
        header + record(0xd000) + record(0x1003) + "xy",
        header + record(0xf000) + std::string(1, '\x08') + "abcd"}) {
    Result<PackFold> fold = PackFold::Parse("hg:e:f:p:1", bad);
    ASSERT_FALSE(fold.ok()) << bad.size();
    EXPECT_EQ(fold.error().code(), ErrorCode::kInternal);
    EXPECT_NE(fold.error().message().find("\"hg:e:f:p:1\""), std::string::npos);
  }
  EXPECT_TRUE(PackFold::Parse("k", header).ok());
}

// A pack that names its base folds the base's records, then its own: the same values as the
// records all in one pack. Unread with its base, it is refused, never read as less.
TEST(PackedLayoutTest, APackWithABaseFoldsTheBaseThenItsOwnRecords) {
  const auto hits = [](int64_t from, int64_t count, int64_t delta) {
    Batch batch{kGroup, {}, {}};
    for (int64_t t = from; t < from + count; ++t) {
      batch.increments.push_back({Key(1, t), delta, Seconds{86460}});
      batch.increments.push_back({Key(60, t), delta, Seconds{90000}});
      batch.increments.push_back({Key(3600, t), delta, Seconds{176400}});
    }
    return PlanPacked(batch).appends[0].records;
  };
  const std::string header = PackHeader(FromUnix(kT), Seconds{176400});
  const std::string before = hits(kHour * 3600, 600, 1);
  const std::string since = hits(kHour * 3600 + 300, 400, -1) + hits(kHour * 3600 + 3000, 5, 1);
  const std::string base = PackFold::Parse("p", header + before)->Compacted();
  const uint64_t token = 0xfedcba987654321;  // its low 48 bits name the base
  const std::string pack = PackWithBase(GetExpiry(header), token) + since;
  const std::string key = kGroup + ":p:" + std::to_string(kHour);

  const std::optional<BaseRef> ref = BaseRefOf(key, pack);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->key, key + ":bcba987654321");
  EXPECT_EQ(ref->key, BaseKey(key, token));
  EXPECT_EQ(ref->tail_at, kPackHeaderBytes + kBaseRefBytes);
  EXPECT_FALSE(BaseRefOf(key, header + before).has_value());
  EXPECT_FALSE(BaseRefOf(key, base).has_value()) << "a base names no base";

  Result<PackFold> whole = PackFold::Parse(key, WithBase(base, pack, ref->tail_at));
  Result<PackFold> all_in_one = PackFold::Parse(key, header + before + since);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  for (int64_t t = kHour * 3600; t < kHour * 3600 + 3600; t += 7) {
    const PackedSlot second = *PackedSlotOf(kGroup, Key(1, t));
    const PackedSlot minute = *PackedSlotOf(kGroup, Key(60, t));
    EXPECT_EQ(whole->Value(second), all_in_one->Value(second)) << t;
    EXPECT_EQ(whole->Value(minute), all_in_one->Value(minute)) << t;
  }
  const PackedSlot hour = *PackedSlotOf(kGroup, Key(3600, kT));
  EXPECT_EQ(whole->Value(hour), 600u - 400u + 5u) << "a counter of its own, floored at 0 only";

  Result<PackFold> alone = PackFold::Parse(key, pack);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message().find("names a base"), std::string::npos)
      << alone.error().message();
}

}  // namespace
}  // namespace hourglass::packed

#include "scripts.h"

#include <openssl/sha.h>

namespace hourglass::redis {
namespace {

constexpr std::string_view kApplySource = R"lua(-- hourglass apply v1
-- Effects of a pack record's kind on its second (S), its minute (M) and its hour (H): 1 add, -1
-- take (floored at 0), 0 zero; nil leaves it.
local S = {[0] = 1, [1] = -1, [2] = 1, [3] = -1, [8] = 0}
local M = {[0] = 1, [1] = -1, [4] = 1, [5] = -1, [9] = 0}
local H = {[0] = 1, [1] = -1, [6] = 1, [7] = -1, [10] = 0}
local byte = string.byte
-- The values of the slots `want` (a set of slot indices) in pack `p`. Only the levels wanted are
-- folded, and no library function but `byte` is called per record: this loop is what a check on
-- a busy feature spends on the server.
local function fold(p, want)
  local v = {}
  local seconds, minutes = false, false
  for id in pairs(want) do
    v[id] = 0
    if id < 3600 then seconds = true elseif id < 3660 then minutes = true end
  end
  local hour = v[3660]
  local i, n = 5, #p
  while i + 1 <= n do
    local lo, hi = byte(p, i, i + 1)
    i = i + 2
    local high = hi % 16
    local off, kind, d = lo + high * 256, (hi - high) / 16, 1
    if kind == 15 then
      if i + 4 > n then break end
      local k, b0, b1, b2, b3 = byte(p, i, i + 4)
      kind, d = k, b0 + b1 * 256 + b2 * 65536 + b3 * 16777216
      i = i + 5
    end
    if seconds then
      local e, x = S[kind], v[off]
      if e ~= nil and x ~= nil then
        if e == 0 then x = 0 elseif e > 0 then x = x + d else x = x - d; if x < 0 then x = 0 end end
        v[off] = x
      end
    end
    if minutes then
      local e = M[kind]
      if e ~= nil then
        local m = 3600 + (off - off % 60) / 60
        local x = v[m]
        if x ~= nil then
          if e == 0 then x = 0 elseif e > 0 then x = x + d else x = x - d; if x < 0 then x = 0 end end
          v[m] = x
        end
      end
    end
    if hour ~= nil then
      local e = H[kind]
      if e ~= nil then
        if e == 0 then hour = 0 elseif e > 0 then hour = hour + d
        else hour = hour - d; if hour < 0 then hour = 0 end end
      end
    end
  end
  if hour ~= nil then v[3660] = hour end
  return v
end
-- A write's refusal: a value that is not ours is named; anything else (out of memory) passes on.
local function refused(k, err)
  err = tostring(err)
  if string.find(err, 'not an integer', 1, true) or string.find(err, 'WRONGTYPE', 1, true) then
    return redis.error_reply('NOTCOUNTER ' .. k)
  end
  return redis.error_reply(err)
end
local a = 1
local applied = 1
local guards = tonumber(ARGV[a]); a = a + 1
-- Every guard's terms, parsed once: their keys (index into KEYS), slots (-1: a counter), signs.
-- A guard's terms come as one string of 5 bytes each: key index (2 bytes), slot (2 bytes,
-- 65535 for a counter), sign (0: +1, 1: -1), all big-endian.
local gmax, gbase, gfirst, gcount = {}, {}, {}, {}
local tk, ts, tsign = {}, {}, {}
local needed, index, wanted = {}, {}, {}
for g = 1, guards do
  gmax[g], gbase[g], gfirst[g] = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), #tk + 1
  local packed = ARGV[a + 2]
  a = a + 3
  local b = {byte(packed, 1, #packed)}
  gcount[g] = #b / 5
  for j = 1, #b, 5 do
    local ki, slot = b[j] * 256 + b[j + 1], b[j + 2] * 256 + b[j + 3]
    if slot == 65535 then slot = -1 end
    local n = #tk + 1
    tk[n], ts[n], tsign[n] = ki, slot, b[j + 4] == 0 and 1 or -1
    if index[ki] == nil then
      needed[#needed + 1] = ki
      index[ki] = #needed
    end
    if slot >= 0 then
      local w = wanted[ki]
      if w == nil then w = {}; wanted[ki] = w end
      w[slot] = true
    end
  end
end
local ops_at = a
local ops = tonumber(ARGV[a]); a = a + 1
-- Skip the ops to find the reads.
local o = a
for _ = 1, ops do
  local op = ARGV[o]
  if op == 'c' then o = o + 4 elseif op == 's' then o = o + 3 elseif op == 'p' then o = o + 5
  else o = o + 2 end
end
local reads_at = o
-- Keys by index, read in one MGET (a key holding another type reads nil).
local function mget(indices)
  local keys = {}
  for i, ki in ipairs(indices) do keys[i] = KEYS[ki] end
  if #keys == 0 then return {} end
  return redis.call('MGET', unpack(keys))
end
if guards > 0 then
  local values = mget(needed)
  local folded = {}
  for ki, slots in pairs(wanted) do
    local p = values[index[ki]]
    folded[ki] = p and fold(p, slots) or {}
  end
  for g = 1, guards do
    local sum = gbase[g]
    for n = gfirst[g], gfirst[g] + gcount[g] - 1 do
      local ki, slot = tk[n], ts[n]
      local value
      if slot < 0 then
        value = tonumber(values[index[ki]] or '0') or 0
      else
        value = folded[ki][slot] or 0
      end
      sum = sum + tsign[n] * value
    end
    if sum > gmax[g] then applied = 0 end
  end
end
a = ops_at + 1
for _ = 1, ops do
  local op, k = ARGV[a], KEYS[tonumber(ARGV[a + 1])]
  if op == 'c' then
    if applied == 1 then
      local ok, err = pcall(redis.call, 'INCRBY', k, ARGV[a + 2])
      if not ok then
        if string.find(tostring(err), 'overflow', 1, true) then
          redis.call('SET', k, '9223372036854775807', 'KEEPTTL')
        else
          return refused(k, err)
        end
      end
      if redis.call('TTL', k) == -1 then redis.call('EXPIRE', k, ARGV[a + 3]) end
    end
    a = a + 4
  elseif op == 's' then
    if applied == 1 and redis.call('EXISTS', k) == 1 then
      local ok, v = pcall(redis.call, 'DECRBY', k, ARGV[a + 2])
      if not ok then return refused(k, v) end
      if v < 0 then redis.call('SET', k, '0', 'KEEPTTL') end
    end
    a = a + 3
  elseif op == 'p' then
    if applied == 1 then
      local ttl = tonumber(ARGV[a + 2])
      if ttl > 0 then
        local ok, err = pcall(redis.call, 'SET', k, ARGV[a + 3], 'EX', ttl, 'NX')
        if not ok then return refused(k, err) end
      end
      if ttl > 0 or redis.call('EXISTS', k) == 1 then
        local ok, err = pcall(redis.call, 'APPEND', k, ARGV[a + 4])
        if not ok then return refused(k, err) end
      end
    end
    a = a + 5
  elseif op == 'x' then
    redis.call('DEL', k)
    a = a + 2
  else
    return redis.error_reply('ERR hourglass apply: unknown op ' .. tostring(op))
  end
end
local reads = {}
for i = reads_at, #ARGV do reads[#reads + 1] = tonumber(ARGV[i]) end
local out = mget(reads)
table.insert(out, 1, applied)
return out
)lua";

constexpr std::string_view kCompactSource = R"lua(-- hourglass compact v1
local ok, v = pcall(redis.call, 'GET', KEYS[1])
local n = tonumber(ARGV[1])
if not ok or not v or #v < n then return 0 end
if redis.sha1hex(string.sub(v, 1, n)) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[3] .. string.sub(v, n + 1), 'KEEPTTL')
return 1
)lua";

}  // namespace

std::string Sha1Hex(std::string_view bytes) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : digest) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

const Script& ApplyScript() {
  static const Script script{kApplySource, Sha1Hex(kApplySource)};
  return script;
}

const Script& CompactScript() {
  static const Script script{kCompactSource, Sha1Hex(kCompactSource)};
  return script;
}

}  // namespace hourglass::redis

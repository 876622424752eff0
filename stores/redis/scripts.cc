#include "scripts.h"

#include <openssl/sha.h>

namespace hourglass::redis {
namespace {

constexpr std::string_view kApplySource = R"lua(-- hourglass apply v1
local function counter(k)
  local ok, v = pcall(redis.call, 'GET', k)
  if not ok or not v then return 0 end
  return tonumber(v) or 0
end
-- Effects of a pack record's kind on its second, its minute and its hour: 1 add, -1 take (floored
-- at 0), 0 zero; nil leaves it.
local S = {[0] = 1, [1] = -1, [2] = 1, [3] = -1, [8] = 0}
local M = {[0] = 1, [1] = -1, [4] = 1, [5] = -1, [9] = 0}
local H = {[0] = 1, [1] = -1, [6] = 1, [7] = -1, [10] = 0}
local function step(v, id, e, d)
  local x = v[id]
  if x == nil or e == nil then return end
  if e == 0 then x = 0 elseif e > 0 then x = x + d else x = x - d; if x < 0 then x = 0 end end
  v[id] = x
end
-- The values of the slots `want` (a set of slot indices) in pack `p`.
local function fold(p, want)
  local v = {}
  for id in pairs(want) do v[id] = 0 end
  local i, n = 5, #p
  while i + 1 <= n do
    local lo, hi = string.byte(p, i, i + 1)
    local head = lo + hi * 256
    i = i + 2
    local off, kind, d = head % 4096, math.floor(head / 4096), 1
    if kind == 15 then
      if i + 4 > n then break end
      local b0, b1, b2, b3 = string.byte(p, i + 1, i + 4)
      kind, d = string.byte(p, i), b0 + b1 * 256 + b2 * 65536 + b3 * 16777216
      i = i + 5
    end
    step(v, off, S[kind], d)
    step(v, 3600 + math.floor(off / 60), M[kind], d)
    step(v, 3660, H[kind], d)
  end
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
if guards > 0 then
  local want, terms = {}, {}
  for g = 1, guards do
    local max, base, t = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    a = a + 3
    local guard = {max = max, base = base, terms = {}}
    for j = 1, t do
      local ki, slot, sign = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
      a = a + 3
      guard.terms[j] = {ki, slot, sign}
      if slot >= 0 then
        want[ki] = want[ki] or {}
        want[ki][slot] = true
      end
    end
    terms[g] = guard
  end
  local folded = {}
  for ki, slots in pairs(want) do
    local ok, p = pcall(redis.call, 'GET', KEYS[ki])
    folded[ki] = (ok and p) and fold(p, slots) or {}
  end
  for g = 1, guards do
    local guard = terms[g]
    local sum = guard.base
    for _, term in ipairs(guard.terms) do
      local ki, slot, sign = term[1], term[2], term[3]
      local value
      if slot < 0 then value = counter(KEYS[ki]) else value = folded[ki][slot] or 0 end
      sum = sum + sign * value
    end
    if sum > guard.max then applied = 0 end
  end
end
local ops = tonumber(ARGV[a]); a = a + 1
for o = 1, ops do
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
local out = {applied}
while a <= #ARGV do
  local ok, v = pcall(redis.call, 'GET', KEYS[tonumber(ARGV[a])])
  if not ok then v = '' end
  out[#out + 1] = v
  a = a + 1
end
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

#include "scripts.h"

#include <openssl/sha.h>

namespace hourglass::redis {
namespace {

constexpr std::string_view kApplySource = R"lua(-- hourglass apply v2
-- A pack is a hash: field 'h' holds its hour's value, field k (one byte, 0..59) its minute k's: the
-- minute's value, then each of its seconds whose value is not 0, in order, as a byte (the second
-- within the minute) and its value. Values are varints (7 bits a byte, low first). A field at 0
-- is deleted, and with it a hash left empty. So a check reads a few fields however busy the hour.
-- Effects of a pack record's kind on its second (S), its minute (M) and its hour (H): 1 add, -1
-- take (floored at 0), 0 zero; nil leaves it.
local S = {[0] = 1, [1] = -1, [2] = 1, [3] = -1, [8] = 0}
local M = {[0] = 1, [1] = -1, [4] = 1, [5] = -1, [9] = 0}
local H = {[0] = 1, [1] = -1, [6] = 1, [7] = -1, [10] = 0}
local byte, char, concat = string.byte, string.char, table.concat
local function effect(e, x, d)
  if e == 0 then return 0 elseif e > 0 then return x + d end
  x = x - d
  if x < 0 then return 0 end
  return x
end
-- The varint at byte i of c, and the byte after it.
local function varint(c, i)
  local v, scale = 0, 1
  while true do
    local b = byte(c, i)
    if b == nil then return v, i end
    i = i + 1
    if b < 128 then return v + b * scale, i end
    v, scale = v + (b - 128) * scale, scale * 128
  end
end
local function put(v, out)
  while v >= 128 do
    local r = v % 128
    out[#out + 1] = char(r + 128)
    v = (v - r) / 128
  end
  out[#out + 1] = char(v)
end
-- A minute field as {v = its value, s = {[second] = value}}.
local function decode(c)
  local m = {v = 0, s = {}}
  if not c then return m end
  local i, n = 1, #c
  m.v, i = varint(c, i)
  while i <= n do
    local second = byte(c, i)
    m.s[second], i = varint(c, i + 1)
  end
  return m
end
-- A minute's field, nil when it is all 0.
local function encode(m)
  local out = {}
  put(m.v, out)
  local any = m.v > 0
  for second = 0, 59 do
    local v = m.s[second]
    if v ~= nil and v > 0 then
      out[#out + 1] = char(second)
      put(v, out)
      any = true
    end
  end
  if any then return concat(out) end
  return nil
end
-- A slot's field: 'h' for the hour, else its minute's, one byte (0..59).
local function field(slot)
  if slot == 3660 then return 'h' end
  if slot >= 3600 then return char(slot - 3600) end
  return char((slot - slot % 60) / 60)
end
-- A write's refusal: a value that is not ours is named; anything else (out of memory) passes on.
local function refused(k, err)
  err = tostring(err)
  if string.find(err, 'not an integer', 1, true) or string.find(err, 'WRONGTYPE', 1, true) then
    return redis.error_reply('NOTCOUNTER ' .. k)
  end
  return redis.error_reply(err)
end
-- The fields of packs read so far, decoded, by key index ({h = the hour's value, [minute's field]
-- = a decoded minute, exists = true once a field read was there}), or false for a key that holds
-- something else than a hash. Nothing else runs while the script does, so what it read stays
-- true but for its own writes, which update these tables in place.
local packs = {}
-- Pack `ki` with `names` read; false when its key holds something else.
local function load(ki, names)
  local p = packs[ki]
  if p == false then return false end
  if p == nil then
    p = {}
    packs[ki] = p
  end
  local missing, asked = {}, {}
  for _, name in ipairs(names) do
    if p[name] == nil and not asked[name] then
      missing[#missing + 1] = name
      asked[name] = true
    end
  end
  if #missing == 0 then return p end
  local ok, values = pcall(redis.call, 'HMGET', KEYS[ki], unpack(missing))
  if not ok then
    packs[ki] = false
    return false
  end
  for j, name in ipairs(missing) do
    local raw = values[j]
    if raw then p.exists = true end
    if name == 'h' then p.h = raw and (varint(raw, 1)) or 0 else p[name] = decode(raw) end
  end
  return p
end
-- The values of reads (key indices rk, slots rs; slot -1: a counter): a counter's as stored
-- (false when missing), a pack slot's number, or false for a key that is not a hash (then `bad`
-- holds its key index).
local function read(rk, rs)
  local out, bad = {}, {}
  local counters, at, names, order = {}, {}, {}, {}
  for r = 1, #rk do
    local ki, slot = rk[r], rs[r]
    if slot < 0 then
      counters[#counters + 1], at[#at + 1] = KEYS[ki], r
    else
      if names[ki] == nil then
        names[ki] = {}
        order[#order + 1] = ki
      end
      names[ki][#names[ki] + 1] = field(slot)
    end
  end
  if #counters > 0 then
    local values = redis.call('MGET', unpack(counters))
    for j = 1, #at do out[at[j]] = values[j] end
  end
  for _, ki in ipairs(order) do
    if not load(ki, names[ki]) then bad[ki] = true end
  end
  for r = 1, #rk do
    local ki, slot = rk[r], rs[r]
    if slot >= 0 then
      local p = packs[ki]
      if not p then
        out[r] = false
      elseif slot == 3660 then
        out[r] = p.h
      elseif slot >= 3600 then
        out[r] = p[field(slot)].v
      else
        out[r] = p[field(slot)].s[slot % 60] or 0
      end
    end
  end
  return out, bad
end
-- Applies a pack's records (2-byte heads: offset | kind << 12, kind 15 followed by a kind byte and
-- a u32 magnitude; all little-endian) to its hash, making it with `ttl` when it is missing and
-- ttl > 0. Answers an error reply when the key holds something else.
local function apply(ki, ttl, rec)
  local k = KEYS[ki]
  local kinds, offsets, ds = {}, {}, {}
  local names = {'h'}
  local i, n = 1, #rec
  while i + 1 <= n do
    local lo, hi = byte(rec, i, i + 1)
    i = i + 2
    local high = hi % 16
    local off, kind, d = lo + high * 256, (hi - high) / 16, 1
    if kind == 15 then
      if i + 4 > n then break end
      local x, b0, b1, b2, b3 = byte(rec, i, i + 4)
      kind, d = x, b0 + b1 * 256 + b2 * 65536 + b3 * 16777216
      i = i + 5
    end
    kinds[#kinds + 1], offsets[#offsets + 1], ds[#ds + 1] = kind, off, d
    if S[kind] ~= nil or M[kind] ~= nil then names[#names + 1] = field(off) end
  end
  local p = load(ki, names)
  if not p then return redis.error_reply('NOTCOUNTER ' .. k) end
  local existed = p.exists or redis.call('EXISTS', k) == 1
  -- Nothing to take from; and only a write that may make the pack adds.
  if not existed and ttl == 0 then return nil end
  local dirty = {h = true}
  for r = 1, #kinds do
    local kind, off, d = kinds[r], offsets[r], ds[r]
    local e = H[kind]
    if e ~= nil then p.h = effect(e, p.h, d) end
    local es, em = S[kind], M[kind]
    if es ~= nil or em ~= nil then
      local name = field(off)
      local m = p[name]
      dirty[name] = true
      if em ~= nil then m.v = effect(em, m.v, d) end
      if es ~= nil then
        local second = off % 60
        m.s[second] = effect(es, m.s[second] or 0, d)
      end
    end
  end
  local set, gone = {}, {}
  for name in pairs(dirty) do
    local c
    if name == 'h' then
      if p.h > 0 then
        local out = {}
        put(p.h, out)
        c = concat(out)
      end
    else
      c = encode(p[name])
    end
    if c then set[#set + 1], set[#set + 2] = name, c else gone[#gone + 1] = name end
  end
  if #set > 0 then
    local done, err = pcall(redis.call, 'HSET', k, unpack(set))
    if not done then return refused(k, err) end
    if not existed then redis.call('EXPIRE', k, ttl) end
    p.exists = true
  end
  if #gone > 0 then
    redis.call('HDEL', k, unpack(gone))
    if #set == 0 then p.exists = nil end
  end
  return nil
end
local a = 1
local applied = 1
-- Terms and reads come as strings of 4 bytes each: key index and slot (65535 for a counter), both
-- big-endian 16 bits; a guard's terms carry a fifth byte, the sign (0: +1, 1: -1).
local function pairs_of(packed, width, rk, rs, signs)
  local b = {byte(packed, 1, #packed)}
  for j = 1, #b, width do
    local slot = b[j + 2] * 256 + b[j + 3]
    rk[#rk + 1], rs[#rs + 1] = b[j] * 256 + b[j + 1], slot == 65535 and -1 or slot
    if signs then signs[#signs + 1] = b[j + 4] == 0 and 1 or -1 end
  end
end
local guards = tonumber(ARGV[a]); a = a + 1
local gmax, gbase, gfirst, gcount = {}, {}, {}, {}
local tk, ts, tsign = {}, {}, {}
for g = 1, guards do
  gmax[g], gbase[g], gfirst[g] = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), #tk + 1
  pairs_of(ARGV[a + 2], 5, tk, ts, tsign)
  gcount[g] = #tk + 1 - gfirst[g]
  a = a + 3
end
if guards > 0 then
  local values, bad = read(tk, ts)
  for n = 1, #tk do
    if bad[tk[n]] then return redis.error_reply('NOTCOUNTER ' .. KEYS[tk[n]]) end
  end
  for g = 1, guards do
    local sum = gbase[g]
    for n = gfirst[g], gfirst[g] + gcount[g] - 1 do
      local value = values[n]
      if ts[n] < 0 then value = tonumber(value or '0') or 0 end
      sum = sum + tsign[n] * value
    end
    if sum > gmax[g] then applied = 0 end
  end
end
local ops = tonumber(ARGV[a]); a = a + 1
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
      local err = apply(tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), ARGV[a + 3])
      if err then return err end
    end
    a = a + 4
  elseif op == 'x' then
    redis.call('DEL', k)
    packs[tonumber(ARGV[a + 1])] = nil
    a = a + 2
  else
    return redis.error_reply('ERR hourglass apply: unknown op ' .. tostring(op))
  end
end
local rk, rs = {}, {}
pairs_of(ARGV[a], 4, rk, rs, nil)
local out, bad = read(rk, rs)
local reply = {applied}
for r = 1, #rk do
  if rs[r] >= 0 and bad[rk[r]] then reply[r + 1] = 'NOTPACK' else reply[r + 1] = out[r] end
end
return reply
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

}  // namespace hourglass::redis

#include "scripts.h"

#include <openssl/sha.h>

namespace hourglass::redis {
namespace {

constexpr std::string_view kApplySource = R"lua(-- hourglass apply v3
-- A pack is a hash: field 'h' holds its hour's value as bytes (7 bits each, low first, each
-- + 128), field k (one byte, 0..59) its minute k's: each of its seconds whose value is not 0, in
-- order, as the second's byte (a value of 1), or the value's bytes and then 64 + the second;
-- before them, where the minute's value is not the sum of its seconds, that value's bytes and 127.
-- Each entry ends in a byte below 128, so the last one reads backwards: a hit on the latest second
-- appends or rewrites it alone. A field at 0 is deleted, and with it a hash left empty. So a check
-- reads a few fields however busy the hour.
-- Effects of a pack record's kind on its second (S), its minute (M) and its hour (H): 1 add, -1
-- take (floored at 0), 0 zero; nil leaves it.
local S = {[0] = 1, [1] = -1, [2] = 1, [3] = -1, [8] = 0}
local M = {[0] = 1, [1] = -1, [4] = 1, [5] = -1, [9] = 0}
local H = {[0] = 1, [1] = -1, [6] = 1, [7] = -1, [10] = 0}
local byte, char = string.byte, string.char
local function effect(e, x, d)
  if e == 0 then return 0 elseif e > 0 then return x + d end
  x = x - d
  if x < 0 then return 0 end
  return x
end
local function bytes(c) return {byte(c, 1, -1)} end
-- A value of at least 1 as bytes (the hour's field, an entry's lead): 7 bits each, low first,
-- each + 128.
local function lead(v, out)
  while v > 0 do
    local r = v % 128
    out[#out + 1] = r + 128
    v = (v - r) / 128
  end
end
-- The value lead wrote as bytes i..j of c.
local function unlead(c, i, j)
  local v, scale = 0, 1
  for x = i, j do
    v, scale = v + (byte(c, x) - 128) * scale, scale * 128
  end
  return v
end
-- A minute field as {v = its value, sec = its seconds in order, val = their values}.
local function decode(c)
  local m = {v = 0, sec = {}, val = {}}
  if not c then return m end
  local b = bytes(c)
  local acc, scale, sum, own, k = 0, 1, 0, nil, 0
  for i = 1, #b do
    local x = b[i]
    if x >= 128 then
      acc, scale = acc + (x - 128) * scale, scale * 128
    elseif x == 127 then
      own, acc, scale = acc, 0, 1
    else
      local v = 1
      if x >= 64 then x, v = x - 64, acc end
      k = k + 1
      m.sec[k], m.val[k] = x, v
      sum, acc, scale = sum + v, 0, 1
    end
  end
  m.v = own or sum
  return m
end
-- Where second s is in minute m: its index, or nil and the index it would take.
local function find(m, s)
  local sec = m.sec
  for j = #sec, 1, -1 do
    if sec[j] == s then return j end
    if sec[j] < s then return nil, j + 1 end
  end
  return nil, 1
end
local function second_of(m, s)
  local j = find(m, s)
  return j and m.val[j] or 0
end
local function set_second(m, s, v)
  local j, at = find(m, s)
  if j then
    m.val[j] = v
  elseif v > 0 then
    table.insert(m.sec, at, s)
    table.insert(m.val, at, v)
  end
end
-- A minute's field, nil when it is all 0.
local function encode(m)
  local sum = 0
  for j = 1, #m.val do sum = sum + m.val[j] end
  if sum == 0 and m.v == 0 then return nil end
  local out = {}
  if m.v ~= sum then
    lead(m.v, out)
    out[#out + 1] = 127
  end
  for j = 1, #m.sec do
    local v = m.val[j]
    if v == 1 then
      out[#out + 1] = m.sec[j]
    elseif v > 0 then
      lead(v, out)
      out[#out + 1] = m.sec[j] + 64
    end
  end
  return char(unpack(out))
end
-- A hit of d (> 0) on second s of a minute's field c (nil when missing) as its new field, without
-- decoding it; nil when that needs decoding: the minute holds a value of its own, or s comes
-- before the field's last second. Live traffic hits the last second or a later one.
local function hit(c, s, d)
  local out = {}
  if not c then
    if d == 1 then return char(s) end
    lead(d, out)
    out[#out + 1] = s + 64
    return char(unpack(out))
  end
  local n, i = #c, 1
  while (byte(c, i) or 0) >= 128 do i = i + 1 end
  if n == 0 or byte(c, i) == 127 then return nil end
  local last, start, v = byte(c, n), n, 1
  if last >= 64 then
    last, v, start = last - 64, 0, n
    while start > 1 and byte(c, start - 1) >= 128 do start = start - 1 end
    v = unlead(c, start, n - 1)
  end
  if s < last then return nil end
  if s == last then
    d = v + d
    c = string.sub(c, 1, start - 1)
  end
  if d == 1 then return c .. char(s) end
  lead(d, out)
  out[#out + 1] = s + 64
  return c .. char(unpack(out))
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
-- The fields of packs read so far by key index: {h = the hour's value, raw = {[minute's field] =
-- its bytes, or false}, dec = {[minute's field] = decoded, then the one that holds}, exists =
-- true once a field read was there}, or false for a key that holds something else than a hash.
-- Nothing else runs while the script does, so what it read stays true but for its own writes,
-- which update these tables.
local packs = {}
-- Minute field `name` of pack p, decoded.
local function minute(p, name)
  local m = p.dec[name]
  if m == nil then
    m = decode(p.raw[name] or nil)
    p.dec[name] = m
  end
  return m
end
-- Pack `ki` with `names` read; false when its key holds something else.
local function load(ki, names)
  local p = packs[ki]
  if p == false then return false end
  if p == nil then
    p = {raw = {}, dec = {}}
    packs[ki] = p
  end
  local missing, asked = {}, {}
  for _, name in ipairs(names) do
    local known = name == 'h' and p.h or p.raw[name]
    if known == nil and not asked[name] then
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
    if name == 'h' then p.h = raw and unlead(raw, 1, #raw) or 0 else p.raw[name] = raw end
  end
  return p
end
-- The values of reads (key indices rk, slots rs; slot -1: a counter): a counter's as stored
-- (false when missing), a pack slot's number, or false for a key that is not a hash (then `bad`
-- holds its key index).
local function read(rk, rs)
  local out, bad = {}, {}
  local counters, at, names, order, named = {}, {}, {}, {}, {}
  for r = 1, #rk do
    local ki, slot = rk[r], rs[r]
    if slot < 0 then
      counters[#counters + 1], at[#at + 1] = KEYS[ki], r
    else
      if names[ki] == nil then
        names[ki] = {}
        order[#order + 1] = ki
      end
      named[r] = field(slot)
      names[ki][#names[ki] + 1] = named[r]
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
        out[r] = minute(p, named[r]).v
      else
        out[r] = second_of(minute(p, named[r]), slot % 60)
      end
    end
  end
  return out, bad
end
-- Applies a pack's records (2-byte heads: offset | kind << 12, kind 15 followed by a kind byte and
-- a u32 magnitude, kinds 11 and 12 a hit's u8 and u16 magnitude; all little-endian) to its hash,
-- making it with `ttl` when it is missing and ttl > 0. Answers an error reply when the key holds
-- something else.
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
    elseif kind == 11 or kind == 12 then
      local width = kind - 10
      if i + width - 1 > n then break end
      local b0, b1 = byte(rec, i, i + width - 1)
      kind, d = 0, b0 + (b1 or 0) * 256
      i = i + width
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
    local name = (es ~= nil or em ~= nil) and field(off)
    local fast = kind == 0 and p.dec[name] == nil and hit(p.raw[name] or nil, off % 60, d)
    if fast then
      p.raw[name] = fast
      dirty[name] = true
    elseif name then
      local m = minute(p, name)
      dirty[name] = true
      if em ~= nil then m.v = effect(em, m.v, d) end
      if es ~= nil then
        local second = off % 60
        set_second(m, second, effect(es, second_of(m, second), d))
      end
    end
  end
  local set, gone = {}, {}
  for name in pairs(dirty) do
    local c
    if name == 'h' then
      if p.h > 0 then
        local out = {}
        lead(p.h, out)
        c = char(unpack(out))
      end
    elseif p.dec[name] ~= nil then
      c = encode(p.dec[name])
      p.raw[name] = c or false
    else
      c = p.raw[name]
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
-- (A reset reads thousands: the bytes are taken a term at a time, as Lua's stack is bounded.)
local function pairs_of(packed, width, rk, rs, signs)
  for j = 1, #packed - width + 1, width do
    local k0, k1, s0, s1, sign = byte(packed, j, j + width - 1)
    local slot = s0 * 256 + s1
    rk[#rk + 1], rs[#rs + 1] = k0 * 256 + k1, slot == 65535 and -1 or slot
    if signs then signs[#signs + 1] = sign == 0 and 1 or -1 end
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

// The Node peer: rate-limiter-flexible's Redis store (ioredis), the load driver's four limits as a
// RateLimiterUnion (its way to put several limits on one key: each a fixed window from the key's
// first point, and a consume takes a point from every limiter, even when one of them rejects).
// Drives the load driver's traffic (10 hot features take `--hot-share` of the checks, the rest
// spread over `--features`) one check at a time, and prints one JSON object for the load driver;
// or, with --start (Unix seconds) and --offsets, checks one feature at those instants and prints
// the instants it admitted (bench/boundary_attack.py).
//
//   node bench/peers/rlf.js --servers 127.0.0.1:6379 --seconds 5 --features 10000 --hot-share 0.5
//   node bench/peers/rlf.js --servers 127.0.0.1:6379 --start 1764000000 --offsets 0,57,57.6
'use strict';
const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterUnion } = require('rate-limiter-flexible');

function args() {
  const out = { servers: '127.0.0.1:6379', seconds: 5, features: 10000, hotShare: 0.5,
                policy: '2/1,5/60,10/3600,100/86400', start: 0, offsets: [] };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const name = a[i].replace(/^--/, '');
    if (name === 'servers') out.servers = a[i + 1];
    else if (name === 'seconds') out.seconds = Number(a[i + 1]);
    else if (name === 'features') out.features = Number(a[i + 1]);
    else if (name === 'hot-share') out.hotShare = Number(a[i + 1]);
    else if (name === 'policy') out.policy = a[i + 1];
    else if (name === 'start') out.start = Number(a[i + 1]);
    else if (name === 'offsets') out.offsets = a[i + 1].split(',').map(Number);
    else throw new Error('unknown option ' + a[i]);
  }
  return out;
}

// A small seeded generator (mulberry32), so runs draw the same features.
function generator(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main() {
  const o = args();
  const [host, port] = o.servers.split(',')[0].split(':');
  const redis = new Redis({ host, port: Number(port), enableOfflineQueue: true });
  const limiters = o.policy.split(',').map((spec, i) => {
    const [points, duration] = spec.split('/').map(Number);
    return new RateLimiterRedis({ storeClient: redis, keyPrefix: 'rlf' + i, points, duration });
  });
  const union = new RateLimiterUnion(...limiters);
  if (o.offsets.length > 0) return schedule(o, union, redis);
  const random = generator(1000);
  const latencies = [];
  let admitted = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(o.seconds * 1e9));
  while (process.hrtime.bigint() < deadline) {
    const f = random() < o.hotShare ? Math.floor(random() * 10) : Math.floor(random() * o.features);
    const feature = `10.${f >> 16}.${(f >> 8) & 255}.${f & 255}`;
    const begin = process.hrtime.bigint();
    try {
      await union.consume(feature);
      admitted += 1;
    } catch (rejected) {
      if (rejected instanceof Error) throw rejected;  // the store failed, not a denial
    }
    latencies.push(Number(process.hrtime.bigint() - begin) / 1000);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const version = require('rate-limiter-flexible/package.json').version;
  process.stdout.write(JSON.stringify({
    name: `rate-limiter-flexible ${version} RateLimiterRedis (union of 4)`,
    checks: latencies.length, admitted, seconds, latencies_us: latencies,
    // One Lua script per limiter (incr with expiry, read back), sent together.
    keys_read: limiters.length, keys_written: limiters.length, round_trips: limiters.length,
  }) + '\n');
  redis.disconnect();
}

// Checks one feature at `o.start + offset` for each offset; prints the instants admitted.
async function schedule(o, union, redis) {
  const admitted = [];
  for (const offset of o.offsets) {
    const wait = (o.start + offset) * 1000 - Date.now();
    if (wait > 0) await new Promise((done) => setTimeout(done, wait));
    const at = Date.now() / 1000;
    try {
      await union.consume(`attacker-${Math.floor(o.start)}`);
      admitted.push(at);
    } catch (rejected) {
      if (rejected instanceof Error) throw rejected;
    }
  }
  const version = require('rate-limiter-flexible/package.json').version;
  process.stdout.write(JSON.stringify({
    name: `rate-limiter-flexible ${version} RateLimiterRedis (union of 4)`, admitted_at: admitted,
  }) + '\n');
  redis.disconnect();
}

main().catch((e) => { console.error(e); process.exit(1); });

// The Node HTTP peer: POST /v1/check as hourglass serve takes it ({"event": ..., "feature": ...}),
// decided by rate-limiter-flexible's memcached store (RateLimiterMemcache, the `memcached`
// client) under a RateLimiterUnion of the policy's limits, each a fixed window from the key's
// first point. 200 {"allowed":true}, or 429 {"allowed":false} when any limit rejects. One worker
// process per core (Node's cluster module, as such a service is deployed), sharing the port.
//
//   node bench/peers/rlf_service.js --port 8090 --servers 127.0.0.1:11211 \
//     --policy 2/1,5/60,10/3600,100/86400 [--workers 2]
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const os = require('node:os');
const Memcached = require('memcached');
const { RateLimiterMemcache, RateLimiterUnion } = require('rate-limiter-flexible');

function args() {
  const out = { port: 8090, servers: '127.0.0.1:11211', policy: '2/1,5/60,10/3600,100/86400',
                workers: os.cpus().length };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const name = a[i].replace(/^--/, '');
    if (!(name in out)) throw new Error('unknown option ' + a[i]);
    out[name] = typeof out[name] === 'number' ? Number(a[i + 1]) : a[i + 1];
  }
  return out;
}

function answer(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

function serve(o) {
  const memcached = new Memcached(o.servers.split(','), { retries: 0, timeout: 1000 });
  const limiters = o.policy.split(',').map((spec, i) => {
    const [points, duration] = spec.split('/').map(Number);
    return new RateLimiterMemcache({ storeClient: memcached, keyPrefix: 'rlf' + i, points, duration });
  });
  const union = new RateLimiterUnion(...limiters);
  http.createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/v1/check') return answer(res, 404, '{}');
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let check;
      try {
        check = JSON.parse(Buffer.concat(chunks).toString());
      } catch (e) {
        return answer(res, 400, '{"error":"the body is not JSON"}');
      }
      union.consume(`${check.event}:${check.feature}`).then(
        () => answer(res, 200, '{"allowed":true}'),
        (rejected) => {
          if (rejected instanceof Error) return answer(res, 503, '{"error":"store failed"}');
          answer(res, 429, '{"allowed":false}');
        });
    });
  }).listen(o.port, '127.0.0.1');
}

const o = args();
if (cluster.isPrimary && o.workers > 1) {
  for (let i = 0; i < o.workers; ++i) cluster.fork();
} else {
  serve(o);
}

#!/usr/bin/python3
"""The peer of bench/growth.cc: Python `limits`' moving window on Redis, the only exact peer. Its
state per feature and limit is a list of the timestamps of the hits in the window, so it grows with
the limit. For one limit, fills enough features with `fill` of it (the timestamps pushed as limits'
own hits would leave them, spread over the window), then checks them in turn at the real time two
ways, each printed as one JSON line:

- `hit`: `MovingWindowRateLimiter.hit`, which only admits or denies;
- `hit + remaining`: `hit` and `get_window_stats`, what a check that answers how many hits remain
  (rate limit headers, an API's quota) costs.

The store's figures (CPU, bytes sent, memory) come from its INFO, as the driver reads them.

  /usr/bin/python3 bench/growth_limits.py --servers 127.0.0.1:6379 --limit 10000/d --checks 2000
"""
import argparse
import json
import time

import limits
import redis
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

UNITS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def figures(client):
    info = client.info("everything")
    return (info["used_cpu_user"] + info["used_cpu_sys"], info["total_net_output_bytes"],
            info["used_memory"])


def fill(client, key, hits, window):
    """`hits` timestamps spread over the window ending 10 s ago, newest at the head (LPUSH)."""
    now = time.time()
    span = window - 20
    pipe = client.pipeline(transaction=False)
    batch = []
    for i in range(hits):
        batch.append(now - 10 - span + i * span / hits)
        if len(batch) == 10000:
            pipe.lpush(key, *batch)
            batch = []
    if batch:
        pipe.lpush(key, *batch)
    pipe.expire(key, window)
    pipe.execute()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", required=True)
    parser.add_argument("--limit", required=True, help="N/UNIT, UNIT one of s, m, h, d")
    parser.add_argument("--checks", type=int, default=20000)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--fill", type=float, default=0.5)
    args = parser.parse_args()
    count, unit = args.limit.split("/")
    item = limits.parse("%s/%s" % (count, UNITS[unit]))
    hits = int(item.amount * args.fill)
    room = max(1, item.amount - hits - 1)
    features = (args.checks + room - 1) // room
    host, port = args.servers.split(",")[0].rsplit(":", 1)
    client = redis.Redis(host=host, port=int(port))
    storage = storage_from_string("redis://%s:%s" % (host, port))  # the limiter keeps a weak ref
    limiter = MovingWindowRateLimiter(storage)
    name = "Python limits %s moving window" % limits.__version__
    ways = [("", lambda f: limiter.hit(item, "growth", f)),
            (", hit + remaining", lambda f: limiter.hit(item, "growth", f) and
             limiter.get_window_stats(item, "growth", f) is not None)]
    for way, (suffix, check) in enumerate(ways):
        names = ["w%d-client-%d" % (way, f) for f in range(features)]
        empty = figures(client)
        for f in names:
            fill(client, item.key_for("growth", f), hits, item.get_expiry())
        filled = figures(client)
        latencies = []
        denied = 0
        start = time.perf_counter()
        deadline = start + args.seconds
        while len(latencies) < args.checks and time.perf_counter() < deadline:
            begin = time.perf_counter()
            denied += not check(names[len(latencies) % features])
            latencies.append((time.perf_counter() - begin) * 1e6)
        elapsed = time.perf_counter() - start
        used = figures(client)
        print(json.dumps({
            "name": name + suffix,
            "features": features,
            "hits_each": hits,
            "denied": denied,
            "seconds": elapsed,
            "latencies_us": latencies,
            "keys_read": 1,  # one list per feature and limit; its entries are read on the server
            "bytes_sent": used[1] - filled[1],
            "cpu_seconds": used[0] - filled[0],
            "memory": filled[2] - empty[2],
        }))
        client.delete(*[item.key_for("growth", f) for f in names])


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The peer: Python `limits` (Debian python3-limits), on memcached or Redis (python3-redis), with
fixed windows (from a client's first hit) or the moving window (a sorted log of timestamps per
limit: exact, and as large as the limit), the same four limits as the load driver, checked the
way Flask-Limiter does it (hit every limit; deny if any is exceeded). Prints one JSON object for
the load driver.

  /usr/bin/python3 bench/peer_limits.py --servers 127.0.0.1:11211 --seconds 5 --features 10000
  /usr/bin/python3 bench/peer_limits.py --store redis --strategy moving --servers 127.0.0.1:6379
"""
import argparse
import json
import random
import time

import limits

NAME = "Python limits"
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", required=True)
    parser.add_argument("--store", choices=["memcached", "redis"], default="memcached")
    parser.add_argument("--strategy", choices=["fixed", "moving"], default="fixed")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--features", type=int, default=10000)
    parser.add_argument("--hot-share", type=float, default=0.5)
    parser.add_argument("--policy", default="2/second;5/minute;10/hour;100/day")
    parser.add_argument("--replay", help="an Apache log: check each line's client, in file order")
    parser.add_argument("--trace", help="a hits trace (UNIX_SECONDS<TAB>EVENT<TAB>FEATURE): check "
                        "each line's event and feature, in file order")
    parser.add_argument("--max-checks", type=int, default=0,
                        help="with --trace, stop after this many checks (0: all)")
    args = parser.parse_args()

    storage = storage_from_string(args.store + "://" + args.servers.split(",")[0])
    limiter = (MovingWindowRateLimiter if args.strategy == "moving" else FixedWindowRateLimiter)(
        storage)
    global NAME
    NAME = "Python limits %s %s window (%s)" % (
        limits.__version__, args.strategy, "Redis" if args.store == "redis" else "memcached")
    items = limits.parse_many(args.policy)
    if args.replay:
        replay(args, storage, limiter, items)
        return
    if args.trace:
        replay_trace(args, limiter, items)
        return
    rng = random.Random(1000)
    latencies = []
    start = time.perf_counter()
    deadline = start + args.seconds
    while time.perf_counter() < deadline:
        f = rng.randrange(10) if rng.random() < args.hot_share else rng.randrange(args.features)
        feature = "10.%d.%d.%d" % (f >> 16, (f >> 8) & 255, f & 255)
        begin = time.perf_counter()
        namespace = "url_shorten-" + args.strategy
        allowed = all([limiter.hit(item, namespace, feature) for item in items])
        latencies.append((time.perf_counter() - begin) * 1e6)
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "name": NAME,
        "checks": len(latencies),
        "seconds": elapsed,
        "latencies_us": latencies,
        # Fixed: one incr per limit (add on first use), nothing else read. Moving: one script per
        # limit (reads and trims its log, then adds).
        "keys_read": len(items),
        "keys_written": len(items),
        "round_trips": len(items),
    }))


def replay(args, storage, limiter, items):
    """The same checks as `hourglass replay LOG --format apache`: one per line, feature = client."""
    with open(args.replay, encoding="utf-8", errors="replace") as f:
        clients = [line.split(" ", 1)[0] for line in f if line.strip()]
    admitted = 0
    start = time.perf_counter()
    for client in clients:
        admitted += all([limiter.hit(item, "request", client) for item in items])
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "name": NAME,
        "checks": len(clients),
        "admitted": admitted,
        "seconds": elapsed,
        "checks_per_second": len(clients) / elapsed,
    }))


def replay_trace(args, limiter, items):
    """Each line of a hits trace checked now (limits' windows run on the real clock)."""
    checks = admitted = 0
    start = time.perf_counter()
    with open(args.trace, encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            _, event, feature = line.rstrip("\n").split("\t")[:3]
            admitted += all([limiter.hit(item, event, feature) for item in items])
            checks += 1
            if checks == args.max_checks:
                break
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "name": NAME,
        "checks": checks,
        "admitted": admitted,
        "seconds": elapsed,
        "checks_per_second": checks / elapsed,
    }))


if __name__ == "__main__":
    main()

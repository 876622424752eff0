#!/usr/bin/python3
"""A boundary attack in real time against limiters sharing one Redis, each with `2/s, 5/m, 10/h,
100/d`: hourglass (the CLI, one `hourglass check` per hit), Python `limits` 2.8 fixed and moving
window, and rate-limiter-flexible (bench/peers/rlf.js). One client sends a hit at t=0, four
just before t=60 and five just after (never more than two in a second): a fixed window that
started at the first hit admits all ten, nine of them within 60 seconds. Prints, per limiter,
the hits admitted and the most admitted in any 60 seconds (the 5/m limit allows 5), as markdown.
Takes about 70 s (the limiters run at once, each on its own keys).

  /usr/bin/python3 bench/boundary_attack.py --servers 127.0.0.1:6379 --hourglass build/cli/hourglass
"""
import argparse
import json
import subprocess
import sys
import threading
import time

import limits
from limits.storage import storage_from_string
from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter

OFFSETS = [0, 57.0, 57.6, 58.2, 58.8, 60.2, 60.8, 61.4, 62.0, 62.6]
POLICY = "2/second;5/minute;10/hour;100/day"
SUFFIX = ""


def wait_until(at):
    delay = at - time.time()
    if delay > 0:
        time.sleep(delay)


def run_hourglass(args, start, feature):
    admitted = []
    for offset in OFFSETS:
        wait_until(start + offset)
        at = time.time()
        code = subprocess.call([args.hourglass, "--store", "redis", "--servers", args.servers,
                                "check", "url_shorten", feature, "--limit", "2/s", "--limit",
                                "5/m", "--limit", "10/h", "--limit", "100/d"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if code == 0:
            admitted.append(at)
        elif code != 1:
            raise RuntimeError("hourglass check exited %d" % code)
    return "hourglass (Redis)", admitted


STORAGES = []  # a limiter holds its storage weakly


def make_limiter(args, strategy):
    """Made before the threads start: limits imports its Redis client lazily, not thread-safely."""
    storage = storage_from_string("redis://" + args.servers)
    STORAGES.append(storage)
    return (MovingWindowRateLimiter if strategy == "moving" else FixedWindowRateLimiter)(storage)


def run_limits(limiter, start, strategy):
    items = limits.parse_many(POLICY)
    admitted = []
    for offset in OFFSETS:
        wait_until(start + offset)
        at = time.time()
        feature = "attacker" + SUFFIX
        if all([limiter.hit(item, "boundary-" + strategy, feature) for item in items]):
            admitted.append(at)
    return "Python limits %s %s window (Redis)" % (limits.__version__, strategy), admitted


def run_rlf(args, start):
    out = subprocess.check_output(["node", "bench/peers/rlf.js", "--servers", args.servers,
                                   "--start", str(start), "--offsets",
                                   ",".join(str(o) for o in OFFSETS)])
    answer = json.loads(out)
    return answer["name"], answer["admitted_at"]


def worst_minute(admitted):
    return max((sum(1 for u in admitted if t - 60 < u <= t) for t in admitted), default=0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--servers", required=True)
    parser.add_argument("--hourglass", default="build/cli/hourglass")
    parser.add_argument("--no-node", action="store_true", help="skip rate-limiter-flexible")
    args = parser.parse_args()
    start = time.time() + 3
    # Keys of an earlier run would start the windows early: each run attacks its own feature.
    global SUFFIX
    SUFFIX = "-%d" % int(start)
    fixed, moving = make_limiter(args, "fixed"), make_limiter(args, "moving")
    runs = [lambda: run_hourglass(args, start, "attacker-%d" % int(start)),
            lambda: run_limits(fixed, start, "fixed"), lambda: run_limits(moving, start, "moving")]
    if not args.no_node:
        runs.append(lambda: run_rlf(args, start))
    results = [None] * len(runs)

    def run(i):
        results[i] = runs[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("| limiter | hits admitted of %d | most admitted in any 60 s (limit 5) | over-admitted |"
          % len(OFFSETS))
    print("| --- | --- | --- | --- |")
    for result in results:
        if result is None:
            sys.exit("a limiter failed")
        name, admitted = result
        worst = worst_minute(admitted)
        print("| %s | %d | %d | %d |" % (name, len(admitted), worst, max(0, worst - 5)))


if __name__ == "__main__":
    main()

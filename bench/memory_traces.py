#!/usr/bin/python3
"""One day of one client's traffic as hits traces for `hourglass replay` (memory benchmark).

  bench/memory_traces.py DIR    writes DIR/every30s.tsv, DIR/every1s.tsv, DIR/flood.tsv

every30s: a hit every 30 s (2,880); every1s: a hit every second (86,400); flood: 100 hits in every
second (8,640,000). One event and feature; the day is 2015-05-17 UTC, as the real log's.
"""
import os
import sys

DAY_START = 1431820800  # 2015-05-17 00:00:00 UTC
SCENARIOS = {"every30s": (30, 1), "every1s": (1, 1), "flood": (1, 100)}


def main():
    out = sys.argv[1]
    for name, (step, per_second) in SCENARIOS.items():
        with open(os.path.join(out, name + ".tsv"), "w", encoding="ascii") as f:
            for t in range(DAY_START, DAY_START + 86400, step):
                f.write(("%d\turl_shorten\t203.0.113.7\n" % t) * per_second)


if __name__ == "__main__":
    main()

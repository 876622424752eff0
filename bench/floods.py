#!/usr/bin/env python3
"""Connection floods against a real `hourglass serve`, measured as its legitimate clients see them.

Two floods, each run beside real clients and compared with the same clients without it, all on
one memcached on loopback, with the service's default connection caps:

  - http: one host opens --rate connections a second to the HTTP port, each sending one byte of
    a request and then nothing (a slowloris), for --seconds; meanwhile --clients processes each
    send whole POST /v1/check requests, one per new connection (the costliest client to serve
    at the cap), for client addresses of the real log. Reported: the share of checks answered
    200 or 429 (the target is at least 95%), how many were answered against the same clients
    without the flood (a client stuck until its 5 s timeout answers nothing meanwhile), 503s,
    failures, and the clients' latency.
  - grpc: --burst connections to the gRPC port as fast as one process can open them, each
    sending HTTP/2's client preface and then nothing, while bench/rls_load keeps 4 Envoy calls
    in flight. Reported: the calls' p50, p99 and slowest (the target is every call within
    100 ms), errors, the most descriptors the service held while the burst lasted, and how long
    it took to stop on SIGTERM afterwards.

Writes bench/results/floods.md.
  python3 bench/floods.py [--build build] [--hourglass BINARY] [--before BINARY]
                          [--seconds 10] [--rate 300] [--burst 18000]
"""
import argparse
import http.client
import json
import multiprocessing
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG = os.path.join(os.path.dirname(ROOT), "shared", "data", "apache_access_2015.log")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"floods: nothing listens on 127.0.0.1:{port} after {seconds:.0f} s")


def addresses():
    with open(LOG, encoding="latin-1") as f:
        return sorted({line.split(" ", 1)[0] for line in f if line.strip()})


def client_process(port, seconds, seed, out):
    """Whole checks, one per new connection, for `seconds`; puts (statuses, latencies_ms)."""
    rng = random.Random(seed)
    features = addresses()
    statuses, latencies = {}, []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        body = json.dumps({"event": "url_shorten", "feature": rng.choice(features)})
        start = time.monotonic()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("POST", "/v1/check", body, {"Content-Type": "application/json"})
            status = str(conn.getresponse().status)
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            status = type(e).__name__
        latencies.append((time.monotonic() - start) * 1000)
        statuses[status] = statuses.get(status, 0) + 1
    out.put((statuses, latencies))


def slowloris_process(port, rate, seconds, out):
    """Opens `rate` connections a second, each sending one byte; holds them to the end."""
    held, refused = [], 0
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < seconds:
        due = start + n / rate
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
        n += 1
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"P")
            held.append(s)
        except OSError:
            refused += 1
    out.put((n, refused))
    for s in held:
        s.close()


def burst_process(port, count, hold, out):
    """Opens `count` connections as fast as it can, each sending the HTTP/2 preface."""
    held, refused = [], 0
    start = time.monotonic()
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(PREFACE)
            held.append(s)
        except OSError:
            refused += 1
    out.put((count, refused, time.monotonic() - start))
    time.sleep(hold)
    for s in held:
        s.close()


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def http_round(port, args, flood):
    out = multiprocessing.Queue()
    clients = [multiprocessing.Process(target=client_process,
                                       args=(port, args.seconds, 1000 + k, out))
               for k in range(args.clients)]
    loris, loris_out = None, multiprocessing.Queue()
    if flood:
        loris = multiprocessing.Process(target=slowloris_process,
                                        args=(port, args.rate, args.seconds + 1, loris_out))
        loris.start()
        time.sleep(1)  # the flood reaches the cap before the clients start
    for c in clients:
        c.start()
    statuses, latencies = {}, []
    for _ in clients:
        s, lat = out.get()
        latencies += lat
        for k, v in s.items():
            statuses[k] = statuses.get(k, 0) + v
    opened = refused = 0
    if loris:
        opened, refused = loris_out.get()
    for p in clients + ([loris] if loris else []):
        p.join()
    total = sum(statuses.values())
    answered = statuses.get("200", 0) + statuses.get("429", 0)
    return {
        "flood": f"{opened} partial requests at {args.rate}/s ({refused} refused)" if flood
        else "none",
        "checks": total,
        "answered": answered,
        "share": answered / total if total else 0.0,
        "503": statuses.get("503", 0),
        "other": {k: v for k, v in statuses.items() if k not in ("200", "429", "503")},
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
    }


def descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def grpc_round(build, grpc_port, pid, args, burst):
    out = multiprocessing.Queue()
    seconds = args.seconds
    load = subprocess.Popen(
        [os.path.join(build, "bench", "rls_load"), "--target", f"127.0.0.1:{grpc_port}",
         "--domain", "bench", "--key", "client", "--log", LOG, "--concurrency", "4",
         "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True)
    most = descriptors(pid)
    flood = None
    if burst:
        time.sleep(1)
        flood = multiprocessing.Process(target=burst_process,
                                        args=(grpc_port, args.burst, seconds - 2, out))
        flood.start()
    while load.poll() is None:
        most = max(most, descriptors(pid))
        time.sleep(0.02)
    result = json.loads(load.stdout.read().strip().splitlines()[-1])
    row = {"burst": "none", "descriptors": most, **result}
    if flood:
        count, refused, took = out.get()
        flood.join()
        row["burst"] = f"{count} connections in {took:.1f} s ({refused} refused)"
    return row


def run_service(binary, args, memcached_port, tmp):
    """Every round against one `hourglass serve` of `binary`; then how long SIGTERM took."""
    port, grpc_port = free_port(), free_port()
    with open(os.path.join(tmp, "serve.log"), "a") as log:
        serve = subprocess.Popen(
            [binary, "serve", "--policy", os.path.join(tmp, "policy.yaml"), "--envoy-config",
             os.path.join(tmp, "envoy.yaml"), "--servers", f"127.0.0.1:{memcached_port}",
             "--namespace", f"floods{port}", "--listen", f"127.0.0.1:{port}", "--grpc-listen",
             f"127.0.0.1:{grpc_port}"], stderr=log)
    try:
        wait_port(port)
        wait_port(grpc_port)
        http_rows, grpc_rows = [], []
        for flood in (False, True):
            http_rows.append(http_round(port, args, flood))
            print(f"floods: {binary} http {http_rows[-1]}", file=sys.stderr)
        time.sleep(2)
        for burst in (False, True):
            grpc_rows.append(grpc_round(args.build, grpc_port, serve.pid, args, burst))
            print(f"floods: {binary} grpc {grpc_rows[-1]}", file=sys.stderr)
    finally:
        start = time.monotonic()
        serve.terminate()
        try:
            serve.wait(timeout=args.stop_within)
            stopped = f"{time.monotonic() - start:.1f} s"
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
            stopped = f"not within {args.stop_within:g} s (killed)"
    return {"binary": binary, "http": http_rows, "grpc": grpc_rows, "stopped": stopped}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--hourglass", help="the binary to serve (default: BUILD/cli/hourglass)")
    parser.add_argument("--before", help="another binary measured the same way after it, e.g. "
                        "one built from an earlier commit")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rate", type=int, default=300, help="partial requests a second")
    parser.add_argument("--clients", type=int, default=4, help="processes sending whole checks")
    parser.add_argument("--burst", type=int, default=18000, help="gRPC connections in the burst")
    parser.add_argument("--stop-within", type=float, default=15,
                        help="seconds a service may take to stop on SIGTERM before it is killed")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "floods.md"))
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("floods: stopped"))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    binaries = [args.hourglass or os.path.join(args.build, "cli", "hourglass")]
    if args.before:
        binaries.append(args.before)
    tmp = tempfile.mkdtemp(prefix="hourglass-floods-")
    with open(os.path.join(tmp, "policy.yaml"), "w") as f:
        f.write("events:\n  url_shorten:\n    limits: [2/s, 5/m, 10/h, 100/d]\n")
    with open(os.path.join(tmp, "envoy.yaml"), "w") as f:
        f.write("domain: bench\ndescriptors:\n  - key: client\n    rate_limits:\n"
                "      - {unit: second, requests_per_unit: 2}\n"
                "      - {unit: minute, requests_per_unit: 5}\n")
    mc = free_port()
    user = "root" if os.getuid() == 0 else os.environ.get("USER", "nobody")
    memcached = subprocess.Popen(["memcached", "-u", user, "-l", "127.0.0.1", "-p", str(mc),
                                  "-U", "0", "-m", "256"])
    try:
        wait_port(mc)
        runs = [run_service(binary, args, mc, tmp) for binary in binaries]
    finally:
        memcached.terminate()
        memcached.wait()
    write(args, runs)


def write(args, runs):
    before = f" --before {args.before}" if args.before else ""
    lines = [
        "# Connection floods, as the legitimate clients see them",
        "",
        f"`python3 bench/floods.py --seconds {args.seconds:g} --rate {args.rate} "
        f"--clients {args.clients} --burst {args.burst}{before}`: `hourglass serve` with its "
        "default caps (1,024 HTTP and 1,024 gRPC connections) on one memcached, open file limit "
        f"{resource.getrlimit(resource.RLIMIT_NOFILE)[1]}, on this 2-core machine (the flood, the "
        "clients and the service share it). Each flood beside the same clients without it; each "
        "binary in the same run.",
        "",
        f"HTTP: {args.clients} processes sending whole `POST /v1/check` requests, one per new "
        "connection, while one host sends partial requests (one byte each, then nothing):",
        "",
        "| service | flood | checks | answered 200/429 | share | answered vs no flood | 503 | "
        "other | p50 ms | p99 ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        calm = run["http"][0]["answered"]
        for r in run["http"]:
            other = ", ".join(f"{k} {v}" for k, v in r["other"].items()) or "0"
            lines.append(f"| `{run['binary']}` | {r['flood']} | {r['checks']} | {r['answered']} | "
                         f"{r['share']:.1%} | {r['answered'] / calm if calm else 0:.2f}x | "
                         f"{r['503']} | {other} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |")
    lines += [
        "",
        "gRPC: `bench/rls_load` keeping 4 `ShouldRateLimit` calls in flight while one process "
        "opens connections as fast as it can, each sending HTTP/2's preface and then nothing; "
        "then SIGTERM, with the burst's connections closed:",
        "",
        "| service | burst | calls | errors | p50 ms | p99 ms | slowest ms | most descriptors held "
        "| stopped on SIGTERM |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        for r in run["grpc"]:
            stopped = run["stopped"] if r["burst"] != "none" else ""
            lines.append(f"| `{run['binary']}` | {r['burst']} | {r['requests']} | {r['errors']} | "
                         f"{r['p50_us'] / 1000:.1f} | {r['p99_us'] / 1000:.1f} | "
                         f"{r['max_us'] / 1000:.1f} | {r['descriptors']} | {stopped} |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()

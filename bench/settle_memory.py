#!/usr/bin/env python3
# bench/settle_memory.py HOURGLASS_BINARY [N]: what settlements cost in memcached (its own stats):
# N checks over 10 tenants of an event with settle: true, each settled, against the same unsettled.
import json, socket, subprocess, sys, time, urllib.request
HG = sys.argv[1]
def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def stats(port):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"stats\r\n"); out = b""
    while not out.endswith(b"END\r\n"): out += s.recv(65536)
    d = {}
    for line in out.decode().splitlines():
        p = line.split()
        if len(p) == 3: d[p[1]] = p[2]
    return int(d["curr_items"]), int(d["bytes"])
def run(settle, mport, hport, n):
    mc = subprocess.Popen(["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(mport), "-m", "64"])
    time.sleep(0.3)
    open("/tmp/settlemem.yaml", "w").write("events:\n  tokens:\n    limits: [100000000/m]\n    settle: true\n")
    sv = subprocess.Popen([HG, "--servers", f"127.0.0.1:{mport}", "serve", "--policy", "/tmp/settlemem.yaml", "--listen", f"127.0.0.1:{hport}"], stderr=subprocess.DEVNULL)
    time.sleep(0.8)
    base = stats(mport)
    for i in range(n):
        r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{hport}/v1/check", data=json.dumps({"event": "tokens", "feature": "tenant-%d" % (i % 10), "cost": 100}).encode()))
        d = json.loads(r.read())
        if settle:
            urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{hport}/v1/settle", data=json.dumps({"token": d["settle_token"], "actual": 50}).encode())).read()
    time.sleep(0.3)
    after = stats(mport)
    sv.terminate(); sv.wait(); mc.terminate(); mc.wait()
    return after[0] - base[0], after[1] - base[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
a = run(False, free(), free(), n); b = run(True, free(), free(), n)
print(f"{n} checks over 10 tenants, unsettled: {a[0]} items, {a[1]} bytes")
print(f"{n} checks over 10 tenants, each settled: {b[0]} items, {b[1]} bytes")
print(f"per settlement: {(b[0]-a[0])/n:.2f} items, {(b[1]-a[1])/n:.1f} bytes")

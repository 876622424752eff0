#!/usr/bin/env python3
# bench/penalty_memory.py HOURGLASS_BINARY: bytes and items per feature in memcached (its own stats) with and without a penalty:
# 500 features, 7 admitted-mode checks each under 5/m (5 admitted, a denial, a check after it).
import json, socket, subprocess, sys, time, urllib.request, os
def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def stats(port):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"stats\r\n"); data = b""
    while not data.endswith(b"END\r\n"): data += s.recv(65536)
    return {l.split()[1]: l.split()[2] for l in data.decode().splitlines() if l.startswith("STAT")}
hg = sys.argv[1]
for name, extra in [("no penalty", ""), ("block_for: 15m", "    block_for: 15m\n")]:
    open("/tmp/penmem.yaml", "w").write("events:\n  login:\n    limits: [5/m]\n" + extra)
    mc, port = free(), free()
    m = subprocess.Popen(["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(mc), "-U", "0"])
    time.sleep(0.3)
    base = stats(mc)
    s = subprocess.Popen([hg, "serve", "--policy", "/tmp/penmem.yaml", "--servers", f"127.0.0.1:{mc}",
                          "--listen", f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try: urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz"); break
        except Exception: time.sleep(0.1)
    for f in range(500):
        for _ in range(7):
            r = urllib.request.Request(f"http://127.0.0.1:{port}/v1/check", method="POST",
                data=json.dumps({"event": "login", "feature": f"user-{f}"}).encode())
            try: urllib.request.urlopen(r).read()
            except urllib.error.HTTPError as e: e.read()
    time.sleep(0.5)
    st = stats(mc)
    print(f"{name}: {int(st['bytes'])/500:.0f} B and {int(st['curr_items'])/500:.2f} items per feature")
    s.terminate(); s.wait(); m.terminate(); m.wait()

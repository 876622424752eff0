"""Throw-away servers for Python tests, on free loopback ports, each ready only once the process
started is the one listening (another test's server may take a port between our pick and our
bind; then ours exits and another port is tried).

    memcached = start_memcached()          # a subprocess.Popen; memcached.port
    serve = start_serve([binary, "serve", "--policy", policy], log_path)   # serve.port
"""
import os
import random
import socket
import subprocess
import time


def free_port():
    """A loopback port no server listens on, picked in 10000-32767: below the kernel's ephemeral
    range (32768 and up), where client sockets get their local ports, so only another server
    picking the same port can take it before ours binds it."""
    for _ in range(200):
        port = random.randint(10000, 32767)
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError("no free loopback port found in 10000-32767")


def memcached_pid(port):
    """The pid memcached on 127.0.0.1:PORT reports in its stats, or None when none answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"stats\r\n")
            reply = b""
            while not reply.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        return None
    for line in reply.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[:2] == ["STAT", "pid"]:
            return int(parts[2])
    return None


def _start_on_free_port(start, ours, taken=None):
    """A server on a free port, once it is ours: `start(port)` gives its Popen; `ours(port,
    process)` says whether the server on PORT is that process and ready (polled for 10 s while it
    runs). If not, it is stopped and another port tried: always without `taken`, else only while
    `taken(port)` says it exited because another server had taken the port. The Popen (with
    .port), or None after 20 ports or a failure `taken` does not explain."""
    for _ in range(20):
        port = free_port()
        process = start(port)
        for _ in range(100):
            if ours(port, process):
                process.port = port
                return process
            if process.poll() is not None:
                break
            time.sleep(0.1)
        process.kill()
        process.wait()
        if taken is not None and not taken(port):
            return None
    return None


def start_memcached(megabytes=64):
    """memcached on a free port (its Popen, with .port), ready once its stats report its pid."""
    user = ["-u", "root"] if os.geteuid() == 0 else []

    def start(port):
        return subprocess.Popen(["memcached", *user, "-l", "127.0.0.1", "-p", str(port),
                                 "-U", "0", "-t", "2", "-m", str(megabytes)])

    process = _start_on_free_port(start, lambda port, p: memcached_pid(port) == p.pid)
    if process is None:
        raise RuntimeError("could not start memcached on a free loopback port")
    return process


def _answers_ready(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def start_serve(command, log_path):
    """`command` (an `hourglass ... serve ...` line) with --listen 127.0.0.1:PORT added, its
    stderr appended to log_path: its Popen (with .port) once what it logged (not what the log held
    before) says it listens there and /readyz answers 200 (another server on the port would answer
    too). Raises with the log's end when it exits otherwise or is not ready in 10 s."""
    attempt = {"from": 0}  # where the log stood when the current attempt started

    def told(since=0):
        with open(log_path, "rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace")

    def start(port):
        with open(log_path, "ab") as log:
            attempt["from"] = log.tell()
            return subprocess.Popen([*command, "--listen", f"127.0.0.1:{port}"], stderr=log)

    def ours(port, _):
        return (f"listening on 127.0.0.1:{port} " in told(attempt["from"]) and
                _answers_ready(port))

    def taken(port):
        return (f"cannot listen on 127.0.0.1:{port}: Address already in use" in
                told(attempt["from"]))

    process = _start_on_free_port(start, ours, taken)
    if process is None:
        raise RuntimeError(f"hourglass serve did not become ready:\n{told()[-2000:]}")
    return process

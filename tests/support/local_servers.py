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


def _stop(process):
    process.kill()
    process.wait()


def start_memcached(megabytes=64):
    """memcached on a free port (its Popen, with .port), ready once its stats report its pid."""
    user = ["-u", "root"] if os.geteuid() == 0 else []
    for _ in range(20):
        port = free_port()
        process = subprocess.Popen(["memcached", *user, "-l", "127.0.0.1", "-p", str(port),
                                    "-U", "0", "-t", "2", "-m", str(megabytes)])
        for _ in range(100):
            if memcached_pid(port) == process.pid:
                process.port = port
                return process
            if process.poll() is not None:
                break
            time.sleep(0.05)
        _stop(process)
    raise RuntimeError("could not start memcached on a free loopback port")


def _answers_ready(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def start_serve(command, log_path):
    """`command` (an `hourglass ... serve ...` line) with --listen 127.0.0.1:PORT added, its
    stderr appended to log_path: its Popen (with .port) once its own log says it listens there and
    /readyz answers 200. Raises with the log's end when it exits otherwise or is not ready in
    10 s."""
    for _ in range(20):
        port = free_port()
        with open(log_path, "a") as log:
            process = subprocess.Popen([*command, "--listen", f"127.0.0.1:{port}"], stderr=log)
        for _ in range(100):
            with open(log_path) as log:
                listening = f"listening on 127.0.0.1:{port} " in log.read()
            if listening and _answers_ready(port):
                process.port = port
                return process
            if process.poll() is not None:
                break
            time.sleep(0.1)
        with open(log_path) as log:
            told = log.read()
        if process.poll() is None:
            _stop(process)
            raise RuntimeError(f"hourglass serve was not ready in 10 s:\n{told[-2000:]}")
        if f"cannot listen on 127.0.0.1:{port}: Address already in use" not in told:
            raise RuntimeError(f"hourglass serve exited:\n{told[-2000:]}")
    raise RuntimeError("no free loopback port for hourglass serve")

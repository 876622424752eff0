#!/usr/bin/env python3
"""docs/openapi.yaml against a real `hourglass serve`: starts memcached and the service on free
loopback ports, sends real requests for every documented path (answers 200, 204, 400, 401, 403,
404, 429 and 503 among them), and validates each answer's status and JSON body against the
schema the document gives for it (python3-jsonschema, JSON Schema 2020-12 as OpenAPI 3.1 uses).
An answer the document does not describe fails the test, and so does a documented path no
request reached.

    openapi_test.py HOURGLASS_BINARY SOURCE_DIR
"""
import http.client
import json
import os
import sys
import tempfile
import urllib.parse

import jsonschema
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from local_servers import start_memcached, start_serve  # noqa: E402


class Contract:
    """The document, and which of its paths real answers have reached."""

    def __init__(self, path):
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        self.reached = set()
        self.failures = []

    def _resolve(self, node):
        while "$ref" in node:
            name = node["$ref"].split("/")
            node = self.doc
            for part in name[1:]:
                node = node[part]
        return node

    def check(self, template, method, status, headers, body):
        self.reached.add(template)
        where = f"{method.upper()} {template} -> {status}"
        operation = self.doc["paths"][template][method]
        response = operation["responses"].get(str(status))
        if response is None:
            self.failures.append(f"{where}: status not documented; body {body[:200]!r}")
            return
        response = self._resolve(response)
        content = response.get("content")
        if content is None:
            if body:
                self.failures.append(f"{where}: documented without a body, got {body[:200]!r}")
            return
        media = headers.get("content-type", "").split(";")[0]
        if media not in content:
            self.failures.append(f"{where}: content type {media!r} not among {list(content)}")
            return
        schema = content[media].get("schema", {})
        if media != "application/json":
            return
        wrapper = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": self.doc["components"],
            **schema,
        }
        try:
            jsonschema.validate(json.loads(body), wrapper,
                                cls=jsonschema.Draft202012Validator)
        except (jsonschema.ValidationError, ValueError) as e:
            message = e.message if isinstance(e, jsonschema.ValidationError) else str(e)
            self.failures.append(f"{where}: {message}; body {body[:300]!r}")

    def unreached(self):
        return sorted(set(self.doc["paths"]) - self.reached)


class Service:
    def __init__(self, port, token):
        self.port = port
        self.token = token

    def request(self, method, target, body=None, headers=None, admin=False):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        headers = dict(headers or {})
        if admin:
            headers["Authorization"] = "Bearer " + self.token
        data = json.dumps(body) if isinstance(body, (dict, list)) else body
        connection.request(method, target, body=data, headers=headers)
        r = connection.getresponse()
        text = r.read().decode("utf-8")
        answer = (r.status, {k.lower(): v for k, v in r.getheaders()}, text)
        connection.close()
        return answer


def main():
    binary, source = sys.argv[1], sys.argv[2]
    contract = Contract(os.path.join(source, "docs", "openapi.yaml"))
    work = tempfile.mkdtemp(prefix="hourglass-openapi-")
    policy = os.path.join(work, "policy.yaml")
    with open(policy, "w") as f:
        f.write("events:\n"
                "  signup:\n    limits: [2/m, 10/d]\n    mode: attempts\n"
                "    overrides:\n      vip: {limits: [100/m]}\n"
                "  url_shorten:\n    limits: [1/m]\n    feature: ip\n"
                "  trial:\n    limits: [1/m]\n    shadow: true\n"
                "  closed:\n    limits: [5/m]\n    on_store_failure: closed\n"
                "  llm:\n    limits: [100/m]\n    settle: true\n"
                "    request_limits: {max_hits: 1000, max_window: 1h}\n"
                "  login:\n    limits: [1/m]\n    block_for: 10m\n")
    token = os.path.join(work, "token")
    with open(token, "w") as f:
        f.write("tok\n")
    memcached = start_memcached()
    memcached_port = memcached.port
    try:
        serve = start_serve([binary, "serve", "--policy", policy,
                             "--servers", f"127.0.0.1:{memcached_port}",
                             "--admin-token-file", token, "--timeout-ms", "5000"],
                            os.path.join(work, "serve.log"))
    except Exception:
        memcached.kill()
        memcached.wait()
        raise
    service = Service(serve.port, "tok")
    try:
        exercise(service, contract, memcached, memcached_port)
    finally:
        serve.kill()
        memcached.kill()
        serve.wait()
        memcached.wait()
    unreached = contract.unreached()
    for failure in contract.failures:
        print("openapi: " + failure)
    if unreached:
        print("openapi: documented paths no request reached: " + ", ".join(unreached))
    if contract.failures or unreached:
        sys.exit(1)
    print(f"openapi: every answer matched docs/openapi.yaml ({len(contract.reached)} paths)")


def exercise(service, contract, memcached, memcached_port):
    q = urllib.parse.urlencode

    def call(template, method, target, body=None, headers=None, admin=False, expect=None):
        status, answer_headers, text = service.request(method.upper(), target, body, headers,
                                                       admin)
        if expect is not None and status != expect:
            contract.failures.append(f"{method.upper()} {target}: expected {expect}, got "
                                     f"{status} {text[:200]!r}")
        contract.check(template, method, status, answer_headers, text)
        return status, answer_headers, text

    check = "/v1/check"
    call(check, "post", check, {"event": "signup", "feature": "ann\u00e9"}, expect=200)
    call(check, "post", check, {"event": "signup", "feature": "ann\u00e9", "cost": 2}, expect=429)
    call(check, "post", check, {"checks": [{"event": "signup", "feature": "bob"},
                                           {"event": "url_shorten", "feature": "2001:db8::1"}]},
         expect=200)
    call(check, "post", check, {"event": "trial", "feature": "t"}, expect=200)
    call(check, "post", check, {"event": "trial", "feature": "t"}, expect=200)  # shadow_denied
    call(check, "post", check, {"event": "signup", "feature": "x", "cots": 1}, expect=400)
    call(check, "post", check, {"event": "url_shorten", "feature": "not an address"}, expect=400)
    call(check, "post", check, {"event": "sigup", "feature": "x"}, expect=404)
    call(check, "post", check, {"event": "signup", "feature": "zed", "record": False},
         expect=200)
    _, _, llm = call(check, "post", check,
                     {"event": "llm", "feature": "t1", "cost": 50, "limits": ["500/m", "900/h"]},
                     expect=200)
    call(check, "post", check, {"event": "signup", "feature": "x", "limits": ["5/m"]},
         expect=400)
    call(check, "post", check, {"event": "login", "feature": "eve"}, expect=200)
    call(check, "post", check, {"event": "login", "feature": "eve"}, expect=429)  # strikes
    call(check, "post", check, {"event": "login", "feature": "eve"}, expect=429)  # blocked
    settle = "/v1/settle"
    token = json.loads(llm)["settle_token"]
    _, _, unsettled = call(check, "post", check, {"event": "llm", "feature": "t1", "cost": 5},
                           expect=200)
    llm_late = json.loads(unsettled)["settle_token"]
    call(settle, "post", settle, {"token": token, "actual": 73}, expect=200)
    call(settle, "post", settle, {"token": token, "actual": 73}, expect=409)
    call(settle, "post", settle, {"token": "x" + token, "actual": 0}, expect=400)
    call(settle, "post", settle,
         {"event": "llm", "feature": "t1", "at": 1, "cost": 1, "actual": 0}, expect=400)
    # A body over the limit is refused from its Content-Length, before it is sent (sending it
    # whole could meet a closed connection).
    call(check, "post", check, "{}", headers={"Content-Length": "300000"}, expect=413)
    auth = "/v1/auth/{event}"
    ip = {"X-Real-IP": "198.51.100.7"}
    call(auth, "get", "/v1/auth/url_shorten", headers=ip, expect=204)
    call(auth, "get", "/v1/auth/url_shorten", headers=ip, expect=403)
    call(auth, "get", "/v1/auth/url_shorten", expect=400)
    call(auth, "get", "/v1/auth/nosuch", headers=ip, expect=404)
    count = "/v1/count"
    call(count, "get", count + "?" + q({"event": "signup", "feature": "ann\u00e9"}), expect=200)
    call(count, "get", count + "?" + q([("event", "signup"), ("feature", "bob"),
                                        ("window", "10s"), ("window", "1h")]), expect=200)
    call(count, "get", count + "?" + q({"event": "signup", "feature": "b", "window": "9x"}),
         expect=400)
    call(count, "get", count + "?" + q({"event": "nosuch", "feature": "b"}), expect=404)
    call(count, "get", count + "?" + q({"event": "login", "feature": "eve"}), expect=200)
    inspect = "/v1/inspect"
    call(inspect, "get", inspect + "?" + q({"event": "signup", "feature": "bob"}), expect=200)
    call(inspect, "get", inspect + "?" + q({"event": "signup"}), expect=400)
    call(inspect, "get", inspect + "?" + q({"event": "login", "feature": "eve"}), expect=200)
    hit = "/v1/hit"
    call(hit, "post", hit, {"event": "signup", "feature": "carol", "cost": 3}, admin=True,
         expect=200)
    call(hit, "post", hit, {"event": "signup", "feature": "carol"}, expect=401)
    call(hit, "post", hit, {"event": "signup"}, admin=True, expect=400)
    counters = "/v1/counters"
    call(counters, "delete", counters + "?" + q({"event": "signup", "feature": "carol"}),
         admin=True, expect=200)
    call(counters, "delete", counters + "?" + q({"event": "signup", "feature": "carol"}),
         expect=401)
    top = "/v1/top"
    call(top, "get", top + "?" + q({"event": "signup"}), admin=True, expect=200)
    call(top, "get", top + "?" + q({"event": "signup", "by": "hits", "window": "15m", "n": 3}),
         admin=True, expect=200)
    call(top, "get", top + "?" + q({"event": "signup", "window": "16m"}), admin=True, expect=400)
    call(top, "get", top + "?" + q({"event": "nosuch"}), admin=True, expect=404)
    call(top, "get", top + "?" + q({"event": "signup"}), expect=401)
    call("/v1/policy", "get", "/v1/policy", admin=True, expect=200)
    call("/v1/policy", "get", "/v1/policy", expect=401)
    call("/healthz", "get", "/healthz", expect=200)
    call("/readyz", "get", "/readyz", expect=200)
    call("/metrics", "get", "/metrics", expect=200)
    call("/ui", "get", "/ui", expect=200)
    # The store gone: a check is answered by its failure mode (degraded, with the error), other
    # calls are 503.
    memcached.kill()
    memcached.wait()
    call(check, "post", check, {"event": "signup", "feature": "dan"}, expect=200)
    _, headers, _ = call(check, "post", check, {"event": "closed", "feature": "dan"}, expect=429)
    if "hourglass-degraded" not in headers:
        contract.failures.append("a degraded answer without Hourglass-Degraded")
    call(count, "get", count + "?" + q({"event": "signup", "feature": "dan"}), expect=503)
    call(settle, "post", settle, {"token": llm_late, "actual": 90}, expect=503)
    call("/readyz", "get", "/readyz", expect=503)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A shorten-URL app in Python that asks `hourglass serve` before doing any work.

POST /shorten {"url": "...", "email": "..."} -> 201 {"short": "..."}, or 429 with the service's
Retry-After when the client address or the account is over its limits. Both limits are checked
in one call ({"checks": [...]}): if either denies, neither is counted.

    python3 shorten_app.py --port 5000 --hourglass http://127.0.0.1:8080
"""
import argparse
import hashlib

import requests
from flask import Flask, jsonify, request

app = Flask(__name__)
hourglass = requests.Session()  # keep-alive to the service
HOURGLASS_URL = "http://127.0.0.1:8080"


@app.post("/shorten")
def shorten():
    body = request.get_json(silent=True) or {}
    url, email = body.get("url"), body.get("email")
    if not isinstance(url, str) or not isinstance(email, str):
        return jsonify(error='send {"url": "...", "email": "..."}'), 400
    checks = {"checks": [
        {"event": "url_shorten", "feature": request.remote_addr},
        {"event": "url_shorten_account", "feature": email},
    ]}
    try:
        decision = hourglass.post(f"{HOURGLASS_URL}/v1/check", json=checks, timeout=2)
    except requests.RequestException as e:
        return jsonify(error=f"rate limiter unreachable: {e}"), 503
    if decision.status_code == 429:
        response = jsonify(error="rate limited", decision=decision.json())
        response.status_code = 429
        response.headers["Retry-After"] = decision.headers.get("Retry-After", "1")
        return response
    if decision.status_code != 200:
        return jsonify(error=decision.json().get("error", "rate limiter error")), 502
    short = hashlib.sha256(url.encode()).hexdigest()[:8]
    return jsonify(short=f"https://sho.rt/{short}"), 201


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--hourglass", default=HOURGLASS_URL, help="the service's base URL")
    args = parser.parse_args()
    HOURGLASS_URL = args.hourglass
    app.run(host="127.0.0.1", port=args.port)

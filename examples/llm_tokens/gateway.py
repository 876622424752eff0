#!/usr/bin/env python3
"""An LLM gateway's token budget on `hourglass serve`: check with an estimate, settle the truth.

A completion's cost is only known once the model has answered. The gateway checks the tenant's
budget with an estimate (the prompt's tokens plus max_tokens), calls the model if it fits, then
settles the decision with the tokens the model really used (POST /v1/settle with the decision's
"settle_token"): every window of the budget then counts the true cost, at the decision's own
second, once however often the settlement is sent.

    python3 gateway.py --hourglass http://127.0.0.1:8080 [--plan 30000/m --plan 500000/d]

runs a demonstration: one tenant sends requests until its per-minute budget refuses one, and the
script prints each decision, each settlement and the budget hourglass counts. Standard library
only.
"""
import argparse
import json
import random
import sys
import urllib.error
import urllib.parse
import urllib.request

HOURGLASS_URL = "http://127.0.0.1:8080"
EVENT = "llm_tokens"


def call(method, path, body=None):
    """(status, headers, JSON body) of a request to the service."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(HOURGLASS_URL + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.headers, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, e.headers, json.load(e)


def estimate_tokens(prompt, max_tokens):
    return max(1, len(prompt) // 4) + max_tokens  # about 4 characters a token


def fake_model(prompt, max_tokens, rng):
    """Stands in for the model: the tokens the completion really used."""
    return max(1, len(prompt) // 4) + rng.randint(0, max_tokens)


def complete(tenant, prompt, max_tokens, plan, rng):
    """One completion under the tenant's budget: (answered, what happened)."""
    estimate = estimate_tokens(prompt, max_tokens)
    check = {"event": EVENT, "feature": tenant, "cost": estimate}
    if plan:
        check["limits"] = plan  # the tenant's own plan, within the policy's request_limits
    status, headers, decision = call("POST", "/v1/check", check)
    if status == 429:
        return False, f"refused: estimate {estimate} over budget, retry in " \
                      f"{headers.get('Retry-After')} s"
    if status != 200:
        raise RuntimeError(f"hourglass answered {status}: {decision}")
    used = fake_model(prompt, max_tokens, rng)
    status, _, settled = call("POST", "/v1/settle",
                              {"token": decision["settle_token"], "actual": used})
    if status == 409:
        return True, f"estimate {estimate}, used {used} (settled before: a retry)"
    if status != 200:
        raise RuntimeError(f"settle answered {status}: {settled}")
    return True, f"estimate {estimate}, used {used} (settled {settled['delta']:+d})"


def main():
    global HOURGLASS_URL
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hourglass", default=HOURGLASS_URL, help="the service's base URL")
    parser.add_argument("--tenant", default="tenant-42")
    parser.add_argument("--plan", action="append", default=[],
                        help="the tenant's own limit (repeatable), e.g. 30000/m")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    HOURGLASS_URL = args.hourglass.rstrip("/")
    rng = random.Random(args.seed)
    used_total = 0
    for i in range(1, 200):
        prompt = "Summarise this document. " * rng.randint(20, 200)
        answered, what = complete(args.tenant, prompt, 1000, args.plan, rng)
        print(f"request {i}: {what}")
        if not answered:
            break
        used_total += int(what.split("used ")[1].split(" ")[0])
    query = urllib.parse.urlencode([("event", EVENT), ("feature", args.tenant),
                                    ("window", "1m"), ("window", "1d")])
    _, _, counts = call("GET", "/v1/count?" + query)
    minute = counts["windows"][0]["count"]
    print(f"tokens used {used_total}; hourglass counts {minute} in the last minute, "
          f"{counts['windows'][1]['count']} today")
    return 0 if minute == used_total else 1


if __name__ == "__main__":
    sys.exit(main())

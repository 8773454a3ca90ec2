"""Walks every operation of the served OpenAPI document on ONE keep-alive connection
(a single `requests.Session`, which never retries), as scripts on a LAN do, and counts
connections the server dropped without a word.

usage: keepalive_walk.py BASE_URL MIN_REQUESTS [VALID_TOKEN ...]

Each operation is called with no token, a garbage token, a forged `alg: none` JWT and
every valid token given, each with no body, a small JSON body and a 70 KB body. Path
parameters get a placeholder. Prints one JSON line:
{"requests": N, "errors": N, "statuses": {...}, "first_errors": [...]}
and exits 1 when any request failed at the transport level.
"""

import base64
import json
import sys

import requests
import yaml


def b64(obj):
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def forged_jwt():
    header = b64({"alg": "none", "typ": "JWT"})
    claims = b64({"sub": "00000000-0000-0000-0000-000000000000", "exp": 4102444800})
    return f"{header}.{claims}."


def operations(doc):
    for path, item in doc.get("paths", {}).items():
        for method in ("get", "post", "put", "patch", "delete", "head"):
            if method in item:
                concrete = path
                while "{" in concrete:
                    start = concrete.index("{")
                    end = concrete.index("}", start)
                    concrete = concrete[:start] + "x0" + concrete[end + 1 :]
                yield method.upper(), concrete


def main():
    base, minimum = sys.argv[1].rstrip("/"), int(sys.argv[2])
    tokens = [None, "garbage-token", forged_jwt()] + sys.argv[3:]
    session = requests.Session()
    doc = yaml.safe_load(session.get(base + "/openapi.yaml", timeout=30).text)
    ops = [op for op in operations(doc) if op[1] != "/api/sync"]
    small = json.dumps({"text": "hello", "name": "x"}).encode()
    big = json.dumps({"text": "y" * 70_000}).encode()
    bodies = [None, small, big]
    count, errors, statuses, first = 0, 0, {}, []
    while count < minimum:
        for method, path in ops:
            for token in tokens:
                for body in bodies:
                    headers = {}
                    if token:
                        headers["Authorization"] = f"Bearer {token}"
                    if body is not None:
                        headers["Content-Type"] = "application/json"
                    try:
                        resp = session.request(
                            method, base + path, data=body, headers=headers, timeout=30
                        )
                        resp.content  # read it whole, as a script would
                        statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
                    except requests.RequestException as e:
                        errors += 1
                        if len(first) < 10:
                            first.append(f"{method} {path}: {e!r}")
                    count += 1
        if not ops:
            break
    print(json.dumps({"requests": count, "errors": errors,
                      "statuses": {str(k): v for k, v in sorted(statuses.items())},
                      "first_errors": first}))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

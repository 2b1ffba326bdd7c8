"""Part of `just bench`: how soon a host is woken for work another host queued.

Usage: wakeup.py A_URL TOKEN B_METRICS_URL N

Host A runs no workers; host B polls only every ten minutes, so each of the N
documents A creates and sends (one at a time, 50 ms apart) is imported and rendered
on B after a wake-up from the database. Prints the wake-up delay B measured
(esign_queue_wakeup_delay_seconds: from A's commit to B's wake-up) as p50/p99, read
with prometheus_client's exposition parser.
"""

import json
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

a_url, token, metrics_url, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def call(method, path, body=None):
    req = urllib.request.Request(
        a_url + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": "Bearer " + token, "content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def status(doc_id):
    return call("GET", f"/v1/documents/{doc_id}")["status"]


ids = []
for i in range(n):
    doc = call("POST", "/v1/documents", {"name": f"wake {i}", "recipients": [{"email": f"w{i}@example.com"}]})
    call("POST", f"/v1/documents/{doc['id']}/send", {})
    ids.append(doc["id"])
    time.sleep(0.05)
deadline = time.time() + 120
for doc_id in ids:
    while status(doc_id) != "sent":
        assert time.time() < deadline, f"{doc_id} was not sent in 120 s"
        time.sleep(0.05)

text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
buckets = []
for family in text_string_to_metric_families(text):
    if family.name == "esign_queue_wakeup_delay_seconds":
        for s in family.samples:
            if s.name.endswith("_bucket"):
                buckets.append((float(s.labels["le"]), s.value))
buckets.sort()
total = buckets[-1][1]


def quantile(q):
    for le, count in buckets:
        if count >= q * total:
            return le
    return float("inf")


print(
    f"  {int(total)} wake-ups on host B for {n} documents queued on host A: "
    f"p50 <= {quantile(0.5) * 1000:.1f} ms, p99 <= {quantile(0.99) * 1000:.1f} ms "
    "(bucket bounds; goal p99 <= 50 ms; before: polled every 1 000 ms)"
)

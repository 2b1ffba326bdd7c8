"""Part of `just bench`: the store counters of running hosts since the last call.

Usage: store_counters.py STATE_FILE METRICS_URL...

Reads esign_store_commits_total, esign_store_conflicts_total (by `at` and `cause`)
and esign_store_round_trips from each host's metrics page (prometheus_client's
parser), sums them over the hosts, subtracts what STATE_FILE says the last call saw,
and prints re-runs per commit, their causes, and round trips per commit.
"""

import json
import os
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

state_file, urls = sys.argv[1], sys.argv[2:]
now = {"commits": 0.0, "read": 0.0, "commit": 0.0, "trips": 0.0, "trip_count": 0.0}
for url in urls:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "esign_store_commits_total":
                now["commits"] += s.value
            elif s.name == "esign_store_conflicts_total":
                now[s.labels["at"]] += s.value
                cause = "cause " + s.labels.get("cause", "")
                now[cause] = now.get(cause, 0.0) + s.value
            elif s.name == "esign_store_round_trips_sum":
                now["trips"] += s.value
            elif s.name == "esign_store_round_trips_count":
                now["trip_count"] += s.value
before = json.load(open(state_file)) if os.path.exists(state_file) else {}
d = {k: v - before.get(k, 0.0) for k, v in now.items()}
json.dump(now, open(state_file, "w"))
reruns = d["read"] + d["commit"]
print(
    f"re-runs per commit {reruns / max(d['commits'], 1):.3f} "
    f"({int(reruns)} re-runs: {int(d['read'])} at a read, {int(d['commit'])} at the commit; "
    f"{int(d['commits'])} commits; goal <= 0.05), "
    f"round trips per commit {d['trips'] / max(d['trip_count'], 1):.1f}"
)
causes = sorted((k[6:], int(v)) for k, v in d.items() if k.startswith("cause ") and v)
if causes:
    print("re-runs by cause: " + ", ".join(f"{c} {n}" for c, n in causes))

"""Parses an OpenMetrics page (standard input) with the Prometheus project's parser and
prints its samples as JSON: a list of {"name", "labels", "value"} (tests/running.rs).
The parser refuses anything that is not valid OpenMetrics text (exit status 1)."""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        samples.append({"family": family.name, "type": family.type, "name": s.name,
                        "labels": s.labels, "value": s.value})
print(json.dumps(samples))

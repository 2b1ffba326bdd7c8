"""Checks an audit trail's hash chain with an independent RFC 8785 implementation.

Reads the JSON of GET /v1/documents/{id}/log on stdin; prints the index of the first
entry that does not check out, or -1 when the whole chain holds.
"""
import hashlib
import json
import sys

import rfc8785


def main():
    log = json.load(sys.stdin)
    prev = ""
    for i, entry in enumerate(log):
        h = entry.pop("hash")
        want = hashlib.sha256(prev.encode() + b"\n" + rfc8785.dumps(entry)).hexdigest()
        if entry["prev_hash"] != prev or h != want:
            print(i)
            return
        prev = h
    print(-1)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Part of `just bench` (bench/run.sh): an online backup of a running esign while wrk
# keeps creating documents (4 connections), the restore of that backup, and
# `esign admin check` online (through the server) and offline (on the restored copy).
# Prints one row: documents, store size, backup time, how long writes waited (the
# manifest's figure, and the slowest write wrk saw), restore time, check times.
# Usage: bench/backup.sh URL TOKEN DATA_DIR WORK_DIR
set -euo pipefail
URL=$1 TOKEN=$2 DATA=$3 WORK=$4
BIN=${ESIGN_BIN:-target/release/esign}
since() { python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$1"; }

wrk -t1 -c4 -d600s --latency -s bench/post_document.lua \
    -H "authorization: Bearer $TOKEN" "$URL/v1/documents" >"$WORK/wrk-backup.txt" &
WRK=$!
sleep 1
t=$(date +%s.%N)
$BIN admin --data-dir "$DATA" backup --to "$WORK/backup" >"$WORK/manifest.json" 2>/dev/null
backup_s=$(since "$t")
sleep 1
kill -INT "$WRK"; wait "$WRK" || true
read -r docs bytes pause < <(python3 - "$WORK/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(m["tables"]["esign_kv"]["entries"], sum(t["bytes"] for t in m["tables"].values()), m["write_pause_ms"])
PY
)
max_write=$(awk '/^    Latency/ {print $4}' "$WORK/wrk-backup.txt")
t=$(date +%s.%N)
$BIN admin --data-dir "$WORK/restored" restore --from "$WORK/backup" >/dev/null 2>&1
restore_s=$(since "$t")
t=$(date +%s.%N)
online=$($BIN admin --data-dir "$DATA" check | tail -1)
online_s=$(since "$t")
t=$(date +%s.%N)
ESIGN_LOG=warn $BIN admin --data-dir "$WORK/restored" check >"$WORK/check.txt"
offline_s=$(since "$t")
echo "  $online"
printf "  %.2f GB, %s rows: backup %s s (writes waited %s ms; slowest write %s), restore %s s, check online %s s, offline %s s\n" \
    "$(python3 -c "print($bytes/1e9)")" "$docs" "$backup_s" "$pause" "$max_write" "$restore_s" "$online_s" "$offline_s"
rm -rf "$WORK/backup" "$WORK/restored"

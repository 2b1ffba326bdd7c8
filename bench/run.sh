#!/usr/bin/env bash
# `just bench`: throughput and latency of GET /v1/test for esign and for a plain hyper
# server returning the same JSON, at concurrency 1 and 64 (wrk, from one run), then the
# engine-call micro-benchmark (natively, then through jco), then the file work of a
# 20-page document through jco, natively and in wasmtime (hosts/js/bench.mjs,
# formats_bench), then esign on miniflare (hosts/workers): GET /v1/test beside this host,
# a 20-page document's life, one engine call's CPU time inside the Durable Object; then
# the document benchmarks (list at 1 000 and 100 000 documents; create from a 20-page PDF
# and send), then backups (bench/backup.sh: backup time and the longest write pause,
# restore, esign admin check, at 10 000 and 100 000 documents), then webhook deliveries
# per second and commit-to-first-attempt latency, then the signing page in headless
# Chromium (bytes before the first page is visible, opening a link to signed), then the
# sender's app (its script and style compressed, bytes before the documents list is
# usable on a phone, "Sign in" to a list of 100 documents), then
# sealing (a 20-page document's render, page images and seal; seals per second), then
# PostgreSQL (a throwaway cluster, tools/pg-cluster): the list at 100 000 documents
# there, create + send throughput on sled and on 1, 2 and 3 hosts sharing one database
# (16 writers in one entity, then spread over 16 entities; re-runs by cause), bulk
# send of 10 000 rows on sled and on PostgreSQL (bulk_bench),
# and how soon a host is woken for work another host queued (bench/wakeup.py), then
# the list at a million documents on sled and on PostgreSQL. Release
# build. Loopback only.
# `bench/run.sh scale` runs only the rows of the scaling work: GET /v1/test, MCP
# against REST, the engine call natively and as a component, then everything on
# PostgreSQL but the list at 100 000 (the list at a million covers it).
# `bench/run.sh calls` only the per-call rows: GET /v1/test, MCP against REST and the
# engine call.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${BENCH_DURATION:-10s}
SCOPE=${1:-all}

if ! command -v wrk >/dev/null || ! command -v chromedriver >/dev/null; then
    echo "installing wrk, chromium and chromium-driver (Debian packages)"
    apt-get update -qq && apt-get install -y -qq wrk chromium chromium-driver >/dev/null
fi
cargo build --release -p esign-host --bin esign --example plain_hyper --example engine_call --example docs_bench --example webhook_bench --example signing_bench --example app_bench --example seal_bench --example scale_bench --example bulk_bench --example formats_bench --example scripts_bench --example million_seed

WORK=$(mktemp -d)
cleanup() {
    kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true
    [ -n "${PGDIR:-}" ] && tools/pg-cluster stop "$PGDIR"
    rm -rf "$WORK"
}
trap cleanup EXIT

# Waits (at most 60 s) for "listening on URL" in file $1 and prints URL.
wait_url() {
    for _ in $(seq 600); do
        url=$(grep -o 'listening on http://[0-9.:]*' "$1" | head -1 | cut -d' ' -f3 || true)
        [ -n "$url" ] && { echo "$url"; return; }
        sleep 0.1
    done
    echo "server did not start: $(cat "$1")" >&2; exit 1
}

ESIGN_ADMIN_EMAIL=bench@example.com ESIGN_ADMIN_PASSWORD=bench-password ESIGN_LOG=warn \
    target/release/esign serve --listen 127.0.0.1:0 --data-dir "$WORK/data" \
    --token-min-interval-ms 0 >"$WORK/esign.out" 2>&1 &
ESIGN_PID=$!
ESIGN=$(wait_url "$WORK/esign.out")
target/release/examples/plain_hyper 127.0.0.1:0 >"$WORK/plain.out" 2>&1 &
PLAIN=$(wait_url "$WORK/plain.out")

TOKEN=$(curl -s -X POST "$ESIGN/v1/auth" -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"bench-password"}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
curl -sf "$ESIGN/v1/test" -H "authorization: Bearer $TOKEN" >/dev/null

# run URL CONNECTIONS -> "rps p50 p99" (latencies in ms)
run() {
    local threads=$(( $2 < 2 ? 1 : 2 ))
    wrk -t"$threads" -c"$2" -d"$DURATION" --latency -H "authorization: Bearer $TOKEN" "$1/v1/test" >"$WORK/wrk.txt"
    summarize "$WORK/wrk.txt"
}

# summarize WRK_OUTPUT -> "rps p50 p99"; fails on any non-2xx answer.
summarize() {
    python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(label):
    m = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s)\s*$" % label, text, re.M)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
if non2xx:
    sys.exit("wrk saw %s non-2xx responses" % non2xx.group(1))
print("%.0f %.3f %.3f" % (rps, ms("50"), ms("99")))
PY
}

# run_path URL CONNECTIONS TOKEN [LUA] -> "rps p50 p99" (latencies in ms)
run_path() {
    local threads=$(( $2 < 2 ? 1 : 2 ))
    local script=()
    [ -n "${4:-}" ] && script=(-s "$4")
    wrk -t"$threads" -c"$2" -d"$DURATION" --latency "${script[@]}" -H "authorization: Bearer $3" "$1" >"$WORK/wrk.txt"
    summarize "$WORK/wrk.txt"
}

echo
echo "GET /v1/test, wrk $DURATION per row, $(nproc) cores shared by server and load generator"
printf "%-12s %5s %12s %10s %10s\n" server conns "req/s" "p50 ms" "p99 ms"
for c in 1 64; do
    read -r e_rps e50 e99 < <(run "$ESIGN" "$c")
    read -r p_rps p50 p99 < <(run "$PLAIN" "$c")
    printf "%-12s %5s %12s %10s %10s\n" esign "$c" "$e_rps" "$e50" "$e99"
    printf "%-12s %5s %12s %10s %10s\n" plain-hyper "$c" "$p_rps" "$p50" "$p99"
    goal=$(( c < 2 ? 6 : 3 ))
    python3 -c "print('esign / plain-hyper throughput at c=$c: %.2fx (goal >= 0.${goal}x)' % ($e_rps / $p_rps))"
done

# MCP: tools/call get_document_status (2026-07-28, stateless) against the REST read it
# runs, GET /v1/documents/{id}/status, with a token got through the OAuth flow.
MCP_TOKEN=$(python3 bench/mcp_token.py "$ESIGN" bench@example.com bench-password)
DOC=$(curl -s -X POST "$ESIGN/v1/documents" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' -d '{"name":"MCP bench"}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
cat >"$WORK/mcp.lua" <<LUA
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2026-07-28"
wrk.headers["mcp-method"] = "tools/call"
wrk.headers["mcp-name"] = "get_document_status"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_document_status","arguments":{"document_id":"$DOC"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
LUA
curl -sf -X POST "$ESIGN/mcp" -H "authorization: Bearer $MCP_TOKEN" -H 'content-type: application/json' \
    -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tools/call' -H 'mcp-name: get_document_status' \
    -d "$(sed -n 's/^wrk.body = .\(.*\).$/\1/p' "$WORK/mcp.lua")" | grep -q '"isError":false'
echo
echo "MCP tools/call get_document_status vs REST GET /v1/documents/{id}/status, wrk $DURATION per row"
printf "%-12s %5s %12s %10s %10s\n" path conns "req/s" "p50 ms" "p99 ms"
for c in 1 16; do
    read -r r_rps r50 r99 < <(run_path "$ESIGN/v1/documents/$DOC/status" "$c" "$TOKEN" "")
    read -r m_rps m50 m99 < <(run_path "$ESIGN/mcp" "$c" "$MCP_TOKEN" "$WORK/mcp.lua")
    printf "%-12s %5s %12s %10s %10s\n" rest "$c" "$r_rps" "$r50" "$r99"
    printf "%-12s %5s %12s %10s %10s\n" mcp "$c" "$m_rps" "$m50" "$m99"
    python3 -c "print('MCP / REST p50 latency at c=$c: %.2fx (goal <= 1.3x)' % ($m50 / $r50))"
done
echo
target/release/examples/engine_call
echo
# `bench/run.sh calls` stops here.
[ "$SCOPE" = calls ] && exit 0
# `bench/run.sh scale` (just bench-scale) stops here and goes on with PostgreSQL.
if [ "$SCOPE" = all ]; then
# The same call through jco in Node.js (hosts/js), when Node is installed.
if command -v node >/dev/null; then
    [ -d hosts/js/node_modules ] || npm ci --prefix hosts/js --no-audit --no-fund --silent
    mkdir -p "$WORK/orders"
    ESIGN_BIN=target/release/esign ESIGN_SIGNING_DIR="$WORK/data/signing" FORMATS_BENCH_ORDERS="$WORK/orders" \
        node hosts/js/bench.mjs 2000 5
    echo
    # The same work orders natively and as the formats component in wasmtime.
    target/release/examples/formats_bench "$WORK/orders" 5
    echo
    # Text in every script against Latin only (issue 50).
    target/release/examples/scripts_bench 9
    echo
    # esign on Cloudflare Workers' runtime (hosts/workers on miniflare), beside this host.
    [ -d hosts/workers/node_modules ] || npm ci --prefix hosts/workers --no-audit --no-fund --silent
    ESIGN_BIN=target/release/esign ESIGN_ADMIN_EMAIL=bench@example.com ESIGN_ADMIN_PASSWORD=bench-password \
        ESIGN_TOKEN_MIN_INTERVAL_MS=0 ESIGN_BENCH=1 \
        npm --prefix hosts/workers run --silent dev -- --port 0 --persist "$WORK/workers" >"$WORK/workers.out" 2>&1 &
    WORKERS=$(wait_url "$WORK/workers.out")
    W_TOKEN=$(curl -s -X POST "$WORKERS/v1/auth" -H 'content-type: application/json' \
        -d '{"email":"bench@example.com","password":"bench-password"}' \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
    echo "GET /v1/test on miniflare (one Durable Object) and on this host, wrk $DURATION per row"
    printf "%-12s %5s %12s %10s %10s\n" server conns "req/s" "p50 ms" "p99 ms"
    for c in 1 16; do
        read -r w_rps w50 w99 < <(run_path "$WORKERS/v1/test" "$c" "$W_TOKEN" "")
        read -r e_rps e50 e99 < <(run "$ESIGN" "$c")
        printf "%-12s %5s %12s %10s %10s\n" workers "$c" "$w_rps" "$w50" "$w99"
        printf "%-12s %5s %12s %10s %10s\n" esign "$c" "$e_rps" "$e50" "$e99"
    done
    hosts/workers/node_modules/.bin/node hosts/workers/bench.mjs "$WORKERS" "$ESIGN" 500
    echo
fi
target/release/examples/docs_bench "$ESIGN" bench@example.com bench-password
echo
echo "== backups (bench/backup.sh): online backup while wrk writes, restore, esign admin check"
ESIGN_ADMIN_EMAIL=bench@example.com ESIGN_ADMIN_PASSWORD=bench-password ESIGN_LOG=warn \
    target/release/esign serve --listen 127.0.0.1:0 --data-dir "$WORK/small" \
    --token-min-interval-ms 0 >"$WORK/small.out" 2>&1 &
SMALL_PID=$!
SMALL=$(wait_url "$WORK/small.out")
DOCS_BENCH_SEED_ONLY=10000 target/release/examples/docs_bench "$SMALL" bench@example.com bench-password
echo " 10 000 documents:"
bash bench/backup.sh "$SMALL" "$(curl -s -X POST "$SMALL/v1/auth" -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"bench-password"}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')" "$WORK/small" "$WORK"
kill "$SMALL_PID"; wait "$SMALL_PID" 2>/dev/null || true
echo " ${DOCS_BENCH_LARGE:-100000} documents (docs_bench's store):"
bash bench/backup.sh "$ESIGN" "$TOKEN" "$WORK/data" "$WORK"
echo
ESIGN_BIN=target/release/esign target/release/examples/webhook_bench
echo
target/release/examples/signing_bench "$ESIGN" bench@example.com bench-password
echo
target/release/examples/app_bench "$ESIGN" bench@example.com bench-password

echo
echo "== sealing (in process, one thread)"
target/release/examples/seal_bench

fi
echo
echo "== PostgreSQL (a throwaway cluster on loopback, tools/pg-cluster)"
# Its own directory under /tmp: the server runs as `postgres`, which cannot enter $WORK.
PGDIR=$(mktemp -d)
PG=$(tools/pg-cluster start "$PGDIR" 55434)
if [ "$SCOPE" = all ]; then
# The sled store docs_bench seeded (100 000 documents) moves to PostgreSQL.
kill "$ESIGN_PID"; wait "$ESIGN_PID" 2>/dev/null || true
target/release/esign admin migrate --from "$WORK/data" --to "${PG}esign_list" | tail -1
ESIGN_LOG=warn target/release/esign serve --listen 127.0.0.1:0 --data-dir "$WORK/pg-list" \
    --store "${PG}esign_list" --token-min-interval-ms 0 >"$WORK/pg-list.out" 2>&1 &
PG_LIST_PID=$!
PG_LIST=$(wait_url "$WORK/pg-list.out")
echo "GET /v1/documents?filter=sent&limit=100 on PostgreSQL, one client, 500 requests"
DOCS_BENCH_LIST_ONLY=${DOCS_BENCH_LARGE:-100000} target/release/examples/docs_bench "$PG_LIST" bench@example.com bench-password
kill "$PG_LIST_PID"; wait "$PG_LIST_PID" 2>/dev/null || true
fi

# Create + send: sled on one host, then 1, 2 and 3 hosts on one database.
SECS=${BENCH_SCALE_SECS:-15}
start_host() { # NAME ARGS...: a server in the background (a job of this shell, so
    # cleanup stops it); its URL then comes from `wait_url "$WORK/NAME.out"`.
    local name=$1; shift
    ESIGN_ADMIN_EMAIL=bench@example.com ESIGN_ADMIN_PASSWORD=bench-password ESIGN_LOG=warn \
        target/release/esign serve --listen 127.0.0.1:0 --data-dir "$WORK/$name" \
        --token-min-interval-ms 0 "$@" >"$WORK/$name.out" 2>&1 &
}
login() {
    curl -s -X POST "$1/v1/auth" -H 'content-type: application/json' \
        -d '{"email":"bench@example.com","password":"bench-password"}' \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}
# entity_tokens URL DATA_DIR N -> N comma-separated tokens of the bench user, one per
# entity: its first entity and N-1 more (added by the admin CLI through the server).
entity_tokens() {
    local token user tokens
    token=$(login "$1")
    user=$(curl -s "$1/v1/users/me" -H "authorization: Bearer $token" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["user"]["id"])')
    tokens=$token
    for i in $(seq 2 "$3"); do
        entity=$(target/release/esign admin --data-dir "$2" entity add --name "Bench $i" \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
        target/release/esign admin --data-dir "$2" member add --user "$user" --entity "$entity" \
            --role admin >/dev/null
        tokens+=,$(curl -s "$1/v1/refresh/$entity" -H "authorization: Bearer $token" \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
    done
    echo "$tokens"
}
echo
echo "create + send, ${SECS} s per row, 16 clients round-robin over the hosts, in one entity and in 16"
start_host sled-scale
SLED_PID=$!
SLED=$(wait_url "$WORK/sled-scale.out")
target/release/examples/scale_bench "$(login "$SLED")" "$SECS" "$SLED" | sed 's/^/  sled:       /'
kill "$SLED_PID"; wait "$SLED_PID" 2>/dev/null || true
echo
echo "bulk send of ${BULK_BENCH_ROWS:-10000} rows (one template, a CSV): rows per second, and until the last invitation"
start_host sled-bulk
BULK_PID=$!
BULK=$(wait_url "$WORK/sled-bulk.out")
target/release/examples/bulk_bench "$BULK" "$(login "$BULK")" | sed 's/^/  sled:       /'
kill "$BULK_PID"; wait "$BULK_PID" 2>/dev/null || true
start_host pg-bulk --store "${PG}esign_bulk"
BULK_PID=$!
BULK=$(wait_url "$WORK/pg-bulk.out")
target/release/examples/bulk_bench "$BULK" "$(login "$BULK")" | sed 's/^/  PostgreSQL: /'
kill "$BULK_PID"; wait "$BULK_PID" 2>/dev/null || true
# Hosts join one at a time: each row runs with exactly the hosts it uses.
URLS=()
METRICS=()
for h in 1 2 3; do
    start_host "pg-h$h" --store "${PG}esign_scale" --metrics-listen "127.0.0.1:$((9470 + h))"
    URLS+=("$(wait_url "$WORK/pg-h$h.out")")
    METRICS+=("http://127.0.0.1:$((9470 + h))/metrics")
    if [ "$h" = 1 ]; then
        SPREAD_TOKENS=$(entity_tokens "${URLS[0]}" "$WORK/pg-h1" 16)
        SCALE_TOKEN=${SPREAD_TOKENS%%,*}
    fi
    rows=("$SCALE_TOKEN" "$SPREAD_TOKENS")
    # The first row starts from an empty database, whose indexes have a page or two
    # that every writer shares; it runs once more when the database holds documents.
    [ "$h" = 1 ] && rows=("$SCALE_TOKEN" "$SCALE_TOKEN" "$SPREAD_TOKENS")
    for tokens in "${rows[@]}"; do
        "${ESIGN_PYTHON:-python3}" bench/store_counters.py "$WORK/counters.json" "${METRICS[@]}" >/dev/null
        target/release/examples/scale_bench "$tokens" "$SECS" "${URLS[@]}" | sed 's/^/  PostgreSQL: /'
        "${ESIGN_PYTHON:-python3}" bench/store_counters.py "$WORK/counters.json" "${METRICS[@]}" | sed 's/^/              /'
    done
done
echo "  (all hosts, the database and the clients share this machine's cores)"
echo
echo "wake-ups: work queued on host A (no workers) started by host B (polling every 10 min)"
ESIGN_TEST_NO_WORKERS=true start_host wake-a --store "${PG}esign_wake"
WAKE_A=$(wait_url "$WORK/wake-a.out")
start_host wake-b --store "${PG}esign_wake" --shared-poll-ms 600000 --metrics-listen 127.0.0.1:9465
wait_url "$WORK/wake-b.out" >/dev/null
"${ESIGN_PYTHON:-python3}" bench/wakeup.py "$WAKE_A" "$(login "$WAKE_A")" http://127.0.0.1:9465/metrics 200

# The list at a million documents: 10 000 drafts made through the API (16 clients),
# copied under new ids by million_seed (the bulk path: a million through the API would
# take longer than everything else here) in the stopped sled store, measured there,
# then the same store moved to PostgreSQL and measured there.
MILLION=${BENCH_MILLION:-1000000}
echo
echo "GET /v1/documents?limit=100 at $MILLION documents, one client, 500 requests (goals: p99 <= 10 ms on sled, <= 50 ms on PostgreSQL)"
start_host million
MILLION_PID=$!
MILLION_URL=$(wait_url "$WORK/million.out")
DOCS_BENCH_DRAFTS=10000 target/release/examples/docs_bench "$MILLION_URL" bench@example.com bench-password
kill "$MILLION_PID"; wait "$MILLION_PID" 2>/dev/null || true
target/release/examples/million_seed "$WORK/million" "$MILLION"
start_host million
MILLION_PID=$!
MILLION_URL=$(wait_url "$WORK/million.out")
DOCS_BENCH_LIST_ONLY=$MILLION DOCS_BENCH_QUERY=limit=100 target/release/examples/docs_bench "$MILLION_URL" \
    bench@example.com bench-password | sed 's/^  /  sled: /'
kill "$MILLION_PID"; wait "$MILLION_PID" 2>/dev/null || true
migrate_start=$SECONDS
target/release/esign admin migrate --from "$WORK/million" --to "${PG}esign_million" | tail -1
echo "  (esign admin migrate took $((SECONDS - migrate_start)) s)"
start_host million-pg --store "${PG}esign_million"
MILLION_PG=$(wait_url "$WORK/million-pg.out")
DOCS_BENCH_LIST_ONLY=$MILLION DOCS_BENCH_QUERY=limit=100 target/release/examples/docs_bench "$MILLION_PG" \
    bench@example.com bench-password | sed 's/^  /  PostgreSQL: /'

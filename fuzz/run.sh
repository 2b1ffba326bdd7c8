#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds (default 30) from its corpus in
# fuzz/corpus/<target>, with the nightly toolchain and cargo-fuzz (installed from
# crates.io when missing). `just fuzz 600` for a longer local run: optimized, with
# AddressSanitizer. `run.sh SECONDS smoke` (what CI runs) builds without optimizations
# or sanitizer (the optimized build with ASan took about 8 of CI's minutes on a cold
# 2-core machine): the corpus is replayed and fuzzed for a few seconds, which catches
# a new panic, hang or runaway allocation in the parsers.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-30}"
build_flags=()
[ "${2:-}" = smoke ] && build_flags=(--dev --sanitizer none)
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: no nightly toolchain (rustup toolchain list); cargo-fuzz needs one" >&2
    exit 1
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version 0.13.2
# target:max_len (bytes per input)
for spec in engine_request:4096 multipart:8192 pdf_inspect:65536 docx_fill:16384; do
    target="${spec%%:*}"
    max_len="${spec##*:}"
    mkdir -p "corpus/$target"
    echo "== fuzz $target for ${seconds}s"
    cargo +nightly fuzz run "${build_flags[@]}" "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 2>&1 | grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|==|INFO: (Running|Loaded))|ERROR|panicked|SUMMARY" || true
    # A crash leaves an artifact and a non-zero status above; fail on the artifact.
    if compgen -G "artifacts/$target/*" >/dev/null; then
        echo "fuzz: $target found a failing input:" artifacts/"$target"/* >&2
        exit 1
    fi
done

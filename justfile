# Developer recipes. The README's two commands need only cargo; these are conveniences.

# Serve on http://127.0.0.1:8080 with data in ./esign-data.
serve *ARGS:
    cargo run -- serve {{ARGS}}

# Every test: engine unit tests natively, host unit tests, black-box suites.
test:
    cargo test

# Format check and lints, native and for the wasm component.
lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings
    cargo clippy -p esign-engine-component --target wasm32-wasip2 -- -D warnings
    # Apart from the engine: together, their std features would reach its no_std build.
    cargo clippy -p esign-wasi-store -p esign-wasi-adapter -p esign-formats-component --target wasm32-wasip2 -- -D warnings

# Build only the engine component and the formats component (what host/build.rs does).
component:
    cargo build -p esign-engine-component --target wasm32-wasip2 --profile component --target-dir target/engine-wasm
    RUSTFLAGS=-Ctarget-feature=+simd128 cargo build -p esign-formats-component --target wasm32-wasip2 --profile component --target-dir target/formats-wasm

# Benchmarks (release build; needs wrk: apt-get install wrk).
bench:
    bash bench/run.sh

# Only the scaling rows of `just bench`: MCP against REST, the engine call natively and
# as a component, then PostgreSQL (16 writers on 1, 2 and 3 hosts, in one entity and in
# 16, re-runs by cause, wake-ups) and the list at a million documents.
bench-scale:
    bash bench/run.sh scale

# Fuzz every target (fuzz/run.sh; nightly + cargo-fuzz), SECONDS each.
fuzz SECONDS="30":
    bash fuzz/run.sh {{SECONDS}}

# The engine's deterministic simulation over many seeds (CI runs seeds 1-10);
# ESIGN_SIM_SEED=S cargo test -p esign-engine --test simulation replays one.
simulate SEEDS="500":
    ESIGN_SIM_SEEDS={{SEEDS}} cargo test --release -p esign-engine --test simulation -- --nocapture

# Mutation testing of the engine's native tests (cargo install cargo-mutants): the
# files the tests issue names; caught/missed/timeout land in mutants.out/. CI does not
# run it (about 10 s a mutant on two cores). FILES narrows it, e.g. engine/src/auth.rs.
mutants FILES="engine/src/auth.rs engine/src/docs/blobs.rs engine/src/docs/mod.rs engine/src/docs/list.rs engine/src/recipients/acts.rs":
    ESIGN_SIM_SEEDS=2 cargo mutants -p esign-engine --timeout 120 $(for f in {{FILES}}; do printf -- '-f %s ' "$f"; done)

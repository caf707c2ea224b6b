# ptxc recipes. `just --list` shows them. Everything also works without `just`: each recipe is
# one or two plain commands.

# Provision the pinned NVIDIA reference tools (ptxas, nvdisasm, cuobjdump, nvcc) into target/cuda-tools.
tools:
    cargo run -q -p ptxc-reftools -- provision

# Run every test (what CI runs, without the lints).
test:
    cargo test --workspace

# Everything CI checks: rustfmt, clippy -D warnings, all tests.
ci:
    bash .ci/run

# Regenerate the files that hold real tool output: the nvcc-generated test kernels
# (tests/kernels/*.ptx, from the .cu sources with the pinned nvcc) and ptxas's golden listings
# (tests/golden/ptxas/, with the pinned ptxas and cuobjdump).
golden:
    tests/kernels/regen.sh
    cargo run -p ptxc-tests --bin golden

# Refresh ptxc's golden snapshots (tests/golden/ptxc/) after a deliberate change in its output.
bless:
    PTXC_BLESS=1 cargo test -p ptxc-tests --test golden

# Whole-process timing of ptxc (release) against ptxas: corpus files and generated kernels of
# 1k-100k instructions, median of RUNS runs, ratio and time per instruction.
bench RUNS="3":
    cargo build --release -p ptxc
    cargo run --release -p ptxc-tests --bin timing -- --runs {{RUNS}}

# Compile every PTX file of the project with two ptxc binaries and compare the outputs (a
# speed change must leave them byte-identical): just compare /tmp/ptxc-old target/release/ptxc
compare OLD NEW:
    tests/compare-binaries.sh {{OLD}} {{NEW}}

# Criterion benchmarks: frontend throughput (parse) and each pipeline stage (stages).
bench-stages:
    cargo bench -p ptxc

# Coverage-guided fuzzing of the frontend with cargo-fuzz (needs the nightly toolchain and
# `cargo install cargo-fuzz`); SECONDS bounds the run.
fuzz SECONDS="300":
    mkdir -p fuzz/corpus/frontend
    cp -n tests/kernels/*.ptx samples/*.ptx fuzz/corpus/frontend/ 2>/dev/null || true
    cargo +nightly fuzz run frontend -- -max_total_time={{SECONDS}}

# Compile a sample: just run samples/cluster_exchange.ptx --emit ast
run *ARGS:
    cargo run --release -- -arch sm_90a {{ARGS}}

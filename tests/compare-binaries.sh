#!/usr/bin/env bash
# compare-binaries.sh OLD NEW: compiles every PTX file the project has (the shared corpus, the
# samples, the test kernels, and the generated straight-line and looping kernels of 1k-100k
# instructions) with two ptxc binaries and compares what they produce: the cubin when both
# compile a file, the diagnostics when both reject it. Prints each file that differs and ends
# with `compare: files=N diff=M`; exits 1 when M > 0. This is how a change meant to be faster,
# not different, is checked ("byte-identical" in the docs' measurements).
#
#   cargo build --release -p ptxc && cp target/release/ptxc /tmp/ptxc-old   # before the change
#   ...change, rebuild...
#   tests/compare-binaries.sh /tmp/ptxc-old target/release/ptxc
set -uo pipefail
old=$1 new=$2
root=$(cd "$(dirname "$0")/.." && pwd)
gen=$root/target/gen
mkdir -p "$gen"
# The generated kernels, as the timing tool writes them (no ptxas run).
cargo run -q --release -p ptxc-tests --bin timing -- --write "$gen" --no-corpus \
    --sizes 1000,10000,16000,64000,100000 --shapes straight,loop >/dev/null || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 d=0
while IFS= read -r f; do
    n=$((n + 1))
    "$old" -arch sm_90a "$f" -o "$tmp/a.cubin" >/dev/null 2>"$tmp/a.err"
    ra=$?
    "$new" -arch sm_90a "$f" -o "$tmp/b.cubin" >/dev/null 2>"$tmp/b.err"
    rb=$?
    if [ "$ra" != "$rb" ]; then
        echo "exit status $ra -> $rb: $f"
        d=$((d + 1))
    elif [ "$ra" = 0 ]; then
        cmp -s "$tmp/a.cubin" "$tmp/b.cubin" || { echo "cubin differs: $f"; d=$((d + 1)); }
    else
        cmp -s "$tmp/a.err" "$tmp/b.err" || { echo "diagnostics differ: $f"; d=$((d + 1)); }
    fi
    rm -f "$tmp/a.cubin" "$tmp/b.cubin"
done < <( (find "$root/../shared/corpus" -name '*.ptx' 2>/dev/null
    ls "$root"/samples/*.ptx "$root"/tests/kernels/*.ptx "$gen"/*.ptx) | sort)
echo "compare: files=$n diff=$d"
[ "$d" = 0 ]

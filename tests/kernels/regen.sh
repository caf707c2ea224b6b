#!/usr/bin/env bash
# Regenerates tests/kernels/*.ptx from the .cu sources with the pinned nvcc 13.1
# (provisioned by `cargo run -p ptxc-reftools -- provision`). Run from anywhere:
#   tests/kernels/regen.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
eval "$(cargo run -q -p ptxc-reftools -- env)"
cd "$here"
for cu in *.cu; do
    ptx="${cu%.cu}.ptx"
    flags=(-arch=sm_90a -ptx -O3)
    # The debug kernel exercises the debug directives nvcc emits under -G.
    if [[ "$cu" == debug_* ]]; then flags=(-arch=sm_90a -ptx -G); fi
    "$NVCC" "${flags[@]}" "$cu" -o "$ptx"
    echo "  $cu -> $ptx (${flags[*]})"
done
"$NVCC" --version | tail -2 > NVCC_VERSION

#!/bin/bash
# Assemble the accepted corpus files and the cluster probes (folders 00-20) with the provisioned
# ptxas and list them with cuobjdump -sass, into $1 (default target/sass-work/out), for survey.py.
set -e
cd "$(dirname "$0")/../.."
eval "$(cargo run -q -p ptxc-reftools -- env)"
OUT=${1:-target/sass-work/out}
mkdir -p "$OUT"
S=../shared
{
  awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)if($i=="accepted_sm90a")c=i;next} $c=="yes"{print "'$S'/corpus/zluda/sm90a/"$1}' $S/corpus/zluda/MANIFEST.tsv
  awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)if($i=="accepted_by_ptxas_sm90a")c=i;next} $c=="yes"{print "'$S'/corpus/pyptx/"$1}' $S/corpus/pyptx/MANIFEST.tsv
  for d in $S/notes/probes/[0-2][0-9]_*; do ls $d/*.ptx 2>/dev/null | grep -v '\.sm_' || true; done
  ls tests/kernels/*.ptx 2>/dev/null || true
  ls tests/sass-probes/ptx/*.ptx 2>/dev/null || true
} | while read f; do
  b=$(echo "$f" | sed 's|^\.\./shared/||; s|/|__|g; s|\.ptx$||')
  if "$PTXAS" -arch sm_90a "$f" -o "$OUT/$b.cubin" 2>"$OUT/$b.log"; then
    "$CUOBJDUMP" -sass "$OUT/$b.cubin" > "$OUT/$b.sass"
  fi
done

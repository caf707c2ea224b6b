#!/usr/bin/env python3
"""The forms only ptxas -g / -O0 code has: `WARPSYNC.COLLECTIVE R, target` (and its `.ALL`
variant), `ENDCOLLECTIVE`, `F2F.BF16.F32`. Every bit 12-104 of a ptxas word (control bits
normalised) flipped and decoded by nvdisasm; lines show only the bits that change the text.
Then each form with a write and a read scoreboard (stall 2, bit 109 set). Writes debugforms.txt.

    cd tests/sass-probes && python3 debugforms.py

Base words: `ptxas -arch sm_90a -g` of zluda/shfl_sync_bfly_b32_pred (WARPSYNC.COLLECTIVE R4,
ENDCOLLECTIVE), pyptx/intrinsics-sm90__test_barrier_cluster (WARPSYNC.COLLECTIVE.ALL) and
zluda/uint_to_fp_bf16 (F2F.BF16.F32)."""
import os
from nvd import dis, setf, ctrl

HERE = os.path.dirname(os.path.abspath(__file__))
C = ctrl(1, 0)
BASES = [
    ('WARPSYNC.COLLECTIVE R4 (0x348)', (0x0000000004087348, 0x0000000003c00000 | C)),
    ('WARPSYNC.COLLECTIVE.ALL (0x948)', (0x0000000000087948, 0x0000000003c00000 | C)),
    ('ENDCOLLECTIVE (0x91b)', (0x000000000000791b, 0x0000000003800000 | C)),
    ('F2F.BF16.F32 (0x304)', (0x0000000000007304, 0x0000000000202000 | C)),
]

out = open(os.path.join(HERE, 'debugforms.txt'), 'w')
out.write('# Bit flips (word i at address 16*i; a branch target is relative, so it moves with i)\n')
for name, b in BASES:
    bits = range(12, 105)
    ws = [b] + [setf(b, k, 1, 1 ^ ((b[k // 64] >> (k % 64)) & 1)) for k in bits]
    t = dis(ws)
    out.write('== %s %016x %016x | %s\n' % (name, b[0], b[1], t[0]))
    for k, s in zip(bits, t[1:]):
        if s != t[0]:
            out.write('  %3d  %s\n' % (k, s))
out.write('\n# Scoreboards (stall 2, bit 109): none / write SB0 / read SB0\n')
ws, labels = [], []
for name, (lo, hi) in BASES:
    hi &= ~C
    for l, c in [('none', ctrl(2, 1)), ('wb0', ctrl(2, 1, wb=0)), ('rb0', ctrl(2, 1, rb=0))]:
        ws.append((lo, hi | c))
        labels.append('%s %s' % (name, l))
for l, t in zip(labels, dis(ws)):
    out.write('  %-40s %s\n' % (l, t))

#!/usr/bin/env python3
"""The bit-flip survey: for each (mnemonic, 12-bit opcode) in the listings, take its longest
instance, normalise the control bits (stall 1, no scoreboards), flip each bit 16..104 in turn and
let nvdisasm say what changed.   usage: survey.py ALL.tsv RAW_OUT.txt   (then compress.py)"""
import collections, sys
from nvd import dis

rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
groups = collections.OrderedDict()
for f, fn, a, t, lo, hi in rows:
    tt = t.split()
    if tt[0].startswith('@'):
        tt = tt[1:]
    k = (tt[0].split('.')[0], int(lo, 16) & 0xfff)
    groups.setdefault(k, []).append((t, int(lo, 16), int(hi, 16)))
reps = []
for k, v in sorted(groups.items()):
    t, lo, hi = max(v, key=lambda x: (len(x[0]), x[0]))
    hi &= ~(0x1fffff << 41)
    hi |= (0x7f << (110 - 64)) | (0x1 << (105 - 64))
    reps.append((k, t, lo, hi))
words = []
for k, t, lo, hi in reps:
    words.append((lo, hi))
    for b in range(16, 105):
        words.append((lo ^ (1 << b), hi) if b < 64 else (lo, hi ^ (1 << (b - 64))))
out = dis(words)
i = 0
with open(sys.argv[2], 'w') as o:
    for k, t, lo, hi in reps:
        base = out[i]
        i += 1
        o.write('== %s %s  %016x %016x  base: %s   (listing: %s)\n' % (k[0], hex(k[1]), lo, hi, base, t))
        for b in range(16, 105):
            o.write('  bit %3d: %s\n' % (b, out[i] if out[i] != base else '='))
            i += 1

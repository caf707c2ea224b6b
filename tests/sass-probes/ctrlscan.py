#!/usr/bin/env python3
"""Which forms nvdisasm rejects with a write or a read scoreboard: the first example of every form
in docs/sass/examples.md with stall 2, bit 109 set and write (then read) scoreboard 0.
Writes ctrlscan.txt.   NVDISASM=... python3 tests/sass-probes/ctrlscan.py"""
import os, re
from nvd import dis

HERE = os.path.dirname(os.path.abspath(__file__))
rows = []
form = None
for l in open(os.path.join(HERE, '..', '..', 'docs', 'sass', 'examples.md')):
    if l.startswith('### '):
        form = l[4:].strip().replace('\\|', '|')
        seen = False
    m = re.match(r'\| `0x([0-9a-f]+)` \| `(.*)` \| `0x([0-9a-f]{16})` \| `0x([0-9a-f]{16})` \|', l)
    if m and not seen:
        rows.append((form, m.group(2), int(m.group(3), 16), int(m.group(4), 16)))
        seen = True


def ctl(hi, wb, rb):
    hi = (hi & ~(7 << 46)) | (wb << 46)
    hi = (hi & ~(7 << 49)) | (rb << 49)
    return (hi & ~(0x1f << 41)) | (2 << 41) | (1 << 45)


ws = []
for f, t, lo, hi in rows:
    ws += [(lo, ctl(hi, 7, 7)), (lo, ctl(hi, 0, 7)), (lo, ctl(hi, 7, 0))]
out = dis(ws)
with open(os.path.join(HERE, 'ctrlscan.txt'), 'w') as o:
    o.write('# form | example | no scoreboards | write scoreboard 0 | read scoreboard 0\n')
    for i, (f, t, lo, hi) in enumerate(rows):
        b, w, r = ['ok' if not x.startswith('ERR:') else 'REJECTED' for x in out[3 * i:3 * i + 3]]
        o.write('%s | %s | %s | %s | %s\n' % (f, t, b, w, r))

#!/usr/bin/env python3
"""Collect every instruction of the listings in a folder (collect.sh's output) into a TSV:
file, function, address, text, low word, high word.   usage: extract.py LISTING_DIR OUT.tsv"""
import glob, re, sys

pat = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x([0-9a-f]{16}) \*/')
hipat = re.compile(r'^\s*/\* 0x([0-9a-f]{16}) \*/\s*$')
rows = []
for f in sorted(glob.glob(sys.argv[1] + '/*.sass')):
    lines = open(f).read().splitlines()
    func = None
    i = 0
    while i < len(lines):
        m = re.search(r'Function : (\S+)', lines[i])
        if m:
            func = m.group(1)
        m = pat.search(lines[i])
        if m and i + 1 < len(lines) and hipat.match(lines[i + 1]):
            rows.append((f, func, m.group(1), m.group(2), m.group(3), hipat.match(lines[i + 1]).group(1)))
            i += 2
            continue
        i += 1
with open(sys.argv[2], 'w') as o:
    for r in rows:
        o.write('\t'.join(r) + '\n')
print(len(rows), 'instructions')

#!/usr/bin/env python3
"""Compress survey.py's raw output: runs of bits with the same effect become one line
(`16-23 o0:R254 ... o0:R127` = bits 16..23 change operand 0). usage: compress.py RAW > survey.txt"""
import re,sys
def toks(t):
    # split into mnemonic and operands at top-level commas
    t=t.strip()
    m=re.match(r'(@!?U?P[0-6T] )?(\S+)\s*(.*)',t)
    g,mn,rest=m.groups()
    ops=[];depth=0;cur=''
    for ch in rest:
        if ch in '[{(':depth+=1
        if ch in ']})':depth-=1
        if ch==',' and depth==0: ops.append(cur.strip());cur=''
        else: cur+=ch
    if cur.strip(): ops.append(cur.strip())
    return [ (g or '').strip(), mn]+ops
out=[];cur=None
for l in open(sys.argv[1]):
    if l.startswith('=='):
        if cur: out.append(cur)
        m=re.match(r'== (\S+) (\S+)\s+(\S+) (\S+)\s+base: (.*?)   \(listing',l)
        cur=[m.group(1),m.group(2),m.group(3),m.group(4),m.group(5),[]]
        continue
    m=re.match(r'\s+bit\s+(\d+): (.*)',l)
    cur[5].append((int(m.group(1)),m.group(2).strip()))
out.append(cur)
for name,op,lo,hi,base,bits in out:
    print('== %s %s %s %s | %s'%(name,op,lo,hi,base))
    bt=toks(base)
    runs=[]
    for b,t in bits:
        if t=='=': d='='
        elif t.startswith('ERR:'): d='ERR'
        elif t=='(EMPTY)': d='EMPTY'
        else:
            nt=toks(t)
            if len(nt)!=len(bt): d='SHAPE: '+t
            else:
                ch=[i for i in range(len(bt)) if bt[i]!=nt[i]]
                d=' '.join('%s:%s'%(('g','mn')[i] if i<2 else 'o%d'%(i-2), nt[i]) for i in ch)
        key=re.sub(r'U?R\d+|U?P\d|0x[0-9a-f]+','#',d) if not d.startswith('SHAPE') and 'mn:' not in d else d
        if runs and runs[-1][2]==key and key not in ('=',) and 'mn:' not in key and 'SHAPE' not in key:
            runs[-1][1]=b; runs[-1][3].append(d)
        elif runs and runs[-1][2]==key and key=='=':
            runs[-1][1]=b
        else: runs.append([b,b,key,[d]])
    for a,b,k,ds in runs:
        rng='%d'%a if a==b else '%d-%d'%(a,b)
        if k=='=': print('   %-8s ='%rng)
        elif len(ds)>1: print('   %-8s %s ... %s'%(rng,ds[0],ds[-1]))
        else: print('   %-8s %s'%(rng,ds[0]))

#!/usr/bin/env python3
"""Field experiments behind the form tables: each section decodes hand-made words with
`nvdisasm -b SM90a` and prints what nvdisasm says. Writes the *.txt files beside this script.

    NVDISASM=$(cargo run -q -p ptxc-reftools -- env | sed -n 's/export NVDISASM=//p') \\
        python3 tests/sass-probes/fields.py

The base words are ptxas output for the corpus (see the evidence of each form)."""
import os, struct
from nvd import dis, setf, ctrl

HERE = os.path.dirname(os.path.abspath(__file__))


class Out:
    def __init__(self, name):
        self.f = open(os.path.join(HERE, name), 'w')

    def values(self, title, base, pos, width, vals=None):
        vals = list(vals if vals is not None else range(1 << width))
        texts = dis([setf(base, pos, width, v) for v in vals])
        self.f.write('## %s: base %016x %016x, field [%d:%d]\n' % (title, base[0], base[1], pos + width - 1, pos))
        for v, t in zip(vals, texts):
            self.f.write('  %2d  %s\n' % (v, t))
        self.f.write('\n')

    def words(self, title, ws, labels):
        texts = dis(ws)
        self.f.write('## %s\n' % title)
        for l, w, t in zip(labels, ws, texts):
            self.f.write('  %-34s %016x %016x  %s\n' % (l, w[0], w[1], t))
        self.f.write('\n')


# --- memory fields: scope/ordering [80:77], eviction [86:84], L2 prefetch [69:68], size [75:73]
m = Out('memfields.txt')
for name, base in [('LDG', (0x0000000402027981, 0x000fe2000c1e1900)),
                   ('LD', (0x0000000402087980, 0x000fe2000c101900)),
                   ('STG', (0x0000000402007986, 0x000fe2000c101904)),
                   ('ST', (0x0000000802007985, 0x000fe2000c101904)),
                   ('ATOMG', (0x0000000d020979a8, 0x000fe200099ee1c4)),
                   ('ATOM', (0x0000000d0207798a, 0x000fe200099ee1c4)),
                   ('REDG', (0x000000050200798e, 0x000fe2000c114184)),
                   ('REDG float', (0x00000005020079a6, 0x000fe2000c115384)),
                   ('LDGSTS', (0x0000000404077fae, 0x004fe8000b961c44))]:
    m.values(name + ' ordering/scope', base, 77, 4)
    m.values(name + ' eviction', base, 84, 3)
    m.values(name + ' L2 prefetch', base, 68, 2)
    m.values(name + ' size/type', base, 73, 3)
m.values('LDG eviction + LTC64B', setf(setf((0x0000000402027981, 0x000fe2000c1e1900), 84, 3, 0), 68, 2, 1), 73, 3, [5])
m.values('ATOM float type [76:73]', (0x00000005ff0579a2, 0x004362000810f304), 73, 4)
m.values('ATOM float op [90:87]', (0x00000005ff0579a2, 0x004362000810f304), 87, 4)
m.values('REDG float type [76:73]', (0x00000005020079a6, 0x000fe2000c115384), 73, 4)
m.values('ATOMG op [90:87]', (0x0000000d020979a8, 0x000fe200099ee1c4), 87, 4)
m.values('ATOM op [90:87]', (0x0000000d0207798a, 0x000fe200099ee1c4), 87, 4)
m.values('REDG op [89:87]', (0x000000050200798e, 0x000fe2000c114184), 87, 3)
m.values('ATOMS op [90:87]', (0x00000006ff09098c, 0x000ea80008000004), 87, 4)
m.values('ATOMS type [75:73]', (0x00000006ff09098c, 0x000ea80008000004), 73, 3)
m.values('ATOM.CAS [88:87]', (0x000000080607738b, 0x004e2800001ee109), 87, 2)
m.values('ATOM.CAS type [75:73]', (0x000000080607738b, 0x004e2800001ee109), 73, 3)
m.values('LDS size', (0x0000000007087984, 0x000ee80000000c00), 73, 3)
m.values('LDL eviction', (0x0000900001027983, 0x0001620000300a00), 84, 3)
m.values('LDC size', (0x00008600ff0a7b82, 0x000e620000000a00), 73, 3)
m.values('LDC mode [79:78]', (0x00008600ff0a7b82, 0x000e620000000a00), 78, 2)
m.values('CCTL op [90:87]', (0x00000000ff00798f, 0x000fe20002000000), 87, 4)
m.values('FMUL scale [86:84]', (0x0000000958587220, 0x000fe20000400000), 84, 3)
m.values('DSETP comparison [79:76]', (0x000000ff0400722a, 0x000fdc0003f0d000), 76, 4)

# --- address forms: which terms are printed
a = Out('addrforms.txt')
LDS = (0x0000000808097984, 0x000ea20008000800)
ws, ls = [], []
for r in (8, 0xff):
    for u in (8, 0, 0x3f):
        for off in (0, 0x10, 0xfffff0):
            ws.append(setf(setf(setf(LDS, 24, 8, r), 32, 6, u), 40, 24, off))
            ls.append('LDS bit91=1 R=%x UR=%x off=%x' % (r, u, off))
LDSr = (0x00000000050b7984, 0x0002a20000000800)
for r in (5, 0xff):
    for off in (0, 0x10, 0xfffff0):
        ws.append(setf(setf(LDSr, 24, 8, r), 40, 24, off))
        ls.append('LDS bit91=0 R=%x off=%x' % (r, off))
LDG = (0x0000000402027981, 0x000fe2000c1e1900)
for r in (2, 0xff):
    for u in (4, 0x3f):
        for b90 in (0, 1):
            ws.append(setf(setf(setf(setf(LDG, 76, 1, 0), 24, 8, r), 32, 6, u), 90, 1, b90))
            ls.append('LDG bit76=0 R=%x UR=%x bit90=%d' % (r, u, b90))
        ws.append(setf(setf(LDG, 24, 8, r), 32, 6, u))
        ls.append('LDG desc R=%x UR=%x' % (r, u))
ws.append(setf((0x0000000402087980, 0x000fe2000c101900), 91, 1, 0))
ls.append('LD bit91=0')
ATOMS = (0x00000006ff09098c, 0x000ea80008000004)
for r in (0xff, 3):
    for u in (4, 0x3f):
        ws.append(setf(setf(ATOMS, 24, 8, r), 64, 6, u))
        ls.append('ATOMS R=%x UR=%x' % (r, u))
LDC = (0x00000a00ff017b82, 0x000ff00000000800)
for r in (0xff, 2):
    for off in (0, 0x28, 0xfff8):
        ws.append(setf(setf(LDC, 24, 8, r), 38, 16, off))
        ls.append('LDC R=%x off=%x' % (r, off))
DB = (0x000080000000791a, 0x000fc80000000000)
for b in range(32, 48):
    ws.append(setf(DB, b, 1, 1))
    ls.append('DEPBAR.LE bit %d' % b)
ws.append((0x0000000000007918 | 0, 0x000fc00000000000))
ls.append('NOP')
a.words('address terms, DEPBAR fields', ws, ls)

# --- IMAD aliases (MOV / IADD / SHL)
i = Out('imad_alias.txt')
HI = 0x000fe200078e0000
ws, ls = [], []
for sgn in (0, 1):
    for av in (0xff, 5):
        for bv in (0xff, 6):
            for cv in (0xff, 7):
                ws.append(((bv << 32) | (av << 24) | (3 << 16) | 0x7224, (HI & ~(1 << 9)) | (sgn << 9) | cv))
                ls.append('0x224 signed=%d a=%x b=%x c=%x' % (sgn, av, bv, cv))
        for bv in (0, 1, 2, 3, 4, 0x40, 0x80000000, 0xffffffff):
            for cv in (0xff, 7):
                ws.append(((bv << 32) | (av << 24) | (3 << 16) | 0x7824, (HI & ~(1 << 9)) | (sgn << 9) | cv))
                ls.append('0x824 signed=%d a=%x b=%x c=%x' % (sgn, av, bv, cv))
for k in range(1, 32):
    ws.append((((1 << k) << 32) | (5 << 24) | (3 << 16) | 0x7824, 0x000fe200078e00ff))
    ls.append('0x824 b=1<<%d c=RZ' % k)
for op, bv, cv in ((0x7c24, 6, 0xff), (0x7e24, 0xff, 7)):
    ws.append(((bv << 32) | (0xff << 24) | (3 << 16) | op, HI | (1 << 27) | cv))
    ls.append('%x a=RZ (UR source)' % (op & 0xfff))
i.words('IMAD mnemonic aliases', ws, ls)

# --- float immediate formatting (FADD R8, R5, imm)
f = Out('floatfmt.txt')
vals = [0x3f800000, 0x4b800000, 0x5f800000, 0x4e6e6b28, 0x4e6e6b27, 0x4e800000, 0x3dcccccd, 0x38d1b717,
        0x3a83126f, 0x33d6bf95, 0x00000001, 0x00800000, 0x80000000, 0x00000000, 0x7f800000, 0xff800000,
        0x7fc00000, 0x7fc00001, 0x7fffffff, 0xffc00000, 0x7f800001, 0x42c80000, 0x47f12065, 0x7f7fffff,
        0x38800000, 0x35800000]
f.words('f32 immediates (FADD R8, R5, imm)', [((v << 32) | 0x05087421, 0x000fe20000000000) for v in vals],
        ['0x%08x' % v for v in vals])
f.words('specials between operands (FSETP/FFMA)',
        [(0x7f8000000300780b, 0x000fe20003f0e000), (0x7fc000000300780b, 0x000fe20003f0e000),
         (0x80000000050a7423, 0x000fe20000000005), (0x00000000050a7423, 0x000fe20000000005),
         (0x8000000004087429, 0x000fe20000000000)],
        ['FSETP +INF', 'FSETP +QNAN', 'FFMA -0.0', 'FFMA 0', 'DADD -0.0 (f64 high half)'])

# --- control bits: .reuse shown only with bit 109; IADD3's reuse pairs; WARPGROUP wait mask
c = Out('ctrlrules.txt')
base = (0x0000000705097210, 0x0000000007ffe006)
ws, ls = [], []
for reuse in (1, 2, 4, 6, 7):
    for y in (0, 1):
        for stall in (0, 1, 11, 12, 15):
            ws.append((base[0], base[1] | ctrl(stall, y, reuse=reuse)))
            ls.append('IADD3 reuse=%d bit109=%d stall=%d' % (reuse, y, stall))
WG = (0x00008000000079c5, 0x0000000000010000)
for wait in (0, 1, 63):
    ws.append((WG[0], WG[1] | ctrl(1, 1, wait=wait)))
    ls.append('WARPGROUP.DEPBAR wait=%d' % wait)
c.words('control-word rules', ws, ls)

# --- SYNCS / TMA / UBLKCP / WARPGROUP modifier fields
s = Out('syncsfields.txt')
ARR = (0x000000ffff0279a7, 0x000e620008100004)
s.values('SYNCS.ARRIVE mode [86:84]', ARR, 84, 3)
s.values('SYNCS.ARRIVE [75:73]', ARR, 73, 3)
s.values('SYNCS.PHASECHK [72:70]', (0x00000003ff0075a7, 0x0020620008000044), 70, 3)
s.values('SYNCS.EXCH [73:72]', (0x00000004063f75b2, 0x000e220008000100), 72, 2)
s.values('SYNCS.CCTL [73:72]', (0x00000000ff0079b1, 0x000fe20008000006), 72, 2)
s.values('UTMALDG dimension [81:79]', (0x00000008040045b4, 0x0003e20008008000), 79, 3)
s.values('UTMASTG dimension [81:79]', (0x00000010040003b5, 0x0005e20008008000), 79, 3)
s.values('UBLKCP [83:81]', (0x00000008040093ba, 0x0005e2000800020a), 81, 3)
s.values('UBLKCP [74:73]', (0x00000008040093ba, 0x0005e2000800020a), 73, 2)
s.values('WARPGROUP.DEPBAR count [74:72]', (0x00008000000079c5, 0x000fc40000010000), 72, 3)
s.values('WARPGROUP.DEPBAR gsb [86:84]', (0x00008000000079c5, 0x000fc40000010000), 84, 3)

# --- branch targets: the effect of each bit (word k sits at 16*k)
t = Out('targets.txt')
import re
for name, base, rel in [('BRA', (0x0000000000148947, 0x000fea0003800000), True),
                        ('BSSY', (0x000002c000007945, 0x000fe60003800000), True),
                        ('CALL.REL', (0x0000000000147944, 0x020fea0003c00000), True),
                        ('CALL.ABS', (0x0000000000007943, 0x003fde0003c00000), False),
                        ('RET.REL', (0xfffffffc02c07950, 0x000fea0003c3ffff), True),
                        ('RET.ABS', (0x0000000014007950, 0x003fde0003e00000), False),
                        ('LEPC', (0x000000001014794e, 0x000fce0000000000), True)]:
    bits = list(range(16, 92))
    ws = [base] + [setf(base, b, 1, 1 - (((base[0] if b < 64 else base[1]) >> (b % 64)) & 1)) for b in bits]
    out = dis(ws)

    def val(x):
        h = re.findall(r'(-?0x[0-9a-f]+)', x)
        return int(h[-1], 16) if h else None
    b0 = val(out[0])
    res = []
    for k, (b, x) in enumerate(zip(bits, out[1:])):
        v = val(x)
        if v is None or x.startswith('ERR:'):
            res.append('%d:%s' % (b, x[:40]))
            continue
        d = v - b0 - 16 * (k + 1) if rel else v - b0
        if d:
            res.append('%d:%+#x' % (b, d))
    t.f.write('## %s (%s): %s\n  %s\n\n' % (name, 'relative: target - address - 16' if rel else 'absolute', out[0], '\n  '.join(res)))

# --- opcode scan of the control range: bare words 0x900-0x97f (guard PT, default control bits)
o = Out('opscan.txt')
ws = [((op) | (7 << 12), 0x000fe20003800000) for op in range(0x900, 0x980)]
texts = dis(ws)
o.f.write('## bare opcodes 0x900-0x97f (ERR = not an instruction)\n')
for op, t in zip(range(0x900, 0x980), texts):
    if not t.startswith('ERR:'):
        o.f.write('  0x%03x  %s\n' % (op, t))

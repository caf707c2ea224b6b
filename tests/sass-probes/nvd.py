"""Batch raw disassembly with `nvdisasm -b SM90a -c`.

dis(words) -> list of texts, one per (lo, hi) word, or 'ERR: <message>' for words nvdisasm
rejects. Word i sits at address 16*i; a rejected word is replaced by a NOP so that the others
keep their addresses (branch targets are absolute)."""
import os, re, struct, subprocess, tempfile

ND = os.environ.get('NVDISASM', 'nvdisasm')
LINE = re.compile(r'/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*$')
NOP = (0x0000000000007918, 0x000fc00000000000)


def _run(words):
    with tempfile.NamedTemporaryFile(suffix='.bin', delete=False) as f:
        f.write(b''.join(struct.pack('<QQ', lo, hi) for lo, hi in words))
        fn = f.name
    r = subprocess.run([ND, '-b', 'SM90a', '-c', fn], capture_output=True, text=True)
    os.unlink(fn)
    return r


def dis(words):
    words = list(words)
    errors = {}
    while True:
        r = _run(words)
        if r.returncode == 0:
            got = {}
            for l in r.stdout.splitlines():
                m = LINE.search(l)
                if m:
                    got[int(m.group(1), 16) // 16] = m.group(2)
            return [errors.get(i, got.get(i, '(not printed)')) for i in range(len(words))]
        m = re.search(r'at address 0x([0-9a-f]+)', r.stderr)
        if not m:
            raise RuntimeError(r.stderr)
        k = int(m.group(1), 16) // 16
        errors[k] = 'ERR: ' + r.stderr.strip().splitlines()[0]
        words[k] = NOP


def setf(w, pos, width, val):
    """The word with `width` bits at instruction bit `pos` set to `val`."""
    lo, hi = w
    for i in range(width):
        b = pos + i
        bit = (val >> i) & 1
        if b < 64:
            lo = (lo & ~(1 << b)) | (bit << b)
        else:
            hi = (hi & ~(1 << (b - 64))) | (bit << (b - 64))
    return (lo, hi)


def ctrl(stall, yld, wb=7, rb=7, wait=0, reuse=0):
    """Control bits [125:105] as a high-word mask (ptxas-facts.md section b)."""
    return (stall << 41) | (yld << 45) | (wb << 46) | (rb << 49) | (wait << 52) | (reuse << 58)

//! `ptxc diff`: ptxc's code for each kernel beside ptxas's, aligned, and classified.
//!
//! A kernel's two listings are compared at four levels, best first:
//!
//! * [`Class::ByteExact`]: the same `.text` words (padding excluded).
//! * [`Class::InstrExact`]: the same instruction text, line for line; only control bits differ.
//! * [`Class::Structural`]: the same instructions once registers are renamed by order of first
//!   appearance (per register file) and branch targets are written as instruction indices.
//! * [`Class::Different`]: anything else (including a kernel only one side has).
//!
//! The comparison works on [`Listing`]s: one per kernel, each instruction with its words and its
//! text (nvdisasm's syntax, trailing `;` and extra blanks removed). ptxc's listing comes from the
//! compiler in-process ([`ptxc_listings`]); ptxas's from running `ptxas` and `cuobjdump -sass`
//! ([`ptxas_listings`]). The same [`Listing`] text format ([`write_listings`],
//! [`read_listings`]) stores both in the golden files under `tests/golden/`.

use crate::diag::{Diagnostic, SourceFile};
use crate::frontend::check::Arch;
use crate::target::sm90a::{self as sass, RegFile};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// How close ptxc's code for a kernel is to ptxas's. Ordered best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    ByteExact,
    InstrExact,
    Structural,
    Different,
}

impl Class {
    pub const ALL: [Class; 4] = [
        Class::ByteExact,
        Class::InstrExact,
        Class::Structural,
        Class::Different,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::ByteExact => "BYTE_EXACT",
            Class::InstrExact => "INSTR_EXACT",
            Class::Structural => "STRUCTURAL",
            Class::Different => "DIFFERENT",
        }
    }

    pub fn parse(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One instruction: its two words and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub words: [u64; 2],
    pub text: String,
}

/// The code of one kernel, without the padding after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub name: String,
    /// Registers per thread: ptxas's `EIATTR_REGCOUNT`; for ptxc, [`register_count`].
    pub regs: Option<u32>,
    pub lines: Vec<Line>,
}

/// Instruction text in a canonical spelling: no trailing `;`, single blanks (cuobjdump writes
/// `BRA 0x140;` where nvdisasm writes `BRA 0x140 ;`).
pub fn clean_text(t: &str) -> String {
    let t = t.trim().trim_end_matches(';');
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text without operand-reuse flags (`R7.reuse`): they are control bits, which nvdisasm
/// happens to print in the operand.
pub fn without_reuse(t: &str) -> std::borrow::Cow<'_, str> {
    if t.contains(".reuse") {
        std::borrow::Cow::Owned(t.replace(".reuse", ""))
    } else {
        std::borrow::Cow::Borrowed(t)
    }
}

/// The opcode of an instruction text (mnemonic with modifiers, guard skipped).
pub fn opcode(t: &str) -> &str {
    t.split_whitespace()
        .find(|w| !w.starts_with('@'))
        .unwrap_or("")
}

/// Registers per thread for ptxc's code, counted the way ptxas's `EIATTR_REGCOUNT` counts them:
/// the highest general register used, plus one, plus the two ptxas reserves; at least that for
/// R1 (the stack pointer every kernel loads).
pub fn register_count(words: &[[u64; 2]]) -> Option<u32> {
    let mut max: Option<u32> = None;
    for w in words {
        let (_, acc) = sass::word_accesses(*w).ok()?;
        for a in acc {
            if a.reg.file == RegFile::Gpr && a.reg.num != 255 {
                let top = u32::from(a.reg.num) + u32::from(a.count.max(1)) - 1;
                max = Some(max.map_or(top, |m| m.max(top)));
            }
        }
    }
    Some(max.map_or(1, |m| m + 1) + 2)
}

/// Splits an instruction into its guard, mnemonic and operands, renaming registers by order of
/// first appearance (one counter per file) and writing branch targets (`0x1a0`) of the
/// branch-like opcodes as `@+k` instruction indices relative to `addr`.
fn normalise(text: &str, addr: u64, names: &mut RegNames) -> String {
    let mut out = String::with_capacity(text.len());
    let is_branch = {
        let m = text
            .split_whitespace()
            .find(|w| !w.starts_with('@'))
            .unwrap_or("");
        let op = m.split('.').next().unwrap_or("");
        matches!(
            op,
            "BRA" | "BRX" | "JMP" | "CALL" | "BSSY" | "SSY" | "PBK" | "BREAK" | "WARPSYNC" | "JMX"
        )
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        // A token starts here if the previous byte is not part of an identifier.
        let at_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if at_start && c.is_ascii_alphabetic() {
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            let tok = &text[i..j];
            out.push_str(&names.rename(tok).unwrap_or_else(|| tok.to_string()));
            i = j;
            continue;
        }
        if at_start && is_branch && text[i..].starts_with("0x") {
            let mut j = i + 2;
            while j < bytes.len() && bytes[j].is_ascii_hexdigit() {
                j += 1;
            }
            if let Ok(v) = u64::from_str_radix(&text[i + 2..j], 16) {
                let rel = (v as i64 - addr as i64) / 16;
                let _ = write!(out, "@{rel:+}");
                i = j;
                continue;
            }
        }
        out.push(c as char);
        i += 1;
    }
    out
}

/// Register renaming by first appearance.
#[derive(Default)]
struct RegNames {
    map: rustc_hash::FxHashMap<String, String>,
    next: [u32; 6],
}

impl RegNames {
    fn rename(&mut self, tok: &str) -> Option<String> {
        // Files in the spelling nvdisasm uses; RZ, URZ, PT, UPT are not renamed.
        let (file, prefix, num) = if let Some(n) = tok.strip_prefix("UR") {
            (1, "ur", n)
        } else if let Some(n) = tok.strip_prefix("UP") {
            (3, "up", n)
        } else if let Some(n) = tok.strip_prefix('R') {
            (0, "r", n)
        } else if let Some(n) = tok.strip_prefix('P') {
            (2, "p", n)
        } else if let Some(n) = tok.strip_prefix('B') {
            (4, "b", n)
        } else {
            return None;
        };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if let Some(s) = self.map.get(tok) {
            return Some(s.clone());
        }
        let k = self.next[file];
        self.next[file] += 1;
        let s = format!("{prefix}{k}");
        self.map.insert(tok.to_string(), s.clone());
        Some(s)
    }
}

/// The listing's instructions normalised for the structural comparison.
pub fn structural(l: &Listing) -> Vec<String> {
    let mut names = RegNames::default();
    l.lines
        .iter()
        .enumerate()
        .map(|(k, line)| normalise(&without_reuse(&line.text), k as u64 * 16, &mut names))
        .collect()
}

/// Classifies ptxc's listing of a kernel against ptxas's.
pub fn classify(ptxc: &Listing, ptxas: &Listing) -> Class {
    if ptxc.lines.len() != ptxas.lines.len() {
        return Class::Different;
    }
    if ptxc
        .lines
        .iter()
        .zip(&ptxas.lines)
        .all(|(a, b)| a.words == b.words)
    {
        return Class::ByteExact;
    }
    if ptxc
        .lines
        .iter()
        .zip(&ptxas.lines)
        .all(|(a, b)| without_reuse(&a.text) == without_reuse(&b.text))
    {
        return Class::InstrExact;
    }
    if structural(ptxc) == structural(ptxas) {
        return Class::Structural;
    }
    Class::Different
}

/// One row of the side-by-side diff: indices into the two listings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// The same (normalised) instruction on both sides.
    Same(usize, usize),
    /// Different instructions facing each other.
    Changed(usize, usize),
    /// Only ptxc has it.
    Ptxc(usize),
    /// Only ptxas has it.
    Ptxas(usize),
}

/// Largest `n * m` for which [`align`] computes a full longest common subsequence; beyond it the
/// middle (after the common prefix and suffix) is paired line by line.
const LCS_CELLS: usize = 4_000_000;

/// Aligns two sequences: a longest common subsequence of the middle part after trimming the
/// common prefix and suffix; unmatched stretches facing each other become [`Row::Changed`].
pub fn align<T: PartialEq>(a: &[T], b: &[T]) -> Vec<Row> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut rows: Vec<Row> = (0..pre).map(|k| Row::Same(k, k)).collect();
    let (n, m) = (ma.len(), mb.len());
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    if n > 0 && m > 0 && n.saturating_mul(m) <= LCS_CELLS {
        // lcs[i][j] = LCS length of ma[i..], mb[j..].
        let w = m + 1;
        let mut lcs = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n && j < m {
            if ma[i] == mb[j] {
                pairs.push((i, j));
                i += 1;
                j += 1;
            } else if lcs[(i + 1) * w + j] >= lcs[i * w + j + 1] {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    // Emit the middle: gaps between matched pairs, paired up as Changed where both sides have
    // lines.
    let (mut i, mut j) = (0, 0);
    pairs.push((n, m));
    for (pi, pj) in pairs {
        while i < pi && j < pj {
            rows.push(Row::Changed(pre + i, pre + j));
            i += 1;
            j += 1;
        }
        rows.extend((i..pi).map(|k| Row::Ptxc(pre + k)));
        rows.extend((j..pj).map(|k| Row::Ptxas(pre + k)));
        if pi < n && pj < m {
            rows.push(Row::Same(pre + pi, pre + pj));
        }
        i = pi + 1;
        j = pj + 1;
    }
    rows.extend((0..suf).map(|k| Row::Same(a.len() - suf + k, b.len() - suf + k)));
    rows
}

/// The comparison of one kernel.
#[derive(Clone, Debug)]
pub struct KernelDiff {
    pub name: String,
    pub class: Class,
    pub ptxc: Option<Listing>,
    pub ptxas: Option<Listing>,
}

impl KernelDiff {
    /// `diff: KERNEL CLASS ptxc=N ptxas=M instrs regs=A/B` (`-` for an unknown count).
    pub fn summary(&self) -> String {
        let n = |l: &Option<Listing>| l.as_ref().map_or(0, |l| l.lines.len());
        let r = |l: &Option<Listing>| {
            l.as_ref()
                .and_then(|l| l.regs)
                .map_or("-".to_string(), |r| r.to_string())
        };
        format!(
            "diff: {} {} ptxc={} ptxas={} instrs regs={}/{}",
            self.name,
            self.class,
            n(&self.ptxc),
            n(&self.ptxas),
            r(&self.ptxc),
            r(&self.ptxas)
        )
    }

    /// The aligned rows, matched by opcode (so that differently allocated registers still line
    /// up).
    pub fn rows(&self) -> Vec<Row> {
        let empty = Listing {
            name: String::new(),
            regs: None,
            lines: Vec::new(),
        };
        let a = self.ptxc.as_ref().unwrap_or(&empty);
        let b = self.ptxas.as_ref().unwrap_or(&empty);
        let ops = |l: &Listing| -> Vec<String> {
            l.lines
                .iter()
                .map(|x| opcode(&x.text).to_string())
                .collect()
        };
        align(&ops(a), &ops(b))
    }
}

/// Pairs kernels by name: ptxc's in its order, then any only ptxas has.
pub fn compare(ptxc: Vec<Listing>, ptxas: Vec<Listing>) -> Vec<KernelDiff> {
    let mut theirs: Vec<Option<Listing>> = ptxas.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for l in ptxc {
        let other = theirs
            .iter_mut()
            .find(|t| t.as_ref().is_some_and(|t| t.name == l.name))
            .and_then(Option::take);
        let class = other.as_ref().map_or(Class::Different, |o| classify(&l, o));
        out.push(KernelDiff {
            name: l.name.clone(),
            class,
            ptxc: Some(l),
            ptxas: other,
        });
    }
    for t in theirs.into_iter().flatten() {
        out.push(KernelDiff {
            name: t.name.clone(),
            class: Class::Different,
            ptxc: None,
            ptxas: Some(t),
        });
    }
    out
}

/// The side-by-side text of a kernel: one row per aligned pair, `|` between equal lines, `*`
/// between changed ones, `<` / `>` where one side has nothing. With `color`, ANSI colours mark
/// the rows that differ.
pub fn side_by_side(d: &KernelDiff, color: bool) -> String {
    const W: usize = 56;
    let text = |l: &Option<Listing>, k: usize| -> String {
        l.as_ref().map_or(String::new(), |l| {
            let t = &l.lines[k].text;
            if t.chars().count() > W {
                let mut s: String = t.chars().take(W - 1).collect();
                s.push('…');
                s
            } else {
                t.clone()
            }
        })
    };
    let mut s = format!(
        "== {}: ptxc {} / ptxas {} ==\n",
        d.name,
        d.ptxc.as_ref().map_or(0, |l| l.lines.len()),
        d.ptxas.as_ref().map_or(0, |l| l.lines.len())
    );
    let _ = writeln!(s, "{:<W$}   ptxas", "ptxc");
    for row in d.rows() {
        let (a, b, mark, col) = match row {
            Row::Same(i, j) => {
                let (a, b) = (text(&d.ptxc, i), text(&d.ptxas, j));
                let m = if a == b { '|' } else { '~' };
                (a, b, m, "")
            }
            Row::Changed(i, j) => (text(&d.ptxc, i), text(&d.ptxas, j), '*', "\x1b[33m"),
            Row::Ptxc(i) => (text(&d.ptxc, i), String::new(), '<', "\x1b[31m"),
            Row::Ptxas(j) => (String::new(), text(&d.ptxas, j), '>', "\x1b[32m"),
        };
        let line = format!("{a:<W$} {mark} {b}");
        if color && !col.is_empty() {
            let _ = writeln!(s, "{col}{}\x1b[0m", line.trim_end());
        } else {
            let _ = writeln!(s, "{}", line.trim_end());
        }
    }
    s
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The comparison as JSON: `{"kernels":[{"name","class","ptxc_instrs","ptxas_instrs",
/// "ptxc_regs","ptxas_regs","rows":[{"kind","ptxc","ptxas"}]}]}` (`null` for an absent side).
pub fn to_json(diffs: &[KernelDiff]) -> String {
    let mut s = String::from("{\"kernels\":[");
    for (k, d) in diffs.iter().enumerate() {
        if k > 0 {
            s.push(',');
        }
        let n = |l: &Option<Listing>| l.as_ref().map_or(0, |l| l.lines.len());
        let r = |l: &Option<Listing>| {
            l.as_ref()
                .and_then(|l| l.regs)
                .map_or("null".to_string(), |r| r.to_string())
        };
        let _ = write!(
            s,
            "{{\"name\":{},\"class\":\"{}\",\"ptxc_instrs\":{},\"ptxas_instrs\":{},\
             \"ptxc_regs\":{},\"ptxas_regs\":{},\"rows\":[",
            json_str(&d.name),
            d.class,
            n(&d.ptxc),
            n(&d.ptxas),
            r(&d.ptxc),
            r(&d.ptxas)
        );
        let t = |l: &Option<Listing>, i: usize| {
            l.as_ref()
                .map_or("null".to_string(), |l| json_str(&l.lines[i].text))
        };
        for (q, row) in d.rows().into_iter().enumerate() {
            if q > 0 {
                s.push(',');
            }
            let (kind, a, b) = match row {
                Row::Same(i, j) => ("same", t(&d.ptxc, i), t(&d.ptxas, j)),
                Row::Changed(i, j) => ("changed", t(&d.ptxc, i), t(&d.ptxas, j)),
                Row::Ptxc(i) => ("ptxc", t(&d.ptxc, i), "null".into()),
                Row::Ptxas(j) => ("ptxas", "null".into(), t(&d.ptxas, j)),
            };
            let _ = write!(s, "{{\"kind\":\"{kind}\",\"ptxc\":{a},\"ptxas\":{b}}}");
        }
        s.push_str("]}");
    }
    s.push_str("]}\n");
    s
}

/// ptxc's listings of every kernel of a source, compiled in-process.
pub fn ptxc_listings(src: &SourceFile, arch: Arch) -> Result<Vec<Listing>, Vec<Diagnostic>> {
    let checked = crate::driver::frontend(src, arch)?;
    let (lowered, _) = crate::driver::lower(&checked, &crate::passes::Options::new())?;
    let encoded = crate::driver::encode(&lowered)?;
    encoded
        .iter()
        .map(|e| {
            let words = &e.words[..e.code_len.min(e.words.len())];
            let lines = words
                .iter()
                .enumerate()
                .map(|(k, w)| {
                    sass::print::word_text(*w, k as u64 * 16)
                        .map(|t| Line {
                            words: *w,
                            text: clean_text(&t),
                        })
                        .map_err(|err| {
                            vec![Diagnostic::error(
                                crate::frontend::ast::Span::default(),
                                format!(
                                    "internal error: cannot decode word {k} of `{}`: {err}",
                                    e.name
                                ),
                            )]
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Listing {
                name: e.name.clone(),
                regs: register_count(words),
                lines,
            })
        })
        .collect()
}

/// The kernels of a cubin, as `cuobjdump -sass` lists them: the text from cuobjdump's listing,
/// the words and register counts from the cubin itself (padding dropped). Functions that are
/// not kernels are left out.
pub fn cubin_listings(cubin: &[u8], cuobjdump_sass: &str) -> Result<Vec<Listing>, String> {
    let model = crate::emit::read::read(cubin).map_err(|e| e.to_string())?;
    let listed = sass::parse_listing(cuobjdump_sass);
    let mut out = Vec::new();
    for f in &model.functions {
        if f.kind != crate::emit::model::FunctionKind::Kernel {
            continue;
        }
        let n = f.code.len() / 16;
        let mine: Vec<&sass::ListedInstr> =
            listed.iter().filter(|l| l.function == f.name).collect();
        if mine.len() < n {
            return Err(format!(
                "cuobjdump lists {} instructions for `{}`, the cubin has {n}",
                mine.len(),
                f.name
            ));
        }
        let lines = (0..n)
            .map(|k| {
                let b = &f.code[k * 16..k * 16 + 16];
                let w = [
                    u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
                    u64::from_le_bytes(b[8..].try_into().expect("8 bytes")),
                ];
                if mine[k].words.is_some_and(|lw| lw != w) {
                    return Err(format!(
                        "cuobjdump's word {k} of `{}` differs from the cubin's",
                        f.name
                    ));
                }
                Ok(Line {
                    words: w,
                    text: clean_text(&mine[k].text),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        out.push(Listing {
            name: f.name.clone(),
            regs: Some(f.registers),
            lines,
        });
    }
    Ok(out)
}

/// Runs a tool, returning its stdout or an error with its stderr.
fn run_tool(cmd: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(out.stdout)
}

/// Assembles `ptx` with `ptxas -arch sm_90a` and lists its kernels with `cuobjdump -sass`.
/// Returns the listings and the cubin.
pub fn ptxas_listings(
    ptxas: &Path,
    cuobjdump: &Path,
    ptx: &Path,
) -> Result<(Vec<Listing>, Vec<u8>), String> {
    let dir = std::env::temp_dir().join(format!(
        "ptxc-diff-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let cubin_path = dir.join("ptxas.cubin");
    let result = (|| {
        run_tool(
            Command::new(ptxas)
                .args(["-arch", "sm_90a"])
                .arg(ptx)
                .arg("-o")
                .arg(&cubin_path),
            &format!("{} {}", ptxas.display(), ptx.display()),
        )?;
        let cubin = std::fs::read(&cubin_path)
            .map_err(|e| format!("cannot read {}: {e}", cubin_path.display()))?;
        let text = run_tool(
            Command::new(cuobjdump).arg("-sass").arg(&cubin_path),
            "cuobjdump -sass",
        )?;
        let listings = cubin_listings(&cubin, &String::from_utf8_lossy(&text))?;
        Ok((listings, cubin))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Writes listings in the golden-file format: a `kernel NAME regs=N` line per kernel, then one
/// line per instruction: the low and high words in hex, a blank, the text.
pub fn write_listings(out: &mut String, listings: &[Listing]) {
    for l in listings {
        let regs = l.regs.map_or("-".to_string(), |r| r.to_string());
        let _ = writeln!(out, "kernel {} regs={regs}", l.name);
        for line in &l.lines {
            let _ = writeln!(
                out,
                "{:016x}{:016x} {}",
                line.words[0], line.words[1], line.text
            );
        }
    }
}

/// Reads listings written by [`write_listings`]; lines starting with `#` are comments.
pub fn read_listings(text: &str) -> Result<Vec<Listing>, String> {
    let mut out: Vec<Listing> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("line {}: cannot read `{line}`", n + 1);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("kernel ") {
            let (name, regs) = rest.rsplit_once(" regs=").ok_or_else(bad)?;
            let regs = if regs == "-" {
                None
            } else {
                Some(regs.parse().map_err(|_| bad())?)
            };
            out.push(Listing {
                name: name.to_string(),
                regs,
                lines: Vec::new(),
            });
            continue;
        }
        let (hex, text) = line.split_once(' ').ok_or_else(bad)?;
        if hex.len() != 32 {
            return Err(bad());
        }
        let lo = u64::from_str_radix(&hex[..16], 16).map_err(|_| bad())?;
        let hi = u64::from_str_radix(&hex[16..], 16).map_err(|_| bad())?;
        out.last_mut().ok_or_else(bad)?.lines.push(Line {
            words: [lo, hi],
            text: text.to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(lines: &[(u64, &str)]) -> Listing {
        Listing {
            name: "k".into(),
            regs: Some(8),
            lines: lines
                .iter()
                .map(|(w, t)| Line {
                    words: [*w, 0],
                    text: clean_text(t),
                })
                .collect(),
        }
    }

    #[test]
    fn classes() {
        let a = listing(&[(1, "MOV R0, R1 ;"), (2, "EXIT ;")]);
        assert_eq!(classify(&a, &a.clone()), Class::ByteExact);
        // Same text, different words (control bits).
        let b = listing(&[(9, "MOV R0, R1"), (2, "EXIT")]);
        assert_eq!(classify(&a, &b), Class::InstrExact);
        // Registers renamed consistently.
        let c = listing(&[(3, "MOV R4, R7"), (2, "EXIT")]);
        assert_eq!(classify(&a, &c), Class::Structural);
        // Reuse flags are control bits.
        let r = listing(&[(9, "MOV R0, R1.reuse"), (2, "EXIT")]);
        assert_eq!(classify(&a, &r), Class::InstrExact);
        // Renaming must be consistent: R0 and R1 cannot both become R4.
        let d = listing(&[(3, "MOV R4, R4"), (2, "EXIT")]);
        assert_eq!(classify(&a, &d), Class::Different);
        // Another opcode, another length.
        let e = listing(&[(3, "IADD3 R0, R1, RZ, RZ"), (2, "EXIT")]);
        assert_eq!(classify(&a, &e), Class::Different);
        assert_eq!(
            classify(&a, &listing(&[(1, "MOV R0, R1")])),
            Class::Different
        );
        assert!(Class::ByteExact < Class::Different);
        assert_eq!(Class::parse("STRUCTURAL"), Some(Class::Structural));
    }

    #[test]
    fn normalisation_keeps_zero_registers_and_relativises_branches() {
        let a = listing(&[
            (0, "@P1 BRA 0x20"),
            (0, "IMAD.WIDE R2, R9, 0x4, RZ"),
            (0, "EXIT"),
        ]);
        let s = structural(&a);
        assert_eq!(s[0], "@p0 BRA @+2");
        assert_eq!(s[1], "IMAD.WIDE r0, r1, 0x4, RZ");
        // A branch to the same relative place at another address is the same.
        let b = listing(&[(0, "NOP"), (0, "@P0 BRA 0x30")]);
        assert_eq!(structural(&b)[1], "@p0 BRA @+2");
        // Uniform registers, predicates and barriers have their own counters; immediates stay.
        let c = listing(&[(0, "ISETP.GE.AND P3, PT, R9, UR4, UP2")]);
        assert_eq!(structural(&c)[0], "ISETP.GE.AND p0, PT, r0, ur0, up0");
        let d = listing(&[(0, "LDC R1, c[0x0][0x28]")]);
        assert_eq!(structural(&d)[0], "LDC r0, c[0x0][0x28]");
    }

    #[test]
    fn alignment() {
        let a = ["a", "b", "c", "d", "e"];
        let b = ["a", "x", "c", "e", "f"];
        let rows = align(&a, &b);
        assert_eq!(
            rows,
            vec![
                Row::Same(0, 0),
                Row::Changed(1, 1),
                Row::Same(2, 2),
                Row::Ptxc(3),
                Row::Same(4, 3),
                Row::Ptxas(4),
            ]
        );
        // Every line of both sides appears exactly once, in order.
        let (mut i, mut j) = (0, 0);
        for r in &rows {
            match *r {
                Row::Same(x, y) | Row::Changed(x, y) => {
                    assert_eq!((x, y), (i, j));
                    i += 1;
                    j += 1;
                }
                Row::Ptxc(x) => {
                    assert_eq!(x, i);
                    i += 1;
                }
                Row::Ptxas(y) => {
                    assert_eq!(y, j);
                    j += 1;
                }
            }
        }
        assert_eq!((i, j), (5, 5));
        assert_eq!(align::<&str>(&[], &["x"]), vec![Row::Ptxas(0)]);
    }

    #[test]
    fn summary_and_json() {
        let a = listing(&[(1, "MOV R0, R1"), (2, "EXIT")]);
        let b = listing(&[(1, "MOV R0, R1"), (3, "EXIT")]);
        let d = compare(vec![a], vec![b]);
        assert_eq!(
            d[0].summary(),
            "diff: k INSTR_EXACT ptxc=2 ptxas=2 instrs regs=8/8"
        );
        let j = to_json(&d);
        assert!(j.starts_with("{\"kernels\":[{\"name\":\"k\",\"class\":\"INSTR_EXACT\""));
        assert!(j.contains("{\"kind\":\"same\",\"ptxc\":\"EXIT\",\"ptxas\":\"EXIT\"}"));
        // A kernel only ptxas has.
        let only = compare(vec![], vec![listing(&[(1, "EXIT")])]);
        assert_eq!(
            only[0].summary(),
            "diff: k DIFFERENT ptxc=0 ptxas=1 instrs regs=-/8"
        );
        assert!(side_by_side(&only[0], false).contains(">"));
    }

    #[test]
    fn golden_format_round_trips() {
        let a = listing(&[(0x1234, "LDC R1, c[0x0][0x28]"), (2, "EXIT")]);
        let mut s = String::from("# comment\n");
        write_listings(&mut s, std::slice::from_ref(&a));
        assert_eq!(read_listings(&s).unwrap(), vec![a]);
        assert!(read_listings("0123 EXIT\n").is_err());
        assert!(read_listings("kernel k regs=x\n").is_err());
    }

    #[test]
    fn register_count_of_words() {
        // ptxas's vector_add: R0..R9 used, EIATTR_REGCOUNT 12.
        let ldc = [0x00000a00ff017b82u64, 0x000fe20000000800];
        let fadd = [0x0000000304097221u64, 0x008fca0000000000];
        assert_eq!(register_count(&[ldc, fadd]), Some(12));
    }
}

//! The sm_90a scheduling model, kept as data: which opcodes are variable-latency (tracked by
//! scoreboards) and which are fixed-latency (covered by stall counts), how many cycles ptxas
//! leaves between a fixed-latency producer and its reader, and how closely it issues two
//! instructions. The figures are measured from ptxas's own output over the corpora and probes
//! (`tests/tests/latency_model.rs` re-measures every row and fails when one disagrees).
//!
//! Three tables, in `latency/`:
//!
//! * `opcodes.csv`: opcode → class, pipe, kind (`fixed`, `var`, `long`, `ctrl`) and in-order
//!   completion queues (of results, of source releases).
//! * `raw.csv`: producer × consumer × operand → the smallest distance in cycles ptxas leaves
//!   between a producer's issue and a reader's issue (read-after-write latency).
//! * `issue.csv`: first × second → the smallest distance ptxas leaves between two independent
//!   instructions (pipe throughput and issue rules).
//!
//! A row names a class (`IMAD.WIDE`), a pipe (`alu`) or `*`. A lookup tries the producer's (or
//! first instruction's) class, then its pipe, then `*`; for each, the consumer's class, pipe,
//! `*`; for each, the operand, then `*`. The first row found wins, so a specific row overrides a
//! general one.

use super::form::Latency;
use super::model::{Instr, RegFile};
use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

/// How an opcode's results are tracked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Fixed latency: readers are covered by stall counts.
    Fixed,
    /// Variable latency: a write scoreboard for results and a read scoreboard for sources,
    /// searched from SB0.
    Var,
    /// Variable latency, long (global/local memory, textures): write scoreboards are searched
    /// from SB2.
    Long,
    /// Control or synchronisation: no register results to track.
    Ctrl,
}

impl Kind {
    /// Whether results and sources are tracked by scoreboards.
    pub fn is_variable(self) -> bool {
        matches!(self, Kind::Var | Kind::Long)
    }
}

/// The scheduling description of an opcode (a row of `opcodes.csv`).
///
/// The names borrow from the embedded table text (no copies at start-up), which is why the
/// tables are `&'static str`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpClass {
    /// The row's opcode pattern (`IMAD.WIDE`).
    pub opcode: &'static str,
    /// The class name used by `raw.csv` and `issue.csv`.
    pub class: &'static str,
    /// The coarser pipe name.
    pub pipe: &'static str,
    pub kind: Kind,
    /// In-order completion queue of results, if any.
    pub queue: Option<&'static str>,
    /// In-order queue of source-register releases, if any.
    pub read_queue: Option<&'static str>,
    pub source: &'static str,
}

/// The operand through which a consumer depends on a producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// A register of this file (read as a source or address).
    File(RegFile),
    /// The guard predicate (`@P0`, `@!UP1`).
    Guard,
}

impl Operand {
    pub fn name(self) -> &'static str {
        match self {
            Operand::File(RegFile::Gpr) => "R",
            Operand::File(RegFile::Ugpr) => "UR",
            Operand::File(RegFile::Pred) => "P",
            Operand::File(RegFile::UPred) => "UP",
            Operand::File(RegFile::Barrier) => "B",
            Operand::Guard => "guard",
        }
    }
}

/// A row of `raw.csv` or `issue.csv`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// 1-based line in the file (for messages).
    pub line: usize,
    pub first: &'static str,
    pub second: &'static str,
    /// `raw.csv`: the operand (`R`, `UR`, `P`, `UP`, `guard`, `*`); `issue.csv`: `*`.
    pub operand: &'static str,
    pub cycles: u8,
    /// How many measured pairs are at exactly `cycles`.
    pub samples: u32,
    pub source: &'static str,
}

/// The loaded tables.
#[derive(Debug)]
pub struct Model {
    pub opcodes: Vec<OpClass>,
    pub raw: Vec<Row>,
    pub issue: Vec<Row>,
    by_mnemonic: HashMap<&'static str, Vec<usize>>,
    /// Every class, pipe and operand name the row tables use, as a small number (lookups hash
    /// numbers instead of building strings).
    names: HashMap<&'static str, u32>,
    raw_index: HashMap<(u32, u32, u32), usize>,
    issue_index: HashMap<(u32, u32), usize>,
    max_latency: u8,
}

/// The embedded tables.
pub const OPCODES_CSV: &str = include_str!("latency/opcodes.csv");
pub const RAW_CSV: &str = include_str!("latency/raw.csv");
pub const ISSUE_CSV: &str = include_str!("latency/issue.csv");

/// Paths of the tables relative to the workspace root (for tools that rewrite them).
pub const OPCODES_PATH: &str = "compiler/src/target/sm90a/latency/opcodes.csv";
pub const RAW_PATH: &str = "compiler/src/target/sm90a/latency/raw.csv";
pub const ISSUE_PATH: &str = "compiler/src/target/sm90a/latency/issue.csv";

fn data_lines(text: &'static str) -> impl Iterator<Item = (usize, &'static str)> {
    text.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .skip(1) // the header
}

fn parse_opcodes(text: &'static str) -> Result<Vec<OpClass>, String> {
    let mut out = Vec::new();
    for (n, l) in data_lines(text) {
        let c: Vec<&str> = l.splitn(7, ',').collect();
        if c.len() < 6 {
            return Err(format!("opcodes.csv:{n}: expected 7 columns: {l}"));
        }
        let kind = match c[3] {
            "fixed" => Kind::Fixed,
            "var" => Kind::Var,
            "long" => Kind::Long,
            "ctrl" => Kind::Ctrl,
            k => return Err(format!("opcodes.csv:{n}: unknown kind `{k}`")),
        };
        out.push(OpClass {
            opcode: c[0],
            class: c[1],
            pipe: c[2],
            kind,
            queue: (c[4] != "-").then_some(c[4]),
            read_queue: (c[5] != "-").then_some(c[5]),
            source: c.get(6).copied().unwrap_or(""),
        });
    }
    Ok(out)
}

fn parse_rows(text: &'static str, file: &str, with_operand: bool) -> Result<Vec<Row>, String> {
    let mut out = Vec::new();
    let cols = if with_operand { 6 } else { 5 };
    for (n, l) in data_lines(text) {
        let c: Vec<&str> = l.splitn(cols, ',').collect();
        if c.len() < cols - 1 {
            return Err(format!("{file}:{n}: expected {cols} columns: {l}"));
        }
        let (operand, rest) = if with_operand {
            (c[2], &c[3..])
        } else {
            ("*", &c[2..])
        };
        let cycles = rest[0]
            .parse::<u8>()
            .map_err(|e| format!("{file}:{n}: cycles `{}`: {e}", rest[0]))?;
        let samples = rest[1]
            .parse::<u32>()
            .map_err(|e| format!("{file}:{n}: samples `{}`: {e}", rest[1]))?;
        out.push(Row {
            line: n,
            first: c[0],
            second: c[1],
            operand,
            cycles,
            samples,
            source: rest.get(2).copied().unwrap_or(""),
        });
    }
    Ok(out)
}

impl Model {
    /// Parses the three tables (the embedded ones, [`OPCODES_CSV`], [`RAW_CSV`] and
    /// [`ISSUE_CSV`], or others for tests).
    pub fn parse(
        opcodes: &'static str,
        raw: &'static str,
        issue: &'static str,
    ) -> Result<Model, String> {
        let opcodes = parse_opcodes(opcodes)?;
        let raw = parse_rows(raw, "raw.csv", true)?;
        let issue = parse_rows(issue, "issue.csv", false)?;
        let mut by_mnemonic: HashMap<&'static str, Vec<usize>> = HashMap::default();
        for (k, o) in opcodes.iter().enumerate() {
            let m = o.opcode.split('.').next().unwrap_or("");
            by_mnemonic.entry(m).or_default().push(k);
        }
        let mut names: HashMap<&'static str, u32> = HashMap::default();
        let mut id = |s: &'static str| -> u32 {
            let n = names.len() as u32;
            *names.entry(s).or_insert(n)
        };
        let mut raw_index = HashMap::default();
        for (k, r) in raw.iter().enumerate() {
            let key = (id(r.first), id(r.second), id(r.operand));
            if raw_index.insert(key, k).is_some() {
                return Err(format!("raw.csv:{}: duplicate row", r.line));
            }
        }
        let mut issue_index = HashMap::default();
        for (k, r) in issue.iter().enumerate() {
            if issue_index.insert((id(r.first), id(r.second)), k).is_some() {
                return Err(format!("issue.csv:{}: duplicate row", r.line));
            }
        }
        let max_latency = raw.iter().map(|r| r.cycles).max().unwrap_or(15);
        Ok(Model {
            max_latency,
            opcodes,
            raw,
            issue,
            by_mnemonic,
            names,
            raw_index,
            issue_index,
        })
    }

    /// The row of `opcodes.csv` for a mnemonic and its modifiers, if any.
    pub fn lookup(&self, mnemonic: &str, mods: &[&str]) -> Option<&OpClass> {
        let rows = self.by_mnemonic.get(mnemonic)?;
        rows.iter()
            .map(|&k| &self.opcodes[k])
            .filter(|o| o.opcode.split('.').skip(1).all(|m| mods.contains(&m)))
            .max_by_key(|o| o.opcode.split('.').count())
    }

    /// The description of an instruction: its `opcodes.csv` row, or for an opcode the table does
    /// not name, a conservative default from the form's latency class.
    pub fn class_of(&self, i: &Instr) -> OpClass {
        if let Some(o) = self.lookup(i.mnemonic, &i.mods) {
            return *o;
        }
        let variable = matches!(i.latency(), Ok(Latency::Variable));
        OpClass {
            opcode: i.mnemonic,
            class: i.mnemonic,
            pipe: if variable { "var" } else { "unknown" },
            kind: if variable { Kind::Long } else { Kind::Fixed },
            queue: None,
            read_queue: None,
            source: "not in opcodes.csv: default from the form's latency class",
        }
    }

    /// The `raw.csv` row that applies to a producer, consumer and operand.
    pub fn raw_row(&self, p: &OpClass, c: &OpClass, op: Operand) -> Option<&Row> {
        self.raw_rows(p, c, op).next()
    }

    /// Every `raw.csv` row that applies to a producer, consumer and operand, most specific first
    /// (class before pipe before `*`, producer before consumer before operand).
    fn raw_rows(&self, p: &OpClass, c: &OpClass, op: Operand) -> impl Iterator<Item = &Row> {
        let (ps, cs, os) = (
            self.ids([p.class, p.pipe, "*"]),
            self.ids([c.class, c.pipe, "*"]),
            self.ids([op.name(), "*"]),
        );
        ps.into_iter().flatten().flat_map(move |pk| {
            cs.into_iter().flatten().flat_map(move |ck| {
                os.into_iter()
                    .flatten()
                    .filter_map(move |ok| self.raw_index.get(&(pk, ck, ok)))
                    .map(|&k| &self.raw[k])
            })
        })
    }

    /// The numbers of names (`None` for a name no row uses).
    fn ids<const N: usize>(&self, names: [&str; N]) -> [Option<u32>; N] {
        names.map(|n| self.names.get(n).copied())
    }

    /// The `issue.csv` row that applies to two instructions in this order.
    pub fn issue_row(&self, a: &OpClass, b: &OpClass) -> Option<&Row> {
        let (as_, bs) = (
            self.ids([a.class, a.pipe, "*"]),
            self.ids([b.class, b.pipe, "*"]),
        );
        for ak in as_.iter().flatten() {
            for bk in bs.iter().flatten() {
                if let Some(&k) = self.issue_index.get(&(*ak, *bk)) {
                    return Some(&self.issue[k]);
                }
            }
        }
        None
    }

    /// The smallest read-after-write latency of every row that applies to the pair (not only the
    /// most specific one): the fewest cycles ptxas has left between producers and consumers of
    /// these classes and pipes. The hazard checker's requirement (0 when no row applies).
    pub fn raw_latency_floor(&self, p: &OpClass, c: &OpClass, op: Operand) -> u8 {
        self.raw_rows(p, c, op).map(|r| r.cycles).min().unwrap_or(0)
    }

    /// Read-after-write latency in cycles (0 when no row applies).
    pub fn raw_latency(&self, p: &OpClass, c: &OpClass, op: Operand) -> u8 {
        self.raw_row(p, c, op).map_or(0, |r| r.cycles)
    }

    /// The smallest issue distance between two instructions (1 when no row applies).
    pub fn issue_gap(&self, a: &OpClass, b: &OpClass) -> u8 {
        self.issue_row(a, b).map_or(1, |r| r.cycles.max(1))
    }

    /// The largest latency in `raw.csv` (what an unknown reader must assume).
    pub fn max_latency(&self) -> u8 {
        self.max_latency
    }
}

/// The embedded model.
pub fn model() -> &'static Model {
    static M: OnceLock<Model> = OnceLock::new();
    M.get_or_init(|| {
        Model::parse(OPCODES_CSV, RAW_CSV, ISSUE_CSV)
            .unwrap_or_else(|e| panic!("the embedded latency tables are invalid: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::sm90a::forms::all;
    use crate::target::sm90a::parse_instr;

    #[test]
    fn tables_parse_and_every_form_has_a_row() {
        let m = Model::parse(OPCODES_CSV, RAW_CSV, ISSUE_CSV).unwrap();
        let mut missing: Vec<&str> = all()
            .iter()
            .map(|f| f.mnemonic)
            .filter(|mn| !m.by_mnemonic.contains_key(*mn))
            .collect();
        missing.sort();
        missing.dedup();
        assert!(missing.is_empty(), "opcodes.csv lacks {missing:?}");
        // Every class and pipe a row names exists.
        let names: std::collections::HashSet<&str> = m
            .opcodes
            .iter()
            .flat_map(|o| [o.class, o.pipe])
            .chain(["*", "after-branch"])
            .collect();
        for r in m.raw.iter().chain(&m.issue) {
            assert!(names.contains(r.first), "line {}: {}", r.line, r.first);
            assert!(names.contains(r.second), "line {}: {}", r.line, r.second);
        }
    }

    #[test]
    fn most_specific_row_wins() {
        let m = model();
        let i = parse_instr("IMAD.WIDE.U32 R2, R3, 0x4, R4").unwrap();
        assert_eq!(m.class_of(&i).class, "IMAD.WIDE");
        let i = parse_instr("IMAD R2, R3, 0x4, R4").unwrap();
        assert_eq!(m.class_of(&i).class, "IMAD");
        let i = parse_instr("HFMA2.MMA R2, -RZ, RZ, 0, 0").unwrap();
        assert_eq!(m.class_of(&i).pipe, "mma");
        let i = parse_instr("LDG.E R2, desc[UR4][R2.64]").unwrap();
        assert_eq!(m.class_of(&i).kind, Kind::Long);
        let i = parse_instr("LDS R2, [R2]").unwrap();
        assert_eq!(m.class_of(&i).queue, Some("lds"));
    }

    #[test]
    fn bad_tables_are_errors() {
        assert!(Model::parse("h\nX,X,alu,sometimes,-,-,", "h", "h").is_err());
        assert!(Model::parse("h", "h\na,b,R,x,1,", "h").is_err());
        assert!(Model::parse("h", "h", "h\na,b,1,1,\na,b,2,1,").is_err());
    }
}

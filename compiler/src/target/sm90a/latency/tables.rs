//! The latency tables' rows and their parsers, shared by the compiler (`latency.rs`, which parses
//! tables given at run time, for tests and tools) and by `build.rs` (which parses the embedded
//! CSVs at compile time and writes them out as Rust statics and perfect hashes, so that a
//! compilation does not parse 80 KB of CSV at start-up). This file uses only `std`.

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
    /// The numbers of `class` and `pipe` among the row tables' names ([`Index::names`]; `None`
    /// for a name no row uses), when known: a model numbers its own rows; a class made up
    /// elsewhere has `None` here and its names are looked up.
    pub ids: Option<[Option<u32>; 2]>,
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

fn data_lines(text: &'static str) -> impl Iterator<Item = (usize, &'static str)> {
    text.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .skip(1) // the header
}

pub fn parse_opcodes(text: &'static str) -> Result<Vec<OpClass>, String> {
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
            ids: None,
        });
    }
    Ok(out)
}

pub fn parse_rows(text: &'static str, file: &str, with_operand: bool) -> Result<Vec<Row>, String> {
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

/// The lookups over parsed tables: what [`super::Model::parse`] puts in hash maps at run time,
/// and what `build.rs` turns into perfect hashes at compile time. Both number the names the
/// same way, so the two models answer every lookup alike (a test compares them).
#[derive(Debug)]
pub struct Index {
    /// Mnemonic (the opcode pattern up to its first dot) → its `opcodes.csv` rows, in order of
    /// first appearance.
    pub by_mnemonic: Vec<(&'static str, Vec<usize>)>,
    /// Every class, pipe and operand name the row tables use; a name's number is its position.
    pub names: Vec<&'static str>,
    /// [`raw_key`] → row of `raw.csv`.
    pub raw: Vec<(u64, usize)>,
    /// [`issue_key`] → row of `issue.csv`.
    pub issue: Vec<(u64, usize)>,
    /// The largest latency in `raw.csv`.
    pub max_latency: u8,
}

/// The key of a `raw.csv` row from its producer, consumer and operand name numbers.
pub fn raw_key(first: u32, second: u32, operand: u32) -> u64 {
    (u64::from(first) << 42) | (u64::from(second) << 21) | u64::from(operand)
}

/// The key of an `issue.csv` row from its two name numbers.
pub fn issue_key(first: u32, second: u32) -> u64 {
    (u64::from(first) << 21) | u64::from(second)
}

/// Numbers the names and indexes the rows; a duplicate row is an error. Fills in the opcode
/// rows' [`OpClass::ids`].
pub fn index(opcodes: &mut [OpClass], raw: &[Row], issue: &[Row]) -> Result<Index, String> {
    let mut by_mnemonic: Vec<(&'static str, Vec<usize>)> = Vec::new();
    for (k, o) in opcodes.iter().enumerate() {
        let m = o.opcode.split('.').next().unwrap_or("");
        match by_mnemonic.iter_mut().find(|(n, _)| *n == m) {
            Some((_, rows)) => rows.push(k),
            None => by_mnemonic.push((m, vec![k])),
        }
    }
    let mut names: Vec<&'static str> = Vec::new();
    let mut numbers = std::collections::HashMap::new();
    let mut id = |s: &'static str| -> u32 {
        *numbers.entry(s).or_insert_with(|| {
            names.push(s);
            (names.len() - 1) as u32
        })
    };
    let mut seen = std::collections::HashSet::new();
    let mut raw_keys = Vec::with_capacity(raw.len());
    for (k, r) in raw.iter().enumerate() {
        let key = raw_key(id(r.first), id(r.second), id(r.operand));
        if !seen.insert(key) {
            return Err(format!("raw.csv:{}: duplicate row", r.line));
        }
        raw_keys.push((key, k));
    }
    seen.clear();
    let mut issue_keys = Vec::with_capacity(issue.len());
    for (k, r) in issue.iter().enumerate() {
        let key = issue_key(id(r.first), id(r.second));
        if !seen.insert(key) {
            return Err(format!("issue.csv:{}: duplicate row", r.line));
        }
        issue_keys.push((key, k));
    }
    for o in opcodes.iter_mut() {
        let id = |s: &str| names.iter().position(|n| *n == s).map(|k| k as u32);
        o.ids = Some([id(o.class), id(o.pipe)]);
    }
    Ok(Index {
        by_mnemonic,
        names,
        raw: raw_keys,
        issue: issue_keys,
        max_latency: raw.iter().map(|r| r.cycles).max().unwrap_or(15),
    })
}

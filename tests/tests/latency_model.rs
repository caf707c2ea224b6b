//! The latency model (`compiler/src/target/sm90a/latency/*.csv`) is a measurement of ptxas's
//! output: this test re-measures it over the ptxas listings of the corpora, the project's
//! kernels and the probes, and fails when a row disagrees.
//!
//! * Read-after-write (`raw.csv`): for every register an instruction reads, the nearest earlier
//!   writer in the same basic block; the distance is the sum of the stall counts in between.
//!   Each pair is routed to the row the model would use for it (most specific first) and every
//!   row must hold exactly the smallest distance routed to it and how many pairs are at it.
//! * Issue distances (`issue.csv`): every two instructions of a block, up to 24 cycles apart,
//!   where the second does not read a result of the first; and, for `(X, *)` rows, the stall
//!   of an instruction that ends a block.
//!
//! Functions ptxas compiled in debug mode (`.target sm_90a, debug`: every instruction stalls 15
//! and waits on SB0|SB1) measure nothing and are left out.
//!
//! `PTXC_BLESS=1` rewrites the tables from the measurement: rows keep their keys when they are
//! still measured; the row set follows the rules of [`generate`] (documented there).

use ptxc::emit::scoreboard::{self, Node};
use ptxc::target::sm90a::latency::{self, Model, Operand, Row};
use ptxc::target::sm90a::{Instr, listed_instr, parse_listing};
use ptxc_tests::sass::{listings, sass_probe_ptx};
use ptxc_tests::{accepted_corpus, own_kernels, probes, workspace_root};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One function of a listing, analysed.
struct Func {
    name: String,
    code: Vec<Instr>,
    nodes: Vec<Node>,
    /// Issue cycle of each instruction (sum of the listed stalls before it).
    t: Vec<i64>,
    cfg: scoreboard::Cfg,
}

fn is_debug_ptx(p: &Path) -> bool {
    std::fs::read_to_string(p).is_ok_and(|s| {
        s.lines()
            .any(|l| l.trim_start().starts_with(".target") && l.contains("debug"))
    })
}

fn functions() -> Option<Vec<Func>> {
    let mut files: Vec<PathBuf> = accepted_corpus();
    files.extend(own_kernels());
    files.extend(probes(0..=20));
    files.extend(sass_probe_ptx());
    let ls = listings(&files)?;
    let mut out = Vec::new();
    for (path, text) in ls {
        if is_debug_ptx(&path) {
            continue;
        }
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut by_fn: BTreeMap<String, Vec<Instr>> = BTreeMap::new();
        let mut order = Vec::new();
        for l in parse_listing(&text) {
            let i = listed_instr(&l).unwrap_or_else(|e| panic!("{file}: {}: {e}", l.text));
            if !by_fn.contains_key(&l.function) {
                order.push(l.function.clone());
            }
            by_fn.entry(l.function.clone()).or_default().push(i);
        }
        for name in order {
            let code = by_fn.remove(&name).unwrap_or_default();
            let nodes = scoreboard::analyze(&code).unwrap_or_else(|e| panic!("{file}: {e}"));
            let mut t = vec![0i64; code.len()];
            for k in 1..code.len() {
                t[k] = t[k - 1] + code[k - 1].ctrl.stall as i64;
            }
            let cfg = scoreboard::cfg(&nodes);
            out.push(Func {
                name: format!("{file} {name}"),
                code,
                nodes,
                t,
                cfg,
            });
        }
    }
    Some(out)
}

/// A measured pair: the keys it can be routed by, its distance and where it is.
#[derive(Clone, Debug)]
struct Obs {
    first: [String; 2],  // class, pipe
    second: [String; 2], // class, pipe ("*" for block ends)
    operand: String,
    d: i64,
    at: String,
}

const WINDOW: i64 = 24;

fn observe(funcs: &[Func]) -> (Vec<Obs>, Vec<Obs>) {
    let mut raw = Vec::new();
    let mut issue = Vec::new();
    for f in funcs {
        for &(s, e) in &f.cfg.blocks {
            for k in s..e {
                let node = &f.nodes[k];
                if node.padding {
                    continue;
                }
                let at = format!("{}@0x{:x}", f.name, f.code[k].addr);
                // RAW: nearest writer in the block of each register read.
                let mut seen = BTreeSet::new();
                for &u in &node.reads {
                    if !seen.insert(u) {
                        continue;
                    }
                    if let Some(x) = (s..k).rev().find(|&x| f.nodes[x].writes.contains(&u)) {
                        let p = &f.nodes[x];
                        let op = if Some(u) == node.guard {
                            Operand::Guard
                        } else {
                            Operand::File(u.0)
                        };
                        raw.push(Obs {
                            first: [p.class.class.to_string(), p.class.pipe.to_string()],
                            second: [node.class.class.to_string(), node.class.pipe.to_string()],
                            operand: op.name().to_string(),
                            d: f.t[k] - f.t[x],
                            at: at.clone(),
                        });
                    }
                }
                // Issue distances from earlier independent instructions of the block.
                for x in (s..k).rev() {
                    let d = f.t[k] - f.t[x];
                    if d > WINDOW {
                        break;
                    }
                    let p = &f.nodes[x];
                    // Pairs where the second reads the first's results are read-after-write
                    // pairs: their distance is the latency, measured above.
                    if node.reads.iter().any(|u| p.writes.contains(u)) {
                        continue;
                    }
                    // An instruction that never runs (`@!PT`) takes no pipe slot, as the
                    // pass assumes (`scoreboard::never_runs`).
                    if scoreboard::never_runs(&f.code[x]) {
                        continue;
                    }
                    issue.push(Obs {
                        first: [p.class.class.to_string(), p.class.pipe.to_string()],
                        second: [node.class.class.to_string(), node.class.pipe.to_string()],
                        operand: "*".into(),
                        d,
                        at: at.clone(),
                    });
                }
            }
            // After a branch: every fixed-latency result of the block must be written back
            // before the instruction after the branch issues (ptxas's "worst latency" rule);
            // measured from the last writer of each register to the issue after the branch.
            let k = e - 1;
            if scoreboard::drains(&f.nodes[k]) {
                let after = f.t[k] + f.code[k].ctrl.stall as i64;
                let mut seen = BTreeSet::new();
                for x in (s..k).rev() {
                    let p = &f.nodes[x];
                    for &u in &p.writes {
                        if seen.insert(u) && p.class.kind == latency::Kind::Fixed {
                            raw.push(Obs {
                                first: [p.class.class.to_string(), p.class.pipe.to_string()],
                                second: [
                                    scoreboard::AFTER_BRANCH.into(),
                                    scoreboard::AFTER_BRANCH.into(),
                                ],
                                operand: Operand::File(u.0).name().to_string(),
                                d: after - f.t[x],
                                at: format!("{}@0x{:x}", f.name, f.code[k].addr),
                            });
                        }
                    }
                }
            }
            // A block that falls through into the next one (`BSSY`, or any instruction before
            // a branch target): its distance to the next instruction is an issue distance like
            // any other (ptxas leaves 4 cycles between `BSSY` and a `BRA`, 2 between `STS` and
            // a `BSYNC`).
            // Only into a control instruction (`BSYNC`, `BRA`, `BSSY`, …): into a loop head
            // ptxas leaves less than within a block (`LDS` then `STL` 2 cycles apart in
            // `k_spill__explicit_smem`, where its pipe keeps 4). Not after a memory barrier:
            // `MEMBAR` then a `BRA` in the same block are 15 cycles apart (24 pairs), into a
            // `BRA` that starts a block 6 (`k_fence_proxy_alias`).
            let falls_through = f.nodes[k].flow == scoreboard::Flow::Next
                && (f.code[k].mnemonic == "BSSY" || f.nodes[k].class.kind != latency::Kind::Ctrl);
            if falls_through
                && e < f.code.len()
                && f.nodes[e].class.kind == latency::Kind::Ctrl
                && f.nodes[k].class.pipe != "membar"
                && !f.nodes[e].padding
                && !f.nodes[e]
                    .reads
                    .iter()
                    .any(|u| f.nodes[k].writes.contains(u))
                && !scoreboard::never_runs(&f.code[k])
                && !scoreboard::never_runs(&f.code[e])
            {
                let next = &f.nodes[e];
                issue.push(Obs {
                    first: [
                        f.nodes[k].class.class.to_string(),
                        f.nodes[k].class.pipe.to_string(),
                    ],
                    second: [next.class.class.to_string(), next.class.pipe.to_string()],
                    operand: "*".into(),
                    d: f.code[k].ctrl.stall as i64,
                    at: format!("{}@0x{:x}", f.name, f.code[k].addr),
                });
            }
            // Block end: the stall of the last instruction.
            let control = f.nodes[k].flow != scoreboard::Flow::Next
                || matches!(f.nodes[k].class.pipe, "branch" | "conv");
            if !f.nodes[k].padding && control {
                let node = &f.nodes[k];
                issue.push(Obs {
                    first: [node.class.class.to_string(), node.class.pipe.to_string()],
                    second: ["*".into(), "*".into()],
                    operand: "*".into(),
                    d: f.code[k].ctrl.stall as i64,
                    at: format!("{}@0x{:x}", f.name, f.code[k].addr),
                });
            }
        }
    }
    (raw, issue)
}

/// Routes an observation to the most specific existing key, as `Model::raw_row` does.
fn route<'a>(
    keys: &'a BTreeSet<(String, String, String)>,
    o: &Obs,
) -> Option<&'a (String, String, String)> {
    for pk in [o.first[0].as_str(), o.first[1].as_str(), "*"] {
        for ck in [o.second[0].as_str(), o.second[1].as_str(), "*"] {
            for ok in [o.operand.as_str(), "*"] {
                if let Some(k) = keys.get(&(pk.to_string(), ck.to_string(), ok.to_string())) {
                    return Some(k);
                }
            }
        }
    }
    None
}

/// A row key: (first, second, operand).
type Key = (String, String, String);

#[derive(Clone, Debug, Default)]
struct Measured {
    min: i64,
    samples: u32,
    at: String,
    total: u32,
}

fn measure(
    keys: &BTreeSet<(String, String, String)>,
    obs: &[Obs],
) -> (BTreeMap<Key, Measured>, Vec<Obs>) {
    let mut out: BTreeMap<(String, String, String), Measured> = BTreeMap::new();
    let mut unrouted = Vec::new();
    for o in obs {
        match route(keys, o) {
            Some(k) => {
                let m = out.entry(k.clone()).or_insert(Measured {
                    min: i64::MAX,
                    ..Measured::default()
                });
                m.total += 1;
                if o.d < m.min {
                    m.min = o.d;
                    m.samples = 1;
                    m.at = o.at.clone();
                } else if o.d == m.min {
                    m.samples += 1;
                }
            }
            None => unrouted.push(o.clone()),
        }
    }
    (out, unrouted)
}

/// The row set the measurement supports. With `key(o, level)` the key of an observation at a
/// level of detail — 0: `(*, *, operand)`, 1: `(producer pipe, *, operand)`, 2: `(producer pipe,
/// consumer pipe, operand)`, 3: `(producer class, consumer class, operand)` — a key gets a row
///
/// * at levels 0 and 1 whenever a pair is observed;
/// * at levels 2 and 3 when its smallest distance is above that of the next coarser key, is at
///   most 16 cycles, and at least two pairs are at it (a single pair far apart says nothing
///   about latency);
/// * for issue distances, `(class, *)` for each control class that ends blocks, from the stall of
///   the block's last instruction, when it is above 1;
/// * for results still in flight at a branch, `(producer pipe, after-branch, file)` always and
///   `(producer class, after-branch, file)` when larger (seen twice).
///
/// Issue rows of distance 1 are dropped: 1 is the default.
fn generate(obs: &[Obs], issue: bool) -> BTreeSet<(String, String, String)> {
    let key_at = |o: &Obs, level: usize| -> Key {
        let op = o.operand.clone();
        match level {
            0 => ("*".into(), "*".into(), op),
            1 => (o.first[1].clone(), "*".into(), op),
            2 => (o.first[1].clone(), o.second[1].clone(), op),
            _ => (o.first[0].clone(), o.second[0].clone(), op),
        }
    };
    let inner: Vec<&Obs> = obs.iter().filter(|o| o.second[0] != "*").collect();
    let mut mins: Vec<BTreeMap<Key, (i64, u32)>> = vec![BTreeMap::new(); 4];
    for o in &inner {
        for (level, m) in mins.iter_mut().enumerate() {
            let e = m.entry(key_at(o, level)).or_insert((i64::MAX, 0));
            if o.d < e.0 {
                *e = (o.d, 1);
            } else if o.d == e.0 {
                e.1 += 1;
            }
        }
    }
    let mut keys: BTreeSet<Key> = BTreeSet::new();
    for o in &inner {
        if o.second[0] == scoreboard::AFTER_BRANCH {
            // Results pending at a branch: a row per producer pipe, refined by class.
            keys.insert(key_at(o, 2));
            let (min, n) = mins[3][&key_at(o, 3)];
            if min > mins[2][&key_at(o, 2)].0 && min <= 16 && n >= 2 {
                keys.insert(key_at(o, 3));
            }
            continue;
        }
        keys.insert(key_at(o, 0));
        keys.insert(key_at(o, 1));
        for level in 2..4 {
            let (min, n) = mins[level][&key_at(o, level)];
            let coarser = mins[level - 1][&key_at(o, level - 1)].0;
            if min > coarser && min <= 16 && n >= 2 {
                keys.insert(key_at(o, level));
            }
        }
    }
    if issue {
        let ends: BTreeSet<Key> = obs
            .iter()
            .filter(|o| o.second[0] == "*")
            .map(|o| (o.first[0].clone(), "*".into(), "*".into()))
            .collect();
        let (ends_m, _) = measure(&ends, obs);
        for (k, m) in ends_m {
            if m.min > 1 {
                keys.insert(k);
            }
        }
    }
    if issue {
        let (m, _) = measure(&keys, obs);
        keys.retain(|k| m.get(k).is_some_and(|x| x.min > 1));
    }
    keys
}

fn rows_to_keys(rows: &[Row]) -> BTreeSet<(String, String, String)> {
    rows.iter()
        .map(|r| {
            (
                r.first.to_string(),
                r.second.to_string(),
                r.operand.to_string(),
            )
        })
        .collect()
}

fn header(text: &str) -> String {
    let mut h = String::new();
    for l in text.lines() {
        h.push_str(l);
        h.push('\n');
        if !l.starts_with('#') {
            break; // the column names
        }
    }
    h
}

fn write_table(
    path: &str,
    old: &str,
    keys: &BTreeSet<(String, String, String)>,
    m: &BTreeMap<(String, String, String), Measured>,
    with_operand: bool,
) {
    let mut s = header(old);
    for k in keys {
        let Some(x) = m.get(k) else { continue };
        if with_operand {
            s.push_str(&format!(
                "{},{},{},{},{},{} (of {} pairs)\n",
                k.0, k.1, k.2, x.min, x.samples, x.at, x.total
            ));
        } else {
            s.push_str(&format!(
                "{},{},{},{},{} (of {} pairs)\n",
                k.0, k.1, x.min, x.samples, x.at, x.total
            ));
        }
    }
    std::fs::write(workspace_root().join(path), s).expect("write table");
}

fn check(
    name: &str,
    rows: &[Row],
    m: &BTreeMap<(String, String, String), Measured>,
    errors: &mut Vec<String>,
) {
    for r in rows {
        let k = (
            r.first.to_string(),
            r.second.to_string(),
            r.operand.to_string(),
        );
        match m.get(&k) {
            None => errors.push(format!(
                "{name}:{}: {},{},{}: no pair measured any more",
                r.line, r.first, r.second, r.operand
            )),
            Some(x) if x.min != r.cycles as i64 || x.samples != r.samples => errors.push(format!(
                "{name}:{}: {},{},{}: table {} cycles ({} pairs), measured {} ({} pairs, e.g. {})",
                r.line, r.first, r.second, r.operand, r.cycles, r.samples, x.min, x.samples, x.at
            )),
            Some(_) => {}
        }
    }
}

#[test]
fn latency_tables_match_ptxas() {
    let Some(funcs) = functions() else { return };
    let (raw_obs, issue_obs) = observe(&funcs);
    let model = Model::parse(latency::OPCODES_CSV, latency::RAW_CSV, latency::ISSUE_CSV)
        .expect("tables parse");
    if std::env::var_os("PTXC_BLESS").is_some_and(|v| v == "1") {
        let raw_keys = generate(&raw_obs, false);
        let (m, _) = measure(&raw_keys, &raw_obs);
        write_table(latency::RAW_PATH, latency::RAW_CSV, &raw_keys, &m, true);
        let issue_keys = generate(&issue_obs, true);
        let (m, _) = measure(&issue_keys, &issue_obs);
        write_table(
            latency::ISSUE_PATH,
            latency::ISSUE_CSV,
            &issue_keys,
            &m,
            false,
        );
        println!("latency-model: tables rewritten; rebuild and rerun to check them");
        return;
    }
    let mut errors = Vec::new();
    let raw_keys = rows_to_keys(&model.raw);
    let (raw_m, raw_unrouted) = measure(&raw_keys, &raw_obs);
    check("raw.csv", &model.raw, &raw_m, &mut errors);
    let issue_keys = rows_to_keys(&model.issue);
    let (issue_m, _) = measure(&issue_keys, &issue_obs);
    check("issue.csv", &model.issue, &issue_m, &mut errors);
    // Every read-after-write pair must have a row: an unmodelled pair would be unchecked.
    let mut missing: BTreeSet<String> = BTreeSet::new();
    for o in &raw_unrouted {
        missing.insert(format!(
            "{}/{} -> {}/{} via {} (e.g. {})",
            o.first[0], o.first[1], o.second[0], o.second[1], o.operand, o.at
        ));
    }
    for m in missing.iter().take(20) {
        errors.push(format!("raw.csv: no row for {m}"));
    }
    println!(
        "latency-model: {} functions, {} read-after-write pairs over {} rows, {} issue pairs over {} rows",
        funcs.len(),
        raw_obs.len(),
        model.raw.len(),
        issue_obs.len(),
        model.issue.len()
    );
    assert!(
        errors.is_empty(),
        "{} disagreements (PTXC_BLESS=1 regenerates the tables):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

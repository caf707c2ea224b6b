//! Issue 5's cluster acceptance test: for every cluster probe (`shared/notes/probes` folders
//! 01–12) that ptxc compiles, the cluster-relevant instructions it emits — SR_CgaCtaId/SR_SWINHI
//! reads, `LEA …0x18`, `PRMT …0x654`, MEMBAR/ERRBAR/CGAERRBAR/CCTL, UCGABAR_*, ELECT, SYNCS.*,
//! LDGMC/REDG, generic LD.E/ST.E/ATOM.E, FENCE — appear in the same order as in ptxas's output
//! for the same probe. Prints the coverage.

use ptxc::diag::SourceFile;
use ptxc::driver;
use ptxc::frontend::check::Arch;
use ptxc_tests::{cuobjdump_sass, probes, ptxas};
use std::path::Path;

/// The cluster-relevant part of one instruction's text (mnemonic and modifiers, plus the
/// distinguishing operand), or `None` for anything else.
fn cluster_key(text: &str) -> Option<String> {
    let text = text.trim().trim_end_matches(';').trim();
    let text = if text.starts_with('@') {
        text.split_once(' ').map_or(text, |(_, r)| r.trim())
    } else {
        text
    };
    let (opcode, rest) = text.split_once(' ').unwrap_or((text, ""));
    let mnemonic = opcode.split('.').next().unwrap_or(opcode);
    let key = match mnemonic {
        "S2R" | "S2UR" if rest.contains("SR_CgaCtaId") => "S2R SR_CgaCtaId".to_string(),
        "S2R" | "S2UR" if rest.contains("SR_SWINHI") => "S2R SR_SWINHI".to_string(),
        "LEA" | "ULEA" if rest.trim_end().ends_with("0x18") => "LEA 0x18".to_string(),
        "PRMT" | "UPRMT" if rest.contains("0x654") => "PRMT 0x654".to_string(),
        "MEMBAR" | "ERRBAR" | "CGAERRBAR" | "CCTL" | "UCGABAR_ARV" | "UCGABAR_WAIT" | "ELECT"
        | "SYNCS" | "LDGMC" | "REDG" | "FENCE" => opcode.to_string(),
        "LD" | "ST" | "ATOM" if opcode.split('.').nth(1) == Some("E") => {
            mnemonic.to_string() + ".E"
        }
        _ => return None,
    };
    Some(key)
}

fn ptxc_keys(path: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let src = SourceFile::new(path.display().to_string(), text);
    let checked = driver::frontend(&src, Arch::SM90A).ok()?;
    let opts = ptxc::passes::Options {
        verify: true,
        ..ptxc::passes::Options::new()
    };
    let (lowered, _) = driver::lower(&checked, &opts).ok()?;
    let encoded = driver::encode(&lowered).ok()?;
    let mut keys = Vec::new();
    for f in &encoded {
        for line in ptxc::emit::sass::listing(f).ok()?.lines().skip(1) {
            if let Some((_, t)) = line.split_once("*/") {
                keys.extend(cluster_key(t));
            }
        }
    }
    Some(keys)
}

fn ptxas_keys(path: &Path) -> Option<Vec<String>> {
    let cubin = ptxas(path, &[])?.cubin?;
    let sass = cuobjdump_sass(&cubin)?;
    Some(
        sass.lines()
            .filter_map(|l| {
                let l = l.trim();
                let body = l.strip_prefix("/*")?.split_once("*/")?.1;
                let body = body.split("/*").next()?;
                cluster_key(body)
            })
            .collect(),
    )
}

/// Probes where ptxc knowingly differs, with the reason.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // None today: every probe with cluster instructions has them in ptxas's order. A new
    // entry names the probe and why ptxc knowingly differs.
];

#[test]
fn cluster_instructions_come_in_ptxas_order() {
    let files = probes(1..=12);
    assert!(files.len() > 300, "the probes are missing");
    let (mut compiled, mut same, mut with_cluster) = (0, 0, 0);
    let mut differ = Vec::new();
    for f in &files {
        let Some(theirs) = ptxas_keys(f) else {
            continue;
        };
        let Some(ours) = ptxc_keys(f) else { continue };
        compiled += 1;
        if theirs.is_empty() && ours.is_empty() {
            continue;
        }
        with_cluster += 1;
        if KNOWN_DIFFERENCES.iter().any(|(name, _)| f.ends_with(name)) {
            continue;
        }
        if ours == theirs {
            same += 1;
        } else {
            differ.push(format!(
                "{}:\n  ptxas {theirs:?}\n  ptxc  {ours:?}",
                f.display()
            ));
        }
    }
    println!(
        "cluster-order: {compiled} of {} probes compile; {with_cluster} have cluster instructions; {same} in ptxas's order, {} not, {} known differences",
        files.len(),
        differ.len(),
        KNOWN_DIFFERENCES.len()
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

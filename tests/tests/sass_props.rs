//! Per-form property tests in the style of NAK's nvdisasm tests: random legal field values for
//! every form → the word → `nvdisasm -b SM90a`; the text must equal ptxc's printer, the decoded
//! instruction must re-encode to the same word, and parsing nvdisasm's text must too.

use ptxc::target::sm90a::sample::sample;
use ptxc::target::sm90a::tables::all;
use ptxc::target::sm90a::{Ctrl, decode_with_form, encode, parse_instr};
use ptxc_tests::sass::nvdisasm_words;

/// Cases per form (each is one nvdisasm-checked word).
const CASES: u64 = 64;

#[test]
fn every_form_matches_nvdisasm() {
    let forms = all();
    let mut words = Vec::new();
    let mut owner = Vec::new();
    for f in forms {
        for k in 0..CASES {
            words.push(sample(f, k));
            owner.push(f.id);
        }
    }
    let Some(texts) = nvdisasm_words(&words) else {
        return;
    };
    let mut failures: Vec<String> = Vec::new();
    let (mut exact_text, mut ambiguous_text) = (0usize, 0usize);
    let mut failed_forms = std::collections::BTreeSet::new();
    for (i, (w, t)) in words.iter().zip(&texts).enumerate() {
        let f = &forms[owner[i]];
        let addr = 16 * i as u64;
        let mut fail = |msg: String| {
            // One example per form.
            if failed_forms.insert(f.id) {
                failures.push(format!(
                    "[{} #{}: {}] 0x{:016x} 0x{:016x}: {msg}",
                    f.id,
                    f.title(),
                    f.evidence.split(';').next().unwrap_or(""),
                    w[0],
                    w[1]
                ));
            }
        };
        let want = match t {
            Ok(t) => t.clone(),
            Err(e) => {
                fail(format!("nvdisasm rejects the word: {e}"));
                continue;
            }
        };
        let (df, d) = match decode_with_form(*w, addr) {
            Ok(x) => x,
            Err(e) => {
                fail(format!("nvdisasm `{want}`, ptxc cannot decode: {e}"));
                continue;
            }
        };
        if df.id != f.id {
            fail(format!(
                "decodes as another form, #{} {}",
                df.id,
                df.title()
            ));
        }
        let got = d.to_string();
        if got != want {
            fail(format!("nvdisasm `{want}`\n      ptxc     `{got}`"));
            continue;
        }
        match encode(&d) {
            Ok(x) if x == *w => {}
            Ok(x) => fail(format!("re-encodes to 0x{:016x} 0x{:016x}", x[0], x[1])),
            Err(e) => fail(format!("does not re-encode: {e}")),
        }
        match parse_instr(&want) {
            Ok(mut p) => {
                p.addr = addr;
                p.ctrl = Ctrl::from_hi(w[1]);
                // The text may leave out a field (a PT predicate output in one of two slots):
                // then another word with the same text is as good.
                match encode(&p) {
                    Ok(x) if x == *w => exact_text += 1,
                    Ok(x) => match decode_with_form(x, addr) {
                        Ok((_, i)) if i.to_string() == want => ambiguous_text += 1,
                        _ => fail(format!(
                            "nvdisasm's text assembles to 0x{:016x} 0x{:016x}",
                            x[0], x[1]
                        )),
                    },
                    Err(e) => fail(format!("nvdisasm's text does not assemble: {e}")),
                }
            }
            Err(e) => fail(format!("nvdisasm's text does not parse: {e}")),
        }
    }
    eprintln!(
        "property test: {} forms x {CASES} cases = {} words; {} forms failed; texts that \
         assemble to the same word: {exact_text}, to another word with the same text: \
         {ambiguous_text}",
        forms.len(),
        words.len(),
        failed_forms.len()
    );
    assert!(
        failures.is_empty(),
        "{} forms disagree with nvdisasm:\n{}",
        failed_forms.len(),
        failures.join("\n")
    );
}

/// The control-word rules of the tables (`Form::nowbar`/`norbar`, evidence in
/// `tests/sass-probes/ctrlscan.txt`) agree with nvdisasm both ways: a form the tables let set a
/// write (read) scoreboard is accepted with scoreboard 0, a form they forbid it is rejected, and
/// ptxc's encoder refuses to set it. nvdisasm stops at the first word it rejects, so each
/// rejection costs a run: those are checked once per (mnemonic, opcode) and rule.
#[test]
fn scoreboard_rules_match_nvdisasm() {
    let forms = all();
    let mut accept = Vec::new();
    let mut reject = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for f in forms {
        let w = sample(f, 0);
        let mut c = Ctrl::from_hi(w[1]);
        c.wbar = 7;
        c.rbar = 7;
        for (wbar, forbidden) in [(true, f.nowbar), (false, f.norbar)] {
            let mut c = c;
            if wbar {
                c.wbar = 0;
            } else {
                c.rbar = 0;
            }
            let word = [
                w[0],
                (w[1] & !ptxc::target::sm90a::CTRL_MASK_HI) | c.to_hi(),
            ];
            let what = if wbar { "write" } else { "read" };
            if forbidden {
                if seen.insert((f.mnemonic, f.opcode, f.nowbar, f.norbar, wbar)) {
                    reject.push((f, what, word));
                }
            } else {
                accept.push((f, what, word));
            }
        }
    }
    let mut failures = Vec::new();
    for (list, want_ok) in [(&accept, true), (&reject, false)] {
        let words: Vec<[u64; 2]> = list.iter().map(|x| x.2).collect();
        let Some(texts) = nvdisasm_words(&words) else {
            return;
        };
        for ((f, what, w), t) in list.iter().zip(&texts) {
            if t.is_ok() != want_ok {
                failures.push(format!(
                    "#{} {}: nvdisasm {} {what} scoreboard 0 ({t:?}) but the tables say {}",
                    f.id,
                    f.title(),
                    if t.is_ok() { "accepts" } else { "rejects" },
                    if want_ok { "it may" } else { "it may not" }
                ));
            }
            // The encoder follows the tables.
            if let Ok((_, mut i)) = decode_with_form([w[0], w[1] | (0x3f << 46)], 0) {
                i.ctrl = Ctrl::from_hi(w[1]);
                if encode(&i).is_ok() != want_ok {
                    failures.push(format!(
                        "#{} {}: encoder disagrees on {what} scoreboard 0",
                        f.id,
                        f.title()
                    ));
                }
            }
        }
    }
    eprintln!(
        "scoreboard rules: {} words accepted, {} rejected as the tables say",
        accept.len(),
        reject.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

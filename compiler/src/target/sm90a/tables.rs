//! The encoding tables as the compiler uses them: the forms the DSL in `forms/` describes,
//! embedded as static data by the build script, with their indexes.
//!
//! `build.rs` runs [`super::forms::build`] and writes every form as a Rust constant
//! (`$OUT_DIR/sass_forms.rs`: `FORMS`, and `forms_named`, the index by mnemonic), so a process
//! that encodes one instruction does not build 700 forms first. `embedded_tables_equal_the_dsl`
//! checks that the embedded forms are exactly what the DSL builds.

use super::form::*;
use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/sass_forms.rs"));
}

/// The tables and their indexes. Compiling only looks forms up by mnemonic (an index built at
/// compile time); the indexes that decoding (by opcode) and listing parsing (interned names)
/// need are built on first use.
pub struct Tables {
    pub forms: &'static [Form],
    by_opcode: OnceLock<HashMap<u16, Vec<usize>>>,
    interned: OnceLock<HashMap<&'static str, &'static str>>,
}

static TABLES: Tables = Tables {
    forms: &embedded::FORMS,
    by_opcode: OnceLock::new(),
    interned: OnceLock::new(),
};

/// The tables.
pub fn tables() -> &'static Tables {
    &TABLES
}

/// Every form.
pub fn all() -> &'static [Form] {
    tables().forms
}

impl Tables {
    /// The forms of a mnemonic, in table order.
    pub fn by_name(&self, mnemonic: &str) -> &'static [usize] {
        embedded::forms_named(mnemonic)
    }
    /// The forms with a 12-bit opcode.
    pub fn by_opcode(&self, opcode: u16) -> &[usize] {
        let by_opcode = self.by_opcode.get_or_init(|| {
            let mut by_opcode: HashMap<u16, Vec<usize>> = HashMap::default();
            for f in self.forms {
                by_opcode.entry(f.opcode).or_default().push(f.id);
            }
            by_opcode
        });
        by_opcode.get(&opcode).map(|v| &v[..]).unwrap_or(&[])
    }
    /// The static copy of a name the tables use (mnemonic, modifier token, suffix, keyword).
    pub fn intern(&self, s: &str) -> Option<&'static str> {
        let interned = self.interned.get_or_init(|| intern_names(self.forms));
        interned.get(s).copied()
    }
}

/// Every name the forms use (mnemonics, modifier tokens, suffixes, keywords), each also split at
/// its dots, mapped to its static copy.
fn intern_names(forms: &'static [Form]) -> HashMap<&'static str, &'static str> {
    let mut interned: HashMap<&'static str, &'static str> = HashMap::default();
    let mut intern = |s: &'static str| {
        for t in s.split('.') {
            if !t.is_empty() {
                interned.insert(t, t);
            }
        }
        interned.insert(s, s);
    };
    for f in forms {
        intern(f.mnemonic);
        for m in f.mods.iter() {
            match m {
                ModSpec::Fixed(t) => intern(t),
                ModSpec::Field { names, .. } => names.iter().for_each(|(_, n)| intern(n)),
                ModSpec::Alias { name, .. } => intern(name),
            }
        }
        for o in f.ops.iter() {
            for s in o.sfx.iter() {
                s.names.iter().for_each(|(_, n)| intern(n));
            }
            match &o.spec {
                Spec::Enum { names, .. } => names.iter().for_each(|(_, n)| intern(n)),
                Spec::Lit(s) => intern(s),
                Spec::Mem(m) => {
                    for t in m.terms.iter() {
                        if let Some(s) = &t.sfx {
                            s.names.iter().for_each(|(_, n)| intern(n));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    interned
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded forms are exactly what the DSL builds (the build script ran the same code;
    /// this catches a stale or mis-printed embedding), and the mnemonic index lists every form.
    #[test]
    fn embedded_tables_equal_the_dsl() {
        let built = super::super::forms::build();
        assert_eq!(built.len(), all().len());
        for (b, e) in built.iter().zip(all()) {
            assert_eq!(format!("{b:?}"), format!("{e:?}"), "form {}", b.id);
        }
        let mut named = 0;
        for (i, f) in all().iter().enumerate() {
            assert_eq!(f.id, i);
            let ids = tables().by_name(f.mnemonic);
            assert!(ids.contains(&i), "{} not indexed", f.mnemonic);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "table order");
            named += usize::from(ids[0] == i);
        }
        assert!(named > 100, "{named} mnemonics");
        assert!(tables().by_name("NOSUCH").is_empty());
    }

    /// The evidence and families survive the embedding (spot check).
    #[test]
    fn embedded_forms_keep_their_evidence() {
        let f = &all()[tables().by_name("IMAD")[0]];
        assert_eq!(f.family, "int");
        assert!(!f.evidence.is_empty());
    }
}

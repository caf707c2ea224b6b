//! The PTX frontend: lexer → grammar → AST → semantic check.

pub mod ast;
pub mod check;
pub mod isa;
pub mod isa_forms;
pub mod lexer;
pub mod print;
pub mod simple_instr;
pub mod types;

#[allow(clippy::all, clippy::pedantic, unused_parens)]
mod grammar {
    include!(concat!(env!("OUT_DIR"), "/frontend/grammar.rs"));
}

use crate::diag::Diagnostic;
use ast::{Module, Span};
use lalrpop_util::ParseError;
use lexer::{LexError, Tok};

/// Parses PTX source into an AST, or returns the first syntax error.
///
/// The fast path parses the chained tokens ([`lexer::tokenize_chained_with`]) with its simple
/// instruction lines already parsed ([`simple_instr::Folder`]: most straight from their bytes,
/// the rest every few thousand tokens while they are lexed); when that fails for any reason,
/// the plain tokens are parsed again ([`parse_plain`]) and their error is the diagnostic, so that
/// a diagnostic never depends on the fast path.
pub fn parse(src: &str) -> Result<Module, Diagnostic> {
    let mut folder = simple_instr::Folder::default();
    if let Ok(mut tokens) = lexer::tokenize_chained_with(src, Some(&mut folder)) {
        folder.fold(&mut tokens);
        if let Ok(m) = grammar::ModuleParser::new().parse(
            &mut folder.folded,
            tokens.into_iter().map(Ok::<_, LexError>),
        ) {
            return Ok(m);
        }
    }
    parse_plain(src)
}

/// Parses the plain tokens ([`lexer::tokenize`]) with the grammar alone: what [`parse`] gives
/// when its fast path fails, and the reference that the fast path's trees are tested against.
pub fn parse_plain(src: &str) -> Result<Module, Diagnostic> {
    let tokens = lexer::tokenize(src)
        .map_err(|e| Diagnostic::error(Span::new(e.start, e.end), e.message))?;
    let parser = grammar::ModuleParser::new();
    parser
        .parse(
            &mut Vec::new(),
            tokens.iter().copied().map(Ok::<_, LexError>),
        )
        .map_err(|e| syntax_error(src, &tokens, e))
}

fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::Ident(s) | Tok::OpChain(s) => format!("identifier `{s}`"),
        Tok::Int(s) | Tok::Float(s) | Tok::HexF32(s) | Tok::HexF64(s) => format!("number `{s}`"),
        Tok::Str(s) => format!("string {s}"),
        other => format!("`{other}`"),
    }
}

fn syntax_error(
    src: &str,
    tokens: &[lexer::Spanned<'_>],
    e: ParseError<usize, Tok<'_>, LexError>,
) -> Diagnostic {
    match e {
        ParseError::InvalidToken { location } => {
            Diagnostic::error(Span::new(location, location + 1), "invalid token")
        }
        ParseError::UnrecognizedEof { location, expected } => {
            let what = if expected.iter().any(|x| x == "\"}\"") {
                "unexpected end of file: a `{` block is not closed"
            } else if expected.iter().any(|x| x == "\";\"") {
                "unexpected end of file: expected `;`"
            } else {
                "unexpected end of file"
            };
            let at = location.min(src.len());
            let d = Diagnostic::error(Span::new(at, at), what);
            match unclosed_brace(tokens) {
                Some(open) => d.with_note(Some(Span::new(open, open + 1)), "the block opened here"),
                None => d,
            }
        }
        ParseError::UnrecognizedToken {
            token: (l, tok, r),
            expected,
        } => {
            // A missing `;` is best reported where it is missing: right after the previous token.
            let wants_semi = expected.iter().any(|x| x == "\";\"");
            let prev_end = tokens.iter().take_while(|t| t.0 < l).last().map(|t| t.2);
            if let Some(prev_end) = prev_end {
                let newline_between = src[prev_end..l].contains('\n');
                if wants_semi && newline_between {
                    return Diagnostic::error(
                        Span::new(prev_end, prev_end),
                        format!("expected `;` before {}", describe(&tok)),
                    );
                }
            }
            // A `.word` where a statement or declaration starts is a directive ptxc does not know.
            let at_statement = expected
                .iter()
                .any(|x| x == "\".entry\"" || x == "\".reg\"");
            if let (Tok::Dot(word), true) = (tok, at_statement) {
                return Diagnostic::error(Span::new(l, r), format!("unknown directive `{word}`"));
            }
            let mut msg = format!("unexpected {}", describe(&tok));
            let exp = friendly_expected(&expected);
            if !exp.is_empty() {
                msg.push_str(&format!("; expected {exp}"));
            }
            Diagnostic::error(Span::new(l, r), msg)
        }
        ParseError::ExtraToken { token: (l, tok, r) } => {
            Diagnostic::error(Span::new(l, r), format!("unexpected {}", describe(&tok)))
        }
        ParseError::User { error } => {
            Diagnostic::error(Span::new(error.start, error.end), error.message)
        }
    }
}

/// The innermost `{` that is never closed.
fn unclosed_brace(tokens: &[lexer::Spanned<'_>]) -> Option<usize> {
    let mut open = Vec::new();
    for (l, t, _) in tokens {
        match t {
            Tok::LBrace => open.push(*l),
            Tok::RBrace => {
                open.pop();
            }
            _ => {}
        }
    }
    open.pop()
}

/// Turns lalrpop's list of expected terminals into a short phrase.
fn friendly_expected(expected: &[String]) -> String {
    let names: Vec<String> = expected
        .iter()
        // Chains and folded lines exist only in the fast path's tokens; where one is expected,
        // an identifier is.
        .filter(|e| *e != "OPCHAIN" && *e != "INSTRS")
        .map(|e| match e.as_str() {
            "DOT" => "a `.directive` or `.modifier`".to_string(),
            "IDENT" => "an identifier".to_string(),
            "INT" | "FLOAT" | "HEXF32" | "HEXF64" => "a number".to_string(),
            "STR" => "a string".to_string(),
            s => format!("`{}`", s.trim_matches('"')),
        })
        .collect();
    let mut uniq: Vec<String> = Vec::new();
    for n in names {
        if !uniq.contains(&n) {
            uniq.push(n);
        }
    }
    if uniq.len() > 6 {
        uniq.truncate(6);
        uniq.push("…".into());
    }
    uniq.join(", ")
}

#[cfg(test)]
mod tests {
    use super::ast::*;
    use super::check::{Arch, check};
    use super::parse;

    const HEADER: &str = ".version 8.7\n.target sm_90a, texmode_independent\n.address_size 64\n";

    /// ptxas refuses a `.target …, debug` module without debug sections; one `.section` is
    /// enough.
    #[test]
    fn debug_target_needs_a_section() {
        let head = ".version 8.7\n.target sm_90a, debug\n.address_size 64\n";
        let body = ".visible .entry k() { ret; }\n";
        let m = parse(&format!("{head}{body}")).unwrap();
        let ds = check(&m, Arch::SM90A).unwrap_err();
        assert!(
            ds[0]
                .message
                .contains("Debug information not found in presence of .target debug")
        );
        let m = parse(&format!("{head}{body}.section .debug_info\n{{\n}}\n")).unwrap();
        assert!(check(&m, Arch::SM90A).is_ok());
    }

    fn accepts(body: &str) -> Module {
        let src = format!("{HEADER}{body}");
        let m = parse(&src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
        if let Err(ds) = check(&m, Arch::SM90A) {
            panic!("check: {ds:?}\n{src}");
        }
        m
    }

    #[test]
    fn declarations_in_every_state_space() {
        let m = accepts(
            ".extern .shared .align 16 .b8 dyn_smem[];\n\
             .global .align 8 .u64 table[2] = {1, 0x10};\n\
             .global .align 8 .u64 ptrs[2] = {generic(table), table+8};\n\
             .const .align 4 .f32 consts[2] = {0f3F800000, -1.5};\n\
             .global .v4 .f32 vec4;\n\
             .global .texref tex0;\n\
             .weak .global .u32 w;\n\
             .common .global .u32 c;\n\
             .global .attribute(.managed) .align 4 .u32 managed;\n",
        );
        assert_eq!(m.items.len(), 3 + 9);
    }

    #[test]
    fn functions_parameters_and_directives() {
        accepts(
            ".func (.param .b32 r) f(.param .b32 a, .reg .b32 b) .noreturn;\n\
             .visible .func (.param .align 16 .b8 r[16]) g(.param .u64 .ptr .global .align 8 p)\n{\nret;\n}\n\
             .visible .entry k(.param .align 16 .b8 big[8192], .param .u64 .ptr .shared::cta .align 8 q)\n\
             .maxntid 128, 1, 1 .minnctapersm 2 .maxnreg 64\n.pragma \"nounroll\";\n{\nret;\n}\n\
             .entry c() .explicitcluster .reqnctapercluster 2, 2, 1 .blocksareclusters\n{\nret;\n}\n\
             .entry d() .maxclusterrank 8\n{\nret;\n}\n",
        );
    }

    #[test]
    fn operand_kinds() {
        let m = accepts(
            ".global .u32 g[4];\n.entry k()\n{\n\
             .reg .b32 %r<10>; .reg .b64 %rd<4>; .reg .pred %p<3>; .reg .f64 %fd1; .reg .v4 .f32 %v;\n\
             mov.u32 %r1, %tid.x;\n mov.u32 %r2, %cluster_ctaid.y;\n mov.u32 %r3, %cluster_nctarank;\n\
             mov.pred %p1, %is_explicit_cluster;\n mov.u32 %r4, %nclusterid.z;\n\
             mov.b32 %r5, 0f3F800000;\n mov.f64 %fd1, 0d3FF0000000000000;\n add.s32 %r6, %r5, -4;\n\
             ld.global.v4.u32 {%r1, %r2, _, %r4}, [g+4];\n ld.global.u32 %r7, [%rd1+-8];\n ld.global.u32 %r7, [0x100];\n\
             setp.lt.s32 %p1|%p2, %r1, 3;\n elect.sync _|%p2, 0xffffffff;\n @!%p1 bra L;\n\
             mov.b64 {%r1, %r2}, %rd2;\n ld.global.v4.f32 %v, [%rd1];\n L:\n ret;\n}\n",
        );
        let Item::Function(f) = &m.items[4] else {
            panic!()
        };
        let body = &f.body.as_ref().unwrap().stmts;
        assert!(body.iter().any(|s| matches!(s, Stmt::Instr(i) if i.operands.iter().any(|o| matches!(o, Operand::Pair(..))))));
    }

    #[test]
    fn calls_prototypes_and_debug_directives() {
        accepts(
            ".file 1 \"k.cu\", 1700000000, 1234\n\
             .func (.param .b32 r) f(.param .b32 a)\n{\n.reg .b32 %x;\nld.param.b32 %x, [a];\nst.param.b32 [r], %x;\nret;\n}\n\
             .entry k()\n{\n.reg .b32 %r<3>; .reg .b64 %rd1;\n\
             .loc 1 3 5\n.loc 1 4 2, function_name $L__info_string0, inlined_at 1 3 5\n\
             {\n.param .b32 param0;\n.param .b32 retval0;\nst.param.b32 [param0], %r1;\n\
             call.uni (retval0), f, (param0);\nld.param.b32 %r2, [retval0];\n}\n\
             proto: .callprototype (.param .b32 _) _ (.param .b32 _);\n\
             mov.u64 %rd1, f;\n{\n.param .b32 p0;\n.param .b32 r0;\ncall (r0), %rd1, (p0), proto;\n}\n\
             ts: .branchtargets L0, L1;\nbrx.idx %r1, ts;\nL0:\nL1:\nret;\n}\n\
             .section .debug_str\n{\n$L__info_string0:\n.b8 107,0\n}\n\
             .section .debug_info\n{\n.b32 20\n.b32 .debug_abbrev\n.b64 $L__info_string0\n}\n",
        );
    }

    #[test]
    fn every_cluster_feature_parses_and_checks() {
        accepts(
            ".entry k() .explicitcluster .reqnctapercluster 2, 1, 1\n{\n\
             .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<3>;\n\
             .shared .align 8 .b64 bar;\n\
             mov.u32 %r1, %cluster_ctarank;\n mapa.shared::cluster.u32 %r2, %r1, 1;\n mapa.u64 %rd1, %rd2, %r1;\n\
             getctarank.shared::cluster.u32 %r3, %r2;\n ld.shared::cluster.u32 %r4, [%r2];\n\
             st.shared::cluster.u32 [%r2], %r4;\n atom.shared::cluster.add.u32 %r5, [%r2], 1;\n\
             red.release.cluster.shared::cluster.add.u32 [%r2], 1;\n ld.acquire.cluster.global.u32 %r6, [%rd1];\n\
             barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;\n\
             barrier.cluster.arrive.relaxed;\n fence.acq_rel.cluster;\n fence.proxy.async.shared::cluster;\n\
             fence.mbarrier_init.release.cluster;\n elect.sync %r7|%p1, 0xffffffff;\n\
             mbarrier.init.shared::cta.b64 [bar], 1;\n mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r2];\n\
             mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [bar], 64;\n\
             mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p2, [bar], 0;\n\
             multimem.ld_reduce.relaxed.sys.global.add.u32 %r1, [%rd1];\n multimem.red.global.add.u32 [%rd1], %r1;\n\
             multimem.st.global.b32 [%rd1], %r1;\n ret;\n}\n",
        );
    }
}

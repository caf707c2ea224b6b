//! The PTX frontend: lexer → grammar → AST → semantic check.

pub mod ast;
pub mod check;
pub mod isa;
pub mod lexer;
pub mod print;
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
pub fn parse(src: &str) -> Result<Module, Diagnostic> {
    let tokens = lexer::tokenize(src)
        .map_err(|e| Diagnostic::error(Span::new(e.start, e.end), e.message))?;
    let parser = grammar::ModuleParser::new();
    parser
        .parse(tokens.iter().copied().map(Ok::<_, LexError>))
        .map_err(|e| syntax_error(src, &tokens, e))
}

fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::Ident(s) => format!("identifier `{s}`"),
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

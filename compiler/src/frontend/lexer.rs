//! The PTX lexer (logos).
//!
//! PTX's "modifier soup" is kept out of the grammar: every `.word` (including `.shared::cluster`,
//! `.mbarrier::complete_tx::bytes`, `.L2::128B`, `.1d`) is one [`Tok::Dot`] token, except the few
//! directive words that give the module its structure (`.entry`, `.reg`, `.version`, …), which get
//! tokens of their own. The state-space words (`.global`, `.shared`, …) are structural in
//! declarations but also appear as instruction modifiers; the grammar accepts them in both places.

use logos::Logos;
use std::fmt;

/// A token. Text-carrying tokens borrow from the source.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
#[logos(skip r"[ \t\r\n\x0c]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
#[logos(skip r"/\*([^*]|\*+[^*/])*\*+/")]
pub enum Tok<'a> {
    // Structural directives.
    #[token(".version")]
    Version,
    #[token(".target")]
    Target,
    #[token(".address_size")]
    AddressSize,
    #[token(".entry")]
    Entry,
    #[token(".func")]
    Func,
    #[token(".callprototype")]
    CallPrototype,
    #[token(".visible")]
    Visible,
    #[token(".extern")]
    Extern,
    #[token(".weak")]
    Weak,
    #[token(".common")]
    Common,
    #[token(".file")]
    File,
    #[token(".loc")]
    Loc,
    #[token(".section")]
    Section,
    #[token(".pragma")]
    Pragma,
    #[token(".alias")]
    Alias,
    // State spaces (declarations; also modifiers of ld/st/cvta/…).
    #[token(".reg")]
    Reg,
    #[token(".sreg")]
    Sreg,
    #[token(".param")]
    Param,
    #[token(".local")]
    Local,
    #[token(".shared")]
    Shared,
    #[token(".global")]
    Global,
    #[token(".const")]
    Const,
    #[token(".tex")]
    TexSpace,

    /// Any other `.word`, e.g. `.u32`, `.shared::cluster`, `.maxntid`, `.L2::128B`, `.x`.
    #[regex(r"\.[A-Za-z0-9_]+(::[A-Za-z0-9_]+)*")]
    Dot(&'a str),
    /// Identifiers: `%r1`, `$L__BB0_1`, `_Z3fooPi`, `sm_90a`, opcodes.
    #[regex(r"[A-Za-z][A-Za-z0-9_$]*|[_$%][A-Za-z0-9_$]+")]
    Ident(&'a str),
    /// Integer literals: decimal, `0x` hex, `0b` binary, octal, optional `U` suffix. The value is
    /// parsed later so that an out-of-range literal gets a diagnostic at its own span.
    #[regex(r"[0-9]+U?|0[xX][0-9A-Fa-f]+U?|0[bB][01]+U?")]
    Int(&'a str),
    /// `0f` + 8 hex digits: an IEEE single given bit for bit.
    #[regex(r"0[fF][0-9A-Fa-f]{8}")]
    HexF32(&'a str),
    /// `0d` + 16 hex digits: an IEEE double given bit for bit.
    #[regex(r"0[dD][0-9A-Fa-f]{16}")]
    HexF64(&'a str),
    /// Decimal floating-point literal.
    #[regex(r"[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")]
    Float(&'a str),
    #[regex(r#""([^"\\\n]|\\.)*""#)]
    Str(&'a str),

    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("!")]
    Bang,
    #[token("~")]
    Tilde,
    #[token("&")]
    Amp,
    #[token("|")]
    Pipe,
    #[token("^")]
    Caret,
    #[token("@")]
    At,
    #[token("=")]
    Eq,
    #[token("?")]
    Question,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("_")]
    Underscore,

    /// An identifier with the `.word`s written right after it, as one token: `ld.global.f32`,
    /// `%tid.x`. Never produced by logos itself: [`tokenize_chained`] joins the tokens, so
    /// that the grammar shifts one token, not one per modifier, for an instruction's opcode.
    OpChain(&'a str),

    /// A run of whole instruction lines, parsed ahead of the grammar: the index of its
    /// statements in what [`simple_instr::fold`](super::simple_instr::fold) returns. Never
    /// produced by logos.
    Instrs(u32),

    /// A `/*` that never ends (the complete comment is skipped above, so only an unterminated one
    /// gets here).
    #[regex(r"/\*([^*]|\*+[^*/])*\**")]
    UnterminatedComment,
    /// A `"` that never ends on its line.
    #[regex(r#""([^"\\\n]|\\.)*"#)]
    UnterminatedString,
}

impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Tok::Version => ".version",
            Tok::Target => ".target",
            Tok::AddressSize => ".address_size",
            Tok::Entry => ".entry",
            Tok::Func => ".func",
            Tok::CallPrototype => ".callprototype",
            Tok::Visible => ".visible",
            Tok::Extern => ".extern",
            Tok::Weak => ".weak",
            Tok::Common => ".common",
            Tok::File => ".file",
            Tok::Loc => ".loc",
            Tok::Section => ".section",
            Tok::Pragma => ".pragma",
            Tok::Alias => ".alias",
            Tok::Reg => ".reg",
            Tok::Sreg => ".sreg",
            Tok::Param => ".param",
            Tok::Local => ".local",
            Tok::Shared => ".shared",
            Tok::Global => ".global",
            Tok::Const => ".const",
            Tok::TexSpace => ".tex",
            Tok::Dot(s)
            | Tok::Ident(s)
            | Tok::Int(s)
            | Tok::HexF32(s)
            | Tok::HexF64(s)
            | Tok::Float(s)
            | Tok::Str(s)
            | Tok::OpChain(s) => s,
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Bang => "!",
            Tok::Tilde => "~",
            Tok::Amp => "&",
            Tok::Pipe => "|",
            Tok::Caret => "^",
            Tok::At => "@",
            Tok::Eq => "=",
            Tok::Question => "?",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Le => "<=",
            Tok::Ge => ">=",
            Tok::Underscore => "_",
            Tok::UnterminatedComment => "/*",
            Tok::UnterminatedString => "\"",
            Tok::Instrs(_) => "instructions",
        };
        f.write_str(s)
    }
}

/// A lexical error: the byte range and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub start: usize,
    pub end: usize,
    pub message: String,
}

/// A token with its byte range.
pub type Spanned<'a> = (usize, Tok<'a>, usize);

/// Splits `src` into tokens, or reports the first character that cannot start a token.
pub fn tokenize(src: &str) -> Result<Vec<Spanned<'_>>, LexError> {
    lex(src, false)
}

/// As [`tokenize`], but an identifier and the `.word`s that follow it without a space
/// (`ld.global.f32`, `%tid.x`) become one [`Tok::OpChain`]. The grammar takes such a chain
/// where an instruction starts and as an operand's `name.component`; anywhere else the parse
/// fails, and `frontend::parse` parses the plain tokens again, whose errors are the
/// diagnostics. Only the words that the grammar's `AnyDot` takes are joined (a generic `.word`
/// and the state-space, `.weak` and `.alias` keywords), so a chain means exactly what its
/// plain tokens mean.
pub fn tokenize_chained(src: &str) -> Result<Vec<Spanned<'_>>, LexError> {
    lex(src, true)
}

/// Whether `t` is a `.word` that the grammar takes as a modifier (`AnyDot`).
fn is_modifier_word(t: &Tok<'_>) -> bool {
    matches!(
        t,
        Tok::Dot(_)
            | Tok::Reg
            | Tok::Sreg
            | Tok::Param
            | Tok::Local
            | Tok::Shared
            | Tok::Global
            | Tok::Const
            | Tok::TexSpace
            | Tok::Weak
            | Tok::Alias
    )
}

fn lex(src: &str, chains: bool) -> Result<Vec<Spanned<'_>>, LexError> {
    // About one token per 4 bytes of typical PTX.
    let mut out = Vec::with_capacity(src.len() / 4);
    let mut lex = Tok::lexer(src);
    while let Some(tok) = lex.next() {
        let span = lex.span();
        if chains
            && let Ok(t) = &tok
            && is_modifier_word(t)
            && let Some((l, Tok::Ident(_) | Tok::OpChain(_), r)) = out.last()
            && *r == span.start
        {
            let l = *l;
            *out.last_mut().expect("a last token") = (l, Tok::OpChain(&src[l..span.end]), span.end);
            continue;
        }
        match tok {
            Ok(Tok::UnterminatedComment) => {
                return Err(LexError {
                    start: span.start,
                    end: span.start + 2,
                    message: "unterminated block comment".into(),
                });
            }
            Ok(Tok::UnterminatedString) => {
                return Err(LexError {
                    start: span.start,
                    end: span.end,
                    message: "unterminated string literal".into(),
                });
            }
            Ok(t) => out.push((span.start, t, span.end)),
            Err(()) => {
                let c = src[span.start..].chars().next().unwrap_or('\0');
                let message = if c.is_ascii() {
                    format!("unexpected character {c:?}")
                } else {
                    format!(
                        "non-ASCII character {c:?} (U+{:04X}) in PTX source",
                        c as u32
                    )
                };
                return Err(LexError {
                    start: span.start,
                    end: span.start + c.len_utf8().max(1),
                    message,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok<'_>> {
        tokenize(src).unwrap().into_iter().map(|t| t.1).collect()
    }

    #[test]
    fn modifiers_are_single_tokens() {
        assert_eq!(
            toks("ld.shared::cluster.u32 %r1, [%r2+4];"),
            vec![
                Tok::Ident("ld"),
                Tok::Dot(".shared::cluster"),
                Tok::Dot(".u32"),
                Tok::Ident("%r1"),
                Tok::Comma,
                Tok::LBracket,
                Tok::Ident("%r2"),
                Tok::Plus,
                Tok::Int("4"),
                Tok::RBracket,
                Tok::Semi
            ]
        );
    }

    #[test]
    fn state_space_words_are_keywords_only_when_exact() {
        assert_eq!(toks(".shared"), vec![Tok::Shared]);
        assert_eq!(toks(".shared::cta"), vec![Tok::Dot(".shared::cta")]);
        assert_eq!(toks(".sharedx"), vec![Tok::Dot(".sharedx")]);
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("0f3F800000 0d3FF0000000000000 1.5 8.7 0x10 42U -1 1e5"),
            vec![
                Tok::HexF32("0f3F800000"),
                Tok::HexF64("0d3FF0000000000000"),
                Tok::Float("1.5"),
                Tok::Float("8.7"),
                Tok::Int("0x10"),
                Tok::Int("42U"),
                Tok::Minus,
                Tok::Int("1"),
                Tok::Float("1e5"),
            ]
        );
    }

    #[test]
    fn comments_and_errors() {
        assert_eq!(
            toks("a /* x\n y */ b // c\n"),
            vec![Tok::Ident("a"), Tok::Ident("b")]
        );
        let e = tokenize("a /* never ends").unwrap_err();
        assert_eq!(
            (e.start, e.message.as_str()),
            (2, "unterminated block comment")
        );
        let e = tokenize("mov.u32 %r1, é;").unwrap_err();
        assert_eq!(e.start, 13);
        assert!(e.message.contains("non-ASCII"), "{}", e.message);
    }
}

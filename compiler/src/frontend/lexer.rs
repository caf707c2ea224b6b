//! The PTX lexer (logos).
//!
//! PTX's "modifier soup" is kept out of the grammar: every `.word` (including `.shared::cluster`,
//! `.mbarrier::complete_tx::bytes`, `.L2::128B`, `.1d`) is one [`Tok::Dot`] token, except the few
//! directive words that give the module its structure (`.entry`, `.reg`, `.version`, …), which get
//! tokens of their own. The state-space words (`.global`, `.shared`, …) are structural in
//! declarations but also appear as instruction modifiers; the grammar accepts them in both places.

use super::simple_instr::{Folder, starts_statement};
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
///
/// The common tokens of instruction lines (names and their chains, decimal integers, the
/// punctuation of operands, white space) are scanned by hand; at any other byte one token is
/// taken from logos ([`lex_one`]), so the tokens are exactly [`lex`]'s (a test compares the two
/// on the corpus and on tricky inputs).
pub fn tokenize_chained(src: &str) -> Result<Vec<Spanned<'_>>, LexError> {
    tokenize_chained_with(src, None)
}

/// The number of tokens [`tokenize_chained_with`] takes before it hands its vector to the
/// folder (at the next `;`).
pub const FLUSH_TOKENS: usize = 4096;

/// [`tokenize_chained`], folding simple instruction lines as it goes when given a `folder`
/// ([`simple_instr::Folder`](super::simple_instr::Folder)); what it returns is then folded
/// except for the tokens after the last step (the caller folds those), and the result is
/// exactly what [`simple_instr::fold`](super::simple_instr::fold) makes of all the tokens:
///
/// * where a statement starts, the folder first tries to parse the line straight from its
///   bytes ([`Folder::fold_line`](super::simple_instr::Folder::fold_line)): a simple line
///   (most of a large kernel) is then never turned into tokens at all;
/// * otherwise the line is lexed, and at the first `;` after every [`FLUSH_TOKENS`] new tokens
///   the folder folds the tokens lexed so far ([`Folder::fold`](super::simple_instr::Folder::fold)),
///   so that the vector holds the tokens of a few thousand lines, not of the whole file.
///
/// The tokens are the same whatever the folder does: a token is joined only to an identifier
/// or a chain right before it, never to a `;` or a folded line.
pub fn tokenize_chained_with<'a>(
    src: &'a str,
    // Not generic (an `Option`, not a closure): one copy of the scanning loop. Generic over its
    // flush closure, it was inlined into `frontend::parse` and `modifier_word_end` no longer
    // was (at 16k lines, 88 507 calls, 1.9M instructions; callgrind).
    mut folder: Option<&mut Folder<'a>>,
) -> Result<Vec<Spanned<'a>>, LexError> {
    let bytes = src.as_bytes();
    // About one token per 4 bytes of typical PTX, up to the tokens between flushes and a
    // line's worth more.
    let mut out: Vec<Spanned<'_>> = Vec::with_capacity((src.len() / 4).min(FLUSH_TOKENS + 64));
    let mut flush_at = FLUSH_TOKENS;
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        let class = BYTE_CLASS[usize::from(b)];
        if class & SPACE != 0 {
            at += 1;
            while at < bytes.len() && BYTE_CLASS[usize::from(bytes[at])] & SPACE != 0 {
                at += 1;
            }
            continue;
        }
        // A simple instruction line where a statement starts: parsed from its bytes, without
        // making its tokens (at 16k straight-line instructions, the tokens and folding them
        // cost about twice as much).
        if let Some(folder) = folder.as_deref_mut()
            && (class & LETTER != 0 || b == b'@')
            && out.last().is_some_and(|t| starts_statement(t.1))
            && let Some(end) = folder.fold_line(src, at, &mut out)
        {
            at = end;
            continue;
        }
        let punct = match b {
            b',' => Some(Tok::Comma),
            b';' => Some(Tok::Semi),
            b'[' => Some(Tok::LBracket),
            b']' => Some(Tok::RBracket),
            b'{' => Some(Tok::LBrace),
            b'}' => Some(Tok::RBrace),
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b'+' => Some(Tok::Plus),
            b'-' => Some(Tok::Minus),
            b'@' => Some(Tok::At),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(t) = punct {
            out.push((at, t, at + 1));
            at += 1;
            if b == b';' && out.len() >= flush_at {
                if let Some(folder) = folder.as_deref_mut() {
                    folder.fold(&mut out);
                }
                flush_at = out.len() + FLUSH_TOKENS;
            }
            continue;
        }
        let start = at;
        if class & LETTER != 0 || (b == b'%' && bytes.get(at + 1).is_some_and(|&c| is_name_byte(c)))
        {
            // A name (`[A-Za-z][A-Za-z0-9_$]*` or `%[A-Za-z0-9_$]+`) and the modifier words
            // written right after it.
            at += 1;
            while at < bytes.len() && is_name_byte(bytes[at]) {
                at += 1;
            }
            let name_end = at;
            while let Some(word_end) = modifier_word_end(bytes, at) {
                at = word_end;
            }
            let text = &src[start..at];
            let t = if at == name_end {
                Tok::Ident(text)
            } else {
                Tok::OpChain(text)
            };
            out.push((start, t, at));
            continue;
        }
        if class & DIGIT != 0 {
            // A decimal integer followed by a byte that no number token continues with.
            let mut end = at + 1;
            while end < bytes.len() && BYTE_CLASS[usize::from(bytes[end])] & DIGIT != 0 {
                end += 1;
            }
            let ends = bytes
                .get(end)
                .is_none_or(|&c| !is_name_byte(c) && c != b'.');
            if ends {
                out.push((start, Tok::Int(&src[start..end]), end));
                at = end;
                continue;
            }
        }
        // Anything else: one token (after any comment) from logos, joined to a name right
        // before it as `lex` joins it.
        let Some((l, tok, r)) = lex_one(src, at)? else {
            break;
        };
        at = r;
        if is_modifier_word(&tok)
            && let Some((pl, Tok::Ident(_) | Tok::OpChain(_), pr)) = out.last()
            && *pr == l
        {
            let pl = *pl;
            *out.last_mut().expect("a last token") = (pl, Tok::OpChain(&src[pl..r]), r);
            continue;
        }
        out.push((l, tok, r));
    }
    Ok(out)
}

/// [`tokenize_chained`]'s tokens from logos alone: the reference it is tested against.
pub fn tokenize_chained_logos(src: &str) -> Result<Vec<Spanned<'_>>, LexError> {
    lex(src, true)
}

/// [`BYTE_CLASS`] bits: white space that logos skips (`[ \t\r\n\x0c]`).
pub(super) const SPACE: u8 = 1;
/// `[A-Za-z]`.
pub(super) const LETTER: u8 = 2;
/// `[0-9]`.
pub(super) const DIGIT: u8 = 4;
/// What continues a `.word`: `[A-Za-z0-9_]`.
const WORD: u8 = 8;
/// What continues a name: `[A-Za-z0-9_$]`.
const NAME: u8 = 16;

/// The classes of each byte (one table load per byte scanned).
pub(super) static BYTE_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let mut class = 0;
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0c) {
            class |= SPACE;
        }
        if c.is_ascii_alphabetic() {
            class |= LETTER | WORD | NAME;
        }
        if c.is_ascii_digit() {
            class |= DIGIT | WORD | NAME;
        }
        if c == b'_' {
            class |= WORD | NAME;
        }
        if c == b'$' {
            class |= NAME;
        }
        t[b] = class;
        b += 1;
    }
    t
};

/// Whether `b` continues a name (`[A-Za-z0-9_$]`).
pub(super) fn is_name_byte(b: u8) -> bool {
    BYTE_CLASS[usize::from(b)] & NAME != 0
}

/// Whether `b` continues a `.word` (`[A-Za-z0-9_]`).
fn is_word_byte(b: u8) -> bool {
    BYTE_CLASS[usize::from(b)] & WORD != 0
}

/// Where the modifier word at `at` ends (`\.[A-Za-z0-9_]+(::[A-Za-z0-9_]+)*`, as
/// [`Tok::Dot`]), if one starts there and [`tokenize`] would join it to a name before it: a
/// [`Tok::Dot`] or one of the keywords [`is_modifier_word`] takes, not a structural directive
/// (`.entry`).
pub(super) fn modifier_word_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'.') {
        return None;
    }
    let mut end = at + 1;
    while end < bytes.len() && is_word_byte(bytes[end]) {
        end += 1;
    }
    if end == at + 1 {
        return None;
    }
    while bytes.get(end) == Some(&b':')
        && bytes.get(end + 1) == Some(&b':')
        && bytes.get(end + 2).is_some_and(|&c| is_word_byte(c))
    {
        end += 2;
        while end < bytes.len() && is_word_byte(bytes[end]) {
            end += 1;
        }
    }
    match &bytes[at..end] {
        b".version" | b".target" | b".address_size" | b".entry" | b".func" | b".callprototype"
        | b".visible" | b".extern" | b".common" | b".file" | b".loc" | b".section" | b".pragma" => {
            None
        }
        _ => Some(end),
    }
}

/// The next token at or after byte `at` (after white space and comments) as [`lex`] gives it,
/// or `None` at the end of `src`.
fn lex_one(src: &str, at: usize) -> Result<Option<Spanned<'_>>, LexError> {
    let mut lex = Tok::lexer(&src[at..]);
    let Some(tok) = lex.next() else {
        return Ok(None);
    };
    let span = lex.span();
    let (l, r) = (at + span.start, at + span.end);
    match tok {
        Ok(Tok::UnterminatedComment) => Err(LexError {
            start: l,
            end: l + 2,
            message: "unterminated block comment".into(),
        }),
        Ok(Tok::UnterminatedString) => Err(LexError {
            start: l,
            end: r,
            message: "unterminated string literal".into(),
        }),
        Ok(t) => Ok(Some((l, t, r))),
        Err(()) => Err(unexpected_character(src, l)),
    }
}

/// The error for a byte that starts no token.
fn unexpected_character(src: &str, at: usize) -> LexError {
    let c = src[at..].chars().next().unwrap_or('\0');
    let message = if c.is_ascii() {
        format!("unexpected character {c:?}")
    } else {
        format!(
            "non-ASCII character {c:?} (U+{:04X}) in PTX source",
            c as u32
        )
    };
    LexError {
        start: at,
        end: at + c.len_utf8().max(1),
        message,
    }
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

/// The tokens of `src` from logos alone; with `chains`, names and the modifier words right
/// after them joined (what [`tokenize_chained`] gives, faster).
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
            Err(()) => return Err(unexpected_character(src, span.start)),
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

    /// The hand-scanned chained tokens are logos's, on inputs made to hit every boundary of
    /// the hand scanner, and on random strings over the bytes that matter.
    #[test]
    fn chained_tokens_are_the_logos_tokens() {
        let same = |src: &str| {
            let fast = tokenize_chained(src);
            let logos = tokenize_chained_logos(src);
            match (&fast, &logos) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{src:?}"),
                _ => assert_eq!(fast.is_ok(), logos.is_ok(), "{src:?}"),
            }
        };
        for src in [
            "ld.global.f32 \t%f2, [%rd6+8];\n",
            "mov.u32 %r1, %tid.x; @!%p1 bra $L__BB0_1;",
            "a.entry b.entryx c.reg .reg.b32 %r<4>; d.shared::cta.u32 e.a:: f.a::b::c",
            "x.1d y. z.$ w$.u32 %.x % %% %r% _a.x _ $x.y 12, 12U 12.5 12e3 0x10 0f3F800000 1a 12$",
            "a/*c*/.u32 b//c\n.u32 c \"s\".x -4 +3 @%p !%p a|b a||b a!=b a<<b",
            "ld.L2::128B.v4 sm_90a, texmode_independent .target .version 8.7",
            "a.b.c.d.e.f.g.h::i foo.pragma bar.loc baz.section q.weak r.alias s.tex t.sreg",
            "0 00 09 9; 1] 2) 3} 4+ 5- 6: 7@",
            "é",
            "a /* open",
            "\"open",
            "a.",
        ] {
            same(src);
        }
        // Random strings over the interesting bytes (a fixed linear congruential sequence).
        let alphabet = b"ab%_$.:;, \n[]{}()+-@!|019xfUe/*\"";
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..20_000 {
            let mut src = String::new();
            for _ in 0..(state >> 59) + 1 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                src.push(alphabet[(state >> 33) as usize % alphabet.len()] as char);
            }
            same(&src);
        }
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

//! Simple instruction lines, parsed ahead of the grammar (the last step of the fast path).
//!
//! Most lines of a large kernel are instructions whose operands are registers, literals and
//! plain addresses: `ld.global.f32 %f2, [%rd6+8];`. The grammar spends about fifteen shifts and
//! reductions on such a line; here it is recognized in one scan of its chained tokens
//! ([`lexer::tokenize_chained`](super::lexer::tokenize_chained)), built as the grammar's action
//! would build it; each run of such lines is replaced in the token vector by one
//! [`Tok::Instrs`] token, which the grammar appends to the block's statements in one reduction.
//! The commonest lines are read straight from their bytes while the file is lexed, and never
//! become tokens ([`Folder::fold_line`]).
//!
//! What is recognized here is a strict subset of what the grammar's `Instruction` production
//! takes, and it builds the same tree (the same names, spans and expression shapes):
//!
//! * `[@[!]pred] opcode{.modifier} [operand {, operand}] ;` (no trailing comma);
//! * operands: a name (`%r1`, `%tid.x`), a literal, `-atom`, `a+b` / `a-b` of those,
//!   `a|b`, `_|b`, `!atom`, `_`, `[ … ]` (at least one operand), `{ … }` and `( … )` lists.
//!
//! Anything else (another operator, a trailing comma, a modifier after a space, a keyword
//! word) leaves the line's tokens as they are, for the grammar. A line folded where the grammar
//! does not take a statement (the lexer does not know the context; e.g. after the `:` of a
//! `c ? a : b` initializer) makes the fast parse fail, and `frontend::parse` parses the plain
//! tokens again, as it does for any failure: diagnostics never come from this path.
//! `frontend_fuzz` and `frontend_corpus` check that both paths give equal syntax trees.

use super::ast::{
    BinOp, Expr, Guard, Instruction, LitKind, Name, Operand, Span, Stmt, UnOp, split_chain,
    split_name,
};
use super::check::short_key;
use super::lexer::{
    BYTE_CLASS, DIGIT, LETTER, SPACE, Spanned, Tok, is_name_byte, modifier_word_end,
};
use rustc_hash::FxHashMap;
use std::mem::discriminant;

/// The runs of instruction lines folded out of a token vector; `Tok::Instrs(i)` stands for the
/// statements of the `i`th. The grammar takes each out once, when it reduces the block's
/// statement list.
pub type Folded = Vec<Vec<Stmt>>;

/// Replaces each run of simple instruction lines in `tokens` (chained tokens) by one
/// [`Tok::Instrs`]: the grammar then shifts and reduces once per run, not once per line.
pub fn fold(tokens: &mut Vec<Spanned<'_>>) -> Folded {
    let mut folder = Folder::default();
    folder.fold(tokens);
    folder.folded
}

/// [`fold`] in steps, while the tokens are lexed
/// ([`tokenize_chained_with`](super::lexer::tokenize_chained_with)): each step folds the tokens
/// added since the last one, which end with a `;`, so the vector never holds more than the
/// unfolded tokens and the last few thousand lexed (at 64k straight-line instructions, 0.2 MB
/// instead of 20 MB). A line is folded exactly as [`fold`] over all the tokens folds it: a
/// folded line ends at the first `;` after its start, which is in the same step. Lines read
/// from their bytes ([`Folder::fold_line`]) join the same runs.
#[derive(Default)]
pub struct Folder<'a> {
    /// The runs folded so far.
    pub folded: Folded,
    chains: Chains<'a>,
    /// The tokens before this are folded.
    done: usize,
}

impl<'a> Folder<'a> {
    /// Folds `tokens[self.done..]` (after the tokens the previous steps kept).
    pub fn fold(&mut self, tokens: &mut Vec<Spanned<'a>>) {
        let folded = &mut self.folded;
        let mut write = self.done;
        let mut read = self.done;
        while read < tokens.len() {
            // An instruction starts a statement: after `;`, `{`, `}`, a label's `:` or another
            // folded instruction.
            let at_statement = write > 0 && starts_statement(tokens[write - 1].1);
            if at_statement {
                let mut line = Line {
                    toks: tokens,
                    at: read,
                    chains: &mut self.chains,
                };
                if let Some(instr) = line.instruction() {
                    let next = line.at;
                    let end = tokens[next - 1].2;
                    if let Tok::Instrs(run) = tokens[write - 1].1 {
                        // The line continues the run just written.
                        tokens[write - 1].2 = end;
                        folded[run as usize].push(Stmt::Instr(instr));
                    } else {
                        tokens[write] = (tokens[read].0, Tok::Instrs(folded.len() as u32), end);
                        folded.push(vec![Stmt::Instr(instr)]);
                        write += 1;
                    }
                    read = next;
                    continue;
                }
            }
            tokens[write] = tokens[read];
            write += 1;
            read += 1;
        }
        tokens.truncate(write);
        self.done = write;
    }
}

/// Whether a statement starts after `t`: after `;`, `{`, `}`, a label's `:` or a folded line.
pub fn starts_statement(t: Tok<'_>) -> bool {
    matches!(
        t,
        Tok::Semi | Tok::LBrace | Tok::RBrace | Tok::Colon | Tok::Instrs(_)
    )
}

impl<'a> Folder<'a> {
    /// Folds the simple instruction line that starts at byte `at` of `src`, where a statement
    /// starts (after the last of `tokens`), straight from its bytes: the line is appended to
    /// the run of `tokens` as [`Folder::fold`] would fold its tokens, and its end (after the
    /// `;`) returned. `None` (nothing changed but the chain cache) for a line this scan does not
    /// take: the lexer then makes its tokens, for [`Folder::fold`] or the grammar.
    ///
    /// It takes a subset of what [`Line::instruction`] takes, built the same way:
    /// `[@[!]pred] opcode{.modifier} [operand {, operand}] ;` with each operand a name, a
    /// decimal integer, or `[a]`, `[a+b]`, `[a-b]` of those, white space anywhere between
    /// tokens (no comments).
    pub fn fold_line(
        &mut self,
        src: &'a str,
        at: usize,
        tokens: &mut Vec<Spanned<'a>>,
    ) -> Option<usize> {
        let mut line = ByteLine {
            src,
            bytes: src.as_bytes(),
            at,
        };
        let instr = line.instruction(&mut self.chains)?;
        // The tokens lexed before this line are folded first, so that a run of lines is one
        // run however its lines were folded (the last of them ends a statement, so no line
        // folds differently for being folded now).
        if self.done < tokens.len() {
            self.fold(tokens);
        }
        let end = line.at;
        match tokens.last_mut() {
            Some((_, Tok::Instrs(run), run_end)) => {
                *run_end = end;
                self.folded[*run as usize].push(Stmt::Instr(instr));
            }
            _ => {
                tokens.push((at, Tok::Instrs(self.folded.len() as u32), end));
                self.folded.push(vec![Stmt::Instr(instr)]);
            }
        }
        self.done = tokens.len();
        Some(end)
    }
}

/// The opcode chains split so far: a large kernel writes a few chains (`ld.global.f32`)
/// thousands of times.
#[derive(Default)]
struct Chains<'a> {
    /// Each chain's index in `split`.
    index: FxHashMap<&'a str, usize>,
    /// Each chain's opcode and modifiers, with the spans of the chain written at byte 0, and
    /// the number of operands of its last line: the capacity of the next line's operand
    /// vector (a chain is nearly always written with the same number; counting the commas
    /// ahead, as for a bracketed list, cost about 1M instructions at 16k lines).
    split: Vec<(Name, Vec<Name>, usize)>,
    /// The chains of at most 15 bytes seen so far, by their packed bytes ([`short_key`]), for
    /// [`Chains::known_at`].
    recent: RecentChains,
}

/// The slots of [`Chains::recent`] (a power of two; a kernel writes a few dozen chains).
const RECENT_CHAINS: usize = 64;

/// A direct-mapped table of [`short_key`]s of chains and their indexes in [`Chains::split`]
/// (key 0, which no chain packs to, marks an empty slot).
struct RecentChains([(u128, usize); RECENT_CHAINS]);

impl Default for RecentChains {
    fn default() -> Self {
        RecentChains([(0, 0); RECENT_CHAINS])
    }
}

impl RecentChains {
    fn slot(key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
        (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % RECENT_CHAINS
    }
}

/// The first 16 bytes at `at` packed as [`short_key`] packs the chain they start with, if the
/// chain is followed by a byte at most `b' '` (white space) within them: the bytes before it,
/// and their number in the top byte. Two loads and a few masks (SWAR: each byte less than
/// `0x21` is flagged by the borrow of a subtraction; the lowest flag is exact), not a loop.
#[inline(always)]
fn chain_key_at(bytes: &[u8], at: usize) -> Option<(u128, usize)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let word = |from: usize| -> u64 {
        u64::from_le_bytes(bytes[from..from + 8].try_into().expect("8 bytes"))
    };
    // Where the first byte below `0x21` is, in byte `len` of the 16.
    let spaces = |w: u64| w.wrapping_sub(ONES * 0x21) & !w & HIGHS;
    if bytes.len() < at + 16 {
        return None;
    }
    let lo = word(at);
    let low_spaces = spaces(lo);
    let (text, len) = if low_spaces != 0 {
        let len = (low_spaces.trailing_zeros() / 8) as usize;
        (u128::from(lo & ((1u64 << (8 * len)) - 1)), len)
    } else {
        let hi = word(at + 8);
        let high_spaces = spaces(hi);
        if high_spaces == 0 {
            return None;
        }
        let high_len = (high_spaces.trailing_zeros() / 8) as usize;
        let hi = hi & ((1u64 << (8 * high_len)) - 1);
        (u128::from(lo) | u128::from(hi) << 64, 8 + high_len)
    };
    Some((text | (len as u128) << 120, len))
}

impl<'a> Chains<'a> {
    /// The index in [`Chains::split`] and the length of the chain written at byte `at` of
    /// `bytes`, if it is a chain seen before, of at most 15 bytes, and followed by white space:
    /// such a chain is found without the scan of its words ([`modifier_word_end`]) and the
    /// hash of its text, since the bytes of a chain the scan took, followed by a byte that
    /// ends every scan, are always that chain. Straight-line 64k: `fold_line` 90.2M → 76.3M
    /// instructions (callgrind, 2026-12-07).
    #[inline(always)]
    fn known_at(&self, bytes: &[u8], at: usize) -> Option<(usize, usize)> {
        let (key, len) = chain_key_at(bytes, at)?;
        let (k, index) = self.recent.0[RecentChains::slot(key)];
        (k == key).then_some((index, len))
    }

    /// The index in [`Chains::split`] of `chain`, split once per distinct chain
    /// ([`split_chain`]).
    fn index_of(&mut self, chain: &'a str) -> usize {
        // A lookup, and an insertion only for a new chain: `entry` took about 40 more
        // instructions a line (it prepares the insertion every time; callgrind).
        let k = match self.index.get(chain) {
            Some(&k) => k,
            None => {
                let (opcode, modifiers) = split_chain(chain, 0);
                // No operands counted yet: the first line of a chain counts them.
                self.split.push((opcode, modifiers, 0));
                self.index.insert(chain, self.split.len() - 1);
                self.split.len() - 1
            }
        };
        if let Some(key) = short_key(chain) {
            self.recent.0[RecentChains::slot(key)] = (key, k);
        }
        k
    }

    /// The opcode and modifiers of chain `k` ([`Chains::split`]) written at byte `at`.
    // Inlined, and the modifiers pushed in a loop into a vector of their number: `collect` on
    // the mapped slice iterator was a call of its own (straight-line 64k: `fold_line` 76.3M →
    // 74.9M instructions; callgrind, 2026-12-07).
    #[inline(always)]
    fn names_at(&self, k: usize, at: usize) -> (Name, Vec<Name>) {
        let (opcode, modifiers, _) = &self.split[k];
        let at = at as u32;
        let moved = |n: &Name| Name {
            text: n.text.clone(),
            span: Span {
                start: n.span.start + at,
                end: n.span.end + at,
            },
        };
        let mut moved_modifiers = Vec::with_capacity(modifiers.len());
        for m in modifiers {
            moved_modifiers.push(moved(m));
        }
        (moved(opcode), moved_modifiers)
    }

    /// The opcode and modifiers of `chain` written at byte `at`, and the chain's index in
    /// [`Chains::split`].
    fn get(&mut self, chain: &'a str, at: usize) -> (Name, Vec<Name>, usize) {
        let k = self.index_of(chain);
        let (opcode, modifiers) = self.names_at(k, at);
        (opcode, modifiers, k)
    }
}

/// Whether `t`, after an atom, makes the operand longer than the atom (`a+b`, `a-b`, `a|b`).
fn continues_operand(t: Tok<'_>) -> bool {
    matches!(t, Tok::Plus | Tok::Minus | Tok::Pipe)
}

/// A cursor over the tokens of one line.
struct Line<'t, 'a, 'c> {
    toks: &'t [Spanned<'a>],
    at: usize,
    chains: &'c mut Chains<'a>,
}

impl<'a> Line<'_, 'a, '_> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.at).map(|t| t.1)
    }

    fn bump(&mut self) -> Option<Spanned<'a>> {
        let t = *self.toks.get(self.at)?;
        self.at += 1;
        Some(t)
    }

    /// Takes the next token if it is `want` (a token without text: only the kinds compare).
    fn eat(&mut self, want: Tok<'_>) -> bool {
        let hit = self
            .toks
            .get(self.at)
            .is_some_and(|t| discriminant(&t.1) == discriminant(&want));
        self.at += usize::from(hit);
        hit
    }

    /// Where the last token taken ends (the grammar's `@R`).
    fn last_end(&self) -> usize {
        self.toks[self.at - 1].2
    }

    /// `[@[!]pred] opcode{.modifier} operands ;`, as the grammar's `Instruction`.
    fn instruction(&mut self) -> Option<Box<Instruction>> {
        let start = self.toks.get(self.at)?.0;
        let guard = if self.eat(Tok::At) {
            let negated = self.eat(Tok::Bang);
            let (l, Tok::Ident(pred), r) = self.bump()? else {
                return None;
            };
            Some(Box::new(Guard {
                negated,
                pred: Name::new(pred, l, r),
                span: Span::new(start, r),
            }))
        } else {
            None
        };
        let (opcode, modifiers, chain) = match self.bump()? {
            (l, Tok::OpChain(chain), _) => self.split_chain(chain, l),
            (l, Tok::Ident(name), r) => (Name::new(name, l, r), Vec::new(), None),
            _ => return None,
        };
        let operands = match chain {
            Some(k) => {
                let mut operands = self.list_of(Tok::Semi, true, self.chains.split[k].2)?;
                // Written with another number of operands than the chain's last line: no slack.
                if operands.len() != operands.capacity() {
                    operands.shrink_to_fit();
                }
                self.chains.split[k].2 = operands.len();
                operands
            }
            None => self.list(Tok::Semi, true)?,
        };
        Some(Box::new(Instruction {
            guard,
            opcode,
            modifiers,
            operands,
            span: Span::new(start, self.last_end()),
        }))
    }

    /// [`Chains::get`] of `chain` written at byte `at`, with the chain's operand count set from
    /// this line's commas if it is new.
    fn split_chain(&mut self, chain: &'a str, at: usize) -> (Name, Vec<Name>, Option<usize>) {
        let (opcode, modifiers, k) = self.chains.get(chain, at);
        if self.chains.split[k].2 == 0 {
            self.chains.split[k].2 = self.operand_count();
        }
        (opcode, modifiers, Some(k))
    }

    /// Operands separated by commas up to `close` (taken too); `empty` allows none.
    /// The vector has room for the operands the list's commas count ([`Line::operand_count`]),
    /// not the 4 or 8 of a growing vector: at 64k instructions that is 20 MB less.
    fn list(&mut self, close: Tok<'_>, empty: bool) -> Option<Vec<Operand>> {
        self.list_of(close, empty, self.operand_count())
    }

    /// [`Line::list`] in a vector with room for `capacity` operands.
    fn list_of(&mut self, close: Tok<'_>, empty: bool, capacity: usize) -> Option<Vec<Operand>> {
        if self.eat(close) {
            return empty.then(Vec::new);
        }
        let mut v = Vec::with_capacity(capacity);
        loop {
            // Most operands are a lone name (`%r1`) or integer before a `,`, `]` or `;`:
            // pushed here in one step, not through `operand`, `expr`, `unary` and `atom`,
            // whose `Option` results were each moved again on the way up (at 16k lines,
            // `list_of` 14.5M -> 9.4M instructions; callgrind).
            match self.toks[self.at..] {
                [(l, Tok::Ident(name), r), (_, next, _), ..] if !continues_operand(next) => {
                    self.at += 1;
                    v.push(Operand::Expr(Expr::Name {
                        name: Name::new(name, l, r),
                        component: None,
                    }));
                }
                [(l, Tok::Int(text), r), (_, next, _), ..] if !continues_operand(next) => {
                    self.at += 1;
                    v.push(Operand::Expr(Expr::lit(LitKind::Int, text, l, r)));
                }
                // An address of a register and an offset (`[%rd6+8]`), as `operand` builds it
                // (through `list`, `expr` and `Expr::binary`: about 690 instructions each).
                [
                    (l, Tok::LBracket, _),
                    (nl, Tok::Ident(name), nr),
                    (_, Tok::Plus, _),
                    (il, Tok::Int(text), ir),
                    (_, Tok::RBracket, r),
                    ..,
                ] => {
                    self.at += 5;
                    let base = Expr::Name {
                        name: Name::new(name, nl, nr),
                        component: None,
                    };
                    let offset = Expr::lit(LitKind::Int, text, il, ir);
                    let sum = Operand::Expr(Expr::binary(BinOp::Add, base, offset));
                    v.push(Operand::Address(vec![sum], Span::new(l, r)));
                }
                _ => v.push(self.operand()?),
            }
            match self.bump()?.1 {
                Tok::Comma => {}
                t if discriminant(&t) == discriminant(&close) => return Some(v),
                _ => return None,
            }
        }
    }

    /// The number of operands of the list that starts here, if it is one: one more than the
    /// commas before its closing bracket or `;`, outside nested brackets. Only a capacity: a
    /// line that is no list gives some number and is not folded.
    fn operand_count(&self) -> usize {
        let mut depth = 0u32;
        let mut commas = 0;
        for t in &self.toks[self.at..] {
            match t.1 {
                Tok::Comma if depth == 0 => commas += 1,
                Tok::LBracket | Tok::LBrace | Tok::LParen => depth += 1,
                Tok::RBracket | Tok::RBrace | Tok::RParen if depth > 0 => depth -= 1,
                Tok::RBracket | Tok::RBrace | Tok::RParen | Tok::Semi => break,
                _ => {}
            }
        }
        commas + 1
    }

    /// One operand, as the grammar's `Operand`.
    fn operand(&mut self) -> Option<Operand> {
        let l = self.toks.get(self.at)?.0;
        match self.peek()? {
            Tok::Underscore => {
                self.at += 1;
                if self.eat(Tok::Pipe) {
                    let b = self.expr()?;
                    return Some(Operand::Pair(
                        Box::new((None, b)),
                        Span::new(l, self.last_end()),
                    ));
                }
                Some(Operand::Sink(Span::new(l, self.last_end())))
            }
            Tok::Bang => {
                self.at += 1;
                let e = self.atom()?;
                Some(Operand::Not(Box::new(e), Span::new(l, self.last_end())))
            }
            Tok::LBracket => {
                self.at += 1;
                let v = self.list(Tok::RBracket, false)?;
                Some(Operand::Address(v, Span::new(l, self.last_end())))
            }
            Tok::LBrace => {
                self.at += 1;
                let v = self.list(Tok::RBrace, true)?;
                Some(Operand::Vector(v, Span::new(l, self.last_end())))
            }
            Tok::LParen => {
                self.at += 1;
                let v = self.list(Tok::RParen, true)?;
                Some(Operand::List(v, Span::new(l, self.last_end())))
            }
            _ => {
                let a = self.expr()?;
                if self.eat(Tok::Pipe) {
                    let b = self.expr()?;
                    let span = a.span().to(b.span());
                    return Some(Operand::Pair(Box::new((Some(a), b)), span));
                }
                Some(Operand::Expr(a))
            }
        }
    }

    /// `u`, `u+u` or `u-u` with `u` a [`Line::unary`]. A longer expression (`a+b+c`, `a+b*c`)
    /// leaves a token that no caller takes, so the line is left to the grammar.
    #[inline(always)]
    fn expr(&mut self) -> Option<Expr> {
        let a = self.unary()?;
        let op = match self.peek() {
            Some(Tok::Plus) => BinOp::Add,
            Some(Tok::Minus) => BinOp::Sub,
            _ => return Some(a),
        };
        self.at += 1;
        let b = self.unary()?;
        Some(Expr::binary(op, a, b))
    }

    /// An atom or `-atom`.
    #[inline(always)]
    fn unary(&mut self) -> Option<Expr> {
        let l = self.toks.get(self.at)?.0;
        if self.eat(Tok::Minus) {
            let e = self.atom()?;
            return Some(Expr::unary(UnOp::Neg, e, l, self.last_end()));
        }
        self.atom()
    }

    /// A name or a literal, as the grammar's `OpAtom`.
    #[inline(always)]
    fn atom(&mut self) -> Option<Expr> {
        Some(match self.bump()? {
            (l, Tok::Ident(s), r) => Expr::Name {
                name: Name::new(s, l, r),
                component: None,
            },
            (l, Tok::OpChain(c), _) => split_name(c, l)?,
            (l, Tok::Int(s), r) => Expr::lit(LitKind::Int, s, l, r),
            (l, Tok::HexF32(s), r) => Expr::lit(LitKind::HexF32, s, l, r),
            (l, Tok::HexF64(s), r) => Expr::lit(LitKind::HexF64, s, l, r),
            (l, Tok::Float(s), r) => Expr::lit(LitKind::Float, s, l, r),
            _ => return None,
        })
    }
}

/// A cursor over the bytes of one line, for [`Folder::fold_line`]: each step reads what the
/// lexer would make one token of, by the lexer's own rules ([`BYTE_CLASS`],
/// [`modifier_word_end`]), and gives up (`None`) at anything else.
struct ByteLine<'a> {
    src: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl<'a> ByteLine<'a> {
    /// The byte at the cursor; 0 at the end (no token starts with it, so every step stops).
    fn byte(&self) -> u8 {
        self.bytes.get(self.at).copied().unwrap_or(0)
    }

    fn class(&self) -> u8 {
        BYTE_CLASS[usize::from(self.byte())]
    }

    fn skip_space(&mut self) {
        while self.class() & SPACE != 0 {
            self.at += 1;
        }
    }

    /// Takes `b` (and the white space after it) if it is next.
    fn eat(&mut self, b: u8) -> bool {
        let hit = self.byte() == b;
        if hit {
            self.at += 1;
            self.skip_space();
        }
        hit
    }

    /// `[@[!]pred] opcode{.modifier} operands ;`, as [`Line::instruction`] builds it.
    fn instruction(&mut self, chains: &mut Chains<'a>) -> Option<Box<Instruction>> {
        let start = self.at;
        let guard = if self.eat(b'@') {
            let negated = self.eat(b'!');
            let pred = self.name()?;
            Some(Box::new(Guard {
                negated,
                span: Span {
                    start: start as u32,
                    end: pred.span.end,
                },
                pred,
            }))
        } else {
            None
        };
        // The opcode: a name and the modifier words right after it, as the lexer joins them.
        let l = self.at;
        let k = match chains.known_at(self.bytes, l) {
            Some((k, len)) => {
                self.at += len;
                k
            }
            None => {
                if self.class() & LETTER == 0 {
                    return None;
                }
                self.at += 1;
                while is_name_byte(self.byte()) {
                    self.at += 1;
                }
                while let Some(end) = modifier_word_end(self.bytes, self.at) {
                    self.at = end;
                }
                if self.byte() == b'.' {
                    // A word the lexer makes a token of its own (`.entry`), or no word.
                    return None;
                }
                chains.index_of(&self.src[l..self.at])
            }
        };
        let (opcode, modifiers) = chains.names_at(k, l);
        self.skip_space();
        let operands = if self.byte() == b';' {
            Vec::new()
        } else {
            // Room for as many operands as the chain's last line had (a chain is nearly always
            // written with the same number); trimmed when this line has another number, so
            // that each vector has room for exactly its operands.
            let mut v = Vec::with_capacity(chains.split[k].2.max(1));
            loop {
                v.push(self.operand()?);
                if !self.eat(b',') {
                    break;
                }
            }
            if v.len() != v.capacity() {
                v.shrink_to_fit();
            }
            chains.split[k].2 = v.len();
            v
        };
        if self.byte() != b';' {
            return None;
        }
        self.at += 1;
        Some(Box::new(Instruction {
            guard,
            opcode,
            modifiers,
            operands,
            span: Span::new(start, self.at),
        }))
    }

    /// A name, a decimal integer, or `[a]`, `[a+b]`, `[a-b]` of those; and the white space
    /// after it.
    #[inline(always)]
    fn operand(&mut self) -> Option<Operand> {
        if self.byte() != b'[' {
            return Some(Operand::Expr(self.atom()?));
        }
        let l = self.at;
        self.eat(b'[');
        let a = self.atom()?;
        let op = match self.byte() {
            b'+' => Some(BinOp::Add),
            b'-' => Some(BinOp::Sub),
            _ => None,
        };
        let address = match op {
            Some(op) => {
                self.at += 1;
                self.skip_space();
                Expr::binary(op, a, self.atom()?)
            }
            None => a,
        };
        if self.byte() != b']' {
            return None;
        }
        self.at += 1;
        let span = Span::new(l, self.at);
        self.skip_space();
        Some(Operand::Address(vec![Operand::Expr(address)], span))
    }

    /// A name or a decimal integer, and the white space after it.
    #[inline(always)]
    fn atom(&mut self) -> Option<Expr> {
        if self.class() & DIGIT == 0 {
            let name = self.name()?;
            return Some(Expr::Name {
                name,
                component: None,
            });
        }
        let l = self.at;
        while self.class() & DIGIT != 0 {
            self.at += 1;
        }
        // As the lexer: a byte that continues a number makes it another token (`0x10`, `1.5`).
        if is_name_byte(self.byte()) || self.byte() == b'.' {
            return None;
        }
        let lit = Expr::lit(LitKind::Int, &self.src[l..self.at], l, self.at);
        self.skip_space();
        Some(lit)
    }

    /// A name without a `.word` after it (`%r1`, `$L__BB0_1`, `foo`: `[A-Za-z][A-Za-z0-9_$]*` or
    /// `[_$%][A-Za-z0-9_$]+`), and the white space after it.
    #[inline(always)]
    fn name(&mut self) -> Option<Name> {
        let l = self.at;
        let first = self.byte();
        if self.class() & LETTER != 0 {
            self.at += 1;
        } else if matches!(first, b'%' | b'$' | b'_')
            && self.bytes.get(l + 1).is_some_and(|&c| is_name_byte(c))
        {
            self.at += 2;
        } else {
            return None;
        }
        while is_name_byte(self.byte()) {
            self.at += 1;
        }
        if self.byte() == b'.' {
            // `%tid.x` and anything else with a `.`: left to the tokens.
            return None;
        }
        let name = Name::new(&self.src[l..self.at], l, self.at);
        self.skip_space();
        Some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, parse_plain};
    use super::*;

    const HEADER: &str = ".version 8.7\n.target sm_90a\n.address_size 64\n";

    /// The number of lines folded in `body`'s kernel, and that both parses agree on it.
    fn folds(body: &str) -> usize {
        let src = format!("{HEADER}.entry k()\n{{\n{body}\n}}\n");
        let n = same_folds(&src);
        assert_eq!(parse(&src).ok(), parse_plain(&src).ok(), "{src}");
        n
    }

    /// The number of lines folded in `src`, and that folding its tokens and folding while it
    /// is lexed ([`Folder::fold_line`] where it can) give the same tokens and statements.
    fn same_folds(src: &str) -> usize {
        use super::super::lexer::{tokenize_chained, tokenize_chained_with};
        let Ok(mut tokens) = tokenize_chained(src) else {
            return 0;
        };
        let in_one_go = fold(&mut tokens);
        let mut folder = Folder::default();
        let mut lexed = tokenize_chained_with(src, Some(&mut folder)).unwrap();
        folder.fold(&mut lexed);
        assert_eq!(lexed, tokens, "{src}");
        assert_eq!(folder.folded, in_one_go, "{src}");
        in_one_go.iter().map(Vec::len).sum()
    }

    /// The packed key read from the source ([`chain_key_at`]) is the [`short_key`] of the
    /// chain before the white space, so that a chain found in the table
    /// ([`Chains::known_at`]) is the chain whose text was scanned.
    #[test]
    fn chain_keys_read_from_the_source_are_short_keys() {
        let pad = "                ";
        for chain in [
            "a",
            "add.s32",
            "ld.global.f32",
            "cvt.rn.f32.s32x",
            "ld.global.nc.f32",
        ] {
            for end in [" ", "\t", "\n", "\r", "\0"] {
                let src = format!("{chain}{end}%r1, 2;{pad}");
                let want = (chain.len() <= 15).then(|| (short_key(chain).unwrap(), chain.len()));
                assert_eq!(chain_key_at(src.as_bytes(), 0), want, "{src:?}");
                let src = format!("{pad}{src}");
                assert_eq!(chain_key_at(src.as_bytes(), pad.len()), want, "{src:?}");
            }
            // Followed by another byte: not the chain's key (the table never holds the key of
            // a text with a `;`).
            if let Some(key) = short_key(chain) {
                let src = format!("{chain};{pad}");
                assert_ne!(chain_key_at(src.as_bytes(), 0).map(|k| k.0), Some(key));
            }
        }
        // Fewer than 16 bytes left: not read.
        assert_eq!(chain_key_at(b"add.s32 %r1;", 0), None);
    }

    /// Lines at the edges of what [`Folder::fold_line`] takes fold as their tokens do.
    #[test]
    fn lines_folded_from_bytes_fold_as_their_tokens() {
        for line in [
            "ld.global.f32 %f2 , [ %rd6 + 8 ] ;",
            "ld.global.f32\n%f2,\n[%rd6-8];",
            "st.global.f32 [8], %f1;",
            "st.global.f32 [8+%r1], %f1;",
            "x.u32 %r1, [%r2+%r3];",
            "@ ! %p1 bra $L__x;",
            "@%p1 bra _x;",
            "@%p1.x bra _x;",
            "@!=%p1 bra _x;",
            "bra.uni _;",
            "add.s32 %r1, %r2, 12U;",
            "add.s32 %r1,%r2,0x10;",
            "add.s32 %r1, %r2, 1a;",
            "mov.b32 %r1, 1.5;",
            "mov.u32 %r1 %r2;",
            "mov.u32 %r1, %r2,;",
            "ld.u32 %r1, [%r2+4]+1;",
            "ld.u32 %r1, [%r2+4+1];",
            "ld.u32 %r1, [%r2+-4];",
            "add.s32 %r1, %r2, %r3 // c\n;",
            "add.s32 %r1, %r2, %r3 /* c */;",
            "mov.u32 %r1, %r2.x;",
            "mov.u32 %r1, %%r2;",
            "a b;",
            "a.entry;",
            "a.shared::cta.b.c %r1;",
            "a.b:: %r1;",
            "a$b.c;",
            "ret",
            "ret;ret;exit;",
            "L: mov.u32 %r1, 2;",
            "{ mov.u32 %r1, 2; }",
            "mov.b64 {a %r1;",
            "mov.b64 {%r1, %r2}, %rd1; add.s32 %r1, %r2, 3;",
        ] {
            same_folds(&format!("{HEADER}.entry k()\n{{\n{line}\n}}\n"));
            same_folds(&format!(
                "{HEADER}.entry k()\n{{\n{line}\nmov.u32 %r1, %r2;\n}}\n"
            ));
        }
    }

    #[test]
    fn simple_lines_are_folded_as_the_grammar_builds_them() {
        for line in [
            "ld.global.f32 %f2, [%rd6+8];",
            "ld.global.u32 %r7, [%rd1+-8];",
            "ld.global.u32 %r7, [%rd1-8];",
            "ld.global.u32 %r7, [0x100];",
            "mov.u32 %r1, %tid.x;",
            "add.s32 %r6, %r5, -4;",
            "mov.b32 %r5, 0f3F800000;",
            "mov.f64 %fd1, 0d3FF0000000000000;",
            "mov.f32 %f1, 1.5;",
            "ld.global.v4.u32 {%r1, %r2, _, %r4}, [g+4];",
            "setp.lt.s32 %p1|%p2, %r1, 3;",
            "elect.sync _|%p2, 0xffffffff;",
            "@!%p1 bra L;",
            "@%p1 bra.uni L;",
            "selp.b32 %r1, %r2, %r3, !%p1;",
            "call.uni (retval0), f, (param0);",
            "call (r0), %rd1, (), proto;",
            "ret;",
            "exit;",
        ] {
            assert_eq!(folds(line), 1, "{line}");
        }
    }

    #[test]
    fn other_lines_are_left_to_the_grammar() {
        for line in [
            "add.s32 %r1, %r2, 1+2*3;",
            "add.s32 %r1, %r2, 1+2+3;",
            "add.s32 %r1, %r2, ~3;",
            "add.s32 %r1, %r2, %r3,;",
            "ld.global.u32 %r1, [];",
            "ld .global.u32 %r1, [%rd1];",
            "mov.u32 %r1, %tid .x;",
            "mov.u32 %r1, %tid.x.y;",
            "mov.u32 %r1, %r2.global;",
            "@%p1.x bra L;",
            "L:",
            ".reg .b32 %r<4>;",
        ] {
            assert_eq!(folds(line), 0, "{line}");
        }
    }

    /// A kernel of many flushes ([`FLUSH_TOKENS`](super::super::lexer::FLUSH_TOKENS)), of lines
    /// folded from their bytes and lines folded from their tokens, folds while it is lexed
    /// exactly as in one go: the same runs (one per block, not one per step or kind of line)
    /// and the same tree as the plain parse; each operand vector has room for exactly its
    /// operands.
    #[test]
    fn folding_in_steps_folds_as_in_one_go() {
        use super::super::lexer::FLUSH_TOKENS;
        let mut body = String::new();
        for i in 0..FLUSH_TOKENS {
            body.push_str(&format!(
                "ld.global.f32 %f{i}, [%rd6+{i}];\nadd.s32 %r{i}, %r1, {i};\nmov.u32 %r{i}, %tid.x;\n"
            ));
            if i % 7 == 0 {
                body.push_str("add.s32 %r1, %r1;\n");
            }
            if i % 1000 == 999 {
                body.push_str(&format!("L{i}:\n{{\n.reg .b32 %x;\nmov.u32 %x, 1;\n}}\n"));
            }
        }
        // Lines only the tokens fold, many flushes of them.
        for i in 0..FLUSH_TOKENS {
            body.push_str(&format!("mov.u32 %r{i}, %tid.x;\n"));
        }
        let src = format!("{HEADER}.entry k()\n{{\n{body}ret;\n}}\n");
        let mut tokens = super::super::lexer::tokenize_chained(&src).unwrap();
        let in_one_go = fold(&mut tokens);
        assert_eq!(same_folds(&src), 4 * FLUSH_TOKENS + 586 + 4 + 1);
        assert_eq!(in_one_go.len(), 9, "a run per block and between blocks");
        for stmt in in_one_go.iter().flatten() {
            let Stmt::Instr(i) = stmt else { panic!() };
            assert_eq!(i.operands.capacity(), i.operands.len(), "{i:?}");
            for o in &i.operands {
                if let Operand::Address(v, _) = o {
                    assert_eq!(v.capacity(), v.len(), "{i:?}");
                }
            }
        }
        let mut folder = Folder::default();
        let mut lexed =
            super::super::lexer::tokenize_chained_with(&src, Some(&mut folder)).unwrap();
        folder.fold(&mut lexed);
        for stmt in folder.folded.iter().flatten() {
            let Stmt::Instr(i) = stmt else { panic!() };
            assert_eq!(i.operands.capacity(), i.operands.len(), "{i:?}");
        }
        assert_eq!(parse(&src).ok(), parse_plain(&src).ok());
    }

    #[test]
    fn a_line_folded_out_of_place_falls_back_to_the_plain_parse() {
        // After the `:` of a conditional initializer, `b;` looks like an instruction.
        let src = format!("{HEADER}.global .u32 x = 1 ? 2 : b;\n");
        let mut tokens = super::super::lexer::tokenize_chained(&src).unwrap();
        assert_eq!(fold(&mut tokens).iter().map(Vec::len).sum::<usize>(), 1);
        assert_eq!(parse(&src).ok(), parse_plain(&src).ok());
    }
}

//! Simple instruction lines, parsed ahead of the grammar (the last step of the fast path).
//!
//! Most lines of a large kernel are instructions whose operands are registers, literals and
//! plain addresses: `ld.global.f32 %f2, [%rd6+8];`. The grammar spends about fifteen shifts and
//! reductions on such a line; here it is recognized in one scan of its chained tokens
//! ([`lexer::tokenize_chained`](super::lexer::tokenize_chained)), built as the grammar's action
//! would build it; each run of such lines is replaced in the token vector by one
//! [`Tok::Instrs`] token, which the grammar appends to the block's statements in one reduction.
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
use super::lexer::{Spanned, Tok};
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
/// folded line ends at the first `;` after its start, which is in the same step.
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
            let at_statement = write > 0
                && matches!(
                    tokens[write - 1].1,
                    Tok::Semi | Tok::LBrace | Tok::RBrace | Tok::Colon | Tok::Instrs(_)
                );
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
                let operands = self.list_of(Tok::Semi, true, self.chains.split[k].2)?;
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

    /// [`split_chain`] of `chain` written at byte `at`, split once per distinct chain, and the
    /// chain's index in [`Chains::split`].
    fn split_chain(&mut self, chain: &'a str, at: usize) -> (Name, Vec<Name>, Option<usize>) {
        let Chains { index, split } = &mut *self.chains;
        // A lookup, and an insertion only for a new chain: `entry` took about 40 more
        // instructions a line (it prepares the insertion every time; callgrind).
        let k = match index.get(chain) {
            Some(&k) => k,
            None => {
                let (opcode, modifiers) = split_chain(chain, 0);
                // The first line of a chain: its commas are counted below.
                split.push((opcode, modifiers, 0));
                index.insert(chain, split.len() - 1);
                split.len() - 1
            }
        };
        if split[k].2 == 0 {
            let count = self.operand_count();
            self.chains.split[k].2 = count;
        }
        let (opcode, modifiers, _) = &self.chains.split[k];
        let at = at as u32;
        let moved = |n: &Name| Name {
            text: n.text.clone(),
            span: Span {
                start: n.span.start + at,
                end: n.span.end + at,
            },
        };
        (
            moved(opcode),
            modifiers.iter().map(moved).collect(),
            Some(k),
        )
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
                Some(Operand::Not(e, Span::new(l, self.last_end())))
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

#[cfg(test)]
mod tests {
    use super::super::{parse, parse_plain};
    use super::*;

    const HEADER: &str = ".version 8.7\n.target sm_90a\n.address_size 64\n";

    /// The number of lines folded in `body`'s kernel, and that both parses agree on it.
    fn folds(body: &str) -> usize {
        let src = format!("{HEADER}.entry k()\n{{\n{body}\n}}\n");
        let mut tokens = super::super::lexer::tokenize_chained(&src).unwrap();
        let n = fold(&mut tokens).iter().map(Vec::len).sum();
        assert_eq!(parse(&src).ok(), parse_plain(&src).ok(), "{src}");
        n
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

    /// A kernel of many flushes ([`FLUSH_TOKENS`](super::super::lexer::FLUSH_TOKENS)) folds
    /// in steps exactly as in one go: the same runs (one per block, not one per step) and the
    /// same tree as the plain parse; each operand vector has room for exactly its operands.
    #[test]
    fn folding_in_steps_folds_as_in_one_go() {
        use super::super::lexer::{FLUSH_TOKENS, tokenize_chained, tokenize_chained_with};
        let mut body = String::new();
        for i in 0..FLUSH_TOKENS {
            body.push_str(&format!(
                "ld.global.f32 %f{i}, [%rd6+{i}];\nadd.s32 %r{i}, %r1, {i};\n"
            ));
            if i % 1000 == 999 {
                body.push_str(&format!("L{i}:\n{{\n.reg .b32 %x;\nmov.u32 %x, 1;\n}}\n"));
            }
        }
        let src = format!("{HEADER}.entry k()\n{{\n{body}ret;\n}}\n");
        let mut tokens = tokenize_chained(&src).unwrap();
        let in_one_go = fold(&mut tokens);
        let mut folder = Folder::default();
        let mut steps = 0;
        let mut stepped = tokenize_chained_with(&src, &mut |t| {
            steps += 1;
            folder.fold(t);
        })
        .unwrap();
        folder.fold(&mut stepped);
        assert!(steps > 1, "{steps} flushes");
        assert_eq!(stepped, tokens);
        assert_eq!(folder.folded, in_one_go);
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

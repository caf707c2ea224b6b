//! The PTX abstract syntax tree, as the grammar builds it: structural, with a byte span on
//! everything a diagnostic may point at. Meaning (types, state spaces, which modifiers an opcode
//! takes) is checked later by `check.rs` against the instruction table in `isa.rs`.

use compact_str::CompactString;
use std::fmt;

/// A byte range in the source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A name (identifier, directive word, modifier) with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name {
    pub text: CompactString,
    pub span: Span,
}

impl Name {
    pub fn new(text: &str, l: usize, r: usize) -> Name {
        Name {
            text: CompactString::new(text),
            span: Span::new(l, r),
        }
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A whole `.ptx` file.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    pub items: Vec<Item>,
}

/// A module-level statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `.version 8.7`
    Version { text: Name },
    /// `.target sm_90a, texmode_independent, debug`
    Target { targets: Vec<Name>, span: Span },
    /// `.address_size 64`
    AddressSize { size: Expr, span: Span },
    /// `.file 1 "name.cu"[, timestamp, size]`
    File(Box<FileDirective>),
    /// `.section .debug_info { ... }` (debug information; kept verbatim, not interpreted)
    Section {
        name: Name,
        items: Vec<SectionItem>,
        span: Span,
    },
    /// A variable in any state space.
    Var(Box<VarDecl>),
    /// `.entry` / `.func`, declaration or definition.
    Function(Box<Function>),
    /// `.alias fAlias, fBody;`
    Alias {
        alias: Name,
        aliasee: Name,
        span: Span,
    },
    /// `.pragma "...";` at module level.
    Pragma { args: Vec<Name>, span: Span },
}

/// `.file 1 "name.cu"[, timestamp, size]`
#[derive(Clone, Debug, PartialEq)]
pub struct FileDirective {
    pub index: Expr,
    pub path: Name,
    pub rest: Vec<Expr>,
    pub span: Span,
}

/// One line of a `.section` body: `.b8 1, 2, 3`, `.b32 .debug_abbrev`, or a label.
#[derive(Clone, Debug, PartialEq)]
pub enum SectionItem {
    Data { ty: Name, values: Vec<SectionValue> },
    Label(Name),
}

#[derive(Clone, Debug, PartialEq)]
pub enum SectionValue {
    Expr(Expr),
    /// A reference to another section, with an optional offset: `.debug_info+123`.
    SectionRef(Name, Option<Expr>),
}

/// `.visible`, `.extern`, `.weak`, `.common`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    Visible,
    Extern,
    Weak,
    Common,
}

impl fmt::Display for Linkage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Linkage::Visible => ".visible",
            Linkage::Extern => ".extern",
            Linkage::Weak => ".weak",
            Linkage::Common => ".common",
        })
    }
}

/// A state space, where it is a declaration's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Reg,
    Sreg,
    Param,
    Local,
    Shared,
    Global,
    Const,
    Tex,
}

impl Space {
    pub fn as_str(self) -> &'static str {
        match self {
            Space::Reg => ".reg",
            Space::Sreg => ".sreg",
            Space::Param => ".param",
            Space::Local => ".local",
            Space::Shared => ".shared",
            Space::Global => ".global",
            Space::Const => ".const",
            Space::Tex => ".tex",
        }
    }
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An attribute word in a declaration or parameter: `.align 8`, `.v4`, `.u32`, `.ptr`,
/// `.global` (after `.ptr`), `.attribute(.managed)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub word: Name,
    /// The number after `.align` (or any word followed by an integer).
    pub value: Option<Expr>,
    /// The words in `.attribute( ... )`.
    pub args: Vec<Name>,
}

/// A declared name: `x`, `%r<100>`, `buf[16][4]`, `arr[]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Declarator {
    pub name: Name,
    /// `%r<100>`: a family of 100 registers `%r0`…`%r99`.
    pub range: Option<Expr>,
    /// Array dimensions; `None` for `[]`.
    pub dims: Vec<Option<Expr>>,
    pub init: Option<Init>,
    pub span: Span,
}

/// `[linkage] space attrs declarators ;`
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub linkage: Vec<(Linkage, Span)>,
    pub space: Space,
    pub space_span: Span,
    pub attrs: Vec<Attr>,
    pub decls: Vec<Declarator>,
    pub span: Span,
}

/// An initializer.
#[derive(Clone, Debug, PartialEq)]
pub enum Init {
    Expr(Expr),
    List(Vec<Init>, Span),
}

/// A function parameter (`.param` or `.reg`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamDecl {
    pub space: Space,
    pub attrs: Vec<Attr>,
    pub decl: Declarator,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FunctionKind {
    Entry,
    Func,
}

/// A performance directive or attribute after the parameter list:
/// `.maxntid 128, 1, 1`, `.explicitcluster`, `.noreturn`, `.pragma "nounroll";`.
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub name: Name,
    pub args: Vec<Expr>,
    /// String arguments (`.pragma`).
    pub strings: Vec<Name>,
    pub span: Span,
}

/// `.entry` / `.func`.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub linkage: Vec<(Linkage, Span)>,
    pub kind: FunctionKind,
    pub kind_span: Span,
    pub name: Name,
    /// Return parameters of a `.func`: `.func (.param .b32 r) f(...)`.
    pub returns: Option<Vec<ParamDecl>>,
    pub params: Option<Vec<ParamDecl>>,
    pub directives: Vec<Directive>,
    /// `None` for a declaration (`... ;`).
    pub body: Option<Block>,
    pub span: Span,
}

/// `{ statements }`
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

/// A statement in a function body. Every variant is boxed, so that the parser moves small
/// values (see `docs/ARCHITECTURE.md`, "`frontend/` — PTX text to a checked module") and a
/// block's statement vector holds 16 bytes a statement (at 64k straight-line instructions,
/// 1.5 MB less than with a label or a block inline).
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Var(Box<VarDecl>),
    Label(Box<Name>),
    Instr(Box<Instruction>),
    Block(Box<Block>),
    /// `.pragma "nounroll";`
    Pragma(Box<Directive>),
    /// `.loc file line col [, more]`
    Loc(Box<Directive>),
    /// `name: .callprototype (.param .b32 _) _ (.param .b64 _);`
    CallPrototype(Box<CallPrototype>),
    /// `ts: .branchtargets L1, L2;` or `.calltargets f, g;` (for `brx.idx` and indirect `call`).
    Targets(Box<TargetList>),
}

/// `ts: .branchtargets L1, L2;` / `.calltargets f, g;`
#[derive(Clone, Debug, PartialEq)]
pub struct TargetList {
    pub name: Name,
    pub kind: Name,
    pub targets: Vec<Name>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallPrototype {
    pub name: Name,
    pub returns: Option<Vec<ParamDecl>>,
    pub params: Vec<ParamDecl>,
    pub directives: Vec<Directive>,
    pub span: Span,
}

/// `@p` or `@!p`.
#[derive(Clone, Debug, PartialEq)]
pub struct Guard {
    pub negated: bool,
    pub pred: Name,
    pub span: Span,
}

/// `[@[!]pred] opcode{.modifier} operand, … ;`
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// Boxed: most instructions have none, and a `Guard` is 48 bytes.
    pub guard: Option<Box<Guard>>,
    pub opcode: Name,
    pub modifiers: Vec<Name>,
    pub operands: Vec<Operand>,
    pub span: Span,
}

/// An instruction operand.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A register, symbol, label, immediate or constant expression (`%r1`, `%tid.x`, `sym+4`,
    /// `-1`, `0f3F800000`).
    Expr(Expr),
    /// `!%p`: a negated predicate source (boxed: it is rare, and unboxed it made every
    /// `Operand` 8 bytes larger, 56 instead of 48).
    Not(Box<Expr>, Span),
    /// `[addr]`, `[addr+imm]`, `[tex, {coords}]`.
    Address(Vec<Operand>, Span),
    /// `{a, b, c, d}`
    Vector(Vec<Operand>, Span),
    /// `( … )`: argument and return lists of `call`.
    List(Vec<Operand>, Span),
    /// `a|b`: a pair of destinations (setp, elect.sync, …); `_|p` discards the first.
    Pair(Box<(Option<Expr>, Expr)>, Span),
    /// `_`: a destination whose value is discarded.
    Sink(Span),
}

impl Operand {
    pub fn span(&self) -> Span {
        match self {
            Operand::Expr(e) => e.span(),
            Operand::Not(_, s)
            | Operand::Address(_, s)
            | Operand::Vector(_, s)
            | Operand::List(_, s)
            | Operand::Pair(_, s)
            | Operand::Sink(s) => *s,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    LogNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    And,
    Or,
    Xor,
    LogAnd,
    LogOr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::LogAnd => "&&",
            BinOp::LogOr => "||",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

/// Literal kinds, kept as written so that diagnostics can quote them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LitKind {
    Int,
    HexF32,
    HexF64,
    Float,
}

/// An expression: names, literals and constant arithmetic.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A register, symbol or label; `component` is the `.x` of `%tid.x` (boxed: it is rare,
    /// and unboxed it made every `Expr` 32 bytes larger).
    Name {
        name: Name,
        component: Option<Box<Name>>,
    },
    /// A literal as written (inline in the node: no literal of a real kernel is longer than
    /// the 24 bytes a `CompactString` holds without an allocation).
    Lit {
        kind: LitKind,
        text: CompactString,
        span: Span,
    },
    Unary {
        op: UnOp,
        arg: Box<Expr>,
        span: Span,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        span: Span,
    },
    /// `c ? a : b`
    Cond {
        cond: Box<Expr>,
        then: Box<Expr>,
        other: Box<Expr>,
        span: Span,
    },
    /// `generic(sym)` and similar operator-like calls in initializers.
    Call {
        /// Boxed, so that `Call` is no larger than `Name` (calls are rare: initializers only).
        func: Box<Name>,
        args: Vec<Expr>,
        span: Span,
    },
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Name { name, component } => match component {
                Some(c) => name.span.to(c.span),
                None => name.span,
            },
            Expr::Lit { span, .. }
            | Expr::Unary { span, .. }
            | Expr::Binary { span, .. }
            | Expr::Cond { span, .. }
            | Expr::Call { span, .. } => *span,
        }
    }

    pub fn unary(op: UnOp, arg: Expr, l: usize, r: usize) -> Expr {
        Expr::Unary {
            op,
            arg: Box::new(arg),
            span: Span::new(l, r),
        }
    }

    pub fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
        let span = lhs.span().to(rhs.span());
        Expr::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            span,
        }
    }

    pub fn lit(kind: LitKind, text: &str, l: usize, r: usize) -> Expr {
        Expr::Lit {
            kind,
            text: CompactString::new(text),
            span: Span::new(l, r),
        }
    }

    /// The name, when the expression is a bare name.
    pub fn as_name(&self) -> Option<&Name> {
        match self {
            Expr::Name {
                name,
                component: None,
            } => Some(name),
            _ => None,
        }
    }
}

/// Splits a chained token (`ld.global.f32`, written at byte `at`) into the opcode and its
/// modifiers, each with its own span, as the plain tokens would give them.
pub(crate) fn split_chain(chain: &str, at: usize) -> (Name, Vec<Name>) {
    let bytes = chain.as_bytes();
    let mut opcode = None;
    let mut modifiers = Vec::with_capacity(4);
    let mut start = 0;
    for end in 1..=bytes.len() {
        if end == bytes.len() || bytes[end] == b'.' {
            let name = Name::new(&chain[start..end], at + start, at + end);
            match opcode {
                None => opcode = Some(name),
                Some(_) => modifiers.push(name),
            }
            start = end;
        }
    }
    let opcode = opcode.unwrap_or_else(|| Name::new(chain, at, at + chain.len()));
    (opcode, modifiers)
}

/// A chained token as an operand name with one component (`%tid.x`), or `None` where the plain
/// tokens would not be one (more than one `.word`, or a keyword word such as `.global`).
pub(crate) fn split_name(chain: &str, at: usize) -> Option<Expr> {
    let dot = chain.find('.')?;
    let component = &chain[dot..];
    // The words the lexer gives tokens of their own, which a name's component cannot be.
    const KEYWORDS: [&str; 10] = [
        ".reg", ".sreg", ".param", ".local", ".shared", ".global", ".const", ".tex", ".weak",
        ".alias",
    ];
    if component[1..].contains('.') || KEYWORDS.contains(&component) {
        return None;
    }
    Some(Expr::Name {
        name: Name::new(&chain[..dot], at, at + dot),
        component: Some(Box::new(Name::new(component, at + dot, at + chain.len()))),
    })
}

/// The values of a list of boxes (the grammar boxes large nodes while it parses them).
pub(crate) fn unbox<T>(v: Vec<Box<T>>) -> Vec<T> {
    v.into_iter().map(|b| *b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node sizes a large kernel's tree is made of (at 64k straight-line instructions the
    /// tree is the largest thing alive while lowering starts): a rare part (a component, a
    /// guard, a call) is boxed so that the common nodes do not carry its room.
    #[test]
    fn common_nodes_stay_small() {
        assert_eq!(size_of::<Name>(), 32);
        assert_eq!(size_of::<Stmt>(), 16);
        assert!(size_of::<Expr>() <= 48, "Expr: {}", size_of::<Expr>());
        assert!(
            size_of::<Operand>() <= 48,
            "Operand: {}",
            size_of::<Operand>()
        );
        assert!(
            size_of::<Instruction>() <= 96,
            "Instruction: {}",
            size_of::<Instruction>()
        );
        // A literal is kept in the node, not in an allocation of its own.
        let Expr::Lit { text, .. } = Expr::lit(LitKind::HexF64, "0d3FF0000000000000", 0, 18) else {
            panic!()
        };
        assert!(!text.is_heap_allocated());
    }
}

//! `--emit ast`: the syntax tree as an indented outline, one node per line, each with the
//! `line:column` it came from. Expressions and operands are shown in PTX syntax.

use super::ast::*;
use crate::diag::SourceFile;
use std::fmt::Write as _;

/// Renders the AST of `m` (parsed from `src`).
pub fn print_ast(m: &Module, src: &SourceFile) -> String {
    let mut p = Printer {
        out: String::new(),
        src,
    };
    p.line(0, Span::default(), "module");
    for item in &m.items {
        p.item(item);
    }
    p.out
}

struct Printer<'a> {
    out: String,
    src: &'a SourceFile,
}

impl Printer<'_> {
    fn line(&mut self, depth: usize, span: Span, text: impl AsRef<str>) {
        let (l, c) = self.src.line_col(span.start);
        let pos = format!("{l}:{c}");
        let _ = writeln!(
            self.out,
            "{pos:>8}  {}{}",
            "  ".repeat(depth),
            text.as_ref()
        );
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Version { text } => self.line(1, text.span, format!("Version {}", text.text)),
            Item::Target { targets, span } => {
                let t: Vec<&str> = targets.iter().map(|n| n.text.as_str()).collect();
                self.line(1, *span, format!("Target {}", t.join(", ")));
            }
            Item::AddressSize { size, span } => {
                self.line(1, *span, format!("AddressSize {}", expr(size)))
            }
            Item::File(f) => self.line(
                1,
                f.span,
                format!("File {} {}", expr(&f.index), f.path.text),
            ),
            Item::Section { name, items, span } => self.line(
                1,
                *span,
                format!("Section {} ({} entries)", name.text, items.len()),
            ),
            Item::Var(v) => self.var(1, v),
            Item::Function(f) => self.function(f),
            Item::Alias {
                alias,
                aliasee,
                span,
            } => self.line(1, *span, format!("Alias {} = {}", alias.text, aliasee.text)),
            Item::Pragma { args, span } => {
                let a: Vec<&str> = args.iter().map(|n| n.text.as_str()).collect();
                self.line(1, *span, format!("Pragma {}", a.join(", ")))
            }
        }
    }

    fn var(&mut self, depth: usize, v: &VarDecl) {
        let mut head = String::from("Var");
        for (l, _) in &v.linkage {
            let _ = write!(head, " {l}");
        }
        let _ = write!(head, " {}", v.space);
        for a in &v.attrs {
            let _ = write!(head, " {}", attr(a));
        }
        let names: Vec<String> = v.decls.iter().map(declarator).collect();
        let _ = write!(head, " {}", names.join(", "));
        self.line(depth, v.span, head);
    }

    fn params(&mut self, depth: usize, label: &str, ps: &[ParamDecl]) {
        for p in ps {
            let mut s = format!("{label} {}", p.space);
            for a in &p.attrs {
                let _ = write!(s, " {}", attr(a));
            }
            let _ = write!(s, " {}", declarator(&p.decl));
            self.line(depth, p.span, s);
        }
    }

    fn function(&mut self, f: &Function) {
        let kind = match f.kind {
            FunctionKind::Entry => "Entry",
            FunctionKind::Func => "Func",
        };
        let mut head = format!("{kind} {}", f.name.text);
        for (l, _) in &f.linkage {
            let _ = write!(head, " {l}");
        }
        if f.body.is_none() {
            head.push_str(" (declaration)");
        }
        self.line(1, f.span, head);
        if let Some(r) = &f.returns {
            self.params(2, "Return", r);
        }
        if let Some(p) = &f.params {
            self.params(2, "Param", p);
        }
        for d in &f.directives {
            self.line(2, d.span, directive(d));
        }
        if let Some(b) = &f.body {
            self.block(2, b);
        }
    }

    fn block(&mut self, depth: usize, b: &Block) {
        self.line(depth, b.span, "Block");
        for s in &b.stmts {
            self.stmt(depth + 1, s);
        }
    }

    fn stmt(&mut self, depth: usize, s: &Stmt) {
        match s {
            Stmt::Var(v) => self.var(depth, v),
            Stmt::Label(n) => self.line(depth, n.span, format!("Label {}", n.text)),
            Stmt::Instr(i) => self.line(depth, i.span, instruction(i)),
            Stmt::Block(b) => self.block(depth, b),
            Stmt::Pragma(d) | Stmt::Loc(d) => self.line(depth, d.span, directive(d)),
            Stmt::CallPrototype(p) => {
                self.line(depth, p.span, format!("CallPrototype {}", p.name.text));
                if let Some(r) = &p.returns {
                    self.params(depth + 1, "Return", r);
                }
                self.params(depth + 1, "Param", &p.params);
            }
            Stmt::Targets(t) => {
                let (name, kind, targets, span) = (&t.name, &t.kind, &t.targets, &t.span);
                let t: Vec<&str> = targets.iter().map(|n| n.text.as_str()).collect();
                self.line(
                    depth,
                    *span,
                    format!("Targets {} {} {}", name.text, kind.text, t.join(", ")),
                );
            }
        }
    }
}

fn attr(a: &Attr) -> String {
    let mut s = a.word.text.to_string();
    if let Some(v) = &a.value {
        let _ = write!(s, " {}", expr(v));
    }
    if !a.args.is_empty() {
        let args: Vec<&str> = a.args.iter().map(|n| n.text.as_str()).collect();
        let _ = write!(s, "({})", args.join(", "));
    }
    s
}

fn declarator(d: &Declarator) -> String {
    let mut s = d.name.text.to_string();
    if let Some(r) = &d.range {
        let _ = write!(s, "<{}>", expr(r));
    }
    for dim in &d.dims {
        match dim {
            Some(e) => {
                let _ = write!(s, "[{}]", expr(e));
            }
            None => s.push_str("[]"),
        }
    }
    if let Some(i) = &d.init {
        let _ = write!(s, " = {}", init(i));
    }
    s
}

fn init(i: &Init) -> String {
    match i {
        Init::Expr(e) => expr(e),
        Init::List(items, _) => {
            let v: Vec<String> = items.iter().map(init).collect();
            format!("{{{}}}", v.join(", "))
        }
    }
}

fn directive(d: &Directive) -> String {
    let mut s = format!("Directive {}", d.name.text);
    let args: Vec<String> = d
        .args
        .iter()
        .map(expr)
        .chain(d.strings.iter().map(|n| n.text.to_string()))
        .collect();
    if !args.is_empty() {
        let _ = write!(s, " {}", args.join(", "));
    }
    s
}

fn instruction(i: &Instruction) -> String {
    let mut s = String::from("Instr ");
    if let Some(g) = &i.guard {
        let _ = write!(s, "@{}{} ", if g.negated { "!" } else { "" }, g.pred.text);
    }
    s.push_str(&i.opcode.text);
    for m in &i.modifiers {
        s.push_str(&m.text);
    }
    let ops: Vec<String> = i.operands.iter().map(operand).collect();
    if !ops.is_empty() {
        let _ = write!(s, " {}", ops.join(", "));
    }
    s
}

/// An operand in PTX syntax.
pub fn operand(o: &Operand) -> String {
    match o {
        Operand::Expr(e) => expr(e),
        Operand::Not(e, _) => format!("!{}", expr(e)),
        Operand::Address(parts, _) => {
            let v: Vec<String> = parts.iter().map(operand).collect();
            format!("[{}]", v.join(", "))
        }
        Operand::Vector(items, _) => {
            let v: Vec<String> = items.iter().map(operand).collect();
            format!("{{{}}}", v.join(", "))
        }
        Operand::List(items, _) => {
            let v: Vec<String> = items.iter().map(operand).collect();
            format!("({})", v.join(", "))
        }
        Operand::Pair(pair, _) => match &pair.0 {
            Some(a) => format!("{}|{}", expr(a), expr(&pair.1)),
            None => format!("_|{}", expr(&pair.1)),
        },
        Operand::Sink(_) => "_".into(),
    }
}

/// An expression in PTX syntax, fully parenthesised where it nests.
pub fn expr(e: &Expr) -> String {
    match e {
        Expr::Name { name, component } => match component {
            Some(c) => format!("{}{}", name.text, c.text),
            None => name.text.to_string(),
        },
        Expr::Lit { text, .. } => text.to_string(),
        Expr::Unary { op, arg, .. } => {
            let o = match op {
                UnOp::Neg => "-",
                UnOp::Not => "~",
                UnOp::LogNot => "!",
            };
            format!("{o}{}", sub(arg))
        }
        Expr::Binary { op, lhs, rhs, .. } => format!("{}{}{}", sub(lhs), op.as_str(), sub(rhs)),
        Expr::Cond {
            cond, then, other, ..
        } => format!("{} ? {} : {}", sub(cond), sub(then), sub(other)),
        Expr::Call { func, args, .. } => {
            let v: Vec<String> = args.iter().map(expr).collect();
            format!("{}({})", func.text, v.join(", "))
        }
    }
}

fn sub(e: &Expr) -> String {
    match e {
        Expr::Binary { .. } | Expr::Cond { .. } => format!("({})", expr(e)),
        _ => expr(e),
    }
}

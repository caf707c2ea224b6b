//! Printing: nvdisasm's text for instructions and operands.

use super::float::{fmt_f64, fmt_float};
use super::model::*;
use std::fmt;

/// nvdisasm's special-register names, by number (`S2R R5, SR_<n>` for n = 0..255 decoded by
/// nvdisasm 13.2.51: `shared/notes/probes/13_control_word/srscan.SM90a.txt`).
pub const SR_NAMES: [&str; 256] = [
    "SR_LANEID",
    "SR_CLOCK",
    "SR_VIRTCFG",
    "SR_VIRTID",
    "SR4",
    "SR5",
    "SR6",
    "SR7",
    "SR8",
    "SR9",
    "SR10",
    "SR11",
    "SR12",
    "SR13",
    "SR14",
    "SR_ORDERING_TICKET",
    "SR_PRIM_TYPE",
    "SR_INVOCATION_ID",
    "SR_Y_DIRECTION",
    "SR_THREAD_KILL",
    "SM_SHADER_TYPE",
    "SR_DIRECTCBEWRITEADDRESSLOW",
    "SR_DIRECTCBEWRITEADDRESSHIGH",
    "SR_DIRECTCBEWRITEENABLED",
    "SR_SW_SCRATCH",
    "SR_MACHINE_ID_1",
    "SR_MACHINE_ID_2",
    "SR_MACHINE_ID_3",
    "SR_AFFINITY",
    "SR_INVOCATION_INFO",
    "SR_WSCALEFACTOR_XY",
    "SR_WSCALEFACTOR_Z",
    "SR_TID",
    "SR_TID.X",
    "SR_TID.Y",
    "SR_TID.Z",
    "SR36",
    "SR_CTAID.X",
    "SR_CTAID.Y",
    "SR_CTAID.Z",
    "SR_NTID",
    "SR_CirQueueIncrMinusOne",
    "SR_NLATC",
    "SR43",
    "SR_SM_SPA_VERSION",
    "SR_MULTIPASSSHADERINFO",
    "SR_LWINHI",
    "SR_SWINHI",
    "SR_SWINLO",
    "SR_SWINSZ",
    "SR_SMEMSZ",
    "SR_SMEMBANKS",
    "SR_LWINLO",
    "SR_LWINSZ",
    "SR_LMEMLOSZ",
    "SR_LMEMHIOFF",
    "SR_EQMASK",
    "SR_LTMASK",
    "SR_LEMASK",
    "SR_GTMASK",
    "SR_GEMASK",
    "SR_REGALLOC",
    "SR_BARRIERALLOC",
    "SR63",
    "SR_GLOBALERRORSTATUS",
    "SR_CGAERRORSTATUS",
    "SR_WARPERRORSTATUS",
    "SR_VIRTUALSMID",
    "SR_VIRTUALENGINEID",
    "SR69",
    "SR70",
    "SR71",
    "SR72",
    "SR73",
    "SR74",
    "SR75",
    "SR76",
    "SR77",
    "SR78",
    "SR79",
    "SR_CLOCKLO",
    "SR_CLOCKHI",
    "SR_GLOBALTIMERLO",
    "SR_GLOBALTIMERHI",
    "SR_ESR_PC",
    "SR_ESR_PC_HI",
    "SR86",
    "SR87",
    "SR88",
    "SR89",
    "SR90",
    "SR91",
    "SR92",
    "SR93",
    "SR94",
    "SR95",
    "SR_HWTASKID",
    "SR_CIRCULARQUEUEENTRYINDEX",
    "SR_CIRCULARQUEUEENTRYADDRESSLOW",
    "SR_CIRCULARQUEUEENTRYADDRESSHIGH",
    "SR_PM0",
    "SR_PM_HI0",
    "SR_PM1",
    "SR_PM_HI1",
    "SR_PM2",
    "SR_PM_HI2",
    "SR_PM3",
    "SR_PM_HI3",
    "SR_PM4",
    "SR_PM_HI4",
    "SR_PM5",
    "SR_PM_HI5",
    "SR_PM6",
    "SR_PM_HI6",
    "SR_PM7",
    "SR_PM_HI7",
    "SR_SNAP_PM0",
    "SR_SNAP_PM_HI0",
    "SR_SNAP_PM1",
    "SR_SNAP_PM_HI1",
    "SR_SNAP_PM2",
    "SR_SNAP_PM_HI2",
    "SR_SNAP_PM3",
    "SR_SNAP_PM_HI3",
    "SR_SNAP_PM4",
    "SR_SNAP_PM_HI4",
    "SR_SNAP_PM5",
    "SR_SNAP_PM_HI5",
    "SR_SNAP_PM6",
    "SR_SNAP_PM_HI6",
    "SR_SNAP_PM7",
    "SR_SNAP_PM_HI7",
    "SR_VARIABLE_RATE",
    "__HIR0X000",
    "SR_WARPGROUP_INFO",
    "SR_WARPGROUPID",
    "SR_CgaCtaId",
    "SR_GpcLocalCgaId",
    "SR138",
    "SR_CTARegPoolSz",
    "SR140",
    "SR141",
    "SR142",
    "SR143",
    "SR144",
    "SR145",
    "SR146",
    "SR147",
    "SR148",
    "SR149",
    "SR150",
    "SR151",
    "SR152",
    "SR153",
    "SR154",
    "SR155",
    "SR156",
    "SR157",
    "SR158",
    "SR159",
    "SR160",
    "SR161",
    "SR162",
    "SR163",
    "SR164",
    "SR165",
    "SR166",
    "SR167",
    "SR168",
    "SR169",
    "SR170",
    "SR171",
    "SR172",
    "SR173",
    "SR174",
    "SR175",
    "SR176",
    "SR177",
    "SR178",
    "SR179",
    "SR180",
    "SR181",
    "SR182",
    "SR183",
    "SR184",
    "SR185",
    "SR186",
    "SR187",
    "SR188",
    "SR189",
    "SR190",
    "SR191",
    "SR192",
    "SR193",
    "SR194",
    "SR195",
    "SR196",
    "SR197",
    "SR198",
    "SR199",
    "SR200",
    "SR201",
    "SR202",
    "SR203",
    "SR204",
    "SR205",
    "SR206",
    "SR207",
    "SR208",
    "SR209",
    "SR210",
    "SR211",
    "SR212",
    "SR213",
    "SR214",
    "SR215",
    "SR216",
    "SR217",
    "SR218",
    "SR219",
    "SR220",
    "SR221",
    "SR222",
    "SR223",
    "SR224",
    "SR225",
    "SR226",
    "SR227",
    "SR228",
    "SR229",
    "SR230",
    "SR231",
    "SR232",
    "SR233",
    "SR234",
    "SR235",
    "SR236",
    "SR237",
    "SR238",
    "SR239",
    "SR240",
    "SR241",
    "SR242",
    "SR243",
    "SR244",
    "SR245",
    "SR246",
    "SR247",
    "SR248",
    "SR249",
    "SR250",
    "SR251",
    "SR252",
    "SR253",
    "SR254",
    "SRZ",
];

/// The number of a special register name.
pub fn sreg_number(name: &str) -> Option<u8> {
    SR_NAMES.iter().position(|n| *n == name).map(|i| i as u8)
}

/// `0x1f`, `-0x80`.
pub fn hex(v: i64) -> String {
    if v < 0 {
        format!("-0x{:x}", (v as i128).unsigned_abs())
    } else {
        format!("0x{v:x}")
    }
}

fn cbank_text(c: &CBank) -> String {
    let inner = match c.base {
        Some(r) if r == RZ && c.offset == 0 => "RZ".to_string(),
        Some(r) if r == RZ => hex(c.offset),
        Some(r) if c.offset == 0 => r.to_string(),
        Some(r) => format!("{r}+{}", hex(c.offset)),
        None => hex(c.offset),
    };
    format!("c[{}][{inner}]", hex(i64::from(c.bank)))
}

fn mem_text(m: &Mem) -> String {
    let mut s = String::new();
    match m.prefix {
        MemPrefix::None => {}
        MemPrefix::Desc(r) => s.push_str(&format!("desc[{r}]")),
        MemPrefix::GDesc => s.push_str("gdesc"),
    }
    s.push('[');
    for (i, t) in m.terms.iter().enumerate() {
        if i > 0 {
            s.push('+');
        }
        match t {
            MemTerm::Reg(r, sfx) => {
                s.push_str(&r.to_string());
                if let Some(x) = sfx {
                    s.push('.');
                    s.push_str(x);
                }
            }
            MemTerm::Imm(v) => s.push_str(&hex(*v)),
        }
    }
    s.push(']');
    s
}

/// The text of one operand.
pub fn operand_text(o: &Operand) -> String {
    let mut s = String::new();
    if o.neg {
        s.push('-');
    }
    if o.not {
        let pred = matches!(
            o.kind,
            OperandKind::Reg(Reg {
                file: RegFile::Pred | RegFile::UPred,
                ..
            })
        );
        s.push(if pred { '!' } else { '~' });
    }
    if o.abs {
        s.push('|');
    }
    match &o.kind {
        OperandKind::Reg(r) => s.push_str(&r.to_string()),
        OperandKind::Int(v) => s.push_str(&hex(*v)),
        OperandKind::Float(x) => s.push_str(&fmt_f64(*x)),
        OperandKind::FloatBits(f, b) => s.push_str(&fmt_float(*f, *b)),
        OperandKind::CBank(c) => s.push_str(&cbank_text(c)),
        OperandKind::Mem(m) => s.push_str(&mem_text(m)),
        OperandKind::SReg(n) => s.push_str(SR_NAMES[*n as usize]),
        OperandKind::Sym(x) => s.push_str(x),
        OperandKind::SbSet(m) => {
            let v: Vec<String> = (0..6)
                .rev()
                .filter(|i| m >> i & 1 == 1)
                .map(|i| i.to_string())
                .collect();
            s.push('{');
            s.push_str(&v.join(","));
            s.push('}');
        }
        OperandKind::RegTarget(r, t) => s.push_str(&format!("{r} {}", hex(*t))),
    }
    if o.abs {
        s.push('|');
    }
    if o.reuse {
        s.push_str(".reuse");
    }
    for x in &o.suffix {
        s.push('.');
        s.push_str(x);
    }
    s
}

/// The text of an instruction exactly as it is (no canonicalization).
pub fn instr_text(i: &Instr) -> String {
    let mut s = String::new();
    if !i.guard.is_always() {
        s.push('@');
        if i.guard.neg {
            s.push('!');
        }
        s.push_str(&i.guard.pred.to_string());
        s.push(' ');
    }
    s.push_str(&i.opcode_text());
    for (k, o) in i.operands.iter().filter(|o| !o.hidden).enumerate() {
        s.push_str(if k == 0 { " " } else { ", " });
        s.push_str(&operand_text(o));
    }
    s.trim_end().to_string()
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&operand_text(self))
    }
}

/// nvdisasm's text for an encoded word at `addr`: the [`Instr`]'s `Display` without re-encoding
/// (a decoded word is already in its canonical form), for listings of many instructions.
pub fn word_text(w: [u64; 2], addr: u64) -> Result<String, super::DecodeError> {
    super::decode_at(w, addr).map(|i| instr_text(&i))
}

/// nvdisasm's text for the instruction: what `nvdisasm -c` prints for the encoded bits
/// (aliases such as `IMAD.MOV.U32`, left-out default operands, `.reuse` from the control
/// bits). An instruction that cannot be encoded is printed as it is.
impl fmt::Display for Instr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match super::encode(self)
            .ok()
            .and_then(|w| super::decode_at(w, self.addr).ok())
        {
            Some(c) => f.write_str(&instr_text(&c)),
            None => f.write_str(&instr_text(self)),
        }
    }
}

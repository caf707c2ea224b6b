//! SASS for sm_90a: the instruction model, a table-driven encoder and decoder, a printer whose
//! text is nvdisasm's, and a parser for nvdisasm/cuobjdump text.
//!
//! # Map
//!
//! * [`model`]: registers ([`Reg`], [`RZ`], [`URZ`] = 63, [`PT`]), operands ([`Operand`]), the
//!   control word ([`Ctrl`]: stall [108:105], yield 109, write/read scoreboards [112:110] /
//!   [115:113], wait mask [121:116], reuse [125:122]) and [`Instr`].
//! * [`form`] and [`forms`]: the encoding tables. A form is fixed bits plus operand and modifier
//!   fields at (position, width); the tables are Rust data in one file per family
//!   (`forms/{int,float,conv,uniform,memory,control,warp,cluster,mma}.rs`), each form with the
//!   evidence that proved it. See the [`forms`] module documentation for the notation. The
//!   build script runs the DSL and embeds the result as static data: [`tables`].
//! * [`encode()`]/[`decode()`]: an `Instr` to two words and back; decoding is the inverse of the
//!   tables (fixed bits under the form's mask, then the fields).
//! * [`print`]: `Display for Instr` is the text `nvdisasm -c` prints for the same bits.
//! * [`parse`]: SASS text and `cuobjdump -sass` listings to `Instr`s.
//! * [`roles`]: registers read and written (with register counts), fixed/variable latency, and
//!   which scoreboards the control word may set ([`CtrlRules`]; the encoder refuses a write
//!   scoreboard on a store or branch, a read scoreboard on a branch or FENCE, … as nvdisasm does).
//! * [`latency`]: the scheduling model as data (opcode classes, read-after-write latencies,
//!   issue distances), measured from ptxas's output.
//!
//! # Building instructions
//!
//! ```
//! use ptxc::target::sm90a::*;
//! let i = Instr::new("IADD3", &[], vec![r(1).into(), r(2).into(), imm(-1), RZ.into()]);
//! let w = encode(&i).unwrap();
//! assert_eq!(i.to_string(), "IADD3 R1, R2, -0x1, RZ");
//! assert_eq!(decode(w).unwrap().to_string(), "IADD3 R1, R2, -0x1, RZ");
//!
//! // Constructors, guard, address and control bits:
//! let add = ops::iadd3(r(4), r(2), imm(-1), RZ).guard(Guard::not(p(0)));
//! assert_eq!(add.to_string(), "@!P0 IADD3 R4, R2, -0x1, RZ");
//! let ld = ops::ldg(Width::B128, r(8), ur(4), r(2), 0x10).at(0x40).ctrl(Ctrl {
//!     stall: 1, yield_: true, wbar: 0, rbar: 7, wait: 0, reuse: 0,
//! });
//! let w = encode(&ld).unwrap();
//! assert_eq!(ld.to_string(), "LDG.E.128 R8, desc[UR4][R2.64+0x10]");
//! assert_eq!(Ctrl::from_hi(w[1]).wbar, 0);
//!
//! // Roles and latency for the scoreboard pass: R8 x4 written, UR4 x2 and R2 x2 read.
//! let acc = ld.accesses().unwrap();
//! assert!(acc.iter().any(|a| a.reg == r(8) && a.count == 4 && a.write));
//! assert!(acc.iter().any(|a| a.reg == ur(4) && a.count == 2 && !a.write));
//! assert_eq!(ld.latency().unwrap(), Latency::Variable);
//! let st = ops::stg(Width::B32, ur(4), r(2), 0, r(5));
//! assert!(!st.ctrl_rules().unwrap().write_scoreboard); // a store takes a read scoreboard only
//!
//! // A hazard checker reading a cubin works from the words:
//! let (lat, acc2) = word_accesses(w).unwrap();
//! assert_eq!((lat, acc2), (Latency::Variable, acc));
//! assert_eq!(decode_at(w, 0x40).unwrap().to_string(), ld.to_string());
//!
//! // Text in, words out:
//! let mov = parse_instr("IMAD.MOV.U32 R1, RZ, RZ, 0x3f800000").unwrap();
//! assert_eq!(encode(&mov).unwrap()[0], 0x3f800000_ff017424);
//! ```

pub mod bits;
pub mod decode;
pub mod encode;
pub mod float;
pub mod form;
pub mod forms;
pub mod latency;
pub mod model;
pub mod ops;
pub mod parse;
pub mod print;
pub mod roles;
pub mod sample;
pub mod tables;

pub use decode::{DecodeError, decode, decode_at, decode_with_form};
pub use encode::{EncodeError, Encoded, encode, encode_with_form};
pub use form::{Form, Latency};
pub use model::*;
pub use ops::Width;
pub use parse::{ListedInstr, ParseError, listed_instr, parse_instr, parse_listing};
pub use roles::{Access, CtrlRules, word_accesses};

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
//!   evidence that proved it. See the [`forms`] module documentation for the notation.
//! * [`encode()`]/[`decode()`]: an `Instr` to two words and back; decoding is the inverse of the
//!   tables (fixed bits under the form's mask, then the fields).
//! * [`print`]: `Display for Instr` is the text `nvdisasm -c` prints for the same bits.
//! * [`parse`]: SASS text and `cuobjdump -sass` listings to `Instr`s.
//! * [`roles`]: registers read and written (with register counts) and fixed/variable latency.
//!
//! # Building instructions
//!
//! ```
//! use ptxc::target::sm90a::*;
//! let i = Instr::new("IADD3", &[], vec![r(1).into(), r(2).into(), imm(-1), RZ.into()]);
//! let w = encode(&i).unwrap();
//! assert_eq!(i.to_string(), "IADD3 R1, R2, -0x1, RZ");
//! assert_eq!(decode(w).unwrap().to_string(), "IADD3 R1, R2, -0x1, RZ");
//! let ld = ops::ldg(Width::B64, r(4), ur(4), r(2), 0x10);
//! assert_eq!(ld.to_string(), "LDG.E.64 R4, desc[UR4][R2.64+0x10]");
//! assert_eq!(ld.latency().unwrap(), Latency::Variable);
//! ```

pub mod bits;
pub mod decode;
pub mod encode;
pub mod float;
pub mod form;
pub mod forms;
pub mod model;
pub mod ops;
pub mod parse;
pub mod print;
pub mod roles;
pub mod sample;

pub use decode::{DecodeError, decode, decode_at, decode_with_form};
pub use encode::{EncodeError, encode, encode_with_form};
pub use form::{Form, Latency};
pub use model::*;
pub use ops::Width;
pub use parse::{ListedInstr, ParseError, listed_instr, parse_instr, parse_listing};
pub use roles::{Access, word_accesses};

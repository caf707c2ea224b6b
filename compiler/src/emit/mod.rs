//! Output containers: the cubin (ELF) writer and reader.

pub mod sass;
pub mod scoreboard;

//! Test support for the SASS encoder, printer and assembler.

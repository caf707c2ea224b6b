//! Test support for the cubin writer and reader.

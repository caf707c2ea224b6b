//! Output containers: the cubin (ELF) writer and reader.

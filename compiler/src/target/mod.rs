//! Target machine models. ptxc has one target: Hopper, sm_90a.

pub mod sm90a;

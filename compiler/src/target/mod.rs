//! Target machine models. ptxc has one target: Hopper, sm_90a.

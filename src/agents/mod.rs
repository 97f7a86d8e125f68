//! The coding agents clawmux drives, one module each: how it starts one
//! and what its screen says beyond what the detection profiles read.

pub mod claude;

//! # pathpool-cc
//!
//! Every congestion-control algorithm of the papers pathpool reproduces (Pokhrel & Williamson
//! 2020; Peng, Walid, Hwang & Low 2016; Khalili et al. 2013) and of the standards they build on,
//! as a pure state machine behind one small trait, [`Controller`]. No I/O, no clock, no
//! simulator types: a transport (the pathpool simulator, a test, or the kernel port's test
//! vectors) feeds events in and reads windows out.
//!
//! Pick an algorithm by name with [`build`]; list them with [`catalog`]. The concrete types are
//! public in [`algos`] for inspection (LIA's alpha, OLIA's sets, RSF's estimates). The crate
//! README gives the event order a transport must follow and the table of algorithms.

pub mod algos;
pub mod controller;
pub mod registry;

pub use controller::{
    slow_start, total_cwnd, Ack, Controller, Counting, Nanos, Subflow, WindowRules, MIN_CWND,
    MIN_SSTHRESH, NANOS_PER_SEC,
};
pub use registry::{
    build, build_with_counting, catalog, AlgorithmInfo, CcError, ParamInfo, ParamValue, Params,
};

//! # pathpool-sim
//!
//! A deterministic packet-level discrete-event simulator for TCP and MPTCP.

pub mod output;

pub use output::{FlowRecord, LinkRecord, RunOutput, RunStats, Series, SubflowRecord};

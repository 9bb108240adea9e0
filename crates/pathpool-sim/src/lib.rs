//! # pathpool-sim
//!
//! A deterministic packet-level discrete-event simulator for TCP and MPTCP.
//!
//! Time is integer nanoseconds; every random draw comes from a per-component stream seeded from
//! the run seed and the component's name, so one (scenario, seed) always gives the same
//! [`RunOutput`] (apart from `stats.wall_s`). Packets travel routes of links
//! ([`link`]); each flow is a connection of one (TCP) or several (MPTCP) subflows ([`tcp`],
//! [`mptcp`]) driven by a [`pathpool_cc::Controller`]. The scenario format is described in
//! `SCENARIOS.md`.

pub mod config;
pub mod event;
pub mod link;
pub mod metrics;
pub mod mptcp;
pub mod output;
pub mod packet;
pub mod rng;
mod sim;
pub mod tcp;
pub mod time;
pub mod units;

pub use config::{ConfigError, Scenario};
pub use metrics::jain_index;
pub use output::{FlowRecord, LinkRecord, RunOutput, RunStats, Series, SubflowRecord};
pub use sim::SimError;

/// Run one seed of a scenario.
pub fn run(scenario: &Scenario, seed: u64) -> Result<RunOutput, SimError> {
    run_with_progress(scenario, seed, &mut |_| {})
}

/// Run one seed of a scenario, reporting progress (a fraction in 0..=1) about 200 times.
pub fn run_with_progress(scenario: &Scenario, seed: u64, progress: &mut dyn FnMut(f64)) -> Result<RunOutput, SimError> {
    let t0 = std::time::Instant::now();
    let mut world = sim::World::build(scenario, seed)?;
    world.run(progress);
    Ok(world.finish(t0.elapsed().as_secs_f64()))
}

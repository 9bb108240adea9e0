//! # pathpool-sim
//!
//! A deterministic packet-level discrete-event simulator for TCP and MPTCP.
//!
//! Time is integer nanoseconds; every random draw comes from a per-component stream seeded from
//! the run seed and the component's name, so one (scenario, seed) always gives the same
//! [`RunOutput`] (apart from `stats.wall_s`). Packets travel routes of links, as in htsim; each
//! flow is a connection of one (TCP) or several (MPTCP) subflows that owns its state machine,
//! as smoltcp's sockets do, driven by a [`pathpool_cc::Controller`]. The scenario format is
//! described in `SCENARIOS.md`.
//!
//! ## Modules
//!
//! Bottom up; each uses only the ones before it:
//!
//! * [`time`], [`units`], [`rng`], [`metrics`], [`output`], [`SimError`]: nanoseconds, the
//!   scenario's units, per-component random streams, Jain's index, the result records, the
//!   error of a run.
//! * [`net`]: the network. [`net::event`] (the event queue: per-link lanes, a heap, a
//!   near-future calendar), [`net::packet`] (the packet slab), [`net::link`] (a queue in front
//!   of a constant-rate transmitter, random loss, reordering), and the `Net` that moves a packet
//!   hop by hop along its route; `Net::send_data` is the one way data gets onto a route, after
//!   the host's send delay.
//! * [`config`]: a scenario file to a validated [`Scenario`], one section at a time.
//! * [`conn`]: a TCP or MPTCP connection: each subflow's scoreboard, sender and receiver,
//!   Linux's RACK-TLP and PRR, the data level, the scheduler; over them its send path, its
//!   packet input and its timers.
//! * `rate`: the paced multipath flow of Pluntke & Rio (2011) (`kind = "rate"`): sender,
//!   receiver, reports, records.
//! * `world`: builds the network and the endpoints from a scenario, runs the event loop (each
//!   event to the network or to the endpoint it belongs to), samples, and turns the final state
//!   into a [`RunOutput`].
//! * here: [`run`] and [`Simulation`], a run stepped from outside (which drives rate flows).
//!
//! A packet's way down the layers: the world pops its arrival, `Net::hop` queues it at the next
//! link or reports it at its endpoint, the world hands it to its connection ([`conn::input`]),
//! which updates the subflow ([`conn::sender`], [`conn::recovery`]) and the controller and calls
//! its send path ([`conn::send`]), which puts the next segments on the network.

pub mod config;
pub mod conn;
mod error;
pub(crate) mod mem;
pub mod metrics;
pub mod net;
pub mod output;
mod rate;
pub mod rng;
pub mod time;
pub mod units;
mod world;

/// The link model's parameter types, which scenarios set (`link::Buffer`, ...).
pub use net::link;

pub use config::{ConfigError, Scenario};
pub use error::SimError;
pub use metrics::jain_index;
pub use output::{FlowRecord, LinkRecord, RunOutput, RunStats, Series, SubflowRecord};
pub use rate::{PathCounters, RateFeedback, RateInfo};
use world::Endpoint;

/// Run one seed of a scenario.
pub fn run(scenario: &Scenario, seed: u64) -> Result<RunOutput, SimError> {
    run_with_progress(scenario, seed, &mut |_| {})
}

/// Run one seed of a scenario, reporting progress (a fraction in 0..=1) about 200 times.
pub fn run_with_progress(
    scenario: &Scenario,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<RunOutput, SimError> {
    let mut sim = Simulation::new(scenario, seed)?;
    let end = sim.end();
    sim.run_until_with_progress(end, progress);
    Ok(sim.finish())
}

/// One seed of a scenario that can be advanced step by step: `run_until(a); run_until(b)` gives
/// exactly the events, state and output of a single `run_until(b)`, and `finish` gives the same
/// [`RunOutput`] as [`run`] (apart from `stats.wall_s`, the wall time spent building and
/// running it).
pub struct Simulation {
    world: world::World,
    wall: std::time::Duration,
}

impl Simulation {
    /// Build the world of `scenario` for `seed` (simulated time 0, nothing run yet).
    pub fn new(scenario: &Scenario, seed: u64) -> Result<Self, SimError> {
        let t0 = std::time::Instant::now();
        let world = world::World::build(scenario, seed)?;
        Ok(Simulation {
            world,
            wall: t0.elapsed(),
        })
    }

    /// Current simulated time.
    pub fn now(&self) -> time::Nanos {
        self.world.now()
    }

    /// Simulated end of the run (the scenario's duration).
    pub fn end(&self) -> time::Nanos {
        self.world.end()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.world.events()
    }

    /// TCP/MPTCP data packets sent so far (transmissions and retransmissions).
    pub fn data_packets(&self) -> u64 {
        self.world.data_packets()
    }

    /// Process every event at or before `t` (at most the end of the run); the clock is then
    /// `min(t, end)`. A `t` in the past does nothing.
    pub fn run_until(&mut self, t: time::Nanos) {
        self.run_until_with_progress(t, &mut |_| {});
    }

    /// [`Simulation::run_until`], reporting progress through the whole run (a fraction in
    /// 0..=1) about 200 times per run.
    pub fn run_until_with_progress(&mut self, t: time::Nanos, progress: &mut dyn FnMut(f64)) {
        let t0 = std::time::Instant::now();
        self.world.run_until(t, progress);
        self.wall += t0.elapsed();
    }

    /// What the run's memory is made of so far: `(structure, bytes)`, each at its high-water
    /// mark (`runscn --memory`). A diagnostic: the numbers depend on this version's
    /// data layout, not on the scenario's results.
    pub fn memory(&self) -> Vec<(&'static str, usize)> {
        self.world.memory()
    }

    /// Run to the end and turn the final state into the run's output.
    pub fn finish(mut self) -> RunOutput {
        let end = self.end();
        self.run_until(end);
        self.world.finish(self.wall.as_secs_f64())
    }

    // --- rate flows (`kind = "rate"`), driven from outside -----------------------------------

    /// The receiver feedback of rate flow `flow` that reached its sender since the previous
    /// call (per-path counters, as `pathpool.ratecontrol.stream.Feedback`), plus the sender's
    /// own counts over the same calls.
    pub fn rate_feedback(&mut self, flow: &str) -> Result<RateFeedback, SimError> {
        let e = self.world.rate_index(flow)?;
        Ok(self.world.rate(e).take_feedback())
    }

    /// Set rate flow `flow`'s per-path rates (packets/s, each finite and >= 0) from now on, and
    /// the source packets per FEC block (1..=block length) from the next block on.
    pub fn set_rates(
        &mut self,
        flow: &str,
        rates: &[f64],
        source_per_block: u32,
    ) -> Result<(), SimError> {
        self.world.set_rates(flow, rates, source_per_block)
    }

    /// Static facts about rate flow `flow`.
    pub fn rate_info(&self, flow: &str) -> Result<RateInfo, SimError> {
        let e = self.world.rate_index(flow)?;
        let Endpoint::Rate(fl) = &self.world.endpoints[e as usize] else {
            unreachable!("rate_index names a rate flow")
        };
        Ok(fl.info())
    }

    /// Names of the scenario's rate flows, in scenario order.
    pub fn rate_flows(&self) -> Vec<String> {
        self.world
            .rate_flows()
            .map(|(_, f)| f.name.clone())
            .collect()
    }
}

//! What a run of a scenario will cost, estimated from the scenario alone, before it starts.
//!
//! The estimates are upper bounds of the usual shape, not predictions: events assume every
//! link busy for the whole run with the smallest packets any flow sends; memory counts the
//! time-series rows (the one thing that grows with the run), per-flow state and full buffers.
//! Their purpose is to refuse, in a second, a scenario that would run for days or exhaust
//! memory (1e6 flows, a 1 ns metrics interval), with a message that says how to override.

use super::check::DEFAULT_MSS;
use super::{AckRoute, Buffer, ConfigError, FlowKind, Scenario};

/// Header bytes added to the payload on the wire (as the simulator's packets).
const HEADER: f64 = 52.0;
/// Events per data packet per link crossed (arrival, end of transmission) and per packet
/// delivered (receiver, ACK generation, ACK arrival): generous for TCP with SACK.
const EVENTS_PER_LINK_PACKET: f64 = 2.0;
const EVENTS_PER_DELIVERY: f64 = 3.0;
/// Bytes per time-series row, Rust columns and their Python copies together: measured 170 B
/// (peak RSS of `pathpool.run` in one process, 1.6e5 rows, 2-core VM).
const SERIES_ROW_BYTES: f64 = 176.0;
/// Bytes per flow and per subflow, simulator state and result rows: measured 14.6 KB per
/// two-subflow MPTCP flow (20000 flows, peak RSS over an empty run).
const FLOW_BYTES: f64 = 8192.0;
const SUBFLOW_BYTES: f64 = 4096.0;
/// Bytes per queued packet.
const PACKET_BYTES: f64 = 96.0;

/// Refusal thresholds for [`Scenario::check_limits`]; `SCENARIOS.md` ("Limits") documents them
/// and how to raise them (`allow_large` in Python).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most simulator events per seed. The simulator did 1.2-5.1 M events/s on the 2-core
    /// AMD EPYC VM (bench, shared_bottleneck, friendliness_shared_bottleneck, one seed each),
    /// so 10^10 estimated events (1.7-5x the actual count there) is half an hour to hours.
    pub max_events: f64,
    /// Most memory per seed, bytes.
    pub max_memory_bytes: f64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_events: 1e10,
            max_memory_bytes: 4.0 * (1u64 << 30) as f64,
        }
    }
}

/// Estimated cost of one seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub events: f64,
    pub memory_bytes: f64,
    pub series_rows: f64,
}

impl Scenario {
    /// Estimated events and memory of one seed (see the module docs for the model).
    pub fn estimate(&self) -> Estimate {
        let secs = self.duration as f64 / 1e9;
        let min_mss = self
            .flows
            .iter()
            .map(|f| f.mss)
            .min()
            .unwrap_or(DEFAULT_MSS) as f64;
        let wire_bits = 8.0 * (min_mss + HEADER);
        // Window flows: every link saturated with the smallest packets, all run long.
        let link_pps: Vec<f64> = self
            .links
            .iter()
            .map(|l| l.rate_bps as f64 / wire_bits)
            .collect();
        let mut events = 0.0;
        for p in &self.paths {
            let hops = p.links.len() as f64
                + match &p.ack {
                    AckRoute::Links(v) => v.len() as f64,
                    AckRoute::Delay(_) => 0.0,
                };
            let pps = p
                .links
                .iter()
                .map(|&l| link_pps[l])
                .fold(f64::INFINITY, f64::min);
            if pps.is_finite() {
                events += secs * pps * (hops * EVENTS_PER_LINK_PACKET + EVENTS_PER_DELIVERY);
            }
        }
        // Paced flows send at their given rates, whatever the links can carry.
        for f in self.flows.iter().filter(|f| f.kind == FlowKind::Rate) {
            let rates: f64 = f.rate.as_ref().map_or(0.0, |r| r.rates.iter().sum());
            events += secs * rates * (2.0 * EVENTS_PER_LINK_PACKET + EVENTS_PER_DELIVERY);
        }
        let subflows: f64 = self.flows.iter().map(|f| f.paths.len() as f64).sum();
        let flows = self.flows.len() as f64;
        let series_rows = if self.sample_interval == 0 {
            0.0
        } else {
            let samples = self.duration as f64 / self.sample_interval as f64;
            // Per flow 1 metric, per subflow up to 4 (cwnd, srtt, in flight, goodput), per link 1.
            events += samples;
            samples * (flows + 4.0 * subflows + self.links.len() as f64)
        };
        let queued: f64 = self
            .links
            .iter()
            .map(|l| match l.buffer {
                Buffer::Packets(n) => n as f64,
                Buffer::Bytes(b) => b as f64 / (min_mss + HEADER),
            })
            .sum();
        let memory_bytes = series_rows * SERIES_ROW_BYTES
            + flows * FLOW_BYTES
            + subflows * SUBFLOW_BYTES
            + queued * PACKET_BYTES;
        Estimate {
            events,
            memory_bytes,
            series_rows,
        }
    }

    /// Refuse a scenario whose [`Scenario::estimate`] exceeds `limits`.
    pub fn check_limits(&self, limits: &Limits) -> Result<(), ConfigError> {
        let e = self.estimate();
        let over = if e.events > limits.max_events {
            Some((
                "",
                format!(
                    "a run would take about {:.1e} simulator events per seed, more than the limit of {:.1e}",
                    e.events, limits.max_events
                ),
            ))
        } else if e.memory_bytes > limits.max_memory_bytes {
            let field = if e.series_rows * SERIES_ROW_BYTES > e.memory_bytes / 2.0 {
                "metrics.interval"
            } else {
                "flows"
            };
            Some((
                field,
                format!(
                    "a run would need about {:.1} GB of memory per seed ({:.1e} time-series rows, {} flows), more than the limit of {:.1} GB",
                    e.memory_bytes / 1e9,
                    e.series_rows,
                    self.flows.len(),
                    limits.max_memory_bytes / 1e9
                ),
            ))
        } else {
            None
        };
        match over {
            None => Ok(()),
            Some((field, message)) => Err(ConfigError {
                origin: self.origin.clone(),
                line: None,
                column: None,
                field: field.to_string(),
                message,
                allowed: Some(
                    "a shorter duration, fewer flows or a longer metrics.interval; or allow it: `pathpool run --allow-large`, pathpool.load_scenario(..., allow_large=True)"
                        .into(),
                ),
            }),
        }
    }
}

//! What a rate flow's driver sees and sets: the receiver's reports as they reach the sender,
//! the flow's static facts, and new rates.

use super::RateFlow;
use crate::error::SimError;
use crate::net::event::EventQueue;
use crate::time::{secs, Nanos};

/// Per-path counters of the receiver, as in `pathpool.ratecontrol.stream.Feedback`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathCounters {
    /// Packets sent, as the receiver infers them: `arrived + lost` up to the highest sequence
    /// number seen.
    pub sent: u64,
    pub lost: u64,
    /// Loss events as TFRC counts them (RFC 5348 section 5.2): a lost packet starts a new event
    /// only if its send time is more than one RTT after the start of the current event.
    pub loss_events: u64,
    pub arrived: u64,
    /// Arrived with one-way delay above the deadline.
    pub late: u64,
    /// Sum and sum of squares of the RTT samples (s, s^2).
    pub rtt_sum: f64,
    pub rtt_sq_sum: f64,
    /// Sum and sum of squares of the one-way delays (s, s^2).
    pub delay_sum: f64,
    pub delay_sq_sum: f64,
}

impl PathCounters {
    pub(super) fn minus(&self, o: &PathCounters) -> PathCounters {
        PathCounters {
            sent: self.sent - o.sent,
            lost: self.lost - o.lost,
            loss_events: self.loss_events - o.loss_events,
            arrived: self.arrived - o.arrived,
            late: self.late - o.late,
            rtt_sum: self.rtt_sum - o.rtt_sum,
            rtt_sq_sum: self.rtt_sq_sum - o.rtt_sq_sum,
            delay_sum: self.delay_sum - o.delay_sum,
            delay_sq_sum: self.delay_sq_sum - o.delay_sq_sum,
        }
    }
}

/// A receiver report: cumulative counters at the time it was made.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Report {
    pub(super) id: u64,
    pub(super) made_at: Nanos,
    pub(super) paths: Vec<PathCounters>,
    /// Source packets of settled blocks that count as goodput.
    pub(super) decoded_source: u64,
}

/// What [`crate::Simulation::rate_feedback`] returns: everything since the previous call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RateFeedback {
    /// The receiver's per-path counters carried by the reports that arrived since the last call.
    pub paths: Vec<PathCounters>,
    /// In-time decoded source packets (goodput, packets) in those reports.
    pub decoded_source: u64,
    /// Reports that arrived at the sender since the last call (0: nothing new).
    pub reports: u64,
    /// When the newest arrived report was made (s); NaN if none has arrived yet.
    pub report_made_s: f64,
    /// The sender's own count of packets sent per path since the last call.
    pub sender_sent: Vec<u64>,
    /// Source packets the sender put in blocks since the last call.
    pub source_sent: u64,
}

/// Static facts about a rate flow, for a driver.
#[derive(Clone, Debug, PartialEq)]
pub struct RateInfo {
    pub paths: Vec<String>,
    pub start_s: f64,
    pub feedback_interval_s: f64,
    pub deadline_s: f64,
    pub block_length: u32,
    pub source_per_block: u32,
    pub rates: Vec<f64>,
    pub controller: String,
    /// Base (propagation + serialisation) delay of the route reports take back (s).
    pub report_delay_s: f64,
    pub payload_bytes: u32,
}

impl RateFlow {
    /// The receiver feedback that reached the sender since the previous call, plus the
    /// sender's own counts over the same calls ([`crate::Simulation::rate_feedback`]).
    pub(crate) fn take_feedback(&mut self) -> RateFeedback {
        let fl = self;
        let paths = fl
            .delivered
            .paths
            .iter()
            .zip(&fl.taken.paths)
            .map(|(a, b)| a.minus(b))
            .collect();
        let sender_sent: Vec<u64> = fl
            .tx
            .iter()
            .zip(&fl.taken_sender_sent)
            .map(|(t, &s)| t.sent - s)
            .collect();
        let fb = RateFeedback {
            paths,
            decoded_source: fl.delivered.decoded_source - fl.taken.decoded_source,
            reports: fl.delivered_count - fl.taken_count,
            report_made_s: if fl.delivered_count > 0 {
                secs(fl.delivered.made_at)
            } else {
                f64::NAN
            },
            sender_sent,
            source_sent: fl.source_sent - fl.taken_source_sent,
        };
        fl.taken = fl.delivered.clone();
        fl.taken_count = fl.delivered_count;
        for (s, t) in fl.taken_sender_sent.iter_mut().zip(&fl.tx) {
            *s = t.sent;
        }
        fl.taken_source_sent = fl.source_sent;
        fb
    }

    /// Set the per-path rates from now on (`now`; the pacing events go to `q`, for endpoint
    /// `e`) and the source packets per block from the next block on
    /// ([`crate::Simulation::set_rates`]; `flow` names the flow in errors).
    pub(crate) fn set_rates(
        &mut self,
        flow: &str,
        q: &mut EventQueue,
        e: u32,
        now: Nanos,
        rates: &[f64],
        source_per_block: u32,
    ) -> Result<(), SimError> {
        let fl = self;
        if rates.len() != fl.tx.len() {
            return Err(SimError {
                message: format!(
                    "rate flow {flow:?} has {} paths; got {} rates",
                    fl.tx.len(),
                    rates.len()
                ),
            });
        }
        if let Some(x) = rates
            .iter()
            .find(|x| !(x.is_finite() && (0.0..=1e9).contains(*x)))
        {
            return Err(SimError {
                message: format!(
                    "rate flow {flow:?}: rate {x} is not allowed (packets/s, finite, in [0, 1e9])"
                ),
            });
        }
        if !(1..=fl.n).contains(&source_per_block) {
            return Err(SimError {
                message: format!(
                    "rate flow {flow:?}: source_per_block = {source_per_block}; allowed: 1..={}",
                    fl.n
                ),
            });
        }
        fl.driven = true;
        fl.k_next = source_per_block;
        for (r, &x) in rates.iter().enumerate() {
            if fl.tx[r].rate == x {
                continue;
            }
            fl.tx[r].rate = x;
            if fl.started {
                fl.schedule(q, e, r, now);
            }
        }
        Ok(())
    }

    /// Static facts about the flow, for a driver.
    pub(crate) fn info(&self) -> RateInfo {
        let fl = self;
        RateInfo {
            paths: fl.path_names.clone(),
            start_s: secs(fl.start),
            feedback_interval_s: secs(fl.interval),
            deadline_s: secs(fl.deadline),
            block_length: fl.n,
            source_per_block: fl.k_next,
            rates: fl.tx.iter().map(|t| t.rate).collect(),
            controller: fl.controller.clone(),
            report_delay_s: secs(fl.report_delay),
            payload_bytes: fl.payload,
        }
    }
}

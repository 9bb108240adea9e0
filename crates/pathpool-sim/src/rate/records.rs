//! What a rate flow reports: its time-series samples and its rows of the run's output.

use super::RateFlow;
use crate::output::{FlowRecord, RunOutput, Series, SubflowRecord};
use crate::time::{secs, Nanos};

impl RateFlow {
    /// One time-series sample of the flow if started (`dt` = the sampling interval, s):
    /// flow `goodput_bps` = source bytes decoded since the previous sample (blocks are decided
    /// once their deadline has passed, so this lags the sending by up to the deadline); per path
    /// (`"flow/r"`) `rate_pps` = the sending rate now in force and `throughput_bps` = bytes put on
    /// the wire since the previous sample.
    pub(crate) fn sample(&mut self, now: Nanos, t: f64, dt: f64, series: &mut Series, seed: u64) {
        let fl = self;
        if fl.started {
            // As at a report: blocks whose every packet would now be late are decided.
            fl.rx.settle(now);
            let delivered = fl.rx.decoded_source * u64::from(fl.payload);
            series.push(
                seed,
                t,
                "flow",
                &fl.name,
                "goodput_bps",
                (delivered - fl.sampled_delivered) as f64 * 8.0 / dt,
            );
            fl.sampled_delivered = delivered;
            for (r, tx) in fl.tx.iter_mut().enumerate() {
                let id = format!("{}/{}", fl.name, r);
                series.push(seed, t, "subflow", &id, "rate_pps", tx.rate);
                let bytes = tx.wire_bytes - tx.sampled_wire_bytes;
                tx.sampled_wire_bytes = tx.wire_bytes;
                series.push(
                    seed,
                    t,
                    "subflow",
                    &id,
                    "throughput_bps",
                    bytes as f64 * 8.0 / dt,
                );
            }
        }
    }

    /// Append the flow's rows to the output.
    pub(crate) fn records(&mut self, out: &mut RunOutput, seed: u64, end: Nanos) {
        {
            let fl = self;
            fl.rx.settle_all();
            let start = fl.start.min(end);
            let end_t = fl.stop.map_or(end, |s| s.min(end).max(start));
            let span = secs(end_t.saturating_sub(start));
            let per_s = |b: u64| {
                if span > 0.0 {
                    b as f64 * 8.0 / span
                } else {
                    0.0
                }
            };
            let sent: u64 = fl.tx.iter().map(|t| t.sent).sum();
            let received: u64 = fl.rx.counters.iter().map(|c| c.arrived).sum();
            let delivered = fl.rx.decoded_source * u64::from(fl.payload);
            out.flows.push(FlowRecord {
                seed,
                flow: fl.name.clone(),
                kind: "rate".to_string(),
                algorithm: if fl.driven {
                    fl.controller.clone()
                } else {
                    "fixed".to_string()
                },
                n_subflows: fl.tx.len() as u32,
                start_s: secs(start),
                end_s: secs(end_t),
                delivered_bytes: delivered,
                goodput_bps: per_s(delivered),
                throughput_bps: per_s(fl.tx.iter().map(|t| t.wire_bytes).sum()),
                sent_packets: sent,
                retransmitted_packets: 0,
                lost_packets: fl.rx.counters.iter().map(|c| c.lost).sum(),
                rto_count: 0,
                completion_time_s: f64::NAN,
                received_packets: received,
                dropped_packets: fl.dropped_packets,
                // Every data packet sent has arrived, was dropped, or is still travelling.
                in_flight_packets: sent - received - fl.dropped_packets,
                ack_packets: fl.reports_sent,
                duplicate_segments: 0,
                reinjected_segments: 0,
                integrity_errors: fl.rx.integrity_errors,
            });
            for (r, t) in fl.tx.iter().enumerate() {
                let c = &fl.rx.counters[r];
                out.subflows.push(SubflowRecord {
                    seed,
                    flow: fl.name.clone(),
                    subflow: r as u32,
                    path: fl.path_names[r].clone(),
                    acked_bytes: fl.rx.in_time_bytes[r],
                    goodput_bps: per_s(fl.rx.in_time_bytes[r]),
                    throughput_bps: per_s(t.wire_bytes),
                    sent_packets: t.sent,
                    retransmitted_packets: 0,
                    lost_packets: c.lost,
                    loss_events: c.loss_events,
                    rto_count: 0,
                    mean_rtt_s: if c.arrived > 0 {
                        c.rtt_sum / c.arrived as f64
                    } else {
                        f64::NAN
                    },
                    min_rtt_s: if fl.rx.min_rtt[r] > 0 {
                        secs(fl.rx.min_rtt[r])
                    } else {
                        f64::NAN
                    },
                    mean_cwnd: f64::NAN,
                });
            }
        }
    }
}

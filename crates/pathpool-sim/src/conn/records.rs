//! What a connection reports: its time-series samples, its rows of the run's output, and the
//! memory it holds.

use pathpool_cc::Subflow;

use super::receiver::Receiver;
use super::recovery::LinuxState;
use super::scheduler::wmem_queued;
use super::sender::Sender;
use super::Conn;
use crate::config::App;
use crate::output::{FlowRecord, RunOutput, Series, SubflowRecord};
use crate::time::{secs, Nanos};

impl Conn {
    /// One time-series sample of the connection if started (`t` = now, `dt` = the sampling
    /// interval, s): its goodput, and each subflow's window, smoothed RTT, packets in flight,
    /// payload bytes held and goodput.
    pub(crate) fn sample(&mut self, t: f64, dt: f64, series: &mut Series, seed: u64) {
        let conn = self;
        if !conn.started {
            return;
        }
        let d = conn.data.delivered_bytes - conn.sampled_delivered;
        conn.sampled_delivered = conn.data.delivered_bytes;
        series.push(
            seed,
            t,
            "flow",
            &conn.name,
            "goodput_bps",
            d as f64 * 8.0 / dt,
        );
        for (i, v) in conn.views.iter().enumerate() {
            let id = format!("{}/{}", conn.name, i);
            series.push(seed, t, "subflow", &id, "cwnd", v.cwnd);
            series.push(seed, t, "subflow", &id, "srtt_s", secs(v.srtt));
            series.push(seed, t, "subflow", &id, "in_flight", f64::from(v.in_flight));
            // Payload bytes the subflow holds: sent and not acknowledged, plus (Linux's
            // scheduler) those handed to it and not yet sent. The test bed reports the same
            // from tcp_info (unacked full segments + notsent_bytes).
            let queued = conn.sq.as_ref().map_or(0, |q| q.subs[i].queue.len());
            let held = wmem_queued(&conn.snd[i], queued, conn.mss);
            series.push(seed, t, "subflow", &id, "send_queue_bytes", held as f64);
            // Goodput by the subflow that carried the data, as the receiver delivered it in
            // order: the subflows' rows of an interval sum to the flow's row.
            let got = conn.data.delivered_by_subflow[i];
            let d = got - conn.sampled_by_subflow[i];
            conn.sampled_by_subflow[i] = got;
            series.push(seed, t, "subflow", &id, "goodput_bps", d as f64 * 8.0 / dt);
        }
    }

    /// Append the connection's rows to the output: its flow row and one row per subflow
    /// (`in_flight`: its data packets still travelling at the end).
    pub(crate) fn records(&mut self, out: &mut RunOutput, seed: u64, end: Nanos, in_flight: u64) {
        let conn = self;
        let start = conn.start.min(end);
        let end_t = match (conn.app, conn.completion, conn.stop) {
            (App::File(_), Some(t), _) => t,
            (_, _, Some(s)) => s.min(end).max(start),
            _ => end,
        };
        let span = secs(end_t.saturating_sub(start));
        let per_s = |b: u64| {
            if span > 0.0 {
                b as f64 * 8.0 / span
            } else {
                0.0
            }
        };
        for i in 0..conn.snd.len() {
            if conn.started && conn.snd[i].cwnd_since < end_t {
                Conn::account_cwnd(conn, i, end_t);
            }
        }
        let sent: u64 = conn.snd.iter().map(|s| s.sent).sum();
        // Rates count the bytes of the flow's active interval [start, end_t]: for a flow
        // with `stop`, those delivered, acknowledged and sent by then.
        // (A download that completed is measured to its completion, stop or not.)
        let completed = matches!((conn.app, conn.completion), (App::File(_), Some(_)));
        let (delivered, subs) = match conn.at_stop.as_ref().filter(|_| !completed) {
            Some((d, subs)) => (*d, subs.clone()),
            None => (
                conn.data.delivered_bytes,
                conn.snd
                    .iter()
                    .map(|s| (s.acked_bytes, s.sent_wire_bytes))
                    .collect(),
            ),
        };
        let wire: u64 = subs.iter().map(|s| s.1).sum();
        out.flows.push(FlowRecord {
            seed,
            flow: conn.name.clone(),
            kind: conn.kind.as_str().to_string(),
            algorithm: conn.algorithm.clone(),
            n_subflows: conn.snd.len() as u32,
            start_s: secs(start),
            end_s: secs(end_t),
            delivered_bytes: delivered,
            goodput_bps: per_s(delivered),
            throughput_bps: per_s(wire),
            sent_packets: sent,
            retransmitted_packets: conn.snd.iter().map(|s| s.retransmitted).sum(),
            lost_packets: conn.views.iter().map(|v| v.lost).sum(),
            rto_count: conn.snd.iter().map(|s| s.rto_count).sum(),
            completion_time_s: conn.completion.map_or(f64::NAN, |t| secs(t - conn.start)),
            received_packets: conn.received_packets,
            dropped_packets: conn.dropped_packets,
            in_flight_packets: in_flight,
            ack_packets: conn.ack_packets,
            duplicate_segments: conn.data.duplicates,
            reinjected_segments: conn.reinjected,
            integrity_errors: conn.data.integrity_errors + conn.data.window_violations,
        });
        for (i, s) in conn.snd.iter().enumerate() {
            let v = &conn.views[i];
            out.subflows.push(SubflowRecord {
                seed,
                flow: conn.name.clone(),
                subflow: i as u32,
                path: conn.path_names[i].clone(),
                acked_bytes: subs[i].0,
                goodput_bps: per_s(subs[i].0),
                throughput_bps: per_s(subs[i].1),
                sent_packets: s.sent,
                retransmitted_packets: s.retransmitted,
                lost_packets: v.lost,
                loss_events: v.loss_events,
                rto_count: s.rto_count,
                mean_rtt_s: if s.rtt_n > 0 {
                    s.rtt_sum / s.rtt_n as f64 / 1e9
                } else {
                    f64::NAN
                },
                min_rtt_s: if v.min_rtt > 0 {
                    secs(v.min_rtt)
                } else {
                    f64::NAN
                },
                mean_cwnd: if end_t > start {
                    s.cwnd_integral / (end_t - start) as f64
                } else {
                    f64::NAN
                },
            });
        }
    }

    /// Bytes of the connection's heap state at their high-water marks: (per-subflow state and
    /// controller, data-level reassembly ring, subflow out-of-order lists).
    pub(crate) fn memory(&self) -> (usize, usize, usize) {
        use std::mem::size_of;
        let c = self;
        let state = c.snd.capacity() * size_of::<Sender>()
            + c.rcv.capacity() * size_of::<Receiver>()
            + c.views.capacity() * size_of::<Subflow>()
            + c.linux.capacity() * size_of::<LinuxState>()
            + c.reinject.capacity() * size_of::<u64>()
            + c.data.delivered_by_subflow.capacity() * size_of::<u64>()
            + size_of_val(&*c.ctrl)
            + c.sq.as_ref().map_or(0, |q| {
                size_of::<super::sendq::SendQ>()
                    + q.subs
                        .iter()
                        .map(|s| s.queue.capacity() * size_of::<u64>())
                        .sum::<usize>()
                    + q.subs.capacity() * size_of::<super::sendq::SubQueue>()
            });
        let ooo = c.rcv.iter().map(|r| r.ooo.capacity()).sum::<usize>() * size_of::<(u64, u64)>();
        (state, c.data.ring_bytes(), ooo)
    }
}

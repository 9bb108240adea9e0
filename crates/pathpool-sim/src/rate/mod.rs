//! A paced, rate-based multipath sender and its receiver (flow `kind = "rate"`): the
//! packet-level workload of Pluntke & Rio ("TCP-friendly Rate Control for non-TCP Multipath
//! Flows", 2011) — a live stream with FEC and a deadline, spread over K paths at rates
//! chosen by an external controller (`pathpool.ratecontrol`, through [`crate::Simulation`]).
//!
//! # Sender
//! Each path `r` has its own pacer: packets leave at `t_0, t_0 + 1/x_r, t_0 + 2/x_r, ...`
//! (times kept as `f64` nanoseconds so rounding never accumulates: over any time `T` a path sends
//! `x_r T` packets within one). There is no window and no retransmission. The content of a packet
//! (FEC block, index in block) is assigned in the order the K pacers fire, so the stream is
//! spread over the paths in proportion to the rates (the time-merge of K pacers gives path `r`
//! a share `x_r / sum x` of any stretch of the stream, within one packet per path; this is what
//! the smooth weighted round robin of `pathpool.ratecontrol.stream` does with a single clock).
//! Blocks have `n` packets, the first `k` source, the rest repair (a systematic MDS code, so any
//! `k` of the `n` rebuild the block); `k` is set per block from the latest
//! [`crate::Simulation::set_rates`]. A rate change takes effect at once: the next packet of path
//! `r` leaves `1/x_r` after its previous one (or now, if that is past).
//!
//! A data packet carries (path = `Packet::sub`, path sequence number = `seq`, block id = `dsn`,
//! send time = `ts`, and `tag = index | k << 16 | n << 32`).
//!
//! # Receiver
//! Per path: losses from sequence gaps (`lost += seq - expected`; a path is FIFO, so a gap is a
//! loss, and the packets sent are `arrived + lost` up to the highest sequence seen), arrivals,
//! loss events as TFRC counts them (RFC 5348 section 5.2: losses within one smoothed RTT of
//! the start of an event belong to it; the lost packets' send times are interpolated across the
//! gap), late arrivals (one-way delay `> deadline`), and sums and sums of squares of the one-way delay
//! (the delay held against the deadline) and of the RTT.
//!
//! **RTT** of an arrived packet = its measured one-way delay (the simulator has one clock) + the
//! delay a reply would take back over the path's return route at that instant: for
//! `ack_delay` routes the fixed delay; for `ack_links` routes the sum over the links of the
//! queue backlog, the serialisation of a 64-byte ACK and the propagation delay. This is the RTT a
//! per-packet echo would measure, without putting the echoes on the wire (only the reports
//! below cross the return route as packets).
//!
//! **FEC**: a packet is *in time* if its one-way delay is at most the deadline. A block is
//! decoded in time when at least `k` of its `n` packets arrive in time; then its `k` source
//! packets count as goodput; otherwise only its source packets that arrived in time count.
//! A block is settled once no packet of it can still be in time: after a packet of a *later*
//! block, sent at `s`, has arrived, every packet of the block was sent by `s`, so the block is
//! settled at `s + deadline`. Blocks still open when the run ends are settled with what has
//! arrived by then.
//!
//! **Reports**: every `feedback_interval` after the flow's start the receiver sends a report of
//! its *cumulative* counters on the return route of the flow's path with the shortest base
//! return delay (a packet of 64 + 32 K bytes, which can be queued or dropped on `ack_links`).
//! The sender keeps the newest report that has arrived; [`crate::Simulation::rate_feedback`]
//! returns the difference between it and the one taken at the previous call, so a lost or late
//! report loses nothing: its counts arrive with the next one. These are the `Feedback` arrays of
//! `pathpool.ratecontrol.stream`.
//!
//! # Output
//! `FlowRecord`: `kind = "rate"`, `algorithm` = the scenario's `controller` label once a
//! controller has set rates, else `"fixed"`; `delivered_bytes` = in-time decoded source packets x
//! payload; `lost_packets` = losses the receiver detected; `retransmitted_packets`,
//! `rto_count`, `duplicate_segments`, `reinjected_segments` = 0; `ack_packets` = reports sent;
//! `integrity_errors` = packets that arrived out of order on a path or in time for an already
//! settled block (both impossible: a simulator bug if not 0). `SubflowRecord`: `acked_bytes`
//! = payload bytes that arrived in time on the path, `lost_packets` = detected losses,
//! `loss_events` = TFRC loss events, `mean_rtt_s`/`min_rtt_s` from the RTT
//! samples above, `mean_cwnd` = NaN (no window).

mod feedback;
mod receiver;
mod records;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use feedback::Report;
pub use feedback::{PathCounters, RateFeedback, RateInfo};
use receiver::RateReceiver;

use crate::config::{FlowSpec, Scenario};
use crate::error::SimError;
use crate::net::event::{Ev, EventQueue};
use crate::net::link::Link;
use crate::net::packet::{Packet, ACK_BYTES, HEADER_BYTES};
use crate::net::{Net, Path, Route, SendJitter, NO_EVENT};
use crate::rng::Stream;
use crate::time::{serialisation, Nanos, NS_PER_SEC};

pub const MAX_RATE_PATHS: usize = 1024;

#[derive(Clone, Copy, Debug, Default)]
struct PathTx {
    /// Packets/s.
    rate: f64,
    /// Pacing slot of the last packet sent (ns, unrounded); NaN before the first.
    last_slot: f64,
    /// Pacing slot of the pending packet (ns, unrounded).
    next_slot: f64,
    /// Time of the pending pacing event (`NO_EVENT`: none).
    event: Nanos,
    seq: u64,
    sent: u64,
    wire_bytes: u64,
    dropped: u64,
    /// Host send clock (with send jitter, packets never overtake).
    tx_clock: Nanos,
    /// `wire_bytes` at the previous time-series sample.
    sampled_wire_bytes: u64,
}

/// One rate flow: sender, receiver, and the report channel between them.
#[derive(Debug)]
pub(crate) struct RateFlow {
    pub(crate) name: String,
    controller: String,
    driven: bool,
    path_names: Vec<String>,
    data_route: Vec<u32>,
    ack_route: Vec<u32>,
    report_path: usize,
    report_delay: Nanos,
    payload: u32,
    n: u32,
    k_next: u32,
    k: u32,
    block: u64,
    index: u32,
    deadline: Nanos,
    interval: Nanos,
    start: Nanos,
    stop: Option<Nanos>,
    started: bool,
    open: bool,
    /// The host's send delay (`send_jitter`) and the flow's own random stream.
    jitter: SendJitter,
    tx: Vec<PathTx>,
    source_sent: u64,
    rx: RateReceiver,
    /// Reports made and not yet superseded at the sender, oldest first.
    pending: VecDeque<Report>,
    next_report_id: u64,
    reports_sent: u64,
    reports_dropped: u64,
    /// Newest report that reached the sender, and the one `rate_feedback` returned last.
    delivered: Report,
    delivered_count: u64,
    taken: Report,
    taken_count: u64,
    taken_sender_sent: Vec<u64>,
    taken_source_sent: u64,
    dropped_packets: u64,
    /// Decoded source bytes at the previous time-series sample.
    sampled_delivered: u64,
}

/// Base delay of a route: propagation plus serialisation of `bytes` on every link.
fn base_delay(world_links: &[Link], route: &Route, bytes: u32) -> Nanos {
    route.delay
        + route
            .links
            .iter()
            .map(|&l| {
                let l = &world_links[l as usize];
                l.delay + serialisation(bytes, l.rate_bps)
            })
            .sum::<Nanos>()
}

impl RateFlow {
    pub(super) fn build(
        sc: &Scenario,
        f: &FlowSpec,
        seed: u64,
        links: &[Link],
        routes: &[Route],
        paths: &[Path],
    ) -> Result<RateFlow, SimError> {
        let spec = f.rate.as_ref().ok_or_else(|| SimError {
            message: format!("flow {:?}: kind rate without rate settings", f.name),
        })?;
        let k = f.paths.len();
        if k > MAX_RATE_PATHS {
            return Err(SimError {
                message: format!(
                    "flow {:?}: {k} paths; a rate flow has at most {MAX_RATE_PATHS}",
                    f.name
                ),
            });
        }
        let mut rng = Stream::new(seed, "flow", &f.name);
        let jitter = if f.start_jitter > 0 {
            (rng.uniform() * f.start_jitter as f64) as Nanos
        } else {
            0
        };
        let ack_route: Vec<u32> = f.paths.iter().map(|&p| paths[p].ack).collect();
        let report_bytes = ACK_BYTES + 32 * k as u32;
        let delays: Vec<Nanos> = ack_route
            .iter()
            .map(|&a| base_delay(links, &routes[a as usize], report_bytes))
            .collect();
        let report_path = (0..k).min_by_key(|&j| delays[j]).unwrap_or(0);
        Ok(RateFlow {
            name: f.name.clone(),
            controller: spec.controller.clone(),
            driven: false,
            path_names: f.paths.iter().map(|&p| sc.paths[p].name.clone()).collect(),
            data_route: f.paths.iter().map(|&p| paths[p].data).collect(),
            ack_route,
            report_path,
            report_delay: delays[report_path],
            payload: f.mss,
            n: spec.block_length,
            k_next: spec.source_per_block,
            k: spec.source_per_block,
            block: 0,
            index: 0,
            deadline: spec.deadline,
            interval: spec.feedback_interval,
            start: f.start + jitter,
            stop: f.stop,
            started: false,
            open: false,
            jitter: SendJitter {
                max: f.send_jitter,
                rng,
            },
            tx: spec
                .rates
                .iter()
                .map(|&x| PathTx {
                    rate: x,
                    last_slot: f64::NAN,
                    event: NO_EVENT,
                    ..PathTx::default()
                })
                .collect(),
            source_sent: 0,
            rx: RateReceiver::new(k, spec.deadline),
            pending: VecDeque::with_capacity(16),
            next_report_id: 0,
            reports_sent: 0,
            reports_dropped: 0,
            delivered: Report {
                paths: vec![PathCounters::default(); k],
                ..Report::default()
            },
            delivered_count: 0,
            taken: Report {
                paths: vec![PathCounters::default(); k],
                ..Report::default()
            },
            taken_count: 0,
            taken_sender_sent: vec![0; k],
            taken_source_sent: 0,
            dropped_packets: 0,
            sampled_delivered: 0,
        })
    }

    /// Schedule path `r`'s next packet `1/x_r` after its last one (at once if that is past).
    fn schedule(&mut self, q: &mut EventQueue, f: u32, r: usize, now: Nanos) {
        let tx = &mut self.tx[r];
        if tx.rate <= 0.0 || !self.open {
            tx.event = NO_EVENT;
            return;
        }
        let next = if tx.last_slot.is_nan() {
            now as f64
        } else {
            (tx.last_slot + NS_PER_SEC as f64 / tx.rate).max(now as f64)
        };
        tx.next_slot = next;
        let at = (next.round() as Nanos).max(now);
        if tx.event != at {
            tx.event = at;
            q.push(at, Ev::Pace(f, r as u16));
        }
    }
}

impl RateFlow {
    /// The flow starts (`e` is its endpoint index): its pacers and its receiver's reports.
    pub(crate) fn on_start(&mut self, net: &mut Net, e: u32) {
        let now = net.now;
        self.started = true;
        self.open = self.stop.is_none_or(|s| s > now);
        for r in 0..self.tx.len() {
            self.schedule(&mut net.q, e, r, now);
        }
        let first = now + self.interval;
        if first <= net.end {
            net.q.push(first, Ev::Report(e));
        }
    }

    pub(crate) fn on_stop(&mut self) {
        self.open = false;
    }

    /// The receiver sends a report of its per-path counters to the sender.
    pub(crate) fn on_report(&mut self, net: &mut Net, e: u32) {
        let now = net.now;
        self.rx.settle(now);
        let report = Report {
            id: self.next_report_id,
            made_at: now,
            paths: self.rx.counters.clone(),
            decoded_source: self.rx.decoded_source,
        };
        self.next_report_id += 1;
        self.reports_sent += 1;
        let n_paths = self.tx.len() as u32;
        let pkt = Packet {
            conn: e,
            sub: self.report_path as u16,
            is_ack: true,
            route: self.ack_route[self.report_path],
            wire: ACK_BYTES + 32 * n_paths,
            seq: report.id,
            ts: now,
            ..Packet::default()
        };
        self.pending.push_back(report);
        let next = now + self.interval;
        if next <= net.end {
            net.q.push(next, Ev::Report(e));
        }
        net.ack_packets += 1;
        if let Some(p) = net.inject(pkt) {
            self.on_drop(&p);
        }
    }

    /// Pacing timer of path `r`: send the next packet of the stream on it.
    pub(crate) fn on_pace(&mut self, net: &mut Net, e: u32, r: usize) {
        let now = net.now;
        if self.tx[r].event != now {
            return; // superseded by a rate change
        }
        self.tx[r].event = NO_EVENT;
        self.tx[r].last_slot = self.tx[r].next_slot;
        if !self.open {
            return;
        }
        if self.index == 0 {
            self.k = self.k_next;
        }
        let (block, index, k, n) = (self.block, self.index, self.k, self.n);
        if index < k {
            self.source_sent += 1;
        }
        self.index += 1;
        if self.index == n {
            self.index = 0;
            self.block += 1;
        }
        let wire = self.payload + HEADER_BYTES;
        let tx = &mut self.tx[r];
        let pkt = Packet {
            conn: e,
            sub: r as u16,
            is_ack: false,
            route: self.data_route[r],
            wire,
            seq: tx.seq,
            dsn: block,
            len: self.payload,
            tag: u64::from(index) | u64::from(k) << 16 | u64::from(n) << 32,
            ts: now,
            ..Packet::default()
        };
        tx.seq += 1;
        tx.sent += 1;
        tx.wire_bytes += u64::from(wire);
        self.schedule(&mut net.q, e, r, now);
        if let Some(p) = net.send_data(pkt, &mut self.jitter, &mut self.tx[r].tx_clock) {
            self.on_drop(&p);
        }
    }

    /// One of the flow's packets reached its endpoint: data at the receiver, a report at the
    /// sender.
    pub(crate) fn on_packet(&mut self, net: &mut Net, p: &Packet) {
        if p.is_ack {
            while self.pending.front().is_some_and(|r| r.id < p.seq) {
                self.pending.pop_front();
            }
            if self.pending.front().is_some_and(|r| r.id == p.seq) {
                self.delivered = self.pending.pop_front().expect("checked");
                self.delivered_count += 1;
            }
            return;
        }
        let r = p.sub as usize;
        let extra = net.return_delay(self.ack_route[r]);
        let now = net.now;
        let index = (p.tag & 0xffff) as u32;
        let k = ((p.tag >> 16) & 0xffff) as u32;
        self.rx
            .on_packet(r, p.seq, p.dsn, index, k, p.len, p.ts, now, extra);
    }

    /// One of the flow's packets was dropped in the network.
    pub(crate) fn on_drop(&mut self, p: &Packet) {
        if p.is_ack {
            self.reports_dropped += 1;
        } else {
            self.tx[p.sub as usize].dropped += 1;
            self.dropped_packets += 1;
        }
    }
}

/// Schedule the start and stop of every rate flow; their endpoint indices start at `first`.
pub(crate) fn schedule_rate_flows(
    flows: &[RateFlow],
    first: usize,
    q: &mut EventQueue,
    end: Nanos,
) {
    for (f, fl) in flows.iter().enumerate() {
        let e = (first + f) as u32;
        if fl.start <= end {
            q.push(fl.start, Ev::Start(e));
        }
        if let Some(s) = fl.stop {
            if s.max(fl.start) <= end {
                q.push(s.max(fl.start), Ev::Stop(e));
            }
        }
    }
}

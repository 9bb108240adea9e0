//! A paced, rate-based multipath sender and its receiver (flow `kind = "rate"`): the
//! packet-level workload of seed 003 (Pluntke & Rio, "TCP-friendly Rate Control for non-TCP
//! Multipath Flows", 2011) — a live stream with FEC and a deadline, spread over K paths at rates
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

use std::collections::VecDeque;

use crate::config::{FlowSpec, Scenario};
use crate::error::SimError;
use crate::net::event::Ev;
use crate::net::event::EventQueue;
use crate::net::packet::{Packet, ACK_BYTES, HEADER_BYTES};
use crate::net::{Net, Path, Route, SendJitter, NO_EVENT};
use crate::output::Series;
use crate::output::{FlowRecord, RunOutput, SubflowRecord};
use crate::rng::Stream;
use crate::time::{secs, serialisation, Nanos, NS_PER_SEC};
use crate::world::{Endpoint, World};
use crate::Simulation;

pub const MAX_RATE_PATHS: usize = 1024;

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
    fn minus(&self, o: &PathCounters) -> PathCounters {
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
struct Report {
    id: u64,
    made_at: Nanos,
    paths: Vec<PathCounters>,
    /// Source packets of settled blocks that count as goodput.
    decoded_source: u64,
}

/// What [`Simulation::rate_feedback`] returns: everything since the previous call.
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

#[derive(Clone, Copy, Debug)]
struct Block {
    k: u32,
    in_time: u32,
    in_time_source: u32,
    /// The block is settled once the clock passes this (`NO_EVENT`: not known yet).
    settles: Nanos,
}

/// The receiving side: per-path loss/delay statistics and FEC block decoding.
#[derive(Debug)]
pub(crate) struct RateReceiver {
    deadline: Nanos,
    next_seq: Vec<u64>,
    pub(crate) counters: Vec<PathCounters>,
    /// Send time of the last packet that arrived on each path.
    last_sent: Vec<Nanos>,
    /// Start (send time) of the current loss event per path (`NO_EVENT`: none yet).
    event_start: Vec<Nanos>,
    /// Smoothed RTT per path (RFC 6298 gain 1/8; 0 before the first sample).
    srtt: Vec<Nanos>,
    pub(crate) in_time_bytes: Vec<u64>,
    pub(crate) min_rtt: Vec<Nanos>,
    /// Unsettled blocks, oldest first; `blocks[0]` has id `base`.
    blocks: VecDeque<Block>,
    base: u64,
    /// `blocks[..first_open]` already have their settle time.
    first_open: usize,
    pub(crate) decoded_source: u64,
    pub(crate) settled_blocks: u64,
    pub(crate) integrity_errors: u64,
}

impl RateReceiver {
    pub(crate) fn new(n_paths: usize, deadline: Nanos) -> Self {
        RateReceiver {
            deadline,
            next_seq: vec![0; n_paths],
            counters: vec![PathCounters::default(); n_paths],
            last_sent: vec![0; n_paths],
            event_start: vec![NO_EVENT; n_paths],
            srtt: vec![0; n_paths],
            in_time_bytes: vec![0; n_paths],
            min_rtt: vec![0; n_paths],
            blocks: VecDeque::with_capacity(1024),
            base: 0,
            first_open: 0,
            decoded_source: 0,
            settled_blocks: 0,
            integrity_errors: 0,
        }
    }

    /// Settle a block: all `k` source packets if at least `k` of its packets came in time,
    /// else the source packets that came in time themselves.
    fn settle_front(&mut self) {
        let b = self.blocks.pop_front().expect("a block to settle");
        self.decoded_source += u64::from(if b.k > 0 && b.in_time >= b.k {
            b.k
        } else {
            b.in_time_source
        });
        self.settled_blocks += 1;
        self.base += 1;
        self.first_open = self.first_open.saturating_sub(1);
    }

    /// Settle every block whose deadline has passed at `now`.
    pub(crate) fn settle(&mut self, now: Nanos) {
        while self.blocks.front().is_some_and(|b| b.settles < now) {
            self.settle_front();
        }
    }

    /// Settle everything (end of run).
    pub(crate) fn settle_all(&mut self) {
        while !self.blocks.is_empty() {
            self.settle_front();
        }
    }

    /// A data packet of path `r` arrived at `now`; `rtt_extra` is the return delay that makes
    /// its one-way delay an RTT sample. Returns whether it was in time.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_packet(
        &mut self,
        r: usize,
        seq: u64,
        block: u64,
        index: u32,
        k: u32,
        payload: u32,
        sent_at: Nanos,
        now: Nanos,
        rtt_extra: Nanos,
    ) -> bool {
        self.settle(now);
        let expected = self.next_seq[r];
        if seq < expected {
            self.integrity_errors += 1;
            return false;
        }
        self.next_seq[r] = seq + 1;
        let owd = now - sent_at;
        let rtt = owd + rtt_extra;
        if seq > expected {
            // RFC 5348 section 5.2: the lost packets' send times are interpolated between the
            // packets before and after the gap; one that was sent more than one RTT after the
            // current loss event began starts a new one.
            let gap = seq - expected;
            let rtt_now = if self.srtt[r] > 0 { self.srtt[r] } else { rtt };
            let (t0, t1) = (self.last_sent[r] as f64, sent_at as f64);
            for i in 1..=gap {
                let t = (t0 + (t1 - t0) * i as f64 / (gap + 1) as f64) as Nanos;
                let start = self.event_start[r];
                if start == NO_EVENT || t > start.saturating_add(rtt_now) {
                    self.event_start[r] = t;
                    self.counters[r].loss_events += 1;
                }
            }
        }
        self.last_sent[r] = sent_at;
        self.srtt[r] = if self.srtt[r] == 0 {
            rtt
        } else {
            self.srtt[r] - self.srtt[r] / 8 + rtt / 8
        };
        let in_time = owd <= self.deadline;
        let c = &mut self.counters[r];
        c.lost += seq - expected;
        c.sent = seq + 1;
        c.arrived += 1;
        let (d, t) = (secs(owd), secs(rtt));
        c.delay_sum += d;
        c.delay_sq_sum += d * d;
        c.rtt_sum += t;
        c.rtt_sq_sum += t * t;
        self.min_rtt[r] = if self.min_rtt[r] == 0 {
            rtt
        } else {
            self.min_rtt[r].min(rtt)
        };
        if !in_time {
            c.late += 1;
        } else {
            self.in_time_bytes[r] += u64::from(payload);
        }
        if block < self.base {
            // Settled blocks only receive packets that are late by construction.
            if in_time {
                self.integrity_errors += 1;
            }
            return in_time;
        }
        let pos = (block - self.base) as usize;
        while self.blocks.len() <= pos {
            self.blocks.push_back(Block {
                k: 0,
                in_time: 0,
                in_time_source: 0,
                settles: NO_EVENT,
            });
        }
        // Every packet of an earlier block was sent no later than this one.
        let settles = sent_at.saturating_add(self.deadline);
        while self.first_open < pos {
            self.blocks[self.first_open].settles = settles;
            self.first_open += 1;
        }
        let b = &mut self.blocks[pos];
        b.k = k;
        if in_time {
            b.in_time += 1;
            if index < k {
                b.in_time_source += 1;
            }
        }
        in_time
    }
}

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
    name: String,
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
fn base_delay(world_links: &[crate::net::link::Link], route: &Route, bytes: u32) -> Nanos {
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
        links: &[crate::net::link::Link],
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

impl World {
    /// The rate flows, in scenario order, with their endpoint indices.
    fn rate_flows(&self) -> impl Iterator<Item = (u32, &RateFlow)> {
        self.endpoints
            .iter()
            .enumerate()
            .filter_map(|(e, ep)| match ep {
                Endpoint::Rate(r) => Some((e as u32, &**r)),
                Endpoint::Conn(_) => None,
            })
    }

    /// The endpoint index of rate flow `flow`.
    fn rate_index(&self, flow: &str) -> Result<u32, SimError> {
        self.rate_flows()
            .find(|(_, f)| f.name == flow)
            .map(|(e, _)| e)
            .ok_or_else(|| {
                let names: Vec<&str> = self.rate_flows().map(|(_, f)| f.name.as_str()).collect();
                SimError {
                    message: if names.is_empty() {
                        format!("no rate flow named {flow:?}: this scenario has no flow of kind \"rate\"")
                    } else {
                        format!("no rate flow named {flow:?} (rate flows: {})", names.join(", "))
                    },
                }
            })
    }
}

/// Schedule the start and stop of every rate flow.
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

impl Simulation {
    /// The receiver feedback of rate flow `flow` that reached its sender since the previous
    /// call (per-path counters, as `pathpool.ratecontrol.stream.Feedback`), plus the sender's
    /// own counts over the same calls.
    pub fn rate_feedback(&mut self, flow: &str) -> Result<RateFeedback, SimError> {
        let e = self.world.rate_index(flow)?;
        let fl = self.world.rate(e);
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
        Ok(fb)
    }

    /// Set rate flow `flow`'s per-path rates (packets/s, each finite and >= 0) from now on, and
    /// the source packets per FEC block (1..=block length) from the next block on.
    pub fn set_rates(
        &mut self,
        flow: &str,
        rates: &[f64],
        source_per_block: u32,
    ) -> Result<(), SimError> {
        let e = self.world.rate_index(flow)?;
        let now = self.world.net.now;
        let Endpoint::Rate(fl) = &mut self.world.endpoints[e as usize] else {
            unreachable!("rate_index names a rate flow")
        };
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
                fl.schedule(&mut self.world.net.q, e, r, now);
            }
        }
        Ok(())
    }

    /// Static facts about rate flow `flow`.
    pub fn rate_info(&self, flow: &str) -> Result<RateInfo, SimError> {
        let e = self.world.rate_index(flow)?;
        let Endpoint::Rate(fl) = &self.world.endpoints[e as usize] else {
            unreachable!("rate_index names a rate flow")
        };
        Ok(RateInfo {
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
        })
    }

    /// Names of the scenario's rate flows, in scenario order.
    pub fn rate_flows(&self) -> Vec<String> {
        self.world
            .rate_flows()
            .map(|(_, f)| f.name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    fn sim(text: &str, seed: u64) -> Simulation {
        let sc = Scenario::from_toml_str(text, "<test>").expect("valid scenario");
        Simulation::new(&sc, seed).expect("builds")
    }

    const ONE_PATH: &str = r#"
        name = "pacing"
        duration = "10s"
        [[links]]
        name = "a"
        rate = "1Gbps"
        delay = "10ms"
        [[paths]]
        name = "pa"
        links = ["a"]
        [[flows]]
        name = "s"
        kind = "rate"
        paths = ["pa"]
        rates = [137.3]
        send_jitter = 0
    "#;

    /// Over any stretch `T` a path sends `x T` packets within one, also across a rate change.
    #[test]
    fn pacing_sends_rate_times_time_within_one_packet() {
        let mut s = sim(ONE_PATH, 1);
        s.run_until(4 * NS_PER_SEC);
        let a = s.rate_feedback("s").unwrap().sender_sent[0];
        assert!(
            (a as f64 - 137.3 * 4.0).abs() <= 1.0,
            "sent {a} in 4 s at 137.3/s"
        );
        s.set_rates("s", &[55.5], 5).unwrap();
        s.run_until(10 * NS_PER_SEC);
        let b = s.rate_feedback("s").unwrap().sender_sent[0];
        assert!(
            (b as f64 - 55.5 * 6.0).abs() <= 1.0,
            "sent {b} in 6 s at 55.5/s"
        );
        // A path set to 0 stops, and restarts when given a rate again.
        let out = s.finish();
        assert_eq!(out.flows[0].sent_packets, a + b);
        assert_eq!(out.flows[0].kind, "rate");
        assert_eq!(out.flows[0].algorithm, "fixed"); // controller label defaults to fixed
    }

    #[test]
    fn a_path_at_rate_zero_is_silent_until_restarted() {
        let mut s = sim(ONE_PATH, 1);
        s.run_until(NS_PER_SEC);
        s.set_rates("s", &[0.0], 5).unwrap();
        s.rate_feedback("s").unwrap();
        s.run_until(3 * NS_PER_SEC);
        assert_eq!(s.rate_feedback("s").unwrap().sender_sent[0], 0);
        s.set_rates("s", &[200.0], 5).unwrap();
        s.run_until(5 * NS_PER_SEC);
        let n = s.rate_feedback("s").unwrap().sender_sent[0];
        assert!((n as f64 - 400.0).abs() <= 1.0, "{n}");
    }

    const TWO_PATHS: &str = r#"
        name = "losses"
        duration = "10s"
        [[links]]
        name = "lossy"
        rate = "100Mbps"
        delay = "20ms"
        loss = "5%"
        [[links]]
        name = "narrow"
        rate = "2Mbps"
        delay = "30ms"
        buffer = 20
        [[paths]]
        name = "p1"
        links = ["lossy"]
        [[paths]]
        name = "p2"
        links = ["narrow"]
        ack_delay = "5ms"
        [[flows]]
        name = "s"
        kind = "rate"
        paths = ["p1", "p2"]
        rates = [400, 250]
        stop = "8s"
        block_length = 8
        source_per_block = 6
    "#;

    /// The receiver's per-path losses (sequence gaps) are exactly the link's drops, apart from
    /// drops after the last arrival, which no gap can reveal.
    #[test]
    #[allow(clippy::needless_range_loop)]
    fn losses_per_path_equal_link_drops() {
        let sc = Scenario::from_toml_str(TWO_PATHS, "<test>").unwrap();
        let mut s = Simulation::new(&sc, 3).unwrap();
        s.run_until(sc.duration);
        let fl = s.world.rate_flows().next().expect("a rate flow").1;
        let mut trailing = [0u64; 2];
        for r in 0..2 {
            // Everything was sent by 8 s and has arrived or been dropped by 10 s.
            trailing[r] = fl.tx[r].sent - fl.rx.counters[r].sent;
            assert_eq!(
                fl.rx.counters[r].lost + trailing[r],
                fl.tx[r].dropped,
                "path {r}"
            );
            assert_eq!(
                fl.rx.counters[r].arrived + fl.tx[r].dropped,
                fl.tx[r].sent,
                "path {r}"
            );
        }
        let out = s.finish();
        let link = |n: &str| out.links.iter().find(|l| l.link == n).unwrap().clone();
        let (lossy, narrow) = (link("lossy"), link("narrow"));
        assert!(
            lossy.random_drops > 50 && narrow.queue_drops > 50,
            "both paths must lose: {lossy:?} {narrow:?}"
        );
        let sub = |r: usize| {
            out.subflows
                .iter()
                .find(|x| x.flow == "s" && x.subflow == r as u32)
                .unwrap()
                .clone()
        };
        assert_eq!(
            sub(0).lost_packets + trailing[0],
            lossy.random_drops + lossy.queue_drops
        );
        assert_eq!(
            sub(1).lost_packets + trailing[1],
            narrow.random_drops + narrow.queue_drops
        );
        let f = &out.flows[0];
        assert_eq!(f.in_flight_packets, 0);
        assert_eq!(f.integrity_errors, 0);
        assert_eq!(f.sent_packets, f.received_packets + f.dropped_packets);
    }

    /// The FEC rule, by hand: a block decodes when >= k of its n packets arrive in time; then
    /// all its k source packets count, else only its in-time source packets.
    #[test]
    fn fec_block_decoding_rule() {
        let d = 100 * NS_PER_MS;
        let mut rx = RateReceiver::new(1, d);
        let ms = NS_PER_MS;
        let mut seq = 0;
        let mut pkt =
            |rx: &mut RateReceiver, block: u64, index: u32, sent: Nanos, arrive: Nanos| {
                let it = rx.on_packet(0, seq, block, index, 2, 1000, sent * ms, arrive * ms, 0);
                seq += 1;
                it
            };
        // n = 4, k = 2. Block 0: only the two repair packets in time -> decodes: 2 source.
        pkt(&mut rx, 0, 2, 2, 50);
        pkt(&mut rx, 0, 3, 3, 60);
        // Block 1: source 0 in time, source 1 late (101 ms), repair lost -> 1 source.
        assert!(pkt(&mut rx, 1, 0, 4, 70));
        // Block 0 settles 100 ms after the first packet of block 1 was sent (4 ms): not at 104.
        rx.settle(104 * ms);
        assert_eq!(rx.settled_blocks, 0);
        assert!(!pkt(&mut rx, 1, 1, 5, 106));
        assert_eq!((rx.settled_blocks, rx.decoded_source), (1, 2));
        // Block 2: source 0 in time, repair 2 in time -> 2 in time = k: decodes -> 2 source.
        assert!(pkt(&mut rx, 2, 0, 30, 120));
        assert!(pkt(&mut rx, 2, 2, 32, 130));
        // Block 3: one repair packet in time: nothing.
        assert!(pkt(&mut rx, 3, 3, 45, 140));
        rx.settle_all();
        assert_eq!((rx.settled_blocks, rx.decoded_source), (4, 2 + 1 + 2));
        assert_eq!(rx.counters[0].late, 1);
        assert_eq!(rx.counters[0].lost, 0);
        assert_eq!(rx.integrity_errors, 0);
        // A late packet of a settled block changes nothing and is no error; an in-time one is.
        let late = rx.on_packet(0, seq, 0, 1, 2, 1000, 0, 200 * ms, 0);
        assert!(!late);
        assert_eq!(rx.integrity_errors, 0);
    }

    /// TFRC loss events by hand (RFC 5348 section 5.2): packets every 10 ms, one-way delay
    /// 50 ms (so the RTT is 50 ms with a zero return delay).
    #[test]
    fn loss_events_follow_rfc5348() {
        let ms = NS_PER_MS;
        let mut rx = RateReceiver::new(1, 300 * ms);
        let arrive = |rx: &mut RateReceiver, seq: u64| {
            rx.on_packet(
                0,
                seq,
                seq / 10,
                (seq % 10) as u32,
                10,
                1000,
                seq * 10 * ms,
                (seq * 10 + 50) * ms,
                0,
            );
        };
        arrive(&mut rx, 0);
        // 1 and 2 lost (sent at 10 and 20 ms, interpolated): one event starting at 10 ms.
        arrive(&mut rx, 3);
        assert_eq!((rx.counters[0].lost, rx.counters[0].loss_events), (2, 1));
        arrive(&mut rx, 4);
        arrive(&mut rx, 5);
        arrive(&mut rx, 6);
        // 7 lost (sent at 70 ms > 10 + 50): a new event.
        arrive(&mut rx, 8);
        // 9 lost (90 ms <= 70 + 50): same event.
        arrive(&mut rx, 10);
        assert_eq!((rx.counters[0].lost, rx.counters[0].loss_events), (4, 2));
        // 13 lost (130 ms > 70 + 50): new event.
        arrive(&mut rx, 11);
        arrive(&mut rx, 12);
        arrive(&mut rx, 14);
        assert_eq!(
            (
                rx.counters[0].lost,
                rx.counters[0].loss_events,
                rx.counters[0].sent
            ),
            (5, 3, 15)
        );
    }

    /// Time series of a rate flow: per-interval goodput and wire bytes add up to the run's
    /// totals, `rate_pps` follows `set_rates`, and sampling changes no result.
    #[test]
    fn time_series_add_up_and_change_nothing() {
        let text = TWO_PATHS.replacen("[[links]]", "[metrics]\ninterval = \"100ms\"\n[[links]]", 1);
        let run = |text: &str| {
            let mut s = sim(text, 2);
            s.run_until(4 * NS_PER_SEC);
            s.set_rates("s", &[300.0, 250.0], 6).unwrap();
            s.finish()
        };
        let (plain, out) = (run(TWO_PATHS), run(&text));
        assert!(plain.series.is_empty());
        assert_eq!(
            format!("{:?}{:?}", out.flows, out.subflows),
            format!("{:?}{:?}", plain.flows, plain.subflows)
        );
        let ser = &out.series;
        let pick = |id: &str, metric: &str| -> Vec<(f64, f64)> {
            (0..ser.len())
                .filter(|&k| ser.id[k] == id && ser.metric[k] == metric)
                .map(|k| (ser.time_s[k], ser.value[k]))
                .collect()
        };
        let good = pick("s", "goodput_bps");
        assert_eq!(good.len(), 100);
        // By the last sample (stop 8 s + deadline 0.3 s < 10 s) every block is decided except
        // the one the stop cut short, which stays open until the end of the run.
        let decoded = good.iter().map(|(_, v)| v * 0.1 / 8.0).sum::<f64>().round() as u64;
        let open = out.flows[0].delivered_bytes - decoded;
        assert!(
            open.is_multiple_of(1448) && open <= 8 * 1448,
            "{decoded} of {}",
            out.flows[0].delivered_bytes
        );
        for (r, sub) in out.subflows.iter().enumerate() {
            let id = format!("s/{r}");
            let wire: f64 = pick(&id, "throughput_bps")
                .iter()
                .map(|(_, v)| v * 0.1 / 8.0)
                .sum();
            let total = sub.throughput_bps * 8.0 / 8.0; // bit/s over the 8 s the flow ran, in bytes
            assert!(
                (wire - total).abs() < 1e-6 * total,
                "path {r}: {wire} vs {total}"
            );
            for (t, x) in pick(&id, "rate_pps") {
                let expect = if r == 0 && t > 4.0 {
                    300.0
                } else if r == 0 {
                    400.0
                } else {
                    250.0
                };
                assert_eq!(x, expect, "path {r} at {t}");
            }
        }
    }

    /// With no loss, goodput is exactly the source share k/n of what arrived.
    #[test]
    fn lossless_goodput_is_the_source_share() {
        let text = ONE_PATH.replace(
            "rates = [137.3]",
            "rates = [100]\nblock_length = 10\nsource_per_block = 7\nstop = \"9s\"",
        );
        let out = sim(&text, 1).finish();
        let f = &out.flows[0];
        assert_eq!(f.dropped_packets, 0);
        // Packets at 0, 10 ms, ..., 8.99 s (the stop at 9 s comes before the slot at 9 s).
        assert_eq!(f.sent_packets, 900);
        assert_eq!(f.delivered_bytes, 90 * 7 * 1448);
    }

    /// Feedback conservation: summed over all calls, what the sender got equals the receiver's
    /// counters at the last report it received; each report arrives one return delay after it
    /// was made; `sent = arrived + lost` per path.
    #[test]
    #[allow(clippy::needless_range_loop)]
    fn feedback_counters_are_conserved_and_delayed() {
        let sc = Scenario::from_toml_str(TWO_PATHS, "<test>").unwrap();
        let mut s = Simulation::new(&sc, 5).unwrap();
        // Reports go back on p2's return route (5 ms, the shortest) every second from t = 1 s.
        assert!((s.rate_info("s").unwrap().report_delay_s - 0.005).abs() < 1e-4);
        s.run_until(NS_PER_SEC + 4 * NS_PER_MS);
        assert_eq!(s.rate_feedback("s").unwrap().reports, 0);
        s.run_until(NS_PER_SEC + 6 * NS_PER_MS);
        let first = s.rate_feedback("s").unwrap();
        assert_eq!(first.reports, 1);
        assert_eq!(first.report_made_s, 1.0);
        let mut total = first.paths.clone();
        let mut decoded = first.decoded_source;
        let mut t = NS_PER_SEC + 6 * NS_PER_MS;
        while t < sc.duration {
            t += 300 * NS_PER_MS;
            s.run_until(t);
            let fb = s.rate_feedback("s").unwrap();
            for (a, b) in total.iter_mut().zip(&fb.paths) {
                assert_eq!(b.sent, b.arrived + b.lost);
                a.sent += b.sent;
                a.lost += b.lost;
                a.arrived += b.arrived;
                a.late += b.late;
                a.rtt_sum += b.rtt_sum;
                a.delay_sum += b.delay_sum;
            }
            decoded += fb.decoded_source;
        }
        let fl = s.world.rate_flows().next().expect("a rate flow").1;
        let last = &fl.delivered;
        assert_eq!(last.made_at, 9 * NS_PER_SEC); // the 10 s report is made at the end, never arrives
        for r in 0..2 {
            let (a, b) = (&total[r], &last.paths[r]);
            assert_eq!(
                (a.sent, a.lost, a.arrived, a.late),
                (b.sent, b.lost, b.arrived, b.late)
            );
            assert!((a.rtt_sum - b.rtt_sum).abs() < 1e-9 * b.rtt_sum.max(1.0));
            assert!((a.delay_sum - b.delay_sum).abs() < 1e-9 * b.delay_sum.max(1.0));
            // RTT = one-way delay + the return route's delay: 20+20 ms on p1, 30+5 ms + queueing on p2.
            assert!(b.rtt_sum / b.arrived as f64 >= 0.040 - 1e-6);
        }
        assert!((total[0].rtt_sum / total[0].arrived as f64 - 0.040).abs() < 1e-3);
        assert_eq!(decoded, last.decoded_source);
        assert_eq!(fl.reports_sent, 10);
    }

    #[test]
    fn same_seed_same_output() {
        let sc = Scenario::from_toml_str(TWO_PATHS, "<test>").unwrap();
        let mut a = crate::run(&sc, 9).unwrap();
        let mut b = crate::run(&sc, 9).unwrap();
        a.stats.wall_s = 0.0;
        b.stats.wall_s = 0.0;
        // Debug text, because NaN fields (completion time, mean cwnd) are never == themselves.
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn rate_fields_are_validated_with_field_names() {
        let err = |from: &str, to: &str| {
            let text = ONE_PATH.replace(from, to);
            assert_ne!(text, ONE_PATH, "replacement {from:?} did nothing");
            Scenario::from_toml_str(&text, "<test>").unwrap_err()
        };
        let e = err("rates = [137.3]", "rates = [1, 2]");
        assert_eq!(e.field, "flows[0].rates");
        let e = err("rates = [137.3]", "rates = [\"fast\"]");
        assert_eq!(e.field, "flows[0].rates[0]");
        let e = err("rates = [137.3]", "rates = [0]");
        assert!(e.message.contains("all rates are 0"));
        // Controller labels belong to the caller (Python's pathpool.ratecontrol), which lists them.
        let text = ONE_PATH.replace("send_jitter = 0", "send_jitter = 0\ncontroller = \"pid\"");
        let labels = crate::config::Options {
            rate_controllers: Some(vec!["fixed".into(), "mptcp".into()]),
            ..Default::default()
        };
        let e = Scenario::from_toml_str_with(&text, "<test>", &labels).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.allowed.as_deref()),
            ("flows[0].controller", Some("fixed, mptcp"))
        );
        assert!(Scenario::from_toml_str(&text, "<test>").is_ok());
        let e = err(
            "send_jitter = 0",
            "send_jitter = 0\nblock_length = 4\nsource_per_block = 5",
        );
        assert_eq!(e.field, "flows[0].source_per_block");
        let e = err("send_jitter = 0", "send_jitter = 0\ndeadline = 0");
        assert_eq!(e.field, "flows[0].deadline");
        let e = err("send_jitter = 0", "send_jitter = 0\nalgorithm = \"lia\"");
        assert_eq!(e.field, "flows[0].algorithm");
        let e = err("send_jitter = 0", "send_jitter = 0\napp = \"file\"");
        assert_eq!(e.field, "flows[0].app");
        let e = err("rates = [137.3]", "");
        assert_eq!(e.field, "flows[0].rates");
        let tcp = ONE_PATH.replace("kind = \"rate\"", "kind = \"tcp\"");
        let e = Scenario::from_toml_str(&tcp, "<test>").unwrap_err();
        assert_eq!(e.field, "flows[0].rates");
        assert!(e.message.contains("only to kind"));
    }

    #[test]
    fn bad_driver_input_is_an_error_not_a_panic() {
        let mut s = sim(ONE_PATH, 1);
        assert!(s
            .set_rates("nope", &[1.0], 1)
            .unwrap_err()
            .message
            .contains("no rate flow named \"nope\""));
        assert!(s.set_rates("s", &[1.0, 2.0], 1).is_err());
        assert!(s.set_rates("s", &[f64::NAN], 1).is_err());
        assert!(s.set_rates("s", &[-1.0], 1).is_err());
        assert!(s.set_rates("s", &[1.0], 0).is_err());
        assert!(s.set_rates("s", &[1.0], 11).is_err()); // block length 10
        assert!(s.set_rates("s", &[1.0], 10).is_ok());
    }
}

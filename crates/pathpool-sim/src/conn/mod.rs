//! A TCP or MPTCP connection (a single-path TCP flow is a connection with one subflow), as
//! smoltcp's sockets are: the connection owns its state machine, and the world hands it the
//! packets and timer events that are its own.
//!
//! Its parts, each a module, in the order they depend on one another:
//!
//! * [`data`]: the data level: the data sequence space and the connection-level receive buffer;
//! * [`scoreboard`], [`sender`], [`receiver`]: one subflow's SACK scoreboard, sender (RFC 6675
//!   loss marking, Linux's RTT estimator and RTO) and receiver (reassembly, SACK blocks);
//! * [`recovery`]: Linux's RACK-TLP and PRR state of a subflow (`recovery = "linux"`);
//! * [`scheduler`]: which subflow carries the next new segment;
//! * [`sendq`]: upstream Linux MPTCP's send side (`scheduler = "linux"`: per-subflow queues
//!   and bursts; `send_buffer = "linux"`: send buffers and a blocking writer);
//! * this module: [`Conn`], the state the parts above make up, and the state transitions that
//!   send nothing (window accounting, entering recovery, window growth through the controller);
//! * [`send`]: the send path, onto the network; [`input`]: a data segment or an ACK arriving;
//!   [`timers`]: the delayed ACK and the retransmission timer (RTO, loss probe, RACK).
//!
//! The event handlers ([`input`], [`timers`]) call the [`send`] path and nothing calls back up:
//! a packet goes from the world to [`input`], through the subflow's bookkeeping and the
//! controller, to [`send`] and the network.

pub mod data;
pub mod input;
pub mod rcvbuf;
pub mod receiver;
mod records;
pub mod recovery;
pub mod scheduler;
pub mod scoreboard;
pub mod send;
pub mod sender;
pub mod sendq;
pub mod timers;

use std::collections::VecDeque;

use pathpool_cc::{Ack, Controller, Subflow, MIN_CWND};

use crate::config::{
    AckRoute, App, DelayedAck, FlowKind, FlowSpec, Joins, PushFlag, ReceiveWindow, Recovery,
    Scenario, Scheduler as SchedulerKind, Segmentation, SendBuffer, WindowArithmetic, Writer,
};
use crate::error::SimError;
use crate::net::event::{Ev, EventQueue};
use crate::net::packet::HEADER_BYTES;
use crate::net::{Path, SendJitter};
use crate::rng::Stream;
use crate::time::Nanos;
use data::{file_segs, payload_at, Cuts, DataReceiver};
use rcvbuf::Autotune;
use receiver::{LinuxDelack, Receiver};
use recovery::LinuxState;
use scheduler::Scheduler;
use sender::{AckEffect, Sender};
use sendq::SendQ;

/// One connection with its subflows, controller, application and receiver.
///
/// `repr(C)` keeps the declaration order: the fields every segment or ACK reads come first, on
/// as few cache lines as possible (with hundreds of connections, each packet finds its
/// connection's state out of cache), and what only construction, sampling and output read
/// comes last.
#[derive(Debug)]
#[repr(C)]
pub struct Conn {
    // --- read per segment or ACK ---
    pub snd: Vec<Sender>,
    pub rcv: Vec<Receiver>,
    /// The controller's view of every subflow (the connection refreshes it before each call).
    pub views: Vec<Subflow>,
    pub ctrl: Box<dyn Controller>,
    /// RACK-TLP and PRR state of each subflow with `recovery = "linux"`; empty with
    /// `"rfc6675"` (the ACK handler tests `is_empty()` to pick the rules).
    pub linux: Vec<LinuxState>,
    /// DSNs to send again on another subflow (after an RTO).
    pub reinject: VecDeque<u64>,
    pub next_dsn: u64,
    /// Highest connection-level cumulative ACK seen by the sender.
    pub data_una: u64,
    /// Right edge of the receive window as last advertised to the sender.
    pub rwnd_edge: u64,
    /// Segments the application will ever offer (`u64::MAX` for bulk; with `segmentation =
    /// "linux"` also for a file until its last byte is in a segment).
    pub total_segs: u64,
    pub app: App,
    /// `segmentation = "linux"`: where the stream was cut short, and the stream's bytes in
    /// segments so far (else None: DSN `d` starts at byte `d * mss`).
    pub cuts: Option<Box<Cuts>>,
    pub next_byte: u64,
    pub tag_key: u64,
    /// The host's send delay (`send_jitter`), drawn from the connection's own random stream.
    pub jitter: SendJitter,
    pub sched: Scheduler,
    /// Linux's send side (`scheduler = "linux"` or `send_buffer = "linux"`), else None.
    pub sq: Option<Box<SendQ>>,
    /// When the file download completed at the receiver.
    pub completion: Option<Nanos>,
    // Conservation counters (data packets only).
    pub received_packets: u64,
    pub ack_packets: u64,
    pub reinjected: u64,
    pub data: DataReceiver,
    pub mss: u32,
    pub delayed_ack: DelayedAck,
    /// `slow_start_after_idle`.
    pub idle_restart: bool,
    /// `window_arithmetic = "linux"`: each reduction leaves whole segments.
    pub whole_windows: bool,
    pub started: bool,
    /// `joins = "linux"` or `"linux_peer_first"`: until the joins begin, how long each
    /// further subflow's MP_JOIN handshake takes (two round trips of its path; 0 for the
    /// first).
    pub join_after: Option<Box<[Nanos]>>,
    /// `joins = "linux_peer_first"`: the joins begin when the application starts.
    pub joins_at_start: bool,
    /// The application still offers new data.
    pub open: bool,
    // --- read by construction, timers, sampling and output ---
    pub dropped_packets: u64,
    pub start: Nanos,
    pub stop: Option<Nanos>,
    pub name: String,
    pub kind: FlowKind,
    pub algorithm: String,
    pub path_names: Vec<String>,
    /// Delivered bytes at the previous sample (for the goodput time series).
    pub sampled_delivered: u64,
    /// The same per subflow (`data.delivered_by_subflow` at the previous sample).
    pub sampled_by_subflow: Vec<u64>,
    /// Byte counts when the application stopped (`stop`), for its rates: `(delivered, per
    /// subflow (acked, wire))`. Data sent before `stop` keeps arriving after it; counting
    /// it over `stop - start` would report more than the path can carry.
    pub at_stop: Option<(u64, Vec<(u64, u64)>)>,
}

impl Conn {
    /// Connection `f` of scenario `sc` for `seed`, its subflows on the routes of `paths` (the
    /// network's data and ACK route of each scenario path).
    pub(crate) fn new(
        sc: &Scenario,
        f: &FlowSpec,
        seed: u64,
        paths: &[Path],
    ) -> Result<Conn, SimError> {
        let k = f.paths.len();
        let ctrl = pathpool_cc::build_with_counting(&f.algorithm, &f.params, k, f.counting)
            .map_err(|e| SimError {
                message: format!("flow {:?}: {e}", f.name),
            })?;
        let mut rng = Stream::new(seed, "flow", &f.name);
        let jitter = if f.start_jitter > 0 {
            (rng.uniform() * f.start_jitter as f64) as Nanos
        } else {
            0
        };
        let start = f.start + jitter;
        // Every segment count follows the payload a full segment carries, not the MSS:
        // the receive buffer and the file are payload bytes.
        let seg = f.seg_payload();
        let cap = (f.rcv_buffer / u64::from(seg)).max(2);
        let carve = f.segmentation == Segmentation::Linux;
        let total_segs = match f.app {
            App::File(size) if !carve => file_segs(size, seg),
            _ => u64::MAX,
        };
        let tag_key = rng.next_u64();
        // With Linux's joins the further subflows take part (in the scheduler and in the
        // controller's coupled sums) only once their handshake is over.
        let joins_later = f.joins != Joins::Together && f.kind == FlowKind::Mptcp && k > 1;
        let mut data = DataReceiver::new(cap, k);
        if f.receive_window == ReceiveWindow::Linux {
            let mptcp = f.kind == FlowKind::Mptcp;
            let tune = Autotune::new(k, seg, f.mss, f.rcv_buffer, mptcp, start);
            data.tune = Some(Box::new(tune));
        }
        Ok(Conn {
            name: f.name.clone(),
            kind: f.kind,
            algorithm: f.algorithm.clone(),
            ctrl,
            views: (0..k)
                .map(|j| {
                    let mut v = Subflow::new(seg);
                    v.active = j == 0 || !joins_later;
                    v
                })
                .collect(),
            snd: f
                .paths
                .iter()
                .map(|&p| {
                    let mut s = Sender::default();
                    s.dupthresh = f.recovery == Recovery::Rfc6675;
                    s.route = paths[p].data;
                    s.mss = seg;
                    s.header = HEADER_BYTES + f.option_bytes;
                    s
                })
                .collect(),
            rcv: f
                .paths
                .iter()
                .map(|&p| {
                    let mut r = Receiver::default();
                    r.ack_route = paths[p].ack;
                    r.lx = LinuxDelack::new(seg, f.rcv_buffer, handshake_rtt(sc, p));
                    r
                })
                .collect(),
            path_names: f.paths.iter().map(|&p| sc.paths[p].name.clone()).collect(),
            mss: seg,
            app: f.app,
            total_segs,
            cuts: carve.then(Box::default),
            next_byte: 0,
            sched: Scheduler::new(f.scheduler),
            sq: (f.scheduler == SchedulerKind::Linux || f.send_buffer == SendBuffer::Linux).then(
                || {
                    let rtts: Vec<Nanos> = f.paths.iter().map(|&p| handshake_rtt(sc, p)).collect();
                    let mut q = SendQ::new(
                        f.scheduler == SchedulerKind::Linux,
                        f.send_buffer == SendBuffer::Linux,
                        f.mss,
                        &rtts,
                        f.kind == FlowKind::Tcp,
                    );
                    if let Writer::Poll { chunk } = f.writer {
                        q.poll_chunk = Some(chunk);
                    }
                    q.gso_psh = f.push_flag == PushFlag::Linux;
                    if joins_later {
                        (1..k).for_each(|i| q.absent(i));
                    }
                    Box::new(q)
                },
            ),
            delayed_ack: f.delayed_ack,
            idle_restart: f.slow_start_after_idle,
            whole_windows: f.window_arithmetic == WindowArithmetic::Linux,
            linux: match f.recovery {
                Recovery::Rfc6675 => Vec::new(),
                Recovery::Linux => vec![LinuxState::default(); k],
            },
            start,
            stop: f.stop,
            started: false,
            joins_at_start: f.joins == Joins::LinuxPeerFirst,
            join_after: joins_later
                .then(|| f.paths.iter().map(|&p| 2 * handshake_rtt(sc, p)).collect()),
            open: false,
            next_dsn: 0,
            data_una: 0,
            // The receiver's first window is known from the handshake.
            rwnd_edge: data.window_edge(),
            reinject: Default::default(),
            reinjected: 0,
            data,
            tag_key,
            jitter: SendJitter {
                max: f.send_jitter,
                rng,
            },
            completion: None,
            received_packets: 0,
            dropped_packets: 0,
            ack_packets: 0,
            sampled_delivered: 0,
            sampled_by_subflow: vec![0; f.paths.len()],
            at_stop: None,
        })
    }

    /// Payload bytes of the segment at `dsn`.
    #[inline]
    pub fn seg_len(&self, dsn: u64) -> u32 {
        payload_at(self.cuts.as_deref(), self.app, self.mss, dsn)
    }

    /// The bytes the application offers in all (`u64::MAX` for bulk).
    pub fn total_bytes(&self) -> u64 {
        match self.app {
            App::File(size) => size,
            App::Bulk => u64::MAX,
        }
    }

    /// Room in subflow `i`'s window for one more segment.
    #[inline]
    pub fn has_room(&self, i: usize) -> bool {
        self.snd[i].has_room(self.views[i].cwnd)
    }

    /// Is there a DSN the connection may send now? (reinjections first; with Linux's send
    /// side, only what the writer has written)
    pub fn next_data(&mut self) -> Option<(u64, bool)> {
        while let Some(&d) = self.reinject.front() {
            if d < self.data_una {
                self.reinject.pop_front();
            } else {
                return Some((d, true));
            }
        }
        let written = match &self.sq {
            None => self.open && self.next_dsn < self.total_segs,
            Some(q) => self.next_dsn < q.write_end,
        };
        if written && self.next_dsn < self.rwnd_edge {
            return Some((self.next_dsn, false));
        }
        None
    }

    /// Accumulate the time integral of subflow `i`'s window up to now (before it changes).
    #[inline]
    pub(crate) fn account_cwnd(conn: &mut Conn, i: usize, now: Nanos) {
        let s = &mut conn.snd[i];
        s.cwnd_integral += conn.views[i].cwnd * (now - s.cwnd_since) as f64;
        s.cwnd_since = now;
    }

    /// Subflow `i` enters loss recovery (RFC 6675 (4) or Linux's `tcp_enter_recovery`): the
    /// recovery point, the loss event, and the window integral up to the reduction that the
    /// caller then lets the controller make.
    #[inline]
    pub(crate) fn begin_recovery(conn: &mut Conn, i: usize, now: Nanos) {
        let s = &mut conn.snd[i];
        s.in_recovery = true;
        s.recovery_point = s.snd_nxt;
        let v = &mut conn.views[i];
        v.in_recovery = true;
        v.loss_events += 1;
        v.in_flight = s.pipe;
        Self::account_cwnd(conn, i, now);
    }

    /// `tcp_enter_recovery` + `tcp_init_cwnd_reduction`: the controller sets `ssthresh`; PRR
    /// then sets the window ACK by ACK from the window before the reduction.
    fn linux_enter_recovery(conn: &mut Conn, i: usize, now: Nanos) {
        Self::begin_recovery(conn, i, now);
        conn.linux[i].prr_init(conn.views[i].cwnd);
        conn.ctrl.on_congestion_event(&mut conn.views, i, now);
        Self::whole_segments(conn, i);
    }

    /// After the controller's reduction of subflow `i` (a loss event or an RTO), with
    /// `window_arithmetic = "linux"`: ssthresh and the window in whole segments and no progress
    /// towards the next one, as Linux 6.18 keeps them (`ca_ops->ssthresh()` returns a `u32`;
    /// `tcp_init_cwnd_reduction()` and `tcp_enter_loss()` zero `snd_cwnd_cnt`). The
    /// controller's real-valued window stands for `snd_cwnd + snd_cwnd_cnt / snd_cwnd`, so
    /// dropping its fraction is zeroing `snd_cwnd_cnt`.
    #[inline]
    pub(crate) fn whole_segments(conn: &mut Conn, i: usize) {
        if conn.whole_windows {
            let v = &mut conn.views[i];
            v.ssthresh = v.ssthresh.floor().max(1.0);
            v.cwnd = v.cwnd.floor().max(MIN_CWND);
        }
    }

    /// Window growth on an ACK outside recovery, only while the window limits the sender
    /// (Linux: every `cong_avoid` hook returns early unless `tcp_is_cwnd_limited`; RFC 9438
    /// Section 4.6). Otherwise the controller still sees the ACK, with nothing to grow on
    /// (`acked_bytes = 0` changes no window), so bookkeeping read from the views keeps running
    /// (OLIA's byte position: v0.95 sets `mptcp_loss3` before its own cwnd-limited test).
    #[inline]
    pub(crate) fn grow(
        conn: &mut Conn,
        i: usize,
        eff: &AckEffect,
        rtt: Option<Nanos>,
        owd: Nanos,
        now: Nanos,
    ) {
        let v = &conn.views[i];
        let acked_bytes = if conn.snd[i].is_cwnd_limited(v.cwnd, v.ssthresh) {
            eff.bytes
        } else {
            0
        };
        Self::account_cwnd(conn, i, now);
        let ack = Ack {
            acked_bytes,
            rtt_sample: rtt,
            one_way_delay: Some(owd),
            now,
        };
        conn.ctrl.on_ack(&mut conn.views, i, &ack);
    }

    /// `tcp_slow_start_after_idle_check` (include/net/tcp.h, Linux 6.18), as new data is put on
    /// subflow `i` (`tcp_skb_entail`): with nothing outstanding and no data sent for longer
    /// than the RTO, `tcp_cwnd_restart`.
    #[inline]
    pub(crate) fn idle_check(&mut self, i: usize, now: Nanos) {
        let s = &self.snd[i];
        if !self.idle_restart || s.outstanding() > 0 || s.sent == 0 {
            return;
        }
        let idle = now - s.lsndtime;
        if idle <= s.rto {
            return;
        }
        Self::account_cwnd(self, i, now);
        let v = &mut self.views[i];
        let (cwnd, ssthresh) =
            cwnd_restart(v.cwnd, v.ssthresh, v.in_recovery, idle, self.snd[i].rto);
        (v.cwnd, v.ssthresh) = (cwnd, ssthresh);
        self.snd[i].idle_restarts += 1;
    }

    #[inline]
    pub(crate) fn arm_rto(q: &mut EventQueue, s: &mut Sender, c: usize, i: usize) {
        if s.rto_deadline != 0 && s.rto_event > s.rto_deadline {
            s.rto_event = s.rto_deadline;
            q.push(s.rto_deadline, Ev::Rto(c as u32, i as u16));
        }
    }
}

/// The RTT of scenario path `p`'s handshake: the propagation delays there and back (a SYN is
/// small enough that serialisation is left out).
fn handshake_rtt(sc: &Scenario, p: usize) -> Nanos {
    let path = &sc.paths[p];
    let there: Nanos = path.links.iter().map(|&l| sc.links[l].delay).sum();
    let back = match &path.ack {
        AckRoute::Delay(d) => *d,
        AckRoute::Links(ls) => ls.iter().map(|&l| sc.links[l].delay).sum(),
    };
    there + back
}

/// `tcp_cwnd_restart` (net/ipv4/tcp_output.c, Linux 6.18) after `idle` ns without sending, with
/// an RTO of `rto`: ssthresh becomes `tcp_current_ssthresh` (unchanged during a reduction, else
/// at least `(cwnd >> 1) + (cwnd >> 2)`); the window halves once per RTO of idle beyond the
/// first while above the restart window `min(TCP_INIT_CWND, cwnd)`, and never goes below it.
/// Linux's windows are integers: the controller's `cwnd` is taken as its integer part.
pub fn cwnd_restart(
    cwnd: f64,
    ssthresh: f64,
    in_reduction: bool,
    idle: Nanos,
    rto: Nanos,
) -> (f64, f64) {
    let w = if cwnd.is_finite() && cwnd >= 1.0 {
        cwnd as u64
    } else {
        1
    };
    let ssthresh = if in_reduction {
        ssthresh
    } else {
        ssthresh.max(((w >> 1) + (w >> 2)) as f64)
    };
    let restart = w.min(10);
    let mut w = w;
    let mut delta = idle as i128;
    loop {
        delta -= i128::from(rto);
        if delta <= 0 || w <= restart {
            break;
        }
        w >>= 1;
    }
    (w.max(restart) as f64, ssthresh)
}

/// Scenarios the connection's own tests share.
#[cfg(test)]
pub(crate) mod testing {
    use crate::{Scenario, Simulation};

    /// One Reno TCP flow `t` over one link of `rate`, one-way `delay` and `buffer`, with the
    /// flow's further `fields` (TOML lines), ten seconds long, built at time 0 (seed 1).
    pub(crate) fn one_tcp_flow(rate: &str, delay: &str, buffer: &str, fields: &str) -> Simulation {
        let text = format!(
            r#"
            name = "one"
            duration = "10s"
            [[links]]
            name = "a"
            rate = "{rate}"
            delay = "{delay}"
            buffer = "{buffer}"
            [[paths]]
            name = "pa"
            links = ["a"]
            [[flows]]
            name = "t"
            kind = "tcp"
            path = "pa"
            algorithm = "reno"
            {fields}
        "#
        );
        let sc = Scenario::from_toml_str(&text, "<test>").unwrap();
        Simulation::new(&sc, 1).unwrap()
    }
}

#[cfg(test)]
mod window_arithmetic_tests {
    use super::Conn;
    use crate::Simulation;

    /// One Reno flow with Linux recovery, one second in (well into congestion avoidance).
    fn reno(arithmetic: &str) -> Simulation {
        let fields = format!("recovery = \"linux\"\nwindow_arithmetic = \"{arithmetic}\"");
        let mut sim = super::testing::one_tcp_flow("10Mbps", "10ms", "20pkt", &fields);
        sim.run_until(1_000_000_000);
        sim
    }

    /// Reno halves 9.7 segments to 4.85 (`tcp_reno_ssthresh` on the real-valued window); Linux
    /// keeps 4 whole segments, in ssthresh and in the window the controller sets, on entering
    /// recovery and on an RTO (whose window is then 1 in both).
    #[test]
    fn a_reduction_leaves_whole_segments_only_with_linux_arithmetic() {
        for (arithmetic, ssthresh) in [("real", 4.85), ("linux", 4.0)] {
            let mut sim = reno(arithmetic);
            let (c, net) = sim.world.conn0();
            c.views[0].cwnd = 9.7;
            Conn::linux_enter_recovery(c, 0, net.now);
            let v = &c.views[0];
            assert_eq!((v.ssthresh, v.cwnd), (ssthresh, ssthresh), "{arithmetic}");

            let mut sim = reno(arithmetic);
            let (c, net, segs) = sim.world.conn0_segs();
            let now = net.now;
            c.views[0].cwnd = 9.7;
            c.snd[0].in_recovery = false;
            c.snd[0].in_loss = false;
            assert!(c.snd[0].outstanding() > 0);
            c.snd[0].rto_deadline = now;
            c.snd[0].rto_event = now;
            c.linux[0].timer = super::recovery::Timer::Rto;
            c.on_rto_event(net, segs, 0, 0);
            let v = &c.views[0];
            assert_eq!((v.ssthresh, v.cwnd), (ssthresh, 1.0), "{arithmetic} RTO");
        }
    }
}

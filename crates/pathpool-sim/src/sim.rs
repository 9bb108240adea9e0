//! The world: builds links, routes and connections from a [`Scenario`], runs the event loop, and
//! turns the final state into a [`RunOutput`].

use std::fmt;

use pathpool_cc::{Ack, Subflow, MIN_CWND};

use crate::config::{AckRoute, App, FlowKind, Scenario};
use crate::event::{Ev, EventQueue};
use crate::link::Link;
use crate::metrics::jain_index;
use crate::mptcp::{content_tag, file_segs, seg_len, Conn, DataReceiver};
use crate::output::{FlowRecord, LinkRecord, RunOutput, RunStats, Series, SubflowRecord};
use crate::packet::{Packet, Pool, ACK_BYTES, HEADER_BYTES, MAX_SACK_BLOCKS};
use crate::rng::Stream;
use crate::tcp::{Arrival, Receiver, Sender, DELACK_TIMEOUT, DUP_THRESH, REINJECTED, SACKED};
use crate::time::{secs, Nanos};

/// A run that could not be carried out.
#[derive(Clone, Debug, PartialEq)]
pub struct SimError {
    pub message: String,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SimError {}

/// Links a packet crosses in order; a route without links is a fixed delay.
#[derive(Debug)]
struct Route {
    links: Vec<u32>,
    delay: Nanos,
    /// Event-queue lane of a route without links (its arrivals are in send order).
    lane: u32,
}

const NO_EVENT: Nanos = Nanos::MAX;

/// Rate-based multipath flows (`kind = "rate"`); a child module so it can extend `World`.
#[path = "rate.rs"]
pub(crate) mod rate;

/// Progress is reported about this many times per run.
const PROGRESS_STEPS: u64 = 200;

pub(crate) struct World {
    now: Nanos,
    end: Nanos,
    seed: u64,
    q: EventQueue,
    pool: Pool,
    links: Vec<Link>,
    routes: Vec<Route>,
    conns: Vec<Conn>,
    sample_interval: Nanos,
    series: Series,
    events: u64,
    data_packets: u64,
    ack_packets: u64,
    rate_flows: Vec<rate::RateFlow>,
    /// Simulated time of the next progress report.
    next_report: Nanos,
}

impl World {
    pub(crate) fn build(sc: &Scenario, seed: u64) -> Result<World, SimError> {
        let links: Vec<Link> = sc
            .links
            .iter()
            .map(|l| {
                let rng = Stream::new(seed, "link", &l.name);
                Link::new(
                    l.name.clone(),
                    l.rate_bps,
                    l.delay,
                    l.buffer,
                    l.loss,
                    l.gilbert,
                    l.reorder,
                    rng,
                    Stream::new(seed, "link-reorder", &l.name),
                )
            })
            .collect();
        let mut routes = Vec::with_capacity(sc.paths.len() * 2);
        for p in &sc.paths {
            let lane = (links.len() + routes.len()) as u32;
            routes.push(Route {
                links: p.links.iter().map(|&l| l as u32).collect(),
                delay: 0,
                lane,
            });
            let lane = lane + 1;
            routes.push(match &p.ack {
                AckRoute::Delay(d) => Route {
                    links: Vec::new(),
                    delay: *d,
                    lane,
                },
                AckRoute::Links(ls) => Route {
                    links: ls.iter().map(|&l| l as u32).collect(),
                    delay: 0,
                    lane,
                },
            });
        }
        // Event lanes: the far end of each link, then each route without links, then each
        // subflow's host send queue (send jitter).
        let n_subflows: usize = sc.flows.iter().map(|f| f.paths.len()).sum();
        let mut lane = (links.len() + routes.len()) as u32;
        let mut q = EventQueue::new(lane as usize + n_subflows, 1 << 12);
        let mut conns = Vec::with_capacity(sc.flows.len());
        for f in sc.flows.iter().filter(|f| f.kind != FlowKind::Rate) {
            let c = conns.len();
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
            let cap = (f.rcv_buffer / u64::from(f.mss)).max(2);
            let total_segs = match f.app {
                App::Bulk => u64::MAX,
                App::File(size) => file_segs(size, f.mss),
            };
            let lane0 = lane;
            lane += k as u32;
            conns.push(Conn {
                name: f.name.clone(),
                kind: f.kind,
                algorithm: f.algorithm.clone(),
                ctrl,
                views: (0..k).map(|_| Subflow::new(f.mss)).collect(),
                snd: (0..k).map(|_| Sender::default()).collect(),
                rcv: (0..k).map(|_| Receiver::default()).collect(),
                data_route: f.paths.iter().map(|&p| (2 * p) as u32).collect(),
                ack_route: f.paths.iter().map(|&p| (2 * p + 1) as u32).collect(),
                path_names: f.paths.iter().map(|&p| sc.paths[p].name.clone()).collect(),
                mss: f.mss,
                app: f.app,
                total_segs,
                scheduler: f.scheduler,
                rr_next: 0,
                delayed_ack: f.delayed_ack,
                start,
                stop: f.stop,
                started: false,
                open: false,
                next_dsn: 0,
                data_una: 0,
                // The receiver's buffer is known from the handshake.
                rwnd_edge: cap,
                reinject: Default::default(),
                reinjected: 0,
                data: DataReceiver::new(cap),
                tag_key: rng.next_u64(),
                send_jitter: f.send_jitter,
                lane0,
                rng,
                completion: None,
                received_packets: 0,
                dropped_packets: 0,
                ack_packets: 0,
                sampled_delivered: 0,
            });
            if start <= sc.duration {
                q.push(start, Ev::Start(c as u32));
            }
            if let Some(s) = f.stop {
                if s.max(start) <= sc.duration {
                    q.push(s.max(start), Ev::Stop(c as u32));
                }
            }
        }
        let rate_flows = sc
            .flows
            .iter()
            .filter(|f| f.kind == FlowKind::Rate)
            .map(|f| rate::RateFlow::build(sc, f, seed, &links, &routes))
            .collect::<Result<Vec<_>, _>>()?;
        rate::schedule_rate_flows(&rate_flows, &mut q, sc.duration);
        if sc.sample_interval > 0 && sc.sample_interval <= sc.duration {
            q.push(sc.sample_interval, Ev::Sample);
        }
        Ok(World {
            now: 0,
            end: sc.duration,
            seed,
            q,
            pool: Pool::with_capacity(1 << 14),
            links,
            routes,
            conns,
            sample_interval: sc.sample_interval,
            series: Series::default(),
            events: 0,
            data_packets: 0,
            ack_packets: 0,
            rate_flows,
            next_report: (sc.duration / PROGRESS_STEPS).max(1),
        })
    }

    /// Process every event at or before `t` (clipped to the end of the run), then set the clock
    /// to `t`. Splitting a run into several calls gives exactly the run of a single call: events
    /// are processed in the same (time, scheduling order) either way.
    pub(crate) fn run_until(&mut self, t: Nanos, progress: &mut dyn FnMut(f64)) {
        let until = t.min(self.end);
        if until < self.now {
            return;
        }
        let step = (self.end / PROGRESS_STEPS).max(1);
        while let Some((t, ev)) = self.q.pop_until(until) {
            self.now = t;
            self.events += 1;
            match ev {
                Ev::Arrive(pid) => self.arrive(pid),
                Ev::Rto(c, i) => self.on_rto_event(c as usize, i as usize),
                Ev::DelAck(c, j) => self.on_delack_event(c as usize, j as usize),
                Ev::Start(c) => self.on_start(c as usize),
                Ev::Stop(c) => self.conns[c as usize].open = false,
                Ev::Sample => self.sample(),
                Ev::Rate(f, code) => self.rate_event(f, code),
            }
            if t >= self.next_report {
                progress((t as f64 / self.end as f64).min(1.0));
                self.next_report = (t / step + 1) * step;
            }
        }
        self.now = until;
        if until == self.end {
            progress(1.0);
        }
    }

    pub(crate) fn now(&self) -> Nanos {
        self.now
    }

    pub(crate) fn end(&self) -> Nanos {
        self.end
    }

    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// TCP/MPTCP data packets sent so far.
    pub(crate) fn data_packets(&self) -> u64 {
        self.data_packets
    }

    // --- packets through routes -----------------------------------------------------------

    /// Put a packet on its route at `now`.
    #[inline]
    fn inject(&mut self, p: Packet) {
        let route = &self.routes[p.route as usize];
        let (no_links, delay, lane) = (route.links.is_empty(), route.delay, route.lane);
        let pid = self.pool.alloc(p);
        if no_links {
            self.q.push_lane(lane, self.now + delay, pid);
        } else {
            self.arrive(pid);
        }
    }

    /// A packet reaches hop `hop` of its route: enter that link, or the endpoint.
    #[inline]
    fn arrive(&mut self, pid: u32) {
        let p = self.pool.get(pid);
        let route = &self.routes[p.route as usize];
        let hop = p.hop as usize;
        if hop < route.links.len() {
            let l = route.links[hop] as usize;
            let wire = p.wire;
            match self.links[l].offer(self.now, wire) {
                Ok(at) => {
                    self.pool.get_mut(pid).hop += 1;
                    let extra = self.links[l].reorder_extra();
                    if extra == 0 {
                        self.q.push_lane(l as u32, at, pid);
                    } else {
                        // Overtaken by later packets: off the link's FIFO lane, into the heap.
                        self.q.push(at + extra, Ev::Arrive(pid));
                    }
                }
                Err(_) => {
                    let p = self.pool.get(pid);
                    if p.conn & rate::RATE_FLAG != 0 {
                        let p = *p;
                        self.rate_drop(&p);
                    } else if !p.is_ack {
                        self.conns[p.conn as usize].dropped_packets += 1;
                    }
                    self.pool.free(pid);
                }
            }
        } else if p.conn & rate::RATE_FLAG != 0 {
            let p = *p;
            self.pool.free(pid);
            self.rate_endpoint(&p);
        } else if p.is_ack {
            self.on_ack(pid);
        } else {
            self.on_data(pid);
        }
    }

    // --- receiver ---------------------------------------------------------------------------

    /// Data packet `pid` reached its receiver (which frees it).
    fn on_data(&mut self, pid: u32) {
        let now = self.now;
        // Read the few fields needed rather than copying the whole packet out of the slab.
        let p = self.pool.get(pid);
        let (c, j, seq, dsn, len, tag, ts) = (
            p.conn as usize,
            p.sub as usize,
            p.seq,
            p.dsn,
            p.len,
            p.tag,
            p.ts,
        );
        self.pool.free(pid);
        let conn = &mut self.conns[c];
        conn.received_packets += 1;
        let arrival = conn.rcv[j].on_segment(seq);
        let (app, mss, key) = (conn.app, conn.mss, conn.tag_key);
        conn.data.on_segment(dsn, len, tag, now, |d| {
            (seg_len(app, mss, d), content_tag(key, d))
        });
        if conn.completion.is_none() && conn.data.rcv_nxt >= conn.total_segs {
            conn.completion = Some(now);
        }
        let delayed = conn.delayed_ack;
        let r = &mut conn.rcv[j];
        r.last_ts = ts;
        r.last_owd = now - ts;
        // RFC 5681 section 4.2: ACK at once for out-of-order or gap-filling segments; otherwise
        // (with delayed ACKs) every second full segment or after the delayed-ACK timeout.
        if !delayed || arrival != Arrival::InOrder {
            self.send_ack(c, j);
            return;
        }
        r.pending += 1;
        if r.pending >= 2 {
            self.send_ack(c, j);
        } else {
            r.delack_deadline = now + DELACK_TIMEOUT;
            if r.delack_event == NO_EVENT {
                r.delack_event = r.delack_deadline;
                self.q
                    .push(r.delack_deadline, Ev::DelAck(c as u32, j as u16));
            }
        }
    }

    fn send_ack(&mut self, c: usize, j: usize) {
        let conn = &mut self.conns[c];
        let r = &mut conn.rcv[j];
        let mut sacks = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let n = r.sack_blocks(&mut sacks);
        r.pending = 0;
        r.delack_deadline = 0;
        let pkt = Packet {
            conn: c as u32,
            sub: j as u16,
            is_ack: true,
            route: conn.ack_route[j],
            hop: 0,
            wire: ACK_BYTES,
            ts: r.last_ts,
            owd: r.last_owd,
            cum_ack: r.rcv_nxt,
            sacks,
            n_sacks: n,
            data_ack: conn.data.rcv_nxt,
            rwnd_edge: conn.data.window_edge(),
            ..Packet::default()
        };
        conn.ack_packets += 1;
        self.ack_packets += 1;
        self.inject(pkt);
    }

    fn on_delack_event(&mut self, c: usize, j: usize) {
        let now = self.now;
        let r = &mut self.conns[c].rcv[j];
        if r.delack_event != now {
            return;
        }
        r.delack_event = NO_EVENT;
        if r.delack_deadline == 0 || r.pending == 0 {
            return;
        }
        if now < r.delack_deadline {
            r.delack_event = r.delack_deadline;
            self.q
                .push(r.delack_deadline, Ev::DelAck(c as u32, j as u16));
            return;
        }
        self.send_ack(c, j);
    }

    // --- sender -----------------------------------------------------------------------------

    fn on_start(&mut self, c: usize) {
        let now = self.now;
        let conn = &mut self.conns[c];
        conn.started = true;
        conn.open = conn.stop.is_none_or(|s| s > now);
        for s in conn.snd.iter_mut() {
            s.cwnd_since = now;
        }
        self.try_send(c);
    }

    /// Accumulate the time integral of subflow `i`'s window up to now (before it changes).
    #[inline]
    fn account_cwnd(conn: &mut Conn, i: usize, now: Nanos) {
        let s = &mut conn.snd[i];
        s.cwnd_integral += conn.views[i].cwnd * (now - s.cwnd_since) as f64;
        s.cwnd_since = now;
    }

    #[inline]
    fn arm_rto(q: &mut EventQueue, s: &mut Sender, c: usize, i: usize) {
        if s.rto_deadline != 0 && s.rto_event > s.rto_deadline {
            s.rto_event = s.rto_deadline;
            q.push(s.rto_deadline, Ev::Rto(c as u32, i as u16));
        }
    }

    /// ACK `pid` reached its sender (which frees it).
    fn on_ack(&mut self, pid: u32) {
        let now = self.now;
        let p = self.pool.get(pid);
        let (c, i) = (p.conn as usize, p.sub as usize);
        let (ts, owd) = (p.ts, p.owd);
        let conn = &mut self.conns[c];
        conn.data_una = conn.data_una.max(p.data_ack);
        conn.rwnd_edge = conn.rwnd_edge.max(p.rwnd_edge);
        let s = &mut conn.snd[i];
        let eff = s.on_ack(p.cum_ack, &p.sacks[..p.n_sacks as usize]);
        // Nothing below allocates a packet before the slot is no longer read.
        self.pool.free(pid);
        // RFC 6675 section 2: a duplicate ACK carries SACK information for new data and does
        // not advance the cumulative point.
        if eff.advanced {
            s.dupacks = 0;
        } else if eff.new_sack {
            s.dupacks += 1;
        }
        // The estimator takes Linux's sample (Karn's rule, then SACK, then the echoed
        // timestamp); the controller and the mean-RTT output take the echoed timestamp of the
        // segment that triggered the ACK, unambiguous even for a retransmission (RFC 7323).
        if let Some(us) = Sender::estimator_sample(&eff, now, ts) {
            s.rtt_estimator(us);
        }
        let mut rtt = None;
        if eff.segs > 0 {
            let r = now - ts;
            s.record_rtt(r);
            rtt = Some(r);
        }
        if eff.advanced {
            // RFC 6298 (5.2)/(5.3): stop the timer when all is acknowledged, else restart it.
            s.rto_deadline = if s.outstanding() > 0 { now + s.rto } else { 0 };
            // Progress ends a run of timeouts (Linux clears `icsk_retransmits` in `tcp_ack`).
            s.rto_backoffs = 0;
        }
        let v = &mut conn.views[i];
        v.delivered += u64::from(eff.segs);
        v.lost += u64::from(eff.newly_lost);
        if let Some(r) = rtt {
            v.latest_rtt = r;
            v.srtt = s.srtt_ns().max(1);
            v.min_rtt = if v.min_rtt == 0 { r } else { v.min_rtt.min(r) };
        }
        v.in_flight = s.pipe;

        if s.in_recovery && s.snd_una >= s.recovery_point {
            s.in_recovery = false;
            v.in_recovery = false;
            Self::account_cwnd(conn, i, now);
            conn.ctrl.on_recovery_exit(&mut conn.views, i, now);
        }
        let s = &mut conn.snd[i];
        if s.in_loss && s.snd_una >= s.loss_point {
            s.in_loss = false;
        }
        if !s.in_recovery && !s.in_loss && (s.dupacks >= DUP_THRESH || s.first_is_lost()) {
            // RFC 6675 section 5 (4): enter loss recovery once per window.
            if s.mark_first_lost() {
                conn.views[i].lost += 1;
            }
            s.in_recovery = true;
            s.recovery_point = s.snd_nxt;
            let v = &mut conn.views[i];
            v.in_recovery = true;
            v.loss_events += 1;
            v.in_flight = s.pipe;
            Self::account_cwnd(conn, i, now);
            conn.ctrl.on_congestion_event(&mut conn.views, i, now);
            // (4.3): retransmit the first segment deemed lost whatever pipe says.
            if let Some(seq) = conn.snd[i].next_retx() {
                self.send_segment(c, i, seq, None);
            }
        } else if eff.segs > 0 && !s.in_recovery {
            // Window growth only while the window limits the sender (Linux: every `cong_avoid`
            // hook returns early unless `tcp_is_cwnd_limited`; RFC 9438 Section 4.6). Otherwise
            // the controller still sees the ACK, with nothing to grow on (`acked_bytes = 0`
            // changes no window), so bookkeeping read from the views keeps running (OLIA's
            // byte position: v0.95 sets `mptcp_loss3` before its own cwnd-limited test).
            let v = &conn.views[i];
            let acked_bytes = if s.is_cwnd_limited(v.cwnd, v.ssthresh) {
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
        let conn = &mut self.conns[c];
        Self::arm_rto(&mut self.q, &mut conn.snd[i], c, i);
        self.try_send(c);
    }

    fn on_rto_event(&mut self, c: usize, i: usize) {
        let now = self.now;
        let conn = &mut self.conns[c];
        let s = &mut conn.snd[i];
        if s.rto_event != now {
            return; // superseded by an earlier-scheduled timer event
        }
        s.rto_event = NO_EVENT;
        if s.rto_deadline == 0 {
            return;
        }
        if now < s.rto_deadline {
            Self::arm_rto(&mut self.q, s, c, i);
            return;
        }
        if s.outstanding() == 0 {
            s.rto_deadline = 0;
            return;
        }
        // RFC 6298 (5.4)-(5.6) and Linux tcp_enter_loss. ssthresh is reduced only if it has not
        // been reduced in this window already (RFC 5681 Section 3.1: "ssthresh is held
        // constant" on a repeated timeout of the same segment); Linux's test is
        //   state <= Disorder || snd_una >= high_seq || (state == Loss && icsk_retransmits == 0)
        // i.e. not during fast recovery (which reduced it) and not on a re-expiry with no
        // cumulative progress since the previous one. (`in_recovery` / `in_loss` are cleared
        // once `snd_una` passes their high_seq, so they stand for "before high_seq".)
        let reduce = !(s.in_recovery || (s.in_loss && s.rto_backoffs > 0));
        s.rto_count += 1;
        s.rto_backoffs += 1;
        let newly = s.mark_all_lost();
        s.in_recovery = false;
        s.in_loss = true;
        s.loss_point = s.snd_nxt;
        let v = &mut conn.views[i];
        v.lost += u64::from(newly);
        v.in_recovery = false;
        v.in_flight = s.pipe;
        Self::account_cwnd(conn, i, now);
        if reduce {
            conn.views[i].loss_events += 1;
            conn.ctrl.on_rto(&mut conn.views, i, now);
        } else {
            // Linux: `snd_cwnd = packets_in_flight + 1`, and every segment is now lost.
            conn.views[i].cwnd = MIN_CWND;
        }
        let s = &mut conn.snd[i];
        s.backoff();
        s.rto_deadline = now + s.rto;
        Self::arm_rto(&mut self.q, s, c, i);
        // Reinjection: hand this subflow's data that the connection has not seen acknowledged
        // to the other subflows (Linux MPTCP `mptcp_reinject_data` on RTO).
        if conn.snd.len() > 1 {
            let s = &mut conn.snd[i];
            for idx in 0..s.sb.len() {
                let seg = s.sb[idx];
                if seg.flags & (SACKED | REINJECTED) == 0 && seg.dsn >= conn.data_una {
                    s.sb[idx].flags |= REINJECTED;
                    conn.reinject.push_back(seg.dsn);
                }
            }
        }
        self.try_send(c);
    }

    /// Put segment `seq` of subflow `i` on the wire: a new segment carrying `new = (dsn, len)`
    /// (just pushed to the scoreboard), or a retransmission if `new` is `None`.
    fn send_segment(&mut self, c: usize, i: usize, seq: u64, new: Option<(u64, u32)>) {
        let now = self.now;
        let conn = &mut self.conns[c];
        let s = &mut conn.snd[i];
        let (dsn, len) = match new {
            // Not read back from the scoreboard: its slot may be a cold line.
            Some(dl) => dl,
            None => {
                s.mark_retransmitted(seq, now);
                s.retransmitted += 1;
                let seg = s.seg(seq);
                (seg.dsn, seg.len)
            }
        };
        let wire = len + HEADER_BYTES;
        s.sent += 1;
        s.sent_wire_bytes += u64::from(wire);
        // RFC 6298 (5.1); Linux also restarts the timer when it retransmits the first
        // outstanding segment (`tcp_xmit_retransmit_queue`, net/ipv4/tcp_output.c: `skb ==
        // rtx_head` sets `rearm_timer`), so a fast retransmit gets a full RTO to be answered.
        if s.rto_deadline == 0 || (new.is_none() && seq == s.snd_una) {
            s.rto_deadline = now + s.rto;
        }
        Self::arm_rto(&mut self.q, s, c, i);
        conn.views[i].in_flight = s.pipe;
        let pkt = Packet {
            conn: c as u32,
            sub: i as u16,
            is_ack: false,
            route: conn.data_route[i],
            hop: 0,
            wire,
            seq,
            dsn,
            len,
            tag: content_tag(conn.tag_key, dsn),
            ts: now,
            ..Packet::default()
        };
        self.data_packets += 1;
        if conn.send_jitter > 0 {
            let d = (conn.rng.uniform() * conn.send_jitter as f64) as Nanos;
            let s = &mut conn.snd[i];
            let at = (now + d).max(s.tx_clock);
            s.tx_clock = at;
            let pid = self.pool.alloc(pkt);
            self.q.push_lane(conn.lane0 + i as u32, at, pid);
        } else {
            self.inject(pkt);
        }
    }

    /// Send whatever the windows allow: each subflow's retransmissions first (RFC 6675 NextSeg
    /// rule 1), then new data (rule 2) through the scheduler.
    fn try_send(&mut self, c: usize) {
        if !self.conns[c].started {
            return;
        }
        let now = self.now;
        let k = self.conns[c].snd.len();
        for i in 0..k {
            loop {
                let conn = &mut self.conns[c];
                if !conn.has_room(i) {
                    break;
                }
                match conn.snd[i].next_retx() {
                    Some(seq) => self.send_segment(c, i, seq, None),
                    None => break,
                }
            }
        }
        // Did data wait for room in a window (rather than the window for data)?
        let mut blocked = false;
        loop {
            let conn = &mut self.conns[c];
            let Some((dsn, reinjection)) = conn.next_data() else {
                break;
            };
            let Some(i) = conn.pick_subflow() else {
                blocked = true;
                break;
            };
            if reinjection {
                conn.reinject.pop_front();
                conn.reinjected += 1;
            } else {
                conn.next_dsn += 1;
            }
            let len = conn.seg_len(dsn);
            let seq = conn.snd[i].push_new(dsn, len, now);
            conn.snd[i].sent_in_pass = true;
            self.send_segment(c, i, seq, Some((dsn, len)));
        }
        // Linux `tcp_cwnd_validate` after a write pass, per subflow as v0.95's
        // `mptcp_write_xmit` does: for each subflow that sent new data, and (as a single-path
        // `tcp_write_xmit` does when its window test fails) each one whose full window held
        // back waiting data. The flag says whether the window was full (`pipe >= cwnd`).
        let conn = &mut self.conns[c];
        for i in 0..k {
            let full = !conn.has_room(i);
            let waited = blocked && full && conn.views[i].active && !(k > 1 && conn.snd[i].in_loss);
            let s = &mut conn.snd[i];
            if std::mem::take(&mut s.sent_in_pass) || waited {
                s.cwnd_validate(full);
            }
        }
    }

    // --- metrics ----------------------------------------------------------------------------

    fn sample(&mut self) {
        let now = self.now;
        let t = secs(now);
        let dt = secs(self.sample_interval);
        for conn in self.conns.iter_mut() {
            if !conn.started {
                continue;
            }
            let d = conn.data.delivered_bytes - conn.sampled_delivered;
            conn.sampled_delivered = conn.data.delivered_bytes;
            self.series.push(
                self.seed,
                t,
                "flow",
                &conn.name,
                "goodput_bps",
                d as f64 * 8.0 / dt,
            );
            for (i, v) in conn.views.iter().enumerate() {
                let id = format!("{}/{}", conn.name, i);
                self.series
                    .push(self.seed, t, "subflow", &id, "cwnd", v.cwnd);
                self.series
                    .push(self.seed, t, "subflow", &id, "srtt_s", secs(v.srtt));
                self.series.push(
                    self.seed,
                    t,
                    "subflow",
                    &id,
                    "in_flight",
                    f64::from(v.in_flight),
                );
            }
        }
        self.rate_sample(t, dt);
        for l in self.links.iter_mut() {
            let qb = l.queue_bytes(now);
            self.series
                .push(self.seed, t, "link", &l.name, "queue_bytes", qb as f64);
        }
        let next = now + self.sample_interval;
        if next <= self.end {
            self.q.push(next, Ev::Sample);
        }
    }

    pub(crate) fn finish(mut self, wall_s: f64) -> RunOutput {
        let end = self.end;
        // Data packets still travelling, per connection: every live packet has exactly one
        // pending arrival event.
        let mut in_flight = vec![0u64; self.conns.len()];
        let mut live = 0u64;
        for ev in self.q.pending() {
            if let Ev::Arrive(pid) = ev {
                live += 1;
                let p = self.pool.get(pid);
                if !p.is_ack && p.conn & rate::RATE_FLAG == 0 {
                    in_flight[p.conn as usize] += 1;
                }
            }
        }
        debug_assert_eq!(live as usize, self.pool.live());
        let mut out = RunOutput::default();
        for (c, conn) in self.conns.iter_mut().enumerate() {
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
                    Self::account_cwnd(conn, i, end_t);
                }
            }
            let sent: u64 = conn.snd.iter().map(|s| s.sent).sum();
            let wire: u64 = conn.snd.iter().map(|s| s.sent_wire_bytes).sum();
            out.flows.push(FlowRecord {
                seed: self.seed,
                flow: conn.name.clone(),
                kind: conn.kind.as_str().to_string(),
                algorithm: conn.algorithm.clone(),
                n_subflows: conn.snd.len() as u32,
                start_s: secs(start),
                end_s: secs(end_t),
                delivered_bytes: conn.data.delivered_bytes,
                goodput_bps: per_s(conn.data.delivered_bytes),
                throughput_bps: per_s(wire),
                sent_packets: sent,
                retransmitted_packets: conn.snd.iter().map(|s| s.retransmitted).sum(),
                lost_packets: conn.views.iter().map(|v| v.lost).sum(),
                rto_count: conn.snd.iter().map(|s| s.rto_count).sum(),
                completion_time_s: conn.completion.map_or(f64::NAN, |t| secs(t - conn.start)),
                received_packets: conn.received_packets,
                dropped_packets: conn.dropped_packets,
                in_flight_packets: in_flight[c],
                ack_packets: conn.ack_packets,
                duplicate_segments: conn.data.duplicates,
                reinjected_segments: conn.reinjected,
                integrity_errors: conn.data.integrity_errors + conn.data.window_violations,
            });
            for (i, s) in conn.snd.iter().enumerate() {
                let v = &conn.views[i];
                out.subflows.push(SubflowRecord {
                    seed: self.seed,
                    flow: conn.name.clone(),
                    subflow: i as u32,
                    path: conn.path_names[i].clone(),
                    acked_bytes: s.acked_bytes,
                    goodput_bps: per_s(s.acked_bytes),
                    throughput_bps: per_s(s.sent_wire_bytes),
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
        self.rate_records(&mut out);
        for l in &self.links {
            out.links.push(LinkRecord {
                seed: self.seed,
                link: l.name.clone(),
                rate_bps: l.rate_bps as f64,
                delay_s: secs(l.delay),
                utilisation: l.utilisation(end),
                forwarded_packets: l.forwarded_by(end),
                queue_drops: l.queue_drops,
                random_drops: l.random_drops,
                mean_queue_bytes: l.mean_queue_bytes(end),
                max_queue_bytes: l.max_q_bytes,
                arrived_packets: l.arrived,
                queued_packets_end: l.queued_at(end),
            });
        }
        let goodputs: Vec<f64> = out.flows.iter().map(|f| f.goodput_bps).collect();
        out.stats = RunStats {
            seed: self.seed,
            simulated_s: secs(end),
            events: self.events,
            data_packets: self.data_packets,
            wall_s,
            ack_packets: self.ack_packets,
            packets_in_network_end: live,
            jain_goodput: jain_index(&goodputs),
        };
        out.series = std::mem::take(&mut self.series);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One Reno flow over a path that loses everything: no ACK ever comes back, so the timer
    /// fires at 1 s (RFC 6298 initial RTO), 3 s, 7 s (backed off 2 s, 4 s).
    fn blackhole() -> World {
        let sc = Scenario::from_toml_str(
            r#"
name = "blackhole"
duration = "20s"
[[links]]
name = "l"
rate = "10Mbps"
delay = "10ms"
loss = 1.0
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
kind = "tcp"
path = "p"
send_jitter = 0
"#,
            "test",
        )
        .unwrap();
        World::build(&sc, 1).unwrap()
    }

    fn state(w: &World) -> (f64, f64, u64, u64) {
        let (v, s) = (&w.conns[0].views[0], &w.conns[0].snd[0]);
        (v.cwnd, v.ssthresh, s.rto_count, v.loss_events)
    }

    #[test]
    fn repeated_timeouts_keep_the_first_ssthresh() {
        let mut w = blackhole();
        w.run_until(secs_ns(0.5), &mut |_| {});
        assert_eq!(state(&w), (10.0, f64::INFINITY, 0, 0));
        // First expiry: Reno's ssthresh = max(10/2, 2) = 5, cwnd = 1.
        w.run_until(secs_ns(1.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 1, 1));
        // Re-expiries with no progress (RFC 5681 3.1, Linux tcp_enter_loss): ssthresh stays 5
        // (recomputing it from cwnd = 1 would give max(1/2, 2) = 2); one loss event.
        w.run_until(secs_ns(3.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 2, 1));
        w.run_until(secs_ns(7.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 3, 1));
    }

    #[test]
    fn timeout_after_progress_reduces_again() {
        let mut w = blackhole();
        w.run_until(secs_ns(1.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 1, 1));
        // As if an ACK had advanced snd_una (clearing Linux's icsk_retransmits) and slow start
        // had regrown the window to 8, still in loss state: the next expiry is a new reduction.
        w.conns[0].snd[0].rto_backoffs = 0;
        w.conns[0].views[0].cwnd = 8.0;
        w.run_until(secs_ns(3.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 4.0, 2, 2));
    }

    #[test]
    fn timeout_in_fast_recovery_keeps_its_ssthresh() {
        let mut w = blackhole();
        w.run_until(secs_ns(0.5), &mut |_| {});
        // Put the subflow in fast recovery with ssthresh = cwnd = 7, as a congestion event
        // would, before the timer fires: ssthresh was already reduced in this window (Linux
        // tcp_enter_loss from TCP_CA_Recovery before high_seq), so it stays 7.
        let conn = &mut w.conns[0];
        conn.snd[0].in_recovery = true;
        conn.snd[0].recovery_point = conn.snd[0].snd_nxt;
        conn.views[0].in_recovery = true;
        conn.views[0].ssthresh = 7.0;
        conn.views[0].cwnd = 7.0;
        w.run_until(secs_ns(1.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 7.0, 1, 0));
        assert!(!w.conns[0].views[0].in_recovery && w.conns[0].snd[0].in_loss);
    }

    fn secs_ns(s: f64) -> Nanos {
        (s * 1e9) as Nanos
    }
}

//! Packets arriving at a connection (as Linux's tcp_input.c): a data segment at the receiver
//! (subflow and data-level reassembly, SACK, delayed ACKs) and an ACK at the sender (the
//! scoreboard, the RTT estimator, loss recovery by RFC 6675 or by Linux's RACK and PRR, the
//! congestion controller), each ending in the [send path](super::send).

use super::data::{content_tag, payload_at};
use super::receiver::{Arrival, DELACK_TIMEOUT};
use super::recovery::{LinuxState, Timer};
use super::scheduler::subflow_pacing_rate;
use super::scoreboard::SegPool;
use super::sender::{AckEffect, Sender, DUP_THRESH};
use super::Conn;
use crate::config::DelayedAck;
use crate::net::event::Ev;
use crate::net::{Net, NO_EVENT};
use crate::time::Nanos;

/// What a data segment's arrival was, for Linux's ACK decision ([`Conn::linux_ack_check`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub arrival: Arrival,
    /// It starts at `rcv_nxt` (in order, or filling the hole there).
    pub fills: bool,
    /// Payload bytes.
    pub len: u32,
    /// The application read data it delivered and left the (connection's) queue empty.
    pub emptied: bool,
    /// It carries PSH (`push_flag = "linux"`).
    pub psh: bool,
}

impl Conn {
    /// Data packet `pid` reached its receiver (which frees it).
    pub(crate) fn on_data(&mut self, net: &mut Net, pid: u32) {
        let now = net.now;
        // Read the few fields needed rather than copying the whole packet out of the slab.
        let p = net.pool.get(pid);
        let (c, j, seq, dsn, len, tag, ts) = (
            p.conn as usize,
            p.sub as usize,
            p.seq,
            p.dsn,
            p.len,
            p.tag,
            p.ts,
        );
        let psh = p.psh;
        net.pool.free(pid);
        let conn = &mut *self;
        conn.received_packets += 1;
        // Filling `rcv_nxt` is in-order data to Linux (`tcp_event_data_recv`) even when it
        // fills a hole.
        let fills = seq == conn.rcv[j].rcv_nxt;
        if fills {
            if let Some(t) = conn.data.tune.as_deref_mut() {
                t.on_segment(j, len);
            }
        }
        let arrival = conn.rcv[j].on_segment(seq);
        let (app, mss, key) = (conn.app, conn.mss, conn.tag_key);
        let cuts = conn.cuts.as_deref();
        let read = conn.data.on_segment(dsn, len, tag, j as u16, now, |d| {
            (payload_at(cuts, app, mss, d), content_tag(key, d))
        });
        if conn.completion.is_none() && conn.data.rcv_nxt >= conn.total_segs {
            conn.completion = Some(now);
        }
        let delayed = conn.delayed_ack;
        let r = &mut conn.rcv[j];
        r.last_ts = ts;
        r.last_owd = now - ts;
        if delayed == DelayedAck::Linux {
            let seg = Segment {
                arrival,
                fills,
                len,
                // The application read what arrived and left nothing queued
                // (`tcp_cleanup_rbuf`).
                emptied: read > 0 && conn.data.held_segs == 0,
                psh,
            };
            return self.linux_ack_check(net, c, j, seg);
        }
        let delayed = delayed == DelayedAck::Every2;
        // RFC 5681 section 4.2: ACK at once for out-of-order or gap-filling segments; otherwise
        // (with delayed ACKs) every second full segment or after the delayed-ACK timeout.
        if !delayed || arrival != Arrival::InOrder {
            self.send_ack(net, c, j);
            return;
        }
        r.pending += 1;
        if r.pending >= 2 {
            self.send_ack(net, c, j);
        } else {
            r.delack_deadline = now + DELACK_TIMEOUT;
            if r.delack_event == NO_EVENT {
                r.delack_event = r.delack_deadline;
                net.q
                    .push(r.delack_deadline, Ev::DelAck(c as u32, j as u16));
            }
        }
    }

    /// `delayed_ack = "linux"`: what Linux's receiver does after a data segment of `len`
    /// payload bytes (`tcp_data_queue`, `tcp_event_data_recv`, `__tcp_ack_snd_check`,
    /// `tcp_send_delayed_ack`; see [`LinuxDelack`](super::receiver::LinuxDelack)).
    pub(crate) fn linux_ack_check(&mut self, net: &mut Net, c: usize, j: usize, seg: Segment) {
        let Segment {
            arrival,
            fills,
            len,
            emptied,
            psh,
        } = seg;
        let now = net.now;
        if emptied {
            // `mptcp_cleanup_rbuf`: the read that emptied the queue sends the other subflows'
            // pushed pending ACKs too (`mptcp_subflow_could_cleanup`).
            for k in 0..self.rcv.len() {
                if k != j && self.rcv[k].lx.pushed && self.rcv[k].delack_deadline != 0 {
                    self.send_ack(net, c, k);
                }
            }
        }
        let r = &mut self.rcv[j];
        let ack_now = match arrival {
            Arrival::InOrder => r.lx.in_order(now, len, psh) || emptied && r.lx.pushed,
            // Data already received (`tcp_data_queue`: a retransmission): quick-ACK mode.
            Arrival::Duplicate => {
                r.lx.enter_quickack();
                true
            }
            // A hole filled (wholly: `ICSK_ACK_NOW`; partly: out-of-order data still queued)
            // or data above a hole: at once.
            Arrival::Reordered => {
                if fills {
                    r.lx.data_recv(now);
                }
                true
            }
        };
        if !ack_now {
            let armed = (r.delack_deadline != 0).then_some(r.delack_deadline);
            if let Some(t) = r.lx.delay(now, armed) {
                r.pending += 1;
                r.delack_deadline = t;
                // An earlier ACK may have left a later timer event behind: it goes stale.
                if r.delack_event > t {
                    r.delack_event = t;
                    net.q.push(t, Ev::DelAck(c as u32, j as u16));
                }
                return;
            }
        }
        self.send_ack(net, c, j);
    }

    /// ACK `pid` reached its sender (which frees it).
    pub(crate) fn on_ack(&mut self, net: &mut Net, segs: &mut SegPool, pid: u32) {
        let now = net.now;
        let p = net.pool.get(pid);
        let (c, i) = (p.conn as usize, p.sub as usize);
        let (ts, owd, cum_ack, data_ack, window) =
            (p.ts, p.owd(), p.cum_ack(), p.data_ack(), p.window());
        let sacks = net.pool.sacks(pid);
        let conn = &mut *self;
        if i == 0 {
            // The connection is fully established: the path manager starts the joins.
            conn.begin_joins(net, c);
        }
        conn.data_una = conn.data_una.max(data_ack);
        // The farthest window edge offered (`ack_update_msk`: the edge never moves back).
        conn.rwnd_edge = conn.rwnd_edge.max(data_ack + window);
        // The receiver's round-trip estimate (see `rcvbuf`).
        if let Some(t) = conn.data.tune.as_deref_mut() {
            t.rtt_sample(i, now, ts);
        }
        let linux = !conn.linux.is_empty();
        let s = &mut conn.snd[i];
        if linux {
            conn.linux[i].on_ack(s, cum_ack, &sacks, ts, now);
        }
        let eff = s.on_ack(segs, cum_ack, &sacks);
        // The pass after this ACK ends in its subflow's `tcp_check_space`
        // (`tcp_data_snd_check`), which may expand the send buffer.
        if let Some(q) = conn.sq.as_deref_mut() {
            q.acked = Some(i);
            q.subs[i].rcv_tstamp = now;
        }
        // Nothing below allocates a packet before the slot is no longer read.
        net.pool.free(pid);
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
            if linux {
                conn.linux[i].rtt_sample(us * 1000);
            }
        }
        let mut rtt = None;
        if eff.segs > 0 {
            let r = now - ts;
            s.record_rtt(r);
            rtt = Some(r);
        }
        if eff.advanced {
            // RFC 6298 (5.2)/(5.3): stop the timer when all is acknowledged, else restart it.
            // (`linux`: once RACK has decided, below.)
            if !linux {
                s.rto_deadline = if s.outstanding() > 0 { now + s.rto } else { 0 };
            }
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
        if linux {
            return self.linux_on_ack(net, segs, c, i, &eff, rtt, owd);
        }
        if !s.in_recovery && !s.in_loss && (s.dupacks >= DUP_THRESH || s.first_is_lost()) {
            // RFC 6675 section 5 (4): enter loss recovery once per window.
            if s.mark_first_lost() {
                conn.views[i].lost += 1;
            }
            Self::begin_recovery(conn, i, now);
            conn.ctrl.on_congestion_event(&mut conn.views, i, now);
            Self::whole_segments(conn, i);
            // (4.3): retransmit the first segment deemed lost whatever pipe says.
            if let Some(seq) = conn.snd[i].next_retx() {
                self.send_segment(net, c, i, seq, None);
            }
        } else if eff.segs > 0 && !s.in_recovery {
            Self::grow(conn, i, &eff, rtt, owd, now);
        }
        let conn = &mut *self;
        Self::arm_rto(&mut net.q, &mut conn.snd[i], c, i);
        conn.update_pacing_rate(i);
        self.try_send(net, segs, c);
    }

    /// The rest of `tcp_ack` for subflow `i` with `recovery = "linux"`, after the scoreboard
    /// took the ACK (`eff`) and the RTT estimator its sample: `tcp_process_tlp_ack`, RACK's
    /// loss marking, recovery entry (`tcp_time_to_recover`: a segment is marked lost),
    /// `tcp_set_xmit_timer`, then `tcp_cong_control` (PRR in recovery, else window growth)
    /// and sending.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn linux_on_ack(
        &mut self,
        net: &mut Net,
        segs: &mut SegPool,
        c: usize,
        i: usize,
        eff: &AckEffect,
        rtt: Option<Nanos>,
        owd: Nanos,
    ) {
        let now = net.now;
        let conn = &mut *self;
        let (s, lx) = (&mut conn.snd[i], &mut conn.linux[i]);
        // tcp_process_tlp_ack: an ACK beyond the probe's snd_nxt after a retransmitted probe
        // means the probe repaired a loss: reduce the window once (CWR, ended at once).
        let mut tlp_loss = false;
        if let Some(h) = lx.tlp_high_seq {
            if s.snd_una >= h {
                if !lx.tlp_retrans || !eff.advanced && !eff.new_sack {
                    lx.tlp_high_seq = None;
                } else if s.snd_una > h {
                    lx.tlp_high_seq = None;
                    tlp_loss = true;
                }
            }
        }
        // tcp_rack_mark_lost; its reordering timer replaces the RTO or probe timer.
        let mut newly_lost = 0;
        let mut reo_armed = false;
        if lx.rack_may_mark(s) {
            let (n, wait) = lx.detect_loss(s, now);
            newly_lost = n;
            if wait > 0 {
                s.rto_deadline = now + LinuxState::reo_timeout(wait);
                lx.timer = Timer::Reorder;
                reo_armed = true;
            }
        }
        lx.rack_advanced = false;
        let v = &mut conn.views[i];
        v.lost += u64::from(newly_lost);
        v.in_flight = s.pipe;
        if tlp_loss {
            Self::account_cwnd(conn, i, now);
            conn.views[i].loss_events += 1;
            conn.ctrl.on_congestion_event(&mut conn.views, i, now);
            Self::whole_segments(conn, i);
            conn.ctrl.on_recovery_exit(&mut conn.views, i, now);
        }
        let s = &conn.snd[i];
        if !s.in_recovery && !s.in_loss && s.awaiting_retx > 0 {
            Self::linux_enter_recovery(conn, i, now);
        }
        let (s, lx) = (&mut conn.snd[i], &mut conn.linux[i]);
        if eff.advanced && !reo_armed && !lx.schedule_probe(s, true, now) {
            lx.rearm_rto(s, now);
        }
        if s.in_recovery {
            Self::account_cwnd(conn, i, now);
            let (s, lx) = (&conn.snd[i], &mut conn.linux[i]);
            let ssthresh = conn.views[i].ssthresh;
            if let Some(w) = lx.prr_cwnd(ssthresh, s.pipe, eff.segs, eff.advanced, newly_lost) {
                conn.views[i].cwnd = w;
            }
        } else if eff.segs > 0 {
            Self::grow(conn, i, eff, rtt, owd, now);
        }
        Self::arm_rto(&mut net.q, &mut conn.snd[i], c, i);
        conn.update_pacing_rate(i);
        self.try_send(net, segs, c);
    }

    /// `tcp_update_pacing_rate` at the end of `tcp_cong_control`, on every ACK: only the
    /// Linux scheduler reads it.
    #[inline]
    fn update_pacing_rate(&mut self, i: usize) {
        if let Some(q) = self.sq.as_deref_mut() {
            if q.sched {
                q.subs[i].pacing_rate = subflow_pacing_rate(
                    &self.snd[i],
                    &self.views[i],
                    q.subs[i].handshake_rtt,
                    self.mss,
                );
            }
        }
    }
}

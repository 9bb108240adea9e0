//! The TCP/MPTCP transport's event handling, once for every connection: a data segment at the
//! receiver (reassembly, SACK, delayed ACKs), an ACK at the sender (RFC 6675 recovery, the
//! congestion controller, Linux's retransmission timer), the timers, and the send loop (the
//! scheduler over subflows, reinjection). The bookkeeping it drives is in `tcp.rs` (one
//! subflow) and `mptcp.rs` (the connection); the network it sends into is [`Net`].

use pathpool_cc::{Ack, MIN_CWND};

use crate::conn::data::{content_tag, seg_len, Conn};
use crate::conn::recovery::Timer;
use crate::conn::sender::{
    AckEffect, Arrival, Sender, DELACK_TIMEOUT, DUP_THRESH, REINJECTED, SACKED,
};
use crate::net::event::{Ev, EventQueue};
use crate::net::packet::{Packet, ACK_BYTES, MAX_SACK_BLOCKS};
use crate::net::{Net, NO_EVENT};
use crate::time::Nanos;

impl Conn {
    // --- receiver ---------------------------------------------------------------------------

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
        net.pool.free(pid);
        let conn = &mut *self;
        conn.received_packets += 1;
        let arrival = conn.rcv[j].on_segment(seq);
        let (app, mss, key) = (conn.app, conn.mss, conn.tag_key);
        conn.data.on_segment(dsn, len, tag, j as u16, now, |d| {
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

    fn send_ack(&mut self, net: &mut Net, c: usize, j: usize) {
        let conn = &mut *self;
        let r = &mut conn.rcv[j];
        let mut sacks = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let n = r.sack_blocks(&mut sacks);
        r.pending = 0;
        r.delack_deadline = 0;
        let pkt = Packet::ack(
            c as u32,
            j as u16,
            r.ack_route,
            ACK_BYTES,
            r.last_ts,
            r.last_owd,
            r.rcv_nxt,
            conn.data.rcv_nxt,
        );
        conn.ack_packets += 1;
        net.ack_packets += 1;
        let pid = net.pool.alloc_with_sacks(pkt, &sacks[..usize::from(n)]);
        if let Some(p) = net.launch(pid) {
            self.on_drop(&p);
        }
    }

    pub(crate) fn on_delack_event(&mut self, net: &mut Net, c: usize, j: usize) {
        let now = net.now;
        let r = &mut self.rcv[j];
        if r.delack_event != now {
            return;
        }
        r.delack_event = NO_EVENT;
        if r.delack_deadline == 0 || r.pending == 0 {
            return;
        }
        if now < r.delack_deadline {
            r.delack_event = r.delack_deadline;
            net.q
                .push(r.delack_deadline, Ev::DelAck(c as u32, j as u16));
            return;
        }
        self.send_ack(net, c, j);
    }

    // --- sender -----------------------------------------------------------------------------

    pub(crate) fn on_start(&mut self, net: &mut Net, c: usize) {
        let now = net.now;
        let conn = &mut *self;
        conn.started = true;
        conn.open = conn.stop.is_none_or(|s| s > now);
        for s in conn.snd.iter_mut() {
            s.cwnd_since = now;
        }
        self.try_send(net, c);
    }

    /// The application stops offering new data; what is in flight still gets delivered.
    pub(crate) fn on_stop(&mut self) {
        let conn = &mut *self;
        conn.open = false;
        let subs = conn
            .snd
            .iter()
            .map(|s| (s.acked_bytes, s.sent_wire_bytes))
            .collect();
        conn.at_stop = Some((conn.data.delivered_bytes, subs));
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

    #[inline]
    pub(crate) fn arm_rto(q: &mut EventQueue, s: &mut Sender, c: usize, i: usize) {
        if s.rto_deadline != 0 && s.rto_event > s.rto_deadline {
            s.rto_event = s.rto_deadline;
            q.push(s.rto_deadline, Ev::Rto(c as u32, i as u16));
        }
    }

    /// ACK `pid` reached its sender (which frees it).
    pub(crate) fn on_ack(&mut self, net: &mut Net, pid: u32) {
        let now = net.now;
        let p = net.pool.get(pid);
        let (c, i) = (p.conn as usize, p.sub as usize);
        let (ts, owd, cum_ack, data_ack) = (p.ts, p.owd(), p.cum_ack(), p.data_ack());
        let sacks = net.pool.sacks(pid);
        let conn = &mut *self;
        conn.data_una = conn.data_una.max(data_ack);
        // The receiver's window edge when it sent this ACK (`DataReceiver::window_edge`).
        conn.rwnd_edge = conn.rwnd_edge.max(data_ack + conn.data.cap);
        let linux = !conn.linux.is_empty();
        let s = &mut conn.snd[i];
        if linux {
            conn.linux[i].on_ack(s, cum_ack, &sacks, ts, now);
        }
        let eff = s.on_ack(&mut net.segs, cum_ack, &sacks);
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
            return self.linux_on_ack(net, c, i, &eff, rtt, owd);
        }
        if !s.in_recovery && !s.in_loss && (s.dupacks >= DUP_THRESH || s.first_is_lost()) {
            // RFC 6675 section 5 (4): enter loss recovery once per window.
            if s.mark_first_lost() {
                conn.views[i].lost += 1;
            }
            Self::begin_recovery(conn, i, now);
            conn.ctrl.on_congestion_event(&mut conn.views, i, now);
            // (4.3): retransmit the first segment deemed lost whatever pipe says.
            if let Some(seq) = conn.snd[i].next_retx() {
                self.send_segment(net, c, i, seq, None);
            }
        } else if eff.segs > 0 && !s.in_recovery {
            Self::grow(conn, i, &eff, rtt, owd, now);
        }
        let conn = &mut *self;
        Self::arm_rto(&mut net.q, &mut conn.snd[i], c, i);
        self.try_send(net, c);
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

    pub(crate) fn on_rto_event(&mut self, net: &mut Net, c: usize, i: usize) {
        let now = net.now;
        let conn = &mut *self;
        let s = &mut conn.snd[i];
        if s.rto_event != now {
            return; // superseded by an earlier-scheduled timer event
        }
        s.rto_event = NO_EVENT;
        if s.rto_deadline == 0 {
            return;
        }
        if now < s.rto_deadline {
            Self::arm_rto(&mut net.q, s, c, i);
            return;
        }
        if s.outstanding() == 0 {
            s.rto_deadline = 0;
            return;
        }
        if let Some(lx) = conn.linux.get_mut(i) {
            match lx.timer {
                Timer::Probe => return self.send_loss_probe(net, c, i),
                Timer::Reorder => return self.rack_reo_timeout(net, c, i),
                // tcp_retransmit_timer -> tcp_enter_loss: the probe episode is over.
                Timer::Rto => lx.tlp_high_seq = None,
            }
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
        Self::arm_rto(&mut net.q, s, c, i);
        // Reinjection: hand this subflow's data that the connection has not seen acknowledged
        // to the other subflows (Linux MPTCP `mptcp_reinject_data` on RTO).
        if conn.snd.len() > 1 {
            let s = &mut conn.snd[i];
            for seq in s.snd_una..s.snd_nxt {
                let seg = *s.seg(seq);
                let f = seg.flags();
                if f & (SACKED | REINJECTED) == 0 && seg.dsn() >= conn.data_una {
                    s.set_flags(seq, f | REINJECTED);
                    conn.reinject.push_back(seg.dsn());
                }
            }
        }
        self.try_send(net, c);
    }

    /// Put segment `seq` of subflow `i` on the wire: a new segment carrying `new = (dsn, len)`
    /// (just pushed to the scoreboard), or a retransmission if `new` is `None`.
    pub(crate) fn send_segment(
        &mut self,
        net: &mut Net,
        c: usize,
        i: usize,
        seq: u64,
        new: Option<(u64, u32)>,
    ) {
        let now = net.now;
        let conn = &mut *self;
        let s = &mut conn.snd[i];
        let (dsn, len) = match new {
            // Not read back from the scoreboard: its slot may be a cold line.
            Some(dl) => dl,
            None => {
                s.mark_retransmitted(seq, now);
                s.retransmitted += 1;
                let dsn = s.seg(seq).dsn();
                (dsn, s.seg_len(dsn))
            }
        };
        let wire = len + s.header;
        s.sent += 1;
        s.sent_wire_bytes += u64::from(wire);
        // RFC 6298 (5.1); Linux also restarts the timer when it retransmits the first
        // outstanding segment (`tcp_xmit_retransmit_queue`, net/ipv4/tcp_output.c: `skb ==
        // rtx_head` sets `rearm_timer`), so a fast retransmit gets a full RTO to be answered.
        if let Some(lx) = conn.linux.get_mut(i) {
            lx.on_send(s, seq, new.is_some(), now);
        } else if s.rto_deadline == 0 || (new.is_none() && seq == s.snd_una) {
            s.rto_deadline = now + s.rto;
        }
        Self::arm_rto(&mut net.q, s, c, i);
        conn.views[i].in_flight = s.pipe;
        let pkt = Packet {
            conn: c as u32,
            sub: i as u16,
            is_ack: false,
            route: s.route,
            hop: 0,
            wire,
            seq,
            dsn,
            len,
            tag: content_tag(conn.tag_key, dsn),
            ts: now,
            ..Packet::default()
        };
        net.data_packets += 1;
        if conn.send_jitter > 0 {
            let d = (conn.rng.uniform() * conn.send_jitter as f64) as Nanos;
            let s = &mut conn.snd[i];
            let at = (now + d).max(s.tx_clock);
            s.tx_clock = at;
            let pid = net.pool.alloc(pkt);
            net.q.push_near(at, pid);
        } else {
            if let Some(p) = net.inject(pkt) {
                self.on_drop(&p);
            }
        }
    }

    /// Send `dsn` (from [`Conn::next_data`]: a reinjection or the next new one) as subflow
    /// `i`'s next new segment.
    #[inline]
    pub(crate) fn send_new(
        &mut self,
        net: &mut Net,
        c: usize,
        i: usize,
        dsn: u64,
        reinjection: bool,
    ) {
        let conn = &mut *self;
        if reinjection {
            conn.reinject.pop_front();
            conn.reinjected += 1;
        } else {
            conn.next_dsn += 1;
        }
        let len = conn.seg_len(dsn);
        let seq = conn.snd[i].push_new(&mut net.segs, dsn, net.now);
        self.send_segment(net, c, i, seq, Some((dsn, len)));
    }

    /// Send whatever the windows allow: each subflow's retransmissions first (RFC 6675 NextSeg
    /// rule 1), then new data (rule 2) through the scheduler.
    pub(crate) fn try_send(&mut self, net: &mut Net, c: usize) {
        if !self.started {
            return;
        }
        let now = net.now;
        let k = self.snd.len();
        for i in 0..k {
            loop {
                let conn = &mut *self;
                // (Nothing awaits retransmission: `next_retx` would say `None` anyway.)
                if conn.snd[i].awaiting_retx == 0 || !conn.has_room(i) {
                    break;
                }
                match conn.snd[i].next_retx() {
                    Some(seq) => self.send_segment(net, c, i, seq, None),
                    None => break,
                }
            }
        }
        // Did data wait for room in a window (rather than the window for data)?
        let mut blocked = false;
        loop {
            let conn = &mut *self;
            let Some((dsn, reinjection)) = conn.next_data() else {
                break;
            };
            let Some(i) = conn.pick_subflow() else {
                blocked = true;
                break;
            };
            conn.snd[i].sent_in_pass = true;
            self.send_new(net, c, i, dsn, reinjection);
        }
        // Linux `tcp_cwnd_validate` after a write pass, per subflow as v0.95's
        // `mptcp_write_xmit` does: for each subflow that sent new data, and (as a single-path
        // `tcp_write_xmit` does when its window test fails) each one whose full window held
        // back waiting data. The flag says whether the window was full (`pipe >= cwnd`).
        let conn = &mut *self;
        for i in 0..k {
            let sent_new = std::mem::take(&mut conn.snd[i].sent_in_pass);
            if !sent_new && !blocked {
                continue;
            }
            let full = !conn.has_room(i);
            let waited = blocked && full && conn.views[i].active && !(k > 1 && conn.snd[i].in_loss);
            let s = &mut conn.snd[i];
            if sent_new || waited {
                s.cwnd_validate(full);
            }
            // tcp_write_xmit: "Send one loss probe per tail loss episode" after new data.
            if sent_new {
                if let Some(lx) = conn.linux.get_mut(i) {
                    lx.schedule_probe(s, false, now);
                    Self::arm_rto(&mut net.q, s, c, i);
                }
            }
        }
    }

    /// One of this connection's packets was dropped in the network.
    #[inline]
    pub(crate) fn on_drop(&mut self, p: &Packet) {
        if !p.is_ack {
            self.dropped_packets += 1;
        }
    }
}

//! The connection's timers (as Linux's tcp_timer.c): the delayed ACK, and each subflow's one
//! retransmission timer, which is the RTO, the tail loss probe or RACK's reordering timer
//! ([`Timer`]).

use pathpool_cc::MIN_CWND;

use super::recovery::Timer;
use super::scoreboard::{SegPool, REINJECTED, RETX, SACKED};
use super::Conn;
use crate::config::DelayedAck;
use crate::net::event::Ev;
use crate::net::{Net, NO_EVENT};

impl Conn {
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
        if self.delayed_ack == DelayedAck::Linux {
            r.lx.timer_fired();
        }
        self.send_ack(net, c, j);
    }

    pub(crate) fn on_rto_event(&mut self, net: &mut Net, segs: &mut SegPool, c: usize, i: usize) {
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
                Timer::Probe => return self.send_loss_probe(net, segs, c, i),
                Timer::Reorder => return self.rack_reo_timeout(net, segs, c, i),
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
            Self::whole_segments(conn, i);
        } else {
            // Linux: `snd_cwnd = packets_in_flight + 1`, and every segment is now lost.
            conn.views[i].cwnd = MIN_CWND;
        }
        let s = &mut conn.snd[i];
        s.backoff();
        s.rto_deadline = now + s.rto;
        Self::arm_rto(&mut net.q, s, c, i);
        // Reinjection: hand this subflow's data that the connection has not seen acknowledged
        // to the other subflows (the out-of-tree Linux MPTCP's `mptcp_reinject_data` on RTO).
        // Upstream's (`scheduler = "linux"`) leaves it to the connection-level timer.
        let upstream = conn.sq.as_deref().is_some_and(|q| q.sched);
        if conn.snd.len() > 1 && !upstream {
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
        self.try_send(net, segs, c);
    }

    /// `tcp_send_loss_probe`: at most one probe per flight; new data if the connection has
    /// any (sent whatever the window says: `tcp_write_xmit(.., push_one = 2)`), else the
    /// highest outstanding segment again. Then the RTO restarts from now.
    pub(crate) fn send_loss_probe(
        &mut self,
        net: &mut Net,
        segs: &mut SegPool,
        c: usize,
        i: usize,
    ) {
        let now = net.now;
        let conn = &mut *self;
        if conn.linux[i].tlp_high_seq.is_none() {
            conn.linux[i].tlp_retrans = false;
            // New data is, with Linux's scheduler, what waits in this subflow's own queue.
            let queued = match conn.sq.as_deref_mut() {
                Some(q) if q.sched => Some(q.subs[i].queue.pop_front()),
                _ => None,
            };
            if let Some(q) = queued {
                if let Some(dsn) = q {
                    let len = self.seg_len(dsn);
                    let seq = self.snd[i].push_seg(segs, dsn, len, now);
                    self.send_segment(net, c, i, seq, Some((dsn, len)));
                } else {
                    self.probe_retransmit(net, c, i);
                }
            } else if let Some((dsn, reinjection)) = conn.next_data() {
                self.send_new(net, segs, c, i, dsn, reinjection);
            } else {
                self.probe_retransmit(net, c, i);
            }
            let conn = &mut *self;
            let (s, lx) = (&mut conn.snd[i], &mut conn.linux[i]);
            lx.tlp_high_seq = Some(s.snd_nxt);
            lx.probes += 1;
            // "Reset s.t. tcp_rearm_rto will restart timer from now".
            lx.timer = Timer::Rto;
        }
        let conn = &mut *self;
        let (s, lx) = (&mut conn.snd[i], &mut conn.linux[i]);
        lx.rearm_rto(s, now);
        Self::arm_rto(&mut net.q, s, c, i);
    }

    /// The loss probe without new data: the highest outstanding segment again.
    fn probe_retransmit(&mut self, net: &mut Net, c: usize, i: usize) {
        let seq = self.snd[i].snd_nxt - 1;
        self.send_segment(net, c, i, seq, None);
        // `__tcp_retransmit_skb` without `tcp_retransmit_skb`'s accounting: the probe is not
        // in `retrans_out`, so not in pipe.
        let s = &mut self.snd[i];
        let f = s.seg(seq).flags();
        s.set_flags(seq, f & !RETX);
        self.linux[i].tlp_retrans = true;
    }

    /// `tcp_rack_reo_timeout`: mark what is now overdue; if that marked anything, enter
    /// recovery (from the open state; one PRR step for one delivered segment) and retransmit.
    /// Then the RTO takes over again, at its original expiry.
    pub(crate) fn rack_reo_timeout(
        &mut self,
        net: &mut Net,
        segs: &mut SegPool,
        c: usize,
        i: usize,
    ) {
        let now = net.now;
        let conn = &mut *self;
        let (s, lx) = (&mut conn.snd[i], &mut conn.linux[i]);
        lx.reo_timeouts += 1;
        let prior = s.pipe;
        let (n, _) = lx.detect_loss(s, now);
        conn.views[i].lost += u64::from(n);
        conn.views[i].in_flight = s.pipe;
        if conn.snd[i].pipe != prior {
            let s = &conn.snd[i];
            if !s.in_recovery && !s.in_loss {
                Self::linux_enter_recovery(conn, i, now);
                let (s, lx) = (&conn.snd[i], &mut conn.linux[i]);
                let ssthresh = conn.views[i].ssthresh;
                if let Some(w) = lx.prr_cwnd(ssthresh, s.pipe, 1, false, n) {
                    conn.views[i].cwnd = w;
                }
            }
            self.try_send(net, segs, c);
        }
        let conn = &mut *self;
        let (s, lx) = (&mut conn.snd[i], &mut conn.linux[i]);
        if lx.timer != Timer::Rto {
            lx.rearm_rto(s, now);
        }
        Self::arm_rto(&mut net.q, s, c, i);
    }
}

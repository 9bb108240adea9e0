//! The connection's send path (as Linux's tcp_output.c): the application starting and
//! stopping, a write pass over the subflows (retransmissions first, then new data through the
//! [scheduler](super::scheduler)), one segment onto the network through the host's send
//! queue, and the receiver's ACKs.

use super::data::content_tag;
use super::scoreboard::SegPool;
use super::Conn;
use crate::net::packet::{Packet, ACK_BYTES, MAX_SACK_BLOCKS};
use crate::net::Net;

impl Conn {
    /// The application starts (`c` is the connection's endpoint index): send what the
    /// windows allow.
    pub(crate) fn on_start(&mut self, net: &mut Net, segs: &mut SegPool, c: usize) {
        let now = net.now;
        let conn = &mut *self;
        conn.started = true;
        conn.open = conn.stop.is_none_or(|s| s > now);
        for s in conn.snd.iter_mut() {
            s.cwnd_since = now;
        }
        self.try_send(net, segs, c);
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

    /// Send whatever the windows allow: each subflow's retransmissions first (RFC 6675 NextSeg
    /// rule 1), then new data (rule 2) through the scheduler.
    pub(crate) fn try_send(&mut self, net: &mut Net, segs: &mut SegPool, c: usize) {
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
            let Some(i) = conn.sched.pick(&conn.snd, &conn.views) else {
                blocked = true;
                break;
            };
            conn.snd[i].sent_in_pass = true;
            self.send_new(net, segs, c, i, dsn, reinjection);
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

    /// Send `dsn` (from [`Conn::next_data`]: a reinjection or the next new one) as subflow
    /// `i`'s next new segment.
    #[inline]
    pub(crate) fn send_new(
        &mut self,
        net: &mut Net,
        segs: &mut SegPool,
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
        let seq = conn.snd[i].push_new(segs, dsn, net.now);
        self.send_segment(net, c, i, seq, Some((dsn, len)));
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
        if let Some(p) = net.send_data(pkt, &mut conn.jitter, &mut conn.snd[i].tx_clock) {
            self.on_drop(&p);
        }
    }

    pub(crate) fn send_ack(&mut self, net: &mut Net, c: usize, j: usize) {
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

    /// One of this connection's packets was dropped in the network.
    #[inline]
    pub(crate) fn on_drop(&mut self, p: &Packet) {
        if !p.is_ack {
            self.dropped_packets += 1;
        }
    }
}

//! The connection's send path (as Linux's tcp_output.c): the application starting and
//! stopping, a write pass over the subflows (retransmissions first, then new data through the
//! [scheduler](super::scheduler)), one segment onto the network through the host's send
//! queue, and the receiver's ACKs.

use super::data::{content_tag, seg_len};
use super::scheduler::{count_stale, pick_linux, set_timeout};
use super::scoreboard::SegPool;
use super::sendq::{int_window, tso_segs, GSO_MAX_SIZE_MPTCP, GSO_MAX_SIZE_TCP, RTX_FRAG};
use super::Conn;
use crate::config::FlowKind;
use crate::net::event::Ev;
use crate::net::packet::{Packet, ACK_BYTES, MAX_SACK_BLOCKS};
use crate::net::{Net, NO_EVENT};
use crate::time::Nanos;

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
        // The peer has sent first: the connection is fully established already and the path
        // manager opens the further subflows now.
        if conn.joins_at_start {
            conn.begin_joins(net, c);
        }
        self.try_send(net, segs, c);
    }

    /// The path manager opens the further subflows now (once, the first time it is asked):
    /// each one's send buffer joins the connection's when its SYN/ACK arrives, one round trip
    /// of its path later (`subflow_finish_connect` -> `mptcp_finish_join` ->
    /// `mptcp_propagate_sndbuf`), and it carries data from the peer's fourth ACK, a round
    /// trip after that.
    pub(crate) fn begin_joins(&mut self, net: &mut Net, c: usize) {
        if let Some(after) = self.join_after.take() {
            for (j, &d) in after.iter().enumerate().skip(1) {
                net.q
                    .push(net.now + d / 2, Ev::JoinBuffer(c as u32, j as u16));
                net.q.push(net.now + d, Ev::Join(c as u32, j as u16));
            }
        }
    }

    /// Subflow `i`'s SYN/ACK arrived: its send buffer joins the connection's.
    pub(crate) fn on_join_buffer(&mut self, net: &mut Net, segs: &mut SegPool, c: usize, i: usize) {
        if let Some(q) = self.sq.as_deref_mut() {
            q.join(i);
        }
        if self.started {
            self.try_send(net, segs, c);
        }
    }

    /// Subflow `i`'s MP_JOIN handshake is over (`joins = "linux"`): it joins the scheduler and
    /// the controller's coupled sums with its initial window.
    pub(crate) fn on_join(&mut self, net: &mut Net, segs: &mut SegPool, c: usize, i: usize) {
        self.views[i].active = true;
        self.snd[i].cwnd_since = net.now;
        if self.started {
            self.try_send(net, segs, c);
        }
    }

    /// The application stops offering new data; what is in flight still gets delivered.
    pub(crate) fn on_stop(&mut self) {
        let conn = &mut *self;
        conn.open = false;
        // What the writer has written still goes out; without send buffers it has written
        // only what was sent.
        if let Some(q) = conn.sq.as_deref_mut() {
            if !q.buffers {
                q.write_end = q.write_end.min(conn.next_dsn);
                q.write_bytes = q.write_bytes.min(conn.next_byte);
            }
        }
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
        if let Some(q) = self.sq.as_deref_mut() {
            if q.sched {
                return self.try_send_linux(net, segs, c);
            }
            if self.open {
                q.write(self.data_una, self.total_segs, self.mss, false);
            }
        }
        let k = self.snd.len();
        self.send_retransmissions(net, c);
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
        for i in 0..k {
            let conn = &mut *self;
            let sent_new = std::mem::take(&mut conn.snd[i].sent_in_pass);
            if !sent_new && !blocked {
                continue;
            }
            let full = !conn.has_room(i);
            let waited = blocked && full && conn.views[i].active && !(k > 1 && conn.snd[i].in_loss);
            self.after_pass(net, c, i, sent_new, waited);
        }
        self.expand_sndbuf();
    }

    /// `tcp_cwnd_validate` for subflow `i` after a write pass that sent new data on it
    /// (`sent_new`) or whose full window held back data waiting for it (`waited`); then, after
    /// new data, `tcp_write_xmit`'s "one loss probe per tail loss episode".
    #[inline]
    fn after_pass(&mut self, net: &mut Net, c: usize, i: usize, sent_new: bool, waited: bool) {
        let now = net.now;
        let conn = &mut *self;
        let full = !conn.has_room(i);
        let s = &mut conn.snd[i];
        if sent_new || waited {
            s.cwnd_validate(full);
        }
        if sent_new {
            if let Some(lx) = conn.linux.get_mut(i) {
                lx.schedule_probe(s, false, now);
                Self::arm_rto(&mut net.q, s, c, i);
            }
        }
    }

    /// `tcp_check_space` for the subflow whose ACK this pass answers, after the pass
    /// (`tcp_data_snd_check` pushes first, then checks the space): `tcp_new_space` if the
    /// writer waits for room (`SOCK_NOSPACE`).
    #[inline]
    fn expand_sndbuf(&mut self) {
        if let Some(i) = self.sq.as_deref_mut().and_then(|q| q.acked.take()) {
            self.check_space(i);
        }
    }

    /// Each subflow's retransmissions, while its window has room (RFC 6675 NextSeg rule 1).
    fn send_retransmissions(&mut self, net: &mut Net, c: usize) {
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
    }

    /// A write pass with upstream Linux's send side (`scheduler = "linux"`; see
    /// [`super::sendq`]): retransmissions; what a DATA_ACK freed (`__mptcp_clean_una`: the
    /// connection-level retransmission timer restarts, or stops once everything written is
    /// acknowledged; the writer may wake); each subflow sends from its own queue as its window
    /// allows (`tcp_write_xmit`); then `__mptcp_push_pending`: while written data waits, the
    /// scheduler picks a subflow, which takes a burst of it into its queue
    /// (`__subflow_push_pending`: until the burst is spent or its buffer is full) and sends
    /// what its window allows. A pick of None or a closed connection-level window ends it.
    fn try_send_linux(&mut self, net: &mut Net, segs: &mut SegPool, c: usize) {
        let k = self.snd.len();
        self.send_retransmissions(net, c);
        let conn = &mut *self;
        let q = conn.sq.as_deref_mut().expect("linux send side");
        if conn.data_una > q.seen_una {
            q.seen_una = conn.data_una;
            if let Some(cuts) = conn.cuts.as_deref_mut() {
                // Below both the DATA_ACK point and every DSN still queued on a subflow, no
                // length is asked for again (the receiver is past the DATA_ACK point).
                let oldest = q.subs.iter().filter_map(|s| s.queue.front().copied());
                cuts.forget_below(oldest.fold(conn.data_una, u64::min), conn.mss);
            }
            let all_taken = match conn.cuts {
                Some(_) => conn.next_byte >= q.write_bytes,
                None => conn.next_dsn >= q.write_end,
            };
            if conn.data_una >= conn.next_dsn && all_taken {
                q.rtx_deadline = 0;
            } else {
                self.reset_data_rtx(net, c);
            }
        }
        // A poll-driven writer's every `send()` ends in `__mptcp_push_pending` (`mptcp_sendmsg`):
        // one call, then the push, for as long as the socket polls writable.
        let mut wrote = self.write_once();
        for i in 0..k {
            self.xmit_queue(net, segs, c, i);
        }
        let mut pushed = false;
        loop {
            pushed |= self.push_pending(net, segs, c);
            if !wrote {
                break;
            }
            wrote = self.write_once();
        }
        if pushed && self.sq.as_deref().is_some_and(|q| q.rtx_deadline == 0) {
            self.reset_data_rtx(net, c);
        }
        // `tcp_cwnd_validate` per subflow: after sending new data, or when its window held
        // back data waiting in its own queue.
        for i in 0..k {
            let conn = &mut *self;
            let sent_new = std::mem::take(&mut conn.snd[i].sent_in_pass);
            let waited = !conn.has_room(i)
                && conn
                    .sq
                    .as_deref()
                    .is_some_and(|q| !q.subs[i].queue.is_empty());
            if sent_new || waited {
                self.after_pass(net, c, i, sent_new, waited);
            }
        }
        self.expand_sndbuf();
    }

    /// The application writes (`mptcp_sendmsg`): a blocking writer all it may, a poll-driven
    /// one a single `send()` call. Returns whether a poll-driven writer's call copied anything
    /// (it may then call again).
    fn write_once(&mut self) -> bool {
        let conn = &mut *self;
        if !conn.open {
            return false;
        }
        let total = conn.total_bytes();
        let q = conn.sq.as_deref_mut().expect("linux send side");
        match conn.cuts.as_deref() {
            Some(cuts) => {
                let una = cuts.offset(conn.data_una, conn.mss);
                q.write_carved(una, conn.next_byte, total, true)
            }
            None => q.write(conn.data_una, conn.total_segs, conn.mss, true),
        }
    }

    /// `__mptcp_push_pending`: while written data waits, the scheduler picks a subflow, which
    /// takes a burst of it into its queue (`__subflow_push_pending`) and sends what its window
    /// allows. A pick of None or a closed connection-level window ends it. Returns whether any
    /// subflow took data.
    fn push_pending(&mut self, net: &mut Net, segs: &mut SegPool, c: usize) -> bool {
        let mut pushed = false;
        loop {
            let conn = &mut *self;
            let (app, mss) = (conn.app, conn.mss);
            let q = conn.sq.as_deref_mut().expect("linux send side");
            let written = match conn.cuts {
                Some(_) => conn.next_byte < q.write_bytes,
                None => conn.next_dsn < q.write_end,
            };
            if !written {
                break;
            }
            let window = conn.rwnd_edge.saturating_sub(conn.next_dsn) * u64::from(mss);
            set_timeout(&conn.snd, &conn.views, q, net.now);
            let Some((i, burst)) = pick_linux(&conn.snd, &conn.views, q, mss, window) else {
                break;
            };
            if burst == 0 {
                break;
            }
            let mut left = burst as i64;
            if conn.idle_restart && q.subs[i].queue.is_empty() {
                self.idle_check(i, net.now);
            }
            let conn = &mut *self;
            if conn.cuts.is_some() {
                pushed |= conn.take_carved(i, left);
                self.xmit_queue(net, segs, c, i);
                continue;
            }
            let q = conn.sq.as_deref_mut().expect("linux send side");
            while conn.next_dsn < q.write_end && conn.next_dsn < conn.rwnd_edge {
                let dsn = conn.next_dsn;
                q.subs[i].queue.push_back(dsn);
                conn.next_dsn += 1;
                pushed = true;
                left -= i64::from(seg_len(app, mss, dsn));
                if left <= 0 || !q.memory_free(&conn.snd[i], i, mss) {
                    break;
                }
            }
            self.xmit_queue(net, segs, c, i);
        }
        pushed
    }

    /// Subflow `i` takes a burst of `left` bytes of written data into its queue with
    /// `segmentation = "linux"` (`__subflow_push_pending` -> `mptcp_sendmsg_frag`, Linux 6.18):
    /// whole data fragments, cut into full segments and, where a fragment ends, a short one; a
    /// short segment at the tail of its queue that is the stream's newest (its mapping
    /// continues) grows first, so the fragments of one burst join. After each fragment it
    /// stops if the burst is spent or the subflow's buffer is full; it also stops where the
    /// written data or the receive window ends. A TCP socket has no fragments: it takes what
    /// is written, short only where that ends. Returns whether it took anything.
    pub(super) fn take_carved(&mut self, i: usize, mut left: i64) -> bool {
        let (mss, total) = (self.mss, self.total_bytes());
        let q = self.sq.as_deref_mut().expect("linux send side");
        let cuts = self.cuts.as_deref_mut().expect("segmentation = linux");
        let mut took = false;
        while self.next_byte < q.write_bytes && self.next_dsn < self.rwnd_edge {
            // A TCP socket has no data fragments: its one subflow takes all that is written
            // (`tcp_sendmsg` appends to the unsent tail skb).
            let end = if q.single_path {
                q.write_bytes
            } else {
                q.dfrag_end(self.next_byte).min(q.write_bytes)
            };
            let avail = (end - self.next_byte).min(u64::from(mss)) as u32;
            let tail = q.subs[i].queue.back().copied();
            let add = match tail {
                Some(d) if d + 1 == self.next_dsn && d >= cuts.settled_below => {
                    let have = cuts.len(d, mss);
                    let add = (mss - have).min(avail);
                    if add > 0 {
                        cuts.grow(d, add, mss);
                    }
                    add
                }
                _ => 0,
            };
            let add = if add > 0 {
                add
            } else {
                cuts.cut(self.next_dsn, avail, mss);
                q.subs[i].queue.push_back(self.next_dsn);
                self.next_dsn += 1;
                avail
            };
            self.next_byte += u64::from(add);
            took = true;
            if self.next_byte >= total {
                self.total_segs = self.next_dsn;
            }
            left -= i64::from(add);
            if self.next_byte == end && (left <= 0 || !q.memory_free(&self.snd[i], i, mss)) {
                break;
            }
        }
        took
    }

    /// Subflow `i` sends from its own queue while its window has room (`tcp_write_xmit`). With
    /// `segmentation = "linux"`, a short segment at the tail of the queue waits while one sent
    /// before it is unacknowledged (`tcp_nagle_check` with `tcp_minshall_check`: the socket has
    /// no TCP_NODELAY, as the test bed's sender's has not), unless it ends the file (its FIN
    /// passes `tcp_nagle_test`).
    pub(super) fn xmit_queue(&mut self, net: &mut Net, segs: &mut SegPool, c: usize, i: usize) {
        // `push_flag = "linux"`: this pass's segments leave in GSO packets of `gso` segments
        // (`tcp_write_xmit`), each of more than one with PSH on its last (`__tcp_transmit_skb`).
        let gso_psh = self.sq.as_deref().is_some_and(|q| q.gso_psh);
        let gso = if gso_psh && self.can_xmit(i) {
            self.gso_segs(i)
        } else {
            0
        };
        let mut in_packet = 0;
        while self.can_xmit(i) {
            let conn = &mut *self;
            let q = conn.sq.as_deref_mut().expect("checked by can_xmit");
            let dsn = q.subs[i].queue.pop_front().expect("checked by can_xmit");
            conn.snd[i].sent_in_pass = true;
            let len = conn.seg_len(dsn);
            let seq = conn.snd[i].push_seg(segs, dsn, len, net.now);
            let mut psh = false;
            if gso > 0 {
                in_packet += 1;
                let closes;
                (closes, psh) = gso_close(in_packet, gso, self.can_xmit(i));
                if closes {
                    in_packet = 0;
                }
            }
            self.send_segment_with(net, c, i, seq, Some((dsn, len)), psh);
        }
    }

    /// May subflow `i` send the next segment of its own queue now: room in its window, and not
    /// a short tail held back while an earlier short segment is unacknowledged (Nagle with
    /// Minshall's rule, `tcp_nagle_check`, as `segmentation = "linux"` cuts them)?
    fn can_xmit(&self, i: usize) -> bool {
        let Some(q) = self.sq.as_deref() else {
            return false;
        };
        let sub = &q.subs[i];
        let Some(&dsn) = sub.queue.front() else {
            return false;
        };
        if !self.has_room(i) {
            return false;
        }
        if let Some(cuts) = self.cuts.as_deref() {
            if sub.queue.len() == 1
                && sub.snd_sml > self.snd[i].snd_una
                && cuts.len(dsn, self.mss) < self.mss
                && dsn + 1 != self.total_segs
            {
                return false;
            }
        }
        true
    }

    /// `tcp_tso_segs()` of subflow `i` now, from its pacing rate and its minimum RTT. The rate
    /// is the one the scheduler keeps: set from the handshake when its pick queued the first
    /// data here (`pick_linux`), then by every ACK.
    fn gso_segs(&self, i: usize) -> u32 {
        let q = self.sq.as_deref().expect("linux send side");
        let rate = q.subs[i].pacing_rate;
        let min_rtt = self
            .linux
            .get(i)
            .and_then(|lx| (lx.min_rtt != Nanos::MAX).then_some(lx.min_rtt / 1000));
        let gso_max = if self.kind == FlowKind::Mptcp {
            GSO_MAX_SIZE_MPTCP
        } else {
            GSO_MAX_SIZE_TCP
        };
        tso_segs(rate, min_rtt, self.mss, gso_max)
    }

    /// `mptcp_reset_rtx_timer`: the connection-level retransmission timer expires
    /// `msk->timer_ival` from now, the interval the scheduler last set ([`set_timeout`]).
    pub(crate) fn reset_data_rtx(&mut self, net: &mut Net, c: usize) {
        let now = net.now;
        let q = self.sq.as_deref_mut().expect("linux send side");
        q.rtx_deadline = now + q.timer_ival;
        if q.rtx_event == NO_EVENT || q.rtx_event > q.rtx_deadline {
            q.rtx_event = q.rtx_deadline;
            net.q.push(q.rtx_deadline, Ev::DataRtx(c as u32));
        }
    }

    /// The connection-level retransmission timer may have expired (`mptcp_retransmit_timer`
    /// -> `__mptcp_retrans`): the oldest unacknowledged fragment's data that was sent (at most
    /// [`RTX_FRAG`] bytes from the DATA_ACK point) goes into the queue of the first active
    /// subflow with nothing outstanding and nothing queued (`mptcp_subflow_get_retrans`); with
    /// none such, nothing is re-sent. Then the timer restarts.
    pub(crate) fn on_data_rtx(&mut self, net: &mut Net, segs: &mut SegPool, c: usize) {
        let now = net.now;
        let conn = &mut *self;
        let Some(q) = conn.sq.as_deref_mut() else {
            return;
        };
        if q.rtx_event != now {
            return;
        }
        q.rtx_event = NO_EVENT;
        if q.rtx_deadline == 0 {
            return;
        }
        if now < q.rtx_deadline {
            q.rtx_event = q.rtx_deadline;
            net.q.push(q.rtx_deadline, Ev::DataRtx(c as u32));
            return;
        }
        q.rtx_deadline = 0;
        // `mptcp_subflow_get_retrans` runs first ("kick the stale logic"): each active subflow
        // with data outstanding or queued counts the expiries that found no ACK on it since
        // the first (`mptcp_pm_subflow_chk_stale`).
        for ((s, v), sub) in conn.snd.iter().zip(&conn.views).zip(q.subs.iter_mut()) {
            if v.active && (s.outstanding() > 0 || !sub.queue.is_empty()) {
                let rcv = sub.rcv_tstamp;
                count_stale(sub, rcv);
            }
        }
        if conn.data_una >= conn.next_dsn {
            return;
        }
        let pick = (0..conn.snd.len()).find(|&i| {
            conn.views[i].active && conn.snd[i].outstanding() == 0 && q.subs[i].queue.is_empty()
        });
        if let Some(i) = pick {
            let frag = (RTX_FRAG / u64::from(conn.mss)).max(1);
            let end = conn.next_dsn.min(conn.data_una + frag);
            for dsn in conn.data_una..end {
                q.subs[i].queue.push_back(dsn);
            }
            if let Some(cuts) = conn.cuts.as_deref_mut() {
                // Two subflows now hold these DSNs: an unsent copy must keep its length.
                cuts.settled_below = cuts.settled_below.max(end);
            }
            conn.reinjected += end - conn.data_una;
            q.retrans += 1;
            self.xmit_queue(net, segs, c, i);
            let s = &mut self.snd[i];
            if std::mem::take(&mut s.sent_in_pass) {
                self.after_pass(net, c, i, true, false);
            }
        }
        self.reset_data_rtx(net, c);
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
        self.idle_check(i, net.now);
        let conn = &mut *self;
        if reinjection {
            conn.reinject.pop_front();
            conn.reinjected += 1;
        } else {
            conn.next_dsn += 1;
        }
        let len = conn.seg_len(dsn);
        let seq = conn.snd[i].push_seg(segs, dsn, len, net.now);
        self.send_segment(net, c, i, seq, Some((dsn, len)));
    }

    /// Put segment `seq` of subflow `i` on the wire: a new segment carrying `new = (dsn, len)`
    /// (just pushed to the scoreboard), or a retransmission if `new` is `None`.
    #[inline]
    pub(crate) fn send_segment(
        &mut self,
        net: &mut Net,
        c: usize,
        i: usize,
        seq: u64,
        new: Option<(u64, u32)>,
    ) {
        self.send_segment_with(net, c, i, seq, new, false);
    }

    /// [`Conn::send_segment`], with PSH on the segment if `psh`.
    pub(crate) fn send_segment_with(
        &mut self,
        net: &mut Net,
        c: usize,
        i: usize,
        seq: u64,
        new: Option<(u64, u32)>,
        psh: bool,
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
                let seg = s.seg(seq);
                (seg.dsn(), seg.payload())
            }
        };
        let wire = len + s.header;
        s.lsndtime = now;
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
        if conn.cuts.is_some() && new.is_some() && len < conn.mss {
            // `tcp_minshall_update`.
            if let Some(q) = conn.sq.as_deref_mut() {
                q.subs[i].snd_sml = seq + 1;
            }
        }
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
            psh,
            ..Packet::default()
        };
        if psh {
            if let Some(q) = conn.sq.as_deref_mut() {
                q.psh_sent += 1;
            }
        }
        if let Some(p) = net.send_data(pkt, &mut conn.jitter, &mut conn.snd[i].tx_clock) {
            self.on_drop(&p);
        }
        if new.is_some() {
            self.check_space(i);
        }
    }

    /// `tcp_event_new_data_sent` ends in `tcp_check_space` (net/ipv4/tcp_output.c, Linux
    /// 6.18): after each new segment a subflow whose window still has room expands its send
    /// buffer (`tcp_new_space`), if the writer waits for room (`SOCK_NOSPACE`: a subflow's
    /// socket is the connection's, `mptcp_sock_graft`).
    #[inline]
    fn check_space(&mut self, i: usize) {
        if let Some(q) = self.sq.as_deref_mut() {
            if q.buffers && q.nospace {
                let v = &self.views[i];
                let (cwnd, _) = int_window(v.cwnd, v.ssthresh);
                q.expand(i, cwnd, u64::from(self.snd[i].pipe));
            }
        }
    }

    pub(crate) fn send_ack(&mut self, net: &mut Net, c: usize, j: usize) {
        let conn = &mut *self;
        let r = &mut conn.rcv[j];
        let mut sacks = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let n = r.sack_blocks(&mut sacks);
        r.pending = 0;
        r.delack_deadline = 0;
        r.lx.ack_sent();
        let pkt = Packet::ack(
            c as u32,
            j as u16,
            r.ack_route,
            ACK_BYTES,
            r.last_ts,
            r.last_owd,
            r.rcv_nxt,
            conn.data.rcv_nxt,
            conn.data.advertise(j),
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

/// `push_flag = "linux"` (`tcp_write_xmit` -> `__tcp_transmit_skb`, Linux 6.18): a sending
/// pass's new segments leave in GSO packets of `gso` segments, the last packet with what is
/// left, and a packet of more than one segment carries PSH on its last segment. For the `n`-th
/// segment of its packet (`more`: another segment follows in this pass): whether it closes the
/// packet, and whether it carries PSH.
pub(super) fn gso_close(n: u32, gso: u32, more: bool) -> (bool, bool) {
    let closes = n >= gso || !more;
    (closes, closes && n > 1)
}

#[cfg(test)]
mod push_flag_tests {
    use super::gso_close;

    /// The PSH positions of a pass of `n` new segments in GSO packets of `gso`.
    fn marks(n: u32, gso: u32) -> Vec<u32> {
        let (mut in_packet, mut out) = (0, Vec::new());
        for k in 1..=n {
            in_packet += 1;
            let (closes, psh) = gso_close(in_packet, gso, k < n);
            if psh {
                out.push(k);
            }
            if closes {
                in_packet = 0;
            }
        }
        out
    }

    /// Packets of 2: 5 segments go as 2 + 2 + 1, PSH on the 2nd and 4th; a lone segment has
    /// none. Packets of 3: 7 = 3 + 3 + 1 (PSH on 3, 6), 8 = 3 + 3 + 2 (on 3, 6, 8).
    #[test]
    fn a_pass_marks_the_last_segment_of_each_multi_segment_packet() {
        assert_eq!(marks(5, 2), [2, 4]);
        assert_eq!(marks(1, 2), [] as [u32; 0]);
        assert_eq!(marks(2, 2), [2]);
        assert_eq!(marks(7, 3), [3, 6]);
        assert_eq!(marks(8, 3), [3, 6, 8]);
        assert_eq!(marks(10, 9), [9]);
    }

    /// One TCP flow as Linux sends (`reading = "linux"`) on a path of `delay` one way: the
    /// PSH marks of its first pass, the initial window of 10 segments at t = 0.
    fn first_pass_marks(delay: &str, push_flag: &str) -> u64 {
        let fields = format!("reading = \"linux\"\npush_flag = \"{push_flag}\"\nsend_jitter = 0");
        let mut sim = crate::conn::testing::one_tcp_flow("1Gbps", delay, "1000pkt", &fields);
        sim.run_until(1_000);
        let (c, _) = sim.world.conn0();
        assert_eq!(c.snd[0].snd_nxt, 10, "the initial window");
        c.sq.as_deref().map_or(0, |q| q.psh_sent)
    }

    /// The first pass's pacing rate is 200% of 10 segments per handshake RTT
    /// (`tcp_update_pacing_rate`), so `tcp_tso_autosize` gives ~1 ms of it: over 20 ms,
    /// 1,448 x 10 x 2 / 0.02 s = 1.448 MB/s, 1,414 bytes: packets of 2 (the minimum), PSH on 5
    /// segments; over 2 ms, 14.48 MB/s, 14,140 bytes: packets of 9, the 10th alone, PSH on 1.
    #[test]
    fn the_initial_window_leaves_in_gso_packets_as_the_pacing_rate_sizes_them() {
        assert_eq!(first_pass_marks("10ms", "linux"), 5);
        assert_eq!(first_pass_marks("1ms", "linux"), 1);
        assert_eq!(first_pass_marks("10ms", "none"), 0);
    }
}

//! One subflow's receiver: the subflow sequence space reassembled, the SACK blocks of its ACKs
//! (RFC 2018), and the delayed-ACK state (`delayed_ack = true`: a fixed rule; `"linux"`:
//! [`LinuxDelack`]).

use crate::net::packet::MAX_SACK_BLOCKS;
use crate::time::{Nanos, NS_PER_MS};

/// Delayed-ACK timer of `delayed_ack = true` (Linux's minimum ACK timeout, `TCP_ATO_MIN`).
pub const DELACK_TIMEOUT: Nanos = 40 * NS_PER_MS;

/// Linux's `TCP_ATO_MIN` (= `TCP_DELACK_MIN`, HZ / 25): the smallest ACK timeout.
pub const TCP_ATO_MIN: Nanos = 40 * NS_PER_MS;
/// Linux's `TCP_DELACK_MAX` (HZ / 5, the default `icsk_delack_max`): the largest.
pub const TCP_DELACK_MAX: Nanos = 200 * NS_PER_MS;
/// Linux's `TCP_MAX_QUICKACKS`: at most this many quick ACKs per entry into quick-ACK mode.
pub const TCP_MAX_QUICKACKS: u32 = 16;
/// `tcp_send_delayed_ack`'s bound on the timeout before the RTT's (HZ / 2).
const MAX_ATO: Nanos = 500 * NS_PER_MS;
/// Linux's `TCP_RTO_MIN` and `TCP_RTO_MAX`, for the receiver's own RTO.
const TCP_RTO_MIN: Nanos = 200 * NS_PER_MS;
const TCP_RTO_MAX: Nanos = 120_000 * NS_PER_MS;
/// The receive window a Linux receiver offers before window scaling takes effect
/// (`tcp_select_initial_window` caps it at `U16_MAX`).
const INIT_RCV_WND: u64 = 65_535;

/// Linux's receiver-side ACK decisions for one subflow (`delayed_ack = "linux"`), following
/// net/ipv4/tcp_input.c, tcp_output.c and tcp_timer.c of Linux 6.18:
///
/// - `__tcp_ack_snd_check`: ACK at once when more than one full segment (`rcv_mss` bytes) is
///   unACKed, or in quick-ACK mode (`tcp_in_quickack_mode`), or out-of-order data is queued;
///   else arm the delayed-ACK timer (`tcp_send_delayed_ack`). Linux also asks that the window
///   it would offer does not shrink (`__tcp_select_window(sk) >= tp->rcv_wnd`): the simulated
///   application reads everything at once, so that holds and is not checked.
/// - Quick-ACK mode (`tcp_incr_quickack`, `tcp_enter_quickack_mode`): `quick` =
///   min(rcv_wnd / (2 rcv_mss), [`TCP_MAX_QUICKACKS`]) (2 if that is 0) ACKs at once, entered
///   by `tcp_event_data_recv` at the first data segment and after a gap in arrivals longer
///   than the RTO, and by `tcp_data_queue` for a duplicate (already received) segment, which
///   also resets `ato`. Each ACK sent uses one (`tcp_dec_quickack_mode`); the last resets
///   `ato` to [`TCP_ATO_MIN`]. Out-of-order data does not enter quick-ACK mode in Linux >=
///   4.18; it is ACKed at once, and a segment that fills the hole completely is ACKed at once
///   too (`ICSK_ACK_NOW`).
/// - The ACK timeout `ato` (`tcp_event_data_recv`, on in-order data): [`TCP_ATO_MIN`] at the
///   first segment; then with `m` the time since the previous in-order segment,
///   `ato = ato / 2 + TCP_ATO_MIN / 2` if `m <= TCP_ATO_MIN / 2`, else `min(ato / 2 + m, rto)`
///   if `m < ato`, else unchanged. `tcp_send_delayed_ack` arms the timer for
///   `min(ato, max(srtt, TCP_ATO_MIN), 500 ms)` when `ato > TCP_ATO_MIN`, never beyond
///   [`TCP_DELACK_MAX`] (so `ICSK_ACK_PUSHED`, which lowers 500 ms to 200 ms, changes
///   nothing); an armed timer is kept if earlier, and if it is due within `ato / 4` the ACK
///   goes at once. When the timer fires (`tcp_delack_timer_handler`) a receiver that sends
///   no data (never in ping-pong mode, as here) doubles `ato`, at most to its RTO.
/// - `rcv_mss` (`tcp_measure_rcv_mss`) is taken as the flow's full segment payload (the
///   largest segment Linux would see); `rcv_wnd` as the initial window min(rcv_buffer,
///   65,535) (Linux's grows later, which changes `quick` only for windows under 32
///   segments); the receiver's `srtt` and RTO come from its one RTT sample, the handshake
///   (`tcp_rtt_estimator`, `__tcp_set_rto`: RTO = m + max(2m, 200 ms)).
///
/// - ACKs when the application reads (`tcp_cleanup_rbuf`; for MPTCP `mptcp_cleanup_rbuf` ->
///   `mptcp_subflow_could_cleanup`, net/mptcp/protocol.c): an in-order segment shorter than
///   `rcv_mss`, or a full one with PSH (`push_flag = "linux"`: the last of each GSO packet of
///   more than one segment), marks the pending ACK `ICSK_ACK_PUSHED` (`tcp_measure_rcv_mss`);
///   a read that
///   leaves the receive queue empty (the connection's, for MPTCP: nothing held out of order at
///   the data level) then sends every pushed pending ACK at once, on every subflow of the
///   connection. The simulated application reads whenever data is delivered in order.
///
/// Not modelled: SACK compression (`tcp_sack_compress_send_ack`: after three immediate
/// duplicate ACKs for one `rcv_nxt`, Linux holds further ones up to min(1 ms, RTT / 20)), the
/// window-update ACKs of a read that doubles the window offered, the `rcv_mss` that two equal
/// short segments in a row set, and the application's own delay before it reads (Linux sends
/// most delayed ACKs from that read, `tcp_cleanup_rbuf`, a few microseconds after the segment
/// on the test bed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinuxDelack {
    /// Quick ACKs left (`icsk_ack.quick`).
    pub quick: u32,
    /// The ACK timeout (`icsk_ack.ato`); 0 until the first data segment.
    pub ato: Nanos,
    /// When the last in-order data segment arrived (`icsk_ack.lrcvtime`).
    pub lrcvtime: Nanos,
    /// In-order payload bytes since the last ACK (`rcv_nxt - rcv_wup`).
    pub unacked: u64,
    pub rcv_mss: u32,
    pub rcv_wnd: u64,
    pub srtt: Nanos,
    pub rto: Nanos,
    /// A short in-order segment arrived since the last ACK (`ICSK_ACK_PUSHED`).
    pub pushed: bool,
}

impl LinuxDelack {
    /// A receiver with segments of `rcv_mss` payload bytes, a `rcv_buffer`-byte buffer and a
    /// handshake RTT of `rtt`.
    pub fn new(rcv_mss: u32, rcv_buffer: u64, rtt: Nanos) -> Self {
        LinuxDelack {
            rcv_mss: rcv_mss.max(1),
            rcv_wnd: rcv_buffer.min(INIT_RCV_WND),
            srtt: rtt,
            rto: (rtt + (2 * rtt).max(TCP_RTO_MIN)).min(TCP_RTO_MAX),
            ..Self::default()
        }
    }

    /// `tcp_incr_quickack`.
    fn incr_quickack(&mut self) {
        let q = self.rcv_wnd / (2 * u64::from(self.rcv_mss));
        let q = if q == 0 {
            2
        } else {
            q.min(u64::from(TCP_MAX_QUICKACKS)) as u32
        };
        self.quick = self.quick.max(q);
    }

    /// `tcp_enter_quickack_mode` (a duplicate segment).
    pub fn enter_quickack(&mut self) {
        self.incr_quickack();
        self.ato = TCP_ATO_MIN;
    }

    /// `tcp_event_data_recv`: in-order data arrived at `now`.
    pub fn data_recv(&mut self, now: Nanos) {
        if self.ato == 0 {
            self.incr_quickack();
            self.ato = TCP_ATO_MIN;
        } else {
            let m = now - self.lrcvtime;
            if m <= TCP_ATO_MIN / 2 {
                self.ato = self.ato / 2 + TCP_ATO_MIN / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(self.rto);
            } else if m > self.rto {
                // The sender stalled: ACK quickly again while it restarts.
                self.incr_quickack();
            }
        }
        self.lrcvtime = now;
    }

    /// An in-order segment of `len` payload bytes at `now` (`psh`: it carries PSH) with
    /// nothing held out of order: `tcp_event_data_recv`, then `__tcp_ack_snd_check`'s choice.
    /// True: ACK now. A short segment, or a full one with PSH, marks the ACK pushed
    /// (`tcp_measure_rcv_mss`).
    pub fn in_order(&mut self, now: Nanos, len: u32, psh: bool) -> bool {
        self.data_recv(now);
        self.unacked += u64::from(len);
        if len < self.rcv_mss || psh {
            self.pushed = true;
        }
        self.unacked > u64::from(self.rcv_mss) || self.quick > 0
    }

    /// `tcp_send_delayed_ack` at `now` with the timer armed for `armed` (or not): when the
    /// timer should fire, or `None` to ACK now (the armed timer is due within `ato / 4`).
    pub fn delay(&self, now: Nanos, armed: Option<Nanos>) -> Option<Nanos> {
        let mut ato = self.ato;
        if ato > TCP_ATO_MIN {
            let max_ato = if self.srtt > 0 {
                MAX_ATO.min(self.srtt.max(TCP_ATO_MIN))
            } else {
                MAX_ATO
            };
            ato = ato.min(max_ato);
        }
        let ato = ato.min(TCP_DELACK_MAX);
        let mut timeout = now + ato;
        if let Some(t) = armed {
            if t <= now + ato / 4 {
                return None;
            }
            timeout = timeout.min(t);
        }
        Some(timeout)
    }

    /// `tcp_delack_timer_handler` before its ACK (not in ping-pong mode): inflate `ato`.
    pub fn timer_fired(&mut self) {
        self.ato = (self.ato * 2).min(self.rto);
    }

    /// An ACK went out (`tcp_event_ack_sent` -> `tcp_dec_quickack_mode`).
    pub fn ack_sent(&mut self) {
        self.unacked = 0;
        self.pushed = false;
        if self.quick > 0 {
            if self.quick == 1 {
                self.ato = TCP_ATO_MIN;
            }
            self.quick -= 1;
        }
    }
}

/// The receiving side of one subflow.
#[derive(Debug)]
pub struct Receiver {
    /// The route its ACKs take back to the sender (as `Sender::route`).
    pub ack_route: u32,
    pub rcv_nxt: u64,
    /// Out-of-order blocks above `rcv_nxt`, sorted, disjoint, non-adjacent: `[start, end)`.
    pub ooo: Vec<(u64, u64)>,
    /// The most recently received segment (its block is reported first, RFC 2018).
    last_seq: u64,
    /// In-order segments received since the last ACK (delayed ACKs).
    pub pending: u32,
    pub delack_deadline: Nanos,
    pub delack_event: Nanos,
    /// Echoed timestamp and one-way delay of the segment that triggers the next ACK.
    pub last_ts: Nanos,
    pub last_owd: Nanos,
    /// `delayed_ack = "linux"` only.
    pub lx: LinuxDelack,
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver {
            ack_route: 0,
            rcv_nxt: 0,
            ooo: Vec::with_capacity(8),
            last_seq: 0,
            pending: 0,
            delack_deadline: 0,
            delack_event: Nanos::MAX,
            last_ts: 0,
            last_owd: 0,
            lx: LinuxDelack::default(),
        }
    }
}

/// What the arrival of one segment meant to the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Filled `rcv_nxt` and nothing is held out of order.
    InOrder,
    /// Filled `rcv_nxt` (a hole) or arrived above it: out-of-order state involved.
    Reordered,
    /// Already received.
    Duplicate,
}

impl Receiver {
    pub fn on_segment(&mut self, seq: u64) -> Arrival {
        if seq < self.rcv_nxt {
            return Arrival::Duplicate;
        }
        self.last_seq = seq;
        if seq == self.rcv_nxt {
            self.rcv_nxt += 1;
            if let Some(&(a, b)) = self.ooo.first() {
                if a == self.rcv_nxt {
                    self.rcv_nxt = b;
                    self.ooo.remove(0);
                }
                return Arrival::Reordered;
            }
            return Arrival::InOrder;
        }
        // Insert into the sorted block list, merging neighbours.
        let i = self.ooo.partition_point(|&(_, b)| b < seq);
        if i < self.ooo.len() {
            let (a, b) = self.ooo[i];
            if seq >= a && seq < b {
                return Arrival::Duplicate;
            }
            if seq + 1 == a {
                self.ooo[i].0 = seq;
                return Arrival::Reordered;
            }
            if seq == b {
                self.ooo[i].1 = b + 1;
                if i + 1 < self.ooo.len() && self.ooo[i + 1].0 == b + 1 {
                    self.ooo[i].1 = self.ooo[i + 1].1;
                    self.ooo.remove(i + 1);
                }
                return Arrival::Reordered;
            }
        }
        self.ooo.insert(i, (seq, seq + 1));
        Arrival::Reordered
    }

    /// SACK blocks for the next ACK: the block holding the latest segment first (RFC 2018
    /// section 4), then the highest others.
    pub fn sack_blocks(&self, out: &mut [(u64, u64); MAX_SACK_BLOCKS]) -> u8 {
        let mut n = 0;
        let first = self
            .ooo
            .iter()
            .position(|&(a, b)| self.last_seq >= a && self.last_seq < b);
        if let Some(i) = first {
            out[0] = self.ooo[i];
            n = 1;
        }
        for (j, &blk) in self.ooo.iter().enumerate().rev() {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            if Some(j) != first {
                out[n] = blk;
                n += 1;
            }
        }
        n as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_reassembles_and_reports_blocks() {
        let mut r = Receiver::default();
        assert_eq!(r.on_segment(0), Arrival::InOrder);
        assert_eq!(r.on_segment(2), Arrival::Reordered);
        assert_eq!(r.on_segment(5), Arrival::Reordered);
        assert_eq!(r.on_segment(3), Arrival::Reordered);
        assert_eq!(r.ooo, vec![(2, 4), (5, 6)]);
        let mut b = [(0, 0); MAX_SACK_BLOCKS];
        assert_eq!(r.sack_blocks(&mut b), 2);
        assert_eq!(&b[..2], &[(2, 4), (5, 6)]);
        assert_eq!(r.on_segment(4), Arrival::Reordered);
        assert_eq!(r.ooo, vec![(2, 6)]);
        assert_eq!(r.on_segment(3), Arrival::Duplicate);
        assert_eq!(r.on_segment(1), Arrival::Reordered);
        assert_eq!(r.rcv_nxt, 6);
        assert!(r.ooo.is_empty());
        assert_eq!(r.on_segment(0), Arrival::Duplicate);
    }

    const MS: Nanos = NS_PER_MS;

    #[test]
    fn linux_a_full_segment_with_psh_marks_the_pending_ack_pushed() {
        let mut d = LinuxDelack::new(1448, 1 << 22, 20 * MS);
        d.quick = 0;
        d.ato = TCP_ATO_MIN;
        // A full segment without PSH: delayed, not pushed; with PSH: delayed, pushed
        // (`tcp_measure_rcv_mss`), for the read that empties the queue to send.
        assert!(!d.in_order(0, 1448, false));
        assert!(!d.pushed);
        d.ack_sent();
        assert!(!d.in_order(MS, 1448, true));
        assert!(d.pushed);
    }

    #[test]
    fn linux_a_short_segment_marks_the_pending_ack_pushed_until_an_ack_goes() {
        let mut d = LinuxDelack::new(1448, 4 << 20, 20 * MS);
        d.quick = 0;
        d.ato = TCP_ATO_MIN;
        assert!(!d.in_order(0, 1448, false));
        assert!(!d.pushed);
        // 1,448 + 100 bytes unACKed > rcv_mss: ACK now by the arrival rule, and pushed.
        assert!(d.in_order(MS, 100, false));
        assert!(d.pushed);
        d.ack_sent();
        assert!(!d.pushed);
        // Alone, a short segment is delayed at arrival; only the read that empties the queue
        // sends its ACK (`tcp_cleanup_rbuf`, in `Conn::linux_ack_check`).
        assert!(!d.in_order(2 * MS, 100, false));
        assert!(d.pushed);
    }

    /// `mptcp_cleanup_rbuf`: a read that empties the connection's queue sends the pushed
    /// pending ACK of another subflow too (its short segment had waited, held out of order at
    /// the data level); a pending ACK that is not pushed, or a read that leaves data queued,
    /// sends nothing.
    #[test]
    fn linux_the_read_that_empties_the_connection_acks_a_siblings_pushed_segment() {
        use crate::conn::input::Segment;
        use crate::conn::receiver::Arrival;
        use crate::{Scenario, Simulation};
        let text = r#"
            name = "t"
            duration = "2s"
            [[links]]
            name = "a"
            rate = "10Mbps"
            delay = "10ms"
            [[links]]
            name = "b"
            rate = "10Mbps"
            delay = "20ms"
            [[paths]]
            name = "pa"
            links = ["a"]
            [[paths]]
            name = "pb"
            links = ["b"]
            [[flows]]
            name = "m"
            kind = "mptcp"
            paths = ["pa", "pb"]
            delayed_ack = "linux"
        "#;
        let sc = Scenario::from_toml_str(text, "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        let (c, net) = sim.world.conn0();
        for (pushed, emptied, sent) in [
            (true, true, true),
            (false, true, false),
            (true, false, false),
        ] {
            c.rcv[1].lx.pushed = pushed;
            c.rcv[1].delack_deadline = 500 * MS;
            c.rcv[1].pending = 1;
            c.rcv[0].lx.quick = 16;
            let seg = Segment {
                arrival: Arrival::InOrder,
                fills: true,
                len: 1448,
                emptied,
                psh: false,
            };
            c.linux_ack_check(net, 0, 0, seg);
            let r = &c.rcv[1];
            assert_eq!(
                r.delack_deadline == 0,
                sent,
                "pushed {pushed}, emptied {emptied}"
            );
            assert_eq!(r.lx.pushed, pushed && !sent);
        }
    }

    /// A TCP download of 20 full segments and one of 100 bytes, `delayed_ack = "linux"`: ACKs
    /// for the first 16 at once (quick-ACK mode), then for every second (18, 20); the 21st is
    /// short, alone: `__tcp_ack_snd_check` would delay it (the timer at +40 ms), but the
    /// application reads it and leaves the queue empty, so `tcp_cleanup_rbuf` ACKs it at once.
    #[test]
    fn linux_the_read_that_empties_the_queue_acks_a_short_segment_at_once() {
        use crate::{Scenario, Simulation};
        let text = r#"
            name = "t"
            duration = "2s"
            [[links]]
            name = "a"
            rate = "100Mbps"
            delay = "10ms"
            buffer = 1000
            [[paths]]
            name = "pa"
            links = ["a"]
            [[flows]]
            name = "t"
            kind = "tcp"
            path = "pa"
            app = "file"
            size = "29060B"
            delayed_ack = "linux"
            send_jitter = 0
        "#;
        let sc = Scenario::from_toml_str(text, "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        let mut t = 0;
        while sim.world.conn0().0.completion.is_none() {
            t += 10_000;
            assert!(t < 1_000_000_000, "the download never completed");
            sim.run_until(t);
        }
        let (c, _) = sim.world.conn0();
        assert_eq!(c.data.delivered_bytes, 29_060);
        let r = &c.rcv[0];
        assert_eq!((r.delack_deadline, r.pending, r.lx.unacked), (0, 0, 0));
        assert!(!r.lx.pushed);
    }

    /// One in-order full segment at `t`: did it go out at once? (An ACK sent is recorded.)
    fn seg(d: &mut LinuxDelack, t: Nanos) -> bool {
        let now = d.in_order(t, 1448, false);
        if now {
            d.ack_sent();
        }
        now
    }

    #[test]
    fn linux_quick_acks_the_first_sixteen_then_every_second_full_segment() {
        // 4 MiB buffer: rcv_wnd = 65,535 bytes, 65,535 / (2 x 1,448) = 22 > 16.
        let mut d = LinuxDelack::new(1448, 4 << 20, 20 * MS);
        let at_once: Vec<bool> = (0..24).map(|k| seg(&mut d, k * MS)).collect();
        let mut want = vec![true; 16];
        want.extend([false, true, false, true, false, true, false, true]);
        assert_eq!(at_once, want);
        assert_eq!((d.quick, d.ato), (0, TCP_ATO_MIN));
        // The window bounds quick-ACK mode: 8,000 / 2,896 = 2; a window under 2 segments: 2.
        for (buf, quick) in [(8000, 2), (2896, 1), (2000, 2)] {
            let mut d = LinuxDelack::new(1448, buf, 20 * MS);
            d.data_recv(0);
            assert_eq!(d.quick, quick, "rcv_buffer {buf}");
        }
    }

    #[test]
    fn linux_lone_segment_waits_ato_and_the_timer_inflates_it() {
        // RTT 20 ms: RTO = 20 + max(40, 200) = 220 ms.
        let mut d = LinuxDelack::new(1448, 4 << 20, 20 * MS);
        assert_eq!(d.rto, 220 * MS);
        for k in 0..16 {
            assert!(seg(&mut d, k * MS));
        }
        // A lone segment 5 ms later: ato = 40 / 2 + 20 = 40 ms, timer at +40 ms.
        assert!(!d.in_order(20 * MS, 1448, false));
        assert_eq!(d.delay(20 * MS, None), Some(60 * MS));
        // It fires: ato doubles (80, 160, then the RTO 220), and the ACK goes out.
        d.timer_fired();
        d.ack_sent();
        assert_eq!(d.ato, 80 * MS);
        // The next lone segment 100 ms later (m >= ato, m <= RTO: ato kept): the timer is
        // bounded by max(srtt, 40 ms) = 40 ms since ato > 40 ms.
        assert!(!d.in_order(120 * MS, 1448, false));
        assert_eq!(d.ato, 80 * MS);
        assert_eq!(d.delay(120 * MS, None), Some(160 * MS));
        d.timer_fired();
        d.timer_fired();
        assert_eq!(d.ato, 220 * MS);
        // With a 100 ms RTT the same ato of 80 ms is the timeout; 300 ms would be capped
        // at TCP_DELACK_MAX.
        let mut e = LinuxDelack::new(1448, 4 << 20, 100 * MS);
        e.ato = 80 * MS;
        assert_eq!(e.delay(0, None), Some(80 * MS));
        e.ato = 300 * MS;
        assert_eq!(e.delay(0, None), Some(100 * MS));
        e.srtt = 400 * MS;
        assert_eq!(e.delay(0, None), Some(TCP_DELACK_MAX));
        // An armed timer is kept when earlier, and due within ato / 4 it means ACK now.
        e.ato = TCP_ATO_MIN;
        assert_eq!(e.delay(20 * MS, Some(40 * MS)), Some(40 * MS));
        assert_eq!(e.delay(35 * MS, Some(40 * MS)), None);
    }

    #[test]
    fn linux_ato_follows_inter_arrival_times() {
        // RTT 100 ms: RTO = 100 + 200 = 300 ms.
        let mut d = LinuxDelack::new(1448, 4 << 20, 100 * MS);
        d.data_recv(0);
        assert_eq!((d.ato, d.quick), (40 * MS, 16));
        d.quick = 0;
        let mut t = 0;
        // gap -> ato: 10 (<= 20): 20 + 20; 30 (< 40): 20 + 30; 45 (< 50): 25 + 45;
        // 100 (>= 70): kept; 60 (< 70): 35 + 60.
        for (gap, ato) in [(10, 40), (30, 50), (45, 70), (100, 70), (60, 95)] {
            t += gap * MS;
            d.data_recv(t);
            assert_eq!(d.ato, ato * MS, "after a gap of {gap} ms");
            assert_eq!(d.quick, 0);
        }
        // A gap beyond the RTO: quick-ACK mode again, ato kept; the last quick ACK resets it.
        t += 301 * MS;
        d.data_recv(t);
        assert_eq!((d.ato, d.quick), (95 * MS, 16));
        for _ in 0..15 {
            d.ack_sent();
        }
        assert_eq!((d.ato, d.quick), (95 * MS, 1));
        d.ack_sent();
        assert_eq!((d.ato, d.quick), (TCP_ATO_MIN, 0));
        // ato / 2 + m is bounded by the RTO: ato 500 ms (say, inflated under a longer RTO)
        // and a gap of 290 ms give 540, capped at 300.
        d.ato = 500 * MS;
        t += 290 * MS;
        d.data_recv(t);
        assert_eq!(d.ato, 300 * MS);
        // A duplicate: quick-ACK mode and ato back to 40 ms.
        d.enter_quickack();
        assert_eq!((d.ato, d.quick), (TCP_ATO_MIN, 16));
    }
}

//! One TCP subflow: the sender's SACK scoreboard with RFC 6675 loss recovery and the RFC 6298
//! retransmission timer, and the receiver's reassembly state with SACK generation (RFC 2018).
//!
//! Sequence numbers count segments, not bytes: every segment but possibly a file's last one is
//! one MSS, so RFC 6675's byte rules ("DupThresh * SMSS bytes SACKed above") become segment
//! counts. The event-driven glue (sending, timers, calling the congestion controller) lives in
//! `sim.rs`; this module is the bookkeeping, testable on its own.

use std::collections::VecDeque;

use crate::packet::MAX_SACK_BLOCKS;
use crate::time::{Nanos, NS_PER_MS, NS_PER_SEC};

/// RFC 6675 DupThresh.
pub const DUP_THRESH: u32 = 3;
/// Linux `TCP_RTO_MIN` (200 ms); RFC 6298 (2.4) says 1 s, Linux uses 200 ms.
pub const RTO_MIN: Nanos = 200 * NS_PER_MS;
/// Linux `TCP_RTO_MAX` (120 s); RFC 6298 (2.5) allows a maximum of at least 60 s.
pub const RTO_MAX: Nanos = 120 * NS_PER_SEC;
/// RFC 6298 (2.1): initial RTO of 1 s.
pub const RTO_INIT: Nanos = NS_PER_SEC;
/// Clock granularity G of RFC 6298 (2.3); the simulator's clock is exact, so 1 ms like Linux's
/// jiffy-less TCP.
pub const CLOCK_G: Nanos = NS_PER_MS;
/// Delayed-ACK timer (Linux `TCP_DELACK_MAX`-ish 40 ms).
pub const DELACK_TIMEOUT: Nanos = 40 * NS_PER_MS;

pub const SACKED: u8 = 1;
pub const LOST: u8 = 2;
pub const RETX: u8 = 4;
pub const REINJECTED: u8 = 8;
pub const EVER_RETX: u8 = 16;

/// One outstanding segment in the scoreboard.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seg {
    pub dsn: u64,
    pub len: u32,
    pub sent_at: Nanos,
    pub flags: u8,
}

impl Seg {
    /// This segment's share of RFC 6675 `pipe`: an un-SACKed segment counts once unless it is
    /// deemed lost, plus once more if it was retransmitted (SetPipe, RFC 6675 section 4).
    #[inline]
    pub fn pipe(&self) -> u32 {
        if self.flags & SACKED != 0 {
            0
        } else {
            u32::from(self.flags & LOST == 0) + u32::from(self.flags & RETX != 0)
        }
    }

    #[inline]
    fn awaits_retx(&self) -> bool {
        self.flags & (SACKED | LOST | RETX) == LOST
    }
}

/// What one ACK did to the scoreboard.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckEffect {
    /// Segments newly acknowledged, cumulatively or selectively (each counted once).
    pub segs: u32,
    pub bytes: u64,
    /// Did the cumulative ACK point advance?
    pub advanced: bool,
    /// Did the ACK SACK anything not SACKed before?
    pub new_sack: bool,
    /// Segments newly marked lost by the SACK rule.
    pub newly_lost: u32,
}

/// The sending side of one subflow.
#[derive(Debug)]
pub struct Sender {
    /// Oldest unacknowledged subflow sequence number (HighACK + 1).
    pub snd_una: u64,
    /// Next new sequence number (HighData + 1).
    pub snd_nxt: u64,
    /// Segments `snd_una..snd_nxt`, index `seq - snd_una`.
    pub sb: VecDeque<Seg>,
    /// RFC 6675 pipe, in segments.
    pub pipe: u32,
    /// Segments deemed lost and not yet retransmitted (nothing to retransmit when 0).
    pub awaiting_retx: u32,
    /// One past the highest SACKed sequence number.
    pub high_sacked: u64,
    /// Every un-SACKed segment below this is deemed lost.
    pub lost_frontier: u64,
    /// No segment below this awaits retransmission (RFC 6675 HighRxt, roughly).
    pub retx_hint: u64,
    pub dupacks: u32,
    pub in_recovery: bool,
    /// Recovery ends when `snd_una` passes this (RFC 6675 RecoveryPoint + 1).
    pub recovery_point: u64,
    /// After an RTO, until `snd_una` passes `loss_point` (Linux `TCP_CA_Loss`).
    pub in_loss: bool,
    pub loss_point: u64,
    /// Timer expiries since the cumulative ACK point last advanced (Linux `icsk_retransmits`):
    /// a re-expiry with this > 0 is the same loss episode, and keeps `ssthresh`.
    pub rto_backoffs: u32,
    // Linux cwnd-limited tracking (`tcp_cwnd_validate`), see `cwnd_validate`.
    /// The sender was blocked by its window in the window now being acknowledged.
    pub cwnd_limited: bool,
    /// Largest `packets_out` (`snd_nxt - snd_una`) seen in that window.
    pub max_packets_out: u64,
    /// The window ends when `snd_una` reaches this (Linux `cwnd_usage_seq`).
    pub cwnd_usage_seq: u64,
    /// New data went out on this subflow in the current send pass.
    pub sent_in_pass: bool,
    // RFC 6298 state.
    srtt: f64,
    /// `srtt` rounded to whole nanoseconds (read per ACK and per scheduling decision).
    srtt_ns: Nanos,
    rttvar: f64,
    pub has_rtt: bool,
    pub rto: Nanos,
    /// When the retransmission timer expires; 0 = not armed.
    pub rto_deadline: Nanos,
    /// Time of the pending timer event, `Nanos::MAX` if none.
    pub rto_event: Nanos,
    // Counters.
    pub sent: u64,
    pub sent_wire_bytes: u64,
    pub retransmitted: u64,
    pub rto_count: u64,
    pub acked_bytes: u64,
    pub rtt_sum: f64,
    pub rtt_n: u64,
    pub cwnd_integral: f64,
    pub cwnd_since: Nanos,
    /// When the host last released a data packet of this subflow (send jitter keeps order).
    pub tx_clock: Nanos,
}

impl Default for Sender {
    fn default() -> Self {
        Sender {
            snd_una: 0,
            snd_nxt: 0,
            sb: VecDeque::with_capacity(64),
            pipe: 0,
            awaiting_retx: 0,
            high_sacked: 0,
            lost_frontier: 0,
            retx_hint: 0,
            dupacks: 0,
            in_recovery: false,
            recovery_point: 0,
            in_loss: false,
            loss_point: 0,
            rto_backoffs: 0,
            cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            sent_in_pass: false,
            srtt: 0.0,
            srtt_ns: 0,
            rttvar: 0.0,
            has_rtt: false,
            rto: RTO_INIT,
            rto_deadline: 0,
            rto_event: Nanos::MAX,
            sent: 0,
            sent_wire_bytes: 0,
            retransmitted: 0,
            rto_count: 0,
            acked_bytes: 0,
            rtt_sum: 0.0,
            rtt_n: 0,
            cwnd_integral: 0.0,
            cwnd_since: 0,
            tx_clock: 0,
        }
    }
}

impl Sender {
    #[inline]
    pub fn outstanding(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    #[inline]
    pub fn seg(&self, seq: u64) -> &Seg {
        &self.sb[(seq - self.snd_una) as usize]
    }

    /// Change a segment's flags, keeping `pipe` and `awaiting_retx` consistent.
    #[inline]
    fn set_flags(&mut self, seq: u64, flags: u8) {
        let i = (seq - self.snd_una) as usize;
        let old = self.sb[i];
        let mut new = old;
        new.flags = flags;
        self.pipe = self.pipe + new.pipe() - old.pipe();
        self.awaiting_retx =
            self.awaiting_retx + u32::from(new.awaits_retx()) - u32::from(old.awaits_retx());
        self.sb[i] = new;
    }

    /// Record a new segment `snd_nxt` carrying `dsn`.
    pub fn push_new(&mut self, dsn: u64, len: u32, now: Nanos) -> u64 {
        let seq = self.snd_nxt;
        self.sb.push_back(Seg {
            dsn,
            len,
            sent_at: now,
            flags: 0,
        });
        self.snd_nxt += 1;
        self.pipe += 1;
        seq
    }

    /// Record the retransmission of `seq` now.
    pub fn mark_retransmitted(&mut self, seq: u64, now: Nanos) {
        let f = self.seg(seq).flags;
        self.set_flags(seq, f | RETX | EVER_RETX);
        let i = (seq - self.snd_una) as usize;
        self.sb[i].sent_at = now;
    }

    /// The lowest segment deemed lost and not yet retransmitted (RFC 6675 NextSeg rule 1).
    pub fn next_retx(&mut self) -> Option<u64> {
        if self.awaiting_retx == 0 {
            return None;
        }
        let mut s = self.retx_hint.max(self.snd_una);
        while s < self.snd_nxt {
            if self.seg(s).awaits_retx() {
                self.retx_hint = s;
                return Some(s);
            }
            s += 1;
        }
        debug_assert!(false, "awaiting_retx out of sync");
        None
    }

    /// Apply a cumulative ACK (`cum` = next expected) and SACK blocks.
    pub fn on_ack(&mut self, cum: u64, sacks: &[(u64, u64)]) -> AckEffect {
        let mut eff = AckEffect::default();
        let cum = cum.min(self.snd_nxt);
        while self.snd_una < cum {
            let s = self.sb.pop_front().expect("scoreboard shorter than window");
            self.pipe -= s.pipe();
            self.awaiting_retx -= u32::from(s.awaits_retx());
            if s.flags & SACKED == 0 {
                eff.segs += 1;
                eff.bytes += u64::from(s.len);
            }
            self.snd_una += 1;
            eff.advanced = true;
        }
        self.high_sacked = self.high_sacked.max(self.snd_una);
        self.lost_frontier = self.lost_frontier.max(self.snd_una);
        for &(a, b) in sacks {
            let a = a.max(self.snd_una);
            let b = b.min(self.snd_nxt);
            let mut s = a;
            while s < b {
                let f = self.seg(s).flags;
                if f & SACKED == 0 {
                    self.set_flags(s, f | SACKED);
                    eff.segs += 1;
                    eff.bytes += u64::from(self.seg(s).len);
                    eff.new_sack = true;
                }
                s += 1;
            }
            if b > a {
                self.high_sacked = self.high_sacked.max(b);
            }
        }
        if eff.new_sack {
            eff.newly_lost = self.mark_lost_by_sack();
        }
        self.acked_bytes += eff.bytes;
        eff
    }

    /// RFC 6675 IsLost: an un-SACKed segment is lost once DupThresh segments above it are
    /// SACKed. The threshold point only moves up, so each segment is visited once.
    fn mark_lost_by_sack(&mut self) -> u32 {
        let mut count = 0;
        let mut s = self.high_sacked;
        let floor = self.lost_frontier.max(self.snd_una);
        let mut frontier = None;
        while s > floor {
            s -= 1;
            if self.seg(s).flags & SACKED != 0 {
                count += 1;
                if count == DUP_THRESH {
                    frontier = Some(s);
                    break;
                }
            }
        }
        let Some(f) = frontier else { return 0 };
        let mut newly = 0;
        for seq in floor..f {
            let fl = self.seg(seq).flags;
            if fl & (SACKED | LOST) == 0 {
                self.set_flags(seq, fl | LOST);
                newly += 1;
            }
        }
        self.lost_frontier = f;
        self.retx_hint = self.retx_hint.min(floor);
        newly
    }

    /// Is the first outstanding segment deemed lost (RFC 6675 IsLost(HighACK + 1))?
    pub fn first_is_lost(&self) -> bool {
        self.snd_una < self.snd_nxt && self.seg(self.snd_una).flags & LOST != 0
    }

    /// Force-mark the first outstanding segment lost (fast retransmit on DupThresh duplicate
    /// ACKs, RFC 6675 section 5 step 4.3).
    pub fn mark_first_lost(&mut self) -> bool {
        if self.snd_una >= self.snd_nxt {
            return false;
        }
        let f = self.seg(self.snd_una).flags;
        if f & (SACKED | LOST) != 0 {
            return false;
        }
        self.set_flags(self.snd_una, f | LOST);
        self.retx_hint = self.snd_una;
        true
    }

    /// After a retransmission timeout: every un-SACKed outstanding segment is lost and to be
    /// sent again (Linux `tcp_enter_loss` marks all and forgets retransmissions). Returns how
    /// many segments were newly marked lost.
    pub fn mark_all_lost(&mut self) -> u32 {
        let mut newly = 0;
        for seq in self.snd_una..self.snd_nxt {
            let f = self.seg(seq).flags;
            if f & SACKED == 0 {
                if f & LOST == 0 || f & RETX != 0 {
                    newly += 1;
                }
                self.set_flags(seq, (f | LOST) & !RETX);
            }
        }
        self.lost_frontier = self.snd_nxt;
        self.retx_hint = self.snd_una;
        self.dupacks = 0;
        newly
    }

    /// After a send pass: remember whether the window limited it (Linux `tcp_cwnd_validate`,
    /// net/ipv4/tcp_output.c, as since the 2022 fix "tcp: fix tcp_cwnd_validate() to not forget
    /// is_cwnd_limited"). Within one window (until `snd_una` passes the `snd_nxt` of the pass
    /// that opened it), a pass that was window-limited sets the flag and one that was not can
    /// only raise `max_packets_out`; the first pass of the next window starts afresh.
    #[inline]
    pub fn cwnd_validate(&mut self, window_limited: bool) {
        let packets_out = self.outstanding();
        if self.snd_una >= self.cwnd_usage_seq
            || window_limited
            || (!self.cwnd_limited && packets_out > self.max_packets_out)
        {
            self.cwnd_limited = window_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_is_cwnd_limited`: may an ACK grow the window? Yes if the window limited the
    /// sender in the current window; in slow start also while `cwnd < 2 * max_packets_out`
    /// ("ensure cwnd grows to twice what was ACKed"). Linux compares its integer `snd_cwnd`;
    /// `floor(cwnd) < n` is `cwnd < n` for an integer `n`.
    #[inline]
    pub fn is_cwnd_limited(&self, cwnd: f64, ssthresh: f64) -> bool {
        self.cwnd_limited || (cwnd < ssthresh && cwnd < 2.0 * self.max_packets_out as f64)
    }

    /// RFC 6298 (2.2)/(2.3): update SRTT, RTTVAR and RTO from one sample.
    pub fn rtt_sample(&mut self, r: Nanos) {
        let r = r as f64;
        if !self.has_rtt {
            self.srtt = r;
            self.rttvar = r / 2.0;
            self.has_rtt = true;
        } else {
            // alpha = 1/8, beta = 1/4.
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.srtt_ns = round_ns(self.srtt);
        let rto = self.srtt + (CLOCK_G as f64).max(4.0 * self.rttvar);
        self.rto = round_ns(rto).clamp(RTO_MIN, RTO_MAX);
        self.rtt_sum += r;
        self.rtt_n += 1;
    }

    #[inline]
    pub fn srtt_ns(&self) -> Nanos {
        self.srtt_ns
    }

    /// RFC 6298 (5.5): back off the timer.
    pub fn backoff(&mut self) {
        self.rto = (self.rto.saturating_mul(2)).min(RTO_MAX);
    }
}

/// `x.round() as Nanos` (half away from zero, saturating, NaN -> 0) without a libm call: this
/// runs on every RTT sample, and baseline x86-64 has no rounding instruction. For `0 <= x < 2^53`
/// the fraction `x - trunc(x)` is exact; above 2^52 every f64 is an integer (fraction 0); for
/// negative x, NaN and x >= 2^64 the saturating cast and the comparison give what `round` gives.
#[inline]
pub fn round_ns(x: f64) -> Nanos {
    let n = x as Nanos;
    n.saturating_add(Nanos::from(x - n as f64 >= 0.5))
}

/// The receiving side of one subflow.
#[derive(Debug)]
pub struct Receiver {
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
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver {
            rcv_nxt: 0,
            ooo: Vec::with_capacity(8),
            last_seq: 0,
            pending: 0,
            delack_deadline: 0,
            delack_event: Nanos::MAX,
            last_ts: 0,
            last_owd: 0,
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

    fn sender_with(n: u64) -> Sender {
        let mut s = Sender::default();
        for i in 0..n {
            s.push_new(i, 1000, 0);
        }
        s
    }

    #[test]
    fn sack_marks_loss_after_three_segments_above() {
        let mut s = sender_with(10);
        assert_eq!(s.pipe, 10);
        // Segment 0 lost; 1 and 2 SACKed: not yet lost.
        let e = s.on_ack(0, &[(1, 3)]);
        assert_eq!((e.segs, e.newly_lost), (2, 0));
        assert_eq!(s.pipe, 8);
        assert!(!s.first_is_lost());
        // Third SACKed segment above 0: 0 is lost (RFC 6675 IsLost).
        let e = s.on_ack(0, &[(1, 4)]);
        assert_eq!((e.segs, e.newly_lost), (1, 1));
        assert!(s.first_is_lost());
        // pipe = 10 - 3 sacked - 1 lost
        assert_eq!(s.pipe, 6);
        assert_eq!(s.next_retx(), Some(0));
        s.mark_retransmitted(0, 5);
        assert_eq!(s.pipe, 7);
        assert_eq!(s.next_retx(), None);
        // Cumulative ACK of everything up to 4: 0 (retx) removed, 1..3 were sacked.
        let e = s.on_ack(4, &[]);
        assert_eq!((e.segs, e.bytes, e.advanced), (1, 1000, true));
        assert_eq!(s.pipe, 6);
        assert_eq!(s.snd_una, 4);
    }

    #[test]
    fn cwnd_limited_tracking_follows_linux() {
        let mut s = sender_with(10);
        // The initial window went out and filled cwnd = 10.
        s.cwnd_validate(true);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (true, 10, 10)
        );
        assert!(s.is_cwnd_limited(10.0, f64::INFINITY) && s.is_cwnd_limited(10.0, 5.0));
        // All acknowledged; the next pass sends 5 with room left: a new window starts afresh.
        s.on_ack(10, &[]);
        for d in 10..15 {
            s.push_new(d, 1000, 0);
        }
        s.cwnd_validate(false);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (false, 5, 15)
        );
        // Slow start may still grow while cwnd < 2 * max_packets_out; congestion avoidance not.
        assert!(s.is_cwnd_limited(9.0, f64::INFINITY));
        assert!(!s.is_cwnd_limited(10.0, f64::INFINITY));
        assert!(!s.is_cwnd_limited(9.0, 5.0));
        // Same window (snd_una 10 < 15): more outstanding raises the maximum.
        for d in 15..18 {
            s.push_new(d, 1000, 0);
        }
        s.cwnd_validate(false);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (false, 8, 18)
        );
        // A window-limited pass sets the flag, and a later unlimited pass in the same window
        // does not clear it (the 2022 Linux fix), even with more outstanding.
        s.cwnd_validate(true);
        assert!(s.cwnd_limited);
        s.push_new(18, 1000, 0);
        s.cwnd_validate(false);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (true, 8, 18)
        );
        assert!(s.is_cwnd_limited(100.0, 5.0));
        // Once snd_una reaches 18 the window is over: the next pass decides again.
        s.on_ack(18, &[]);
        s.cwnd_validate(false);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (false, 1, 19)
        );
    }

    #[test]
    fn rto_marks_everything_lost_and_pipe_empties() {
        let mut s = sender_with(5);
        s.on_ack(1, &[(3, 4)]);
        let newly = s.mark_all_lost();
        assert_eq!(newly, 3); // 1, 2, 4
        assert_eq!(s.pipe, 0);
        assert_eq!(s.awaiting_retx, 3);
        assert_eq!(s.next_retx(), Some(1));
    }

    #[test]
    fn rfc6298_first_sample_and_update() {
        let mut s = Sender::default();
        s.rtt_sample(100 * NS_PER_MS);
        // RTO = SRTT + 4 * RTTVAR = 100 + 4 * 50 = 300 ms
        assert_eq!(s.rto, 300 * NS_PER_MS);
        s.rtt_sample(100 * NS_PER_MS);
        // RTTVAR = 0.75 * 50 + 0.25 * 0 = 37.5, SRTT = 100 -> 250 ms
        assert_eq!(s.rto, 250 * NS_PER_MS);
        for _ in 0..100 {
            s.rtt_sample(10 * NS_PER_MS);
        }
        assert_eq!(s.rto, RTO_MIN);
        s.backoff();
        assert_eq!(s.rto, 2 * RTO_MIN);
    }

    #[test]
    fn round_ns_is_round() {
        let xs = [
            0.0,
            -0.0,
            0.3,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            2.4999999999999996,
            -0.3,
            -0.5,
            -0.7,
            -3.5,
            1e9 + 0.5,
            123456789.49999999,
            4503599627370495.5,
            4503599627370497.0,
            9007199254740993.0,
            1.8446744073709552e19,
            1e30,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        for x in xs {
            assert_eq!(round_ns(x), x.round() as Nanos, "x = {x:e}");
        }
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..100_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Random magnitudes from 1e-3 to 1e12 with random fractions.
            let x = (s >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((s % 16) as i32 - 3);
            assert_eq!(round_ns(x), x.round() as Nanos, "x = {x:e}");
        }
    }

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
}

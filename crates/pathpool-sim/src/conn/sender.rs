//! One subflow's sender: the scoreboard's bookkeeping under ACKs with RFC 6675's loss marking,
//! Linux's cwnd-limited tracking, and Linux's RTT estimator and retransmission timer.
//!
//! Sequence numbers count segments, not bytes: every segment but possibly a file's last one is
//! one MSS, so RFC 6675's byte rules ("DupThresh * SMSS bytes SACKed above") become segment
//! counts. What the events do with it (sending, timers, calling the congestion controller) is
//! the connection's ([`super::input`], [`super::send`], [`super::timers`]); this module is
//! the bookkeeping, testable on its own.

use super::scoreboard::{Scoreboard, Seg, SegPool, EVER_RETX, LOST, RETX, SACKED};
use crate::net::packet::MAX_SACK_BLOCKS;
use crate::time::{Nanos, NS_PER_MS, NS_PER_SEC};

/// Microseconds, Linux's unit of RTT state.
const NS_PER_US: Nanos = 1000;

/// RFC 6675 DupThresh.
pub const DUP_THRESH: u32 = 3;
/// Linux `TCP_RTO_MIN` (200 ms, `tcp_rto_min_us`' default): the floor of the RTO's variance
/// term, not of the RTO itself (see [`Sender::rtt_estimator`]).
pub const RTO_MIN: Nanos = 200 * NS_PER_MS;
const RTO_MIN_US: u64 = RTO_MIN / 1000;
/// Linux `TCP_RTO_MAX` (120 s, `tcp_rto_max_ms`' default).
pub const RTO_MAX: Nanos = 120 * NS_PER_SEC;
/// Linux `TCP_TIMEOUT_INIT` = RFC 6298 (2.1): 1 s before the first RTT sample.
pub const RTO_INIT: Nanos = NS_PER_SEC;
/// One jiffy: Linux keeps the RTO in jiffies and rounds the estimate up to one
/// (`usecs_to_jiffies`); `CONFIG_HZ=1000` (Ubuntu's and Fedora's kernels) makes it 1 ms.
pub const JIFFY: Nanos = NS_PER_MS;

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
    /// Send time of the oldest cumulatively acknowledged segment that was never retransmitted
    /// and not SACKed before (Linux `first_ackt` in `tcp_clean_rtx_queue`).
    pub first_ackt: Option<Nanos>,
    /// The cumulative ACK covered a segment that was ever retransmitted (Linux
    /// `FLAG_RETRANS_DATA_ACKED`): Karn's rule forbids a sample from `first_ackt`.
    pub retrans_acked: bool,
    /// Send time of the lowest newly SACKed segment that was never retransmitted (Linux
    /// `first_sackt` in `tcp_sacktag_one`).
    pub first_sackt: Option<Nanos>,
}

/// The sending side of one subflow.
#[derive(Debug)]
pub struct Sender {
    /// The route its data segments take (an index into the world's routes). Here rather than
    /// in a vector of the connection: one cache line less to miss per segment sent.
    pub route: u32,
    /// Oldest unacknowledged subflow sequence number (HighACK + 1).
    pub snd_una: u64,
    /// Next new sequence number (HighData + 1).
    pub snd_nxt: u64,
    /// Segments `snd_una..snd_nxt`, index `seq - snd_una`.
    pub sb: Scoreboard,
    /// The connection's full-size payload (`mss - option_bytes`). A segment's own length is in
    /// the scoreboard.
    pub mss: u32,
    /// Bytes a data segment adds on the wire to its payload: [`HEADER_BYTES`] and the flow's
    /// `option_bytes`. Here, not in the connection: the sender's line is already hot.
    ///
    /// [`HEADER_BYTES`]: crate::net::packet::HEADER_BYTES
    pub header: u32,
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
    /// Mark losses by RFC 6675's DupThresh rule on every new SACK (off when RACK does it,
    /// `recovery = "linux"`: Linux runs `tcp_update_scoreboard` only `if (!tcp_is_rack(sk))`).
    pub dupthresh: bool,
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
    // Linux's RTT estimator state (`struct tcp_sock`), in its units: microseconds, `srtt_us`
    // scaled by 8, `mdev_us`, `mdev_max_us` and `rttvar_us` scaled by 4 (so `rttvar_us` is
    // RFC 6298's 4 * RTTVAR term). 0 = no sample yet.
    srtt_us: u64,
    mdev_us: u64,
    mdev_max_us: u64,
    rttvar_us: u64,
    /// `rttvar_us` decays once per window: when `snd_una` passes this (Linux `rtt_seq`).
    rtt_seq: u64,
    /// `srtt` in nanoseconds (read per ACK and per scheduling decision).
    srtt_ns: Nanos,
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
    /// When this subflow last sent a data segment (`lsndtime`), for the restart after idle.
    pub lsndtime: Nanos,
    /// Restarts after idle (`tcp_cwnd_restart`).
    pub idle_restarts: u64,
    /// The SACK blocks of the previous ACK: every segment in them at or above `snd_una` is
    /// already SACKed, so a new ACK repeating them costs nothing (Linux's `recv_sack_cache` in
    /// `tcp_sacktag_write_queue` serves the same purpose). Without it each duplicate ACK in a
    /// large window re-walked every SACKed segment.
    sack_cache: [(u64, u64); MAX_SACK_BLOCKS],
}

impl Default for Sender {
    fn default() -> Self {
        Sender {
            route: 0,
            snd_una: 0,
            snd_nxt: 0,
            sb: Scoreboard::default(),
            mss: 1448,
            header: crate::net::packet::HEADER_BYTES,
            pipe: 0,
            awaiting_retx: 0,
            high_sacked: 0,
            lost_frontier: 0,
            retx_hint: 0,
            dupacks: 0,
            dupthresh: true,
            in_recovery: false,
            recovery_point: 0,
            in_loss: false,
            loss_point: 0,
            rto_backoffs: 0,
            cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            sent_in_pass: false,
            srtt_us: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            srtt_ns: 0,
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
            lsndtime: 0,
            idle_restarts: 0,
            sack_cache: [(0, 0); MAX_SACK_BLOCKS],
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
        self.sb.get((seq - self.snd_una) as usize)
    }

    /// Room for one more segment in a window of `cwnd` segments (Linux works on an integer
    /// `snd_cwnd`).
    #[inline]
    pub fn has_room(&self, cwnd: f64) -> bool {
        // pipe < max(floor(cwnd), 1) for an integer pipe, without a libm `floor` call per packet:
        // pipe < floor(cwnd) <=> pipe + 1 <= cwnd (and a NaN cwnd leaves just the 1).
        self.pipe == 0 || f64::from(self.pipe) + 1.0 <= cwnd
    }

    /// Change a segment's flags, keeping `pipe` and `awaiting_retx` consistent.
    #[inline]
    pub(crate) fn set_flags(&mut self, seq: u64, flags: u8) {
        let slot = self.sb.get_mut((seq - self.snd_una) as usize);
        let old = *slot;
        let new = old.with_flags(flags);
        *slot = new;
        self.pipe = self.pipe + new.pipe() - old.pipe();
        self.awaiting_retx =
            self.awaiting_retx + u32::from(new.awaits_retx()) - u32::from(old.awaits_retx());
    }

    /// Record a new full segment `snd_nxt` carrying `dsn`.
    pub fn push_new(&mut self, pool: &mut SegPool, dsn: u64, now: Nanos) -> u64 {
        self.push_seg(pool, dsn, self.mss, now)
    }

    /// Record a new segment `snd_nxt` carrying `len` payload bytes at `dsn` (a chunk from
    /// `pool` if it needs one).
    #[inline]
    pub fn push_seg(&mut self, pool: &mut SegPool, dsn: u64, len: u32, now: Nanos) -> u64 {
        let seq = self.snd_nxt;
        self.sb.push_back(pool, Seg::new(dsn, len, now));
        self.snd_nxt += 1;
        self.pipe += 1;
        seq
    }

    /// Record the retransmission of `seq` now.
    pub fn mark_retransmitted(&mut self, seq: u64, now: Nanos) {
        let f = self.seg(seq).flags();
        self.set_flags(seq, f | RETX | EVER_RETX);
        self.sb.get_mut((seq - self.snd_una) as usize).sent_at = now;
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

    /// Apply a cumulative ACK (`cum` = next expected) and SACK blocks; the chunks the ACK
    /// empties go back to `pool`.
    ///
    /// Inlined into the connection's ACK handler ([`super::input`]), its one caller (-0.7%
    /// instructions on 1 s of bench.toml: the call passed its `AckEffect` back through memory).
    #[inline]
    pub fn on_ack(&mut self, pool: &mut SegPool, cum: u64, sacks: &[(u64, u64)]) -> AckEffect {
        let mut eff = AckEffect::default();
        let cum = cum.min(self.snd_nxt);
        while self.snd_una < cum {
            let s = self
                .sb
                .pop_front(pool)
                .expect("scoreboard shorter than window");
            self.pipe -= s.pipe();
            self.awaiting_retx -= u32::from(s.awaits_retx());
            let f = s.flags();
            if f & SACKED == 0 {
                eff.segs += 1;
                eff.bytes += u64::from(s.payload());
            }
            if f & EVER_RETX != 0 {
                eff.retrans_acked = true;
            } else if f & SACKED == 0 && eff.first_ackt.is_none() {
                eff.first_ackt = Some(s.sent_at);
            }
            self.snd_una += 1;
            eff.advanced = true;
        }
        self.high_sacked = self.high_sacked.max(self.snd_una);
        self.lost_frontier = self.lost_frontier.max(self.snd_una);
        // Lowest newly SACKed never-retransmitted segment: Linux sorts the blocks first.
        let mut first_sacked = u64::MAX;
        for &(a, b) in sacks {
            let a = a.max(self.snd_una);
            let b = b.min(self.snd_nxt);
            let mut s = a;
            while s < b {
                if let Some(&(_, cb)) = self.sack_cache.iter().find(|&&(ca, cb)| ca <= s && s < cb)
                {
                    s = cb;
                    continue;
                }
                let seg = *self.seg(s);
                let f = seg.flags();
                if f & SACKED == 0 {
                    self.set_flags(s, f | SACKED);
                    eff.segs += 1;
                    eff.bytes += u64::from(seg.payload());
                    eff.new_sack = true;
                    if f & EVER_RETX == 0 && s < first_sacked {
                        first_sacked = s;
                        eff.first_sackt = Some(seg.sent_at);
                    }
                }
                s += 1;
            }
            if b > a {
                self.high_sacked = self.high_sacked.max(b);
            }
        }
        self.sack_cache = [(0, 0); MAX_SACK_BLOCKS];
        // Most ACKs carry no blocks: skip the copy, a `memcpy` call of variable length.
        if !sacks.is_empty() {
            self.sack_cache[..sacks.len()].copy_from_slice(sacks);
        }
        if eff.new_sack && self.dupthresh {
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
            if self.seg(s).flags() & SACKED != 0 {
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
            let fl = self.seg(seq).flags();
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
        self.snd_una < self.snd_nxt && self.seg(self.snd_una).flags() & LOST != 0
    }

    /// Force-mark the first outstanding segment lost (fast retransmit on DupThresh duplicate
    /// ACKs, RFC 6675 section 5 step 4.3).
    pub fn mark_first_lost(&mut self) -> bool {
        if self.snd_una >= self.snd_nxt {
            return false;
        }
        let f = self.seg(self.snd_una).flags();
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
            let f = self.seg(seq).flags();
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

    /// Linux's choice of the RTT sample for the estimator (`tcp_ack_update_rtt` and
    /// `tcp_clean_rtx_queue`, net/ipv4/tcp_input.c, Linux 6.x): the time since the oldest
    /// newly cumulatively acknowledged segment was sent, unless the ACK covered a
    /// retransmitted segment (Karn's rule, RFC 6298 section 3); else the same for the lowest
    /// newly SACKed segment; else, if the ACK advanced `snd_una`, the echoed timestamp
    /// (`tcp_rtt_tsopt_us`: RFC 7323 timestamps tick in milliseconds, a 0 difference counts
    /// as 1 ms). `echo` is the send time the ACK echoes. `None`: no sample (a duplicate ACK
    /// without new SACK information, or one SACKing only retransmitted segments).
    pub fn estimator_sample(eff: &AckEffect, now: Nanos, echo: Nanos) -> Option<u64> {
        let us = |t: Nanos| (now / NS_PER_US).saturating_sub(t / NS_PER_US);
        let seq = eff.first_ackt.filter(|_| !eff.retrans_acked);
        if let Some(t) = seq.or(eff.first_sackt) {
            Some(us(t))
        } else if eff.advanced {
            let ticks = (now / NS_PER_MS).saturating_sub(echo / NS_PER_MS).max(1);
            Some(ticks * (NS_PER_MS / NS_PER_US))
        } else {
            None
        }
    }

    /// Linux `tcp_rtt_estimator` (net/ipv4/tcp_input.c, Linux 6.x; unchanged in substance
    /// since 3.x), followed by `tcp_set_rto` / `__tcp_set_rto` / `tcp_bound_rto`:
    ///
    /// * first sample R: SRTT = R, mdev = R/2 (4 mdev = 2R), `rttvar = max(2R, rto_min)`;
    /// * then SRTT += (R - SRTT)/8, and 4 mdev moves a quarter of the way to |R - SRTT|, but
    ///   only an eighth of that when R < SRTT (the Eifel-like damping); the window's largest
    ///   4 mdev (`mdev_max`, starting each window at rto_min) raises `rttvar` at once, and
    ///   once per window (when `snd_una` passes `rtt_seq`) `rttvar` decays a quarter of the way
    ///   down to `mdev_max`;
    /// * `RTO = ceil_jiffy(SRTT + rttvar)`, at most 120 s.
    ///
    /// So the 200 ms floor applies to the variance term, not to the sum (RFC 6298's
    /// `max(SRTT + 4 RTTVAR, 1 s)`): a Linux RTO is never below SRTT + 200 ms. Integer
    /// microseconds with Linux's scalings (SRTT x 8, mdev x 4) and shifts, so the values are
    /// Linux's to the microsecond. Resetting `icsk_backoff` on a valid sample is implicit:
    /// the backed-off RTO is replaced by the new estimate.
    pub fn rtt_estimator(&mut self, mrtt_us: u64) {
        let mut m = mrtt_us as i64;
        let mut srtt = self.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3; // m is now the error in the estimate
            srtt += m; // srtt = 7/8 srtt + 1/8 new
            let mdev = self.mdev_us as i64;
            if m < 0 {
                m = -m - (mdev >> 2);
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= mdev >> 2;
            }
            self.mdev_us = (mdev + m) as u64; // mdev = 3/4 mdev + 1/4 new
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                self.rttvar_us = self.rttvar_us.max(self.mdev_max_us);
            }
            if self.snd_una > self.rtt_seq {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = self.snd_nxt;
                self.mdev_max_us = RTO_MIN_US;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m << 1) as u64; // makes the first RTO 3 R
            self.rttvar_us = self.mdev_us.max(RTO_MIN_US);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = self.snd_nxt;
        }
        self.srtt_us = srtt.max(1) as u64;
        self.srtt_ns = self.srtt_us * NS_PER_US / 8;
        let rto_us = (self.srtt_us >> 3) + self.rttvar_us;
        self.rto = (rto_us * NS_PER_US).div_ceil(JIFFY) * JIFFY;
        self.rto = self.rto.min(RTO_MAX);
    }

    /// Record an RTT sample for the subflow's mean-RTT output.
    #[inline]
    pub fn record_rtt(&mut self, r: Nanos) {
        self.rtt_sum += r as f64;
        self.rtt_n += 1;
    }

    #[inline]
    pub fn has_rtt(&self) -> bool {
        self.srtt_us != 0
    }

    #[inline]
    pub fn srtt_ns(&self) -> Nanos {
        self.srtt_ns
    }

    /// Linux `tcp_retransmit_timer` (net/ipv4/tcp_timer.c): `icsk_rto = min(icsk_rto << 1,
    /// TCP_RTO_MAX)` on every expiry (exponential backoff; thin-stream linear timeouts are off
    /// by default).
    pub fn backoff(&mut self) {
        self.rto = (self.rto.saturating_mul(2)).min(RTO_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::super::scoreboard::CHUNK;
    use super::*;

    /// A sender of 1000-byte segments with `n` outstanding, and its chunk pool.
    fn sender_with(n: u64) -> (Sender, SegPool) {
        let mut pool = SegPool::default();
        let mut s = Sender {
            mss: 1000,
            ..Sender::default()
        };
        for i in 0..n {
            s.push_new(&mut pool, i, 0);
        }
        (s, pool)
    }

    #[test]
    fn sack_marks_loss_after_three_segments_above() {
        let (mut s, mut pool) = sender_with(10);
        assert_eq!(s.pipe, 10);
        // Segment 0 lost; 1 and 2 SACKed: not yet lost.
        let e = s.on_ack(&mut pool, 0, &[(1, 3)]);
        assert_eq!((e.segs, e.newly_lost), (2, 0));
        assert_eq!(s.pipe, 8);
        assert!(!s.first_is_lost());
        // Third SACKed segment above 0: 0 is lost (RFC 6675 IsLost).
        let e = s.on_ack(&mut pool, 0, &[(1, 4)]);
        assert_eq!((e.segs, e.newly_lost), (1, 1));
        assert!(s.first_is_lost());
        // pipe = 10 - 3 sacked - 1 lost
        assert_eq!(s.pipe, 6);
        assert_eq!(s.next_retx(), Some(0));
        s.mark_retransmitted(0, 5);
        assert_eq!(s.pipe, 7);
        assert_eq!(s.next_retx(), None);
        // Cumulative ACK of everything up to 4: 0 (retx) removed, 1..3 were sacked.
        let e = s.on_ack(&mut pool, 4, &[]);
        assert_eq!((e.segs, e.bytes, e.advanced), (1, 1000, true));
        assert_eq!(s.pipe, 6);
        assert_eq!(s.snd_una, 4);
    }

    #[test]
    fn cwnd_limited_tracking_follows_linux() {
        let (mut s, mut pool) = sender_with(10);
        // The initial window went out and filled cwnd = 10.
        s.cwnd_validate(true);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (true, 10, 10)
        );
        assert!(s.is_cwnd_limited(10.0, f64::INFINITY) && s.is_cwnd_limited(10.0, 5.0));
        // All acknowledged; the next pass sends 5 with room left: a new window starts afresh.
        s.on_ack(&mut pool, 10, &[]);
        for d in 10..15 {
            s.push_new(&mut pool, d, 0);
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
            s.push_new(&mut pool, d, 0);
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
        s.push_new(&mut pool, 18, 0);
        s.cwnd_validate(false);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (true, 8, 18)
        );
        assert!(s.is_cwnd_limited(100.0, 5.0));
        // Once snd_una reaches 18 the window is over: the next pass decides again.
        s.on_ack(&mut pool, 18, &[]);
        s.cwnd_validate(false);
        assert_eq!(
            (s.cwnd_limited, s.max_packets_out, s.cwnd_usage_seq),
            (false, 1, 19)
        );
    }

    /// Scoreboards share one pool of chunks: a window that shrinks gives chunks back, another
    /// subflow's growing window takes them, and no chunk is allocated while the total in use
    /// stays below the largest so far. Every segment keeps its DSN and send time throughout.
    #[test]
    fn scoreboards_share_their_chunks() {
        let (mut a, mut pool) = sender_with(4000);
        let made = pool.made();
        assert_eq!((made, a.sb.chunks()), (4000usize.div_ceil(CHUNK), made));
        // 100 left (slots 3900..4000: chunk boundaries at multiples of 32 -> 4 chunks).
        a.on_ack(&mut pool, 3900, &[]);
        assert_eq!((a.sb.len(), a.pipe, a.sb.chunks()), (100, 100, 4));
        assert_eq!(pool.free(), made - 4);
        assert_eq!((a.seg(3950).dsn(), a.seg(3950).sent_at), (3950, 0));
        // A second subflow grows to 3000 segments on the chunks the first gave back.
        let mut b = Sender {
            mss: 1000,
            ..Sender::default()
        };
        for d in 0..3000 {
            b.push_new(&mut pool, 10_000 + d, d);
        }
        assert_eq!(pool.made(), made);
        // Both windows sliding for many rounds: still no new chunk, contents intact.
        for round in 0..50u64 {
            for s in [&mut a, &mut b] {
                let una = s.snd_una;
                s.on_ack(&mut pool, una + 37, &[]);
                while s.outstanding() < 130 + round {
                    let d = s.snd_nxt;
                    s.push_new(&mut pool, 7 * d, d);
                }
            }
        }
        assert_eq!(pool.made(), made);
        for s in [&a, &b] {
            for seq in s.snd_una..s.snd_nxt {
                assert!(s.seg(seq).dsn() == 7 * seq || s.seg(seq).dsn() == 10_000 + seq);
                assert_eq!(s.seg(seq).sent_at, seq);
            }
        }
        // Everything acknowledged: every chunk is back in the pool.
        for s in [&mut a, &mut b] {
            let nxt = s.snd_nxt;
            let e = s.on_ack(&mut pool, nxt, &[]);
            assert!(e.advanced && s.sb.is_empty() && s.sb.chunks() == 0);
        }
        assert_eq!(pool.free(), pool.made());
    }

    #[test]
    fn rto_marks_everything_lost_and_pipe_empties() {
        let (mut s, mut pool) = sender_with(5);
        s.on_ack(&mut pool, 1, &[(3, 4)]);
        let newly = s.mark_all_lost();
        assert_eq!(newly, 3); // 1, 2, 4
        assert_eq!(s.pipe, 0);
        assert_eq!(s.awaiting_retx, 3);
        assert_eq!(s.next_retx(), Some(1));
    }

    #[test]
    fn rto_follows_linux_tcp_rtt_estimator() {
        let (mut s, mut pool) = sender_with(10);
        assert_eq!(s.rto, NS_PER_SEC); // TCP_TIMEOUT_INIT before any sample
                                       // First sample R = 100 ms: srtt = 100 ms, rttvar = max(2R, 200 ms) = 200 ms, RTO = 3R.
        s.rtt_estimator(100_000);
        assert_eq!(
            (s.srtt_us, s.mdev_us, s.rttvar_us),
            (800_000, 200_000, 200_000)
        );
        assert_eq!((s.srtt_ns(), s.rto), (100 * NS_PER_MS, 300 * NS_PER_MS));
        // R = 100 ms again, same window: m = 0 - 200000/4 = -50000 shrinks mdev to 150 ms,
        // mdev_max and rttvar stay at 200 ms.
        s.rtt_estimator(100_000);
        assert_eq!(
            (s.srtt_us, s.mdev_us, s.rttvar_us),
            (800_000, 150_000, 200_000)
        );
        // A constant RTT: once the window is acknowledged (snd_una > rtt_seq = 10), rttvar
        // decays towards mdev_max, which restarts at rto_min = 200 ms each window: the RTO
        // settles at srtt + 200 ms, never at RFC 6298's max(srtt + 4 rttvar, rto_min).
        for w in 0..40u64 {
            s.on_ack(&mut pool, s.snd_nxt, &[]);
            for d in 0..10 {
                s.push_new(&mut pool, w * 10 + d, 0);
            }
            s.rtt_estimator(100_000);
        }
        assert_eq!(s.rttvar_us, 200_000);
        assert_eq!(s.rto, 300 * NS_PER_MS);
        // R > srtt: m = 180000 - 100000 = 80000 -> srtt_us = 880000 (110 ms); mdev grows by
        // 80000 - mdev/4, mdev_max follows and lifts rttvar at once.
        let mdev = s.mdev_us;
        s.rtt_estimator(180_000);
        assert_eq!(s.srtt_us, 880_000);
        assert_eq!(s.mdev_us, mdev + 80_000 - mdev / 4);
        assert_eq!(s.rttvar_us, s.mdev_us.max(200_000));
        assert_eq!(s.rto, (110_000 + s.rttvar_us) * 1000);
        // A sample below srtt only moves mdev by an eighth of the excess: |e| = 110000 - 10000
        // = 100000 (srtt_us >> 3 = 110000), m = (100000 - mdev/4) / 8.
        let mdev = s.mdev_us;
        s.rtt_estimator(10_000);
        assert_eq!(s.srtt_us, 880_000 - 100_000);
        let m = 100_000 - (mdev as i64 >> 2);
        let m = if m > 0 { m >> 3 } else { m };
        assert_eq!(s.mdev_us as i64, mdev as i64 + m);
        // RTO rounds up to a whole jiffy (1 ms): srtt 97.5 ms + rttvar.
        assert_eq!(s.rto, (97_500 + s.rttvar_us).div_ceil(1000) * NS_PER_MS);
        // Backoff doubles, capped at 120 s.
        let r = s.rto;
        s.backoff();
        assert_eq!(s.rto, 2 * r);
        for _ in 0..20 {
            s.backoff();
        }
        assert_eq!(s.rto, RTO_MAX);
        // A new sample replaces the backed-off value (Linux resets icsk_backoff).
        s.rtt_estimator(100_000);
        assert!(s.rto < NS_PER_SEC);
    }

    #[test]
    fn rtt_sample_choice_follows_karn_and_linux() {
        let (mut s, mut pool) = sender_with(0);
        for (i, t) in [(0, 10), (1, 20), (2, 30), (3, 40), (4, 50)] {
            s.push_new(&mut pool, i, t * NS_PER_MS);
        }
        // Segment 0 retransmitted at 100 ms; 1 and 2 SACKed (a sample from 1, the lowest).
        s.on_ack(&mut pool, 0, &[(1, 3)]);
        s.mark_retransmitted(0, 100 * NS_PER_MS);
        let now = 150 * NS_PER_MS;
        let e = s.on_ack(&mut pool, 0, &[(3, 4)]);
        assert_eq!(e.first_sackt, Some(40 * NS_PER_MS));
        assert_eq!(Sender::estimator_sample(&e, now, 0), Some(110_000));
        // The cumulative ACK covers the retransmitted 0 (Karn: no sample from first_ackt)
        // and 4 was never SACKed: first_ackt = 50 ms but retrans_acked forbids it; no new
        // SACK; the echoed timestamp (the retransmission at 100 ms) gives 50 ms.
        let e = s.on_ack(&mut pool, 5, &[]);
        assert!(e.retrans_acked && e.advanced);
        assert_eq!(e.first_ackt, Some(50 * NS_PER_MS));
        assert_eq!(
            Sender::estimator_sample(&e, now, 100 * NS_PER_MS),
            Some(50_000)
        );
        // A plain cumulative ACK samples the oldest acknowledged segment.
        s.push_new(&mut pool, 5, 200 * NS_PER_MS);
        s.push_new(&mut pool, 6, 201 * NS_PER_MS);
        let e = s.on_ack(&mut pool, 7, &[]);
        assert_eq!(
            Sender::estimator_sample(&e, 300 * NS_PER_MS, 201 * NS_PER_MS),
            Some(100_000)
        );
        // A duplicate ACK with nothing new: no sample.
        let e = s.on_ack(&mut pool, 7, &[]);
        assert_eq!(Sender::estimator_sample(&e, 400 * NS_PER_MS, 0), None);
    }
}

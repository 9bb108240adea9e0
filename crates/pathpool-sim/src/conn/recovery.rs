//! Linux's loss recovery beyond RFC 6675 (`recovery = "linux"`): RACK time-based loss
//! detection and the tail loss probe (RFC 8985) and proportional rate reduction (RFC 6937), as
//! Linux 6.x runs them by default (`net.ipv4.tcp_recovery = 1`, `tcp_early_retrans = 3`; the
//! same since 4.18, when RACK replaced DupThresh and FACK).
//!
//! This module is the per-subflow state and its arithmetic, testable on its own; the connection
//! ([`super::input`], [`super::send`], [`super::timers`]) calls it at the points where Linux's `tcp_ack`, `tcp_write_xmit` and the
//! retransmission timer do. Functions followed (Linux 6.x):
//!
//! * RACK, net/ipv4/tcp_recovery.c: `tcp_rack_advance` (per newly delivered segment),
//!   `tcp_rack_reo_wnd`, `tcp_rack_detect_loss`, `tcp_rack_mark_lost`,
//!   `tcp_rack_reo_timeout`; reordering detection as `tcp_check_sack_reordering`
//!   (tcp_input.c); `tcp_time_to_recover`: recovery starts once a segment is marked lost.
//! * TLP, net/ipv4/tcp_output.c: `tcp_schedule_loss_probe`, `tcp_send_loss_probe`;
//!   tcp_input.c `tcp_process_tlp_ack`; the timer rules of `tcp_rearm_rto` and
//!   `tcp_set_xmit_timer`.
//! * PRR, tcp_input.c: `tcp_init_cwnd_reduction`, `tcp_cwnd_reduction`; the count of segments
//!   sent in recovery (`prr_out`) as `tcp_write_xmit` and `tcp_xmit_retransmit_queue` keep it.
//!
//! Linux keeps one retransmission timer (`icsk_pending`) that is either the RTO, the loss probe
//! or RACK's reordering timer; so does a subflow here ([`Timer`] says which the deadline is).
//!
//! Not modelled: DSACK (so RACK's reordering window never widens past `min_rtt / 4`, and a
//! spurious retransmission is never undone), the 300 s window of Linux's `min_rtt` filter (the
//! minimum is over the whole run), RACK's rule that an RTO leaves recently sent segments
//! unmarked (`tcp_timeout_mark_lost`: every un-SACKed segment is lost, as with `rfc6675`), and
//! F-RTO.

use super::scoreboard::{EVER_RETX, LOST, RETX, SACKED};
use super::sender::{Sender, DUP_THRESH, JIFFY, RTO_INIT, RTO_MIN};
use crate::time::{Nanos, NS_PER_MS};

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies): added to the loss probe timeout when more than one
/// segment is outstanding, and to RACK's reordering timer.
pub const TIMEOUT_MIN: Nanos = 2 * NS_PER_MS;

/// Which timer a subflow's armed deadline is (Linux `icsk_pending`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Timer {
    /// `ICSK_TIME_RETRANS`.
    #[default]
    Rto,
    /// `ICSK_TIME_LOSS_PROBE`.
    Probe,
    /// `ICSK_TIME_REO_TIMEOUT`.
    Reorder,
}

/// Round a duration up to whole jiffies (Linux `usecs_to_jiffies`).
#[inline]
fn jiffies(d: Nanos) -> Nanos {
    d.div_ceil(JIFFY) * JIFFY
}

/// One subflow's RACK, TLP and PRR state (the fields of Linux's `struct tcp_sock` named).
#[derive(Clone, Debug)]
pub struct LinuxState {
    pub timer: Timer,
    /// `rack.mstamp`, `rack.end_seq`: send time and end of the most recently sent segment
    /// known delivered (end = seq + 1).
    pub rack_mstamp: Nanos,
    pub rack_end_seq: u64,
    /// `rack.rtt_us`: the RTT of the last delivered segment that gave a valid sample.
    pub rack_rtt: Nanos,
    /// `rack.advanced`.
    pub rack_advanced: bool,
    /// `tcp_min_rtt` (`Nanos::MAX` before the first sample, Linux's `~0U`).
    pub min_rtt: Nanos,
    /// `reord_seen != 0`: a never-retransmitted segment was delivered below the highest
    /// SACKed one.
    pub reord_seen: bool,
    /// `tlp_high_seq` (`snd_nxt` when the probe went out), `tlp_retrans`.
    pub tlp_high_seq: Option<u64>,
    pub tlp_retrans: bool,
    /// PRR: `prior_cwnd`, `prr_delivered`, `prr_out` (segments).
    pub prior_cwnd: u64,
    pub prr_delivered: u64,
    pub prr_out: u64,
    /// Loss probes sent and reordering-timer expiries (diagnostics, not in the output).
    pub probes: u64,
    pub reo_timeouts: u64,
}

impl Default for LinuxState {
    fn default() -> Self {
        LinuxState {
            timer: Timer::Rto,
            rack_mstamp: 0,
            rack_end_seq: 0,
            rack_rtt: 0,
            rack_advanced: false,
            min_rtt: Nanos::MAX,
            reord_seen: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            prior_cwnd: 1,
            prr_delivered: 0,
            prr_out: 0,
            probes: 0,
            reo_timeouts: 0,
        }
    }
}

/// `tcp_skb_sent_after(t1, t2, seq1, seq2)`: was (t1, seq1) sent after (t2, seq2)?
#[inline]
fn sent_after(t1: Nanos, t2: Nanos, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl LinuxState {
    /// `tcp_rack_advance` for one newly delivered segment `seq` with `flags` (before this ACK)
    /// sent at `sent_at`.
    fn rack_advance(&mut self, flags: u8, seq: u64, sent_at: Nanos, now: Nanos) {
        let rtt = now - sent_at;
        // A retransmitted segment acked sooner than min_rtt: the ACK may be for the original.
        if rtt < self.min_rtt && flags & EVER_RETX != 0 {
            return;
        }
        self.rack_advanced = true;
        self.rack_rtt = rtt;
        if sent_after(sent_at, self.rack_mstamp, seq + 1, self.rack_end_seq) {
            self.rack_mstamp = sent_at;
            self.rack_end_seq = seq + 1;
        }
    }

    /// RACK's view of one ACK (cumulative point `cum`, SACK blocks `sacks`, echoed timestamp
    /// `echo`), read from the scoreboard *before* [`Sender::on_ack`] applies it: Linux calls
    /// `tcp_rack_advance` for every newly SACKed segment (`tcp_sacktag_one`, blocks in
    /// ascending order) and then every newly cumulatively acknowledged one
    /// (`tcp_clean_rtx_queue`, skipping a retransmission the echoed timestamp shows was not
    /// the one acknowledged: `tcp_skb_spurious_retrans`), and notes reordering when a
    /// never-retransmitted segment is delivered below the highest SACKed one
    /// (`tcp_check_sack_reordering`).
    pub fn on_ack(&mut self, s: &Sender, cum: u64, sacks: &[(u64, u64)], echo: Nanos, now: Nanos) {
        // `tcp_highest_sack_seq`: the start of the highest SACKed segment, else snd_una.
        let fack = if s.high_sacked > s.snd_una {
            s.high_sacked - 1
        } else {
            s.snd_una
        };
        let mut reord = u64::MAX;
        let mut blocks = [(0u64, 0u64); crate::net::packet::MAX_SACK_BLOCKS];
        let n = sacks.len();
        blocks[..n].copy_from_slice(sacks);
        blocks[..n].sort_unstable();
        let mut high = fack;
        for &(a, b) in &blocks[..n] {
            for seq in a.max(s.snd_una)..b.min(s.snd_nxt) {
                let seg = s.seg(seq);
                if seg.flags() & SACKED != 0 {
                    continue;
                }
                self.rack_advance(seg.flags(), seq, seg.sent_at, now);
                if seg.flags() & EVER_RETX == 0 && seq < high {
                    reord = reord.min(seq);
                }
                high = high.max(seq);
            }
        }
        let in_block = |seq: u64| blocks[..n].iter().any(|&(a, b)| a <= seq && seq < b);
        for seq in s.snd_una..cum.min(s.snd_nxt) {
            let seg = s.seg(seq);
            if seg.flags() & SACKED != 0 || in_block(seq) {
                continue;
            }
            if seg.flags() & EVER_RETX == 0 {
                reord = reord.min(seq);
            }
            if !(seg.flags() & EVER_RETX != 0 && echo < seg.sent_at) {
                self.rack_advance(seg.flags(), seq, seg.sent_at, now);
            }
        }
        if reord < fack {
            self.reord_seen = true;
        }
    }

    /// `tcp_update_rtt_min` with the estimator's sample.
    #[inline]
    pub fn rtt_sample(&mut self, rtt: Nanos) {
        self.min_rtt = self.min_rtt.min(rtt);
    }

    /// `tcp_rack_reo_wnd`: no reordering window while recovering or once DupThresh (3)
    /// segments are SACKed, unless reordering has been seen; else `min(min_rtt / 4, srtt)`.
    pub fn reo_wnd(&self, s: &Sender) -> Nanos {
        if !self.reord_seen {
            if s.in_recovery || s.in_loss {
                return 0;
            }
            let mut sacked = 0;
            let mut seq = s.high_sacked;
            while seq > s.snd_una && sacked < DUP_THRESH {
                seq -= 1;
                sacked += u32::from(s.seg(seq).flags() & SACKED != 0);
            }
            if sacked >= DUP_THRESH {
                return 0;
            }
        }
        (self.min_rtt / 4).min(s.srtt_ns())
    }

    /// `tcp_rack_detect_loss`: every segment sent before the most recently delivered one
    /// (`rack_mstamp`) and not delivered within `rack_rtt + reo_wnd` of its sending is lost
    /// (a lost retransmission too: it is sent again). Returns the segments newly marked lost
    /// and how long the earliest-expiring remaining candidate still has (0 = none).
    pub fn detect_loss(&mut self, s: &mut Sender, now: Nanos) -> (u32, Nanos) {
        let reo_wnd = self.reo_wnd(s);
        let mut newly = 0;
        let mut wait: Nanos = 0;
        // Linux walks its send-time-ordered list and stops at the first segment sent after
        // rack_mstamp; the scoreboard is in sequence order, so every segment is looked at.
        for seq in s.snd_una..s.snd_nxt {
            let seg = *s.seg(seq);
            // Skip SACKed ones and those marked lost but not yet retransmitted.
            if seg.flags() & SACKED != 0 || seg.flags() & (LOST | RETX) == LOST {
                continue;
            }
            if !sent_after(self.rack_mstamp, seg.sent_at, self.rack_end_seq, seq + 1) {
                continue;
            }
            let deadline = seg.sent_at + self.rack_rtt + reo_wnd;
            if deadline <= now {
                s.set_flags(seq, (seg.flags() | LOST) & !RETX);
                s.retx_hint = s.retx_hint.min(seq);
                newly += 1;
            } else {
                wait = wait.max(deadline - now);
            }
        }
        (newly, wait)
    }

    /// Anything for RACK to look at? Outside recovery, with nothing SACKed and no probe out,
    /// every segment sent before a delivered one has been delivered too.
    #[inline]
    pub fn rack_may_mark(&self, s: &Sender) -> bool {
        self.rack_advanced
            && (s.high_sacked > s.snd_una
                || s.in_recovery
                || s.in_loss
                || self.tlp_high_seq.is_some())
    }

    /// `tcp_rack_mark_lost`'s timer: `usecs_to_jiffies(wait) + TCP_TIMEOUT_MIN` from now.
    #[inline]
    pub fn reo_timeout(wait: Nanos) -> Nanos {
        jiffies(wait) + TIMEOUT_MIN
    }

    /// `tcp_schedule_loss_probe`'s conditions: something outstanding and the subflow in
    /// `TCP_CA_Open` (not in recovery or loss, nothing SACKed or marked lost: Linux's
    /// `Disorder` state has no probe either). The CWR state after a probe-detected loss is
    /// left at once here, so it needs no case of its own.
    #[inline]
    pub fn may_probe(s: &Sender) -> bool {
        s.outstanding() > 0
            && !s.in_recovery
            && !s.in_loss
            && s.high_sacked <= s.snd_una
            && s.awaiting_retx == 0
    }

    /// `tcp_schedule_loss_probe`'s timeout: `2 * srtt` in jiffies plus `TCP_RTO_MIN` if one
    /// segment is outstanding (a delayed ACK) or `TCP_TIMEOUT_MIN` otherwise; 1 s
    /// (`TCP_TIMEOUT_INIT`) before any RTT sample; never later than the RTO would fire
    /// (`rto_delta`: the full RTO when the caller is about to restart it, else the time left
    /// until `head_sent + rto`).
    pub fn probe_timeout(s: &Sender, advancing_rto: bool, now: Nanos) -> Nanos {
        let mut timeout = if s.has_rtt() {
            // srtt_us >> 2 = 2 * srtt (srtt_us is scaled by 8), in whole microseconds.
            let two_srtt_us = (s.srtt_ns() * 8 / 1000) >> 2;
            jiffies(two_srtt_us * 1000)
                + if s.outstanding() == 1 {
                    RTO_MIN
                } else {
                    TIMEOUT_MIN
                }
        } else {
            RTO_INIT
        };
        let rto_delta = if advancing_rto {
            s.rto
        } else {
            Self::rto_delta(s, now)
        };
        if rto_delta > 0 {
            timeout = timeout.min(jiffies(rto_delta));
        }
        timeout
    }

    /// `tcp_rto_delta_us`: how far in the future the RTO of the head segment is (`<= 0` if
    /// overdue: then 0).
    #[inline]
    pub fn rto_delta(s: &Sender, now: Nanos) -> Nanos {
        (s.seg(s.snd_una).sent_at + s.rto).saturating_sub(now)
    }

    /// `tcp_rearm_rto`: the RTO deadline from now (none with nothing outstanding). Armed
    /// while the probe or reordering timer was pending, it keeps the RTO's original expiry
    /// (`head_sent + rto`, at least one microsecond ahead).
    pub fn rearm_rto(&mut self, s: &mut Sender, now: Nanos) {
        if s.outstanding() == 0 {
            s.rto_deadline = 0;
        } else {
            let rto = match self.timer {
                Timer::Rto => s.rto,
                Timer::Probe | Timer::Reorder => jiffies(Self::rto_delta(s, now).max(1000)),
            };
            s.rto_deadline = now + rto;
        }
        self.timer = Timer::Rto;
    }

    /// `tcp_init_cwnd_reduction` (entering recovery): remember the window before the
    /// controller reduces it; no probe is outstanding any more.
    pub fn prr_init(&mut self, cwnd: f64) {
        self.tlp_high_seq = None;
        self.prior_cwnd = (cwnd.floor() as u64).max(1);
        self.prr_delivered = 0;
        self.prr_out = 0;
    }

    /// `tcp_cwnd_reduction`: the window for this ACK in recovery, `pipe + sndcnt` (RFC 6937
    /// PRR; slow-start reduction bound when pipe < ssthresh), or `None` if the ACK delivered
    /// nothing (`newly_acked_sacked <= 0`). `advanced`: the cumulative point moved; `newly_lost`:
    /// segments this ACK marked lost.
    pub fn prr_cwnd(
        &mut self,
        ssthresh: f64,
        pipe: u32,
        delivered: u32,
        advanced: bool,
        newly_lost: u32,
    ) -> Option<f64> {
        if delivered == 0 {
            return None;
        }
        let ssthresh = ssthresh.floor().max(0.0) as i64;
        let pipe = i64::from(pipe);
        let delta = ssthresh - pipe;
        self.prr_delivered += u64::from(delivered);
        let mut sndcnt = if delta < 0 {
            let dividend = ssthresh * self.prr_delivered as i64 + self.prior_cwnd as i64 - 1;
            dividend / self.prior_cwnd as i64 - self.prr_out as i64
        } else {
            let mut n = (self.prr_delivered as i64 - self.prr_out as i64).max(i64::from(delivered));
            if advanced && newly_lost == 0 {
                n += 1;
            }
            n.min(delta)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        Some((pipe + sndcnt) as f64)
    }
}

impl LinuxState {
    /// The timer rules when a segment `seq` goes out (`new`: new data): `tcp_event_new_data_sent`
    /// rearms the RTO when nothing was outstanding or a loss probe was pending;
    /// `tcp_xmit_retransmit_queue` restarts it on retransmitting the head unless RACK's
    /// reordering timer is pending. Segments sent in recovery count towards PRR's `prr_out`.
    pub fn on_send(&mut self, s: &mut Sender, seq: u64, new: bool, now: Nanos) {
        if s.in_recovery {
            self.prr_out += 1;
        }
        if s.rto_deadline == 0 {
            self.timer = Timer::Rto;
            self.rearm_rto(s, now);
        } else if new && self.timer == Timer::Probe {
            self.rearm_rto(s, now);
        } else if !new && seq == s.snd_una && self.timer != Timer::Reorder {
            s.rto_deadline = now + s.rto;
            self.timer = Timer::Rto;
        }
    }

    /// `tcp_schedule_loss_probe`: arm the probe timer if the subflow may probe.
    pub fn schedule_probe(&mut self, s: &mut Sender, advancing_rto: bool, now: Nanos) -> bool {
        if !Self::may_probe(s) {
            return false;
        }
        s.rto_deadline = now + Self::probe_timeout(s, advancing_rto, now);
        self.timer = Timer::Probe;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::scoreboard::SegPool;
    use crate::time::NS_PER_MS;

    const MS: Nanos = NS_PER_MS;

    /// Ten segments sent 1 ms apart from t = 0, and the sender's chunk pool.
    fn sender() -> (Sender, SegPool) {
        let mut pool = SegPool::default();
        let mut s = Sender::default();
        (s.mss, s.dupthresh) = (1000, false);
        for i in 0..10 {
            s.push_new(&mut pool, i, i * MS);
        }
        (s, pool)
    }

    #[test]
    fn prr_follows_rfc6937_example() {
        // RFC 6937 section 3's example, done as Linux's integer arithmetic: cwnd 20,
        // ssthresh 10, one segment lost; every ACK delivers one segment and pipe falls by
        // one per ACK. PRR sends one segment per two delivered (ssthresh / prior_cwnd).
        let mut lx = LinuxState::default();
        lx.prr_init(20.0);
        // Entry ACK: pipe 19 - 1 lost... RACK marked segment 0 lost: pipe = 20 - 1 sacked -
        // 1 lost = 18. delta = 10 - 18 < 0: sndcnt = (10*1 + 19) / 20 - 0 = 1 (forced anyway).
        assert_eq!(lx.prr_cwnd(10.0, 18, 1, false, 1), Some(19.0));
        lx.prr_out += 1; // the retransmission: pipe 19
        let mut sent = vec![1];
        let mut pipe = 19u32;
        for _ in 0..9 {
            pipe -= 1; // one more segment SACKed
            let cwnd = lx.prr_cwnd(10.0, pipe, 1, false, 0).unwrap() as u32;
            let n = cwnd.saturating_sub(pipe);
            lx.prr_out += u64::from(n);
            pipe += n;
            sent.push(n);
        }
        // prr_delivered = 2..10: sndcnt = floor((10 d + 19) / 20) - prr_out.
        assert_eq!(sent, vec![1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(lx.prr_out, 5);
        // Once pipe is below ssthresh, PRR-SSRB: at most delivered + 1 per advancing ACK,
        // never beyond ssthresh.
        assert_eq!(lx.prr_cwnd(10.0, 6, 2, true, 0), Some(10.0)); // max(12-5, 2)+1 = 8, min 4
        lx.prr_out = 12;
        assert_eq!(lx.prr_cwnd(10.0, 6, 1, false, 0), Some(7.0)); // max(13-12, 1) = 1
        assert_eq!(lx.prr_cwnd(10.0, 6, 0, true, 0), None);
    }

    #[test]
    fn rack_marks_lost_by_time_after_reordering_window() {
        // Segments 0..10 sent at 0, 1, ..., 9 ms. min_rtt 40 ms, srtt 50 ms.
        let (mut s, mut pool) = sender();
        s.rtt_estimator(50_000);
        let mut lx = LinuxState::default();
        lx.rtt_sample(40 * MS);
        // At 55 ms an ACK SACKs segment 5 (sent at 5 ms): rack.rtt = 50 ms, mstamp = 5 ms.
        let now = 55 * MS;
        lx.on_ack(&s, 0, &[(5, 6)], 5 * MS, now);
        s.on_ack(&mut pool, 0, &[(5, 6)]);
        assert_eq!(
            (lx.rack_mstamp, lx.rack_end_seq, lx.rack_rtt),
            (5 * MS, 6, 50 * MS)
        );
        assert!(lx.rack_advanced && lx.rack_may_mark(&s));
        // One segment SACKed (< DupThresh), not recovering, no reordering seen: reo_wnd =
        // min(min_rtt / 4, srtt) = 10 ms. Segments 0..5 (sent before 5 ms) are lost at
        // sent + 50 + 10 ms: segment 0 at 60 ms, ... none yet; the first expires in 5 ms,
        // the last (4, sent at 4 ms) in 9 ms: the reordering timer waits for the latest.
        assert_eq!(lx.reo_wnd(&s), 10 * MS);
        assert_eq!(lx.detect_loss(&mut s, now), (0, 9 * MS));
        assert_eq!(LinuxState::reo_timeout(9 * MS), 11 * MS);
        // At 62 ms: 0, 1 and 2 (sent at 0-2 ms, deadlines 60-62 ms) are lost.
        assert_eq!(lx.detect_loss(&mut s, 62 * MS), (3, 2 * MS));
        assert_eq!(s.awaiting_retx, 3);
        assert_eq!(s.next_retx(), Some(0));
        // Three SACKed segments (6, 7 arrive too): the window closes to 0 and 3 and 4,
        // sent before segment 7, are lost at once.
        lx.on_ack(&s, 0, &[(5, 8)], 7 * MS, 63 * MS);
        s.on_ack(&mut pool, 0, &[(5, 8)]);
        assert_eq!(lx.reo_wnd(&s), 0);
        assert_eq!((lx.rack_mstamp, lx.rack_end_seq), (7 * MS, 8));
        assert_eq!(lx.detect_loss(&mut s, 63 * MS), (2, 0));
        // 8 and 9 were sent after 7: not candidates.
        assert_eq!(s.awaiting_retx, 5);
        assert_eq!(s.pipe, 10 - 3 - 5);
    }

    #[test]
    fn rack_repairs_a_lost_retransmission() {
        let (mut s, mut pool) = sender();
        s.rtt_estimator(50_000);
        let mut lx = LinuxState::default();
        lx.rtt_sample(50 * MS);
        // 1..4 SACKed at 53 ms: 0 lost at once (3 SACKed: reo_wnd 0).
        lx.on_ack(&s, 0, &[(1, 4)], 3 * MS, 53 * MS);
        s.on_ack(&mut pool, 0, &[(1, 4)]);
        assert_eq!(lx.detect_loss(&mut s, 53 * MS), (1, 0));
        s.in_recovery = true;
        s.mark_retransmitted(0, 53 * MS);
        // The retransmission is lost; segments 4..9 (sent 4-9 ms) are SACKed at 54-59 ms.
        // The retransmission (sent at 53 ms) is after them: nothing to mark.
        lx.on_ack(&s, 0, &[(1, 10)], 9 * MS, 59 * MS);
        s.on_ack(&mut pool, 0, &[(1, 10)]);
        assert_eq!(lx.detect_loss(&mut s, 59 * MS), (0, 0));
        // New segment 10 sent at 60 ms and SACKed at 110 ms: the retransmission of 0 was
        // sent before it and is older than rack_rtt (50 ms) + 0: lost again, to be resent.
        s.push_new(&mut pool, 10, 60 * MS);
        lx.on_ack(&s, 0, &[(1, 11)], 60 * MS, 110 * MS);
        s.on_ack(&mut pool, 0, &[(1, 11)]);
        assert_eq!(lx.detect_loss(&mut s, 110 * MS), (1, 0));
        assert_eq!(s.next_retx(), Some(0));
        assert_eq!(s.pipe, 0);
        // RFC 6675 would wait for the RTO: the segment is LOST|RETX, and nothing marks it.
    }

    #[test]
    fn reordering_is_seen_and_widens_the_window() {
        let (mut s, mut pool) = sender();
        s.rtt_estimator(40_000);
        let mut lx = LinuxState::default();
        lx.rtt_sample(40 * MS);
        lx.on_ack(&s, 0, &[(3, 6)], 5 * MS, 46 * MS);
        s.on_ack(&mut pool, 0, &[(3, 6)]);
        assert!(!lx.reord_seen);
        assert_eq!(lx.reo_wnd(&s), 0);
        // Segment 1, never retransmitted, arrives below the highest SACKed (5): reordering.
        lx.on_ack(&s, 0, &[(1, 2), (3, 6)], MS, 47 * MS);
        s.on_ack(&mut pool, 0, &[(1, 2), (3, 6)]);
        assert!(lx.reord_seen);
        assert_eq!(lx.reo_wnd(&s), 10 * MS);
    }

    #[test]
    fn probe_timeout_is_two_srtt_in_jiffies() {
        let (mut s, mut pool) = sender();
        // No RTT sample: TCP_TIMEOUT_INIT (1 s), capped by the RTO (also 1 s).
        assert_eq!(LinuxState::probe_timeout(&s, true, 0), 1000 * MS);
        // srtt 100.4 ms: 2 srtt = 200.8 ms -> 201 jiffies, + TCP_TIMEOUT_MIN (10 outstanding).
        // RTO = srtt + max(2 R, 200 ms) = 301.2 ms -> 302 jiffies.
        s.rtt_estimator(100_400);
        assert_eq!(s.rto, 302 * MS);
        assert_eq!(LinuxState::probe_timeout(&s, true, 0), 203 * MS);
        // One outstanding: 201 + TCP_RTO_MIN = 401 ms, but never later than the RTO (302 ms).
        s.on_ack(&mut pool, 9, &[]);
        assert_eq!(LinuxState::probe_timeout(&s, true, 0), 302 * MS);
        // Not advancing the RTO: at most what is left of it since the head (sent at 9 ms):
        // 9 + 302 - 100 = 211 ms.
        assert_eq!(LinuxState::probe_timeout(&s, false, 100 * MS), 211 * MS);
    }
}

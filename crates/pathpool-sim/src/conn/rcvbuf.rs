//! The receive window of `receive_window = "linux"`: Linux's receive-buffer autotuning
//! ("dynamic right-sizing") and the window a receiver offers from it.
//!
//! Followed in Linux 6.18:
//! - the buffer starts at `tcp_rmem[1]` (131,072 bytes; `mptcp_init_sock`,
//!   net/mptcp/protocol.c) and grows, never shrinks, up to `tcp_rmem[2]` (the `rcv_buffer`
//!   field): once per round trip the bytes the application read in that round trip are
//!   compared with the last such measure (`rcvq_space.space`, first `TCP_INIT_CWND` x advmss:
//!   `mptcp_rcv_space_init`) and, if larger, the buffer is made to hold
//!   `2 copied + 4 copied (copied - space) / space` bytes of window (`mptcp_rcv_space_adjust`,
//!   `mptcp_rcvbuf_grow`; a TCP flow: `tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`, net/ipv4/
//!   tcp_input.c, which adds the span of its out-of-order queue and, below
//!   `tcp_rcvbuf_low_rtt` = 1 ms, grows by `2 copied x rtt / 1 ms` instead);
//! - the round trip is the largest of the subflows' receive-side estimates, each the
//!   `tcp_rcv_rtt_update` filter (a smaller sample replaces it, a larger one moves it by an
//!   eighth) of timestamp samples in whole milliseconds, one per echoed timestamp
//!   (`tcp_rcv_rtt_measure_ts`);
//! - the window offered is the buffer's free space in window units (`__mptcp_space`,
//!   `mptcp_space` in net/mptcp/subflow.c, `__tcp_select_window` in net/ipv4/tcp_output.c):
//!   half the buffer (`TCP_DEFAULT_SCALING_RATIO`) less the payload held out of order, counted
//!   from the data-level cumulative ACK, and at most the ACKing subflow's `rcv_ssthresh`, which
//!   starts at the first window and grows by two segments for each segment of 128 bytes or
//!   more the subflow receives in its own order, up to the full window (`tcp_grow_window`);
//!   its right edge never moves back (`mptcp_set_rwin`, net/mptcp/options.c;
//!   `tcp_select_window`), and the sender keeps the farthest edge it was told
//!   (`ack_update_msk`).
//!
//! What is not modelled: the scaling ratio Linux learns from the first packets' payload per
//! truesize (taken as its initial 1/2 throughout, so a held segment costs its payload in window
//! units), window-scale rounding, cuts at the window's edge (a segment goes whole or waits),
//! and zero-window probes. The receiver's round-trip samples are the sender's (`now - echoed send time` when an
//! ACK arrives): the timestamp Linux's receiver measures with spans the same round trip.

use crate::time::{Nanos, NS_PER_MS as MS};

#[cfg(test)]
use crate::config::LINUX_RCV_BUFFER as TCP_RMEM_MAX;

/// `tcp_rmem[1]`: a socket's first receive buffer, bytes.
pub const TCP_RMEM_DEFAULT: u64 = 131_072;
/// `TCP_INIT_CWND`: the first measure is ten segments' worth.
const TCP_INIT_CWND: u64 = 10;
/// `tcp_rcvbuf_low_rtt` (1 ms, `tcp_sk_init`).
const LOW_RTT: Nanos = MS;

/// One connection's receive-buffer autotuning (module docs).
#[derive(Debug)]
pub struct Autotune {
    /// `sk_rcvbuf`, bytes of memory; the window is half of it.
    pub rcvbuf: u64,
    /// `tcp_rmem[2]`, bytes.
    cap: u64,
    /// `rcvq_space.space`: the last round trip's reading that grew the buffer, bytes.
    pub space: u64,
    /// Bytes read since `time`.
    copied: u64,
    /// Start of the current measure.
    time: Nanos,
    /// The round trip the measure waits for (the largest subflow estimate when last taken).
    rtt: Nanos,
    /// Per subflow: `rcv_rtt_est.rtt_us` (eight times the estimate, us) and the last sample's
    /// echoed millisecond.
    est: Vec<(u64, u64)>,
    /// MPTCP (`mptcp_rcv_space_adjust`) or TCP (`tcp_rcv_space_adjust`).
    mptcp: bool,
    /// Right edge of the window last offered, DSN.
    pub edge: u64,
    /// Payload bytes of a full segment.
    seg: u32,
    /// `advmss`, bytes.
    advmss: u64,
    /// Per subflow: `rcv_ssthresh`, the most it offers, window bytes.
    ssthresh: Vec<u64>,
}

impl Autotune {
    /// A connection of `subflows` subflows whose full segments carry `seg` payload bytes (of an
    /// MSS of `advmss`), its buffer growing up to `cap` bytes from `start`; `mptcp` picks the
    /// MPTCP socket's rule.
    pub fn new(
        subflows: usize,
        seg: u32,
        advmss: u32,
        cap: u64,
        mptcp: bool,
        start: Nanos,
    ) -> Self {
        let rcvbuf = TCP_RMEM_DEFAULT.min(cap);
        Autotune {
            // The handshake's window: half the first buffer.
            edge: rcvbuf / 2 / u64::from(seg),
            rcvbuf,
            cap,
            // min(rcv_wnd, TCP_INIT_CWND x advmss): the first window (half the buffer) is
            // larger for every segment size allowed.
            space: (TCP_INIT_CWND * u64::from(advmss)).min(rcvbuf / 2),
            copied: 0,
            time: start,
            rtt: 0,
            est: vec![(0, u64::MAX); subflows],
            mptcp,
            seg,
            advmss: u64::from(advmss),
            ssthresh: vec![rcvbuf / 2; subflows],
        }
    }

    /// A timestamp round-trip sample of subflow `sub` at `now` echoing `ts`
    /// (`tcp_rcv_rtt_measure_ts` + `tcp_rcv_rtt_update`, timestamps in milliseconds).
    pub fn rtt_sample(&mut self, sub: usize, now: Nanos, ts: Nanos) {
        let tsecr = ts / MS;
        let (est, last) = &mut self.est[sub];
        if tsecr == *last {
            return;
        }
        *last = tsecr;
        let delta_ms = now / MS - tsecr;
        if delta_ms == 0 {
            return;
        }
        let m = delta_ms * 1000 * 8;
        *est = if *est == 0 || m < *est {
            m
        } else {
            *est - (*est >> 3) + delta_ms * 1000
        };
    }

    /// The application read `bytes` in order at `now`; `ofo_span` is how far (segments) the
    /// out-of-order data reaches past what was read (TCP's rule adds it).
    pub fn on_read(&mut self, bytes: u64, now: Nanos, ofo_span: u64) {
        let ofo_span = ofo_span * u64::from(self.seg);
        self.copied += bytes;
        let time = now.saturating_sub(self.time);
        if self.rtt != 0 && time < self.rtt {
            return;
        }
        let rtt_us = self.est.iter().map(|e| e.0).max().unwrap_or(0) >> 3;
        self.rtt = rtt_us * 1000;
        if rtt_us == 0 || time < self.rtt {
            return;
        }
        if self.copied > self.space {
            self.grow(self.copied, ofo_span);
        }
        self.copied = 0;
        self.time = now;
    }

    /// `mptcp_rcvbuf_grow` / `tcp_rcvbuf_grow` with `newval` bytes read in a round trip.
    fn grow(&mut self, newval: u64, ofo_span: u64) {
        let old = self.space.max(1);
        self.space = newval;
        // DRS is one round trip late: twice what was read, plus room for the sender to
        // double its rate (slow start).
        let mut rcvwin = newval << 1;
        if !self.mptcp && self.rtt < LOW_RTT {
            rcvwin += rcvwin * self.rtt / LOW_RTT;
        } else {
            rcvwin += ((rcvwin << 1) * (newval - old.min(newval))) / old;
        }
        if !self.mptcp {
            rcvwin += ofo_span;
        }
        // `__tcp_space_from_win` at the default scaling ratio: twice the window.
        let rcvbuf = (2 * rcvwin).min(self.cap);
        self.rcvbuf = self.rcvbuf.max(rcvbuf);
    }

    /// Subflow `sub` received `len` payload bytes in its own order (`tcp_event_data_recv` ->
    /// `tcp_grow_window`): its `rcv_ssthresh` grows by two segments, up to the full window.
    pub fn on_segment(&mut self, sub: usize, len: u32) {
        if len < 128 {
            return;
        }
        let t = &mut self.ssthresh[sub];
        let room = (self.rcvbuf / 2).saturating_sub(*t);
        *t += room.min((2 * self.advmss).max(2 * u64::from(len)));
    }

    /// The window subflow `sub` offers at data-level ACK `rcv_nxt` while `held` payload bytes
    /// wait out of order, in full segments: the free space, at most the subflow's
    /// `rcv_ssthresh`; the connection's edge never moves back.
    pub fn window(&mut self, sub: usize, rcv_nxt: u64, held: u64) -> u64 {
        let free = (self.rcvbuf / 2)
            .saturating_sub(held)
            .min(self.ssthresh[sub]);
        self.edge = self.edge.max(rcv_nxt + free / u64::from(self.seg));
        self.edge - rcv_nxt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_window_is_half_of_tcp_rmem1_less_what_is_held() {
        let mut a = Autotune::new(2, 1448, 1448, TCP_RMEM_MAX, true, 0);
        // 65,536 / 1,448 = 45 segments.
        assert_eq!(a.window(0, 0, 0), 45);
        assert_eq!(a.space, 14_480);
        // 20 segments held out of order: 65,536 - 28,960 = 36,576 -> 25 segments, but the
        // edge (45) does not move back.
        assert_eq!(a.window(0, 0, 20 * 1448), 45);
        // Ten delivered, ten held: 65,536 - 14,480 = 51,056 -> 35 segments from DSN 10, the
        // same edge.
        assert_eq!(a.window(0, 10, 10 * 1448), 35);
        // All delivered at DSN 40: 40 + 45 = 85.
        assert_eq!(a.window(0, 40, 0), 45);
        assert_eq!(a.edge, 85);
    }

    #[test]
    fn rtt_filter_takes_smaller_samples_and_moves_an_eighth_toward_larger_ones() {
        let mut a = Autotune::new(1, 1448, 1448, TCP_RMEM_MAX, false, 0);
        a.rtt_sample(0, 100 * MS + 300_000, 0); // 100 ms
        assert_eq!(a.est[0].0, 800_000);
        a.rtt_sample(0, 100 * MS, 0); // same echoed millisecond: no sample
        assert_eq!(a.est[0].0, 800_000);
        a.rtt_sample(0, 261 * MS, MS); // 260 ms: 800,000 - 100,000 + 260,000
        assert_eq!(a.est[0].0, 960_000);
        a.rtt_sample(0, 52 * MS, 2 * MS); // 50 ms: smaller, taken as it is
        assert_eq!(a.est[0].0, 400_000);
        a.rtt_sample(0, 3 * MS + 10, 3 * MS); // 0 ms: ignored
        assert_eq!(a.est[0].0, 400_000);
    }

    #[test]
    fn buffer_grows_by_the_slow_start_rule_once_a_round_trip() {
        // MPTCP, two subflows of 100 ms and 300 ms: the measure waits for 300 ms.
        let mut a = Autotune::new(2, 1448, 1448, TCP_RMEM_MAX, true, 0);
        a.rtt_sample(0, 100 * MS, 0);
        a.rtt_sample(1, 300 * MS, 0);
        // 50,000 bytes by 299 ms: not yet a round trip.
        a.on_read(50_000, 299 * MS, 0);
        assert_eq!(a.rcvbuf, TCP_RMEM_DEFAULT);
        // 60,000 in all at 300 ms: space 14,480 -> 60,000; window 2 x 60,000 plus
        // 4 x 60,000 x (60,000 - 14,480) / 14,480 = 120,000 + 754,475 = 874,475
        // (integer steps: (240,000 x 45,520) / 14,480 = 754,475); buffer twice that.
        a.on_read(10_000, 300 * MS, 0);
        assert_eq!(a.space, 60_000);
        assert_eq!(a.rcvbuf, 2 * (120_000 + 240_000 * 45_520 / 14_480));
        // The next round trip reads less than 60,000: nothing grows, space stays.
        a.on_read(40_000, 601 * MS, 0);
        assert_eq!(a.space, 60_000);
        assert_eq!(a.rcvbuf, 2 * (120_000 + 240_000 * 45_520 / 14_480));
    }

    #[test]
    fn tcp_rule_adds_the_out_of_order_span_and_the_buffer_stops_at_its_cap() {
        let mut a = Autotune::new(1, 1448, 1448, 300_000, false, 0);
        a.rtt_sample(0, 20 * MS, 0);
        a.on_read(30_000, 20 * MS, 5);
        // 2 x 30,000 + 4 x 30,000 x 15,520 / 14,480 + 5 x 1,448 = 60,000 + 128,618 + 7,240.
        // Twice that is over the cap: 300,000.
        assert_eq!(a.rcvbuf, 300_000);
        // The offer waits for rcv_ssthresh (65,536 = 45 segments) ...
        assert_eq!(a.window(0, 0, 0), 45);
        // ... which 30 segments of 1,448 bytes raise by 2 x 1,448 each, to the full window.
        for _ in 0..30 {
            a.on_segment(0, 1448);
        }
        assert_eq!(a.window(0, 0, 0), 150_000 / 1448);
    }

    #[test]
    fn rcv_ssthresh_grows_two_segments_per_segment_up_to_the_full_window() {
        let mut a = Autotune::new(2, 1420, 1448, TCP_RMEM_MAX, true, 0);
        a.rcvbuf = 200_000;
        a.on_segment(1, 1420); // max(2 x 1,448, 2 x 1,420)
        assert_eq!(a.ssthresh, vec![65_536, 65_536 + 2_896]);
        a.on_segment(1, 100); // under 128 bytes: no growth (`tcp_event_data_recv`)
        assert_eq!(a.ssthresh[1], 65_536 + 2_896);
        for _ in 0..20 {
            a.on_segment(1, 1420);
        }
        assert_eq!(a.ssthresh[1], 100_000);
        // Subflow 1 offers 100,000 bytes (70 segments of 1,420), subflow 0 still 46; the
        // connection's edge is the farthest offered.
        assert_eq!(a.window(1, 0, 0), 70);
        assert_eq!(a.window(0, 0, 0), 70);
        assert_eq!(a.edge, 70);
    }

    #[test]
    fn tcp_rule_below_a_millisecond_grows_in_proportion_to_the_round_trip() {
        let mut a = Autotune::new(1, 1000, 1000, TCP_RMEM_MAX, false, 0);
        a.est[0] = (8 * 500, u64::MAX); // 500 us
        a.on_read(100_000, MS, 0);
        // 2 x 100,000 x (1 + 500 / 1000) = 300,000 of window, 600,000 of buffer.
        assert_eq!(a.rcvbuf, 600_000);
    }
}

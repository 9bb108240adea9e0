//! The packet scheduler: which subflow carries a connection's next new segment. One scheduler
//! per connection, with its own state; the send path asks it once per new segment.

use pathpool_cc::Subflow;

use super::sender::Sender;
use super::sendq::{int_window, pacing_rate, SendQ, SubQueue, RTO_MIN, SEND_BURST};
use crate::config;
use crate::time::Nanos;

/// A connection's packet scheduler (the scenario's `scheduler`) and its state.
#[derive(Debug)]
pub struct Scheduler {
    kind: config::Scheduler,
    /// `roundrobin`: the subflow to try first next time.
    rr_next: usize,
}

impl Scheduler {
    pub fn new(kind: config::Scheduler) -> Self {
        Scheduler { kind, rr_next: 0 }
    }

    /// Pick the subflow for the next new segment among `snd` (with the controller's `views`),
    /// or None if none has room.
    ///
    /// A subflow is usable if it is active and has room in its window; with several subflows,
    /// one in loss state after an RTO is skipped, as the out-of-tree Linux MPTCP kernel's
    /// `mptcp_is_temp_unavailable` does. Then:
    ///
    /// * `minrtt`: the lowest smoothed RTT (subflows without a sample yet come first, in index
    ///   order). This is the default scheduler of the out-of-tree Linux MPTCP kernels
    ///   (multipath-tcp.org, v0.9x), not upstream Linux's: upstream picks the subflow whose
    ///   queued data would leave soonest at its pacing rate ([`pick_linux`]).
    /// * `roundrobin`: the next usable subflow after the one picked last.
    ///
    /// Inlined into the send loop, its one caller, which runs it once or twice per ACK: as a
    /// call its entry and exit were a third of its cost (callgrind, 1 s of bench.toml: 1.0% of
    /// all instructions).
    #[inline]
    pub fn pick(&mut self, snd: &[Sender], views: &[Subflow]) -> Option<usize> {
        let k = snd.len();
        let usable = |i: usize| {
            views[i].active && snd[i].has_room(views[i].cwnd) && !(k > 1 && snd[i].in_loss)
        };
        match self.kind {
            config::Scheduler::MinRtt => {
                let mut best: Option<(u64, usize)> = None;
                for (i, s) in snd.iter().enumerate() {
                    if usable(i) {
                        let r = if s.has_rtt() { s.srtt_ns() } else { 0 };
                        if best.is_none_or(|(b, _)| r < b) {
                            best = Some((r, i));
                        }
                    }
                }
                best.map(|(_, i)| i)
            }
            // Never reached: `scheduler = "linux"` sends through `pick_linux`.
            config::Scheduler::Linux => None,
            config::Scheduler::RoundRobin => {
                for j in 0..k {
                    let i = (self.rr_next + j) % k;
                    if usable(i) {
                        self.rr_next = (i + 1) % k;
                        return Some(i);
                    }
                }
                None
            }
        }
    }
}

/// Upstream Linux's default scheduler, `mptcp_subflow_get_send` (net/mptcp/protocol.c, Linux
/// 6.18; see [`super::sendq`]): the subflow to hand the next burst of connection-level data
/// and the burst's size in bytes, or None.
///
/// Among active subflows, the lowest linger time `(wmem_queued << 32) / avg_pacing_rate`
/// (strictly lower: ties go to the first in order), where `wmem_queued` is what the subflow
/// holds (sent and not cumulatively acknowledged, plus its queue) and `avg_pacing_rate` starts
/// as the subflow's pacing rate (`sk_pacing_rate`, which Linux sets on each ACK: a subflow
/// whose ACKs stopped keeps its last rate). The window, the RTT and loss state play no part. If the pick's
/// send buffer is full, nothing (no second choice). The burst is `MPTCP_SEND_BURST_SIZE`, at
/// most what the connection-level window still allows (`window_bytes`); a burst of 0 still
/// returns the pick. Otherwise the pick's `avg_pacing_rate` becomes the average of the old one
/// over its queued bytes and its current pacing rate over the burst.
pub fn pick_linux(
    snd: &[Sender],
    views: &[Subflow],
    q: &mut SendQ,
    mss: u32,
    window_bytes: u64,
) -> Option<(usize, u64)> {
    let mut best: Option<(u64, usize)> = None;
    for (i, s) in snd.iter().enumerate() {
        if !views[i].active {
            continue;
        }
        let sub = &mut q.subs[i];
        if sub.pacing_rate == 0 {
            sub.pacing_rate = subflow_pacing_rate(s, &views[i], sub.handshake_rtt, mss);
        }
        if sub.avg_pacing_rate == 0 {
            sub.avg_pacing_rate = sub.pacing_rate;
            if sub.avg_pacing_rate == 0 {
                continue;
            }
        }
        let linger = (wmem_queued(s, sub.queue.len(), mss) << 32) / sub.avg_pacing_rate;
        if best.is_none_or(|(b, _)| linger < b) {
            best = Some((linger, i));
        }
    }
    let (_, i) = best?;
    if !q.memory_free(&snd[i], i, mss) {
        return None;
    }
    let burst = SEND_BURST.min(window_bytes);
    if burst == 0 {
        return Some((i, 0));
    }
    let wmem = wmem_queued(&snd[i], q.subs[i].queue.len(), mss);
    let sub = &mut q.subs[i];
    let rate = sub.pacing_rate;
    sub.avg_pacing_rate = ((u128::from(sub.avg_pacing_rate) * u128::from(wmem)
        + u128::from(rate) * u128::from(burst))
        / u128::from(burst + wmem)) as u64;
    Some((i, burst))
}

/// `__mptcp_set_timeout` as `mptcp_subflow_get_send` calls it before each pick (Linux 6.18,
/// net/mptcp/protocol.c): the connection's timer interval becomes the longest time the own
/// timer of an active subflow still has to run, counting only subflows whose stale count is 0
/// (`mptcp_timeout_from_subflow`), or `TCP_RTO_MIN` if none counts. The connection-level timer
/// is armed with it until the next pick sets it again ([`SendQ::timer_ival`]).
pub fn set_timeout(snd: &[Sender], views: &[Subflow], q: &mut SendQ, now: Nanos) {
    let tout = snd
        .iter()
        .zip(views)
        .zip(&q.subs)
        .filter(|((s, v), sub)| v.active && sub.stale_count == 0 && s.rto_deadline > now)
        .map(|((s, _), _)| s.rto_deadline - now)
        .max()
        .unwrap_or(0);
    q.timer_ival = if tout > 0 { tout } else { RTO_MIN };
}

/// `mptcp_pm_subflow_chk_stale` (net/mptcp/pm.c, Linux 6.18) for a subflow with data
/// outstanding or queued, at an expiry of the connection-level timer: the first expiry starts
/// the count at the subflow's last ACK time (`rcv_tstamp`); each further one with no ACK since
/// adds one; an ACK in between ends the count. (Past `stale_loss_cnt` = 4 Linux may also mark
/// the subflow stale and send its data again elsewhere: not modelled.)
pub fn count_stale(sub: &mut SubQueue, rcv_tstamp: Nanos) {
    if sub.stale_count == 0 {
        sub.stale_rcv_tstamp = rcv_tstamp;
        sub.stale_count = 1;
    } else if sub.stale_rcv_tstamp == rcv_tstamp {
        sub.stale_count = sub.stale_count.saturating_add(1);
    } else {
        sub.stale_count = 0;
    }
}

/// `sk_wmem_queued` of a subflow in payload bytes: its segments sent and not cumulatively
/// acknowledged (SACKed ones are still in the retransmission queue) plus its `queued` unsent.
#[inline]
pub fn wmem_queued(s: &Sender, queued: usize, mss: u32) -> u64 {
    (s.outstanding() + queued as u64) * u64::from(mss)
}

/// The subflow's `sk_pacing_rate` now: from its integer window, packets out and smoothed RTT
/// (the handshake's before the first sample).
#[inline]
pub(crate) fn subflow_pacing_rate(s: &Sender, v: &Subflow, handshake_rtt: u64, mss: u32) -> u64 {
    let (cwnd, ssthresh) = int_window(v.cwnd, v.ssthresh);
    let srtt = if s.has_rtt() {
        s.srtt_ns()
    } else {
        handshake_rtt
    };
    pacing_rate(mss, cwnd, ssthresh, s.outstanding(), srtt)
}

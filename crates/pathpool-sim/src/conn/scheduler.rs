//! The packet scheduler: which subflow carries a connection's next new segment. One scheduler
//! per connection, with its own state; the send path asks it once per new segment.

use pathpool_cc::Subflow;

use super::sender::Sender;
use crate::config;

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
    ///   (multipath-tcp.org, v0.9x), not upstream Linux's: since 5.6 upstream picks the subflow
    ///   whose queued data would leave soonest at its pacing rate.
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

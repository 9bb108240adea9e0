//! A rate flow's receiver: per-path loss, delay and RTT statistics (losses from sequence gaps,
//! loss events as TFRC counts them) and FEC block decoding against the deadline.

use std::collections::VecDeque;

use super::feedback::PathCounters;
use crate::net::NO_EVENT;
use crate::time::{secs, Nanos};

#[derive(Clone, Copy, Debug)]
struct Block {
    k: u32,
    in_time: u32,
    in_time_source: u32,
    /// The block is settled once the clock passes this (`NO_EVENT`: not known yet).
    settles: Nanos,
}

/// The receiving side: per-path loss/delay statistics and FEC block decoding.
#[derive(Debug)]
pub(crate) struct RateReceiver {
    deadline: Nanos,
    next_seq: Vec<u64>,
    pub(crate) counters: Vec<PathCounters>,
    /// Send time of the last packet that arrived on each path.
    last_sent: Vec<Nanos>,
    /// Start (send time) of the current loss event per path (`NO_EVENT`: none yet).
    event_start: Vec<Nanos>,
    /// Smoothed RTT per path (RFC 6298 gain 1/8; 0 before the first sample).
    srtt: Vec<Nanos>,
    pub(crate) in_time_bytes: Vec<u64>,
    pub(crate) min_rtt: Vec<Nanos>,
    /// Unsettled blocks, oldest first; `blocks[0]` has id `base`.
    blocks: VecDeque<Block>,
    base: u64,
    /// `blocks[..first_open]` already have their settle time.
    first_open: usize,
    pub(crate) decoded_source: u64,
    pub(crate) settled_blocks: u64,
    pub(crate) integrity_errors: u64,
}

impl RateReceiver {
    pub(crate) fn new(n_paths: usize, deadline: Nanos) -> Self {
        RateReceiver {
            deadline,
            next_seq: vec![0; n_paths],
            counters: vec![PathCounters::default(); n_paths],
            last_sent: vec![0; n_paths],
            event_start: vec![NO_EVENT; n_paths],
            srtt: vec![0; n_paths],
            in_time_bytes: vec![0; n_paths],
            min_rtt: vec![0; n_paths],
            blocks: VecDeque::with_capacity(1024),
            base: 0,
            first_open: 0,
            decoded_source: 0,
            settled_blocks: 0,
            integrity_errors: 0,
        }
    }

    /// Settle a block: all `k` source packets if at least `k` of its packets came in time,
    /// else the source packets that came in time themselves.
    fn settle_front(&mut self) {
        let b = self.blocks.pop_front().expect("a block to settle");
        self.decoded_source += u64::from(if b.k > 0 && b.in_time >= b.k {
            b.k
        } else {
            b.in_time_source
        });
        self.settled_blocks += 1;
        self.base += 1;
        self.first_open = self.first_open.saturating_sub(1);
    }

    /// Settle every block whose deadline has passed at `now`.
    pub(crate) fn settle(&mut self, now: Nanos) {
        while self.blocks.front().is_some_and(|b| b.settles < now) {
            self.settle_front();
        }
    }

    /// Settle everything (end of run).
    pub(crate) fn settle_all(&mut self) {
        while !self.blocks.is_empty() {
            self.settle_front();
        }
    }

    /// A data packet of path `r` arrived at `now`; `rtt_extra` is the return delay that makes
    /// its one-way delay an RTT sample. Returns whether it was in time.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_packet(
        &mut self,
        r: usize,
        seq: u64,
        block: u64,
        index: u32,
        k: u32,
        payload: u32,
        sent_at: Nanos,
        now: Nanos,
        rtt_extra: Nanos,
    ) -> bool {
        self.settle(now);
        let expected = self.next_seq[r];
        if seq < expected {
            self.integrity_errors += 1;
            return false;
        }
        self.next_seq[r] = seq + 1;
        let owd = now - sent_at;
        let rtt = owd + rtt_extra;
        if seq > expected {
            // RFC 5348 section 5.2: the lost packets' send times are interpolated between the
            // packets before and after the gap; one that was sent more than one RTT after the
            // current loss event began starts a new one.
            let gap = seq - expected;
            let rtt_now = if self.srtt[r] > 0 { self.srtt[r] } else { rtt };
            let (t0, t1) = (self.last_sent[r] as f64, sent_at as f64);
            for i in 1..=gap {
                let t = (t0 + (t1 - t0) * i as f64 / (gap + 1) as f64) as Nanos;
                let start = self.event_start[r];
                if start == NO_EVENT || t > start.saturating_add(rtt_now) {
                    self.event_start[r] = t;
                    self.counters[r].loss_events += 1;
                }
            }
        }
        self.last_sent[r] = sent_at;
        self.srtt[r] = if self.srtt[r] == 0 {
            rtt
        } else {
            self.srtt[r] - self.srtt[r] / 8 + rtt / 8
        };
        let in_time = owd <= self.deadline;
        let c = &mut self.counters[r];
        c.lost += seq - expected;
        c.sent = seq + 1;
        c.arrived += 1;
        let (d, t) = (secs(owd), secs(rtt));
        c.delay_sum += d;
        c.delay_sq_sum += d * d;
        c.rtt_sum += t;
        c.rtt_sq_sum += t * t;
        self.min_rtt[r] = if self.min_rtt[r] == 0 {
            rtt
        } else {
            self.min_rtt[r].min(rtt)
        };
        if !in_time {
            c.late += 1;
        } else {
            self.in_time_bytes[r] += u64::from(payload);
        }
        if block < self.base {
            // Settled blocks only receive packets that are late by construction.
            if in_time {
                self.integrity_errors += 1;
            }
            return in_time;
        }
        let pos = (block - self.base) as usize;
        while self.blocks.len() <= pos {
            self.blocks.push_back(Block {
                k: 0,
                in_time: 0,
                in_time_source: 0,
                settles: NO_EVENT,
            });
        }
        // Every packet of an earlier block was sent no later than this one.
        let settles = sent_at.saturating_add(self.deadline);
        while self.first_open < pos {
            self.blocks[self.first_open].settles = settles;
            self.first_open += 1;
        }
        let b = &mut self.blocks[pos];
        b.k = k;
        if in_time {
            b.in_time += 1;
            if index < k {
                b.in_time_source += 1;
            }
        }
        in_time
    }
}

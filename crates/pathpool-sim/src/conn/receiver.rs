//! One subflow's receiver: the subflow sequence space reassembled, the SACK blocks of its ACKs
//! (RFC 2018), and the delayed-ACK state.

use crate::net::packet::MAX_SACK_BLOCKS;
use crate::time::{Nanos, NS_PER_MS};

/// Delayed-ACK timer (Linux `TCP_DELACK_MAX`-ish 40 ms).
pub const DELACK_TIMEOUT: Nanos = 40 * NS_PER_MS;

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
}

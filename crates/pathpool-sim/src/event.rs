//! The event queue: a binary heap ordered by (time, insertion sequence), so that events at the
//! same instant run in the order they were scheduled and a run never depends on heap internals.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Nanos;

/// What happens at an instant. Small and `Copy`: the heap moves these around a lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A packet (slab index) reaches hop `pkt.hop` of its route (or its endpoint).
    Arrive(u32),
    /// The retransmission timer of (connection, subflow) may have expired.
    Rto(u32, u16),
    /// The delayed-ACK timer of (connection, subflow) may have expired.
    DelAck(u32, u16),
    /// A connection's application starts.
    Start(u32),
    /// A connection's application stops offering new data.
    Stop(u32),
    /// Take one sample of every time series.
    Sample,
}

#[derive(Clone, Copy, Debug)]
struct Item {
    at: Nanos,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Item {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl Eq for Item {}
impl PartialOrd for Item {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Item {
    /// Reversed, so that the max-heap pops the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.at.cmp(&self.at).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Deterministic future-event list.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Item>,
    seq: u64,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(n), seq: 0 }
    }

    #[inline]
    pub fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.heap.push(Item { at, seq: self.seq, ev });
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, Ev)> {
        self.heap.pop().map(|i| (i.at, i.ev))
    }

    #[inline]
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|i| i.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Every pending event, in no particular order (for end-of-run accounting).
    pub fn pending(&self) -> impl Iterator<Item = Ev> + '_ {
        self.heap.iter().map(|i| i.ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, Ev::Start(1));
        q.push(3, Ev::Start(2));
        q.push(5, Ev::Start(3));
        q.push(5, Ev::Sample);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(3, Ev::Start(2)), (5, Ev::Start(1)), (5, Ev::Start(3)), (5, Ev::Sample)]);
    }
}

//! The event queue: events are ordered by (time, scheduling sequence number), so that events at
//! the same instant run in the order they were scheduled and a run never depends on queue
//! internals.
//!
//! Most events are packet arrivals, and those come in *lanes* whose times never decrease: the
//! far end of a link (a FIFO served at a constant rate, so departures leave in order, each a
//! fixed propagation delay later), a fixed-delay route. A lane is a FIFO of
//! `(time, seq, packet)`; only its head sits in the binary heap, the way htsim lets each queue
//! schedule its own next departure. A lane keeps the sequence number each packet got when it
//! was scheduled, so the pop order is exactly that of one heap holding every event; but the heap
//! holds a few hundred entries instead of every packet in flight, and appending to a non-empty
//! lane costs no heap operation at all. A packet that leaves FIFO order (held back by a link's
//! `reorder`) is scheduled with [`EventQueue::push`] as an event of its own, never in a lane.
//!
//! The host send queues' delays (`send_jitter`, at most a fraction of a millisecond ahead) go
//! to a calendar of 1024 buckets instead ([`EventQueue::push_near`]); a pop takes the earlier of
//! its head and the heap's root, so the order is still that of one heap.

use std::collections::VecDeque;

use crate::time::Nanos;

/// What happens at an instant. Small and `Copy`: the heap moves these around a lot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A packet (slab index) reaches hop `pkt.hop` of its route (or its endpoint).
    Arrive(u32),
    /// The retransmission timer of (connection, subflow) may have expired.
    Rto(u32, u16),
    /// The connection-level retransmission timer of a connection with Linux's scheduler may
    /// have expired.
    DataRtx(u32),
    /// The delayed-ACK timer of (connection, subflow) may have expired.
    DelAck(u32, u16),
    /// An endpoint's application starts (a connection or a rate flow).
    Start(u32),
    /// An endpoint's application stops offering new data.
    Stop(u32),
    /// Subflow (connection, subflow)'s MP_JOIN handshake has ended (`joins = "linux"`).
    Join(u32, u16),
    /// Subflow (connection, subflow)'s MP_JOIN SYN/ACK has arrived: its send buffer counts.
    JoinBuffer(u32, u16),
    /// Take one sample of every time series.
    Sample,
    /// A rate flow's receiver sends a report.
    Report(u32),
    /// The pacing timer of (rate flow, path).
    Pace(u32, u16),
}

/// What a heap entry stands for: an event, or the head of a lane.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Ev(Ev),
    Lane(u32),
}

#[derive(Clone, Copy, Debug)]
struct Item {
    at: Nanos,
    seq: u64,
    slot: Slot,
}

impl Item {
    /// The total order of events: time, then scheduling order (`seq` is unique).
    #[inline(always)]
    fn before(&self, o: &Item) -> bool {
        (self.at, self.seq) < (o.at, o.seq)
    }
}

/// A binary min-heap on [`Item::before`] that moves a "hole" instead of swapping, and keeps the
/// item it places in registers. `std::collections::BinaryHeap` re-keyed in place (`PeekMut`)
/// writes the new key into the root and reads it straight back as one 16-byte load, which
/// cannot be forwarded from the two 8-byte stores and so waits for every older store to reach
/// the cache, some of them to cold packet slots (~10% of a 999-flow profile's samples sat there;
/// with this heap they are gone, though total time moved by less than the noise). Which heap is
/// used changes nothing else: `(at, seq)` is a total order, so any heap pops the same
/// sequence.
#[derive(Debug, Default)]
struct Heap {
    v: Vec<Item>,
}

impl Heap {
    fn with_capacity(n: usize) -> Self {
        Heap {
            v: Vec::with_capacity(n),
        }
    }

    #[inline]
    fn peek(&self) -> Option<&Item> {
        self.v.first()
    }

    #[inline]
    fn push(&mut self, it: Item) {
        let mut hole = self.v.len();
        self.v.push(it);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if !it.before(&self.v[parent]) {
                break;
            }
            self.v[hole] = self.v[parent];
            hole = parent;
        }
        self.v[hole] = it;
    }

    /// Put `it` where the root was and restore the heap (the root is overwritten; the heap must
    /// not be empty). Not inlined: inlined into the event loop, this loop's code changed with
    /// unrelated edits elsewhere in the loop (callgrind: 128 M or 158 M instructions for the
    /// same sift-downs on 3 s of bench.toml); out of line it is the same code every build, for
    /// a call per pop. Raw indexing: the sift-down is the event loop's largest single cost
    /// (16% of all instructions on bench.toml), and a bounds check per level was a fifth of it.
    #[inline(never)]
    fn replace_root(&mut self, it: Item) {
        let n = self.v.len();
        assert!(n > 0, "replace_root on an empty heap");
        let v = self.v.as_mut_ptr();
        let mut hole = 0;
        // SAFETY: `hole < n` throughout (0 < n, and `hole` only takes values `c < n`), and every
        // read is of an index `c` or `c + 1` tested `< n` first: all in bounds of `self.v`.
        unsafe {
            loop {
                let mut c = 2 * hole + 1;
                if c >= n {
                    break;
                }
                if c + 1 < n && (*v.add(c + 1)).before(&*v.add(c)) {
                    c += 1;
                }
                if !(*v.add(c)).before(&it) {
                    break;
                }
                *v.add(hole) = *v.add(c);
                hole = c;
            }
            *v.add(hole) = it;
        }
    }

    /// Remove the root (the heap must not be empty).
    #[inline]
    fn pop_root(&mut self) -> Item {
        let top = self.v[0];
        let last = self.v.pop().expect("pop_root on an empty heap");
        if !self.v.is_empty() {
            self.replace_root(last);
        }
        top
    }

    fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    fn iter(&self) -> std::slice::Iter<'_, Item> {
        self.v.iter()
    }
}

/// How far ahead in a lane to prefetch entries (8 entries = 2 cache lines ahead).
const LANE_AHEAD: usize = 8;

/// One pending event of the [`Near`] calendar.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    at: Nanos,
    seq: u64,
    pid: u32,
}

/// One pending arrival in a lane: 16 bytes instead of 24. Its sequence number is kept as the
/// difference from the lane's previous entry (the head's own number is in its heap item), as
/// the lanes hold every packet in flight (with 999 flows at 10 Gb/s, 45 k entries).
#[derive(Clone, Copy, Debug, Default)]
struct LaneEntry {
    at: Nanos,
    pid: u32,
    dseq: u32,
}

#[derive(Debug, Default)]
struct Lane {
    q: VecDeque<LaneEntry>,
    /// Sequence number of the last entry appended.
    tail_seq: u64,
}

/// Buckets of the [`Near`] calendar (a power of two).
const NEAR_BUCKETS: usize = 1024;

/// A calendar of the arrivals due within a short horizon of `now` (the host send queues'
/// `send_jitter` delays): a third of all events, each pending for a fraction of a millisecond.
/// In the heap each cost a sift-up past the far timers and, when its subflow's queue emptied, a
/// sift-down of the last leaf from the root; here it costs a link into a bucket and a bit scan.
/// Buckets are `2^shift` ns wide and the ring spans more than the horizon plus one bucket, so
/// the pending entries (all within `[now, now + horizon]`) lie in distinct time windows and the
/// first non-empty bucket from the current one holds the earliest. Each bucket is a list sorted
/// by `(at, seq)`, so the calendar's head is exactly its earliest entry, and the queue pops the
/// earlier of it and the heap's root: the order of one heap of every event. Entries live in a
/// slab with a free list (no allocation per packet once it has grown to the largest backlog).
#[derive(Debug, Default)]
struct Near {
    shift: u32,
    /// First node of each bucket's list (`NIL`: empty).
    first: Vec<u32>,
    nodes: Vec<Node>,
    /// Head of the free list of `nodes` (`NIL`: none).
    free: u32,
    /// Bit `b` set: bucket `b` is not empty.
    bits: Vec<u64>,
    len: usize,
    /// The earliest entry (valid when `len > 0`) and its bucket.
    head: Entry,
    head_bucket: usize,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    e: Entry,
    next: u32,
}

const NIL: u32 = u32::MAX;

impl Near {
    fn new(horizon: Nanos) -> Self {
        if horizon == 0 {
            return Near::default();
        }
        // Ring span NEAR_BUCKETS << shift > horizon + 2 buckets.
        let mut shift = 0;
        while ((NEAR_BUCKETS as u64 - 2) << shift) <= horizon {
            shift += 1;
        }
        Near {
            shift,
            first: vec![NIL; NEAR_BUCKETS],
            nodes: Vec::with_capacity(256),
            free: NIL,
            bits: vec![0; NEAR_BUCKETS / 64],
            len: 0,
            head: Entry::default(),
            head_bucket: 0,
        }
    }

    #[inline]
    fn bucket(&self, at: Nanos) -> usize {
        (at >> self.shift) as usize & (NEAR_BUCKETS - 1)
    }

    #[inline]
    fn push(&mut self, e: Entry) {
        let b = self.bucket(e.at);
        let n = if self.free != NIL {
            let n = self.free;
            self.free = self.nodes[n as usize].next;
            n
        } else {
            self.nodes.push(Node { e, next: NIL });
            (self.nodes.len() - 1) as u32
        };
        // `e.seq` is the largest so far: it goes after every entry not later than it.
        let mut prev = NIL;
        let mut cur = self.first[b];
        while cur != NIL && self.nodes[cur as usize].e.at <= e.at {
            prev = cur;
            cur = self.nodes[cur as usize].next;
        }
        self.nodes[n as usize] = Node { e, next: cur };
        if prev == NIL {
            self.first[b] = n;
        } else {
            self.nodes[prev as usize].next = n;
        }
        self.bits[b / 64] |= 1 << (b % 64);
        if self.len == 0 || (e.at, e.seq) < (self.head.at, self.head.seq) {
            self.head = e;
            self.head_bucket = b;
        }
        self.len += 1;
    }

    /// Remove the head (the calendar must not be empty) and find the next one.
    #[inline]
    fn pop(&mut self) -> Entry {
        let e = self.head;
        let b = self.head_bucket;
        let n = self.first[b];
        let next = self.nodes[n as usize].next;
        self.nodes[n as usize].next = self.free;
        self.free = n;
        self.first[b] = next;
        self.len -= 1;
        if next != NIL {
            self.head = self.nodes[next as usize].e;
            return e;
        }
        self.bits[b / 64] &= !(1 << (b % 64));
        if self.len > 0 {
            let nb = self.next_bucket(b);
            self.head = self.nodes[self.first[nb] as usize].e;
            self.head_bucket = nb;
        }
        e
    }

    /// The first non-empty bucket at or after `b`, cyclically (some bucket is not empty).
    #[inline]
    fn next_bucket(&self, b: usize) -> usize {
        let words = NEAR_BUCKETS / 64;
        let mut w = b / 64;
        let mut m = self.bits[w] & (!0u64 << (b % 64));
        for _ in 0..=words {
            if m != 0 {
                return w * 64 + m.trailing_zeros() as usize;
            }
            w = (w + 1) % words;
            m = self.bits[w];
        }
        unreachable!("a non-empty calendar has a set bit")
    }

    /// Every pending entry, in no particular order.
    fn iter(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.first.iter().flat_map(move |&f| {
            std::iter::successors((f != NIL).then_some(f), move |&n| {
                let next = self.nodes[n as usize].next;
                (next != NIL).then_some(next)
            })
            .map(move |n| &self.nodes[n as usize].e)
        })
    }
}

/// Deterministic future-event list.
#[derive(Debug)]
pub struct EventQueue {
    heap: Heap,
    lanes: Vec<Lane>,
    /// Largest sequence gap a lane entry can record (`u32::MAX`; smaller in a test).
    max_dseq: u64,
    /// Lane arrivals scheduled as events of their own for a gap beyond `max_dseq`.
    lane_overflows: u64,
    near: Near,
    seq: u64,
    /// Time of the last event popped (the calendar's horizon counts from it).
    last: Nanos,
    /// The packet of the lane arrival that became due next in the lane just popped (`u32::MAX`:
    /// none). See [`EventQueue::next_in_lane`].
    hint: u32,
}

impl Default for EventQueue {
    /// A queue without lanes or calendar.
    fn default() -> Self {
        EventQueue::new(0, 0, 0)
    }
}

impl EventQueue {
    /// Bytes held by the heap, the lanes and the calendar (capacities: what each has grown
    /// to), for [`crate::Simulation::memory`].
    pub(crate) fn memory(&self) -> [(&'static str, usize); 3] {
        let lanes: usize = self.lanes.iter().map(|l| l.q.capacity()).sum();
        [
            (
                "event heap",
                self.heap.v.capacity() * std::mem::size_of::<Item>(),
            ),
            (
                "lanes (every packet in flight)",
                lanes * std::mem::size_of::<LaneEntry>()
                    + self.lanes.len() * std::mem::size_of::<Lane>(),
            ),
            (
                "send-jitter calendar",
                self.near.nodes.capacity() * std::mem::size_of::<Node>()
                    + self.near.first.len() * 4
                    + self.near.bits.len() * 8,
            ),
        ]
    }

    /// A queue with `lanes` arrival lanes (numbered `0..lanes`), room for `n` heap entries, and
    /// a calendar for arrivals at most `horizon` after the time of the last pop
    /// ([`EventQueue::push_near`]).
    pub fn new(lanes: usize, n: usize, horizon: Nanos) -> Self {
        EventQueue {
            heap: Heap::with_capacity(n),
            near: Near::new(horizon),
            last: 0,
            // Most lanes are hosts' send queues holding 0-3 packets: a small ring stays on one
            // or two cache lines (and 999 flows' lanes take 1 MB less); link lanes grow.
            lanes: (0..lanes)
                .map(|_| Lane {
                    q: VecDeque::with_capacity(4),
                    tail_seq: 0,
                })
                .collect(),
            max_dseq: u64::from(u32::MAX),
            lane_overflows: 0,
            seq: 0,
            hint: u32::MAX,
        }
    }

    /// Schedule `ev` at `at`.
    #[inline]
    pub fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.heap.push(Item {
            at,
            seq: self.seq,
            slot: Slot::Ev(ev),
        });
    }

    /// Schedule the arrival of packet `pid` at `at` in `lane`; `at` must not be earlier than
    /// the lane's last arrival (the lane is a FIFO). Same order as `push(at, Ev::Arrive(pid))`.
    #[inline]
    pub fn push_lane(&mut self, lane: u32, at: Nanos, pid: u32) {
        self.seq += 1;
        let l = &mut self.lanes[lane as usize];
        debug_assert!(
            l.q.back().is_none_or(|e| e.at <= at),
            "lane {lane} would reorder"
        );
        let dseq = self.seq - l.tail_seq;
        // The common case in line: an entry appended to a busy lane with room.
        if l.q.is_empty() || dseq > self.max_dseq || l.q.len() == l.q.capacity() {
            return self.push_lane_rare(lane, at, pid);
        }
        l.q.push_back(LaneEntry {
            at,
            pid,
            dseq: dseq as u32,
        });
        l.tail_seq = self.seq;
    }

    /// [`EventQueue::push_lane`] into an empty lane (its head enters the heap), with a gap
    /// too wide to record, or into a full ring. Out of line: the rest of `push_lane` then
    /// needs few registers (in line, the whole of it cost 16 instructions of call overhead
    /// per packet).
    #[cold]
    #[inline(never)]
    fn push_lane_rare(&mut self, lane: u32, at: Nanos, pid: u32) {
        let seq = self.seq;
        let l = &mut self.lanes[lane as usize];
        let dseq = seq - l.tail_seq;
        if l.q.is_empty() {
            self.heap.push(Item {
                at,
                seq,
                slot: Slot::Lane(lane),
            });
        } else if dseq > self.max_dseq {
            // The lane's last entry has waited 2^32 schedulings: this arrival becomes an event
            // of its own, which pops in the same (time, sequence) order.
            self.lane_overflows += 1;
            self.heap.push(Item {
                at,
                seq,
                slot: Slot::Ev(Ev::Arrive(pid)),
            });
            return;
        }
        if l.q.len() == l.q.capacity() {
            // A link's or an ACK route's lane holds a propagation delay's worth of packets (12 k
            // in a 10 Gb/s, 15 ms link); growing by a quarter rather than doubling leaves less
            // of the ring unused once it stops growing.
            l.q.reserve_exact(l.q.len() / 4 + 4);
        }
        l.q.push_back(LaneEntry {
            at,
            pid,
            dseq: dseq as u32,
        });
        l.tail_seq = seq;
    }

    /// Schedule the arrival of packet `pid` at `at`, no later than `horizon` (given to
    /// [`EventQueue::new`]) after the last event popped. Same order as `push(at,
    /// Ev::Arrive(pid))`.
    #[inline]
    pub fn push_near(&mut self, at: Nanos, pid: u32) {
        self.seq += 1;
        debug_assert!(
            at <= self.last + (((NEAR_BUCKETS as u64) - 2) << self.near.shift),
            "push_near beyond the horizon"
        );
        self.near.push(Entry {
            at,
            seq: self.seq,
            pid,
        });
    }

    /// Remove and return the earliest event if it is due at or before `until`. A lane's head
    /// comes out as `Ev::Arrive`.
    #[inline]
    pub fn pop_until(&mut self, until: Nanos) -> Option<(Nanos, Ev)> {
        if self.near.len > 0 {
            let h = self.near.head;
            if self
                .heap
                .peek()
                .is_none_or(|t| (h.at, h.seq) < (t.at, t.seq))
            {
                if h.at > until {
                    return None;
                }
                self.near.pop();
                self.last = h.at;
                return Some((h.at, Ev::Arrive(h.pid)));
            }
        }
        let top = *self.heap.peek()?;
        if top.at > until {
            return None;
        }
        self.last = top.at;
        match top.slot {
            Slot::Ev(ev) => {
                self.heap.pop_root();
                Some((top.at, ev))
            }
            Slot::Lane(l) => {
                let q = &mut self.lanes[l as usize].q;
                let e = q.pop_front().expect("a lane in the heap is not empty");
                match q.front() {
                    // Re-key the root: one sift-down instead of a pop and a push.
                    Some(n) => {
                        let it = Item {
                            at: n.at,
                            seq: top.seq + u64::from(n.dseq),
                            slot: top.slot,
                        };
                        self.hint = n.pid;
                        // The lane's entries were appended a buffer's worth of events ago.
                        if let Some(ahead) = q.get(LANE_AHEAD) {
                            crate::mem::prefetch::<LaneEntry, 1>(ahead);
                        }
                        self.heap.replace_root(it);
                    }
                    None => {
                        self.heap.pop_root();
                    }
                }
                Some((e.at, Ev::Arrive(e.pid)))
            }
        }
    }

    /// The packet the popped lane delivers next, if the last pop came from a lane that still
    /// holds arrivals (once per pop; `None` afterwards). That packet was written when it was
    /// sent, an RTT or a full buffer ago, so it is rarely in cache; the lane's next pop is
    /// typically several events away, time enough to fetch it (see `Net::prefetch`).
    #[inline]
    pub fn next_in_lane(&mut self) -> Option<u32> {
        let h = std::mem::replace(&mut self.hint, u32::MAX);
        (h != u32::MAX).then_some(h)
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, Ev)> {
        self.pop_until(Nanos::MAX)
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap
            .iter()
            .filter(|i| matches!(i.slot, Slot::Ev(_)))
            .count()
            + self.lanes.iter().map(|l| l.q.len()).sum::<usize>()
            + self.near.len
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.near.len == 0
    }

    /// Every pending event, in no particular order (for end-of-run accounting).
    pub fn pending(&self) -> impl Iterator<Item = Ev> + '_ {
        let evs = self.heap.iter().filter_map(|i| match i.slot {
            Slot::Ev(ev) => Some(ev),
            Slot::Lane(_) => None,
        });
        evs.chain(
            self.lanes
                .iter()
                .flat_map(|l| l.q.iter().map(|e| e.pid))
                .chain(self.near.iter().map(|e| e.pid))
                .map(Ev::Arrive),
        )
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
        assert_eq!(
            order,
            vec![
                (3, Ev::Start(2)),
                (5, Ev::Start(1)),
                (5, Ev::Start(3)),
                (5, Ev::Sample)
            ]
        );
    }

    /// The obvious future-event list: every event in one std binary heap on (time, seq).
    #[derive(Default)]
    struct Oracle {
        heap: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, u64, u32)>>,
        evs: Vec<Ev>,
    }

    impl Oracle {
        fn push(&mut self, at: Nanos, ev: Ev) {
            self.heap.push(std::cmp::Reverse((
                at,
                self.evs.len() as u64,
                self.evs.len() as u32,
            )));
            self.evs.push(ev);
        }
        fn pop(&mut self) -> Option<(Nanos, Ev)> {
            self.heap
                .pop()
                .map(|std::cmp::Reverse((at, _, i))| (at, self.evs[i as usize]))
        }
        fn pending(&self) -> impl Iterator<Item = Ev> + '_ {
            self.heap
                .iter()
                .map(|std::cmp::Reverse((_, _, i))| self.evs[*i as usize])
        }
    }

    /// Lanes and the near calendar must give exactly the order of one heap holding every
    /// event, with (time, scheduling order) ties broken the same way: with 1 ns buckets (the
    /// ring wraps many times) and with 8 ns buckets (entries of different times share one).
    #[test]
    fn lanes_pop_in_the_order_of_one_heap() {
        pop_in_the_order_of_one_heap(60, None);
        pop_in_the_order_of_one_heap(5000, None);
    }

    /// A lane entry records its sequence number as a 32-bit gap from the lane's previous
    /// entry; a wider gap makes the arrival an event of its own. With the limit at 3 instead of
    /// 2^32 - 1 (so that it happens thousands of times here) the order is still one heap's.
    #[test]
    fn wide_sequence_gaps_leave_the_lane_in_order() {
        let fallbacks = pop_in_the_order_of_one_heap(60, Some(3));
        assert!(
            fallbacks > 1000,
            "only {fallbacks} arrivals left their lane"
        );
    }

    /// Returns how many lane arrivals went to the heap as events of their own.
    fn pop_in_the_order_of_one_heap(horizon: Nanos, max_dseq: Option<u64>) -> usize {
        let mut lanes = EventQueue::new(3, 16, horizon);
        let mut lane_pushes = 0;
        if let Some(m) = max_dseq {
            lanes.max_dseq = m;
        }
        let mut near = 0;
        let mut flat = Oracle::default();
        let mut tail = [0u64; 3];
        // A fixed pseudo-random schedule (LCG): lane arrivals nondecreasing per lane, timers anywhere.
        let mut x: u64 = 12345;
        let mut now = 0;
        for step in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            if r.is_multiple_of(3) {
                // Pop a few from both, comparing.
                for _ in 0..(r % 4) {
                    let a = lanes.pop();
                    assert_eq!(a, flat.pop());
                    if let Some((t, _)) = a {
                        now = t;
                    }
                }
            } else if r % 5 == 2 || r % 5 == 4 {
                // A send-queue delay: anywhere in [now, now + horizon].
                let at = now + (r >> 4) % (horizon + 1);
                near += 1;
                lanes.push_near(at, step);
                flat.push(at, Ev::Arrive(step));
            } else if r % 5 == 1 {
                let at = now + r % 50;
                lanes.push(at, Ev::Rto(step, 0));
                flat.push(at, Ev::Rto(step, 0));
            } else {
                let l = (r % 3) as usize;
                let at = tail[l].max(now) + (r >> 8) % 4; // ties across lanes happen often
                tail[l] = at;
                lanes.push_lane(l as u32, at, step);
                lane_pushes += 1;
                flat.push(at, Ev::Arrive(step));
            }
        }
        assert!(near > 1000, "the schedule should use the calendar");
        assert_eq!(lanes.len(), flat.heap.len());
        assert!(
            lanes.len() > 100,
            "the schedule should leave a backlog to drain"
        );
        let mut pend: Vec<_> = lanes.pending().map(|e| format!("{e:?}")).collect();
        let mut pend_flat: Vec<_> = flat.pending().map(|e| format!("{e:?}")).collect();
        pend.sort();
        pend_flat.sort();
        assert_eq!(pend, pend_flat);
        assert_eq!(lanes.pop_until(now.saturating_sub(1)), None);
        while let Some(a) = lanes.pop() {
            assert_eq!(Some(a), flat.pop());
        }
        assert_eq!(flat.pop(), None);
        assert!(lanes.is_empty());
        assert!(lane_pushes > 1000 && lanes.lane_overflows < lane_pushes);
        lanes.lane_overflows as usize
    }
}

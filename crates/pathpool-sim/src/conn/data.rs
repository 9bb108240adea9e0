//! The data level: the data sequence space the subflows share (what the application's byte
//! stream holds at each data sequence number) and the connection-level receive buffer that
//! delivers it in order to the application.
//!
//! Data sequence numbers (DSNs) count segments of the flow's MSS, like subflow sequence numbers.

use std::collections::VecDeque;

use super::rcvbuf::Autotune;
use crate::config::{App, MAX_SUBFLOWS};
use crate::time::Nanos;

/// Content tag of the payload at DSN `dsn` of a connection keyed `key` (SplitMix64 finaliser):
/// what the sender puts in the segment and the receiving application expects at that offset.
#[inline]
pub fn content_tag(key: u64, dsn: u64) -> u64 {
    let mut z = key ^ dsn.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The connection-level receive buffer: holds out-of-order data until the gap before it fills,
/// then hands it to the application, which reads at once. The advertised window's right edge is
/// `rcv_nxt + capacity`, so data beyond the buffer can never be sent (head-of-line blocking).
/// (`repr(C)`: the fields each segment touches first, see [`super::Conn`].)
#[derive(Debug)]
#[repr(C)]
pub struct DataReceiver {
    pub rcv_nxt: u64,
    /// Capacity in segments.
    pub cap: u64,
    /// Ring whose slot `(head + d) & (len - 1)` is DSN `rcv_nxt + d`: the subflow whose copy of
    /// that segment is held until the gap before it fills, or [`NOT_HELD`] (as every slot not
    /// in use). A power of two that grows to the farthest offset held, not preallocated for the
    /// whole buffer (999 connections with 4 MiB buffers took 5.8 MB that way), and indexed
    /// with a mask (no `dsn % cap` division per segment).
    held: Vec<u8>,
    /// Slot of `rcv_nxt`.
    head: usize,
    pub held_segs: u64,
    /// Payload bytes of the segments held.
    pub held_bytes: u64,
    /// One past the farthest DSN held since the gap before it opened.
    far: u64,
    /// `receive_window = "linux"`: the autotuned window (else the window is `cap`).
    pub tune: Option<Box<Autotune>>,
    pub delivered_bytes: u64,
    /// `delivered_bytes` by the subflow that carried each segment (the first copy the receiver
    /// accepted; a later duplicate on another subflow counts nowhere). Sums to `delivered_bytes`.
    pub delivered_by_subflow: Vec<u64>,
    pub delivered_segs: u64,
    /// Time the last byte reached the application.
    pub last_delivery: Nanos,
    pub duplicates: u64,
    /// Segments arriving beyond the advertised window (must stay 0).
    pub window_violations: u64,
    /// Segments whose content or length was not what the application expects at their DSN
    /// (must stay 0).
    pub integrity_errors: u64,
}

/// A free slot of [`DataReceiver`]'s ring. One byte per slot, as a connection has at most
/// [`MAX_SUBFLOWS`] subflows (0..=254): with 999 flows at 10 Gb/s the rings, sized by each
/// connection's farthest reordering, took 1.5 MB as `u16`s.
const NOT_HELD: u8 = u8::MAX;
const _: () = assert!(MAX_SUBFLOWS <= NOT_HELD as usize);

impl DataReceiver {
    pub fn new(cap_segs: u64, subflows: usize) -> Self {
        assert!(subflows <= MAX_SUBFLOWS, "{subflows} subflows");
        DataReceiver {
            rcv_nxt: 0,
            cap: cap_segs,
            held: vec![NOT_HELD; 16],
            head: 0,
            held_segs: 0,
            held_bytes: 0,
            far: 0,
            tune: None,
            delivered_bytes: 0,
            delivered_by_subflow: vec![0; subflows],
            delivered_segs: 0,
            duplicates: 0,
            window_violations: 0,
            integrity_errors: 0,
            last_delivery: 0,
        }
    }

    /// A segment for `dsn` arrived on subflow `sub`; `expect(dsn)` gives the (length, tag) the
    /// application expects there. Returns the bytes newly delivered in order.
    pub fn on_segment(
        &mut self,
        dsn: u64,
        len: u32,
        tag: u64,
        sub: u16,
        now: Nanos,
        expect: impl Fn(u64) -> (u32, u64),
    ) -> u64 {
        // A copy of data already delivered is a duplicate before anything else: with
        // `segmentation = "linux"` the length of a DSN that far back may be forgotten.
        if dsn < self.rcv_nxt {
            self.duplicates += 1;
            return 0;
        }
        if (len, tag) != expect(dsn) {
            self.integrity_errors += 1;
            return 0;
        }
        if dsn >= self.window_edge() {
            self.window_violations += 1;
            return 0;
        }
        let off = (dsn - self.rcv_nxt) as usize; // < cap (tested above)
        if off >= self.held.len() {
            self.grow(off + 1);
        }
        let mask = self.held.len() - 1;
        let slot = (self.head + off) & mask;
        if self.held[slot] != NOT_HELD {
            self.duplicates += 1;
            return 0;
        }
        self.held[slot] = sub as u8; // < MAX_SUBFLOWS (`new`)
        self.held_segs += 1;
        self.held_bytes += u64::from(len);
        self.far = self.far.max(dsn + 1);
        let mut bytes = 0;
        loop {
            let by = self.held[self.head];
            if by == NOT_HELD {
                break;
            }
            self.held[self.head] = NOT_HELD;
            self.head = (self.head + 1) & mask;
            self.held_segs -= 1;
            let seg = u64::from(expect(self.rcv_nxt).0);
            self.held_bytes -= seg;
            bytes += seg;
            self.delivered_by_subflow[usize::from(by)] += seg;
            self.rcv_nxt += 1;
            self.delivered_segs += 1;
        }
        if bytes > 0 {
            self.delivered_bytes += bytes;
            self.last_delivery = now;
            // The application reads at once (`mptcp_recvmsg` -> `mptcp_rcv_space_adjust`).
            if let Some(t) = self.tune.as_deref_mut() {
                let span = if self.held_segs > 0 {
                    self.far - self.rcv_nxt
                } else {
                    0
                };
                t.on_read(bytes, now, span);
            }
        }
        bytes
    }

    /// Make the ring hold offsets `0..n` (from `rcv_nxt`), keeping what it holds.
    #[cold]
    fn grow(&mut self, n: usize) {
        let len = self.held.len();
        let mut ring = vec![NOT_HELD; n.next_power_of_two().max(2 * len)];
        for (d, slot) in ring.iter_mut().enumerate().take(len) {
            *slot = self.held[(self.head + d) & (len - 1)];
        }
        self.held = ring;
        self.head = 0;
    }

    /// Bytes of the reassembly ring (grown to the farthest offset held so far).
    pub fn ring_bytes(&self) -> usize {
        self.held.capacity()
    }

    /// First DSN outside the advertised window.
    #[inline]
    pub fn window_edge(&self) -> u64 {
        match &self.tune {
            Some(t) => t.edge,
            None => self.rcv_nxt + self.cap,
        }
    }

    /// The window an ACK sent now on subflow `sub` offers, in segments from `rcv_nxt`.
    #[inline]
    pub fn advertise(&mut self, sub: usize) -> u64 {
        match self.tune.as_deref_mut() {
            Some(t) => t.window(sub, self.rcv_nxt, self.held_bytes),
            None => self.cap,
        }
    }
}

/// Where a connection's byte stream was cut short of a full segment (`segmentation =
/// "linux"`): the DSN and payload of every segment shorter than the full one, in DSN order,
/// from the oldest DSN still asked about. Every other DSN carries a full segment. Linux's short
/// segments are a few in a hundred (a write's tail, a file's end), so a list of them is small
/// where a length per DSN would not be, and looking a DSN up past the last one is one compare.
#[derive(Debug, Default)]
pub struct Cuts {
    short: VecDeque<(u64, u32)>,
    /// Bytes by which the segments forgotten ([`Cuts::forget_below`]) fell short of full ones.
    shortfall: u64,
    /// Segments below this DSN were handed to more than one subflow (a connection-level
    /// retransmission): their length is settled even if one copy is still unsent.
    pub settled_below: u64,
}

impl Cuts {
    /// Payload bytes at `dsn` when a full segment carries `full`.
    #[inline]
    pub fn len(&self, dsn: u64, full: u32) -> u32 {
        match self.short.back() {
            Some(&(d, _)) if d >= dsn => match self.short.binary_search_by_key(&dsn, |e| e.0) {
                Ok(k) => self.short[k].1,
                Err(_) => full,
            },
            _ => full,
        }
    }

    /// The byte offset of DSN `dsn` in the stream (at or above the last [`Cuts::forget_below`]).
    pub fn offset(&self, dsn: u64, full: u32) -> u64 {
        let f = u64::from(full);
        let short: u64 = self
            .short
            .iter()
            .take_while(|e| e.0 < dsn)
            .map(|e| f - u64::from(e.1))
            .sum();
        dsn * f - self.shortfall - short
    }

    /// DSN `dsn`, the newest so far, carries `len` bytes.
    #[inline]
    pub fn cut(&mut self, dsn: u64, len: u32, full: u32) {
        debug_assert!(self.short.back().is_none_or(|e| e.0 < dsn));
        if len < full {
            self.short.push_back((dsn, len));
        }
    }

    /// The newest DSN, `dsn`, still unsent, takes `add` more bytes (up to a full segment).
    #[inline]
    pub fn grow(&mut self, dsn: u64, add: u32, full: u32) {
        let last = self.short.back_mut().expect("only a short segment grows");
        debug_assert!(last.0 == dsn && last.1 + add <= full);
        last.1 += add;
        if last.1 == full {
            self.short.pop_back();
        }
    }

    /// Nobody will ask about DSNs below `dsn` again.
    pub fn forget_below(&mut self, dsn: u64, full: u32) {
        while let Some(&(d, l)) = self.short.front() {
            if d >= dsn {
                break;
            }
            self.shortfall += u64::from(full - l);
            self.short.pop_front();
        }
    }

    /// Short segments remembered (for the memory figure).
    pub fn remembered(&self) -> usize {
        self.short.capacity()
    }
}

/// Payload bytes at `dsn`: from the cuts with `segmentation = "linux"`, else [`seg_len`].
#[inline]
pub fn payload_at(cuts: Option<&Cuts>, app: App, mss: u32, dsn: u64) -> u32 {
    match cuts {
        Some(c) => c.len(dsn, mss),
        None => seg_len(app, mss, dsn),
    }
}

/// Payload bytes at `dsn` for an application: full segments, except a file's last one.
#[inline]
pub fn seg_len(app: App, mss: u32, dsn: u64) -> u32 {
    match app {
        App::Bulk => mss,
        App::File(size) => {
            let off = dsn * u64::from(mss);
            (size.saturating_sub(off)).min(u64::from(mss)) as u32
        }
    }
}

/// Segments in a file of `size` bytes.
pub fn file_segs(size: u64, mss: u32) -> u64 {
    size.div_ceil(u64::from(mss))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_receiver_delivers_in_order_once() {
        let app = App::File(10_500);
        let exp = |d: u64| (seg_len(app, 1000, d), content_tag(9, d));
        let mut r = DataReceiver::new(4, 2);
        assert_eq!(r.on_segment(1, 1000, content_tag(9, 1), 1, 1, exp), 0);
        // the same segment again, on the other subflow: a duplicate, credited to neither
        assert_eq!(r.on_segment(1, 1000, content_tag(9, 1), 0, 1, exp), 0);
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.on_segment(4, 1000, content_tag(9, 4), 0, 1, exp), 0);
        assert_eq!(r.window_violations, 1);
        assert_eq!(r.on_segment(2, 1000, content_tag(9, 3), 0, 1, exp), 0);
        assert_eq!(r.integrity_errors, 1);
        assert_eq!(r.delivered_by_subflow, [0, 0]);
        // DSN 0 on subflow 0 releases DSN 1, held for subflow 1
        assert_eq!(r.on_segment(0, 1000, content_tag(9, 0), 0, 2, exp), 2000);
        assert_eq!(r.delivered_by_subflow, [1000, 1000]);
        assert_eq!(r.rcv_nxt, 2);
        assert_eq!(r.window_edge(), 6);
        assert_eq!(seg_len(app, 1000, 10), 500);
        assert_eq!(file_segs(10_500, 1000), 11);
    }

    /// The short segments' list: lengths, byte offsets, growth, forgetting.
    #[test]
    fn cuts_give_each_dsn_its_length_and_offset() {
        let mut c = Cuts::default();
        // DSNs 0-2 full (1000), 3 of 300, 4 full, 5 of 200 growing to 700, then full.
        for (d, l) in [
            (0, 1000),
            (1, 1000),
            (2, 1000),
            (3, 300),
            (4, 1000),
            (5, 200),
        ] {
            c.cut(d, l, 1000);
        }
        c.grow(5, 500, 1000);
        assert_eq!(
            (0..7).map(|d| c.len(d, 1000)).collect::<Vec<_>>(),
            [1000, 1000, 1000, 300, 1000, 700, 1000]
        );
        assert_eq!(
            (c.offset(3, 1000), c.offset(4, 1000), c.offset(6, 1000)),
            (3000, 3300, 5000)
        );
        // Growing to a full segment drops it from the list.
        c.cut(6, 10, 1000);
        c.grow(6, 990, 1000);
        assert_eq!((c.len(6, 1000), c.offset(7, 1000)), (1000, 6000));
        // Forgotten DSNs still count in the offsets above them.
        c.forget_below(5, 1000);
        assert_eq!(
            (c.offset(5, 1000), c.offset(7, 1000), c.len(5, 1000)),
            (4300, 6000, 700)
        );
        assert!(c.remembered() >= 1);
    }

    /// A late copy of data the application already has is a duplicate, whatever its length:
    /// with `segmentation = "linux"` the length expected there may be forgotten (a short
    /// segment's copy, arriving after its DSN was forgotten, counted as an integrity error).
    #[test]
    fn a_late_copy_below_the_delivery_point_is_a_duplicate() {
        let exp = |d: u64| (1000, content_tag(9, d));
        let mut r = DataReceiver::new(4, 1);
        assert_eq!(r.on_segment(0, 1000, content_tag(9, 0), 0, 1, exp), 1000);
        assert_eq!(r.on_segment(0, 300, content_tag(9, 0), 0, 2, exp), 0);
        assert_eq!((r.duplicates, r.integrity_errors), (1, 0));
        // At or above it the length is still checked.
        assert_eq!(r.on_segment(1, 300, content_tag(9, 1), 0, 2, exp), 0);
        assert_eq!(r.integrity_errors, 1);
    }

    /// Many windows' worth of segments out of order, repeated and beyond the window: the
    /// receiver (a ring that grows to the farthest offset held) delivers exactly what a sorted
    /// set of held DSNs would.
    #[test]
    fn data_receiver_holds_like_a_set() {
        let exp = |d: u64| (1000, content_tag(5, d));
        // 5: within the ring's first 16 slots; 100: the ring grows while it holds segments.
        for cap in [5, 100] {
            let mut r = DataReceiver::new(cap, 2);
            let mut held = std::collections::BTreeSet::new();
            let (mut nxt, mut x) = (0u64, 7u64);
            for _ in 0..5000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let dsn = nxt + (x >> 33) % (cap + 1);
                let before = (r.delivered_segs, r.duplicates, r.window_violations);
                let got =
                    r.on_segment(dsn, 1000, content_tag(5, dsn), (x >> 40) as u16 % 2, 1, exp);
                let mut want = 0;
                if dsn >= nxt + cap {
                    assert_eq!(r.window_violations, before.2 + 1);
                } else if !held.insert(dsn) {
                    assert_eq!(r.duplicates, before.1 + 1);
                } else {
                    while held.remove(&nxt) {
                        nxt += 1;
                        want += 1000;
                    }
                }
                assert_eq!(
                    (got, r.rcv_nxt, r.held_segs),
                    (want, nxt, held.len() as u64)
                );
            }
            assert!(nxt > 10 * cap, "the run should cover many windows");
        }
    }
}

//! A subflow sender's SACK scoreboard: one 16-byte entry per outstanding segment (its DSN, send
//! time and flags), in fixed-size chunks that every subflow of a run takes from and gives back
//! to one shared [`SegPool`].

use std::collections::VecDeque;

use crate::time::Nanos;

/// Segment flags: SACKed, deemed lost, retransmitted and not yet deemed lost again, handed to
/// another subflow (reinjected), ever retransmitted (Karn's rule).
pub const SACKED: u8 = 1;
pub const LOST: u8 = 2;
pub const RETX: u8 = 4;
pub const REINJECTED: u8 = 8;
pub const EVER_RETX: u8 = 16;

/// One outstanding segment in the scoreboard: 16 bytes. Its DSN, payload length and flags
/// share a word (a DSN needs far fewer than 40 bits: 2^40 segments are 10^15 bytes; a payload
/// at most the largest MSS, 9,000 bytes, fits 16), beside the send time. The length is kept
/// because with `segmentation = "linux"` it no longer follows from the DSN: Linux sends a
/// write's tail short. (24 bytes per entry before; with 999 flows the scoreboards were the
/// largest buffers.)
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seg {
    /// DSN in the low [`DSN_BITS`] bits, the payload length in the next 16, flags in the top
    /// byte.
    word: u64,
    pub sent_at: Nanos,
}

const DSN_BITS: u32 = 40;
const DSN_MASK: u64 = (1 << DSN_BITS) - 1;
const FLAG_SHIFT: u32 = 56;
const KEEP_MASK: u64 = (1 << FLAG_SHIFT) - 1;

impl Seg {
    #[inline]
    pub fn new(dsn: u64, len: u32, sent_at: Nanos) -> Seg {
        assert!(dsn <= DSN_MASK, "DSN {dsn} beyond the scoreboard's 40 bits");
        debug_assert!(len <= u32::from(u16::MAX));
        Seg {
            word: dsn | (u64::from(len) << DSN_BITS),
            sent_at,
        }
    }

    /// Data sequence number this segment carries.
    #[inline]
    pub fn dsn(&self) -> u64 {
        self.word & DSN_MASK
    }

    /// Payload bytes this segment carries.
    #[inline]
    pub fn payload(&self) -> u32 {
        ((self.word & KEEP_MASK) >> DSN_BITS) as u32
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        (self.word >> FLAG_SHIFT) as u8
    }

    #[inline]
    pub(super) fn with_flags(self, flags: u8) -> Seg {
        Seg {
            word: (self.word & KEEP_MASK) | (u64::from(flags) << FLAG_SHIFT),
            sent_at: self.sent_at,
        }
    }

    /// This segment's share of RFC 6675 `pipe`: an un-SACKed segment counts once unless it is
    /// deemed lost, plus once more if it was retransmitted (SetPipe, RFC 6675 section 4).
    #[inline]
    pub fn pipe(&self) -> u32 {
        let f = self.flags();
        if f & SACKED != 0 {
            0
        } else {
            u32::from(f & LOST == 0) + u32::from(f & RETX != 0)
        }
    }

    #[inline]
    pub(super) fn awaits_retx(&self) -> bool {
        self.flags() & (SACKED | LOST | RETX) == LOST
    }
}

/// Segments per scoreboard chunk (a power of two): 512 bytes.
const CHUNK_SHIFT: u32 = 5;
pub const CHUNK: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK - 1;

type Chunk = Box<[Seg; CHUNK]>;

/// The scoreboard chunks no subflow is using, shared by every subflow of a run. A subflow takes
/// a chunk when its window reaches into one more and gives it back when its cumulative ACK
/// leaves one, so the scoreboards together hold about the segments outstanding now (plus a
/// chunk or two per subflow), not each subflow's largest window ever: a per-subflow ring grew
/// to its largest window (rounded up to a power of two) and could only give memory back by
/// reallocating (with 999 flows at 10 Gb/s: 368 k slots for 161 k outstanding segments early
/// on, 257 k for 43 k later). Chunks are only ever allocated here, when none is free: no
/// allocation per packet or per loss event once the run has reached its largest total.
#[derive(Debug, Default)]
pub struct SegPool {
    free: Vec<Chunk>,
    made: usize,
}

impl SegPool {
    #[inline]
    fn take(&mut self) -> Chunk {
        match self.free.pop() {
            Some(c) => c,
            None => self.make(),
        }
    }

    #[cold]
    fn make(&mut self) -> Chunk {
        self.made += 1;
        Box::new([Seg::default(); CHUNK])
    }

    #[inline]
    fn give(&mut self, c: Chunk) {
        self.free.push(c);
    }

    /// Chunks allocated so far (in use or free).
    pub fn made(&self) -> usize {
        self.made
    }

    /// Bytes of every chunk allocated so far (in use or free).
    pub fn bytes(&self) -> usize {
        self.made * std::mem::size_of::<[Seg; CHUNK]>()
    }

    /// Chunks free for the next subflow that needs one.
    pub fn free(&self) -> usize {
        self.free.len()
    }
}

/// A subflow's outstanding segments `snd_una..snd_nxt` (index `seq - snd_una`) in chunks of
/// [`CHUNK`] from a [`SegPool`]. Invariant: `chunks` holds exactly the chunks that slots
/// `head..head + len` fall into, and `head < CHUNK` (no chunk at all when empty).
#[derive(Debug, Default)]
pub struct Scoreboard {
    chunks: VecDeque<Chunk>,
    /// Slot of the first segment in `chunks[0]`.
    head: usize,
    len: usize,
}

impl Scoreboard {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Chunks held (each [`CHUNK`] segments).
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    #[inline]
    pub fn get(&self, i: usize) -> &Seg {
        debug_assert!(i < self.len);
        let j = self.head + i;
        &self.chunks[j >> CHUNK_SHIFT][j & CHUNK_MASK]
    }

    #[inline]
    pub(super) fn get_mut(&mut self, i: usize) -> &mut Seg {
        debug_assert!(i < self.len);
        let j = self.head + i;
        &mut self.chunks[j >> CHUNK_SHIFT][j & CHUNK_MASK]
    }

    #[inline]
    pub(super) fn push_back(&mut self, pool: &mut SegPool, s: Seg) {
        let j = self.head + self.len;
        if j >> CHUNK_SHIFT == self.chunks.len() {
            self.add_chunk(pool);
        }
        self.len += 1;
        self.chunks[j >> CHUNK_SHIFT][j & CHUNK_MASK] = s;
    }

    /// Take one more chunk from `pool` (once per [`CHUNK`] segments: out of line, so that
    /// the per-segment path stays small enough to inline).
    #[cold]
    #[inline(never)]
    fn add_chunk(&mut self, pool: &mut SegPool) {
        self.chunks.push_back(pool.take());
    }

    #[inline]
    pub(super) fn pop_front(&mut self, pool: &mut SegPool) -> Option<Seg> {
        if self.len == 0 {
            return None;
        }
        let front = self
            .chunks
            .front()
            .expect("a non-empty scoreboard has a chunk");
        // (`head < CHUNK`: the mask only spares a bounds check.)
        let s = front[self.head & CHUNK_MASK];
        self.head += 1;
        self.len -= 1;
        if self.head == CHUNK || self.len == 0 {
            self.release_front(pool);
        }
        Some(s)
    }

    /// Give the first chunk, now empty, back to `pool` (once per [`CHUNK`] segments).
    #[cold]
    #[inline(never)]
    fn release_front(&mut self, pool: &mut SegPool) {
        let c = self
            .chunks
            .pop_front()
            .expect("a non-empty scoreboard has a chunk");
        pool.give(c);
        self.head = 0;
    }
}

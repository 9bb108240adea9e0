//! Packets and the slab that recycles them: the hot path never allocates a packet, it takes a
//! slot from the free list and gives it back when the packet is delivered or dropped.

use crate::time::Nanos;

/// At most this many SACK blocks per ACK (RFC 2018 with the timestamp option leaves room for 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// Header bytes on the wire on top of the payload: IPv4 20 + TCP 20 + the timestamp option 12
/// (10 bytes and two NOPs) = 52, so that a 1448-byte payload makes a 1500-byte packet, as plain
/// TCP on Ethernet with Linux defaults. Options beyond the timestamps (Linux MPTCP's DSS, 28 bytes)
/// are the flow's `option_bytes`, which the connection adds to each data segment.
pub const HEADER_BYTES: u32 = 52;

/// Size of a pure ACK on the wire (IP + TCP + timestamps + SACK/DSS options, rounded).
pub const ACK_BYTES: u32 = 64;

/// A packet in flight: one cache line. A data segment and an ACK carry different fields, and the
/// three 8-byte words after `ts` hold whichever the packet is (a data segment's `seq`, `dsn`,
/// `tag`; an ACK's cumulative ACK, data ACK and one-way delay, read through [`Packet::cum_ack`],
/// [`Packet::data_ack`] and [`Packet::owd`]). An ACK's SACK blocks (present only while the
/// receiver holds out-of-order data) travel in the packet as six 16-bit offsets from its
/// cumulative ACK, in `sack_off` and the `len` an ACK does not use; blocks farther than 2^16
/// segments from it go to the pool's SACK table instead ([`Pool::sacks`]). So an ACK is read
/// with one cache miss, not two: with 999 flows the table's entry, written an ACK route's delay
/// earlier, was a miss of its own on 3% of the run's time (`bench/lines.py`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(align(64))]
pub struct Packet {
    /// Connection index.
    pub conn: u32,
    /// Index of the route the packet follows (data route, or the subflow's ACK route).
    pub route: u32,
    /// Bytes on the wire.
    pub wire: u32,
    /// Payload bytes (data). An ACK: its fifth and sixth SACK offsets (see `sack_off`).
    pub len: u32,
    /// An ACK's first four SACK offsets from its cumulative ACK (`[start, end)` of the first
    /// two blocks; the third block's in `len`), or, with [`IN_TABLE`] set in `n_sacks`, the
    /// slot of its blocks in the pool's table (the low and high halves of a `u32`).
    pub(crate) sack_off: [u16; 4],
    /// Subflow index within the connection.
    pub sub: u16,
    /// Next hop on the route to enter (== route length: at the endpoint).
    pub hop: u16,
    pub is_ack: bool,
    /// Data: the segment carries PSH (`push_flag = "linux"`).
    pub psh: bool,
    /// SACK blocks carried (at most [`MAX_SACK_BLOCKS`]), `| IN_TABLE` when they are in the
    /// pool's table.
    pub(crate) n_sacks: u8,
    /// Time this transmission left the sender (data); for an ACK, the echoed send time of the
    /// segment that triggered it (TCP timestamps, RFC 7323).
    pub ts: Nanos,
    /// Data: subflow sequence number (in segments). ACK: the subflow cumulative ACK, the next
    /// expected subflow sequence number ([`Packet::cum_ack`]). A rate flow's report: its id.
    pub seq: u64,
    /// Data: data sequence number (connection level, in segments). ACK: the connection-level
    /// cumulative data ACK, the next expected DSN ([`Packet::data_ack`]), in the low 40 bits
    /// (the scoreboard's DSN width), and the receive window it offers in segments
    /// ([`Packet::window`], at most 2^24 - 1) in the high 24.
    pub dsn: u64,
    /// Data: content tag of the payload, a function of the DSN the sender meant, checked by the
    /// receiving application (so a mapping bug shows up as corrupted data, not silently). ACK:
    /// the one-way delay (source to sink) of the segment that triggered it ([`Packet::owd`]).
    pub tag: u64,
}

const DATA_ACK_BITS: u32 = 40;
const DATA_ACK_MASK: u64 = (1 << DATA_ACK_BITS) - 1;
const MAX_WINDOW: u64 = (1 << (64 - DATA_ACK_BITS)) - 1;

// Packets are read cold (an RTT after they were written): one whole line per packet.
const _: () = assert!(std::mem::size_of::<Packet>() == 64);

impl Packet {
    /// An ACK (without SACK blocks: [`Pool::alloc_with_sacks`] adds them).
    #[allow(clippy::too_many_arguments)]
    pub fn ack(
        conn: u32,
        sub: u16,
        route: u32,
        wire: u32,
        ts: Nanos,
        owd: Nanos,
        cum_ack: u64,
        data_ack: u64,
        window: u64,
    ) -> Packet {
        debug_assert!(data_ack <= DATA_ACK_MASK);
        Packet {
            conn,
            sub,
            is_ack: true,
            route,
            wire,
            ts,
            seq: cum_ack,
            dsn: data_ack | (window.min(MAX_WINDOW) << DATA_ACK_BITS),
            tag: owd,
            ..Packet::default()
        }
    }

    /// ACK: next expected subflow sequence number.
    #[inline]
    pub fn cum_ack(&self) -> u64 {
        self.seq
    }

    /// ACK: next expected data sequence number.
    #[inline]
    pub fn data_ack(&self) -> u64 {
        self.dsn & DATA_ACK_MASK
    }

    /// ACK: the receive window it offers, segments from [`Packet::data_ack`].
    #[inline]
    pub fn window(&self) -> u64 {
        self.dsn >> DATA_ACK_BITS
    }

    /// ACK: one-way delay of the segment that triggered it.
    #[inline]
    pub fn owd(&self) -> Nanos {
        self.tag
    }
}

/// The SACK blocks of one ACK (dereferences to a slice of `[start, end)` pairs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SackBlocks {
    n: u8,
    b: [(u64, u64); MAX_SACK_BLOCKS],
}

impl std::ops::Deref for SackBlocks {
    type Target = [(u64, u64)];

    #[inline]
    fn deref(&self) -> &[(u64, u64)] {
        &self.b[..usize::from(self.n)]
    }
}

/// `Packet::n_sacks` flag: the ACK's blocks are in the pool's table, not in the packet.
const IN_TABLE: u8 = 0x80;

/// The table slot an `IN_TABLE` ACK carries in `sack_off` (low half, high half).
#[inline]
fn table_slot(o: [u16; 4]) -> u32 {
    u32::from(o[0]) | u32::from(o[1]) << 16
}

/// End of [`Pool`]'s free list.
const NO_SLOT: u32 = u32::MAX;

/// A slab of packets with a free list.
#[derive(Debug)]
pub struct Pool {
    slots: Vec<Packet>,
    /// First free slot (`NO_SLOT`: none); a free slot's `conn` holds the next one. In the
    /// slots rather than in a vector beside them: the slot freed last, taken first, is in cache
    /// anyway, and a vector of free indices grew to 4 bytes per packet ever in flight.
    free_head: u32,
    /// SACK blocks of the ACKs in flight whose blocks reach 2^16 segments or more beyond
    /// their cumulative ACK (too far to travel in the packet), with their own free list.
    /// Stored as 32-bit offsets from the cumulative ACK (blocks lie above it, within a
    /// window).
    sack_tab: Vec<[(u32, u32); MAX_SACK_BLOCKS]>,
    sack_free: Vec<u32>,
}

impl Default for Pool {
    fn default() -> Self {
        Pool::with_capacity(0)
    }
}

impl Pool {
    pub fn with_capacity(n: usize) -> Self {
        Pool {
            slots: Vec::with_capacity(n),
            free_head: NO_SLOT,
            sack_tab: Vec::new(),
            sack_free: Vec::new(),
        }
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> u32 {
        if self.free_head != NO_SLOT {
            let i = self.free_head;
            let slot = &mut self.slots[i as usize];
            self.free_head = slot.conn;
            *slot = p;
            i
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as u32
        }
    }

    /// Store ACK `p` carrying the SACK blocks `sacks` (at most [`MAX_SACK_BLOCKS`], each above
    /// its cumulative ACK and less than 2^32 segments beyond it).
    #[inline]
    pub fn alloc_with_sacks(&mut self, mut p: Packet, sacks: &[(u64, u64)]) -> u32 {
        if !sacks.is_empty() {
            let cum = p.cum_ack();
            let mut o = [0u64; 2 * MAX_SACK_BLOCKS];
            for (o, &(x, y)) in o.chunks_exact_mut(2).zip(sacks) {
                (o[0], o[1]) = (x - cum, y - cum);
            }
            let n = sacks.len() as u8;
            // Every offset fits 16 bits iff their bitwise or does (no branch per offset).
            if o.iter().fold(0, |a, &v| a | v) <= 0xffff {
                p.sack_off = [o[0] as u16, o[1] as u16, o[2] as u16, o[3] as u16];
                p.len = (o[4] | o[5] << 16) as u32;
                p.n_sacks = n;
            } else {
                let off = |v: u64| u32::try_from(v).expect("a SACK block within 2^32 of the ACK");
                let b = [
                    (off(o[0]), off(o[1])),
                    (off(o[2]), off(o[3])),
                    (off(o[4]), off(o[5])),
                ];
                let k = match self.sack_free.pop() {
                    Some(k) => {
                        self.sack_tab[k as usize] = b;
                        k
                    }
                    None => {
                        self.sack_tab.push(b);
                        (self.sack_tab.len() - 1) as u32
                    }
                };
                p.sack_off = [k as u16, (k >> 16) as u16, 0, 0];
                p.n_sacks = n | IN_TABLE;
            }
        }
        self.alloc(p)
    }

    /// The SACK blocks ACK `i` carries.
    #[inline]
    pub fn sacks(&self, i: u32) -> SackBlocks {
        let p = &self.slots[i as usize];
        let mut out = SackBlocks::default();
        if p.n_sacks == 0 {
            return out;
        }
        let base = p.cum_ack();
        let o = p.sack_off;
        let b = if p.n_sacks & IN_TABLE == 0 {
            let (x, y) = (p.len & 0xffff, p.len >> 16);
            [
                (u32::from(o[0]), u32::from(o[1])),
                (u32::from(o[2]), u32::from(o[3])),
                (x, y),
            ]
        } else {
            self.sack_tab[table_slot(o) as usize]
        };
        for (o, &(x, y)) in out.b.iter_mut().zip(&b) {
            *o = (base + u64::from(x), base + u64::from(y));
        }
        out.n = p.n_sacks & !IN_TABLE;
        out
    }

    #[inline]
    pub fn free(&mut self, i: u32) {
        let p = &mut self.slots[i as usize];
        if p.n_sacks & IN_TABLE != 0 {
            self.sack_free.push(table_slot(p.sack_off));
        }
        p.n_sacks = 0;
        p.conn = self.free_head;
        self.free_head = i;
    }

    #[inline]
    pub fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize]
    }

    /// Ask the CPU to start loading packet `i` into cache (a hint: no effect on results).
    #[inline]
    pub fn prefetch(&self, i: u32) {
        if let Some(p) = self.slots.get(i as usize) {
            crate::mem::prefetch::<Packet, 1>(p);
        }
    }

    /// Bytes of the slots ever used (the slab's high-water mark: a slot is written when first
    /// taken, and the untouched tail of its capacity takes no memory) and of the SACK table.
    pub fn bytes_used(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Packet>()
            + self.sack_tab.len() * std::mem::size_of::<[(u32, u32); MAX_SACK_BLOCKS]>()
    }

    /// Packets currently in use (walks the free list: for checks, not for the hot path).
    pub fn live(&self) -> usize {
        let free = std::iter::successors(
            (self.free_head != NO_SLOT).then_some(self.free_head),
            |&i| {
                let next = self.slots[i as usize].conn;
                (next != NO_SLOT).then_some(next)
            },
        )
        .count();
        self.slots.len() - free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SACK blocks stay with their ACK: in the packet while every offset from the cumulative
    /// ACK fits 16 bits, in the pool's table beyond; each ACK reads back its own blocks, a freed
    /// slot and its table entry are reused, and a packet without blocks reads none.
    #[test]
    fn sack_blocks_stay_with_their_ack() {
        let mut pool = Pool::with_capacity(4);
        let ack = |c| Packet::ack(c, 0, 0, ACK_BYTES, 1, 2, 10, 20, 7);
        let a = pool.alloc_with_sacks(ack(1), &[(12, 14), (16, 17)]);
        let b = pool.alloc_with_sacks(ack(2), &[]);
        let c = pool.alloc_with_sacks(ack(3), &[(30, 31), (33, 35), (40, 65_545)]);
        let far = pool.alloc_with_sacks(ack(5), &[(30, 31), (33, 35), (40, 65_546)]);
        assert_eq!(&*pool.sacks(a), &[(12, 14), (16, 17)]);
        assert_eq!(&*pool.sacks(b), &[] as &[(u64, u64)]);
        assert_eq!(&*pool.sacks(c), &[(30, 31), (33, 35), (40, 65_545)]);
        assert_eq!(&*pool.sacks(far), &[(30, 31), (33, 35), (40, 65_546)]);
        // c's farthest offset is 65 535, far's 65 536: only far went to the table.
        assert_eq!(pool.sack_tab.len(), 1);
        let p = pool.get(a);
        assert_eq!(
            (p.cum_ack(), p.data_ack(), p.window(), p.owd(), p.ts),
            (10, 20, 7, 2, 1)
        );
        pool.free(a);
        // The next ACK takes a's packet slot; c is untouched.
        let d = pool.alloc_with_sacks(ack(4), &[(50, 52)]);
        assert_eq!(d, a);
        assert_eq!(&*pool.sacks(d), &[(50, 52)]);
        assert_eq!(&*pool.sacks(c), &[(30, 31), (33, 35), (40, 65_545)]);
        // A freed table entry is taken by the next far ACK.
        pool.free(far);
        let e = pool.alloc_with_sacks(ack(6), &[(10, 70_000)]);
        assert_eq!(&*pool.sacks(e), &[(10, 70_000)]);
        assert_eq!(pool.sack_tab.len(), 1);
        // A data packet in a slot that held an ACK with blocks carries none.
        pool.free(d);
        pool.free(e);
        let f = pool.alloc(Packet::default());
        assert_eq!(&*pool.sacks(f), &[] as &[(u64, u64)]);
        let g = pool.alloc(Packet::default());
        assert_eq!(&*pool.sacks(g), &[] as &[(u64, u64)]);
        assert_eq!(pool.live(), 4);
    }
}

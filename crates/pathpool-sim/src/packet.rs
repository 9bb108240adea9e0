//! Packets and the slab that recycles them: the hot path never allocates a packet, it takes a
//! slot from the free list and gives it back when the packet is delivered or dropped.

use crate::time::Nanos;

/// At most this many SACK blocks per ACK (RFC 2018 with the timestamp option leaves room for 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// Header bytes on the wire on top of the payload: IPv4 20 + TCP 20 + timestamps 12 + DSS 8 ≈ 52,
/// so that a 1448-byte payload makes a 1500-byte packet, as on Ethernet with Linux defaults.
pub const HEADER_BYTES: u32 = 52;

/// Size of a pure ACK on the wire (IP + TCP + timestamps + SACK/DSS options, rounded).
pub const ACK_BYTES: u32 = 64;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(align(64))]
pub struct Packet {
    /// Connection index.
    pub conn: u32,
    /// Subflow index within the connection.
    pub sub: u16,
    pub is_ack: bool,
    /// Index of the route the packet follows (data route, or the subflow's ACK route).
    pub route: u32,
    /// Next hop on the route to enter (== route length: at the endpoint).
    pub hop: u16,
    /// Bytes on the wire.
    pub wire: u32,
    // --- data ---
    /// Subflow sequence number (in segments).
    pub seq: u64,
    /// Data sequence number (connection level, in segments).
    pub dsn: u64,
    /// Payload bytes.
    pub len: u32,
    /// Content tag of the payload: a function of the DSN the sender meant, checked by the
    /// receiving application (so a mapping bug shows up as corrupted data, not silently).
    pub tag: u64,
    /// Time this transmission left the sender (data); for an ACK, the echoed send time of the
    /// segment that triggered it (TCP timestamps, RFC 7323).
    pub ts: Nanos,
    // --- ack ---
    /// One-way delay (source to sink) of the segment that triggered this ACK.
    pub owd: Nanos,
    /// Subflow cumulative ACK: next expected subflow sequence number.
    pub cum_ack: u64,
    pub sacks: [(u64, u64); MAX_SACK_BLOCKS],
    pub n_sacks: u8,
    /// Connection-level cumulative data ACK (next expected DSN). The receive window's right
    /// edge is `data_ack` + the receive buffer in segments, a fixed size known from the
    /// handshake, so it is not carried: that keeps a packet at 128 bytes, two cache lines.
    pub data_ack: u64,
}

// Packets are read cold (an RTT after they were written); two whole lines per packet.
const _: () = assert!(std::mem::size_of::<Packet>() == 128);

/// A slab of packets with a free list.
#[derive(Debug, Default)]
pub struct Pool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl Pool {
    pub fn with_capacity(n: usize) -> Self {
        Pool {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
        }
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            i
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as u32
        }
    }

    #[inline]
    pub fn free(&mut self, i: u32) {
        self.free.push(i);
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
            // Both lines: the hop reads `route`/`hop`/`wire`, the endpoint the rest.
            crate::mem::prefetch::<Packet, 2>(p);
        }
    }

    /// Packets currently in use.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

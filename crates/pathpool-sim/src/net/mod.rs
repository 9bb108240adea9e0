//! The network, as htsim's: packets travel routes of links, each a queue in front of a
//! constant-rate transmitter ([`link`]), with the clock and the event queue ([`event`]) and the
//! packet slab ([`packet`]). `Net` moves packets hop by hop, from a sender's host onto its
//! route (`Net::send_data`, `Net::inject`) to the route's end; what happens there (an
//! endpoint) is the world's business.

pub mod event;
pub mod link;
pub mod packet;

use crate::rng::Stream;
use crate::time::{serialisation, Nanos};
use event::{Ev, EventQueue};
use link::Link;
use packet::{Packet, Pool, ACK_BYTES};

/// "No timer event pending" for the per-endpoint timer bookkeeping.
pub(crate) const NO_EVENT: Nanos = Nanos::MAX;

/// Links a packet crosses in order; a route without links is a fixed delay.
#[derive(Debug)]
pub(crate) struct Route {
    pub(crate) links: Vec<u32>,
    pub(crate) delay: Nanos,
    /// Event-queue lane of a route without links (its arrivals are in send order).
    pub(crate) lane: u32,
}

/// A scenario path as the transport sees it: the route its data takes and the route its
/// ACKs (reports) come back on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Path {
    pub(crate) data: u32,
    pub(crate) ack: u32,
}

/// Where a packet went at a hop.
pub(crate) enum Hop {
    /// Into a link (an arrival event is pending).
    Queued,
    /// Dropped by a link (still in the slab: [`Net::take_dropped`] frees it). Carrying the
    /// packet here made `Hop` a 72-byte value returned through memory on every hop, for the
    /// few packets that are dropped (callgrind, 1 s of bench.toml: 2.1% of all instructions
    /// went to building and matching it).
    Dropped,
    /// Its route is done: it is at its endpoint (still in the slab).
    AtEndpoint,
}

pub(crate) struct Net {
    pub(crate) now: Nanos,
    /// End of the run.
    pub(crate) end: Nanos,
    pub(crate) q: EventQueue,
    pub(crate) pool: Pool,
    pub(crate) links: Vec<Link>,
    pub(crate) routes: Vec<Route>,
    /// Data packets and pure ACKs (reports) sent so far.
    pub(crate) data_packets: u64,
    pub(crate) ack_packets: u64,
}

/// A sender's host send queue: the random delay between the transport handing a data packet
/// down and the packet reaching its first link (the flow's `send_jitter`), drawn from the
/// sender's own random stream.
#[derive(Debug)]
pub struct SendJitter {
    /// Delays are uniform in `[0, max)`; 0: none.
    pub max: Nanos,
    pub rng: Stream,
}

impl Net {
    /// Send data packet `p` now through its sender's host: after the send delay drawn from
    /// `jitter`, but never before the previous packet of the same queue (`tx_clock`, the time
    /// the host last released one), so the host keeps its packets in order. Returns the packet
    /// if the first link dropped it at once. The one way TCP/MPTCP and rate flows put data on
    /// the network.
    #[inline]
    pub(crate) fn send_data(
        &mut self,
        p: Packet,
        jitter: &mut SendJitter,
        tx_clock: &mut Nanos,
    ) -> Option<Packet> {
        self.data_packets += 1;
        if jitter.max > 0 {
            let d = (jitter.rng.uniform() * jitter.max as f64) as Nanos;
            let at = (self.now + d).max(*tx_clock);
            *tx_clock = at;
            let pid = self.pool.alloc(p);
            self.q.push_near(at, pid);
            None
        } else {
            self.inject(p)
        }
    }

    /// Put a packet on its route now. Returns it if the first link dropped it.
    #[inline]
    pub(crate) fn inject(&mut self, p: Packet) -> Option<Packet> {
        let pid = self.pool.alloc(p);
        self.launch(pid)
    }

    /// Put packet `pid` (already in the slab, at hop 0) on its route now. Returns it if the
    /// first link dropped it.
    #[inline]
    pub(crate) fn launch(&mut self, pid: u32) -> Option<Packet> {
        let route = &self.routes[self.pool.get(pid).route as usize];
        if route.links.is_empty() {
            self.q.push_lane(route.lane, self.now + route.delay, pid);
            return None;
        }
        match self.hop(pid) {
            Hop::Dropped => Some(self.take_dropped(pid)),
            Hop::Queued => None,
            Hop::AtEndpoint => unreachable!("a route with links ends after its first hop"),
        }
    }

    /// Packet `pid` reaches hop `pkt.hop` of its route: enter that link, or report that it is at
    /// its endpoint.
    /// Always inlined: as a call (twice per data packet) its entry and exit, saving and
    /// restoring the registers the event loop holds, cost 24 instructions a call, 2% of a run
    /// (callgrind, 1 s of bench.toml: 382.3 M -> 374.4 M instructions inlined).
    #[inline(always)]
    pub(crate) fn hop(&mut self, pid: u32) -> Hop {
        let p = self.pool.get(pid);
        let route = &self.routes[p.route as usize];
        let hop = p.hop as usize;
        if hop >= route.links.len() {
            return Hop::AtEndpoint;
        }
        let l = route.links[hop] as usize;
        let wire = p.wire;
        match self.links[l].offer(self.now, wire) {
            Ok(at) => {
                self.pool.get_mut(pid).hop += 1;
                let extra = self.links[l].reorder_extra();
                if extra == 0 {
                    self.q.push_lane(l as u32, at, pid);
                } else {
                    // Overtaken by later packets: off the link's FIFO lane, into the heap.
                    self.q.push(at + extra, Ev::Arrive(pid));
                }
                Hop::Queued
            }
            Err(_) => Hop::Dropped,
        }
    }

    /// Free the slot of packet `pid`, which [`Net::hop`] reported dropped, and return it.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_dropped(&mut self, pid: u32) -> Packet {
        let p = *self.pool.get(pid);
        self.pool.free(pid);
        p
    }

    /// Delay a reply sent now over `route` would take: queue backlog + serialisation of an ACK +
    /// propagation on each link, or the route's fixed delay.
    pub(crate) fn return_delay(&mut self, route: u32) -> Nanos {
        let now = self.now;
        let rt = &self.routes[route as usize];
        let mut d = rt.delay;
        for &l in &rt.links {
            let link = &mut self.links[l as usize];
            let backlog = link.queue_bytes(now);
            d += link.delay
                + serialisation(ACK_BYTES, link.rate_bps)
                + serialisation(backlog.min(u64::from(u32::MAX)) as u32, link.rate_bps);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A network of one route without links (a fixed delay of 5 us, lane 0) at time `now`,
    /// whose calendar reaches `horizon` ahead.
    fn net(now: Nanos, horizon: Nanos) -> Net {
        Net {
            now,
            end: Nanos::MAX,
            // The queue has popped nothing yet (its clock is at 0, not `now`): its horizon
            // must reach from 0 to `now + horizon`, or a debug build's `push_near` check fails.
            q: EventQueue::new(1, 16, now + horizon),
            pool: Pool::with_capacity(16),
            links: Vec::new(),
            routes: vec![Route {
                links: Vec::new(),
                delay: 5_000,
                lane: 0,
            }],
            data_packets: 0,
            ack_packets: 0,
        }
    }

    /// The host's send queue: each packet waits `u * max` (u the next draw of the sender's
    /// stream), but never leaves before the one sent before it, so a burst keeps its order.
    #[test]
    fn send_delays_are_drawn_per_packet_and_keep_order() {
        let (now, max) = (1_000_000, 200_000);
        let mut n = net(now, max);
        let mut jitter = SendJitter {
            max,
            rng: Stream::new(7, "flow", "f"),
        };
        let mut same = Stream::new(7, "flow", "f");
        let (mut clock, mut want) = (0, Vec::new());
        for seq in 0..200 {
            let p = Packet {
                seq,
                ..Packet::default()
            };
            assert!(n.send_data(p, &mut jitter, &mut clock).is_none());
            let at = (now + (same.uniform() * max as f64) as Nanos)
                .max(want.last().map_or(0, |&(t, _)| t));
            want.push((at, seq));
        }
        assert_eq!(n.data_packets, 200);
        assert_eq!(clock, want.last().unwrap().0);
        let mut got = Vec::new();
        while let Some((t, ev)) = n.q.pop() {
            let Ev::Arrive(pid) = ev else { unreachable!() };
            got.push((t, n.pool.get(pid).seq));
        }
        assert_eq!(got, want);
        assert!(want.iter().all(|&(t, _)| (now..now + max).contains(&t)));
        // Some packets waited for the one before them (else the test shows nothing of that).
        assert!(want.windows(2).any(|w| w[0].0 == w[1].0));
    }

    /// Without a send delay a packet goes onto its route at once, and the sender's stream is
    /// not drawn from (a scenario's other draws stay the same whatever `send_jitter` is used
    /// for).
    #[test]
    fn no_send_delay_injects_at_once_and_draws_nothing() {
        let mut n = net(3_000, 0);
        let mut jitter = SendJitter {
            max: 0,
            rng: Stream::new(7, "flow", "f"),
        };
        let mut clock = 0;
        assert!(n
            .send_data(Packet::default(), &mut jitter, &mut clock)
            .is_none());
        assert_eq!((n.data_packets, clock), (1, 0));
        let (t, ev) = n.q.pop().unwrap();
        assert!(matches!(ev, Ev::Arrive(_)));
        assert_eq!(t, 3_000 + 5_000);
        assert_eq!(
            jitter.rng.next_u64(),
            Stream::new(7, "flow", "f").next_u64()
        );
    }
}

//! A unidirectional link: a transmitter of fixed rate behind a drop-tail FIFO, followed by a
//! fixed propagation delay, with optional random loss applied before the queue as Linux netem
//! does (netem decides loss on enqueue).
//!
//! The queue is kept as the list of departure times of the packets it holds: with a FIFO served
//! at a constant rate, a packet's departure time is known the moment it is accepted
//! (`max(now, busy_until) + size/rate`), so a packet costs one event per hop (its arrival at the
//! next hop) instead of two.

use std::collections::VecDeque;

use crate::rng::{Chance, Stream};
use crate::time::{serialisation, Nanos};

/// Buffer limit: the buffer holds the packet being transmitted plus those waiting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Buffer {
    Bytes(u64),
    Packets(u32),
}

/// Gilbert-Elliott two-state loss, in netem's `gemodel p r 1-h 1-k` parameterisation:
/// `p` = P(good -> bad), `r` = P(bad -> good) per packet, loss probability `1-k` in the good
/// state and `1-h` in the bad state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
}

/// Subflow-level reordering: each packet the link accepts is, with probability `probability`,
/// held back `extra_delay` beyond its propagation delay, so packets that leave the link after
/// it can arrive first. (netem's `reorder` is the mirror image: there the selected packets skip
/// the configured delay and the rest take it. Here the link's own delay stays the base for every
/// packet, so turning reordering on never makes a path faster.) The extra delay does not occupy
/// the transmitter or the buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reorder {
    pub probability: f64,
    pub extra_delay: Nanos,
}

#[derive(Clone, Copy, Debug)]
struct GeState {
    p: Chance,
    r: Chance,
    good: Chance,
    bad: Chance,
    in_bad: bool,
}

/// Why a link refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    Random,
    Queue,
}

#[derive(Debug)]
pub struct Link {
    pub name: String,
    pub rate_bps: u64,
    pub delay: Nanos,
    pub buffer: Buffer,
    loss: Chance,
    ge: Option<GeState>,
    rng: Stream,
    reorder: Chance,
    reorder_delay: Nanos,
    /// Its own stream, so that turning reordering on changes no loss draw.
    reorder_rng: Stream,
    /// Departure (end of transmission) time and size of every packet in the buffer, oldest first.
    q: VecDeque<(Nanos, u32)>,
    q_bytes: u64,
    busy_until: Nanos,
    /// The last packet size seen and its transmission time: packets come in two or three
    /// sizes, and this saves a 128-bit division per packet.
    tx_memo: (u32, Nanos),
    // counters
    pub arrived: u64,
    pub accepted: u64,
    pub queue_drops: u64,
    pub random_drops: u64,
    /// Packets held back by `Reorder`.
    pub reordered: u64,
    /// Sum of transmission times of accepted packets (clipped to the run at the end).
    busy_ns: u128,
    /// Integral of queue bytes over time, as sum(bytes * residence).
    q_integral: u128,
    pub max_q_bytes: u64,
}

impl Link {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        rate_bps: u64,
        delay: Nanos,
        buffer: Buffer,
        loss: f64,
        ge: Option<GilbertElliott>,
        reorder: Option<Reorder>,
        rng: Stream,
        reorder_rng: Stream,
    ) -> Self {
        Link {
            name,
            rate_bps,
            delay,
            buffer,
            loss: Chance::new(loss),
            ge: ge.map(|g| GeState {
                p: Chance::new(g.p),
                r: Chance::new(g.r),
                good: Chance::new(g.loss_good),
                bad: Chance::new(g.loss_bad),
                in_bad: false,
            }),
            rng,
            reorder: Chance::new(reorder.map_or(0.0, |r| {
                if r.extra_delay > 0 {
                    r.probability
                } else {
                    0.0
                }
            })),
            reorder_delay: reorder.map_or(0, |r| r.extra_delay),
            reorder_rng,
            q: VecDeque::with_capacity(256),
            q_bytes: 0,
            busy_until: 0,
            tx_memo: (0, 0),
            arrived: 0,
            accepted: 0,
            queue_drops: 0,
            random_drops: 0,
            reordered: 0,
            busy_ns: 0,
            q_integral: 0,
            max_q_bytes: 0,
        }
    }

    #[inline]
    fn purge(&mut self, now: Nanos) {
        while let Some(&(t, b)) = self.q.front() {
            if t > now {
                break;
            }
            self.q.pop_front();
            self.q_bytes -= u64::from(b);
        }
    }

    /// Offer a packet of `wire` bytes at `now`. On success returns the time its last bit
    /// reaches the far end (departure + propagation). Always inlined (into `Net::hop`, once per
    /// data packet per link): as a call, its entry and exit cost 16 instructions a packet
    /// (callgrind, 3 s of bench.toml: 1 096.0 M -> 1 090.0 M instructions inlined).
    #[inline(always)]
    pub fn offer(&mut self, now: Nanos, wire: u32) -> Result<Nanos, Drop> {
        self.arrived += 1;
        if self.random_loss() {
            self.random_drops += 1;
            return Err(Drop::Random);
        }
        self.purge(now);
        let fits = match self.buffer {
            Buffer::Bytes(b) => self.q_bytes + u64::from(wire) <= b,
            Buffer::Packets(n) => self.q.len() < n as usize,
        };
        if !fits {
            self.queue_drops += 1;
            return Err(Drop::Queue);
        }
        let tx = if self.tx_memo.0 == wire {
            self.tx_memo.1
        } else {
            let tx = serialisation(wire, self.rate_bps);
            self.tx_memo = (wire, tx);
            tx
        };
        let start = self.busy_until.max(now);
        let depart = start + tx;
        self.busy_until = depart;
        self.q.push_back((depart, wire));
        self.q_bytes += u64::from(wire);
        self.max_q_bytes = self.max_q_bytes.max(self.q_bytes);
        self.accepted += 1;
        self.busy_ns += u128::from(tx);
        self.q_integral += u128::from(wire) * u128::from(depart - now);
        Ok(depart + self.delay)
    }

    /// Extra delay for the packet just accepted: `extra_delay` if it is picked for reordering,
    /// else 0 (the packet then arrives in FIFO order).
    #[inline]
    pub fn reorder_extra(&mut self) -> Nanos {
        if self.reorder.is_never() || !self.reorder.hit(&mut self.reorder_rng) {
            return 0;
        }
        self.reordered += 1;
        self.reorder_delay
    }

    #[inline]
    fn random_loss(&mut self) -> bool {
        if let Some(g) = &mut self.ge {
            // Transition first, then lose with the new state's probability (netem gemodel).
            if g.in_bad {
                if g.r.hit(&mut self.rng) {
                    g.in_bad = false;
                }
            } else if g.p.hit(&mut self.rng) {
                g.in_bad = true;
            }
            let c = if g.in_bad { g.bad } else { g.good };
            if c.hit(&mut self.rng) {
                return true;
            }
        }
        !self.loss.is_never() && self.loss.hit(&mut self.rng)
    }

    /// Bytes in the buffer at `now` (including the packet being transmitted).
    pub fn queue_bytes(&mut self, now: Nanos) -> u64 {
        self.purge(now);
        self.q_bytes
    }

    /// Bytes of the link's own state and its departure queue (capacity).
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Link>() + self.q.capacity() * std::mem::size_of::<(Nanos, u32)>()
    }

    /// Packets still in the buffer at `end` (accepted, not yet fully transmitted).
    pub fn queued_at(&self, end: Nanos) -> u64 {
        self.q.iter().filter(|(t, _)| *t > end).count() as u64
    }

    /// Packets whose transmission finished by `end`.
    pub fn forwarded_by(&self, end: Nanos) -> u64 {
        self.accepted - self.queued_at(end)
    }

    /// Fraction of `[0, end]` the transmitter was busy.
    pub fn utilisation(&self, end: Nanos) -> f64 {
        if end == 0 {
            return 0.0;
        }
        // Work not yet done at `end` is the backlog still queued.
        let pending = self.busy_until.saturating_sub(end);
        (self.busy_ns.saturating_sub(u128::from(pending))) as f64 / end as f64
    }

    /// Time-average bytes in the buffer over `[0, end]`.
    pub fn mean_queue_bytes(&self, end: Nanos) -> f64 {
        if end == 0 {
            return 0.0;
        }
        // Remove the part of each residence that lies beyond `end`.
        let mut beyond: u128 = 0;
        for &(t, b) in self.q.iter() {
            if t > end {
                beyond += u128::from(b) * u128::from(t - end);
            }
        }
        (self.q_integral.saturating_sub(beyond)) as f64 / end as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(buf: Buffer, loss: f64) -> Link {
        Link::new(
            "l".into(),
            8_000_000,
            1_000_000,
            buf,
            loss,
            None,
            None,
            Stream::new(1, "link", "l"),
            Stream::new(1, "reorder", "l"),
        )
    }

    #[test]
    fn fifo_departures_follow_rate_and_delay() {
        // 8 Mb/s: 1000 bytes take exactly 1 ms; propagation 1 ms.
        let mut l = link(Buffer::Packets(10), 0.0);
        assert_eq!(l.offer(0, 1000), Ok(2_000_000));
        assert_eq!(l.offer(0, 1000), Ok(3_000_000));
        assert_eq!(l.queue_bytes(500_000), 2000);
        assert_eq!(l.queue_bytes(1_000_000), 1000);
        // Idle link: starts at arrival.
        assert_eq!(l.offer(10_000_000, 1000), Ok(12_000_000));
        assert!((l.utilisation(20_000_000) - 0.15).abs() < 1e-12);
    }

    #[test]
    fn drop_tail_in_packets_and_bytes() {
        let mut l = link(Buffer::Packets(2), 0.0);
        assert!(l.offer(0, 1000).is_ok());
        assert!(l.offer(0, 1000).is_ok());
        assert_eq!(l.offer(0, 1000), Err(Drop::Queue));
        let mut l = link(Buffer::Bytes(2500), 0.0);
        assert!(l.offer(0, 1000).is_ok());
        assert!(l.offer(0, 1000).is_ok());
        assert_eq!(l.offer(0, 1000), Err(Drop::Queue));
        assert!(l.offer(0, 500).is_ok());
        assert_eq!(l.queue_drops, 1);
        assert_eq!(l.max_q_bytes, 2500);
    }

    #[test]
    fn mean_queue_is_time_average() {
        let mut l = link(Buffer::Packets(10), 0.0);
        l.offer(0, 1000).unwrap(); // in buffer 0..1ms
        l.offer(0, 1000).unwrap(); // in buffer 0..2ms
                                   // integral = 1000*1ms + 1000*2ms = 3000 byte-ms over 4 ms -> 750 bytes
        assert!((l.mean_queue_bytes(4_000_000) - 750.0).abs() < 1e-9);
        // Clipped at 1 ms: both held for the whole first ms -> 2000 bytes.
        assert!((l.mean_queue_bytes(1_000_000) - 2000.0).abs() < 1e-9);
    }

    /// Offer `n` packets to a link with Gilbert-Elliott loss; returns the loss rate and the
    /// mean length of runs of consecutive losses.
    fn gilbert_run(g: GilbertElliott, n: u64) -> (f64, f64) {
        let mut l = Link::new(
            "ge".into(),
            8_000_000,
            0,
            Buffer::Packets(u32::MAX),
            0.0,
            Some(g),
            None,
            Stream::new(3, "link", "ge"),
            Stream::new(3, "reorder", "ge"),
        );
        let (mut lost, mut runs, mut prev) = (0u64, 0u64, false);
        for i in 0..n {
            // 1000 bytes take 1 ms: 2 ms apart, the queue never holds more than one packet.
            let drop = l.offer(i * 2_000_000, 1000) == Err(Drop::Random);
            lost += u64::from(drop);
            runs += u64::from(drop && !prev);
            prev = drop;
        }
        (lost as f64 / n as f64, lost as f64 / runs as f64)
    }

    /// Gilbert-Elliott as netem's `gemodel` (transition, then lose with the new state's
    /// probability). Per packet the state is a two-state Markov chain with P(good -> bad) = p,
    /// P(bad -> good) = r, so the stationary probabilities are pi_bad = p/(p+r), pi_good =
    /// r/(p+r), the long-run loss rate is loss_good pi_good + loss_bad pi_bad, and a stay in the
    /// bad state lasts a geometric number of packets with mean 1/r.
    #[test]
    fn gilbert_elliott_matches_its_stationary_distribution() {
        // Gilbert's special case (loss_good = 0, loss_bad = 1): loss runs are exactly the bad
        // stays, mean 1/r = 4 packets; loss rate pi_bad = 0.01/0.26.
        let (rate, burst) = gilbert_run(
            GilbertElliott {
                p: 0.01,
                r: 0.25,
                loss_good: 0.0,
                loss_bad: 1.0,
            },
            2_000_000,
        );
        // Tolerances are about 6 standard errors: the loss indicator is autocorrelated
        // (lambda = 1 - p - r = 0.74, variance factor (1 + lambda)/(1 - lambda) = 6.7), sd of
        // the rate ~3.5e-4; burst lengths have variance (1-r)/r^2 = 12 over ~19000 bursts.
        assert!((rate - 0.01 / 0.26).abs() < 0.002, "loss rate {rate}");
        assert!((burst - 4.0).abs() < 0.15, "mean burst {burst}");
        // The general case: lossy good state, partly lossy bad state.
        let (p, r, lg, lb) = (0.05, 0.3, 0.02, 0.6);
        let (rate, _) = gilbert_run(
            GilbertElliott {
                p,
                r,
                loss_good: lg,
                loss_bad: lb,
            },
            2_000_000,
        );
        let expect = lg * r / (p + r) + lb * p / (p + r); // 0.102857
        assert!(
            (rate - expect).abs() < 0.003,
            "loss rate {rate}, stationary {expect}"
        );
    }

    #[test]
    fn random_loss_rate() {
        let mut l = link(Buffer::Packets(u32::MAX), 0.05);
        for i in 0..100_000u64 {
            let _ = l.offer(i * 2_000_000, 1000);
        }
        let p = l.random_drops as f64 / l.arrived as f64;
        assert!((p - 0.05).abs() < 0.004, "p = {p}");
    }
}

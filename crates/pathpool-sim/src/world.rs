//! The world: builds the network and the endpoints from a [`Scenario`], runs the event loop
//! (each event goes to the network or to the endpoint it belongs to), and turns the final state
//! into a [`RunOutput`].

use crate::config::{AckRoute, FlowKind, Scenario};
use crate::conn::scoreboard::SegPool;
use crate::conn::Conn;
use crate::error::SimError;
use crate::metrics::jain_index;
use crate::net::event::{Ev, EventQueue};
use crate::net::link::Link;
use crate::net::packet::Pool;
use crate::net::{Hop, Net, Path, Route};
use crate::output::{LinkRecord, RunOutput, RunStats, Series};
use crate::rate::{self, RateFlow};
use crate::rng::Stream;
use crate::time::{secs, Nanos};

/// Progress is reported about this many times per run.
const PROGRESS_STEPS: u64 = 200;

pub(crate) struct World {
    pub(crate) net: Net,
    /// Scoreboard chunks not in use by any subflow (shared by every connection's subflows).
    segs: SegPool,
    seed: u64,
    /// Connections first (the index is `Packet::conn` of their packets and the first field of
    /// their timer events), then rate flows.
    pub(crate) endpoints: Vec<Endpoint>,
    sample_interval: Nanos,
    series: Series,
    events: u64,
    /// Simulated time of the next progress report.
    next_report: Nanos,
}

/// Where a route ends: each variant handles its own packets and timers (static dispatch).
// A connection inline keeps a packet's endpoint one index away; the rarer rate flow (larger
// than a connection) is boxed, so that every connection's slot is not sized for one.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Endpoint {
    Conn(Conn),
    Rate(Box<RateFlow>),
}

impl World {
    /// What the run's memory is made of: bytes per structure, each at its high-water mark
    /// (capacities; the packet slab's slots ever used). Heap blocks' allocator headers and the
    /// parsed scenario are not counted. For `runscn --memory` (bench/README.md).
    pub(crate) fn memory(&self) -> Vec<(&'static str, usize)> {
        use std::mem::size_of;
        let n = &self.net;
        let mut v = vec![
            ("packet slab", n.pool.bytes_used()),
            ("scoreboard chunks", self.segs.bytes()),
        ];
        v.extend(n.q.memory());
        let (mut flows, mut ring, mut ooo) = (0, 0, 0);
        for e in &self.endpoints {
            flows += size_of::<Endpoint>();
            match e {
                Endpoint::Conn(c) => {
                    let (state, rings, lists) = c.memory();
                    flows += state;
                    ring += rings;
                    ooo += lists;
                }
                Endpoint::Rate(_) => flows += size_of::<RateFlow>(),
            }
        }
        v.push(("per-flow state (connections, subflows, controllers)", flows));
        v.push(("data-level reassembly rings", ring));
        v.push(("subflow out-of-order lists", ooo));
        v.push((
            "links and routes",
            n.links.iter().map(Link::bytes).sum::<usize>()
                + n.routes.capacity() * size_of::<Route>(),
        ));
        v
    }

    pub(crate) fn build(sc: &Scenario, seed: u64) -> Result<World, SimError> {
        let (links, routes, paths) = network(sc, seed);
        // Event lanes: the far end of each link, then each route without links. The host send
        // queues' delays (`send_jitter`) go to the queue's near-future calendar.
        let lanes = links.len() + routes.len();
        let horizon = sc.flows.iter().map(|f| f.send_jitter).max().unwrap_or(0);
        let mut q = EventQueue::new(lanes, 1 << 12, horizon);
        let mut conns = Vec::with_capacity(sc.flows.len());
        for f in sc.flows.iter().filter(|f| f.kind != FlowKind::Rate) {
            let c = conns.len();
            let conn = Conn::new(sc, f, seed, &paths)?;
            let start = conn.start;
            conns.push(conn);
            if start <= sc.duration {
                q.push(start, Ev::Start(c as u32));
            }
            if let Some(s) = f.stop {
                if s.max(start) <= sc.duration {
                    q.push(s.max(start), Ev::Stop(c as u32));
                }
            }
        }
        let rate_flows = sc
            .flows
            .iter()
            .filter(|f| f.kind == FlowKind::Rate)
            .map(|f| RateFlow::build(sc, f, seed, &links, &routes, &paths))
            .collect::<Result<Vec<_>, _>>()?;
        let n_conns = conns.len();
        rate::schedule_rate_flows(&rate_flows, n_conns, &mut q, sc.duration);
        if sc.sample_interval > 0 && sc.sample_interval <= sc.duration {
            q.push(sc.sample_interval, Ev::Sample);
        }
        let endpoints = conns
            .into_iter()
            .map(Endpoint::Conn)
            .chain(rate_flows.into_iter().map(|r| Endpoint::Rate(Box::new(r))))
            .collect();
        Ok(World {
            net: Net {
                now: 0,
                end: sc.duration,
                q,
                pool: Pool::with_capacity(1 << 14),
                links,
                routes,
                data_packets: 0,
                ack_packets: 0,
            },
            segs: SegPool::default(),
            seed,
            endpoints,
            sample_interval: sc.sample_interval,
            series: Series::default(),
            events: 0,
            next_report: (sc.duration / PROGRESS_STEPS).max(1),
        })
    }

    /// Process every event at or before `t` (clipped to the end of the run), then set the clock
    /// to `t`. Splitting a run into several calls gives exactly the run of a single call: events
    /// are processed in the same (time, scheduling order) either way.
    pub(crate) fn run_until(&mut self, t: Nanos, progress: &mut dyn FnMut(f64)) {
        let end = self.net.end;
        let until = t.min(end);
        if until < self.net.now {
            return;
        }
        let step = (end / PROGRESS_STEPS).max(1);
        while let Some((t, ev)) = self.net.q.pop_until(until) {
            self.net.now = t;
            self.events += 1;
            if let Some(next) = self.net.q.next_in_lane() {
                self.net.pool.prefetch(next);
            }
            let (net, segs) = (&mut self.net, &mut self.segs);
            match ev {
                Ev::Arrive(pid) => self.arrive(pid),
                Ev::Sample => self.sample(),
                Ev::Start(e) => match &mut self.endpoints[e as usize] {
                    Endpoint::Conn(c) => c.on_start(net, segs, e as usize),
                    Endpoint::Rate(r) => r.on_start(net, e),
                },
                Ev::Stop(e) => match &mut self.endpoints[e as usize] {
                    Endpoint::Conn(c) => c.on_stop(),
                    Endpoint::Rate(r) => r.on_stop(),
                },
                Ev::Join(e, i) => {
                    conn_of(&mut self.endpoints, e).on_join(net, segs, e as usize, i as usize)
                }
                Ev::JoinBuffer(e, i) => conn_of(&mut self.endpoints, e)
                    .on_join_buffer(net, segs, e as usize, i as usize),
                Ev::Rto(e, i) => {
                    conn_of(&mut self.endpoints, e).on_rto_event(net, segs, e as usize, i as usize)
                }
                Ev::DataRtx(e) => {
                    conn_of(&mut self.endpoints, e).on_data_rtx(net, segs, e as usize)
                }
                Ev::DelAck(e, j) => {
                    conn_of(&mut self.endpoints, e).on_delack_event(net, e as usize, j as usize)
                }
                Ev::Report(e) => rate_of(&mut self.endpoints, e).on_report(net, e),
                Ev::Pace(e, r) => rate_of(&mut self.endpoints, e).on_pace(net, e, r as usize),
            }
            if t >= self.next_report {
                progress((t as f64 / end as f64).min(1.0));
                self.next_report = (t / step + 1) * step;
            }
        }
        self.net.now = until;
        if until == end {
            progress(1.0);
        }
    }

    pub(crate) fn now(&self) -> Nanos {
        self.net.now
    }

    pub(crate) fn end(&self) -> Nanos {
        self.net.end
    }

    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    /// TCP/MPTCP data packets sent so far.
    pub(crate) fn data_packets(&self) -> u64 {
        self.net.data_packets
    }

    /// The rate flows, in scenario order, with their endpoint indices.
    pub(crate) fn rate_flows(&self) -> impl Iterator<Item = (u32, &RateFlow)> {
        self.endpoints
            .iter()
            .enumerate()
            .filter_map(|(e, ep)| match ep {
                Endpoint::Rate(r) => Some((e as u32, &**r)),
                Endpoint::Conn(_) => None,
            })
    }

    /// The endpoint index of rate flow `flow`.
    pub(crate) fn rate_index(&self, flow: &str) -> Result<u32, SimError> {
        self.rate_flows()
            .find(|(_, f)| f.name == flow)
            .map(|(e, _)| e)
            .ok_or_else(|| {
                let names: Vec<&str> = self.rate_flows().map(|(_, f)| f.name.as_str()).collect();
                SimError {
                    message: if names.is_empty() {
                        format!("no rate flow named {flow:?}: this scenario has no flow of kind \"rate\"")
                    } else {
                        format!("no rate flow named {flow:?} (rate flows: {})", names.join(", "))
                    },
                }
            })
    }

    /// Rate flow `flow`'s new rates ([`crate::Simulation::set_rates`]).
    pub(crate) fn set_rates(
        &mut self,
        flow: &str,
        rates: &[f64],
        source_per_block: u32,
    ) -> Result<(), SimError> {
        let e = self.rate_index(flow)?;
        let now = self.net.now;
        let fl = rate_of(&mut self.endpoints, e);
        fl.set_rates(flow, &mut self.net.q, e, now, rates, source_per_block)
    }

    #[cfg(test)]
    fn conn(&mut self, e: u32) -> &mut Conn {
        conn_of(&mut self.endpoints, e)
    }

    pub(crate) fn rate(&mut self, e: u32) -> &mut RateFlow {
        rate_of(&mut self.endpoints, e)
    }

    /// A packet reaches hop `pkt.hop` of its route: the network moves it on, or hands it to
    /// its endpoint.
    #[inline]
    fn arrive(&mut self, pid: u32) {
        match self.net.hop(pid) {
            Hop::Queued => {}
            Hop::Dropped => {
                let p = self.net.take_dropped(pid);
                match &mut self.endpoints[p.conn as usize] {
                    Endpoint::Conn(c) => c.on_drop(&p),
                    Endpoint::Rate(r) => r.on_drop(&p),
                }
            }
            Hop::AtEndpoint => {
                let p = self.net.pool.get(pid);
                let is_ack = p.is_ack;
                match &mut self.endpoints[p.conn as usize] {
                    Endpoint::Conn(c) if is_ack => c.on_ack(&mut self.net, &mut self.segs, pid),
                    Endpoint::Conn(c) => c.on_data(&mut self.net, pid),
                    Endpoint::Rate(r) => {
                        let p = *p;
                        self.net.pool.free(pid);
                        r.on_packet(&mut self.net, &p);
                    }
                }
            }
        }
    }

    // --- metrics ----------------------------------------------------------------------------

    fn sample(&mut self) {
        let now = self.net.now;
        let t = secs(now);
        let dt = secs(self.sample_interval);
        for ep in self.endpoints.iter_mut() {
            let conn = match ep {
                Endpoint::Conn(c) => c,
                Endpoint::Rate(r) => {
                    r.sample(now, t, dt, &mut self.series, self.seed);
                    continue;
                }
            };
            conn.sample(t, dt, &mut self.series, self.seed);
        }
        for l in self.net.links.iter_mut() {
            let qb = l.queue_bytes(now);
            self.series
                .push(self.seed, t, "link", &l.name, "queue_bytes", qb as f64);
        }
        let next = now + self.sample_interval;
        if next <= self.net.end {
            self.net.q.push(next, Ev::Sample);
        }
    }

    pub(crate) fn finish(mut self, wall_s: f64) -> RunOutput {
        let end = self.net.end;
        // Data packets still travelling, per endpoint: every live packet has exactly one
        // pending arrival event.
        let mut in_flight = vec![0u64; self.endpoints.len()];
        let mut live = 0u64;
        for ev in self.net.q.pending() {
            if let Ev::Arrive(pid) = ev {
                live += 1;
                let p = self.net.pool.get(pid);
                if !p.is_ack {
                    in_flight[p.conn as usize] += 1;
                }
            }
        }
        debug_assert_eq!(live as usize, self.net.pool.live());
        // The packets, their events and the scoreboards are not needed for the records: give
        // their memory to the output's allocations (else they add to the run's peak).
        self.net.pool = Pool::default();
        self.net.q = EventQueue::default();
        self.segs = SegPool::default();
        for ep in self.endpoints.iter_mut() {
            if let Endpoint::Conn(conn) = ep {
                for s in conn.snd.iter_mut() {
                    s.sb = Default::default();
                }
            }
        }
        let mut out = RunOutput::default();
        // Sized once from the run: grown by doubling, the records of 999 flows added ~0.25 MiB
        // to a 1 Gb/s run's peak RSS after everything above was freed (runscn --memory's VmHWM
        // before `finish` against GNU time's peak for the whole process).
        out.flows.reserve_exact(self.endpoints.len());
        out.subflows.reserve_exact(
            self.endpoints
                .iter()
                .map(|e| match e {
                    Endpoint::Conn(c) => c.snd.len(),
                    Endpoint::Rate(_) => 0,
                })
                .sum(),
        );
        for (c, ep) in self.endpoints.iter_mut().enumerate() {
            if let Endpoint::Conn(conn) = ep {
                conn.records(&mut out, self.seed, end, in_flight[c]);
            }
        }
        for ep in self.endpoints.iter_mut() {
            if let Endpoint::Rate(r) = ep {
                r.records(&mut out, self.seed, end);
            }
        }
        for l in &self.net.links {
            out.links.push(LinkRecord {
                seed: self.seed,
                link: l.name.clone(),
                rate_bps: l.rate_bps as f64,
                delay_s: secs(l.delay),
                utilisation: l.utilisation(end),
                forwarded_packets: l.forwarded_by(end),
                queue_drops: l.queue_drops,
                random_drops: l.random_drops,
                mean_queue_bytes: l.mean_queue_bytes(end),
                max_queue_bytes: l.max_q_bytes,
                arrived_packets: l.arrived,
                queued_packets_end: l.queued_at(end),
            });
        }
        let goodputs: Vec<f64> = out.flows.iter().map(|f| f.goodput_bps).collect();
        out.stats = RunStats {
            seed: self.seed,
            simulated_s: secs(end),
            events: self.events,
            data_packets: self.net.data_packets,
            wall_s,
            ack_packets: self.net.ack_packets,
            packets_in_network_end: live,
            jain_goodput: jain_index(&goodputs),
        };
        out.series = std::mem::take(&mut self.series);
        out
    }
}

/// The scenario's links, and two routes per scenario path (its data's, then its ACKs') with
/// each path's pair of route indices. Each link and each route without links gets an event
/// lane: links first, then routes in order.
fn network(sc: &Scenario, seed: u64) -> (Vec<Link>, Vec<Route>, Vec<Path>) {
    let links: Vec<Link> = sc
        .links
        .iter()
        .map(|l| {
            let rng = Stream::new(seed, "link", &l.name);
            Link::new(
                l.name.clone(),
                l.rate_bps,
                l.delay,
                l.buffer,
                l.loss,
                l.gilbert,
                l.reorder,
                rng,
                Stream::new(seed, "link-reorder", &l.name),
            )
        })
        .collect();
    let mut routes = Vec::with_capacity(sc.paths.len() * 2);
    let mut paths = Vec::with_capacity(sc.paths.len());
    for p in &sc.paths {
        let lane = (links.len() + routes.len()) as u32;
        paths.push(Path {
            data: routes.len() as u32,
            ack: routes.len() as u32 + 1,
        });
        routes.push(Route {
            links: p.links.iter().map(|&l| l as u32).collect(),
            delay: 0,
            lane,
        });
        let lane = lane + 1;
        routes.push(match &p.ack {
            AckRoute::Delay(d) => Route {
                links: Vec::new(),
                delay: *d,
                lane,
            },
            AckRoute::Links(ls) => Route {
                links: ls.iter().map(|&l| l as u32).collect(),
                delay: 0,
                lane,
            },
        });
    }
    (links, routes, paths)
}

#[cfg(test)]
impl World {
    /// The first endpoint, a connection, beside the network (unit tests of a connection).
    pub(crate) fn conn0(&mut self) -> (&mut Conn, &mut Net) {
        (conn_of(&mut self.endpoints, 0), &mut self.net)
    }

    /// As [`World::conn0`], with the scoreboard pool (a timer handler's arguments).
    pub(crate) fn conn0_segs(&mut self) -> (&mut Conn, &mut Net, &mut SegPool) {
        (
            conn_of(&mut self.endpoints, 0),
            &mut self.net,
            &mut self.segs,
        )
    }
}

/// Endpoint `e`, a connection (the events that name it are connection events).
#[inline]
fn conn_of(endpoints: &mut [Endpoint], e: u32) -> &mut Conn {
    match &mut endpoints[e as usize] {
        Endpoint::Conn(c) => c,
        Endpoint::Rate(_) => unreachable!("connection event for a rate flow"),
    }
}

/// Endpoint `e`, a rate flow.
#[inline]
fn rate_of(endpoints: &mut [Endpoint], e: u32) -> &mut RateFlow {
    match &mut endpoints[e as usize] {
        Endpoint::Rate(r) => r,
        Endpoint::Conn(_) => unreachable!("rate-flow event for a connection"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One Reno flow over a path that loses everything: no ACK ever comes back, so the timer
    /// fires at 1 s (RFC 6298 initial RTO), 3 s, 7 s (backed off 2 s, 4 s).
    fn blackhole() -> World {
        let sc = Scenario::from_toml_str(
            r#"
name = "blackhole"
duration = "20s"
[[links]]
name = "l"
rate = "10Mbps"
delay = "10ms"
loss = 1.0
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
kind = "tcp"
path = "p"
send_jitter = 0
"#,
            "test",
        )
        .unwrap();
        World::build(&sc, 1).unwrap()
    }

    fn state(w: &World) -> (f64, f64, u64, u64) {
        let Endpoint::Conn(c) = &w.endpoints[0] else {
            unreachable!()
        };
        let (v, s) = (&c.views[0], &c.snd[0]);
        (v.cwnd, v.ssthresh, s.rto_count, v.loss_events)
    }

    #[test]
    fn repeated_timeouts_keep_the_first_ssthresh() {
        let mut w = blackhole();
        w.run_until(secs_ns(0.5), &mut |_| {});
        assert_eq!(state(&w), (10.0, f64::INFINITY, 0, 0));
        // First expiry: Reno's ssthresh = max(10/2, 2) = 5, cwnd = 1.
        w.run_until(secs_ns(1.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 1, 1));
        // Re-expiries with no progress (RFC 5681 3.1, Linux tcp_enter_loss): ssthresh stays 5
        // (recomputing it from cwnd = 1 would give max(1/2, 2) = 2); one loss event.
        w.run_until(secs_ns(3.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 2, 1));
        w.run_until(secs_ns(7.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 3, 1));
    }

    #[test]
    fn timeout_after_progress_reduces_again() {
        let mut w = blackhole();
        w.run_until(secs_ns(1.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 5.0, 1, 1));
        // As if an ACK had advanced snd_una (clearing Linux's icsk_retransmits) and slow start
        // had regrown the window to 8, still in loss state: the next expiry is a new reduction.
        w.conn(0).snd[0].rto_backoffs = 0;
        w.conn(0).views[0].cwnd = 8.0;
        w.run_until(secs_ns(3.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 4.0, 2, 2));
    }

    #[test]
    fn timeout_in_fast_recovery_keeps_its_ssthresh() {
        let mut w = blackhole();
        w.run_until(secs_ns(0.5), &mut |_| {});
        // Put the subflow in fast recovery with ssthresh = cwnd = 7, as a congestion event
        // would, before the timer fires: ssthresh was already reduced in this window (Linux
        // tcp_enter_loss from TCP_CA_Recovery before high_seq), so it stays 7.
        let conn = w.conn(0);
        conn.snd[0].in_recovery = true;
        conn.snd[0].recovery_point = conn.snd[0].snd_nxt;
        conn.views[0].in_recovery = true;
        conn.views[0].ssthresh = 7.0;
        conn.views[0].cwnd = 7.0;
        w.run_until(secs_ns(1.5), &mut |_| {});
        assert_eq!(state(&w), (1.0, 7.0, 1, 0));
        let conn = w.conn(0);
        assert!(!conn.views[0].in_recovery && conn.snd[0].in_loss);
    }

    fn secs_ns(s: f64) -> Nanos {
        (s * 1e9) as Nanos
    }
}

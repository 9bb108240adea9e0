//! The hot path allocates nothing per packet (DEVELOPERS.md, "Speed").
//!
//! A counting global allocator counts the allocations (and reallocations) made by the thread
//! running the simulation. After a warm-up, in which buffers grow to their working sizes, the
//! run goes on for hundreds of thousands of packets; the allocations made meanwhile must stay
//! below a small constant. One allocation per packet, or per ACK, or per loss event, would show
//! up as thousands.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

mod common;

use common::{header, link, mptcp_flow, path, scenario, tcp_flow};
use pathpool_sim::Simulation;

struct Counting;

thread_local! {
    // Const-initialised and without a destructor, so touching it never allocates.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        System.realloc(ptr, layout, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const NS: u64 = 1_000_000_000;

/// Everything on the per-packet path: MPTCP (LIA, OLIA, BALIA) and TCP (Reno, CUBIC) flows,
/// every scheduler (upstream Linux's with its queues, bursts, send buffers and connection-level
/// retransmissions too), SACK recovery under random and bursty loss, RTOs with reinjection (the
/// Gilbert-Elliott link), delayed ACKs, ACKs over shared lossy links and over fixed delays, send
/// jitter on and off, a multi-hop path.
fn scenario_text() -> String {
    header("no_alloc", "\"100s\"\nseeds = [7]")
        + &link("a", "100Mbps", "5ms", "100pkt", "loss = 0.001")
        + &link(
            "b",
            "50Mbps",
            "20ms",
            "150KB",
            "gilbert = { p = 0.002, r = 0.3, loss_good = 0, loss_bad = 0.5 }",
        )
        + &link("c", "200Mbps", "1ms", "60pkt", "")
        + &link("back", "100Mbps", "5ms", "200pkt", "loss = 0.001")
        // Links of its own for the flow with upstream Linux's send side: on the others' links
        // it moved their high-water marks (reinjection queues, reassembly rings) past the
        // warm-up, and this test is about per-packet allocations, not when buffers peak.
        + &link("d", "50Mbps", "8ms", "80pkt", "loss = 0.001")
        + &link(
            "e",
            "20Mbps",
            "30ms",
            "100KB",
            "gilbert = { p = 0.002, r = 0.3, loss_good = 0, loss_bad = 0.5 }",
        )
        + &path("pa", &["a", "c"], "ack_links = [\"back\"]")
        + &path("pb", &["b"], "")
        + &path("pd", &["d"], "")
        + &path("pe", &["e"], "")
        + &mptcp_flow("lia", &["pa", "pb"], "lia", "count = 3\ndelayed_ack = true")
        + &mptcp_flow(
            "olia",
            &["pb", "pa"],
            "olia",
            "scheduler = \"roundrobin\"\nsend_jitter = 0",
        )
        + &mptcp_flow("balia", &["pa", "pb"], "balia", "rcv_buffer = \"64KiB\"")
        + &mptcp_flow(
            "upstream",
            &["pd", "pe"],
            "lia",
            "scheduler = \"linux\"\nsend_buffer = \"linux\"\nrecovery = \"linux\"\ndelayed_ack = \"linux\"",
        )
        + &tcp_flow("reno", "pa", "reno", "count = 2")
        + &tcp_flow("cubic", "pb", "cubic", "send_jitter = 0")
}

/// Allocations and simulated data packets while running from the current time to `t`.
fn phase(sim: &mut Simulation, t: u64) -> (u64, u64) {
    let (a0, p0) = (allocs(), sim.data_packets());
    sim.run_until(t);
    (allocs() - a0, sim.data_packets() - p0)
}

#[test]
fn steady_state_allocates_nothing_per_packet() {
    let sc = scenario(&scenario_text());
    let mut sim = Simulation::new(&sc, sc.seeds()[0]).unwrap();
    let (warm_allocs, warm_packets) = phase(&mut sim, 10 * NS);
    // The counter works: building and warming up the world allocates.
    assert!(
        warm_allocs > 0 && warm_packets > 10_000,
        "warm-up: {warm_allocs} allocations, {warm_packets} packets"
    );
    let (a1, p1) = phase(&mut sim, 40 * NS);
    let (a2, p2) = phase(&mut sim, 100 * NS);
    eprintln!("steady state: {a1} allocations over {p1} packets, then {a2} over {p2}");
    // Twice as long, twice the packets.
    assert!(
        p1 > 200_000 && p2 > 2 * p1 * 9 / 10,
        "packets: {p1} then {p2}"
    );
    // Amortised growth of a buffer to a new high-water mark may still happen a few times; any
    // per-packet (or per-event) allocation would be proportional to the packet count.
    assert!(
        a1 <= 8 && a2 <= 8,
        "allocations in steady state: {a1} over {p1} packets, then {a2} over {p2} packets"
    );
    let out = sim.finish();
    assert!(out.flows.iter().all(|f| f.integrity_errors == 0));
    assert!(
        out.flows.iter().map(|f| f.rto_count).sum::<u64>() > 0,
        "the scenario should exercise RTOs"
    );
    assert!(
        out.flows.iter().map(|f| f.reinjected_segments).sum::<u64>() > 0,
        "the scenario should exercise reinjection"
    );
}

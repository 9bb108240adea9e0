//! The hot path allocates nothing per packet (DEVELOPERS.md, "Speed").
//!
//! A counting global allocator counts the allocations (and reallocations) made by the thread
//! running the simulation. After a warm-up, in which buffers grow to their working sizes, the
//! run goes on for hundreds of thousands of packets; the allocations made meanwhile must stay
//! below a small constant. One allocation per packet, or per ACK, or per loss event, would show
//! up as thousands.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use pathpool_sim::{Scenario, Simulation};

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
/// both schedulers, SACK recovery under random and bursty loss, RTOs with reinjection (the
/// Gilbert-Elliott link), delayed ACKs, ACKs over shared lossy links and over fixed delays, send
/// jitter on and off, a multi-hop path.
const SCENARIO: &str = r#"
name = "no_alloc"
duration = "100s"
seeds = [7]

[[links]]
name = "a"
rate = "100Mbps"
delay = "5ms"
buffer = "100pkt"
loss = 0.001

[[links]]
name = "b"
rate = "50Mbps"
delay = "20ms"
buffer = "150KB"
gilbert = { p = 0.002, r = 0.3, loss_good = 0, loss_bad = 0.5 }

[[links]]
name = "c"
rate = "200Mbps"
delay = "1ms"
buffer = "60pkt"

[[links]]
name = "back"
rate = "100Mbps"
delay = "5ms"
buffer = "200pkt"
loss = 0.001

[[paths]]
name = "pa"
links = ["a", "c"]
ack_links = ["back"]

[[paths]]
name = "pb"
links = ["b"]

[[flows]]
name = "lia"
kind = "mptcp"
paths = ["pa", "pb"]
algorithm = "lia"
count = 3
delayed_ack = true

[[flows]]
name = "olia"
kind = "mptcp"
paths = ["pb", "pa"]
algorithm = "olia"
scheduler = "roundrobin"
send_jitter = 0

[[flows]]
name = "balia"
kind = "mptcp"
paths = ["pa", "pb"]
algorithm = "balia"
rcv_buffer = "64KiB"

[[flows]]
name = "reno"
kind = "tcp"
path = "pa"
algorithm = "reno"
count = 2

[[flows]]
name = "cubic"
kind = "tcp"
path = "pb"
algorithm = "cubic"
send_jitter = 0
"#;

/// Allocations and simulated data packets while running from the current time to `t`.
fn phase(sim: &mut Simulation, t: u64) -> (u64, u64) {
    let (a0, p0) = (allocs(), sim.data_packets());
    sim.run_until(t);
    (allocs() - a0, sim.data_packets() - p0)
}

#[test]
fn steady_state_allocates_nothing_per_packet() {
    let sc = Scenario::from_toml_str(SCENARIO, "no_alloc").unwrap_or_else(|e| panic!("{e}"));
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

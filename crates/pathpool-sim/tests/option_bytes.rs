//! `flows.option_bytes`: TCP options beyond the timestamps shorten every data segment's payload
//! and keep its wire size. Checked against hand computations on lossless paths, where every
//! byte the link carries is accounted for.

mod common;

use common::{header, link, metrics, mptcp_flow, path, scenario, tcp_flow};
use pathpool_sim::{run, FlowRecord, Scenario};

const MSS: u64 = 1448;
/// IPv4 20 + TCP 20 + timestamps 12 (`pathpool_sim::packet::HEADER_BYTES`).
const HEADER: u64 = 52;

/// Wire bytes the flow's subflows sent, recovered from its throughput over its interval.
fn wire_bytes(f: &FlowRecord) -> f64 {
    f.throughput_bps * (f.end_s - f.start_s) / 8.0
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 * want.max(1.0),
        "{what}: {got} against {want}"
    );
}

/// One Reno bulk flow over one 10 Mbit/s link with a 1000-packet queue, `flow` its extra lines.
fn reno_over(delay: &str, duration: &str, series: &str, flow: &str) -> String {
    header("one", duration)
        + series
        + &link("b", "10Mbps", delay, "1000pkt", "")
        + &path("p", &["b"], "")
        + &tcp_flow("f", "p", "reno", flow)
}

/// Through a 10 ms link whose queue never fills: the receive buffer (41-42 segments) caps the
/// window above the path's ~17-segment bandwidth-delay product, so the link is busy from the
/// first RTT to the end.
fn bulk(option_bytes: u64) -> String {
    let flow = format!("rcv_buffer = \"60000B\"\noption_bytes = {option_bytes}");
    reno_over("10ms", "\"60s\"", "", &flow)
}

#[test]
fn bulk_goodput_through_a_lossless_bottleneck_is_the_payload_share_of_the_line_rate() {
    let rate = 10e6;
    let mut goodput = Vec::new();
    for o in [0, 24] {
        let out = run(&scenario(&bulk(o)), 1).unwrap();
        let f = &out.flows[0];
        let l = &out.links[0];
        assert_eq!(l.queue_drops + l.random_drops, 0, "o = {o}: a drop");
        assert_eq!(f.retransmitted_packets, 0, "o = {o}");
        // Every segment is full: delivered bytes are whole payloads of mss - o bytes.
        assert_eq!(f.delivered_bytes, f.received_packets * (MSS - o), "o = {o}");
        // ... and every one is mss + 52 bytes on the wire, whatever o is.
        assert_close(
            wire_bytes(f),
            (f.sent_packets * (MSS + HEADER)) as f64,
            &format!("o = {o}: wire bytes"),
        );
        // R x (mss - o) / (mss + 52): the link carries nothing else. Below it by the first
        // RTT's slow start and the <= 42 segments in flight at the end (0.1% of 60 s).
        let line = rate * (MSS - o) as f64 / (MSS + HEADER) as f64;
        let share = f.goodput_bps / line;
        assert!(
            (0.998..=1.0 + 1e-12).contains(&share),
            "o = {o}: goodput {} is {share} of {line}",
            f.goodput_bps
        );
        goodput.push(f.goodput_bps);
    }
    // 1424 / 1448: the payload per full-size segment with 24 option bytes against none.
    let ratio = goodput[1] / goodput[0];
    assert!(
        (ratio - 1424.0 / 1448.0).abs() < 5e-4,
        "goodput ratio {ratio}, payload ratio {}",
        1424.0 / 1448.0
    );
}

/// A 1 MB download by a TCP flow and one by a two-path MPTCP flow, each on lossless links of
/// their own.
fn downloads(option_bytes: u64) -> String {
    let file = format!("app = \"file\"\nsize = \"1000000B\"\noption_bytes = {option_bytes}");
    header("dl", "\"30s\"")
        + &link("t", "10Mbps", "10ms", "1000pkt", "")
        + &link("m1", "10Mbps", "10ms", "1000pkt", "")
        + &link("m2", "5Mbps", "30ms", "1000pkt", "")
        + &path("pt", &["t"], "")
        + &path("p1", &["m1"], "")
        + &path("p2", &["m2"], "")
        + &tcp_flow("tcp", "pt", "reno", &file)
        + &mptcp_flow("mp", &["p1", "p2"], "lia", &file)
}

#[test]
fn a_download_takes_ceil_size_over_payload_segments_and_conserves_its_bytes() {
    let size: u64 = 1_000_000;
    for o in [0, 24] {
        let out = run(&scenario(&downloads(o)), 1).unwrap();
        let payload = MSS - o;
        // o = 0: ceil(10^6 / 1448) = 691; o = 24: ceil(10^6 / 1424) = 703.
        let n = size.div_ceil(payload);
        assert_eq!(n, if o == 0 { 691 } else { 703 });
        // All full but the last, which carries the rest (10^6 - 702 x 1424 = 352 bytes).
        let last = size - (n - 1) * payload;
        let wire = (n - 1) * (MSS + HEADER) + last + HEADER + o;
        for f in &out.flows {
            let what = format!("{} o = {o}", f.flow);
            assert!(f.completion_time_s.is_finite(), "{what}: not completed");
            assert_eq!(f.retransmitted_packets + f.reinjected_segments, 0, "{what}");
            assert_eq!(f.sent_packets, n, "{what}: segments sent");
            assert_eq!(f.received_packets, n, "{what}: segments received");
            assert_eq!(f.delivered_bytes, size, "{what}: bytes delivered");
            assert_eq!(f.integrity_errors, 0, "{what}");
            assert_close(wire_bytes(f), wire as f64, &format!("{what}: wire bytes"));
        }
        let acked: u64 = out.subflows.iter().map(|s| s.acked_bytes).sum();
        assert_eq!(
            acked,
            2 * size,
            "o = {o}: bytes acknowledged by the subflows"
        );
    }
}

/// The receive buffer stays in payload bytes: a buffer of exactly ten 1424-byte payloads lets a
/// flow with o = 24 have ten segments out, one with o = 0 nine (14240 / 1448 = 9.8), on a
/// path whose bandwidth-delay product (~167 segments) the window never reaches.
#[test]
fn the_receive_buffer_counts_payload_bytes() {
    let text = |o: u64| {
        let flow = format!("rcv_buffer = \"14240B\"\noption_bytes = {o}");
        reno_over("100ms", "\"20s\"", &metrics("10ms"), &flow)
    };
    for (o, segs) in [(0, 9.0), (24, 10.0)] {
        let out = run(&scenario(&text(o)), 1).unwrap();
        let s = &out.series;
        let most = (0..s.len())
            .filter(|&k| s.id[k] == "f/0" && s.metric[k] == "in_flight")
            .map(|k| s.value[k])
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(most, segs, "o = {o}: most segments in flight");
    }
}

/// Lossy links, an MPTCP download and a TCP bulk flow sharing one of them, sampled: a run
/// that exercises recovery, reinjection and the series.
fn lossy(option_bytes: &str) -> String {
    header("lossy", "\"20s\"")
        + &metrics("100ms")
        + &link("a", "10Mbps", "20ms", "50pkt", "loss = \"1%\"")
        + &link("b", "5Mbps", "40ms", "30pkt", "loss = \"2%\"")
        + &path("pa", &["a"], "")
        + &path("pb", &["b"], "")
        + &mptcp_flow(
            "mp",
            &["pa", "pb"],
            "olia",
            &format!("app = \"file\"\nsize = \"3MB\"\nrecovery = \"linux\"{option_bytes}"),
        )
        + &tcp_flow("t", "pa", "cubic", option_bytes)
}

#[test]
fn zero_option_bytes_written_is_the_default_run_for_run() {
    let absent = scenario(&lossy(""));
    let zero = scenario(&lossy("\noption_bytes = 0"));
    let some = scenario(&lossy("\noption_bytes = 24"));
    assert!(absent.flows.iter().all(|f| f.option_bytes == 0));
    let render = |sc: &Scenario, seed: u64| {
        let mut out = run(sc, seed).unwrap();
        out.stats.wall_s = 0.0;
        // NaN != NaN, so compare the debug rendering, which is exact for floats.
        format!("{out:?}")
    };
    for seed in [1, 2] {
        let a = render(&absent, seed);
        assert_eq!(a, render(&zero, seed), "seed {seed}");
        // The comparison can fail: option bytes do change the run.
        assert_ne!(a, render(&some, seed), "seed {seed}");
    }
}

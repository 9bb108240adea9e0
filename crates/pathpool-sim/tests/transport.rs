//! Transport rules checked end to end: window growth only while the window limits the sender,
//! and exactly-once delivery with SACK recovery under subflow-level reordering.

mod common;

use common::scenario;
use pathpool_sim::{run, RunOutput};

/// Largest sampled `cwnd` of subflow `id` ("flow/index").
fn max_cwnd(out: &RunOutput, id: &str) -> f64 {
    let s = &out.series;
    let v: Vec<f64> = (0..s.len())
        .filter(|&k| s.id[k] == id && s.metric[k] == "cwnd")
        .map(|k| s.value[k])
        .collect();
    assert!(v.len() > 100, "{id}: {} samples", v.len());
    v.into_iter().fold(f64::NEG_INFINITY, f64::max)
}

/// A TCP flow and a two-path MPTCP flow, each on links of their own, whose receive buffers
/// (20 and 40 segments) are smaller than the path windows would grow to: the receive window,
/// not the congestion window, limits them. 0.1% random loss takes them into congestion
/// avoidance now and then.
fn rwnd_limited(algorithm: &str) -> String {
    format!(
        r#"
name = "rwnd"
duration = "20s"
[metrics]
interval = "10ms"
[[links]]
name = "t"
rate = "10Mbps"
delay = "10ms"
buffer = 1000
loss = 0.001
[[links]]
name = "m1"
rate = "10Mbps"
delay = "10ms"
buffer = 1000
loss = 0.001
[[links]]
name = "m2"
rate = "10Mbps"
delay = "20ms"
buffer = 1000
loss = 0.001
[[paths]]
name = "pt"
links = ["t"]
[[paths]]
name = "p1"
links = ["m1"]
[[paths]]
name = "p2"
links = ["m2"]
[[flows]]
name = "tcp"
kind = "tcp"
path = "pt"
algorithm = "{tcp_alg}"
rcv_buffer = "{tcp_buf}B"
[[flows]]
name = "mp"
kind = "mptcp"
paths = ["p1", "p2"]
algorithm = "{algorithm}"
rcv_buffer = "{mp_buf}B"
"#,
        tcp_alg = if algorithm == "cubic" {
            "cubic"
        } else {
            "reno"
        },
        tcp_buf = 20 * 1448,
        mp_buf = 40 * 1448,
    )
}

#[test]
fn receive_window_limited_flows_do_not_inflate_their_windows() {
    for alg in ["reno", "cubic", "lia", "olia", "balia"] {
        let out = run(&scenario(&rwnd_limited(alg)), 3).unwrap();
        // Linux tcp_is_cwnd_limited: slow start grows only while cwnd < 2 * (most segments
        // outstanding in the last window) <= 2 * receive window; congestion avoidance only
        // when the window was full. One ACK adds at most one segment beyond that.
        let tcp = max_cwnd(&out, "tcp/0");
        assert!(
            tcp <= 41.0,
            "{alg}: TCP cwnd reached {tcp} with a 20-segment receive window"
        );
        for i in 0..2 {
            let w = max_cwnd(&out, &format!("mp/{i}"));
            assert!(
                w <= 81.0,
                "{alg}: subflow {i} cwnd reached {w} with a 40-segment receive buffer"
            );
        }
        // The windows still grew to what the receive window allows: the single path is
        // saturated (20 segments exceed its ~17-segment bandwidth-delay product).
        let t = out.flows.iter().find(|f| f.flow == "tcp").unwrap();
        let line_rate = 10e6 * 1448.0 / 1500.0;
        assert!(
            t.goodput_bps > 0.85 * line_rate,
            "{alg}: TCP goodput {}",
            t.goodput_bps
        );
        assert!(tcp >= 20.0, "{alg}: TCP cwnd only reached {tcp}");
        for f in &out.flows {
            assert_eq!(f.integrity_errors, 0);
        }
    }
}

const REORDERING: &str = r#"
name = "reorder"
duration = "10s"
[[links]]
name = "fwd"
rate = "10Mbps"
delay = "10ms"
buffer = 1000
reorder = { probability = "5%", extra_delay = "10ms" }
[[links]]
name = "back"
rate = "10Mbps"
delay = "10ms"
buffer = 1000
reorder = { probability = 0.2, extra_delay = "3ms" }
[[paths]]
name = "p"
links = ["fwd"]
ack_links = ["back"]
[[flows]]
name = "f"
kind = "tcp"
path = "p"
app = "file"
size = "2MB"
"#;

#[test]
fn reordering_without_loss_gives_spurious_retransmissions_but_exact_delivery() {
    let sc = scenario(REORDERING);
    let out = run(&sc, 1).unwrap();
    let f = &out.flows[0];
    let drops: u64 = out
        .links
        .iter()
        .map(|l| l.queue_drops + l.random_drops)
        .sum();
    assert_eq!(drops, 0);
    assert_eq!(f.integrity_errors, 0);
    assert_eq!(f.delivered_bytes, 2_000_000);
    assert!(f.completion_time_s.is_finite());
    // A segment held back 10 ms at 10 Mb/s (1.2 ms per packet) is overtaken by about eight:
    // three SACKed segments above it make RFC 6675 declare it lost, and its retransmission
    // (or the original) arrives twice. Nothing was dropped, so every retransmission is spurious.
    assert!(
        f.retransmitted_packets > 0 && f.duplicate_segments > 0,
        "{f:?}"
    );
    assert_eq!(f.sent_packets, f.received_packets + f.in_flight_packets);
    // Deterministic.
    let again = run(&sc, 1).unwrap();
    assert_eq!(format!("{:?}", again.flows), format!("{:?}", out.flows));
}

/// Mean sampled `cwnd` of subflow `id` over the second half of the run.
fn mean_cwnd_late(out: &RunOutput, id: &str) -> f64 {
    let s = &out.series;
    let v: Vec<f64> = (0..s.len())
        .filter(|&k| s.id[k] == id && s.metric[k] == "cwnd")
        .map(|k| s.value[k])
        .collect();
    let late = &v[v.len() / 2..];
    late.iter().sum::<f64>() / late.len() as f64
}

#[test]
fn delayed_acks_cost_reno_a_factor_sqrt2_in_window_only_under_ack_counting() {
    // Reno under random loss p has mean window sqrt(3/(2 b p)) segments per RTT of b segments
    // per ACK-step (Mathis et al. 1997): ack counting with delayed ACKs (b = 2) gives 1/sqrt 2
    // of byte counting's window (every segment credited, b = 1). Large buffer, so random
    // loss is the only loss; 4 seeds averaged.
    let text = |counting: &str| {
        format!(
            r#"
name = "dack"
duration = "120s"
seeds = [1, 2, 3, 4]
[metrics]
interval = "50ms"
[[links]]
name = "l"
rate = "100Mbps"
delay = "10ms"
buffer = 100000
loss = 0.002
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "t"
kind = "tcp"
path = "p"
algorithm = "reno"
delayed_ack = true
counting = "{counting}"
"#
        )
    };
    let mean = |counting: &str| {
        let sc = scenario(&text(counting));
        let seeds = sc.seeds().to_vec();
        seeds
            .iter()
            .map(|&s| mean_cwnd_late(&run(&sc, s).unwrap(), "t/0"))
            .sum::<f64>()
            / seeds.len() as f64
    };
    let (bytes, acks) = (mean("bytes"), mean("acks"));
    let ratio = bytes / acks;
    assert!(
        (1.25..1.6).contains(&ratio),
        "bytes {bytes:.2} / acks {acks:.2} = {ratio:.3}, expected about sqrt 2"
    );
}

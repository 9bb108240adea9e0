//! Transport rules checked end to end: window growth only while the window limits the sender,
//! and exactly-once delivery with SACK recovery under subflow-level reordering.

mod common;

use common::{header, link, metrics, mptcp_flow, path, scenario, tcp_flow};
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
    let lossy = "loss = 0.001";
    let tcp_alg = if algorithm == "cubic" {
        "cubic"
    } else {
        "reno"
    };
    let (tcp_buf, mp_buf) = (20 * 1448, 40 * 1448);
    header("rwnd", "\"20s\"")
        + &metrics("10ms")
        + &link("t", "10Mbps", "10ms", "1000pkt", lossy)
        + &link("m1", "10Mbps", "10ms", "1000pkt", lossy)
        + &link("m2", "10Mbps", "20ms", "1000pkt", lossy)
        + &path("pt", &["t"], "")
        + &path("p1", &["m1"], "")
        + &path("p2", &["m2"], "")
        + &tcp_flow(
            "tcp",
            "pt",
            tcp_alg,
            &format!("rcv_buffer = \"{tcp_buf}B\""),
        )
        + &mptcp_flow(
            "mp",
            &["p1", "p2"],
            algorithm,
            &format!("rcv_buffer = \"{mp_buf}B\""),
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

/// A 2 MB download over a link that holds back 5% of the data packets by 10 ms, with ACKs
/// over a link that holds back 20% by 3 ms: reordering, no loss.
fn reordering() -> String {
    header("reorder", "\"10s\"")
        + &link(
            "fwd",
            "10Mbps",
            "10ms",
            "1000pkt",
            "reorder = { probability = \"5%\", extra_delay = \"10ms\" }",
        )
        + &link(
            "back",
            "10Mbps",
            "10ms",
            "1000pkt",
            "reorder = { probability = 0.2, extra_delay = \"3ms\" }",
        )
        + &path("p", &["fwd"], "ack_links = [\"back\"]")
        + &tcp_flow("f", "p", "", "app = \"file\"\nsize = \"2MB\"")
}

#[test]
fn reordering_without_loss_gives_spurious_retransmissions_but_exact_delivery() {
    let sc = scenario(&reordering());
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
        header("dack", "\"120s\"\nseeds = [1, 2, 3, 4]")
            + &metrics("50ms")
            + &link("l", "100Mbps", "10ms", "100000pkt", "loss = 0.002")
            + &path("p", &["l"], "")
            + &tcp_flow(
                "t",
                "p",
                "reno",
                &format!("delayed_ack = true\ncounting = \"{counting}\""),
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

#[test]
fn linux_delayed_acks_quick_ack_sixteen_segments_then_every_second() {
    // A loss-free file download: Linux's receiver ACKs each of the first 16 segments (quick-ACK
    // mode: min(65,535 / (2 x 1,448), 16)), then once more than one full segment is unACKed,
    // and a lone last segment when its timer fires. The sender never waits on a lone segment
    // here (slow start from 10 segments has sent the whole file by the 16th ACK), so:
    // 17 segments: 16 + 1 (timer); 18: 16 + 1; 40: 16 + 24 / 2. `true`: one per 2 (and a
    // lone one); `false`: one per segment.
    let acks = |segs: u64, policy: &str| {
        let text = header("dl", "\"10s\"")
            + &link("l", "10Mbps", "10ms", "1000pkt", "")
            + &path("p", &["l"], "")
            + &tcp_flow(
                "t",
                "p",
                "reno",
                &format!(
                    "app = \"file\"\nsize = {}\ndelayed_ack = {policy}",
                    segs * 1448
                ),
            );
        let out = run(&scenario(&text), 1).unwrap();
        assert_eq!(out.flows[0].received_packets, segs);
        out.flows[0].ack_packets
    };
    assert_eq!(acks(17, "\"linux\""), 17);
    assert_eq!(acks(18, "\"linux\""), 17);
    assert_eq!(acks(40, "\"linux\""), 28);
    assert_eq!(acks(40, "true"), 20);
    assert_eq!(acks(40, "false"), 40);
}

#[test]
fn linux_delayed_acks_ack_out_of_order_data_at_once() {
    // Segments reordered (5 ms extra delay for 30% of them): segments above a hole and
    // those filling it are ACKed at once, so there are more ACKs than in-order pairs would
    // give, and the download completes with every segment delivered once.
    let text = |policy: &str| {
        header("ro", "\"20s\"")
            + &link(
                "l",
                "10Mbps",
                "10ms",
                "1000pkt",
                "reorder = { probability = 0.3, extra_delay = \"5ms\" }",
            )
            + &path("p", &["l"], "")
            + &tcp_flow(
                "t",
                "p",
                "reno",
                &format!(
                    "app = \"file\"\nsize = {}\ndelayed_ack = {policy}",
                    400 * 1448
                ),
            )
    };
    let in_order = run(
        &scenario(&text("\"linux\"").replace("probability = 0.3", "probability = 0")),
        1,
    )
    .unwrap();
    let reordered = run(&scenario(&text("\"linux\"")), 1).unwrap();
    let (a, b) = (&in_order.flows[0], &reordered.flows[0]);
    assert_eq!(a.ack_packets, 16 + (400 - 16) / 2);
    assert!(
        b.ack_packets > a.ack_packets + 50,
        "{} vs {}",
        b.ack_packets,
        a.ack_packets
    );
    assert!(b.completion_time_s.is_finite());
}

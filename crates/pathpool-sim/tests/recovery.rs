//! `recovery = "linux"` (RACK-TLP and PRR, `src/conn/recovery.rs`) end to end: a tail loss repaired
//! by a loss probe instead of a timeout, to the microsecond of a hand computation; exactly-once
//! delivery and determinism under random loss and reordering; the option's validation.

mod common;

use common::{header, link, mptcp_flow, path, scenario, tcp_flow};
use pathpool_sim::{run, RunOutput, Scenario};

/// A 10-segment file (the initial window) into a 10 Mbps link whose 8-packet buffer drops
/// the last two segments of the burst; one-way delays 50 ms each way, no send jitter.
fn tail(recovery: &str) -> String {
    header("tail", "\"10s\"")
        + &link("l", "10Mbps", "50ms", "8 packets", "")
        + &path("p", &["l"], "ack_delay = \"50ms\"")
        + &tcp_flow(
            "f",
            "p",
            "reno",
            &format!(
                "app = \"file\"\nsize = \"14480B\"\nsend_jitter = 0\nrecovery = \"{recovery}\""
            ),
        )
}

fn ms(out: &RunOutput) -> f64 {
    out.flows[0].completion_time_s * 1e3
}

#[test]
fn tail_loss_is_repaired_by_a_probe_not_a_timeout() {
    // Hand computation. A 1500-byte packet takes 1.2 ms at 10 Mbps; segments 0..7 are
    // queued, 8 and 9 dropped. Segment k reaches the receiver at 1.2 (k + 1) + 50 ms and its
    // ACK the sender at 100 + 1.2 (k + 1) ms: RTT samples 101.2, 102.4, ..., 109.6 ms.
    // Linux's estimator (srtt_us x 8: 809600, then += m - srtt/8 per sample) ends at
    // srtt_us = 835990 after the last ACK (t = 109.6 ms); rttvar keeps its first value
    // 2 x 101.2 = 202.4 ms (no window has been acknowledged to decay it), so RTO = 104.498 +
    // 202.4 ms -> 307 jiffies.
    //
    // rfc6675: no SACK ever arrives; the RTO fires at 109.6 + 307 = 416.6 ms, segment 8 goes
    // again (cwnd 1) and its ACK at 517.8 ms releases 9, which arrives at 517.8 + 51.2 =
    // 569.0 ms.
    let out = run(&scenario(&tail("rfc6675")), 1).unwrap();
    let f = &out.flows[0];
    assert_eq!((f.rto_count, f.retransmitted_packets), (1, 2));
    assert!((ms(&out) - 569.0).abs() < 1e-6, "{}", ms(&out));
    // linux: after the last ACK the probe timer is 2 srtt = 835990 >> 2 = 208997 us -> 209
    // jiffies, + TCP_TIMEOUT_MIN 2 ms (two segments outstanding) = 211 ms (< the RTO). At
    // 320.6 ms the probe retransmits the last segment, 9 (no new data: the file is sent).
    // Its SACK returns at 421.8 ms: RACK (one segment SACKed, so a reordering window of
    // min_rtt / 4 = 25.3 ms) finds 8, sent at 0, overdue since 101.2 + 25.3 ms: lost.
    // Recovery, PRR: pipe 0 < ssthresh, sndcnt = max(delivered 1 - prr_out 0, 1) = 1:
    // segment 8 goes at once and arrives at 421.8 + 51.2 = 473.0 ms. No timeout.
    let out = run(&scenario(&tail("linux")), 1).unwrap();
    let f = &out.flows[0];
    assert_eq!((f.rto_count, f.retransmitted_packets), (0, 2));
    assert_eq!(out.subflows[0].loss_events, 1);
    assert!((ms(&out) - 473.0).abs() < 1e-6, "{}", ms(&out));
}

/// Two MPTCP connections over two lossy paths, the second of which reorders, and a TCP
/// flow with delayed ACKs on it; file downloads, so delivery must be complete and exactly once.
fn lossy(recovery: &str) -> Scenario {
    let r = format!("recovery = \"{recovery}\"");
    scenario(
        &(header("lossy", "\"600s\"")
            + &link("a", "10Mbps", "60ms", "100 packets", "loss = 0.05")
            + &link(
                "b",
                "5Mbps",
                "20ms",
                "50 packets",
                "loss = 0.02\nreorder = { probability = 0.05, extra_delay = \"5ms\" }",
            )
            + &path("pa", &["a"], "")
            + &path("pb", &["b"], "")
            + &mptcp_flow(
                "m",
                &["pa", "pb"],
                "lia",
                &format!("app = \"file\"\nsize = \"10MB\"\ncount = 2\n{r}"),
            )
            + &tcp_flow(
                "t",
                "pb",
                "cubic",
                &format!("app = \"file\"\nsize = \"2MB\"\ndelayed_ack = true\n{r}"),
            )),
    )
}

#[test]
fn random_loss_and_reordering_deliver_exactly_once_and_deterministically() {
    let sc = lossy("linux");
    let a = run(&sc, 3).unwrap();
    let b = run(&sc, 3).unwrap();
    assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    assert_eq!(format!("{:?}", a.subflows), format!("{:?}", b.subflows));
    let base = run(&lossy("rfc6675"), 3).unwrap();
    let (mut rto_linux, mut rto_base) = (0, 0);
    for (f, g) in a.flows.iter().zip(&base.flows) {
        let size = if f.flow.starts_with('m') {
            10_000_000
        } else {
            2_000_000
        };
        assert!(
            f.completion_time_s.is_finite(),
            "{} did not complete",
            f.flow
        );
        assert_eq!(f.delivered_bytes, size, "{}", f.flow);
        assert_eq!(f.integrity_errors, 0);
        // Conservation: every data packet sent was received, dropped or is still in flight.
        assert_eq!(
            f.sent_packets,
            f.received_packets + f.dropped_packets + f.in_flight_packets,
            "{}",
            f.flow
        );
        rto_linux += f.rto_count;
        rto_base += g.rto_count;
    }
    // RACK repairs lost retransmissions and TLP tail losses that RFC 6675 leaves to the
    // timer: far fewer timeouts on the same network and seed.
    assert!(
        rto_linux * 3 < rto_base,
        "linux {rto_linux}, rfc6675 {rto_base}"
    );
}

#[test]
fn unknown_recovery_names_field_and_allowed_values() {
    let text = tail("newreno");
    let e = Scenario::from_toml_str(&text, "bad.toml").unwrap_err();
    assert_eq!(e.field, "flows[0].recovery");
    assert_eq!(e.allowed.as_deref(), Some("rfc6675, linux"));
    assert!(e.to_string().starts_with("bad.toml:"), "{e}");
    // A rate flow has no window to recover.
    let rate = header("r", "\"1s\"")
        + &link("l", "10Mbps", "10ms", "100 packets", "")
        + &path("p", &["l"], "")
        + "[[flows]]\nname = \"f\"\nkind = \"rate\"\npaths = [\"p\"]\nrates = [100]\nrecovery = \"linux\"\n";
    let e = Scenario::from_toml_str(&rate, "rate.toml").unwrap_err();
    assert_eq!(e.field, "flows[0].recovery");
}

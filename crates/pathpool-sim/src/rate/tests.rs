use super::*;
use crate::time::NS_PER_MS;
use crate::Simulation;

fn sim(text: &str, seed: u64) -> Simulation {
    let sc = Scenario::from_toml_str(text, "<test>").expect("valid scenario");
    Simulation::new(&sc, seed).expect("builds")
}

const ONE_PATH: &str = r#"
    name = "pacing"
    duration = "10s"
    [[links]]
    name = "a"
    rate = "1Gbps"
    delay = "10ms"
    [[paths]]
    name = "pa"
    links = ["a"]
    [[flows]]
    name = "s"
    kind = "rate"
    paths = ["pa"]
    rates = [137.3]
    send_jitter = 0
"#;

/// Over any stretch `T` a path sends `x T` packets within one, also across a rate change.
#[test]
fn pacing_sends_rate_times_time_within_one_packet() {
    let mut s = sim(ONE_PATH, 1);
    s.run_until(4 * NS_PER_SEC);
    let a = s.rate_feedback("s").unwrap().sender_sent[0];
    assert!(
        (a as f64 - 137.3 * 4.0).abs() <= 1.0,
        "sent {a} in 4 s at 137.3/s"
    );
    s.set_rates("s", &[55.5], 5).unwrap();
    s.run_until(10 * NS_PER_SEC);
    let b = s.rate_feedback("s").unwrap().sender_sent[0];
    assert!(
        (b as f64 - 55.5 * 6.0).abs() <= 1.0,
        "sent {b} in 6 s at 55.5/s"
    );
    // A path set to 0 stops, and restarts when given a rate again.
    let out = s.finish();
    assert_eq!(out.flows[0].sent_packets, a + b);
    assert_eq!(out.flows[0].kind, "rate");
    assert_eq!(out.flows[0].algorithm, "fixed"); // controller label defaults to fixed
}

#[test]
fn a_path_at_rate_zero_is_silent_until_restarted() {
    let mut s = sim(ONE_PATH, 1);
    s.run_until(NS_PER_SEC);
    s.set_rates("s", &[0.0], 5).unwrap();
    s.rate_feedback("s").unwrap();
    s.run_until(3 * NS_PER_SEC);
    assert_eq!(s.rate_feedback("s").unwrap().sender_sent[0], 0);
    s.set_rates("s", &[200.0], 5).unwrap();
    s.run_until(5 * NS_PER_SEC);
    let n = s.rate_feedback("s").unwrap().sender_sent[0];
    assert!((n as f64 - 400.0).abs() <= 1.0, "{n}");
}

const TWO_PATHS: &str = r#"
    name = "losses"
    duration = "10s"
    [[links]]
    name = "lossy"
    rate = "100Mbps"
    delay = "20ms"
    loss = "5%"
    [[links]]
    name = "narrow"
    rate = "2Mbps"
    delay = "30ms"
    buffer = 20
    [[paths]]
    name = "p1"
    links = ["lossy"]
    [[paths]]
    name = "p2"
    links = ["narrow"]
    ack_delay = "5ms"
    [[flows]]
    name = "s"
    kind = "rate"
    paths = ["p1", "p2"]
    rates = [400, 250]
    stop = "8s"
    block_length = 8
    source_per_block = 6
"#;

/// The receiver's per-path losses (sequence gaps) are exactly the link's drops, apart from
/// drops after the last arrival, which no gap can reveal.
#[test]
#[allow(clippy::needless_range_loop)]
fn losses_per_path_equal_link_drops() {
    let sc = Scenario::from_toml_str(TWO_PATHS, "<test>").unwrap();
    let mut s = Simulation::new(&sc, 3).unwrap();
    s.run_until(sc.duration);
    let fl = s.world.rate_flows().next().expect("a rate flow").1;
    let mut trailing = [0u64; 2];
    for r in 0..2 {
        // Everything was sent by 8 s and has arrived or been dropped by 10 s.
        trailing[r] = fl.tx[r].sent - fl.rx.counters[r].sent;
        assert_eq!(
            fl.rx.counters[r].lost + trailing[r],
            fl.tx[r].dropped,
            "path {r}"
        );
        assert_eq!(
            fl.rx.counters[r].arrived + fl.tx[r].dropped,
            fl.tx[r].sent,
            "path {r}"
        );
    }
    let out = s.finish();
    let link = |n: &str| out.links.iter().find(|l| l.link == n).unwrap().clone();
    let (lossy, narrow) = (link("lossy"), link("narrow"));
    assert!(
        lossy.random_drops > 50 && narrow.queue_drops > 50,
        "both paths must lose: {lossy:?} {narrow:?}"
    );
    let sub = |r: usize| {
        out.subflows
            .iter()
            .find(|x| x.flow == "s" && x.subflow == r as u32)
            .unwrap()
            .clone()
    };
    assert_eq!(
        sub(0).lost_packets + trailing[0],
        lossy.random_drops + lossy.queue_drops
    );
    assert_eq!(
        sub(1).lost_packets + trailing[1],
        narrow.random_drops + narrow.queue_drops
    );
    let f = &out.flows[0];
    assert_eq!(f.in_flight_packets, 0);
    assert_eq!(f.integrity_errors, 0);
    assert_eq!(f.sent_packets, f.received_packets + f.dropped_packets);
}

/// The FEC rule, by hand: a block decodes when >= k of its n packets arrive in time; then
/// all its k source packets count, else only its in-time source packets.
#[test]
fn fec_block_decoding_rule() {
    let d = 100 * NS_PER_MS;
    let mut rx = RateReceiver::new(1, d);
    let ms = NS_PER_MS;
    let mut seq = 0;
    let mut pkt = |rx: &mut RateReceiver, block: u64, index: u32, sent: Nanos, arrive: Nanos| {
        let it = rx.on_packet(0, seq, block, index, 2, 1000, sent * ms, arrive * ms, 0);
        seq += 1;
        it
    };
    // n = 4, k = 2. Block 0: only the two repair packets in time -> decodes: 2 source.
    pkt(&mut rx, 0, 2, 2, 50);
    pkt(&mut rx, 0, 3, 3, 60);
    // Block 1: source 0 in time, source 1 late (101 ms), repair lost -> 1 source.
    assert!(pkt(&mut rx, 1, 0, 4, 70));
    // Block 0 settles 100 ms after the first packet of block 1 was sent (4 ms): not at 104.
    rx.settle(104 * ms);
    assert_eq!(rx.settled_blocks, 0);
    assert!(!pkt(&mut rx, 1, 1, 5, 106));
    assert_eq!((rx.settled_blocks, rx.decoded_source), (1, 2));
    // Block 2: source 0 in time, repair 2 in time -> 2 in time = k: decodes -> 2 source.
    assert!(pkt(&mut rx, 2, 0, 30, 120));
    assert!(pkt(&mut rx, 2, 2, 32, 130));
    // Block 3: one repair packet in time: nothing.
    assert!(pkt(&mut rx, 3, 3, 45, 140));
    rx.settle_all();
    assert_eq!((rx.settled_blocks, rx.decoded_source), (4, 2 + 1 + 2));
    assert_eq!(rx.counters[0].late, 1);
    assert_eq!(rx.counters[0].lost, 0);
    assert_eq!(rx.integrity_errors, 0);
    // A late packet of a settled block changes nothing and is no error; an in-time one is.
    let late = rx.on_packet(0, seq, 0, 1, 2, 1000, 0, 200 * ms, 0);
    assert!(!late);
    assert_eq!(rx.integrity_errors, 0);
}

/// TFRC loss events by hand (RFC 5348 section 5.2): packets every 10 ms, one-way delay
/// 50 ms (so the RTT is 50 ms with a zero return delay).
#[test]
fn loss_events_follow_rfc5348() {
    let ms = NS_PER_MS;
    let mut rx = RateReceiver::new(1, 300 * ms);
    let arrive = |rx: &mut RateReceiver, seq: u64| {
        rx.on_packet(
            0,
            seq,
            seq / 10,
            (seq % 10) as u32,
            10,
            1000,
            seq * 10 * ms,
            (seq * 10 + 50) * ms,
            0,
        );
    };
    arrive(&mut rx, 0);
    // 1 and 2 lost (sent at 10 and 20 ms, interpolated): one event starting at 10 ms.
    arrive(&mut rx, 3);
    assert_eq!((rx.counters[0].lost, rx.counters[0].loss_events), (2, 1));
    arrive(&mut rx, 4);
    arrive(&mut rx, 5);
    arrive(&mut rx, 6);
    // 7 lost (sent at 70 ms > 10 + 50): a new event.
    arrive(&mut rx, 8);
    // 9 lost (90 ms <= 70 + 50): same event.
    arrive(&mut rx, 10);
    assert_eq!((rx.counters[0].lost, rx.counters[0].loss_events), (4, 2));
    // 13 lost (130 ms > 70 + 50): new event.
    arrive(&mut rx, 11);
    arrive(&mut rx, 12);
    arrive(&mut rx, 14);
    assert_eq!(
        (
            rx.counters[0].lost,
            rx.counters[0].loss_events,
            rx.counters[0].sent
        ),
        (5, 3, 15)
    );
}

/// Time series of a rate flow: per-interval goodput and wire bytes add up to the run's
/// totals, `rate_pps` follows `set_rates`, and sampling changes no result.
#[test]
fn time_series_add_up_and_change_nothing() {
    let text = TWO_PATHS.replacen("[[links]]", "[metrics]\ninterval = \"100ms\"\n[[links]]", 1);
    let run = |text: &str| {
        let mut s = sim(text, 2);
        s.run_until(4 * NS_PER_SEC);
        s.set_rates("s", &[300.0, 250.0], 6).unwrap();
        s.finish()
    };
    let (plain, out) = (run(TWO_PATHS), run(&text));
    assert!(plain.series.is_empty());
    assert_eq!(
        format!("{:?}{:?}", out.flows, out.subflows),
        format!("{:?}{:?}", plain.flows, plain.subflows)
    );
    let ser = &out.series;
    let pick = |id: &str, metric: &str| -> Vec<(f64, f64)> {
        (0..ser.len())
            .filter(|&k| ser.id[k] == id && ser.metric[k] == metric)
            .map(|k| (ser.time_s[k], ser.value[k]))
            .collect()
    };
    let good = pick("s", "goodput_bps");
    assert_eq!(good.len(), 100);
    // By the last sample (stop 8 s + deadline 0.3 s < 10 s) every block is decided except
    // the one the stop cut short, which stays open until the end of the run.
    let decoded = good.iter().map(|(_, v)| v * 0.1 / 8.0).sum::<f64>().round() as u64;
    let open = out.flows[0].delivered_bytes - decoded;
    assert!(
        open.is_multiple_of(1448) && open <= 8 * 1448,
        "{decoded} of {}",
        out.flows[0].delivered_bytes
    );
    for (r, sub) in out.subflows.iter().enumerate() {
        let id = format!("s/{r}");
        let wire: f64 = pick(&id, "throughput_bps")
            .iter()
            .map(|(_, v)| v * 0.1 / 8.0)
            .sum();
        let total = sub.throughput_bps * 8.0 / 8.0; // bit/s over the 8 s the flow ran, in bytes
        assert!(
            (wire - total).abs() < 1e-6 * total,
            "path {r}: {wire} vs {total}"
        );
        for (t, x) in pick(&id, "rate_pps") {
            let expect = if r == 0 && t > 4.0 {
                300.0
            } else if r == 0 {
                400.0
            } else {
                250.0
            };
            assert_eq!(x, expect, "path {r} at {t}");
        }
    }
}

/// With no loss, goodput is exactly the source share k/n of what arrived.
#[test]
fn lossless_goodput_is_the_source_share() {
    let text = ONE_PATH.replace(
        "rates = [137.3]",
        "rates = [100]\nblock_length = 10\nsource_per_block = 7\nstop = \"9s\"",
    );
    let out = sim(&text, 1).finish();
    let f = &out.flows[0];
    assert_eq!(f.dropped_packets, 0);
    // Packets at 0, 10 ms, ..., 8.99 s (the stop at 9 s comes before the slot at 9 s).
    assert_eq!(f.sent_packets, 900);
    assert_eq!(f.delivered_bytes, 90 * 7 * 1448);
}

/// Feedback conservation: summed over all calls, what the sender got equals the receiver's
/// counters at the last report it received; each report arrives one return delay after it
/// was made; `sent = arrived + lost` per path.
#[test]
#[allow(clippy::needless_range_loop)]
fn feedback_counters_are_conserved_and_delayed() {
    let sc = Scenario::from_toml_str(TWO_PATHS, "<test>").unwrap();
    let mut s = Simulation::new(&sc, 5).unwrap();
    // Reports go back on p2's return route (5 ms, the shortest) every second from t = 1 s.
    assert!((s.rate_info("s").unwrap().report_delay_s - 0.005).abs() < 1e-4);
    s.run_until(NS_PER_SEC + 4 * NS_PER_MS);
    assert_eq!(s.rate_feedback("s").unwrap().reports, 0);
    s.run_until(NS_PER_SEC + 6 * NS_PER_MS);
    let first = s.rate_feedback("s").unwrap();
    assert_eq!(first.reports, 1);
    assert_eq!(first.report_made_s, 1.0);
    let mut total = first.paths.clone();
    let mut decoded = first.decoded_source;
    let mut t = NS_PER_SEC + 6 * NS_PER_MS;
    while t < sc.duration {
        t += 300 * NS_PER_MS;
        s.run_until(t);
        let fb = s.rate_feedback("s").unwrap();
        for (a, b) in total.iter_mut().zip(&fb.paths) {
            assert_eq!(b.sent, b.arrived + b.lost);
            a.sent += b.sent;
            a.lost += b.lost;
            a.arrived += b.arrived;
            a.late += b.late;
            a.rtt_sum += b.rtt_sum;
            a.delay_sum += b.delay_sum;
        }
        decoded += fb.decoded_source;
    }
    let fl = s.world.rate_flows().next().expect("a rate flow").1;
    let last = &fl.delivered;
    assert_eq!(last.made_at, 9 * NS_PER_SEC); // the 10 s report is made at the end, never arrives
    for r in 0..2 {
        let (a, b) = (&total[r], &last.paths[r]);
        assert_eq!(
            (a.sent, a.lost, a.arrived, a.late),
            (b.sent, b.lost, b.arrived, b.late)
        );
        assert!((a.rtt_sum - b.rtt_sum).abs() < 1e-9 * b.rtt_sum.max(1.0));
        assert!((a.delay_sum - b.delay_sum).abs() < 1e-9 * b.delay_sum.max(1.0));
        // RTT = one-way delay + the return route's delay: 20+20 ms on p1, 30+5 ms + queueing on p2.
        assert!(b.rtt_sum / b.arrived as f64 >= 0.040 - 1e-6);
    }
    assert!((total[0].rtt_sum / total[0].arrived as f64 - 0.040).abs() < 1e-3);
    assert_eq!(decoded, last.decoded_source);
    assert_eq!(fl.reports_sent, 10);
}

#[test]
fn same_seed_same_output() {
    let sc = Scenario::from_toml_str(TWO_PATHS, "<test>").unwrap();
    let mut a = crate::run(&sc, 9).unwrap();
    let mut b = crate::run(&sc, 9).unwrap();
    a.stats.wall_s = 0.0;
    b.stats.wall_s = 0.0;
    // Debug text, because NaN fields (completion time, mean cwnd) are never == themselves.
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn rate_fields_are_validated_with_field_names() {
    let err = |from: &str, to: &str| {
        let text = ONE_PATH.replace(from, to);
        assert_ne!(text, ONE_PATH, "replacement {from:?} did nothing");
        Scenario::from_toml_str(&text, "<test>").unwrap_err()
    };
    let e = err("rates = [137.3]", "rates = [1, 2]");
    assert_eq!(e.field, "flows[0].rates");
    let e = err("rates = [137.3]", "rates = [\"fast\"]");
    assert_eq!(e.field, "flows[0].rates[0]");
    let e = err("rates = [137.3]", "rates = [0]");
    assert!(e.message.contains("all rates are 0"));
    // Controller labels belong to the caller (Python's pathpool.ratecontrol), which lists them.
    let text = ONE_PATH.replace("send_jitter = 0", "send_jitter = 0\ncontroller = \"pid\"");
    let labels = crate::config::Options {
        rate_controllers: Some(vec!["fixed".into(), "mptcp".into()]),
        ..Default::default()
    };
    let e = Scenario::from_toml_str_with(&text, "<test>", &labels).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.allowed.as_deref()),
        ("flows[0].controller", Some("fixed, mptcp"))
    );
    assert!(Scenario::from_toml_str(&text, "<test>").is_ok());
    let e = err(
        "send_jitter = 0",
        "send_jitter = 0\nblock_length = 4\nsource_per_block = 5",
    );
    assert_eq!(e.field, "flows[0].source_per_block");
    let e = err("send_jitter = 0", "send_jitter = 0\ndeadline = 0");
    assert_eq!(e.field, "flows[0].deadline");
    let e = err("send_jitter = 0", "send_jitter = 0\nalgorithm = \"lia\"");
    assert_eq!(e.field, "flows[0].algorithm");
    let e = err("send_jitter = 0", "send_jitter = 0\napp = \"file\"");
    assert_eq!(e.field, "flows[0].app");
    let e = err("rates = [137.3]", "");
    assert_eq!(e.field, "flows[0].rates");
    let tcp = ONE_PATH.replace("kind = \"rate\"", "kind = \"tcp\"");
    let e = Scenario::from_toml_str(&tcp, "<test>").unwrap_err();
    assert_eq!(e.field, "flows[0].rates");
    assert!(e.message.contains("only to kind"));
}

#[test]
fn bad_driver_input_is_an_error_not_a_panic() {
    let mut s = sim(ONE_PATH, 1);
    assert!(s
        .set_rates("nope", &[1.0], 1)
        .unwrap_err()
        .message
        .contains("no rate flow named \"nope\""));
    assert!(s.set_rates("s", &[1.0, 2.0], 1).is_err());
    assert!(s.set_rates("s", &[f64::NAN], 1).is_err());
    assert!(s.set_rates("s", &[-1.0], 1).is_err());
    assert!(s.set_rates("s", &[1.0], 0).is_err());
    assert!(s.set_rates("s", &[1.0], 11).is_err()); // block length 10
    assert!(s.set_rates("s", &[1.0], 10).is_ok());
}

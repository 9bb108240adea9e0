//! Bad scenario files give errors naming file, line, field and allowed values.

use pathpool_sim::config::AckRoute;
use pathpool_sim::{ConfigError, Scenario};

const GOOD: &str = r#"name = "ok"
duration = "2s"
seeds = [1, 2]
[[links]]
name = "l"
rate = "10Mbps"
delay = "10ms"
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
kind = "tcp"
path = "p"
algorithm = "reno"
"#;

fn err(text: &str) -> ConfigError {
    match Scenario::from_toml_str(text, "bad.toml") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn good_file_parses_with_units_and_defaults() {
    let sc = Scenario::from_toml_str(GOOD, "good.toml").unwrap();
    assert_eq!(sc.name(), "ok");
    assert_eq!(sc.seeds(), &[1, 2]);
    assert_eq!(sc.duration_s(), 2.0);
    assert_eq!(sc.links[0].rate_bps, 10_000_000);
    assert_eq!(sc.links[0].delay, 10_000_000);
    assert_eq!(sc.flows[0].mss, 1448);
    assert_eq!(sc.flows[0].rcv_buffer, 4 * 1024 * 1024);
}

#[test]
fn unknown_field_names_line_field_and_allowed() {
    let text = GOOD.replace("delay = \"10ms\"", "delay = \"10ms\"\nlatency = 3");
    let e = err(&text);
    assert_eq!(e.origin, "bad.toml");
    assert_eq!(e.line, Some(8));
    assert_eq!(e.field, "links[0].latency");
    let allowed = e.allowed.clone().unwrap();
    assert!(
        allowed.contains("rate") && allowed.contains("buffer"),
        "{allowed}"
    );
    let shown = e.to_string();
    assert!(shown.starts_with("bad.toml:8:"), "{shown}");
    assert!(shown.contains("links[0].latency"), "{shown}");
}

#[test]
fn unknown_algorithm_lists_the_catalogue() {
    let e = err(&GOOD.replace("algorithm = \"reno\"", "algorithm = \"vegas\""));
    assert_eq!(e.field, "flows[0].algorithm");
    assert_eq!(e.line, Some(15));
    let allowed = e.allowed.unwrap();
    assert!(
        allowed.contains("lia") && allowed.contains("reno"),
        "{allowed}"
    );
}

#[test]
fn bad_algorithm_parameter_names_the_parameter() {
    let e = err(&GOOD.replace(
        "algorithm = \"reno\"",
        "algorithm = \"ewtcp\"\nparams = { weight = 2 }",
    ));
    assert_eq!(e.field, "flows[0].params.weight");
    assert!(e.allowed.unwrap().contains('a'));
}

#[test]
fn bad_units_and_references() {
    let e = err(&GOOD.replace("\"10Mbps\"", "\"10 furlongs\""));
    assert_eq!((e.field.as_str(), e.line), ("links[0].rate", Some(6)));
    assert!(e.allowed.unwrap().contains("Mbps"));

    let e = err(&GOOD.replace("links = [\"l\"]", "links = [\"nope\"]"));
    assert_eq!(e.field, "paths[0].links[0]");
    assert_eq!(e.allowed.as_deref(), Some("l"));

    let e = err(&GOOD.replace("kind = \"tcp\"", "kind = \"udp\""));
    assert_eq!(e.field, "flows[0].kind");
    assert_eq!(e.allowed.as_deref(), Some("tcp, mptcp, rate"));

    let e = err(&GOOD.replace("delay = \"10ms\"", "delay = \"10ms\"\nloss = \"120%\""));
    assert_eq!(e.field, "links[0].loss");

    let e = err(&GOOD.replace("duration = \"2s\"\n", ""));
    assert_eq!(e.field, "duration");
    assert!(e.message.contains("missing"), "{}", e.message);

    let e = err("name = \"x\"\nduration = [1\n");
    assert_eq!(e.line, Some(2));
}

#[test]
fn reorder_is_validated_with_field_names() {
    let with = |r: &str| {
        GOOD.replace(
            "delay = \"10ms\"",
            &format!("delay = \"10ms\"\nreorder = {r}"),
        )
    };
    let sc = Scenario::from_toml_str(
        &with("{ probability = \"5%\", extra_delay = \"4ms\" }"),
        "ok.toml",
    )
    .unwrap();
    let r = sc.links[0].reorder.unwrap();
    assert_eq!((r.probability, r.extra_delay), (0.05, 4_000_000));
    assert_eq!(
        Scenario::from_toml_str(GOOD, "ok.toml").unwrap().links[0].reorder,
        None
    );

    let e = err(&with("{ probability = 1.5, extra_delay = \"4ms\" }"));
    assert_eq!(
        (e.field.as_str(), e.line),
        ("links[0].reorder.probability", Some(8))
    );
    assert!(e.allowed.unwrap().contains("[0, 1]"));
    let e = err(&with("{ probability = 0.1, extra_delay = 0 }"));
    assert_eq!(e.field, "links[0].reorder.extra_delay");
    assert!(e.allowed.unwrap().contains("> 0"));
    let e = err(&with("{ probability = 0.1 }"));
    assert_eq!(
        (e.field.as_str(), e.line),
        ("links[0].reorder.extra_delay", Some(8))
    );
    assert!(e.message.contains("missing"), "{}", e.message);
    let e = err(&with(
        "{ probability = 0.1, extra_delay = \"1ms\", gap = 5 }",
    ));
    assert_eq!(e.field, "links[0].reorder.gap");

    // A rate flow's receiver counts sequence gaps as losses: its paths must be FIFO.
    let rate = with("{ probability = 0.1, extra_delay = \"1ms\" }").replace(
        "kind = \"tcp\"\npath = \"p\"\nalgorithm = \"reno\"",
        "kind = \"rate\"\npaths = [\"p\"]\nrates = [100]",
    );
    let e = err(&rate);
    assert_eq!(e.field, "flows[0].paths");
    assert!(e.message.contains("reorders"), "{}", e.message);
}

#[allow(clippy::result_large_err)] // as in the library: built once per bad file
fn with(text: &str, options: &pathpool_sim::config::Options) -> Result<Scenario, ConfigError> {
    Scenario::from_toml_str_with(text, "ok.toml", options)
}

fn sets(list: &[&str]) -> pathpool_sim::config::Options {
    pathpool_sim::config::Options {
        overrides: list.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn overrides_assign_by_name_index_and_new_key() {
    let sc = with(
        GOOD,
        &sets(&[
            "links.l.rate=20Mbps",
            "flows.0.algorithm=cubic",
            "duration=3",
            "metrics.interval=\"100ms\"",
            "seeds=[7]",
        ]),
    )
    .unwrap();
    assert_eq!(sc.links[0].rate_bps, 20_000_000);
    assert_eq!(sc.flows[0].algorithm, "cubic");
    assert_eq!(sc.duration, 3_000_000_000);
    assert_eq!(sc.sample_interval, 100_000_000);
    assert_eq!(sc.seeds, vec![7]);
    // The rendered text is what a run uses: it validates to the same scenario.
    let again = Scenario::from_toml_str(&sc.text, "ok.toml").unwrap();
    assert_eq!(
        (again.links, again.flows, again.duration, again.seeds),
        (sc.links, sc.flows, sc.duration, sc.seeds)
    );
}

#[test]
fn override_errors_name_the_override_not_a_line() {
    let e = with(GOOD, &sets(&["duration=5", "links.l.rate=20MBps"])).unwrap_err();
    assert_eq!(e.origin, "ok.toml: --set links.l.rate=20MBps");
    assert_eq!((e.line, e.field.as_str()), (None, "links[0].rate"));
    assert!(e
        .to_string()
        .starts_with("ok.toml: --set links.l.rate=20MBps: links[0].rate: "));
    let e = with(GOOD, &sets(&["links.x.rate=1"])).unwrap_err();
    assert!(e.message.contains("no element \"x\"") && e.allowed.unwrap().contains("l"));
    let e = with(GOOD, &sets(&["links.0=5"])).unwrap_err();
    assert_eq!(e.message, "invalid type: integer `5`, expected a table");
    let e = with(GOOD, &sets(&["seeds=abc"])).unwrap_err();
    assert!(e.message.ends_with("expected a list"), "{e}");
    let e = with(GOOD, &sets(&["duration.x=1"])).unwrap_err();
    assert!(e.message.contains("not a table"), "{e}");
    // An error elsewhere keeps its place in the file.
    let bad = GOOD.replace("algorithm = \"reno\"", "algorithm = \"nope\"");
    let e = with(&bad, &sets(&["duration=5"])).unwrap_err();
    assert_eq!((e.origin.as_str(), e.line), ("ok.toml", Some(15)));
}

/// Two links, the second one also on an explicit ACK route: room to remove things.
const TWO: &str = r#"name = "two"
duration = "2s"
[[links]]
name = "a"
rate = "10Mbps"
delay = "10ms"
buffer = 50
[[links]]
name = "b"
rate = "5Mbps"
delay = "30ms"
[[paths]]
name = "p"
links = ["a", "b"]
ack_delay = "1ms"
[[flows]]
name = "f"
kind = "mptcp"
paths = ["p"]
algorithm = "lia"
scheduler = "minrtt"
"#;

#[test]
fn deletions_remove_keys_and_array_elements_which_then_take_their_defaults() {
    let base = with(TWO, &sets(&[])).unwrap();
    assert_eq!(base.links.len(), 2);
    let sc = with(
        TWO,
        &sets(&[
            "~paths.p.ack_delay",
            "~links.0.buffer",
            " ~ links.b ",
            "paths.p.links=[\"a\"]",
            "~flows.f.scheduler",
        ]),
    )
    .unwrap();
    assert_eq!(sc.links.len(), 1);
    assert_eq!(sc.links[0].name, "a");
    // Defaults, by hand: ACKs return over the forward delay (10 ms), NetEm's 1000 packets.
    assert_eq!(sc.paths[0].ack, AckRoute::Delay(10_000_000));
    assert_eq!(base.paths[0].ack, AckRoute::Delay(1_000_000));
    let default = with(&TWO.replace("buffer = 50\n", ""), &sets(&[])).unwrap();
    assert_eq!(sc.links[0].buffer, default.links[0].buffer);
    assert_ne!(base.links[0].buffer, default.links[0].buffer);
    let no_sched = with(&TWO.replace("scheduler = \"minrtt\"\n", ""), &sets(&[])).unwrap();
    assert_eq!(sc.flows[0].scheduler, no_sched.flows[0].scheduler);
    // The rendered text has none of it, records the deletions, and validates to the same.
    let (head, body) = sc.text.split_once('\n').unwrap();
    assert!(
        !body.contains("ack_delay") && !body.contains("\"b\""),
        "{body}"
    );
    assert!(
        head.contains("--set ~paths.p.ack_delay --set ~links.0.buffer"),
        "{head}"
    );
    let again = Scenario::from_toml_str(&sc.text, "again.toml").unwrap();
    assert_eq!((again.links, again.paths), (sc.links, sc.paths));
}

#[test]
fn deleting_what_is_not_there_is_an_error_naming_it() {
    let e = with(TWO, &sets(&["~links.a.loss"])).unwrap_err();
    assert_eq!(e.origin, "ok.toml: --set ~links.a.loss");
    assert_eq!(e.field, "links[0].loss");
    assert_eq!(e.message, "no \"loss\" in links[0] to remove");
    assert!(e.allowed.as_deref().unwrap().contains("buffer"), "{e}");
    let e = with(TWO, &sets(&["~links.c"])).unwrap_err();
    assert!(e.message.contains("no element \"c\""), "{e}");
    assert!(e.allowed.unwrap().contains("a, b"));
    let e = with(TWO, &sets(&["~bogus"])).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.message.as_str()),
        ("bogus", "no \"bogus\" in the scenario to remove")
    );
    let e = with(TWO, &sets(&["~metrics.interval"])).unwrap_err();
    assert_eq!(e.field, "metrics");
    let e = with(TWO, &sets(&["~duration.x"])).unwrap_err();
    assert!(e.message.contains("not a table"), "{e}");
    let e = with(TWO, &sets(&["~links.a.rate=1"])).unwrap_err();
    assert!(e.message.starts_with("a deletion takes no value"), "{e}");
    let e = with(TWO, &sets(&["~links..rate"])).unwrap_err();
    assert!(e.message.contains("not a dotted field path"), "{e}");
    // Removing a required field is allowed; validation of the result then says what is missing.
    let e = with(TWO, &sets(&["~links.a.rate"])).unwrap_err();
    assert!(e.message.contains("rate"), "{e}");
}

#[test]
fn an_override_may_name_array_elements_in_brackets_as_errors_do() {
    let dotted = with(
        TWO,
        &sets(&["flows.0.option_bytes=24", "links.1.rate=7Mbps"]),
    )
    .unwrap();
    let bracketed = with(
        TWO,
        &sets(&["flows[0].option_bytes=24", " links [1] .rate=7Mbps"]),
    )
    .unwrap();
    assert_eq!(dotted.flows[0].option_bytes, 24);
    assert_eq!(dotted.links[1].rate_bps, 7_000_000);
    assert_eq!(
        (&bracketed.flows, &bracketed.links),
        (&dotted.flows, &dotted.links)
    );
    let one = with(TWO, &sets(&["~links[1]", "paths[0].links=[\"a\"]"])).unwrap();
    assert_eq!(one.links.len(), 1);
    // An error's field is a path that --set takes.
    let e = with(TWO, &sets(&["flows[0].option_bytes=29"])).unwrap_err();
    assert_eq!(e.field, "flows[0].option_bytes");
    assert!(with(TWO, &sets(&[&format!("{}=24", e.field)])).is_ok());
    for bad in [
        "flows[0.mss=1000",
        "flows[0]x.mss=1000",
        "flows[].mss=1000",
        "flows.[0].mss=1",
    ] {
        let e = with(TWO, &sets(&[bad])).unwrap_err();
        assert!(e.message.contains("not a dotted field path"), "{bad}: {e}");
    }
}

#[test]
fn extension_tables_pass_through_untyped_and_others_are_errors() {
    let text = format!("{GOOD}[reproduce]\npaper = \"rsf\"\nalgorithms = [\"lia\"]\n");
    assert!(Scenario::from_toml_str(&text, "x.toml")
        .unwrap_err()
        .message
        .contains("unknown field `reproduce`"));
    let options = pathpool_sim::config::Options {
        extensions: vec!["reproduce".into()],
        ..Default::default()
    };
    let sc = with(&text, &options).unwrap();
    assert_eq!(sc.extensions["reproduce"]["paper"].as_str(), Some("rsf"));
    assert!(!sc.text.contains("reproduce"));
}

#[test]
fn limits_refuse_huge_runs_and_can_be_raised() {
    use pathpool_sim::config::Limits;
    let sc = with(GOOD, &sets(&["duration=1e6", "links.l.rate=1Tbps"])).unwrap();
    let e = sc.check_limits(&Limits::default()).unwrap_err();
    assert!(e.message.contains("simulator events"), "{e}");
    let raised = Limits {
        max_events: f64::INFINITY,
        ..Limits::default()
    };
    assert!(sc.check_limits(&raised).is_ok());
    // Closed form of the model: 10 Mbit/s of 1500-byte packets for 2 s over a 1-link path with
    // a delay return: 2 s * 833.33 pkt/s * (1 * 2 + 3) events.
    let good = Scenario::from_toml_str(GOOD, "ok.toml").unwrap();
    let est = good.estimate();
    assert!(
        (est.events - 2.0 * 10e6 / 12_000.0 * 5.0).abs() < 1e-6,
        "{est:?}"
    );
    assert_eq!(est.series_rows, 0.0);
    let e = with(GOOD, &sets(&["duration=1000", "metrics.interval=1us"]))
        .unwrap()
        .check_limits(&Limits::default())
        .unwrap_err();
    assert_eq!(e.field, "metrics.interval");
}

#[test]
fn seeds_are_checked_in_linear_time() {
    // 100000 distinct seeds (the documented maximum) validate quickly; one repeat is refused.
    let many: Vec<String> = (0..100_000).map(|s| s.to_string()).collect();
    let text = GOOD.replace("seeds = [1, 2]", &format!("seeds = [{}]", many.join(",")));
    assert_eq!(
        Scenario::from_toml_str(&text, "x").unwrap().seeds.len(),
        100_000
    );
    let text = GOOD.replace(
        "seeds = [1, 2]",
        &format!("seeds = [{},5]", many[1..].join(",")),
    );
    assert!(err(&text).message.contains("seed 5 is listed twice"));
    let text = GOOD.replace(
        "seeds = [1, 2]",
        &format!("seeds = [{},100000]", many.join(",")),
    );
    assert!(err(&text).message.contains("100001 seeds listed"));
}

#[test]
fn counting_defaults_to_bytes_and_names_its_allowed_values() {
    use pathpool_cc::Counting;
    let sc = Scenario::from_toml_str(GOOD, "good.toml").unwrap();
    assert_eq!(sc.flows[0].counting, Counting::Bytes);
    let text = GOOD.replace(
        "algorithm = \"reno\"",
        "algorithm = \"reno\"\ncounting = \"acks\"",
    );
    let sc = Scenario::from_toml_str(&text, "good.toml").unwrap();
    assert_eq!(sc.flows[0].counting, Counting::Acks);
    let e = err(&GOOD.replace(
        "algorithm = \"reno\"",
        "algorithm = \"reno\"\ncounting = \"packets\"",
    ));
    assert_eq!(e.field, "flows[0].counting");
    assert_eq!(e.line, Some(16));
    assert_eq!(e.allowed.as_deref(), Some("bytes, acks"));
}

/// A connection's subflows are numbered in one byte of the data-level receive ring: 255 paths
/// are accepted, 256 rejected with the field and the allowed count.
#[test]
fn too_many_paths_for_one_connection() {
    let mptcp = |n: usize| {
        let names = vec!["\"p\""; n].join(", ");
        GOOD.replace(
            "kind = \"tcp\"\npath = \"p\"",
            &format!("kind = \"mptcp\"\npaths = [{names}]"),
        )
    };
    let sc = Scenario::from_toml_str(&mptcp(255), "ok.toml").unwrap();
    assert_eq!(sc.flows[0].paths.len(), 255);
    let e = err(&mptcp(256));
    assert_eq!(e.field, "flows[0].paths");
    assert!(e.to_string().contains("at most 255 subflows"), "{e}");
    assert_eq!(e.allowed.as_deref(), Some("1 to 255 path names"));
}

/// GOOD with `field` (TOML lines) added to its flow, on line 16.
fn flow_with(field: &str) -> String {
    GOOD.replace(
        "algorithm = \"reno\"",
        &format!("algorithm = \"reno\"\n{field}"),
    )
}

#[test]
fn option_bytes_is_read_in_bytes_and_refused_outside_its_range() {
    for (v, want) in [("0", 0), ("24", 24), ("\"24B\"", 24), ("28", 28)] {
        let sc = Scenario::from_toml_str(&flow_with(&format!("option_bytes = {v}")), "ok.toml")
            .unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(sc.flows[0].option_bytes, want, "{v}");
        assert_eq!(sc.flows[0].seg_payload(), 1448 - want, "{v}");
    }
    let allowed = "bytes in 0..=28 (TCP option space beyond the timestamps), at most mss - 64";
    for v in ["29", "-1", "\"24ms\"", "\"1KB\"", "\"x\""] {
        let e = err(&flow_with(&format!("option_bytes = {v}")));
        assert_eq!(e.field, "flows[0].option_bytes", "{v}: {e}");
        assert_eq!(e.allowed.as_deref(), Some(allowed), "{v}: {e}");
        assert_eq!(e.line, Some(16), "{v}: {e}");
        assert!(e.to_string().starts_with("bad.toml:16:"), "{e}");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    // The payload keeps mss's own floor of 64 bytes.
    let e = err(&flow_with("mss = 80\noption_bytes = 17"));
    assert_eq!(e.field, "flows[0].option_bytes");
    assert!(e.message.contains("under 64 payload bytes"), "{e}");
    Scenario::from_toml_str(&flow_with("mss = 80\noption_bytes = 16"), "ok.toml").unwrap();
}

#[test]
fn option_bytes_is_refused_on_a_rate_flow() {
    let rate = "[[flows]]\nname = \"r\"\nkind = \"rate\"\npaths = [\"p\"]\nrates = [100]\n";
    let e = err(&format!("{GOOD}{rate}option_bytes = 24\n"));
    assert_eq!(e.field, "flows[1].option_bytes");
    assert!(
        e.message.contains("does not apply to kind = \"rate\""),
        "{e}"
    );
}

#[test]
fn a_quantity_written_as_a_string_needs_its_unit() {
    // "10" is 10 bit/s to one reader and 10 Mbit/s to another: refused, naming the units.
    for (from, to, field, unit) in [
        (
            "rate = \"10Mbps\"",
            "rate = \"10\"",
            "links[0].rate",
            "Mbps",
        ),
        ("delay = \"10ms\"", "delay = \"10\"", "links[0].delay", "ms"),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nbuffer = \"50\"",
            "links[0].buffer",
            "pkt",
        ),
        (
            "delay = \"10ms\"",
            "delay = \"10ms\"\nloss = \"0.01\"",
            "links[0].loss",
            "%",
        ),
        ("duration = \"2s\"", "duration = \"2\"", "duration", "ms"),
        (
            "rate = \"10Mbps\"",
            "rate = \"10Mbps \"",
            "links[0].rate",
            "Mbps",
        ),
    ] {
        let e = err(&GOOD.replace(from, to));
        assert_eq!(e.field, field, "{e}");
        assert_eq!(e.origin, "bad.toml", "{e}");
        assert!(e.line.is_some(), "{e}");
        let shown = e.to_string();
        assert!(shown.contains(unit), "{to}: {shown}");
        assert!(!shown.contains('\n'), "{shown}");
    }
    // Plain numbers keep their one documented meaning: 50 packets, 10 bit/s... and "50pkt".
    let sc = Scenario::from_toml_str(
        &GOOD.replace("delay = \"10ms\"", "delay = 0.01\nbuffer = 50"),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(sc.links[0].delay, 10_000_000);
    assert_eq!(format!("{:?}", sc.links[0].buffer), "Packets(50)");
}

#[test]
fn a_link_that_cannot_hold_or_carry_one_packet_is_refused() {
    // mss 1448 + 52 bytes of headers: a full segment is 1500 bytes on the wire.
    let e = err(&GOOD.replace("delay = \"10ms\"", "delay = \"10ms\"\nbuffer = \"1B\""));
    assert_eq!(e.field, "links[0].buffer", "{e}");
    assert_eq!(e.line, Some(8), "{e}");
    assert!(e.to_string().contains("1500"), "{e}");
    let e = err(&GOOD.replace("delay = \"10ms\"", "delay = \"10ms\"\nbuffer = \"1499B\""));
    assert_eq!(e.field, "links[0].buffer", "{e}");
    Scenario::from_toml_str(
        &GOOD.replace("delay = \"10ms\"", "delay = \"10ms\"\nbuffer = \"1500B\""),
        "ok.toml",
    )
    .unwrap();
    // 1 kbit/s sends a 1500-byte packet in 12 s, longer than the 2 s run.
    let e = err(&GOOD.replace("rate = \"10Mbps\"", "rate = \"1kbps\""));
    assert_eq!(e.field, "links[0].rate", "{e}");
    assert!(e.to_string().contains("12 s"), "{e}");
    Scenario::from_toml_str(
        &GOOD.replace("rate = \"10Mbps\"", "rate = \"6kbps\""),
        "ok.toml",
    )
    .unwrap();
}

#[test]
fn an_override_of_a_missing_element_names_the_indices_that_exist() {
    // TWO has two links: indices 0 and 1 (a "0..2" read as inclusive would promise a third).
    let e = with(TWO, &sets(&["links.x.rate=\"1Mbps\""])).unwrap_err();
    let allowed = e.allowed.unwrap();
    assert!(allowed.contains("an index from 0 to 1"), "{allowed}");
    assert!(allowed.contains("a, b"), "{allowed}");
    let e = with(GOOD, &sets(&["links.2.rate=\"1Mbps\""])).unwrap_err();
    assert!(
        e.allowed.unwrap().contains("the index 0 or"),
        "{}",
        e.message
    );
}

#[test]
fn a_poll_writer_needs_linux_send_buffers_and_its_size_needs_a_poll_writer() {
    use pathpool_sim::config::Writer;
    let sc = Scenario::from_toml_str(
        &flow_with("send_buffer = \"linux\"\nwriter = \"poll\"\nwrite_size = \"8KiB\""),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(sc.flows[0].writer, Writer::Poll { chunk: 8192 });
    // The reading switches the send buffers on; the size defaults to the test bed's 64 KiB.
    let sc = Scenario::from_toml_str(
        &flow_with("reading = \"linux\"\nwriter = \"poll\""),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(sc.flows[0].writer, Writer::Poll { chunk: 65_536 });
    let sc = Scenario::from_toml_str(GOOD, "ok.toml").unwrap();
    assert_eq!(sc.flows[0].writer, Writer::Blocking);
    let e = err(&flow_with("writer = \"poll\""));
    assert_eq!(e.field, "flows[0].writer", "{e}");
    assert!(e.message.contains("needs send_buffer = \"linux\""), "{e}");
    assert_eq!(e.allowed.as_deref(), Some("blocking, poll"));
    let e = err(&flow_with("send_buffer = \"linux\"\nwrite_size = 1000"));
    assert_eq!(e.field, "flows[0].write_size", "{e}");
    assert!(e.message.contains("only to writer = \"poll\""), "{e}");
    let e = err(&flow_with("send_buffer = \"linux\"\nwriter = \"select\""));
    assert_eq!(
        (e.field.as_str(), e.line),
        ("flows[0].writer", Some(17)),
        "{e}"
    );
}

#[test]
fn linux_push_flags_need_the_linux_scheduler_and_come_with_the_reading() {
    use pathpool_sim::config::PushFlag;
    let sc = Scenario::from_toml_str(GOOD, "ok.toml").unwrap();
    assert_eq!(sc.flows[0].push_flag, PushFlag::None);
    let sc = Scenario::from_toml_str(&flow_with("reading = \"linux\""), "ok.toml").unwrap();
    assert_eq!(sc.flows[0].push_flag, PushFlag::Linux);
    let sc = Scenario::from_toml_str(
        &flow_with("reading = \"linux\"\npush_flag = \"none\""),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(sc.flows[0].push_flag, PushFlag::None);
    // The reading with another scheduler leaves the marks off rather than refusing.
    let sc = Scenario::from_toml_str(
        &flow_with("reading = \"linux\"\nscheduler = \"minrtt\""),
        "ok.toml",
    )
    .unwrap();
    assert_eq!(sc.flows[0].push_flag, PushFlag::None);
    let e = err(&flow_with("push_flag = \"linux\""));
    assert_eq!(e.field, "flows[0].push_flag", "{e}");
    assert!(e.message.contains("needs scheduler = \"linux\""), "{e}");
    assert_eq!(e.allowed.as_deref(), Some("none, linux"));
    let e = err(&flow_with("scheduler = \"linux\"\npush_flag = \"psh\""));
    assert_eq!(e.field, "flows[0].push_flag", "{e}");
    assert!(e.message.contains("unknown push_flag \"psh\""), "{e}");
}

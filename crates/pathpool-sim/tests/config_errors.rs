//! Bad scenario files give errors naming file, line, field and allowed values.

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

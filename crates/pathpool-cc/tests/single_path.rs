//! Every coupled algorithm reduces to Reno on a single path: the same scripted events give the
//! same cwnd and ssthresh trajectory as `reno`, step by step (up to floating-point rounding, since
//! e.g. Max computes (w/t^2)/(w/t)^2 where Reno computes 1/w).

mod common;

use common::{num, params, single_path_script, Event, Harness};
use pathpool_cc::{build, ParamValue, Params};

fn configs() -> Vec<(&'static str, Params)> {
    let text = |s: &str| ParamValue::Text(s.into());
    vec![
        ("lia", Params::new()),
        (
            "lia",
            params(&[("alpha_every_ack", ParamValue::Bool(true))]),
        ),
        ("olia", Params::new()),
        ("balia", Params::new()),
        ("balia", params(&[("variant", text("kernel"))])),
        ("generalized", Params::new()),
        (
            "generalized",
            params(&[("eta", num(0.0)), ("beta", num(1.0))]),
        ),
        (
            "generalized",
            params(&[("eta", num(1.0)), ("beta", num(0.0))]),
        ),
        (
            "generalized",
            params(&[("eta", num(3.0)), ("beta", num(2.5))]),
        ),
        ("coupled", Params::new()),
        ("semicoupled", params(&[("a", num(1.0))])),
        ("max", Params::new()),
        ("ewtcp", params(&[("a", num(1.0))])),
    ]
}

/// Runs the script on `reno` and on `name` with `n` subflows of which only subflow 0 is active
/// (n = 1: a genuine single path; n > 1: closed siblings, which coupled sums must skip).
fn compare(name: &str, ps: &Params, n: usize, script: &[Event]) {
    let mut reno = Harness::new(build("reno", &Params::new(), n).unwrap(), n);
    let mut other = Harness::new(build(name, ps, n).unwrap(), n);
    for h in [&mut reno, &mut other] {
        for k in 1..n {
            h.subflows[k].active = false;
            h.subflows[k].cwnd = 50.0 * k as f64;
            h.subflows[k].srtt = 7_000_000;
        }
    }
    let mut losses = 0;
    let mut ca_acks = 0;
    for (step, e) in script.iter().enumerate() {
        if matches!(e, Event::Loss { .. } | Event::Rto { .. }) {
            losses += 1;
        }
        if !reno.subflows[0].in_slow_start() && matches!(e, Event::Ack { .. }) {
            ca_acks += 1;
        }
        reno.apply(e);
        other.apply(e);
        let (a, b) = (&reno.subflows[0], &other.subflows[0]);
        let tol = 1e-9 * a.cwnd.abs().max(1.0);
        assert!(
            (a.cwnd - b.cwnd).abs() <= tol,
            "{name} {ps:?} n={n} step {step} {e:?}: reno cwnd {} vs {}",
            a.cwnd,
            b.cwnd
        );
        assert!(
            a.ssthresh == b.ssthresh || (a.ssthresh - b.ssthresh).abs() <= 1e-9 * a.ssthresh,
            "{name} {ps:?} n={n} step {step}: reno ssthresh {} vs {}",
            a.ssthresh,
            b.ssthresh
        );
    }
    // The script really exercises congestion avoidance and loss recovery.
    assert!(
        losses > 50 && ca_acks > 1000,
        "losses {losses}, CA ACKs {ca_acks}"
    );
}

#[test]
fn every_coupled_algorithm_is_reno_on_a_single_path() {
    let script = single_path_script(4000, 0x5eed_1234);
    for (name, ps) in configs() {
        compare(name, &ps, 1, &script);
    }
}

#[test]
fn closed_siblings_do_not_couple() {
    let script = single_path_script(3000, 0xfeed_0042);
    for (name, ps) in configs() {
        compare(name, &ps, 3, &script);
    }
}

#[test]
fn ewtcp_with_default_weight_is_not_reno_on_a_two_subflow_connection() {
    // With n = 2 the default a = 1/4: same script, one active subflow, the windows must differ
    // (a check that the comparison above can fail).
    let script = single_path_script(2000, 7);
    let mut reno = Harness::new(build("reno", &Params::new(), 2).unwrap(), 2);
    let mut ew = Harness::new(build("ewtcp", &Params::new(), 2).unwrap(), 2);
    reno.subflows[1].active = false;
    ew.subflows[1].active = false;
    for e in &script {
        reno.apply(e);
        ew.apply(e);
    }
    assert!((reno.subflows[0].cwnd - ew.subflows[0].cwnd).abs() > 1e-3);
}

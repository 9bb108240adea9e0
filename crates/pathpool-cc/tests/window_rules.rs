//! `Controller::window_rules` (what fluid models read: Peng et al. 2016, eq. (7)) is what the controller
//! does: on random congestion-avoidance states, one acknowledged segment adds exactly
//! `increase`, one loss event sets `ssthresh = w - decrease` wherever that is above the floor.

mod common;

use common::{ack, ca, num, params};
use pathpool_cc::{build, catalog, ParamValue, Params, Subflow};

fn configs() -> Vec<(&'static str, Params)> {
    let mut out: Vec<(&'static str, Params)> =
        catalog().iter().map(|a| (a.name, Params::new())).collect();
    out.push(("ewtcp", params(&[("a", num(0.3))])));
    out.push(("semicoupled", params(&[("a", num(2.0))])));
    out.push((
        "balia",
        params(&[("variant", ParamValue::Text("kernel".into()))]),
    ));
    out.push((
        "generalized",
        params(&[("eta", num(0.0)), ("beta", num(1.0))]),
    ));
    out.push((
        "generalized",
        params(&[("eta", num(3.0)), ("beta", num(0.7))]),
    ));
    out.push((
        "lia",
        params(&[("alpha_every_ack", ParamValue::Bool(true))]),
    ));
    out
}

#[test]
fn window_rules_are_the_steps_on_ack_and_on_congestion_event_take() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    for (name, ps) in configs() {
        let probe = build(name, &ps, 1).unwrap();
        if probe.window_rules(&[ca(10.0, 50)], 0).is_none() {
            // Only the algorithms whose steps depend on time or on estimates have none.
            assert!(["cubic", "rsf-db", "rsf-lb"].contains(&name), "{name}");
            continue;
        }
        let mut unfloored = 0;
        for case in 0..200 {
            let n = 1 + case % 3;
            let s: Vec<Subflow> = (0..n)
                .map(|_| {
                    ca(
                        (4.0 + 200.0 * next()).floor() + 0.5,
                        5 + (300.0 * next()) as u64,
                    )
                })
                .collect();
            let i = case % n;
            let rules = build(name, &ps, n).unwrap().window_rules(&s, i).unwrap();
            let mut acked = s.clone();
            build(name, &ps, n).unwrap().on_ack(&mut acked, i, &ack(0));
            let w = s[i].cwnd;
            let grown = acked[i].cwnd - w;
            assert!(
                (grown - rules.increase).abs() <= 1e-12 * w,
                "{name} {ps:?} {s:?} {i}: on_ack +{grown}, rules +{}",
                rules.increase
            );
            let mut lost = s.clone();
            build(name, &ps, n)
                .unwrap()
                .on_congestion_event(&mut lost, i, 0);
            let target = w - rules.decrease;
            if target >= 2.0 {
                unfloored += 1;
                assert!(
                    (lost[i].ssthresh - target).abs() <= 1e-12 * w,
                    "{name} {ps:?} {s:?} {i}: ssthresh {} vs w - D = {target}",
                    lost[i].ssthresh
                );
            } else {
                assert!((1.0..=2.0).contains(&lost[i].ssthresh), "{name} {s:?} {i}");
            }
        }
        assert!(unfloored >= 50, "{name} {ps:?}: {unfloored}");
    }
}

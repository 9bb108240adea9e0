//! For any sequence of events, every algorithm with any parameter choice keeps every window
//! finite and at least MIN_CWND, and every ssthresh not NaN, at least its documented floor, and
//! finite once the subflow has had a loss event.

mod common;

use common::{num, params, Event, Harness};
use pathpool_cc::{build, ParamValue, Params, MIN_CWND, MIN_SSTHRESH};
use proptest::prelude::*;

/// (name, params, ssthresh floor). Coupled and Balia go down to 1 with several paths
/// (Peng et al. 2016, Section V); everything else keeps Linux's 2.
fn config(k: usize, x: f64, y: f64, flag: bool) -> (&'static str, Params, f64) {
    let text = |s: &str| ParamValue::Text(s.into());
    match k {
        0 => ("reno", Params::new(), MIN_SSTHRESH),
        1 => ("cubic", Params::new(), MIN_SSTHRESH),
        2 => ("ewtcp", params(&[("a", num(0.01 + 2.0 * x))]), MIN_SSTHRESH),
        3 => ("coupled", Params::new(), 1.0),
        4 => (
            "semicoupled",
            params(&[("a", num(0.01 + 2.0 * x))]),
            MIN_SSTHRESH,
        ),
        5 => ("max", Params::new(), MIN_SSTHRESH),
        6 => (
            "lia",
            params(&[("alpha_every_ack", ParamValue::Bool(flag))]),
            MIN_SSTHRESH,
        ),
        7 => ("olia", Params::new(), MIN_SSTHRESH),
        8 => (
            "balia",
            params(&[("variant", text(if flag { "kernel" } else { "continuous" }))]),
            1.0,
        ),
        9 => (
            "generalized",
            params(&[("eta", num(3.0 * x)), ("beta", num(3.0 * y))]),
            MIN_SSTHRESH,
        ),
        10 => (
            "rsf-db",
            params(&[("d", num(0.001 + 0.3 * x))]),
            MIN_SSTHRESH,
        ),
        _ => (
            "rsf-lb",
            params(&[
                ("mu", num(0.1 + 10.0 * x)),
                ("loss_window", num(1.0 + 2000.0 * y)),
            ]),
            MIN_SSTHRESH,
        ),
    }
}

fn event(n: usize) -> impl Strategy<Value = Event> {
    let ack = (
        0..n,
        prop_oneof![Just(0u64), 1u64..3000, 3000u64..70_000],
        proptest::option::weighted(0.8, 1u32..3000),
        proptest::option::weighted(0.6, 0u32..2000),
        0u32..500,
    )
        .prop_map(|(i, bytes, rtt_ms, owd_ms, dt_ms)| Event::Ack {
            i,
            bytes,
            rtt_ms,
            owd_ms,
            dt_ms,
        });
    prop_oneof![
        12 => ack,
        2 => (0..n).prop_map(|i| Event::Loss { i }),
        1 => (0..n).prop_map(|i| Event::Rto { i }),
        1 => (0..n).prop_map(|i| Event::Toggle { i }),
    ]
}

fn scenario() -> impl Strategy<Value = (usize, usize, f64, f64, bool, Vec<Event>)> {
    (1usize..=4).prop_flat_map(|n| {
        (
            Just(n),
            0usize..12,
            0.0f64..1.0,
            0.0f64..1.0,
            any::<bool>(),
            proptest::collection::vec(event(n), 1..400),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn windows_stay_finite_and_above_their_floors((n, k, x, y, flag, events) in scenario()) {
        let (name, ps, floor) = config(k, x, y, flag);
        let mut h = Harness::new(build(name, &ps, n).unwrap(), n);
        for (step, e) in events.iter().enumerate() {
            h.apply(e);
            for (j, sf) in h.subflows.iter().enumerate() {
                prop_assert!(sf.cwnd.is_finite() && sf.cwnd >= MIN_CWND,
                    "{} {:?} step {} {:?}: cwnd[{}] = {}", name, ps, step, e, j, sf.cwnd);
                prop_assert!(!sf.ssthresh.is_nan() && sf.ssthresh >= floor,
                    "{} {:?} step {}: ssthresh[{}] = {}", name, ps, step, j, sf.ssthresh);
                if sf.loss_events > 0 {
                    prop_assert!(sf.ssthresh.is_finite(),
                        "{} step {}: ssthresh[{}] infinite after a loss", name, step, j);
                }
            }
        }
    }
}

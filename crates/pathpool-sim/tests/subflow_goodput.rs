//! The per-subflow goodput time series: bytes the receiver delivered in order, by the subflow
//! that carried them. Conservation: in every interval the subflows' bytes sum to the flow's, and
//! over the run the intervals sum to the flow's delivered bytes.

mod common;

use std::collections::BTreeMap;

use common::{header, link, mptcp_flow, path, scenario, tcp_flow};

/// Bytes in an interval from a goodput row (`bytes * 8 / dt`, with bytes an integer).
fn bytes(v: f64, dt: f64) -> u64 {
    let b = v * dt / 8.0;
    let r = b.round();
    assert!(
        (b - r).abs() < 1e-6 * r.max(1.0),
        "{v} bit/s over {dt} s is not whole bytes"
    );
    r as u64
}

#[test]
fn subflow_goodput_sums_to_flow_goodput_per_interval_and_to_delivered_bytes() {
    // Two paths of different delays and a lossy one, so data arrives out of order across
    // subflows and segments wait in the connection-level buffer for a gap on the other path.
    let text = format!(
        "{}[metrics]\ninterval = \"100ms\"\n{}{}{}{}{}{}{}",
        header("subgoodput", "\"6s\""),
        link("a", "10Mbps", "10ms", "50pkt", ""),
        link("b", "5Mbps", "40ms", "50pkt", "loss = 0.01"),
        path("pa", &["a"], ""),
        path("pb", &["b"], ""),
        mptcp_flow("mp", &["pa", "pb"], "lia", ""),
        tcp_flow("single", "pb", "reno", "start = \"1s\""),
        "",
    );
    let sc = scenario(&text);
    let dt = 0.1;
    for seed in [1, 2] {
        let out = pathpool_sim::run(&sc, seed).unwrap();
        let s = &out.series;
        // (time index, flow) -> bytes; (flow, subflow) -> bytes
        let mut flow_at: BTreeMap<(u64, String), u64> = BTreeMap::new();
        let mut subs_at: BTreeMap<(u64, String), u64> = BTreeMap::new();
        let mut per_sub: BTreeMap<String, u64> = BTreeMap::new();
        let mut rows = 0;
        for i in 0..s.len() {
            if s.metric[i] != "goodput_bps" {
                continue;
            }
            let k = (s.time_s[i] / dt).round() as u64;
            let b = bytes(s.value[i], dt);
            match s.entity[i] {
                "flow" => *flow_at.entry((k, s.id[i].clone())).or_default() += b,
                "subflow" => {
                    let flow = s.id[i].rsplit_once('/').unwrap().0.to_string();
                    *subs_at.entry((k, flow)).or_default() += b;
                    *per_sub.entry(s.id[i].clone()).or_default() += b;
                    rows += 1;
                }
                e => panic!("{e}"),
            }
        }
        // one row per subflow wherever the flow has one: mp all 60 samples, single from its start
        let flow_rows = |name: &str| flow_at.keys().filter(|(_, n)| n == name).count();
        assert_eq!(flow_rows("mp"), 60);
        assert_eq!(rows, 2 * 60 + flow_rows("single"));
        assert_eq!(
            flow_at, subs_at,
            "seed {seed}: subflows do not sum to the flow per interval"
        );
        for f in &out.flows {
            let total: u64 = flow_at
                .iter()
                .filter(|((_, n), _)| *n == f.flow)
                .map(|(_, b)| b)
                .sum();
            // The last sample is at the end of the run, so the intervals cover it all.
            assert_eq!(total, f.delivered_bytes, "seed {seed} flow {}", f.flow);
        }
        // both subflows of the multipath flow carried data
        assert!(per_sub["mp/0"] > 0 && per_sub["mp/1"] > 0, "{per_sub:?}");
        assert!(out.flows.iter().all(|f| f.integrity_errors == 0));
    }
}

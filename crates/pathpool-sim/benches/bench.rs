//! `cargo bench -p pathpool-sim`: run scenarios/bench/bench.toml and report simulated data
//! packets per wall-clock second. A plain harness: one run is seconds long
//! and its own measurement; we report the best of three to damp noise from other processes.

use std::path::PathBuf;

fn main() {
    let path = std::env::args()
        .skip(1)
        .find(|a| a.ends_with(".toml"))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/bench/bench.toml")
        });
    let sc = match pathpool_sim::Scenario::from_path(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..3 {
        let out = pathpool_sim::run(&sc, sc.seeds()[0]).unwrap_or_else(|e| panic!("{e}"));
        best = best.min(out.stats.wall_s);
        last = Some(out);
    }
    let out = last.expect("ran");
    let st = &out.stats;
    println!(
        "{}: {} flows, {:.0} simulated s, {} events, {} data packets, {} ACKs; best wall {:.3} s",
        sc.name(),
        out.flows.len(),
        st.simulated_s,
        st.events,
        st.data_packets,
        st.ack_packets,
        best
    );
    println!(
        "simulated data packets per wall-clock second: {:.3} million",
        st.data_packets as f64 / best / 1e6
    );
    println!(
        "events per wall-clock second: {:.3} million",
        st.events as f64 / best / 1e6
    );
    let util: Vec<String> = out
        .links
        .iter()
        .map(|l| format!("{} {:.3}", l.link, l.utilisation))
        .collect();
    println!(
        "link utilisation: {}; Jain of goodputs {:.4}",
        util.join(", "),
        st.jain_goodput
    );
}

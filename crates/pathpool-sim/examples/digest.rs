//! Print one line per (scenario file, seed): a hash of everything the run produced except the
//! wall-clock time, after at most `SECS` simulated seconds. Two builds that print the same lines
//! give byte-identical results on those scenarios: the check that a refactor of the engine
//! changed no result.
//! `cargo run --release -p pathpool-sim --example digest -- SECS FILE...`
//! The reproduced papers' scenarios carry a `[reproduce]` table for the Python report (sweeps); it is
//! dropped here, so their base configuration runs.
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(secs) = args.get(1).and_then(|s| s.parse::<f64>().ok()) else {
        eprintln!("usage: digest SECS FILE...");
        std::process::exit(2);
    };
    for path in &args[2..] {
        let Ok(text) = std::fs::read_to_string(path) else {
            println!("{path}: unreadable");
            continue;
        };
        let sc = match pathpool_sim::Scenario::from_toml_str(&strip_reproduce(&text), path) {
            Ok(s) => s,
            Err(e) => {
                println!("{path}: not runnable: {e}");
                continue;
            }
        };
        for &seed in sc.seeds().iter().take(2) {
            let mut sim = match pathpool_sim::Simulation::new(&sc, seed) {
                Ok(s) => s,
                Err(e) => {
                    println!("{path} seed {seed}: {e}");
                    continue;
                }
            };
            let until = sim.end().min((secs * 1e9) as u64);
            sim.run_until(until);
            let events = sim.events();
            let mut out = sim.finish();
            out.stats.wall_s = 0.0;
            // DefaultHasher with its fixed keys (SipHash-1-3, zero key) is stable within one
            // toolchain, which is all a before/after comparison needs.
            let mut h = DefaultHasher::new();
            format!("{out:?}").hash(&mut h);
            println!(
                "{path} seed {seed}: events {events} digest {:016x}",
                h.finish()
            );
        }
    }
}

/// The text without its `[reproduce...]` tables.
fn strip_reproduce(text: &str) -> String {
    let mut keep = true;
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            keep = !t.trim_start_matches('[').starts_with("reproduce");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

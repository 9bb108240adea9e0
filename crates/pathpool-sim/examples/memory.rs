//! What a run's peak memory is made of: run a scenario to its end and print the bytes of each
//! of the simulator's structures at its high-water mark, beside the process's peak RSS and
//! what a run of the same binary that holds almost nothing costs (the floor: binary, libc,
//! parsing). `cargo run --release -p pathpool-sim --example memory -- FILE [SEED]`
//! (bench/README.md, "Memory").
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: memory FILE [SEED]");
        std::process::exit(2);
    };
    let sc = match pathpool_sim::Scenario::from_path(std::path::Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let seed = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(sc.seeds()[0]);
    let before = peak_rss_kib();
    let mut sim = pathpool_sim::Simulation::new(&sc, seed).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    sim.run_until(sim.end());
    let parts = sim.memory();
    let total: usize = parts.iter().map(|(_, b)| b).sum();
    println!("data packets {}", sim.data_packets());
    for (what, bytes) in &parts {
        println!("{:>10.3} MB  {what}", *bytes as f64 / 1e6);
    }
    println!("{:>10.3} MB  sum of the above", total as f64 / 1e6);
    println!(
        "{:>10.3} MB  peak RSS after parsing the scenario, before building the run (binary, libraries, parser)",
        before as f64 * 1024.0 / 1e6
    );
    println!(
        "{:>10.3} MB  peak RSS at the end (VmHWM)",
        peak_rss_kib() as f64 * 1024.0 / 1e6
    );
}

/// The process's peak resident set size in KiB (`VmHWM` of /proc/self/status; 0 elsewhere).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

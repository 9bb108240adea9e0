//! Run a scenario file and print its flow, subflow and link tables (a debugging aid).
//! `cargo run --release -p pathpool-sim --example runscn -- FILE [SEED] [--memory]`
//!
//! `--memory` also prints what the run's memory is made of: each of the simulator's structures
//! at its high-water mark ([`pathpool_sim::Simulation::memory`]), beside the process's peak RSS
//! after parsing and at the end (bench/README.md, "Memory").
fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let memory = args.iter().any(|a| a == "--memory");
    args.retain(|a| a != "--memory");
    let Some(path) = args.get(1) else {
        eprintln!("usage: runscn FILE [SEED] [--memory]");
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
    let parsed_kib = peak_rss_kib();
    let mut sim = pathpool_sim::Simulation::new(&sc, seed).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    sim.run_until(sim.end());
    if memory {
        print_memory(&sim.memory(), parsed_kib);
    }
    let out = sim.finish();
    for f in &out.flows {
        println!(
            "flow {:<12} {:<6} {:<8} goodput {:>8.3} Mb/s sent {:>7} retx {:>6} lost {:>6} rto {:>3} compl {:.3}",
            f.flow, f.kind, f.algorithm, f.goodput_bps / 1e6, f.sent_packets, f.retransmitted_packets, f.lost_packets, f.rto_count, f.completion_time_s
        );
    }
    for s in &out.subflows {
        println!(
            "  sub {:<10}/{} {:<6} goodput {:>8.3} Mb/s loss_ev {:>5} rto {:>3} rtt {:.4}/{:.4} cwnd {:.1}",
            s.flow, s.subflow, s.path, s.goodput_bps / 1e6, s.loss_events, s.rto_count, s.mean_rtt_s, s.min_rtt_s, s.mean_cwnd
        );
    }
    for l in &out.links {
        println!(
            "link {:<14} util {:.3} fwd {:>8} qdrop {:>6} rdrop {:>6} meanq {:>9.0} maxq {:>8}",
            l.link,
            l.utilisation,
            l.forwarded_packets,
            l.queue_drops,
            l.random_drops,
            l.mean_queue_bytes,
            l.max_queue_bytes
        );
    }
    let st = &out.stats;
    println!(
        "events {} data packets {} wall {:.3}s => {:.3} M data packets/s, jain {:.4}",
        st.events,
        st.data_packets,
        st.wall_s,
        st.data_packets as f64 / st.wall_s / 1e6,
        st.jain_goodput
    );
}

/// The census of `Simulation::memory`, its sum, and the peak RSS after parsing and now, in MiB
/// (as bench/htsim.sh and ab.sh print GNU time's peak RSS).
fn print_memory(parts: &[(&str, usize)], parsed_kib: u64) {
    let mib = |b: f64| b / f64::from(1u32 << 20);
    for (what, bytes) in parts {
        println!("memory {:>8.3} MiB  {what}", mib(*bytes as f64));
    }
    let total: usize = parts.iter().map(|(_, b)| b).sum();
    println!("memory {:>8.3} MiB  sum of the above", mib(total as f64));
    println!(
        "memory {:>8.3} MiB  peak RSS after parsing the scenario (binary, libraries, parser)",
        mib(parsed_kib as f64 * 1024.0)
    );
    println!(
        "memory {:>8.3} MiB  peak RSS at the end of the run (VmHWM)",
        mib(peak_rss_kib() as f64 * 1024.0)
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

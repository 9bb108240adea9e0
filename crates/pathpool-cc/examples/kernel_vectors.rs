//! Test vectors for the kernel port's fixed-point arithmetic (kernel/include/pp_cc_math.h).
//!
//! `cargo run -p pathpool-cc --example kernel_vectors > kernel/test/vectors.json`
//!
//! Each vector is one step of a freshly built controller (so LIA's alpha and OLIA's loss
//! intervals start from their initial state) on a random connection state in congestion
//! avoidance: the subflows' windows and RTTs, the event (one ACK of one MSS, or a loss), and
//! the window / ssthresh the reference controller leaves. kernel/test/host_test.c replays
//! each with the C functions and checks the stated error bound. Deterministic (fixed seed).

use pathpool_cc::{build, Ack, Params, Subflow};

/// SplitMix64: a fixed, dependency-free stream so the file is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

const MSS: u32 = 1448;

fn state(rng: &mut Rng, n: usize) -> Vec<Subflow> {
    (0..n)
        .map(|_| {
            let mut sf = Subflow::new(MSS);
            sf.cwnd = rng.uniform(2.0, 400.0);
            sf.ssthresh = sf.cwnd * rng.uniform(0.3, 1.0); // congestion avoidance
            let rtt = (rng.uniform(1.0, 300.0) * 1e6) as u64; // 1-300 ms, in ns
            // Whole microseconds, as the kernel sees them.
            let rtt = rtt / 1000 * 1000;
            sf.srtt = rtt;
            sf.min_rtt = rtt;
            sf.latest_rtt = rtt;
            sf
        })
        .collect()
}

fn sf_json(s: &[Subflow]) -> String {
    let parts: Vec<String> = s
        .iter()
        .map(|sf| format!("{{\"cwnd\": {:.17e}, \"rtt_us\": {}}}", sf.cwnd, sf.srtt / 1000))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn main() {
    let mut rng = Rng(0x5eed_6b65_726e_656c);
    let mut out = Vec::new();
    let mut params = Params::new();
    for algo in ["reno", "lia", "olia", "balia", "rsf-db"] {
        if algo == "rsf-db" {
            params.clear();
            params.insert("d".into(), pathpool_cc::ParamValue::Number(0.1));
        } else {
            params.clear();
        }
        for case in 0..200 {
            let n = 1 + (rng.next() % 4) as usize;
            let i = (rng.next() % n as u64) as usize;
            let mut sfs = state(&mut rng, n);
            let mut c = match build(algo, &params, n) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("skipping {algo}: {e}");
                    break;
                }
            };
            let rtt = sfs[i].srtt;
            let mut q_us = 0u64;
            if algo == "rsf-db" {
                // First ACK fixes the base one-way delay; the second carries q on top of it.
                let base = rtt / 2;
                c.on_ack(&mut sfs, i, &Ack { acked_bytes: MSS as u64, rtt_sample: Some(rtt),
                    one_way_delay: Some(base), now: 1 });
                q_us = (rng.uniform(0.0, 250.0) * 1000.0) as u64;
                let before = sf_json(&sfs);
                let w0 = sfs[i].cwnd;
                c.on_ack(&mut sfs, i, &Ack { acked_bytes: MSS as u64, rtt_sample: Some(rtt),
                    one_way_delay: Some(base + q_us * 1000), now: 2 });
                out.push(format!(
                    "{{\"algo\": \"{algo}\", \"event\": \"ack\", \"i\": {i}, \"d_us\": 100000, \"q_us\": {q_us}, \"subflows\": {before}, \"w_before\": {w0:.17e}, \"w_after\": {:.17e}}}",
                    sfs[i].cwnd
                ));
                continue;
            }
            let before = sf_json(&sfs);
            let w0 = sfs[i].cwnd;
            let loss = case % 4 == 3 && (algo == "reno" || algo == "balia");
            if loss {
                c.on_congestion_event(&mut sfs, i, 1);
                out.push(format!(
                    "{{\"algo\": \"{algo}\", \"event\": \"loss\", \"i\": {i}, \"subflows\": {before}, \"w_before\": {w0:.17e}, \"ssthresh_after\": {:.17e}}}",
                    sfs[i].ssthresh
                ));
            } else {
                // The transport refreshes the counters before the call (crate README): this
                // ACK's segment is delivered, as the kernel's snd_una has already moved.
                sfs[i].delivered += 1;
                c.on_ack(&mut sfs, i, &Ack { acked_bytes: MSS as u64, rtt_sample: Some(rtt),
                    one_way_delay: None, now: 1 });
                out.push(format!(
                    "{{\"algo\": \"{algo}\", \"event\": \"ack\", \"i\": {i}, \"q_us\": {q_us}, \"subflows\": {before}, \"w_before\": {w0:.17e}, \"w_after\": {:.17e}}}",
                    sfs[i].cwnd
                ));
            }
        }
    }
    rsf_lb_sequences(&mut rng, &mut out);
    println!("{{\"generator\": \"crates/pathpool-cc/examples/kernel_vectors.rs\", \"mss\": {MSS}, \"vectors\": [\n{}\n]}}", out.join(",\n"));
}

/// RSF-LB's loss estimate is state carried across events, so it is checked on scripted
/// sequences: one subflow in congestion avoidance, the transport's `delivered`/`lost` counters
/// advancing between events (a few packets per ACK, losses in bursts), ACKs and loss events in
/// a fixed pseudo-random order. Each step records the reference's inputs (window and RTT before
/// the step, counters) and its result (window after an ACK, ssthresh after a loss). The C side
/// takes each step's window from the vector but carries its own estimator from step to step,
/// so a different estimator (e.g. a cumulative lost/(delivered+lost)) fails.
fn rsf_lb_sequences(rng: &mut Rng, out: &mut Vec<String>) {
    for (seq, (mu, window, loss_pct)) in [(4.0, 100.0, 3u64), (4.0, 1000.0, 1), (20.0, 50.0, 8), (1.0, 300.0, 2)]
        .into_iter()
        .enumerate()
    {
        let mut params = Params::new();
        params.insert("mu".into(), pathpool_cc::ParamValue::Number(mu));
        params.insert("loss_window".into(), pathpool_cc::ParamValue::Number(window));
        let mut c = build("rsf-lb", &params, 1).expect("rsf-lb builds");
        let mut sfs = vec![Subflow::new(MSS)];
        sfs[0].cwnd = rng.uniform(20.0, 120.0);
        sfs[0].ssthresh = sfs[0].cwnd * 0.7;
        let rtt = ((rng.uniform(10.0, 150.0) * 1e6) as u64) / 1000 * 1000;
        sfs[0].srtt = rtt;
        sfs[0].min_rtt = rtt;
        sfs[0].latest_rtt = rtt;
        let mut steps = Vec::new();
        for _ in 0..250 {
            sfs[0].delivered += 1 + rng.next() % 3;
            if rng.next() % 100 < loss_pct {
                sfs[0].lost += 1 + rng.next() % 3;
            }
            let w0 = sfs[0].cwnd;
            let (d, l) = (sfs[0].delivered, sfs[0].lost);
            if rng.next() % 100 < 4 {
                c.on_congestion_event(&mut sfs, 0, 1);
                steps.push(format!(
                    "{{\"ev\": \"loss\", \"delivered\": {d}, \"lost\": {l}, \"rtt_us\": {}, \"w_before\": {w0:.17e}, \"ssthresh_after\": {:.17e}}}",
                    rtt / 1000, sfs[0].ssthresh
                ));
            } else {
                c.on_ack(&mut sfs, 0, &Ack { acked_bytes: MSS as u64, rtt_sample: Some(rtt), one_way_delay: None, now: 1 });
                steps.push(format!(
                    "{{\"ev\": \"ack\", \"delivered\": {d}, \"lost\": {l}, \"rtt_us\": {}, \"w_before\": {w0:.17e}, \"w_after\": {:.17e}}}",
                    rtt / 1000, sfs[0].cwnd
                ));
            }
            // Stay in congestion avoidance (the sequence checks the estimator, not slow start).
            if sfs[0].cwnd < sfs[0].ssthresh {
                sfs[0].ssthresh = sfs[0].cwnd;
            }
        }
        out.push(format!(
            "{{\"algo\": \"rsf-lb\", \"event\": \"seq\", \"seq\": {seq}, \"mu\": {mu}, \"loss_window\": {window}, \"steps\": [\n  {}]}}",
            steps.join(",\n  ")
        ));
    }
}

//! Test vectors for the kernel port's fixed-point arithmetic (kernel/include/pp_cc_math.h).
//!
//! `cargo run -p pathpool-cc --example kernel_vectors > kernel/test/vectors.json`
//!
//! Each vector is one step of a freshly built controller (so LIA's alpha and OLIA's loss
//! intervals start from their initial state) on a random connection state in congestion
//! avoidance: the subflows' windows and RTTs, the event (one ACK of one MSS, or a loss), and
//! the window / ssthresh the reference controller leaves. kernel/test/host_test.c replays
//! each with the C functions and checks the stated error bound. Deterministic (fixed seed).

use pathpool_cc::algos::{BaliaVariant, Generalized, Lia, Olia};
use pathpool_cc::{build_with_counting, Ack, Controller, Counting, Params, Subflow};

/// The counting of the single-step vectors (one MSS per ACK: both countings agree there). The
/// coupled sequences run in both (the BPF objects' load-time tunable `counting`).
const COUNTING: Counting = Counting::Acks;

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
        .map(|sf| {
            format!(
                "{{\"cwnd\": {:.17e}, \"rtt_us\": {}}}",
                sf.cwnd,
                sf.srtt / 1000
            )
        })
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
            let mut c = match build_with_counting(algo, &params, n, COUNTING) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("skipping {algo}: {e}");
                    break;
                }
            };
            if algo == "rsf-db" {
                let rtt = sfs[i].srtt;
                // First ACK fixes the base one-way delay; the second carries q on top of it.
                let base = rtt / 2;
                c.on_ack(
                    &mut sfs,
                    i,
                    &Ack {
                        acked_bytes: MSS as u64,
                        rtt_sample: Some(rtt),
                        one_way_delay: Some(base),
                        now: 1,
                    },
                );
                let q_us = (rng.uniform(0.0, 250.0) * 1000.0) as u64;
                let before = sf_json(&sfs);
                let w0 = sfs[i].cwnd;
                c.on_ack(
                    &mut sfs,
                    i,
                    &Ack {
                        acked_bytes: MSS as u64,
                        rtt_sample: Some(rtt),
                        one_way_delay: Some(base + q_us * 1000),
                        now: 2,
                    },
                );
                out.push(format!(
                    "{{\"algo\": \"{algo}\", \"event\": \"ack\", \"i\": {i}, \"d_us\": 100000, \"q_us\": {q_us}, \"subflows\": {before}, \"w_before\": {w0:.17e}, \"w_after\": {:.17e}}}",
                    sfs[i].cwnd
                ));
                continue;
            }
            let loss = case % 4 == 3 && (algo == "reno" || algo == "balia");
            out.push(one_step(&mut *c, &mut sfs, i, algo, loss, ""));
        }
    }
    rsf_lb_sequences(&mut rng, &mut out);
    coupled_sequences(&mut rng, &mut out, Counting::Acks, &COUPLED_SEQ);
    coupled_sequences(&mut rng, &mut out, Counting::Bytes, &COUPLED_SEQ);
    // The four earlier designs from a stream of their own, so that the vectors above stay
    // what they were when these were added.
    let mut rng = Rng(0x6e73_6469_3230_3131);
    nsdi2011_steps(&mut rng, &mut out);
    coupled_sequences(&mut rng, &mut out, Counting::Acks, &NSDI2011);
    coupled_sequences(&mut rng, &mut out, Counting::Bytes, &NSDI2011);
    println!("{{\"generator\": \"crates/pathpool-cc/examples/kernel_vectors.rs\", \"mss\": {MSS}, \"vectors\": [\n{}\n]}}", out.join(",\n"));
}

const COUPLED_SEQ: [&str; 4] = ["lia", "olia", "balia", "balia-kernel"];
const NSDI2011: [&str; 4] = ["ewtcp", "coupled", "semicoupled", "max"];

/// The weight `a` a vector of `algo` on `n` subflows runs with (EWTCP, Semicoupled; `None`
/// for the others) and the parameters that give it: the default (EWTCP 1/n^2, Semicoupled 1)
/// when `explicit` is false, else a written `a` (EWTCP 1, Semicoupled 0.5).
fn weight(algo: &str, n: usize, explicit: bool) -> (Option<f64>, Params) {
    let mut params = Params::new();
    let a = match (algo, explicit) {
        ("ewtcp", false) => 1.0 / (n * n) as f64,
        ("semicoupled", false) => 1.0,
        ("ewtcp", true) => 1.0,
        ("semicoupled", true) => 0.5,
        _ => return (None, params),
    };
    if explicit {
        params.insert("a".into(), pathpool_cc::ParamValue::Number(a));
    }
    (Some(a), params)
}

fn weight_json(a: Option<f64>) -> String {
    a.map(|a| format!(", \"a\": {a:.17e}")).unwrap_or_default()
}

/// Single steps of EWTCP, Coupled, Semicoupled and Max on random states of 1-4 subflows in
/// congestion avoidance (as the first loop of `main`): one ACK of one MSS, or a loss (every
/// fourth case; Coupled's decrease is its own, the others' are Reno's; every eighth on windows
/// below 4 segments, where the floors decide).
fn nsdi2011_steps(rng: &mut Rng, out: &mut Vec<String>) {
    for algo in NSDI2011 {
        for case in 0..200 {
            let n = 1 + (rng.next() % 4) as usize;
            let i = (rng.next() % n as u64) as usize;
            let mut sfs = state(rng, n);
            if case % 8 == 7 {
                // Small windows: the floors (Coupled's 1 with siblings, 2 alone) decide.
                for sf in &mut sfs {
                    sf.cwnd = rng.uniform(1.0, 4.0);
                    sf.ssthresh = sf.cwnd;
                }
            }
            let (a, params) = weight(algo, n, case % 2 == 1);
            let mut c = build_with_counting(algo, &params, n, COUNTING).expect("builds");
            out.push(one_step(
                &mut *c,
                &mut sfs,
                i,
                algo,
                case % 4 == 3,
                &weight_json(a),
            ));
        }
    }
}

/// One step of a fresh controller on subflow `i` of `sfs` (a loss event, or an ACK of one MSS
/// carrying the subflow's RTT) as a vector; `extra` is inserted after `"i"` (JSON fields).
fn one_step(
    c: &mut dyn Controller,
    sfs: &mut [Subflow],
    i: usize,
    algo: &str,
    loss: bool,
    extra: &str,
) -> String {
    let before = sf_json(sfs);
    let w0 = sfs[i].cwnd;
    if loss {
        c.on_congestion_event(sfs, i, 1);
        return format!(
            "{{\"algo\": \"{algo}\", \"event\": \"loss\", \"i\": {i}{extra}, \"subflows\": {before}, \"w_before\": {w0:.17e}, \"ssthresh_after\": {:.17e}}}",
            sfs[i].ssthresh
        );
    }
    // The transport refreshes the counters before the call (crate README): this ACK's
    // segment is delivered, as the kernel's snd_una has already moved.
    sfs[i].delivered += 1;
    let rtt = sfs[i].srtt;
    c.on_ack(
        sfs,
        i,
        &Ack {
            acked_bytes: MSS as u64,
            rtt_sample: Some(rtt),
            one_way_delay: None,
            now: 1,
        },
    );
    format!(
        "{{\"algo\": \"{algo}\", \"event\": \"ack\", \"i\": {i}{extra}, \"q_us\": 0, \"subflows\": {before}, \"w_before\": {w0:.17e}, \"w_after\": {:.17e}}}",
        sfs[i].cwnd
    )
}

/// RSF-LB's loss estimate is state carried across events, so it is checked on scripted
/// sequences: one subflow in congestion avoidance, the transport's `delivered`/`lost` counters
/// advancing between events (a few packets per ACK, losses in bursts), ACKs and loss events in
/// a fixed pseudo-random order. Each step records the reference's inputs (window and RTT before
/// the step, counters) and its result (window after an ACK, ssthresh after a loss). The C side
/// takes each step's window from the vector but carries its own estimator from step to step,
/// so a different estimator (e.g. a cumulative lost/(delivered+lost)) fails.
fn rsf_lb_sequences(rng: &mut Rng, out: &mut Vec<String>) {
    for (seq, (mu, window, loss_pct)) in [
        (4.0, 100.0, 3u64),
        (4.0, 1000.0, 1),
        (20.0, 50.0, 8),
        (1.0, 300.0, 2),
    ]
    .into_iter()
    .enumerate()
    {
        let mut params = Params::new();
        params.insert("mu".into(), pathpool_cc::ParamValue::Number(mu));
        params.insert(
            "loss_window".into(),
            pathpool_cc::ParamValue::Number(window),
        );
        let mut c = build_with_counting("rsf-lb", &params, 1, COUNTING).expect("rsf-lb builds");
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
                c.on_ack(
                    &mut sfs,
                    0,
                    &Ack {
                        acked_bytes: MSS as u64,
                        rtt_sample: Some(rtt),
                        one_way_delay: None,
                        now: 1,
                    },
                );
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

/// The coupled algorithms' state carried across events, checked on scripted sequences on 2-3
/// subflows: ACKs (slow start and congestion avoidance), loss events (entry to recovery), RTOs
/// and recovery exits, in a fixed pseudo-random order. The generator plays the transport:
/// `delivered` advances before each ACK (also while in recovery, where the controller is not
/// called), a loss event puts the subflow in recovery until its exit, an RTO leaves it in slow
/// start with cwnd = 1, RTTs drift by a few percent.
///
/// Each step records the state of every subflow before it (`sf`: cwnd, ssthresh or -1 for
/// infinity, srtt in us, in recovery, acknowledged bytes `pos`) and after it the event
/// subflow's cwnd and ssthresh, plus the hidden state: LIA's stored alpha/w_total (`ratio`, -1
/// = none yet) and number of recomputations (`recomp`); OLIA's l_r of every subflow (`l`), its
/// sets B and M and alpha_r of the event subflow. The C side (host_test.c) takes every step's
/// windows from `sf` but carries LIA's stored alpha and forced flag and OLIA's loss marks
/// itself, from step to step, as the BPF objects do; so a missing forced recomputation, an
/// alpha recomputed after (not before) the RTO's cut, or marks advanced at the wrong moment
/// fail.
///
/// EWTCP, Coupled, Semicoupled and Max keep no hidden state: their sequences check slow start,
/// both countings, Coupled's decrease with siblings in recovery, and RTOs against the Rust
/// controllers (EWTCP and Semicoupled with their default weight in sequences 0 and 2, a
/// written one in sequence 1: `a` in the vector).
fn coupled_sequences(rng: &mut Rng, out: &mut Vec<String>, counting: Counting, algos: &[&str]) {
    for (a, algo) in algos.iter().enumerate() {
        for seq in 0..3 {
            let n = 2 + ((seq + a) % 2);
            let mut c: Box<dyn Controller>;
            let mut lia = Lia::new(false);
            lia.counting = counting;
            let mut olia = Olia::new(n);
            olia.counting = counting;
            let balia = |v| {
                let mut b = Generalized::balia(v);
                b.counting = counting;
                b
            };
            let (weight_a, params) = weight(algo, n, seq == 1);
            c = match *algo {
                "balia" => Box::new(balia(BaliaVariant::Continuous)),
                "balia-kernel" => Box::new(balia(BaliaVariant::Kernel)),
                "lia" | "olia" => Box::new(Lia::new(false)), // placeholder: the typed ones run
                other => build_with_counting(other, &params, n, counting).expect("builds"),
            };
            let mut sfs: Vec<Subflow> = (0..n)
                .map(|_| {
                    let mut sf = Subflow::new(MSS);
                    sf.cwnd = rng.uniform(4.0, 40.0).floor();
                    let rtt = ((rng.uniform(10.0, 200.0) * 1e6) as u64) / 1000 * 1000;
                    sf.srtt = rtt;
                    sf.min_rtt = rtt;
                    sf.latest_rtt = rtt;
                    sf
                })
                .collect();
            let mut steps = Vec::new();
            for _ in 0..300 {
                let i = (rng.next() % n as u64) as usize;
                let before = seq_state(&sfs);
                let roll = rng.next() % 100;
                let ev;
                let mut segs = 0;
                if sfs[i].in_recovery {
                    // Recovery: bytes are acknowledged without controller calls, then it ends.
                    sfs[i].delivered += 1 + rng.next() % 4;
                    if roll < 40 {
                        ev = "exit";
                        match *algo {
                            "lia" => lia.on_recovery_exit(&mut sfs, i, 1),
                            "olia" => olia.on_recovery_exit(&mut sfs, i, 1),
                            _ => c.on_recovery_exit(&mut sfs, i, 1),
                        }
                        sfs[i].in_recovery = false;
                    } else {
                        ev = "rec_ack";
                    }
                } else if roll < 6 {
                    ev = "loss";
                    match *algo {
                        "lia" => lia.on_congestion_event(&mut sfs, i, 1),
                        "olia" => olia.on_congestion_event(&mut sfs, i, 1),
                        _ => c.on_congestion_event(&mut sfs, i, 1),
                    }
                    sfs[i].in_recovery = true;
                    sfs[i].loss_events += 1;
                } else if roll < 8 {
                    ev = "rto";
                    match *algo {
                        "lia" => lia.on_rto(&mut sfs, i, 1),
                        "olia" => olia.on_rto(&mut sfs, i, 1),
                        _ => c.on_rto(&mut sfs, i, 1),
                    }
                    sfs[i].loss_events += 1;
                } else {
                    ev = "ack";
                    segs = 1 + rng.next() % 2;
                    sfs[i].delivered += segs;
                    let drift = rng.uniform(0.97, 1.03);
                    let rtt = (((sfs[i].srtt as f64) * drift) as u64).clamp(5_000_000, 400_000_000)
                        / 1000
                        * 1000;
                    sfs[i].srtt = rtt;
                    let ack = Ack {
                        acked_bytes: segs * MSS as u64,
                        rtt_sample: Some(rtt),
                        one_way_delay: None,
                        now: 1,
                    };
                    match *algo {
                        "lia" => lia.on_ack(&mut sfs, i, &ack),
                        "olia" => olia.on_ack(&mut sfs, i, &ack),
                        _ => c.on_ack(&mut sfs, i, &ack),
                    }
                }
                // The state before the step, but with this step's RTT (the ACK carries it).
                let mut rec = format!(
                    "{{\"ev\": \"{ev}\", \"i\": {i}, \"segs\": {segs}, \"rtt_us\": {}, \"pos\": {}, \"sf\": {before}, \"cwnd_after\": {:.17e}, \"ssthresh_after\": {}",
                    sfs[i].srtt / 1000,
                    sfs[i].delivered * u64::from(MSS),
                    sfs[i].cwnd,
                    fmt_ss(sfs[i].ssthresh)
                );
                if *algo == "lia" {
                    let r = lia.alpha_over_total();
                    rec += &format!(
                        ", \"ratio\": {}, \"recomp\": {}",
                        if r.is_finite() {
                            format!("{r:.17e}")
                        } else {
                            "-1".into()
                        },
                        lia.recomputations()
                    );
                }
                if *algo == "olia" {
                    let ls: Vec<String> = (0..n)
                        .map(|k| {
                            let (a, b) = olia.inter_loss_bytes(k);
                            a.max(b).to_string()
                        })
                        .collect();
                    let (b, m) = olia.sets(&sfs, i);
                    let bits = |v: &[bool]| {
                        v.iter()
                            .map(|&x| if x { "1" } else { "0" })
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    rec += &format!(
                        ", \"l\": [{}], \"B\": [{}], \"M\": [{}], \"alpha\": {:.17e}",
                        ls.join(", "),
                        bits(&b),
                        bits(&m),
                        olia.alpha(&sfs, i)
                    );
                }
                rec.push('}');
                steps.push(rec);
            }
            out.push(format!(
                "{{\"algo\": \"{}\", \"event\": \"seq\", \"seq\": {seq}, \"counting\": \"{}\"{}, \"variant\": \"{}\", \"n\": {n}, \"steps\": [\n  {}]}}",
                if algo.starts_with("balia") { "balia" } else { algo },
                counting.name(),
                weight_json(weight_a),
                if *algo == "balia-kernel" { "kernel" } else { "continuous" },
                steps.join(",\n  ")
            ));
        }
    }
}

fn fmt_ss(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.17e}")
    } else {
        "-1".into()
    }
}

fn seq_state(s: &[Subflow]) -> String {
    let parts: Vec<String> = s
        .iter()
        .map(|sf| {
            format!(
                "{{\"cwnd\": {:.17e}, \"ssthresh\": {}, \"rtt_us\": {}, \"rec\": {}, \"pos\": {}}}",
                sf.cwnd,
                fmt_ss(sf.ssthresh),
                sf.srtt / 1000,
                u8::from(sf.in_recovery),
                sf.delivered * u64::from(MSS)
            )
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

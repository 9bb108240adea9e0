//! Exact increments and decrements on concrete 2- and 3-subflow states, against arithmetic done
//! by hand (written in the comments). Windows in segments, RTTs in ms.

mod common;

use common::{ack, ca, close, near, num, params};
use pathpool_cc::algos::{BaliaVariant, Generalized, Max};
use pathpool_cc::{build, build_with_counting, Counting, ParamValue, Params, Subflow};

fn after_ack(name: &str, ps: &Params, mut sfs: Vec<Subflow>, i: usize) -> Vec<Subflow> {
    let mut c = build(name, ps, sfs.len()).unwrap();
    c.on_ack(&mut sfs, i, &ack(0));
    sfs
}

fn after_loss(name: &str, ps: &Params, mut sfs: Vec<Subflow>, i: usize) -> Vec<Subflow> {
    let mut c = build(name, ps, sfs.len()).unwrap();
    c.on_congestion_event(&mut sfs, i, 0);
    sfs
}

#[test]
fn reno_adds_one_over_w_and_halves() {
    // w = 10: +1/10 per ACK. Loss at w = 10.1: ssthresh = 5.05, cwnd = 5.05.
    let s = after_ack("reno", &Params::new(), vec![ca(10.0, 50), ca(20.0, 50)], 0);
    close(s[0].cwnd, 10.1);
    close(s[1].cwnd, 20.0);
    let s = after_loss("reno", &Params::new(), s, 0);
    close(s[0].ssthresh, 5.05);
    close(s[0].cwnd, 5.05);
    // Floor: w = 3 halves to 1.5, floored at ssthresh 2.
    let s = after_loss("reno", &Params::new(), vec![ca(3.0, 50)], 0);
    close(s[0].ssthresh, 2.0);
}

#[test]
fn reno_slow_start_grows_by_acked_segments_up_to_ssthresh() {
    let mut s = vec![ca(10.0, 50)];
    s[0].ssthresh = 14.0;
    let mut c = build("reno", &Params::new(), 1).unwrap();
    // 3 segments acked: 10 -> 13; 3 more: 13 -> 14 (capped), the 2 left over go on into CA
    // (Linux tcp_reno_cong_avoid): 14 + 2/14; then CA: 3 segments, 3/w.
    let mut a = ack(0);
    a.acked_bytes = 3000;
    c.on_ack(&mut s, 0, &a);
    close(s[0].cwnd, 13.0);
    c.on_ack(&mut s, 0, &a);
    let w = 14.0 + 2.0 / 14.0;
    close(s[0].cwnd, w);
    c.on_ack(&mut s, 0, &a);
    close(s[0].cwnd, w + 3.0 / w);
}

#[test]
fn reno_slow_start_with_ack_counting_drops_the_leftover_and_steps_once_per_ack() {
    let mut s = vec![ca(10.0, 50)];
    s[0].ssthresh = 14.0;
    let mut c = build_with_counting("reno", &Params::new(), 1, Counting::Acks).unwrap();
    // v0.95: 10 -> 13 -> 14 (capped, leftover dropped); then one 1/14 step for 3 segments.
    let mut a = ack(0);
    a.acked_bytes = 3000;
    c.on_ack(&mut s, 0, &a);
    close(s[0].cwnd, 13.0);
    c.on_ack(&mut s, 0, &a);
    close(s[0].cwnd, 14.0);
    c.on_ack(&mut s, 0, &a);
    close(s[0].cwnd, 14.0 + 1.0 / 14.0);
}

#[test]
fn ewtcp_weight_a_and_its_default_one_over_n_squared() {
    // Default a = 1/n^2 = 1/4 for n = 2: w_0 = 10 -> 10 + 0.25/10 = 10.025.
    let s = after_ack("ewtcp", &Params::new(), vec![ca(10.0, 50), ca(20.0, 50)], 0);
    close(s[0].cwnd, 10.025);
    // n = 3: a = 1/9: 10 + 1/90.
    let s = after_ack(
        "ewtcp",
        &Params::new(),
        vec![ca(10.0, 50), ca(20.0, 50), ca(5.0, 9)],
        0,
    );
    close(s[0].cwnd, 10.0 + 1.0 / 90.0);
    // a = 2: 20 + 2/20 = 20.1. Loss on path 1 (w = 20): ssthresh = cwnd = 10.
    let p = params(&[("a", num(2.0))]);
    let s = after_ack("ewtcp", &p, vec![ca(10.0, 50), ca(20.0, 50)], 1);
    close(s[1].cwnd, 20.1);
    let s = after_loss("ewtcp", &p, vec![ca(10.0, 50), ca(20.0, 50)], 1);
    close(s[1].cwnd, 10.0);
    close(s[0].cwnd, 10.0);
}

#[test]
fn coupled_increase_is_one_over_total_and_decrease_is_half_the_total() {
    // w = (10, 20, 30): w_total = 60; ACK on 0: 10 + 1/60.
    let s = after_ack(
        "coupled",
        &Params::new(),
        vec![ca(10.0, 50), ca(20.0, 80), ca(30.0, 10)],
        0,
    );
    close(s[0].cwnd, 10.0 + 1.0 / 60.0);
    // w = (4, 6, 30): total 40; loss on 2: 30 - 40/2 = 10.
    let base = vec![ca(4.0, 50), ca(6.0, 50), ca(30.0, 50)];
    let s = after_loss("coupled", &Params::new(), base.clone(), 2);
    close(s[2].ssthresh, 10.0);
    close(s[2].cwnd, 10.0);
    // Loss on 0: 4 - 20 = -16 -> floor 1 (three active paths, Peng et al. 2016, Section V).
    let s = after_loss("coupled", &Params::new(), base.clone(), 0);
    close(s[0].ssthresh, 1.0);
    close(s[0].cwnd, 1.0);
    // Only path 0 active: total = 4, 4 - 2 = 2 (single path: Reno's max(w/2, 2)).
    let mut lone = base;
    lone[1].active = false;
    lone[2].active = false;
    let s = after_loss("coupled", &Params::new(), lone.clone(), 0);
    close(s[0].ssthresh, 2.0);
    let mut c = build("coupled", &Params::new(), 3).unwrap();
    c.on_ack(&mut lone, 0, &ack(0));
    close(lone[0].cwnd, 4.25); // 4 + 1/4: inactive windows do not count.
}

#[test]
fn semicoupled_increase_a_over_total_decrease_half_own_window() {
    // w = (10, 30), a = 1: ACK on 1: 30 + 1/40 = 30.025; a = 0.5: 30 + 0.5/40 = 30.0125.
    let s = after_ack(
        "semicoupled",
        &Params::new(),
        vec![ca(10.0, 50), ca(30.0, 50)],
        1,
    );
    close(s[1].cwnd, 30.025);
    let p = params(&[("a", num(0.5))]);
    let s = after_ack("semicoupled", &p, vec![ca(10.0, 50), ca(30.0, 50)], 1);
    close(s[1].cwnd, 30.0125);
    // Loss on 1: 30/2 = 15.
    let s = after_loss(
        "semicoupled",
        &Params::new(),
        vec![ca(10.0, 50), ca(30.0, 50)],
        1,
    );
    close(s[1].cwnd, 15.0);
}

#[test]
fn max_increase_from_rates() {
    // w = (10, 20), rtt = (100, 200) ms.
    // w/rtt^2 = 10/0.01 = 1000, 20/0.04 = 500 -> max 1000.
    // sum w/rtt = 100 + 100 = 200, squared 40000. Increase 1000/40000 = 0.025 on either path.
    let base = vec![ca(10.0, 100), ca(20.0, 200)];
    close(Max::new().increase(&base, 0), 0.025);
    let s = after_ack("max", &Params::new(), base.clone(), 1);
    close(s[1].cwnd, 20.025);
    // Three paths: add w = 5 at 50 ms: 5/0.0025 = 2000 (new max); sum = 200 + 100 = 300.
    // Increase 2000/90000 = 0.0222...
    let three = vec![ca(10.0, 100), ca(20.0, 200), ca(5.0, 50)];
    close(Max::new().increase(&three, 0), 2000.0 / 90000.0);
    let s = after_loss("max", &Params::new(), three, 1);
    close(s[1].cwnd, 10.0);
    // A path without an RTT sample takes Reno's 1/w and is left out of the others' sums.
    let unknown = vec![ca(10.0, 100), ca(20.0, 0)];
    close(Max::new().increase(&unknown, 1), 0.05);
    close(Max::new().increase(&unknown, 0), 0.1); // (10/0.01)/(100)^2 = 0.1
}

#[test]
fn balia_continuous_increase_and_decrease() {
    // w = (10, 20), rtt 100 ms both: x = (100, 200), sum 300, x_max 200.
    // Path 0: alpha = 2. Increase = 100/(0.1 * 300^2) * (1+2)/2 * (4+2)/5 = (1/90) * 1.5 * 1.2 = 0.02.
    // Path 1: alpha = 1. Increase = 200/(0.1 * 90000) = 0.0222...
    let base = vec![ca(10.0, 100), ca(20.0, 100)];
    let b = Generalized::balia(BaliaVariant::Continuous);
    close(b.increase(&base, 0), 0.02);
    close(b.increase(&base, 1), 200.0 / 9000.0);
    let s = after_ack("balia", &Params::new(), base.clone(), 0);
    close(s[0].cwnd, 10.02);
    // Loss on 0: 10/2 * min(2, 1.5) = 7.5 -> ssthresh 2.5.
    let s = after_loss("balia", &Params::new(), base.clone(), 0);
    close(s[0].ssthresh, 2.5);
    close(s[0].cwnd, 2.5);
    // Loss on 1 (alpha 1): 20 - 10 = 10.
    let s = after_loss("balia", &Params::new(), base, 1);
    close(s[1].cwnd, 10.0);
    // w = (10, 12): alpha_0 = 1.2, decrease 5 * 1.2 = 6 -> 4.
    let s = after_loss(
        "balia",
        &Params::new(),
        vec![ca(10.0, 100), ca(12.0, 100)],
        0,
    );
    close(s[0].ssthresh, 4.0);
    // w = (1.5, 20): alpha_0 = 13.3, decrease 0.75 * 1.5 = 1.125 -> 0.375, floored at 1
    // (two paths: Peng et al. 2016, Section V: minimum ssthresh 1).
    let s = after_loss(
        "balia",
        &Params::new(),
        vec![ca(1.5, 100), ca(20.0, 100)],
        0,
    );
    close(s[0].ssthresh, 1.0);
}

#[test]
fn balia_three_paths_unequal_rtts() {
    // w = (10, 20, 6), rtt = (100, 200, 50): x = (100, 100, 120), sum 320, x_max 120.
    // Path 0: alpha = 1.2. Increase = 100/(0.1 * 320^2) * 1.1 * 1.04 = (100/10240) * 1.144 = 0.01117188
    let s = vec![ca(10.0, 100), ca(20.0, 200), ca(6.0, 50)];
    close(
        Generalized::balia(BaliaVariant::Continuous).increase(&s, 0),
        100.0 / 10240.0 * 1.1 * 1.04,
    );
    near(
        Generalized::balia(BaliaVariant::Continuous).increase(&s, 0),
        0.01117188,
        1e-8,
    );
    // Path 2: alpha = 1. Increase = 120/(0.05 * 102400) = 0.0234375.
    close(
        Generalized::balia(BaliaVariant::Continuous).increase(&s, 2),
        0.0234375,
    );
}

#[test]
fn balia_kernel_variant_quantises_alpha_in_the_decrease() {
    let kernel = params(&[("variant", ParamValue::Text("kernel".into()))]);
    // alpha_0 = 1.2 -> kernel uses floor(1.2) = 1: decrease 5 -> ssthresh 5 (continuous: 4).
    let s = after_loss("balia", &kernel, vec![ca(10.0, 100), ca(12.0, 100)], 0);
    close(s[0].ssthresh, 5.0);
    // alpha_0 = 2.5 -> floor 2 -> min(2, 1.5) = 1.5: decrease 7.5 -> 2.5 (0.75 w).
    let s = after_loss("balia", &kernel, vec![ca(10.0, 100), ca(25.0, 100)], 0);
    close(s[0].ssthresh, 2.5);
    // alpha_0 = 1.9 -> floor 1: w/2. Continuous would take 1.5: 10 - 7.5.
    let s = after_loss("balia", &kernel, vec![ca(10.0, 100), ca(19.0, 100)], 0);
    close(s[0].ssthresh, 5.0);
    let s = after_loss(
        "balia",
        &Params::new(),
        vec![ca(10.0, 100), ca(19.0, 100)],
        0,
    );
    close(s[0].ssthresh, 2.5);
    // Floor 1 with several paths: w = (1.8, 40): 1.8 - 0.9*1.5 = 0.45 -> 1.
    let s = after_loss("balia", &kernel, vec![ca(1.8, 100), ca(40.0, 100)], 0);
    close(s[0].ssthresh, 1.0);
    // The increase is the same continuous formula: 10 + 0.02 as above.
    let s = after_ack("balia", &kernel, vec![ca(10.0, 100), ca(20.0, 100)], 0);
    close(s[0].cwnd, 10.02);
}

#[test]
fn generalized_with_lia_labels_is_max_and_with_swapped_labels_is_not() {
    // Equal RTTs 100 ms, w = (10, 20): x = (100, 200), sum 300, a_0 = 2.
    let base = vec![ca(10.0, 100), ca(20.0, 100)];
    // (eta, beta) = (0, 1): I_0 = 100/(0.1*90000) * (1 + 1*(2-1)) * 1 = 0.0222..; D_0 = 10/2 = 5.
    let lia_labels = Generalized::new(0.0, 1.0);
    close(lia_labels.increase(&base, 0), 2.0 / 90.0);
    close(lia_labels.increase(&base, 0), Max::new().increase(&base, 0));
    close(lia_labels.increase(&base, 1), Max::new().increase(&base, 1));
    close(lia_labels.decrease(&base, 0), 5.0);
    // (beta, eta) = (0, 1), i.e. eta = 1, beta = 0: same increase, decrease 10/2 * 2 = 10 (not LIA's 5).
    let swapped = Generalized::new(1.0, 0.0);
    close(swapped.increase(&base, 0), 2.0 / 90.0);
    close(swapped.decrease(&base, 0), 10.0);
    // Through the registry: (0, 1) halves path 0 like Max; (1, 0) takes the whole window (-> 2).
    let p = params(&[("eta", num(0.0)), ("beta", num(1.0))]);
    close(after_loss("generalized", &p, base.clone(), 0)[0].cwnd, 5.0);
    close(
        after_loss("max", &Params::new(), base.clone(), 0)[0].cwnd,
        5.0,
    );
    let p = params(&[("eta", num(1.0)), ("beta", num(0.0))]);
    close(after_loss("generalized", &p, base, 0)[0].cwnd, 2.0);
}

#[test]
fn generalized_with_unequal_rtts_differs_from_max() {
    // w = (10, 40), rtt = (100, 200): x = (100, 200), sum 300.
    // Max: w/rtt^2 = 1000, 1000; increase 1000/90000 = 0.0111 on both paths.
    // (eta, beta) = (0, 1) on path 0: a = 2, I = 100/(0.1 * 90000) * 2 = 0.0222 (x_max/tau_0 in place of
    // max_k x_k/tau_k); on path 1: a = 1, I = 200/(0.2*90000) = 0.0111 = Max.
    let s = vec![ca(10.0, 100), ca(40.0, 200)];
    close(Max::new().increase(&s, 0), 1.0 / 90.0);
    close(Generalized::new(0.0, 1.0).increase(&s, 0), 2.0 / 90.0);
    close(
        Generalized::new(0.0, 1.0).increase(&s, 1),
        Max::new().increase(&s, 1),
    );
}

#[test]
fn generalized_balia_labels_give_balias_increase_but_not_its_decrease() {
    let b = Generalized::balia(BaliaVariant::Continuous);
    // (eta, beta) = (0.5, 0.2) and the swapped (0.2, 0.5): I = x_r/(tau (sum x)^2) (1+0.5(a-1))(1+0.2(a-1))
    // = x_r/(tau (sum x)^2) (1+a)/2 (4+a)/5, Balia's increase, for any state.
    let states = [
        vec![ca(10.0, 100), ca(20.0, 100)],
        vec![ca(10.0, 100), ca(12.0, 100)],
        vec![ca(7.0, 40), ca(30.0, 250)],
        vec![ca(10.0, 100), ca(20.0, 200), ca(6.0, 50)],
    ];
    for s in states {
        for i in 0..s.len() {
            close(
                Generalized::new(0.5, 0.2).increase(&s, i),
                b.increase(&s, i),
            );
            close(
                Generalized::new(0.2, 0.5).increase(&s, i),
                b.increase(&s, i),
            );
        }
    }
    // Decrease at w = (10, 12), a_0 = 1.2: Balia 5 * min(1.2, 1.5) = 6;
    // family eta = 0.5: 5 * (1 + 0.5*0.2) = 5.5; eta = 0.2: 5 * (1 + 0.2*0.2) = 5.2.
    let s = vec![ca(10.0, 100), ca(12.0, 100)];
    close(b.decrease(&s, 0), 6.0);
    close(Generalized::new(0.5, 0.2).decrease(&s, 0), 5.5);
    close(Generalized::new(0.2, 0.5).decrease(&s, 0), 5.2);
    // Three paths w = (10, 20, 6), rtt = (100, 200, 50): x = (100, 100, 120), sum 320, a_0 = 1.2:
    // I_0 = 100/(0.1 * 102400) * 1.1 * 1.04 = 0.01117188 (Balia's, see balia_three_paths_unequal_rtts);
    // D_0 (eta 0.5) = 5 * 1.1 = 5.5.
    let s = vec![ca(10.0, 100), ca(20.0, 200), ca(6.0, 50)];
    near(Generalized::new(0.5, 0.2).increase(&s, 0), 0.01117188, 1e-8);
    close(Generalized::new(0.5, 0.2).decrease(&s, 0), 5.5);
}

#[test]
fn generalized_default_is_balia_point_and_floor_is_two() {
    // Defaults eta = 0.5, beta = 0.2: increase on (10, 20) path 0 = 0.02 (as Balia).
    let s = after_ack(
        "generalized",
        &Params::new(),
        vec![ca(10.0, 100), ca(20.0, 100)],
        0,
    );
    close(s[0].cwnd, 10.02);
    // w = (2.5, 50): a_0 = 20, D = 1.25 * (1 + 0.5*19) = 13.125 > w: ssthresh floored at 2.
    let s = after_loss(
        "generalized",
        &Params::new(),
        vec![ca(2.5, 100), ca(50.0, 100)],
        0,
    );
    close(s[0].ssthresh, 2.0);
}

#[test]
fn balia_is_the_family_member_with_the_slides_float_operations() {
    // Balia = Generalized::balia = (eta, beta) = (0.5, 0.2) with its capped decrease. Its increase
    // must be the slide formula operation for operation (result files stay bit-identical), on
    // states with 1-3 paths, equal and unequal RTTs. The family evaluated as 1 + p (a - 1) (the
    // implementation before the merge) differs from it in the last bits on some of these states.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let family = Generalized::new(0.5, 0.2);
    let balia = Generalized::balia(BaliaVariant::Continuous);
    let mut old_form_differs = 0;
    for case in 0..300 {
        let n = 1 + case % 3;
        let s: Vec<Subflow> = (0..n)
            .map(|_| ca(2.0 + 200.0 * next(), 5 + (300.0 * next()) as u64))
            .collect();
        for i in 0..n {
            let x: Vec<f64> = s.iter().map(|f| f.cwnd / f.srtt_secs().unwrap()).collect();
            let (x_r, tau_r) = (x[i], s[i].srtt_secs().unwrap());
            let sum: f64 = x.iter().sum();
            let a = x.iter().cloned().fold(0.0, f64::max) / x_r;
            let slide = x_r / (tau_r * sum * sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
            assert_eq!(
                balia.increase(&s, i).to_bits(),
                slide.to_bits(),
                "{s:?} {i}"
            );
            assert_eq!(
                family.increase(&s, i).to_bits(),
                slide.to_bits(),
                "{s:?} {i}"
            );
            let w = s[i].cwnd;
            assert_eq!(
                balia.decrease(&s, i).to_bits(),
                (w / 2.0 * a.min(1.5)).to_bits()
            );
            let old = x_r / (tau_r * sum * sum) * (1.0 + 0.2 * (a - 1.0)) * (1.0 + 0.5 * (a - 1.0));
            old_form_differs += usize::from(old.to_bits() != slide.to_bits());
        }
    }
    assert!(old_form_differs > 10, "{old_form_differs}");
    // Max's labels (0, 1): the factor 1/1 form gives exactly a, and a single path exactly 1/w.
    let s = vec![ca(10.0, 100), ca(20.0, 100)];
    assert_eq!(
        Generalized::new(0.0, 1.0).increase(&s, 0).to_bits(),
        (100.0 / (0.1 * 300.0 * 300.0) * 2.0f64).to_bits()
    );
}

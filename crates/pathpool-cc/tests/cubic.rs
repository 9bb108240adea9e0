//! CUBIC (RFC 9438) on one subflow: the cubic curve, the Reno-friendly region, fast convergence.

mod common;

use common::{ca, close, MSS};
use pathpool_cc::algos::Cubic;
use pathpool_cc::{Ack, Controller, Nanos};

const SEC: Nanos = 1_000_000_000;

fn ack_at(now: Nanos) -> Ack {
    Ack {
        acked_bytes: u64::from(MSS),
        rtt_sample: None,
        one_way_delay: None,
        now,
    }
}

#[test]
fn cubic_curve_reno_region_and_fast_convergence() {
    let mut s = vec![ca(100.0, 100)];
    let mut c = Cubic::new(1);
    // Loss at w = 100 (no previous W_max): W_max = 100, ssthresh = cwnd = 0.7 * 100 = 70.
    c.on_congestion_event(&mut s, 0, 0);
    close(c.w_max(0), 100.0);
    close(s[0].cwnd, 70.0);
    close(s[0].ssthresh, 70.0);
    // First CA ACK at t = 1 s opens the epoch: K = cbrt((100 - 70)/0.4) = cbrt(75) = 4.2171633 s.
    // W_cubic(0) = 0.4 (0 - K)^3 + 100 = 70. W_est = 70 + 0.5294118 * 1/70 = 70.0075630 > 70:
    // Reno-friendly region, cwnd = W_est.
    c.on_ack(&mut s, 0, &ack_at(SEC));
    let k = 75f64.cbrt();
    close(c.k(0).unwrap(), k);
    let alpha = 3.0 * 0.3 / 1.7;
    let w_est1 = 70.0 + alpha / 70.0;
    close(s[0].cwnd, w_est1);
    // ACK at t = K (rounded to ns): W_cubic(K) = 100 > W_est; target = W_cubic(K + 0.1)
    // = 0.4 * 0.1^3 + 100 = 100.0004 (below 1.5 cwnd); cwnd += (target - cwnd)/cwnd.
    let t_ns = (k * 1e9).round() as Nanos;
    c.on_ack(&mut s, 0, &ack_at(SEC + t_ns));
    let t = t_ns as f64 / 1e9;
    let target = 0.4 * (t + 0.1 - k).powi(3) + 100.0;
    close(s[0].cwnd, w_est1 + (target - w_est1) / w_est1);
    // Second loss below W_max: fast convergence, W_max = 90 * (1 + 0.7)/2 = 76.5; ssthresh 63.
    s[0].cwnd = 90.0;
    c.on_congestion_event(&mut s, 0, 0);
    close(c.w_max(0), 76.5);
    close(s[0].ssthresh, 63.0);
    assert_eq!(c.k(0), None);
}

#[test]
fn cubic_target_is_capped_at_one_and_a_half_cwnd() {
    // W_max = 100 after a loss at 100; window forced down to 10 then an ACK far in the epoch:
    // K = cbrt((100 - 10)/0.4) = cbrt(225); at t = K + 10 s the curve is 0.4*1000 + 100 = 500,
    // target capped at 1.5 * 10 = 15: cwnd += (15 - 10)/10 = 0.5.
    let mut s = vec![ca(100.0, 100)];
    let mut c = Cubic::new(1);
    c.on_congestion_event(&mut s, 0, 0);
    s[0].cwnd = 10.0;
    s[0].ssthresh = 10.0;
    c.on_ack(&mut s, 0, &ack_at(0));
    close(c.k(0).unwrap(), 225f64.cbrt());
    s[0].cwnd = 10.0;
    let k = 225f64.cbrt();
    c.on_ack(&mut s, 0, &ack_at(((k + 10.0) * 1e9) as Nanos));
    close(s[0].cwnd, 10.5);
}

#[test]
fn cubic_without_previous_loss_centres_the_curve_on_the_epoch_window() {
    // No W_max yet: K = 0, origin = cwnd_epoch = 20; W_est uses alpha 1 (W_est >= W_max = 0).
    // First ACK at t = 0: W_cubic(0) = 20 < W_est = 20 + 1/20: cwnd = 20.05 (Reno-friendly).
    let mut s = vec![ca(20.0, 100)];
    let mut c = Cubic::new(1);
    c.on_ack(&mut s, 0, &ack_at(0));
    close(c.k(0).unwrap(), 0.0);
    close(s[0].cwnd, 20.05);
}

#[test]
fn cubic_reno_friendly_alpha_switches_at_cwnd_prior_not_at_w_max() {
    // RFC 9438 Section 4.3: alpha_cubic = 3(1-0.7)/(1+0.7) = 0.5294118 until W_est >= cwnd_prior
    // (the window when ssthresh was last set), then 1. With fast convergence W_max < cwnd_prior.
    // Loss at 100: W_max = 100. Loss at 90 < 100: fast convergence W_max = 90 * 1.7/2 = 76.5,
    // cwnd_prior = 90, cwnd = ssthresh = 63.
    let mut s = vec![ca(100.0, 100)];
    let mut c = Cubic::new(1);
    c.on_congestion_event(&mut s, 0, 0);
    s[0].cwnd = 90.0;
    c.on_congestion_event(&mut s, 0, 0);
    close(c.w_max(0), 76.5);
    close(s[0].cwnd, 63.0);
    // Every ACK at the epoch's first instant (t = 0): W_cubic(0) = cwnd_epoch = 63 < W_est, so
    // the Reno-friendly region holds and cwnd = W_est after each ACK.
    let alpha = 3.0 * 0.3 / 1.7;
    let mut acks = 0;
    while s[0].cwnd < 80.0 {
        c.on_ack(&mut s, 0, &ack_at(SEC));
        acks += 1;
        assert!(acks < 100_000);
    }
    // W_est is now in [W_max, cwnd_prior) = [76.5, 90): the step must still use 0.5294118.
    let w = s[0].cwnd;
    c.on_ack(&mut s, 0, &ack_at(SEC));
    close(s[0].cwnd, w + alpha / w);
    while s[0].cwnd < 90.0 {
        c.on_ack(&mut s, 0, &ack_at(SEC));
    }
    // Past cwnd_prior = 90: alpha_cubic = 1.
    let w = s[0].cwnd;
    c.on_ack(&mut s, 0, &ack_at(SEC));
    close(s[0].cwnd, w + 1.0 / w);
}

#[test]
fn cubic_after_a_timeout_starts_with_k_zero_and_w_max_at_cwnd_epoch() {
    // RFC 9438 Section 4.8: after an RTO at w = 100 (ssthresh = 70, cwnd = 1), the first
    // congestion-avoidance stage uses K = 0 and W_max = W_est = cwnd_epoch.
    let mut s = vec![ca(100.0, 100)];
    let mut c = Cubic::new(1);
    c.on_rto(&mut s, 0, 0);
    close(s[0].ssthresh, 70.0);
    close(s[0].cwnd, 1.0);
    // Slow start 1 -> 70: 69 one-segment ACKs.
    for _ in 0..69 {
        c.on_ack(&mut s, 0, &ack_at(SEC / 2));
    }
    close(s[0].cwnd, 70.0);
    // First CA ACK at t_epoch = 1 s: K = 0, W_max = 70. W_cubic(0) = 70 < W_est = 70 + a/70:
    // Reno-friendly, cwnd = c1 = 70 + 0.5294118/70 (alpha_cubic: W_est < cwnd_prior = 100).
    c.on_ack(&mut s, 0, &ack_at(SEC));
    close(c.k(0).unwrap(), 0.0);
    close(c.w_max(0), 70.0);
    let alpha = 3.0 * 0.3 / 1.7;
    let c1 = 70.0 + alpha / 70.0;
    close(s[0].cwnd, c1);
    // t = 2 s: W_cubic(2) = 0.4 * 8 + 70 = 73.2 > W_est = c1 + a/c1: cubic region;
    // target = W_cubic(2.1) = 0.4 * 9.261 + 70 = 73.7044; cwnd = c1 + (73.7044 - c1)/c1.
    // (Centred on the pre-timeout W_max = 100 with K = cbrt(75) it would aim at ~96.2.)
    c.on_ack(&mut s, 0, &ack_at(3 * SEC));
    close(s[0].cwnd, c1 + (73.7044 - c1) / c1);
}

#[test]
fn cubic_w_est_counts_fractional_segments() {
    // RFC 9438 Section 4.1.2: segments_acked is a decimal when the ACK covers less than an MSS.
    // No loss yet: K = 0, alpha_cubic = 1, W_est = 20; a 500-byte ACK (MSS 1000) adds 0.5/20.
    let mut s = vec![ca(20.0, 100)];
    let mut c = Cubic::new(1);
    let a = Ack {
        acked_bytes: 500,
        rtt_sample: None,
        one_way_delay: None,
        now: 0,
    };
    c.on_ack(&mut s, 0, &a);
    close(s[0].cwnd, 20.025);
}

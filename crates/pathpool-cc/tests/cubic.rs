//! CUBIC (RFC 9438) on one subflow: the cubic curve, the Reno-friendly region, fast convergence.

mod common;

use common::{ca, close, MSS};
use pathpool_cc::algos::Cubic;
use pathpool_cc::{Ack, Controller, Nanos};

const SEC: Nanos = 1_000_000_000;

fn ack_at(now: Nanos) -> Ack {
    Ack { acked_bytes: u64::from(MSS), rtt_sample: None, one_way_delay: None, now }
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

//! LIA (RFC 6356): alpha, the 1/w_r cap, and when Linux v0.95 recomputes alpha.

mod common;

use common::{ack, ca, close, near};
use pathpool_cc::algos::Lia;
use pathpool_cc::Controller;

#[test]
fn alpha_example() {
    // w = (10, 20), rtt = (100, 200) ms.
    // max w/rtt^2 = max(10/0.01, 20/0.04) = 1000; (sum w/rtt)^2 = (100 + 100)^2 = 40000.
    // alpha = w_total * 1000/40000 = 30 * 0.025 = 0.75.
    let mut s = vec![ca(10.0, 100), ca(20.0, 200)];
    let mut lia = Lia::new(false);
    lia.recompute(&s, 0);
    close(lia.alpha(), 0.75);
    close(lia.alpha_over_total(), 0.025);
    // ACK on 0: min(alpha/w_total, 1/w_0) = min(0.025, 0.1) = 0.025.
    lia.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 10.025);
    // ACK on 1: min(0.025, 0.05) = 0.025.
    lia.on_ack(&mut s, 1, &ack(0));
    close(s[1].cwnd, 20.025);
}

#[test]
fn alpha_three_paths() {
    // w = (10, 20, 5), rtt = (100, 200, 50): w/rtt^2 = 1000, 500, 2000 -> 2000;
    // sum w/rtt = 100 + 100 + 100 = 300 -> 90000. alpha = 35 * 2000/90000 = 0.7777...
    let s = vec![ca(10.0, 100), ca(20.0, 200), ca(5.0, 50)];
    let mut lia = Lia::new(false);
    lia.recompute(&s, 0);
    close(lia.alpha(), 35.0 * 2000.0 / 90000.0);
    near(lia.alpha(), 0.777_778, 1e-6);
}

#[test]
fn the_cap_at_one_over_w_is_hit() {
    // w = (2, 40), rtt = (10, 100) ms: w/rtt^2 = 2/1e-4 = 20000, 40/0.01 = 4000 -> 20000;
    // sum w/rtt = 200 + 400 = 600 -> 360000; alpha/w_total = 20000/360000 = 0.0555...
    // alpha = 42 * 0.0555... = 2.333...
    let mut s = vec![ca(2.0, 10), ca(40.0, 100)];
    let mut lia = Lia::new(false);
    lia.recompute(&s, 1);
    close(lia.alpha(), 42.0 / 18.0);
    // Path 1: 1/40 = 0.025 < 0.0555: the cap binds, +0.025.
    lia.on_ack(&mut s, 1, &ack(0));
    close(s[1].cwnd, 40.025);
    // Path 0: 1/2 = 0.5 > 0.0555: coupled term, +1/18.
    lia.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 2.0 + 1.0 / 18.0);
}

#[test]
fn loss_halves_with_floor_two() {
    let mut s = vec![ca(10.0, 100), ca(3.0, 200)];
    let mut lia = Lia::new(false);
    lia.on_congestion_event(&mut s, 0, 0);
    close(s[0].cwnd, 5.0);
    lia.on_congestion_event(&mut s, 1, 0);
    close(s[1].ssthresh, 2.0);
}

#[test]
fn alpha_is_recomputed_only_when_v095_would() {
    let mut s = vec![ca(10.0, 100), ca(20.0, 200)];
    let mut lia = Lia::new(false);
    assert_eq!(lia.recomputations(), 0);
    // First CA ACK: nothing computed yet (forced), so compute: count 1, ratio 0.025.
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 1);
    close(s[0].cwnd, 10.025);
    // Path 1 grows behind LIA's back to 40: the fresh ratio would be
    // max(1000, 40/0.04 = 1000) / (100 + 200)^2 = 1/90, but CA ACKs that do not raise the
    // integer window keep using the stored 0.025.
    s[1].cwnd = 40.0;
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 1);
    close(s[0].cwnd, 10.05);
    // An ACK that carries w_0 across an integer (10.99 -> 11.015) recomputes after the step.
    s[0].cwnd = 10.99;
    lia.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 11.015);
    assert_eq!(lia.recomputations(), 2);
    // ratio now = max(11.015/0.01, 1000)/(110.15 + 200)^2.
    close(lia.alpha_over_total(), 1101.5 / (310.15f64 * 310.15));
    // A congestion event forces recomputation at the next CA ACK (not at the event).
    lia.on_congestion_event(&mut s, 1, 0);
    assert_eq!(lia.recomputations(), 2);
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 3);
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 3);
    // An RTO recomputes at once, with the pre-timeout window, then the window drops to 1.
    let before = s[1].cwnd;
    lia.on_rto(&mut s, 1, 0);
    assert_eq!(lia.recomputations(), 4);
    close(s[1].cwnd, 1.0);
    close(s[1].ssthresh, before / 2.0);
    let w0 = s[0].cwnd;
    close(
        lia.alpha_over_total(),
        (w0 / 0.01).max(before / 0.04) / (w0 / 0.1 + before / 0.2).powi(2),
    );
    // Every slow-start ACK recomputes (path 1 is at 1 < ssthresh) ...
    lia.on_ack(&mut s, 1, &ack(0));
    assert_eq!(lia.recomputations(), 5);
    close(s[1].cwnd, 2.0);
    // ... but leaves the RTO's forced update pending (v0.95 clears it only in CA), so the next
    // CA ACK, on any subflow, recomputes once more.
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 6);
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 6);
}

#[test]
fn alpha_every_ack_recomputes_on_each_ack() {
    let mut s = vec![ca(10.0, 100), ca(20.0, 200)];
    let mut lia = Lia::new(true);
    lia.on_ack(&mut s, 0, &ack(0));
    s[1].cwnd = 40.0;
    lia.on_ack(&mut s, 0, &ack(0));
    assert_eq!(lia.recomputations(), 2);
    // Fresh ratio: w/rtt^2 = 10.025/0.01 = 1002.5 vs 40/0.04 = 1000 -> 1002.5;
    // sum = 100.25 + 200 = 300.25 -> increase min(1002.5/300.25^2, 1/10.025).
    close(s[0].cwnd, 10.025 + 1002.5 / (300.25f64 * 300.25));
}

#[test]
fn a_lone_remaining_subflow_is_reno_at_once_not_after_the_next_recomputation() {
    // w = (10, 20), rtt = (100, 200) ms: the first CA ACK stores alpha/w_total = 0.025.
    let mut s = vec![ca(10.0, 100), ca(20.0, 200)];
    let mut lia = Lia::new(false);
    lia.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 10.025);
    // Subflow 1 closes. With one subflow RFC 6356's alpha is 1 (increase 1/w) and v0.95 takes
    // Reno's step whenever cnt_established <= 1, so the next ACK adds 1/10.025, not the stale
    // 0.025 (no integer crossing, so no recomputation would happen before it).
    s[1].active = false;
    lia.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 10.025 + 1.0 / 10.025);
}

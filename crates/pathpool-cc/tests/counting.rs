//! Byte counting (default) against v0.95's one step per ACK (`Counting::Acks`), by hand.
//! Windows in segments, RTTs in ms, MSS 1000 bytes.

mod common;

use common::{ack, ca, close};
use pathpool_cc::{build_with_counting, catalog, Ack, Counting, Params, Subflow};

fn ack_segs(n: u64) -> Ack {
    let mut a = ack(0);
    a.acked_bytes = n * 1000;
    a
}

fn after(name: &str, counting: Counting, mut sfs: Vec<Subflow>, a: &Ack) -> Vec<Subflow> {
    let mut c = build_with_counting(name, &Params::new(), sfs.len(), counting).unwrap();
    c.on_ack(&mut sfs, 0, a);
    sfs
}

#[test]
fn lia_credits_every_acknowledged_segment_against_the_window_before_the_ack() {
    // w = (10, 20), both RTTs 50 ms: alpha/w_total = (20/r^2)/(30/r)^2 = 20/900 = 1/45 < 1/10.
    // A delayed ACK of 2 segments: bytes 10 + 2/45, acks (v0.95) 10 + 1/45.
    let s = || vec![ca(10.0, 50), ca(20.0, 50)];
    close(
        after("lia", Counting::Bytes, s(), &ack_segs(2))[0].cwnd,
        10.0 + 2.0 / 45.0,
    );
    close(
        after("lia", Counting::Acks, s(), &ack_segs(2))[0].cwnd,
        10.0 + 1.0 / 45.0,
    );
    // A stretch ACK of 7 segments is credited in full: 10 + 7/45.
    close(
        after("lia", Counting::Bytes, s(), &ack_segs(7))[0].cwnd,
        10.0 + 7.0 / 45.0,
    );
    // A short segment counts as one (Linux counts packets): 1 byte -> 10 + 1/45.
    let mut a = ack(0);
    a.acked_bytes = 1;
    close(
        after("lia", Counting::Bytes, s(), &a)[0].cwnd,
        10.0 + 1.0 / 45.0,
    );
}

#[test]
fn every_algorithm_takes_n_steps_for_n_segments_in_byte_counting_and_one_in_ack_counting() {
    // From one state, an ACK of 3 segments moves the window by exactly 3 times what an ACK of
    // one segment moves it (the increment is computed once, before the ACK); with ack counting,
    // by exactly the one-segment step (except CUBIC's W_est, which counts bytes in both modes,
    // RFC 9438 Section 4.3).
    let state = || vec![ca(12.0, 40), ca(30.0, 90), ca(7.0, 25)];
    for info in catalog() {
        let base = state()[0].cwnd;
        let one = after(info.name, Counting::Bytes, state(), &ack_segs(1))[0].cwnd - base;
        let three = after(info.name, Counting::Bytes, state(), &ack_segs(3))[0].cwnd - base;
        assert!(one.abs() > 1e-6, "{}: no step", info.name);
        assert!(
            (three - 3.0 * one).abs() <= 1e-12,
            "{}: 3 segments moved {three}, one {one}",
            info.name
        );
        let one_a = after(info.name, Counting::Acks, state(), &ack_segs(1))[0].cwnd - base;
        assert!((one_a - one).abs() <= 1e-12, "{}", info.name);
        if info.name != "cubic" {
            let three_a = after(info.name, Counting::Acks, state(), &ack_segs(3))[0].cwnd - base;
            assert!((three_a - one).abs() <= 1e-12, "{}", info.name);
        }
    }
}

#[test]
fn delayed_acks_halve_growth_per_window_only_under_ack_counting() {
    // Reno at w = 10 receives one window (10 segments) as 5 delayed ACKs of 2 segments.
    // Bytes: w <- w + 2/w five times; acks: w <- w + 1/w five times (hand-iterated below).
    for (counting, per_ack) in [(Counting::Bytes, 2.0), (Counting::Acks, 1.0)] {
        let mut s = vec![ca(10.0, 50)];
        let mut c = build_with_counting("reno", &Params::new(), 1, counting).unwrap();
        let mut w = 10.0f64;
        for _ in 0..5 {
            c.on_ack(&mut s, 0, &ack_segs(2));
            w += per_ack / w;
        }
        close(s[0].cwnd, w);
    }
    // About one segment per window with byte counting (10.96292...).
    let mut s = vec![ca(10.0, 50)];
    let mut c = build_with_counting("reno", &Params::new(), 1, Counting::Bytes).unwrap();
    for _ in 0..5 {
        c.on_ack(&mut s, 0, &ack_segs(2));
    }
    assert!(s[0].cwnd > 10.962 && s[0].cwnd < 10.963, "{}", s[0].cwnd);
}

#[test]
fn lia_slow_start_leftover_goes_into_the_coupled_step() {
    // Subflow 0 at w = 9, ssthresh 10; a 3-segment ACK: slow start to 10 (alpha recomputed with
    // w = (10, 20): 1/45), 2 segments left: 10 + 2/45. With ack counting it stops at 10.
    let s = || {
        let mut v = vec![ca(9.0, 50), ca(20.0, 50)];
        v[0].ssthresh = 10.0;
        v
    };
    close(
        after("lia", Counting::Bytes, s(), &ack_segs(3))[0].cwnd,
        10.0 + 2.0 / 45.0,
    );
    close(
        after("lia", Counting::Acks, s(), &ack_segs(3))[0].cwnd,
        10.0,
    );
}

#[test]
fn counting_names_round_trip() {
    for n in Counting::NAMES {
        assert_eq!(Counting::from_name(n).unwrap().name(), n);
    }
    assert_eq!(Counting::default(), Counting::Bytes);
    assert_eq!(Counting::from_name("segments"), None);
}

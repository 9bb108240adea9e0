//! OLIA: inter-loss byte counts, the sets B and M, alpha_r, the increase, and the
//! ssthresh-in-recovery rule.

mod common;

use common::{ca, close, MS, MSS};
use pathpool_cc::algos::Olia;
use pathpool_cc::{Ack, Controller, Subflow};

fn bytes(n: u64) -> Ack {
    Ack {
        acked_bytes: n,
        rtt_sample: None,
        one_way_delay: None,
        now: 0,
    }
}

/// Feeds `l` bytes on every path (no loss), so that each path's l_r = l2_r = the bytes given.
/// The windows are reset afterwards: the ACKs ran slow start or CA on them.
fn with_bytes(olia: &mut Olia, s: &mut [Subflow], l: &[u64]) {
    let saved: Vec<(f64, f64)> = s.iter().map(|x| (x.cwnd, x.ssthresh)).collect();
    for (i, &b) in l.iter().enumerate() {
        s[i].delivered += b / u64::from(MSS);
        olia.on_ack(s, i, &bytes(b));
    }
    for (x, (w, t)) in s.iter_mut().zip(saved) {
        x.cwnd = w;
        x.ssthresh = t;
    }
}

#[test]
fn inter_loss_counts_advance_on_loss_only_after_new_bytes() {
    let mut s = vec![ca(10.0, 100)];
    let mut olia = Olia::new(1);
    s[0].delivered = 50;
    olia.on_ack(&mut s, 0, &bytes(50_000));
    assert_eq!(olia.inter_loss_bytes(0), (0, 50_000));
    olia.on_congestion_event(&mut s, 0, 0);
    // l1 = bytes between the last two losses (start counts as a mark), l2 = since the last.
    assert_eq!(olia.inter_loss_bytes(0), (50_000, 0));
    s[0].delivered = 60;
    olia.on_ack(&mut s, 0, &bytes(10_000));
    assert_eq!(olia.inter_loss_bytes(0), (50_000, 10_000));
    olia.on_rto(&mut s, 0, 0);
    assert_eq!(olia.inter_loss_bytes(0), (10_000, 0));
    // A second loss with no bytes in between does not move the marks (kernel: loss3 == loss2).
    olia.on_rto(&mut s, 0, 0);
    assert_eq!(olia.inter_loss_bytes(0), (10_000, 0));
}

#[test]
fn best_path_not_max_window_gets_positive_alpha() {
    // Three paths, rtt 100 ms, w = (10, 5, 30); l = (50k, 100k, 30k).
    // B = argmax l/rtt^2 = {1}; M = argmax w = {2}; B\M = {1}, n = 3.
    // alpha = (0, +1/(3*1), -1/(3*1)).
    let mut s = vec![ca(10.0, 100), ca(5.0, 100), ca(30.0, 100)];
    let mut olia = Olia::new(3);
    with_bytes(&mut olia, &mut s, &[50_000, 100_000, 30_000]);
    let (b, m) = olia.sets(&s, 0);
    assert_eq!(b, [false, true, false]);
    assert_eq!(m, [false, false, true]);
    close(olia.alpha(&s, 0), 0.0);
    close(olia.alpha(&s, 1), 1.0 / 3.0);
    close(olia.alpha(&s, 2), -1.0 / 3.0);
    // sum w/rtt = 450, squared 202500.
    // Path 1: (5/0.01)/202500 + (1/3)/5 = 0.0024691 + 0.0666667.
    close(olia.increase(&s, 1), 500.0 / 202_500.0 + 1.0 / 15.0);
    // Path 2: (30/0.01)/202500 - (1/3)/30 = 0.0148148 - 0.0111111 = 0.0037037.
    close(olia.increase(&s, 2), 3000.0 / 202_500.0 - 1.0 / 90.0);
    // Path 0: 1000/202500 = 0.0049383.
    close(olia.increase(&s, 0), 1000.0 / 202_500.0);
    // And through on_ack (CA): w_1 = 5 + 0.0691358.
    olia.on_ack(&mut s, 1, &bytes(1000));
    close(s[1].cwnd, 5.0 + 500.0 / 202_500.0 + 1.0 / 15.0);
}

#[test]
fn best_path_with_max_window_means_all_alphas_zero() {
    // l = (50k, 20k, 300k): B = {2} = M: B\M empty, every alpha 0; OLIA is then Max-like:
    // increase on 0 = (10/0.01)/202500.
    let mut s = vec![ca(10.0, 100), ca(5.0, 100), ca(30.0, 100)];
    let mut olia = Olia::new(3);
    with_bytes(&mut olia, &mut s, &[50_000, 20_000, 300_000]);
    let (b, m) = olia.sets(&s, 0);
    assert_eq!(b, [false, false, true]);
    assert_eq!(m, [false, false, true]);
    for r in 0..3 {
        close(olia.alpha(&s, r), 0.0);
    }
    close(olia.increase(&s, 0), 1000.0 / 202_500.0);
}

#[test]
fn ties_in_b_and_m_split_alpha() {
    // rtt = (100, 200, 100) ms, l = (40k, 160k, 10k): l/rtt^2 = 4e6, 4e6, 1e6 (exact tie of 0, 1).
    // w = (30, 8, 30): M = {0, 2}, B = {0, 1},
    // B\M = {1}: alpha_1 = 1/(3*1); alpha_0 = alpha_2 = -1/(3*2).
    let mut s = vec![ca(30.0, 100), ca(8.0, 200), ca(30.0, 100)];
    let mut olia = Olia::new(3);
    with_bytes(&mut olia, &mut s, &[40_000, 160_000, 10_000]);
    let (b, m) = olia.sets(&s, 0);
    assert_eq!(b, [true, true, false]);
    assert_eq!(m, [true, false, true]);
    close(olia.alpha(&s, 1), 1.0 / 3.0);
    close(olia.alpha(&s, 0), -1.0 / 6.0);
    close(olia.alpha(&s, 2), -1.0 / 6.0);
}

#[test]
fn path_in_recovery_counts_with_its_ssthresh() {
    // As in the first case but path 2 is in recovery: cwnd 30 (inflated), ssthresh 4.
    // Its window for M and for the sum is 4: M = {0} (w 10), B = {1}, B\M = {1}.
    // alpha_1 = 1/3, alpha_0 = -1/3, alpha_2 = 0.
    let mut s = vec![ca(10.0, 100), ca(5.0, 100), ca(30.0, 100)];
    let mut olia = Olia::new(3);
    with_bytes(&mut olia, &mut s, &[50_000, 100_000, 30_000]);
    s[2].in_recovery = true;
    s[2].ssthresh = 4.0;
    let (b, m) = olia.sets(&s, 1);
    assert_eq!(b, [false, true, false]);
    assert_eq!(m, [true, false, false]);
    close(olia.alpha(&s, 0), -1.0 / 3.0);
    close(olia.alpha(&s, 2), 0.0);
    // sum w/rtt = (10 + 5 + 4)/0.1 = 190 -> 36100. Path 1: 500/36100 + 1/15.
    close(olia.increase(&s, 1), 500.0 / 36_100.0 + 1.0 / 15.0);
    // Path 0: 1000/36100 - (1/3)/10.
    close(olia.increase(&s, 0), 1000.0 / 36_100.0 - 1.0 / 30.0);
}

#[test]
fn m_compares_integer_windows_and_b_skips_paths_without_rtt() {
    // w = (30.2, 30.9, 5): floor 30 = 30 -> M = {0, 1}. Path 2 has no RTT sample: outside B and M,
    // but still counts in n = 3. l = (10k, 10k, 900k) with rtt (100, 100, -): B = {0, 1} = M.
    let mut s = vec![ca(30.2, 100), ca(30.9, 100), ca(5.0, 0)];
    let mut olia = Olia::new(3);
    with_bytes(&mut olia, &mut s, &[10_000, 10_000, 900_000]);
    let (b, m) = olia.sets(&s, 0);
    assert_eq!(b, [true, true, false]);
    assert_eq!(m, [true, true, false]);
    close(olia.alpha(&s, 0), 0.0);
    // The path without an RTT sample takes Reno's 1/w.
    close(olia.increase(&s, 2), 0.2);
    s[2].srtt = 100 * MS;
    // Now path 2 has the best l/rtt^2 and is outside M: alpha_2 = 1/3, alpha_0 = alpha_1 = -1/6.
    close(olia.alpha(&s, 2), 1.0 / 3.0);
    close(olia.alpha(&s, 0), -1.0 / 6.0);
}

#[test]
fn slow_start_skips_the_olia_rule() {
    let mut s = vec![ca(10.0, 100), ca(5.0, 100)];
    s[0].ssthresh = 100.0;
    let mut olia = Olia::new(2);
    s[0].delivered = 2;
    olia.on_ack(&mut s, 0, &bytes(2000));
    close(s[0].cwnd, 12.0);
    assert_eq!(olia.inter_loss_bytes(0), (0, 2000));
}

#[test]
fn bytes_acknowledged_during_recovery_count_in_the_next_interval() {
    // v0.95 sets loss3 = snd_una at every cong_avoid call; none happens in recovery, but the
    // first call after it sees snd_una past everything acknowledged meanwhile. 50 segments
    // (MSS 1000), a loss, 20 segments acknowledged in recovery (no on_ack), recovery ends, one
    // more ACK of 1 segment: l1 = 50 000, l2 = 21 000 bytes (not 1 000).
    let mut s = vec![ca(10.0, 100)];
    let mut olia = Olia::new(1);
    for _ in 0..50 {
        s[0].delivered += 1;
        olia.on_ack(&mut s, 0, &bytes(1000));
    }
    s[0].in_recovery = true;
    olia.on_congestion_event(&mut s, 0, 0);
    assert_eq!(olia.inter_loss_bytes(0), (50_000, 0));
    s[0].delivered += 20;
    s[0].in_recovery = false;
    olia.on_recovery_exit(&mut s, 0, 0);
    s[0].delivered += 1;
    olia.on_ack(&mut s, 0, &bytes(1000));
    assert_eq!(olia.inter_loss_bytes(0), (50_000, 21_000));
}

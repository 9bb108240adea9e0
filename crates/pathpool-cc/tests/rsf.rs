//! RSF-DB (Pokhrel & Williamson 2020, eq. 1) and RSF-LB (Pokhrel & Williamson 2020, eq. 2).

mod common;

use common::{ack, ack_owd, ca, close, num, params, MS};
use pathpool_cc::algos::{RsfDb, RsfLb};
use pathpool_cc::{build, Controller};

#[test]
fn rsf_db_factor_uses_owd_minus_min_owd() {
    // d = 100 ms, w = 10.
    let mut s = vec![ca(10.0, 300)];
    let mut db = RsfDb::new(0.1, 1);
    // First sample 50 ms: min owd 50, q = 0 -> factor 1: 10 + 1/10.
    db.on_ack(&mut s, 0, &ack_owd(50.0));
    close(db.q(0).unwrap(), 0.0);
    close(s[0].cwnd, 10.1);
    // owd 70: q = 20 ms, (100 - 20)/20 = 4 -> min(1, 4) = 1: + 1/10.1.
    db.on_ack(&mut s, 0, &ack_owd(70.0));
    close(db.q(0).unwrap(), 0.02);
    close(s[0].cwnd, 10.1 + 1.0 / 10.1);
    // owd 130: q = 80 ms, (100 - 80)/80 = 0.25: + 0.25/w.
    s[0].cwnd = 10.0;
    db.on_ack(&mut s, 0, &ack_owd(130.0));
    close(db.factor(0), 0.25);
    close(s[0].cwnd, 10.025);
    // owd 300: q = 250 ms, (100 - 250)/250 = -0.6: the "increase" is -0.6/w = -0.06.
    s[0].cwnd = 10.0;
    db.on_ack(&mut s, 0, &ack_owd(300.0));
    close(db.factor(0), -0.6);
    close(s[0].cwnd, 9.94);
    // A smaller owd lowers the minimum: owd 40 -> min 40, q = 0.
    db.on_ack(&mut s, 0, &ack_owd(40.0));
    close(db.q(0).unwrap(), 0.0);
}

#[test]
fn rsf_db_removes_propagation_delay() {
    // Two paths with the same queueing (30 ms over the minimum) but propagation 20 ms and 500 ms:
    // q is 30 ms on both, so both get factor min(1, 70/30) = 1 and the same increase 1/w.
    // Had q been the raw owd, the 500 ms path would get (100 - 530)/530 < 0.
    let mut s = vec![ca(10.0, 40), ca(10.0, 1000)];
    let mut db = RsfDb::new(0.1, 2);
    db.on_ack(&mut s, 0, &ack_owd(20.0));
    db.on_ack(&mut s, 1, &ack_owd(500.0));
    s[0].cwnd = 10.0;
    s[1].cwnd = 10.0;
    db.on_ack(&mut s, 0, &ack_owd(50.0));
    db.on_ack(&mut s, 1, &ack_owd(530.0));
    close(db.q(0).unwrap(), 0.03);
    close(db.q(1).unwrap(), 0.03);
    close(s[0].cwnd, 10.1);
    close(s[1].cwnd, 10.1);
    // q = 80 ms on both: factor 0.25 on both.
    db.on_ack(&mut s, 0, &ack_owd(100.0));
    db.on_ack(&mut s, 1, &ack_owd(580.0));
    close(db.factor(0), 0.25);
    close(db.factor(1), 0.25);
}

#[test]
fn rsf_db_falls_back_to_rtt_minus_min_rtt_without_owd() {
    // No owd: q = latest RTT - min RTT = 300 - 200 = 100 ms = d -> factor 0: no change.
    let mut s = vec![ca(10.0, 250)];
    s[0].min_rtt = 200 * MS;
    s[0].latest_rtt = 300 * MS;
    let mut db = RsfDb::new(0.1, 1);
    db.on_ack(&mut s, 0, &ack(0));
    close(db.q(0).unwrap(), 0.1);
    close(s[0].cwnd, 10.0);
    // No RTT either: factor 1 (Reno).
    let mut s = vec![ca(10.0, 0)];
    let mut db = RsfDb::new(0.1, 1);
    db.on_ack(&mut s, 0, &ack(0));
    assert_eq!(db.q(0), None);
    close(s[0].cwnd, 10.1);
}

#[test]
fn rsf_db_negative_increase_stops_at_one_segment_and_loss_halves() {
    let mut s = vec![ca(1.05, 300)];
    let mut db = build("rsf-db", &params(&[("d", num(0.01))]), 1).unwrap();
    db.on_ack(&mut s, 0, &ack_owd(10.0)); // sets min owd 10 ms (q = 0, +1/w)
    s[0].cwnd = 1.05;
    // q = 490 ms >> d = 10 ms: factor (10 - 490)/490 = -0.98: 1.05 - 0.98/1.05 = 0.117 -> floor 1.
    db.on_ack(&mut s, 0, &ack_owd(500.0));
    close(s[0].cwnd, 1.0);
    let mut s = vec![ca(12.0, 300)];
    db.on_congestion_event(&mut s, 0, 0);
    close(s[0].cwnd, 6.0);
}

#[test]
fn rsf_lb_loss_estimate_and_factor() {
    // mu = 4 pkt/s, loss window 1000 (g = 0.001). 95 delivered and 5 lost in one batch:
    // l = 5/100 = 0.05 exactly (bias-corrected EWMA of a single batch is its fraction).
    // w = 20, srtt 100 ms: lambda = 200 pkt/s, lambda l = 10 > mu: factor (4 - 10)/10 = -0.6.
    let mut s = vec![ca(20.0, 100)];
    let mut lb = RsfLb::new(4.0, 1000.0, 1);
    s[0].delivered = 95;
    s[0].lost = 5;
    lb.on_ack(&mut s, 0, &ack(0));
    close(lb.loss_probability(0), 0.05);
    close(s[0].cwnd, 20.0 - 0.6 / 20.0);
    // w = 4: lambda = 40, lambda l = 2 < mu: (4 - 2)/2 = 1 -> factor 1: + 1/4.
    s[0].cwnd = 4.0;
    lb.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 4.25);
    // 100 more packets, none lost: k = 0.999^100 = 0.9047921;
    // S = k * 0.05 (1 - k), Wt = k (1 - k) + (1 - k)  ->  l = 0.05 k / (1 + k) = 0.0237504.
    s[0].delivered += 100;
    s[0].cwnd = 4.0;
    lb.on_ack(&mut s, 0, &ack(0));
    let k = 0.999f64.powi(100);
    close(lb.loss_probability(0), 0.05 * k / (1.0 + k));
    assert!((lb.loss_probability(0) - 0.023_750_4).abs() < 1e-7);
}

#[test]
fn rsf_lb_without_loss_or_rtt_is_reno() {
    let mut s = vec![ca(10.0, 100)];
    let mut lb = build("rsf-lb", &params(&[("mu", num(1.0))]), 1).unwrap();
    s[0].delivered = 1000;
    lb.on_ack(&mut s, 0, &ack(0));
    close(s[0].cwnd, 10.1);
    let mut s = vec![ca(10.0, 0)];
    s[0].delivered = 10;
    s[0].lost = 10;
    let mut lb = RsfLb::new(1.0, 1000.0, 1);
    lb.on_ack(&mut s, 0, &ack(0));
    close(lb.loss_probability(0), 0.5);
    close(s[0].cwnd, 10.1); // no RTT: lambda unknown, factor 1
}

#[test]
fn rsf_db_takes_delay_samples_from_acks_that_grow_nothing() {
    // A transport passes acked_bytes = 0 when the subflow is not cwnd-limited (Linux
    // tcp_is_cwnd_limited): the window must not move, but q_i must still follow the path.
    let mut s = vec![ca(10.0, 300)];
    let mut db = RsfDb::new(0.1, 1);
    db.on_ack(&mut s, 0, &ack_owd(50.0));
    let idle = pathpool_cc::Ack {
        acked_bytes: 0,
        ..ack_owd(130.0)
    };
    let before = s[0].cwnd;
    db.on_ack(&mut s, 0, &idle);
    close(s[0].cwnd, before);
    // q = 130 - 50 = 80 ms, so the factor is (100 - 80)/80 = 0.25.
    close(db.q(0).unwrap(), 0.08);
    close(db.factor(0), 0.25);
}

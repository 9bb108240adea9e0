//! Building blocks shared by the algorithms: Linux slow start, the halving loss response, rates, floors.
//!
//! Conventions every algorithm here follows (see the crate README):
//! - An ACK with `acked_bytes == 0` acknowledges nothing new and changes nothing.
//! - While `cwnd < ssthresh` an ACK runs Linux slow start (`cwnd += acked segments`, capped at
//!   `ssthresh`).
//! - In congestion avoidance an ACK makes [`ca_credit`] increment steps, all computed from the
//!   window before the ACK: one per acknowledged segment (and the slow-start leftover) under
//!   [`Counting::Bytes`], exactly one per ACK under [`Counting::Acks`] (v0.95).
//! - A subflow with no RTT sample yet (`srtt == 0`) has no known rate: it is left out of every
//!   rate sum and maximum. If the ACKed subflow itself has no sample, it takes Reno's `1/w_r`.

use crate::controller::{
    slow_start, Ack, Counting, Subflow, MIN_CWND, MIN_SSTHRESH, NANOS_PER_SEC,
};

/// Runs the slow-start part of an ACK and returns its congestion-avoidance credit: how many
/// per-segment increments the caller adds (`w += credit * inc(w)`), 0 if the ACK acknowledged
/// nothing or was consumed by slow start.
///
/// [`Counting::Bytes`] follows Linux 6.18 `tcp_reno_cong_avoid` (net/ipv4/tcp_cong.c):
/// `acked = tcp_slow_start(tp, acked); if (!acked) return; tcp_cong_avoid_ai(tp, cwnd, acked)`,
/// i.e. every acknowledged segment (stretch ACKs in full, the slow-start leftover included) is
/// one step against the window before the ACK. [`Counting::Acks`] follows v0.95
/// `mptcp_ccc_cong_avoid`: a slow-start ACK returns after `tcp_slow_start`, a CA ACK is one step.
pub(crate) fn ca_credit(sf: &mut Subflow, ack: &Ack, counting: Counting) -> u32 {
    if ack.acked_bytes == 0 {
        return 0;
    }
    let segs = ack.acked_segments(sf.mss);
    if sf.in_slow_start() {
        let left = slow_start(sf, segs);
        return match counting {
            Counting::Bytes => left,
            Counting::Acks => 0,
        };
    }
    match counting {
        Counting::Bytes => segs,
        Counting::Acks => 1,
    }
}

/// Adds `credit` increments of `inc` (segments) to the window, as [`add_to_cwnd`].
#[inline]
pub(crate) fn add_credited(sf: &mut Subflow, credit: u32, inc: f64) {
    add_to_cwnd(sf, f64::from(credit) * inc);
}

/// True if subflow `k` takes part in the coupled sums of an event on subflow `i`: it is active
/// (or is the subflow the event belongs to).
#[inline]
pub(crate) fn participates(subflows: &[Subflow], k: usize, i: usize) -> bool {
    k == i || subflows[k].active
}

/// Smoothed RTT in seconds, if sampled.
#[inline]
pub(crate) fn rtt(sf: &Subflow) -> Option<f64> {
    sf.srtt_secs()
}

/// `w_r / rtt_r` (segments per second), if the RTT is known.
#[inline]
pub(crate) fn rate(sf: &Subflow) -> Option<f64> {
    rtt(sf).map(|t| sf.cwnd / t)
}

/// RFC 6356 Section 3's `alpha / w_total = max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2` (LIA's
/// coupled increase before its cap, and the whole increase of `max`), with `sum_k w_k` over the
/// same subflows (LIA's alpha is `w_total` times the ratio): over the subflows taking part in
/// an event on `i` that have an RTT sample. `None` if none has one.
pub(crate) fn alpha_ratio(subflows: &[Subflow], i: usize) -> Option<(f64, f64)> {
    let mut best = 0.0f64;
    let mut sum = 0.0f64;
    let mut total = 0.0f64;
    for (k, sf) in subflows.iter().enumerate() {
        if !participates(subflows, k, i) {
            continue;
        }
        if let Some(t) = rtt(sf) {
            best = best.max(sf.cwnd / (t * t));
            sum += sf.cwnd / t;
            total += sf.cwnd;
        }
    }
    (sum > 0.0).then(|| (best / (sum * sum), total))
}

/// Sum of the windows of the subflows taking part in an event on `i`.
pub(crate) fn window_total(subflows: &[Subflow], i: usize) -> f64 {
    (0..subflows.len())
        .filter(|&k| participates(subflows, k, i))
        .map(|k| subflows[k].cwnd)
        .sum()
}

/// Adds `inc` to the window of `sf`, keeping it finite and at least [`MIN_CWND`].
#[inline]
pub(crate) fn add_to_cwnd(sf: &mut Subflow, inc: f64) {
    if inc.is_finite() {
        sf.cwnd = (sf.cwnd + inc).max(MIN_CWND);
    }
}

/// The Reno/LIA loss response: `ssthresh = max(cwnd/2, 2)`, `cwnd = ssthresh`
/// (Linux `tcp_reno_ssthresh`).
#[inline]
pub(crate) fn halve(sf: &mut Subflow) {
    set_ssthresh(sf, sf.cwnd / 2.0, MIN_SSTHRESH);
}

/// Sets `ssthresh = max(target, floor)` and `cwnd = ssthresh` (recovery runs at `ssthresh`).
#[inline]
pub(crate) fn set_ssthresh(sf: &mut Subflow, target: f64, floor: f64) {
    let t = if target.is_finite() {
        target.max(floor)
    } else {
        floor
    };
    sf.ssthresh = t;
    sf.cwnd = t.max(MIN_CWND);
}

/// Nanoseconds to seconds.
#[inline]
pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / NANOS_PER_SEC
}

/// Rates of a connection as seen by an event on subflow `i`, over the active subflows with an
/// RTT sample: `(x_i, tau_i, x_max, sum_k x_k, count)`, rates in segments per second. `None` if
/// subflow `i` has no RTT sample yet.
pub(crate) struct Rates {
    pub x_r: f64,
    pub tau_r: f64,
    pub x_max: f64,
    pub sum: f64,
    pub count: usize,
}

pub(crate) fn rates(subflows: &[Subflow], i: usize) -> Option<Rates> {
    let tau_r = rtt(&subflows[i])?;
    let mut out = Rates {
        x_r: subflows[i].cwnd / tau_r,
        tau_r,
        x_max: 0.0,
        sum: 0.0,
        count: 0,
    };
    for (k, sf) in subflows.iter().enumerate() {
        if !participates(subflows, k, i) {
            continue;
        }
        if let Some(x) = rate(sf) {
            out.x_max = out.x_max.max(x);
            out.sum += x;
            out.count += 1;
        }
    }
    Some(out)
}

/// Number of subflows taking part in an event on `i`.
pub(crate) fn active_count(subflows: &[Subflow], i: usize) -> usize {
    (0..subflows.len())
        .filter(|&k| participates(subflows, k, i))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf(cwnd: f64, ssthresh: f64) -> Subflow {
        let mut s = Subflow::new(1000);
        s.cwnd = cwnd;
        s.ssthresh = ssthresh;
        s
    }

    fn ack(bytes: u64) -> Ack {
        Ack {
            acked_bytes: bytes,
            rtt_sample: None,
            one_way_delay: None,
            now: 0,
        }
    }

    #[test]
    fn empty_ack_changes_nothing_and_slow_start_ack_makes_no_ca_step_in_ack_counting() {
        let mut s = sf(10.0, 20.0);
        assert_eq!(ca_credit(&mut s, &ack(0), Counting::Acks), 0);
        assert_eq!(ca_credit(&mut s, &ack(0), Counting::Bytes), 0);
        assert_eq!(s.cwnd, 10.0);
        // 1500 bytes = 2 segments (partial segments round up): 10 -> 12, consumed by slow start.
        assert_eq!(ca_credit(&mut s, &ack(1500), Counting::Acks), 0);
        assert_eq!(s.cwnd, 12.0);
        // In CA a 3-segment stretch ACK is one step per ACK, three per segment.
        let mut s = sf(20.0, 20.0);
        assert_eq!(ca_credit(&mut s, &ack(3000), Counting::Acks), 1);
        assert_eq!(ca_credit(&mut s, &ack(3000), Counting::Bytes), 3);
        assert_eq!(ca_credit(&mut s, &ack(2001), Counting::Bytes), 3);
        assert_eq!(s.cwnd, 20.0);
    }

    #[test]
    fn slow_start_leftover_goes_to_ca_only_in_byte_counting() {
        // Linux tcp_slow_start: cwnd 18, ssthresh 20, 5 segments acked -> cwnd 20, 3 left.
        let mut s = sf(18.0, 20.0);
        assert_eq!(ca_credit(&mut s, &ack(5000), Counting::Bytes), 3);
        assert_eq!(s.cwnd, 20.0);
        let mut s = sf(18.0, 20.0);
        assert_eq!(ca_credit(&mut s, &ack(5000), Counting::Acks), 0);
        assert_eq!(s.cwnd, 20.0);
        // Exactly reaching ssthresh leaves nothing.
        let mut s = sf(18.0, 20.0);
        assert_eq!(ca_credit(&mut s, &ack(2000), Counting::Bytes), 0);
        assert_eq!(s.cwnd, 20.0);
    }

    #[test]
    fn set_ssthresh_floors_and_rejects_non_finite_targets() {
        let mut s = sf(10.0, f64::INFINITY);
        set_ssthresh(&mut s, 0.3, 1.0);
        assert_eq!((s.ssthresh, s.cwnd), (1.0, 1.0));
        set_ssthresh(&mut s, f64::NAN, 2.0);
        assert_eq!((s.ssthresh, s.cwnd), (2.0, 2.0));
        add_to_cwnd(&mut s, f64::INFINITY);
        assert_eq!(s.cwnd, 2.0);
        add_to_cwnd(&mut s, -5.0);
        assert_eq!(s.cwnd, MIN_CWND);
    }

    #[test]
    fn rates_skip_inactive_and_unsampled_subflows() {
        let mut v = vec![sf(10.0, 1.0), sf(20.0, 1.0), sf(30.0, 1.0), sf(40.0, 1.0)];
        v[0].srtt = 100_000_000; // x = 100
        v[1].srtt = 100_000_000; // x = 200
        v[2].srtt = 0; // no sample
        v[3].srtt = 100_000_000;
        v[3].active = false; // x = 400, closed
        let q = rates(&v, 0).unwrap();
        assert!((q.x_r - 100.0).abs() < 1e-9 && (q.x_max - 200.0).abs() < 1e-9);
        assert!((q.sum - 300.0).abs() < 1e-9 && q.count == 2);
        assert!(rates(&v, 2).is_none());
        assert_eq!(window_total(&v, 0), 60.0);
        // The subflow the event belongs to always takes part, even if marked inactive.
        assert_eq!(window_total(&v, 3), 100.0);
        assert_eq!(active_count(&v, 0), 3);
    }
}

//! `rsf-db` and `rsf-lb`: the rent-seeking-framework designs of Pokhrel & Williamson, "A
//! Rent-Seeking Framework for Multipath TCP", IFIP Performance 2020: RSF-DB is its eq. (1),
//! RSF-LB its eq. (2).

use super::common::{add_credited, ca_credit, halve, secs};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow};
use crate::registry::{number, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const DB_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "rsf-db",
    summary: "Delay-balanced MPTCP: Reno increase scaled down as the forward queueing delay nears d",
    source: "Pokhrel & Williamson 2020, \"A Rent-Seeking Framework for Multipath TCP\", IFIP Performance \
             2020, Section 2, eq. (1)",
    formula: "per new ACK on i: W_i += (1/W_i) min{1, (d - q_i)/q_i} (factor 1 if q_i <= 0; may be \
              negative); per loss: W_i -= W_i/2 (ssthresh = max(W_i/2, 2)); q_i = one-way delay - \
              minimum one-way delay seen on i (fallback: latest RTT - min RTT)",
    params: &[ParamInfo {
        name: "d",
        default: "0.1",
        allowed: "a number > 0 (seconds)",
        doc: "target forward (queueing plus service) delay, seconds; the paper uses 100 ms",
    }],
    coupled: false,
    build: build_db,
};

pub(crate) const LB_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "rsf-lb",
    summary: "Loss-balanced MPTCP: Reno increase scaled down as the loss rate lambda_i l_i nears mu",
    source: "Pokhrel & Williamson 2020, \"A Rent-Seeking Framework for Multipath TCP\", IFIP Performance \
             2020, Section 2, eq. (2)",
    formula: "per new ACK on i: W_i += (1/W_i) min{1, (mu - lambda_i l_i)/(lambda_i l_i)} (factor 1 if \
              lambda_i l_i = 0); per loss: W_i -= W_i/2; lambda_i = W_i/srtt_i, l_i = EWMA of the \
              per-packet loss indicator over ~loss_window packets",
    params: &[
        ParamInfo {
            name: "mu",
            default: "4",
            allowed: "a number > 0 (packets/s)",
            doc: "target loss rate, lost packets per second per path; the paper uses 4",
        },
        ParamInfo {
            name: "loss_window",
            default: "1000",
            allowed: "a number >= 1 (packets)",
            doc: "memory of the loss-probability estimate: EWMA gain 1/loss_window per packet",
        },
    ],
    coupled: false,
    build: build_lb,
};

/// RSF-DB, delay-balanced (Pokhrel & Williamson 2020, Section 2, eq. (1)).
///
/// ```text
/// per loss on i:    W_i <- W_i / 2                      (ssthresh = max(W_i/2, 2))
/// per new ACK on i: W_i <- W_i + (1/W_i) min{1, (d - q_i)/q_i}
/// ```
///
/// `q_i` is the queueing plus service delay from source to sink on path i, not propagation. We
/// measure it as `q_i = owd - min owd`, where `owd` is the one-way delay the ACK reports and
/// `min owd` the smallest seen on the subflow: the minimum contains the propagation delay (and
/// one minimal service, i.e. transmission, time at the bottleneck), so the difference is the
/// queueing delay plus any service time above the minimum. If the transport gives no one-way
/// delay, `q_i = latest RTT - min RTT` (both directions' queueing; documented fallback). With
/// no estimate yet, or `q_i <= 0`, the factor is 1 (Reno). For `q_i > d` the factor
/// `(d - q_i)/q_i` is negative and the "increase" shrinks the window, as the paper allows; the
/// window stays at least 1 segment.
///
/// Slow start as Linux; congestion-avoidance steps per [`Counting`].
#[derive(Debug, Clone)]
pub struct RsfDb {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    d: f64,
    min_owd: Vec<Option<Nanos>>,
    q: Vec<Option<f64>>,
}

impl RsfDb {
    pub fn new(d: f64, n_subflows: usize) -> Self {
        RsfDb {
            counting: Counting::Bytes,
            d,
            min_owd: vec![None; n_subflows],
            q: vec![None; n_subflows],
        }
    }

    /// Latest forward-delay estimate `q_i` (seconds), if any.
    pub fn q(&self, i: usize) -> Option<f64> {
        self.q[i]
    }

    /// `min{1, (d - q)/q}`, 1 when `q <= 0` or unknown.
    pub fn factor(&self, i: usize) -> f64 {
        match self.q[i] {
            Some(q) if q > 0.0 => ((self.d - q) / q).min(1.0),
            _ => 1.0,
        }
    }

    fn observe(&mut self, sf: &Subflow, i: usize, ack: &Ack) {
        if let Some(owd) = ack.one_way_delay {
            let m = self.min_owd[i].map_or(owd, |m| m.min(owd));
            self.min_owd[i] = Some(m);
            self.q[i] = Some(secs(owd - m));
        } else {
            let latest = ack.rtt_sample.unwrap_or(sf.latest_rtt);
            if latest > 0 && sf.min_rtt > 0 {
                self.q[i] = Some(secs(latest.saturating_sub(sf.min_rtt)));
            }
        }
    }
}

pub(crate) fn build_db(
    params: &Params,
    n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let d = number(&DB_INFO, params, "d", |x| x > 0.0)?.unwrap_or(0.1);
    Ok(Box::new(RsfDb {
        counting,
        ..RsfDb::new(d, n)
    }))
}

impl Controller for RsfDb {
    fn name(&self) -> &'static str {
        DB_INFO.name
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        // The delay sample is taken even from an ACK that grows nothing (acked_bytes == 0, which
        // a transport passes when the subflow is not cwnd-limited): q_i must track the path.
        self.observe(&subflows[i], i, ack);
        let n = ca_credit(&mut subflows[i], ack, self.counting);
        if n == 0 {
            return;
        }
        let f = self.factor(i);
        let w = subflows[i].cwnd;
        add_credited(&mut subflows[i], n, f / w);
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        halve(&mut subflows[i]);
    }
}

/// Loss-probability estimate of one path: a bias-corrected EWMA of the per-packet loss
/// indicator, fed from the transport's `delivered` and `lost` counters.
#[derive(Debug, Clone, Copy, Default)]
struct LossEstimate {
    seen_delivered: u64,
    seen_lost: u64,
    /// Decayed sum of loss indicators times the gain.
    s: f64,
    /// Decayed sum of weights (corrects the start-up bias of an EWMA started at 0).
    weight: f64,
}

/// RSF-LB, loss-balanced (Pokhrel & Williamson 2020, Section 2, eq. (2)).
///
/// ```text
/// per loss on i:    W_i <- W_i / 2                      (ssthresh = max(W_i/2, 2))
/// per new ACK on i: W_i <- W_i + (1/W_i) min{1, (mu - lambda_i l_i)/(lambda_i l_i)}
/// ```
///
/// `lambda_i = W_i / srtt_i` (packets/s) and `l_i` is the loss probability on path i, estimated
/// as an exponentially weighted average of the per-packet loss indicator with gain
/// `g = 1/loss_window` per packet: between two updates the transport's counters say `n`
/// packets were resolved (`delivered` + `lost` increments), `k` of them lost; then
/// `S <- (1-g)^n S + (k/n)(1 - (1-g)^n)`, `Wt <- (1-g)^n Wt + (1 - (1-g)^n)`, `l_i = S / Wt`
/// (the division removes the bias of starting at zero, so early on `l_i` is the plain loss
/// fraction so far). If `lambda_i l_i = 0` (no RTT sample or no loss yet) the factor is 1.
/// The estimate is updated on every ACK and loss event from `Subflow::delivered` and
/// `Subflow::lost`, which the transport must keep current.
#[derive(Debug, Clone)]
pub struct RsfLb {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    mu: f64,
    gain: f64,
    est: Vec<LossEstimate>,
}

impl RsfLb {
    pub fn new(mu: f64, loss_window: f64, n_subflows: usize) -> Self {
        RsfLb {
            counting: Counting::Bytes,
            mu,
            gain: 1.0 / loss_window,
            est: vec![LossEstimate::default(); n_subflows],
        }
    }

    /// Current loss-probability estimate `l_i`.
    pub fn loss_probability(&self, i: usize) -> f64 {
        let e = &self.est[i];
        if e.weight > 0.0 {
            e.s / e.weight
        } else {
            0.0
        }
    }

    /// `min{1, (mu - lambda l)/(lambda l)}`, 1 when `lambda l = 0`.
    pub fn factor(&self, subflows: &[Subflow], i: usize) -> f64 {
        let Some(t) = subflows[i].srtt_secs() else {
            return 1.0;
        };
        let ll = subflows[i].cwnd / t * self.loss_probability(i);
        if ll > 0.0 {
            ((self.mu - ll) / ll).min(1.0)
        } else {
            1.0
        }
    }

    fn observe(&mut self, sf: &Subflow, i: usize) {
        let e = &mut self.est[i];
        let delivered = sf.delivered.saturating_sub(e.seen_delivered);
        let lost = sf.lost.saturating_sub(e.seen_lost);
        e.seen_delivered = e.seen_delivered.max(sf.delivered);
        e.seen_lost = e.seen_lost.max(sf.lost);
        let n = delivered + lost;
        if n == 0 {
            return;
        }
        let keep = (1.0 - self.gain).powf(n as f64);
        e.s = keep * e.s + (lost as f64 / n as f64) * (1.0 - keep);
        e.weight = keep * e.weight + (1.0 - keep);
    }
}

pub(crate) fn build_lb(
    params: &Params,
    n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let mu = number(&LB_INFO, params, "mu", |x| x > 0.0)?.unwrap_or(4.0);
    let window = number(&LB_INFO, params, "loss_window", |x| x >= 1.0)?.unwrap_or(1000.0);
    Ok(Box::new(RsfLb {
        counting,
        ..RsfLb::new(mu, window, n)
    }))
}

impl Controller for RsfLb {
    fn name(&self) -> &'static str {
        LB_INFO.name
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        self.observe(&subflows[i], i);
        let n = ca_credit(&mut subflows[i], ack, self.counting);
        if n == 0 {
            return;
        }
        let f = self.factor(subflows, i);
        let w = subflows[i].cwnd;
        add_credited(&mut subflows[i], n, f / w);
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        self.observe(&subflows[i], i);
        halve(&mut subflows[i]);
    }
}

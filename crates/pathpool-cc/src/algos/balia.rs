//! `balia`: Balanced Linked Adaptation.

use super::common::{active_count, add_credited, ca_credit, halve, rates, set_ssthresh};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow, MIN_CWND};
use crate::registry::{choice, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "balia",
    summary: "Balanced Linked Adaptation: between LIA's friendliness and EWTCP's responsiveness",
    source: "Seed 002 slide \"Balia\"; seed 004 Section I eq. (1)-(2) (Peng, Walid, Hwang, Low, \
             IEEE/ACM ToN 2016); seed 001 Table 1; variant \"kernel\": Linux MPTCP v0.95 mptcp_balia.c",
    formula: "x_r = w_r/tau_r, alpha_r = max_k x_k / x_r; per segment acked on r: \
              w_r += x_r/(tau_r (sum_k x_k)^2) * (1+alpha_r)/2 * (4+alpha_r)/5; per loss on r: \
              w_r -= w_r/2 * min(alpha_r, 1.5), ssthresh floor 1 with more than one active subflow \
              (seed 004 Section V), 2 on a single path; \"kernel\": alpha_r in the decrease is \
              floor(max_k x_k / x_r) (decrease w/2 or 0.75 w)",
    params: &[ParamInfo {
        name: "variant",
        default: "\"continuous\"",
        allowed: "\"continuous\" or \"kernel\"",
        doc: "\"continuous\": the paper's formula with real alpha_r; \"kernel\": Linux v0.95, which \
              truncates alpha_r to an integer in the decrease",
    }],
    coupled: true,
    build,
};

/// Which Balia: the paper's or the v0.95 kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaliaVariant {
    /// Seed 002 / 004 formula with real-valued `alpha_r`.
    Continuous,
    /// Linux MPTCP v0.95 `mptcp_balia.c`: the decrease uses the integer quotient
    /// `alpha_r = max_rate / rate` (so `min(alpha_r, 1.5)` is 1 or 1.5).
    Kernel,
}

/// Balia (seed 002, slide "Balia"; seed 004 Section I, eq. (1)-(2); seed 001 Table 1).
///
/// With `x_r = w_r / tau_r`, `alpha_r = max_k x_k / x_r`:
///
/// ```text
/// per ACK on r (congestion avoidance): w_r += x_r / (tau_r (sum_k x_k)^2) * (1 + alpha_r)/2 * (4 + alpha_r)/5
/// per loss on r:                       w_r -= w_r/2 * min(alpha_r, 1.5)
/// ```
///
/// On a single path `alpha_r = 1` and both rules are Reno's (`1/w`, `w/2`).
///
/// **Floors.** Seed 004, Section V: "for the Coupled and our algorithm, the minimum ssthresh is
/// set to 1 instead of 2 when more than 1 path is available"; the v0.95 kernel does the same
/// (`max(cwnd - md, 1)` with more than one established subflow, `tcp_reno_ssthresh` otherwise).
/// Both variants therefore use `ssthresh >= 1` with more than one active subflow and Reno's
/// `max(w/2, 2)` on a single one.
///
/// **Variants.** `Continuous` (default) is the formula above with real `alpha_r`. `Kernel`
/// follows v0.95 `mptcp_balia.c`, whose increase uses the real rates (its counter threshold
/// `ai = (sum x)^2 * 10 * w_r / ((x_r + x_max)(4 x_r + x_max))` is exactly the reciprocal of the
/// increase above) but whose decrease `md = (w_r/2) * min(alpha, 1.5)` uses
/// `alpha = max_rate / rate` in integer arithmetic: `alpha_r < 2` gives `w/2`, `alpha_r >= 2`
/// gives `0.75 w`. (The kernel computes `md` at its alpha-recomputation moments and applies the
/// stale value at the loss; we compute it from the state at the loss.)
///
/// Sums run over the active subflows with an RTT sample; a subflow without one takes Reno's
/// rules.
#[derive(Debug, Clone)]
pub struct Balia {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    variant: BaliaVariant,
}

impl Balia {
    pub fn new(variant: BaliaVariant) -> Self {
        Balia {
            counting: Counting::Bytes,
            variant,
        }
    }

    /// `alpha_r = max_k x_k / x_r`, or `None` without an RTT sample on `r`.
    pub fn alpha(subflows: &[Subflow], r: usize) -> Option<f64> {
        rates(subflows, r).map(|q| q.x_max / q.x_r)
    }

    /// Congestion-avoidance increase for one ACK on `r`.
    pub fn increase(&self, subflows: &[Subflow], r: usize) -> f64 {
        match rates(subflows, r) {
            Some(q) => {
                let a = q.x_max / q.x_r;
                q.x_r / (q.tau_r * q.sum * q.sum) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0
            }
            None => 1.0 / subflows[r].cwnd,
        }
    }

    /// The window decrement for a loss on `r` (before flooring).
    pub fn decrease(&self, subflows: &[Subflow], r: usize) -> f64 {
        let w = subflows[r].cwnd;
        let Some(a) = Self::alpha(subflows, r) else {
            return w / 2.0;
        };
        let a = match self.variant {
            BaliaVariant::Continuous => a,
            BaliaVariant::Kernel => a.floor(),
        };
        w / 2.0 * a.min(1.5)
    }
}

pub(crate) fn build(
    params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let v = match choice(&INFO, params, "variant", &["continuous", "kernel"])? {
        Some(1) => BaliaVariant::Kernel,
        _ => BaliaVariant::Continuous,
    };
    Ok(Box::new(Balia {
        counting,
        ..Balia::new(v)
    }))
}

impl Controller for Balia {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        let n = ca_credit(&mut subflows[i], ack, self.counting);
        if n == 0 {
            return;
        }
        let inc = self.increase(subflows, i);
        add_credited(&mut subflows[i], n, inc);
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        if active_count(subflows, i) <= 1 {
            halve(&mut subflows[i]);
            return;
        }
        let d = self.decrease(subflows, i);
        let sf = &mut subflows[i];
        set_ssthresh(sf, sf.cwnd - d, MIN_CWND);
    }
}

//! `generalized`: the (eta, beta) design family of seed 002 ("Design of the tradeoff").

use super::common::{add_credited, ca_credit, halve, rates, set_ssthresh};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow, MIN_SSTHRESH};
use crate::registry::{number, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "generalized",
    summary: "The (eta, beta) family of seed 002: eta tunes responsiveness, beta friendliness",
    source: "Seed 002 slide \"Design of the tradeoff\" (k_r, phi_r); window rules derived through seed 004 \
             eq. (7) (k_r = x_r D_r / tau_r, phi_r = I_r / D_r) with Reno's normalisation",
    formula: "a_r = x_max/x_r; per segment acked on r: w_r += x_r/(tau_r (sum_k x_k)^2) * (1 + beta(a_r-1)) * \
              (1 + eta(a_r-1)); per loss on r: w_r -= w_r/2 * (1 + eta(a_r-1)), ssthresh floor 2. \
              (eta, beta) = (0, 1) is Max (LIA without its cap) for equal RTTs; (0.5, 0.2) has Balia's increase",
    params: &[
        ParamInfo {
            name: "eta",
            default: "0.5",
            allowed: "a number >= 0",
            doc: "responsiveness: weight of x_max in k_r = x_r (x_r + eta (x_max - x_r)) / 2, i.e. in \
                  the decrease",
        },
        ParamInfo {
            name: "beta",
            default: "0.2",
            allowed: "a number >= 0",
            doc: "friendliness: weight of x_max in phi_r = 2 f_r (x_r + beta (x_max - x_r)); small is \
                  friendlier",
        },
    ],
    coupled: true,
    build,
};

/// The generalized family of seed 002 ("Design of the tradeoff").
///
/// The slide gives the fluid-model functions (seed 004 eq. (3)):
///
/// ```text
/// k_r   = x_r (x_r + eta (x_max - x_r))
/// phi_r = f_r (x_r + beta (x_max - x_r)),   f_r = 1 / (tau_r^2 x_r ||x||_1^2)
/// ```
///
/// Seed 004 eq. (7) links them to the per-ACK increment I_r and per-loss decrement D_r:
/// `k_r = x_r D_r / tau_r`, `phi_r = I_r / D_r`. Reno (I = 1/w, D = w/2) has `k = x^2/2`,
/// `phi = 2/(x tau)^2`, while the slide's family on one path (x_max = x_r) gives `k = x^2` and
/// `phi = 1/(x tau)^2`: the slide omits the factors 1/2 and 2 (its product `k phi` is Reno's).
/// We use Reno's normalisation, `k_r/2` and `2 phi_r`, so that the family contains Reno and LIA:
///
/// ```text
/// D_r = tau_r k_r / x_r = (w_r / 2) (1 + eta (a_r - 1))                       a_r = x_max / x_r
/// I_r = phi_r D_r       = x_r / (tau_r (sum_k x_k)^2) (1 + beta (a_r - 1)) (1 + eta (a_r - 1))
/// ```
///
/// **Which label is which.** `I_r` is symmetric in (eta, beta); `D_r` depends on eta alone.
/// With the slide's labels, LIA = (eta, beta) = (0, 1) gives `I_r = x_max / (tau_r (sum x)^2)`
/// (Max's increase `max_k(x_k/tau_k) / (sum x)^2` when the RTTs are equal) and `D_r = w_r/2`
/// (LIA's decrease): exactly Max, i.e. LIA without its 1/w_r cap. The swapped reading
/// (beta, eta) = (0, 1) keeps the increase but gives `D_r = (w_r/2) a_r`, which is not LIA's. So
/// the slide's labelling (eta, beta) is the consistent one, and Balia is (eta, beta) = (0.5, 0.2):
/// its increase `(1+a)/2 (4+a)/5` is reproduced exactly (by either order), but its decrease
/// `(w_r/2) min(a_r, 1.5)` is not the family's `(w_r/2)(1 + a_r)/2`; seed 004 Section IV says the
/// cap is a deliberate departure. The family is implemented as derived (no cap), with Reno's
/// `ssthresh >= 2`.
///
/// Sums run over the active subflows with an RTT sample; a subflow without one takes Reno's rules.
#[derive(Debug, Clone)]
pub struct Generalized {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    eta: f64,
    beta: f64,
}

impl Generalized {
    pub fn new(eta: f64, beta: f64) -> Self {
        Generalized {
            counting: Counting::Bytes,
            eta,
            beta,
        }
    }

    /// Per-ACK increase `I_r`.
    pub fn increase(&self, subflows: &[Subflow], r: usize) -> f64 {
        match rates(subflows, r) {
            Some(q) => {
                let a = q.x_max / q.x_r;
                q.x_r / (q.tau_r * q.sum * q.sum)
                    * (1.0 + self.beta * (a - 1.0))
                    * (1.0 + self.eta * (a - 1.0))
            }
            None => 1.0 / subflows[r].cwnd,
        }
    }

    /// Per-loss decrease `D_r` (before flooring).
    pub fn decrease(&self, subflows: &[Subflow], r: usize) -> f64 {
        let w = subflows[r].cwnd;
        match rates(subflows, r) {
            Some(q) => w / 2.0 * (1.0 + self.eta * (q.x_max / q.x_r - 1.0)),
            None => w / 2.0,
        }
    }
}

pub(crate) fn build(
    params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let eta = number(&INFO, params, "eta", |x| x >= 0.0)?.unwrap_or(0.5);
    let beta = number(&INFO, params, "beta", |x| x >= 0.0)?.unwrap_or(0.2);
    Ok(Box::new(Generalized {
        counting,
        ..Generalized::new(eta, beta)
    }))
}

impl Controller for Generalized {
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
        if rates(subflows, i).is_none() {
            halve(&mut subflows[i]);
            return;
        }
        let d = self.decrease(subflows, i);
        let sf = &mut subflows[i];
        set_ssthresh(sf, sf.cwnd - d, MIN_SSTHRESH);
    }
}

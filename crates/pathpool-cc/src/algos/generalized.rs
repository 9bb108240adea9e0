//! `generalized`: the (eta, beta) design family of Walid, Hwang, Peng & Low 2014 (slide "Design of
//! the tradeoff"), the two-parameter form of Peng et al. 2016's family, eq. (16).

use super::common::{active_count, add_credited, ca_credit, halve, rates, set_ssthresh};
use crate::controller::{
    Ack, Controller, Counting, Nanos, Subflow, WindowRules, MIN_CWND, MIN_SSTHRESH,
};
use crate::registry::{number, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "generalized",
    summary: "The (eta, beta) family of Walid et al. 2014: eta tunes responsiveness, beta friendliness",
    source: "Walid et al. 2014, slide \"Design of the tradeoff\" (k_r, phi_r; Peng et al. 2016, eq. (16)); \
             window rules derived through Peng et al. 2016, eq. (7) (k_r = x_r D_r / tau_r, \
             phi_r = I_r / D_r) with Reno's normalisation",
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

/// The generalized family of Walid, Hwang, Peng & Low 2014 (slide "Design of the tradeoff"), and
/// Balia as its member (eta, beta) = (0.5, 0.2) with Balia's own decrease.
///
/// The slide gives the fluid-model functions of the model of Peng et al. 2016, eq. (3), in the
/// two-parameter form used here (Peng et al. 2016 write the family as their eq. (16)):
///
/// ```text
/// k_r   = x_r (x_r + eta (x_max - x_r))
/// phi_r = f_r (x_r + beta (x_max - x_r)),   f_r = 1 / (tau_r^2 x_r ||x||_1^2)
/// ```
///
/// Peng et al. 2016, eq. (7), links them to the per-ACK increment I_r and per-loss decrement D_r:
/// `k_r = x_r D_r / tau_r`, `phi_r = I_r / D_r`. Reno (I = 1/w, D = w/2) has `k = x^2/2`,
/// `phi = 2/(x tau)^2`, while the slide's family on one path (x_max = x_r) gives `k = x^2` and
/// `phi = 1/(x tau)^2`: the slide omits the factors 1/2 and 2 (its product `k phi` is Reno's).
/// We use Reno's normalisation, `k_r/2` and `2 phi_r`, so that the family contains Reno and LIA:
///
/// ```text
/// D_r = tau_r k_r / x_r = (w_r / 2) (1 + eta (a_r - 1))                       a_r = x_max / x_r
/// I_r = phi_r D_r       = x_r / (tau_r (sum_k x_k)^2) (1 + eta (a_r - 1)) (1 + beta (a_r - 1))
/// ```
///
/// **Which label is which.** `I_r` is symmetric in (eta, beta); `D_r` depends on eta alone.
/// With the slide's labels, LIA = (eta, beta) = (0, 1) gives `I_r = x_max / (tau_r (sum x)^2)`
/// (Max's increase `max_k(x_k/tau_k) / (sum x)^2` when the RTTs are equal) and `D_r = w_r/2`
/// (LIA's decrease): exactly Max, i.e. LIA without its 1/w_r cap. The swapped reading
/// (beta, eta) = (0, 1) keeps the increase but gives `D_r = (w_r/2) a_r`, which is not LIA's. So
/// the slide's labelling (eta, beta) is the consistent one.
///
/// **Balia** (Peng et al. 2016, Section I, eq. (1)-(2); Walid et al. 2014, slide "Balia";
/// Pokhrel & Williamson 2020, Table 1) is (eta, beta) = (0.5, 0.2): its increase
/// `(1+a)/2 (4+a)/5` is the family's. Its decrease `(w_r/2) min(a_r, 1.5)` is not the family's
/// `(w_r/2)(1 + a_r)/2`: Peng et al. 2016, Section IV-B, says
/// Balia departs from the family there on purpose ("we add a cap for the decrement of window
/// size"). [`Generalized::balia`] is therefore this type with [`Decrease::Balia`]; the family as
/// derived is [`Decrease::Family`] (no cap, Reno's `ssthresh >= 2`). Balia's floors: Peng et al.
/// 2016, Section V, "for the Coupled and our algorithm, the minimum ssthresh is set to 1 instead
/// of 2 when more than 1 path is available"; the v0.95 kernel does the same (`max(cwnd - md, 1)` with
/// more than one established subflow, `tcp_reno_ssthresh` otherwise).
///
/// **Float operations.** A factor `1 + p (a_r - 1)` with `p = 1/n` for a whole number `n` is
/// evaluated in its reciprocal form `(n - 1 + a_r) / n`, the way the Balia slide writes it:
/// p = 0.5 gives `(1 + a)/2`, p = 0.2 gives `(4 + a)/5` (`1/0.2` rounds to exactly 5.0), p = 1
/// gives `(0 + a)/1 = a`. Other `p` (0 included) use `1 + p (a_r - 1)`. Balia's increase is thus
/// the very operations of its slide formula, `x_r/(tau_r (sum x)^2) * (1+a)/2 * (4+a)/5` (eta's
/// factor first), and Balia runs are bit-identical to its former separate implementation.
///
/// Sums run over the active subflows with an RTT sample; a subflow without one takes Reno's rules.
#[derive(Debug, Clone)]
pub struct Generalized {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    eta: Factor,
    beta: Factor,
    decrease: Decrease,
}

/// The per-loss decrease of a [`Generalized`] controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decrease {
    /// The family's `(w_r/2)(1 + eta(a_r - 1))`, `ssthresh >= 2`; Reno's halving without an
    /// RTT sample.
    Family,
    /// Balia's `(w_r/2) min(a_r, 1.5)` (or the kernel's integer `a_r`, [`BaliaVariant`]),
    /// `ssthresh >= 1` with more than one active subflow, Reno's halving on a single one.
    Balia(BaliaVariant),
}

/// Which Balia: the paper's or the v0.95 kernel's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaliaVariant {
    /// The published formula (Peng et al. 2016, eq. (1)-(2)) with real-valued `alpha_r`.
    Continuous,
    /// Linux MPTCP v0.95 `mptcp_balia.c`: the decrease uses the integer quotient
    /// `alpha_r = max_rate / rate` (so `min(alpha_r, 1.5)` is 1 or 1.5). Its increase uses the
    /// real rates (its counter threshold `ai = (sum x)^2 * 10 * w_r / ((x_r + x_max)(4 x_r +
    /// x_max))` is exactly the reciprocal of the increase above). (The kernel computes `md` at
    /// its alpha-recomputation moments and applies the stale value at the loss; we compute it
    /// from the state at the loss.)
    Kernel,
}

/// `1 + p (a - 1)`, or `(n - 1 + a) / n` when `p = 1/n` for a whole number `n`.
#[derive(Debug, Clone, Copy)]
struct Factor {
    p: f64,
    /// `n` with `1/n == p`, if `1/p` is a whole number (up to 2^53).
    n: Option<f64>,
}

impl Factor {
    fn new(p: f64) -> Self {
        let n = 1.0 / p;
        let whole = n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n < 9.007_199_254_740_992e15;
        Factor {
            p,
            n: whole.then_some(n),
        }
    }

    /// `y (1 + p (a - 1))`; in the reciprocal form multiplying by `n - 1 + a` first and dividing
    /// by `n` last, as Balia's formula does. Both forms give exactly `y` at `a = 1` (`n - 1` is
    /// exact for a whole `n` below 2^53).
    #[inline]
    fn scale(&self, y: f64, a: f64) -> f64 {
        match self.n {
            Some(n) => y * (n - 1.0 + a) / n,
            None => y * (1.0 + self.p * (a - 1.0)),
        }
    }
}

impl Generalized {
    /// The family member (eta, beta), with the family's decrease.
    pub fn new(eta: f64, beta: f64) -> Self {
        Generalized {
            counting: Counting::Bytes,
            eta: Factor::new(eta),
            beta: Factor::new(beta),
            decrease: Decrease::Family,
        }
    }

    /// Balia: (eta, beta) = (0.5, 0.2) with Balia's capped decrease.
    pub fn balia(variant: BaliaVariant) -> Self {
        Generalized {
            decrease: Decrease::Balia(variant),
            ..Generalized::new(0.5, 0.2)
        }
    }

    /// `a_r = max_k x_k / x_r` (Balia's `alpha_r`), or `None` without an RTT sample on `r`.
    pub fn alpha(subflows: &[Subflow], r: usize) -> Option<f64> {
        rates(subflows, r).map(|q| q.x_max / q.x_r)
    }

    /// Per-ACK increase `I_r`.
    pub fn increase(&self, subflows: &[Subflow], r: usize) -> f64 {
        match rates(subflows, r) {
            Some(q) => {
                let a = q.x_max / q.x_r;
                let base = q.x_r / (q.tau_r * q.sum * q.sum);
                self.beta.scale(self.eta.scale(base, a), a)
            }
            None => 1.0 / subflows[r].cwnd,
        }
    }

    /// Per-loss decrease `D_r` (before flooring).
    pub fn decrease(&self, subflows: &[Subflow], r: usize) -> f64 {
        let w = subflows[r].cwnd;
        let Some(a) = Self::alpha(subflows, r) else {
            return w / 2.0;
        };
        match self.decrease {
            Decrease::Family => self.eta.scale(w / 2.0, a),
            Decrease::Balia(BaliaVariant::Continuous) => w / 2.0 * a.min(1.5),
            Decrease::Balia(BaliaVariant::Kernel) => w / 2.0 * a.floor().min(1.5),
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
        match self.decrease {
            Decrease::Family => INFO.name,
            Decrease::Balia(_) => super::balia::INFO.name,
        }
    }

    fn window_rules(&self, subflows: &[Subflow], i: usize) -> Option<WindowRules> {
        Some(WindowRules {
            increase: self.increase(subflows, i),
            decrease: self.decrease(subflows, i),
        })
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
        let floor = match self.decrease {
            Decrease::Family if rates(subflows, i).is_some() => MIN_SSTHRESH,
            Decrease::Balia(_) if active_count(subflows, i) > 1 => MIN_CWND,
            _ => {
                halve(&mut subflows[i]);
                return;
            }
        };
        let d = self.decrease(subflows, i);
        let sf = &mut subflows[i];
        set_ssthresh(sf, sf.cwnd - d, floor);
    }
}

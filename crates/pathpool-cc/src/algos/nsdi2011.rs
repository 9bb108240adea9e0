//! `ewtcp`, `coupled`, `semicoupled`, `max`: the four earlier multipath designs that Peng,
//! Walid, Hwang & Low (IEEE/ACM ToN 2016) model in Section II-B, one type each ([`Ewtcp`],
//! [`Coupled`], [`Semicoupled`], [`Max`]). Their window rules are the standard forms of Wischik,
//! Raiciu, Greenhalgh & Handley, "Design, implementation and evaluation of congestion control for
//! multipath TCP", NSDI 2011, Section 2 (hence the module name), with equal RTTs and `w_total`
//! the sum of the connection's windows. Each is written as a per-ACK increment `I_r` and a
//! per-loss decrement `D_r`, the form Peng et al. 2016, eq. (7), maps to their fluid model
//! (`k_r = x_r D_r / tau_r`, `phi_r = I_r / D_r`).
//!
//! All four run Linux slow start and one congestion-avoidance increment per acknowledged
//! segment (per ACK under [`Counting::Acks`]).

use super::common::{
    active_count, add_credited, alpha_ratio, ca_credit, halve, rtt, set_ssthresh, window_total,
};
use crate::controller::{
    Ack, Controller, Counting, Nanos, Subflow, WindowRules, MIN_CWND, MIN_SSTHRESH,
};
use crate::registry::{number, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const EWTCP_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "ewtcp",
    summary: "Equally-weighted TCP: Reno on every subflow with the increase scaled by a weight a",
    source: "Honda et al. 2009; standard form of Wischik et al. 2011 (NSDI), Section 2; Peng et al. 2016 \
             (IEEE/ACM ToN), Section II-B, fluid form via eq. (7)",
    formula: "per segment acked on r: w_r += a/w_r; per loss on r: w_r -= w_r/2 (ssthresh = max(w_r/2, 2))",
    params: &[ParamInfo {
        name: "a",
        default: "1/n^2 (n = number of subflows)",
        allowed: "a number > 0",
        doc: "increase weight; 1/n^2 makes n subflows through one bottleneck take one TCP's share, \
              1 is uncoupled Reno",
    }],
    coupled: false,
    build: build_ewtcp,
};

pub(crate) const COUPLED_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "coupled",
    summary: "Fully coupled: every subflow grows by 1/w_total and cuts w_total/2 from its window",
    source: "Kelly & Voice 2005; Han et al. 2006; standard form of Wischik et al. 2011 (NSDI), Section 2; \
             Peng et al. 2016 (IEEE/ACM ToN), Section II-B, fluid form via eq. (7)",
    formula: "per segment acked on r: w_r += 1/w_total; per loss on r: ssthresh_r = max(w_r - w_total/2, floor), \
              w_r = ssthresh_r; floor = 1 with more than one active subflow (Peng et al. 2016, Section V), else 2",
    params: &[],
    coupled: true,
    build: build_coupled,
};

pub(crate) const SEMICOUPLED_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "semicoupled",
    summary: "Semicoupled: coupled increase a/w_total, Reno decrease w_r/2",
    source: "Wischik et al. 2011 (NSDI), Section 2; Peng et al. 2016 (IEEE/ACM ToN), Section II-B, \
             fluid form via eq. (7)",
    formula:
        "per segment acked on r: w_r += a/w_total; per loss on r: w_r -= w_r/2 (ssthresh = max(w_r/2, 2))",
    params: &[ParamInfo {
        name: "a",
        default: "1",
        allowed: "a number > 0",
        doc: "increase weight (aggressiveness)",
    }],
    coupled: true,
    build: build_semicoupled,
};

pub(crate) const MAX_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "max",
    summary: "Max: LIA's increase without the cap at 1/w_r, Reno decrease",
    source:
        "Wischik et al. 2011 (NSDI), Section 2; Peng et al. 2016 (IEEE/ACM ToN), Section II-B, fluid form \
         via eq. (7); Raiciu, Handley & Wischik 2011 (RFC 6356), Section 3, without the min()",
    formula:
        "per segment acked on r: w_r += max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2; per loss on r: \
              w_r -= w_r/2 (ssthresh = max(w_r/2, 2))",
    params: &[],
    coupled: true,
    build: build_max,
};

/// The congestion-avoidance step of all four: Linux slow start, then `credit` increments of
/// `increase` computed from the window before the ACK ([`ca_credit`]).
fn on_ack_with(
    subflows: &mut [Subflow],
    i: usize,
    ack: &Ack,
    counting: Counting,
    increase: impl Fn(&[Subflow], usize) -> f64,
) {
    let n = ca_credit(&mut subflows[i], ack, counting);
    if n == 0 {
        return;
    }
    let inc = increase(subflows, i);
    add_credited(&mut subflows[i], n, inc);
}

/// EWTCP, equally-weighted TCP (Honda et al. 2009; standard form of Wischik et al. 2011, NSDI,
/// Section 2; modelled by Peng et al. 2016, Section II-B, through eq. (7)).
///
/// Per segment acknowledged on r in congestion avoidance, per loss on r:
///
/// ```text
/// I_r = a / w_r        D_r = w_r / 2   (ssthresh = max(w_r/2, 2), Linux tcp_reno_ssthresh)
/// ```
///
/// `a = 1/n^2` makes n subflows through one bottleneck take one TCP's share; `a = 1` is
/// uncoupled Reno on every subflow.
#[derive(Debug, Clone)]
pub struct Ewtcp {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    a: f64,
}

impl Ewtcp {
    /// EWTCP with weight `a`.
    pub fn new(a: f64) -> Self {
        Ewtcp {
            counting: Counting::Bytes,
            a,
        }
    }

    /// `I_r = a / w_r`.
    pub fn increase(&self, subflows: &[Subflow], i: usize) -> f64 {
        self.a / subflows[i].cwnd
    }

    /// `D_r = w_r / 2`.
    pub fn decrease(&self, subflows: &[Subflow], i: usize) -> f64 {
        subflows[i].cwnd / 2.0
    }
}

/// Coupled, the fully coupled design (Kelly & Voice 2005; Han et al. 2006; standard form of
/// Wischik et al. 2011, NSDI, Section 2; modelled by Peng et al. 2016, Section II-B, through
/// eq. (7)).
///
/// Per segment acknowledged on r, per loss on r (`w_total` = sum of the windows of the
/// active subflows):
///
/// ```text
/// I_r = 1 / w_total    D_r = w_total / 2
/// ```
///
/// `D_r` can exceed the path's own window; it is applied as
/// `ssthresh_r = max(w_r - w_total/2, floor)`, `w_r = ssthresh_r`, with `floor = 1` when more
/// than one subflow is active (Peng et al. 2016, Section V: "for the Coupled ... algorithm, the
/// minimum ssthresh is set to 1 instead of 2 when more than 1 path is available") and Linux's 2 on a
/// single path, where the rule is Reno's `max(w/2, 2)`.
#[derive(Debug, Clone)]
pub struct Coupled {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
}

impl Coupled {
    pub fn new() -> Self {
        Coupled {
            counting: Counting::Bytes,
        }
    }

    /// `I_r = 1 / w_total`.
    pub fn increase(&self, subflows: &[Subflow], i: usize) -> f64 {
        1.0 / window_total(subflows, i)
    }

    /// `D_r = w_total / 2` (may exceed `w_r`; the loss response floors).
    pub fn decrease(&self, subflows: &[Subflow], i: usize) -> f64 {
        window_total(subflows, i) / 2.0
    }
}

impl Default for Coupled {
    fn default() -> Self {
        Self::new()
    }
}

/// Semicoupled (Wischik et al. 2011, NSDI, Section 2; modelled by Peng et al. 2016, Section II-B,
/// through eq. (7)).
///
/// ```text
/// I_r = a / w_total    D_r = w_r / 2   (ssthresh = max(w_r/2, 2))
/// ```
#[derive(Debug, Clone)]
pub struct Semicoupled {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    a: f64,
}

impl Semicoupled {
    /// Semicoupled with weight `a`.
    pub fn new(a: f64) -> Self {
        Semicoupled {
            counting: Counting::Bytes,
            a,
        }
    }

    /// `I_r = a / w_total`.
    pub fn increase(&self, subflows: &[Subflow], i: usize) -> f64 {
        self.a / window_total(subflows, i)
    }

    /// `D_r = w_r / 2`.
    pub fn decrease(&self, subflows: &[Subflow], i: usize) -> f64 {
        subflows[i].cwnd / 2.0
    }
}

/// Max (Wischik et al. 2011, NSDI, Section 2; modelled by Peng et al. 2016, Section II-B, through
/// eq. (7)): the increase of RFC 6356 (Raiciu, Handley & Wischik 2011), Section 3, without its
/// `min(., 1/w_r)` cap, i.e. LIA uncapped.
///
/// ```text
/// I_r = max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2    D_r = w_r / 2   (ssthresh = max(w_r/2, 2))
/// ```
///
/// Sums over the active subflows with an RTT sample ([`alpha_ratio`]); if the ACKed subflow
/// has none yet it takes Reno's `1/w_r`.
#[derive(Debug, Clone)]
pub struct Max {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
}

impl Max {
    pub fn new() -> Self {
        Max {
            counting: Counting::Bytes,
        }
    }

    /// `I_r = max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2`, Reno's `1/w_r` without a sample.
    pub fn increase(&self, subflows: &[Subflow], i: usize) -> f64 {
        max_increase(subflows, i).unwrap_or(1.0 / subflows[i].cwnd)
    }

    /// `D_r = w_r / 2`.
    pub fn decrease(&self, subflows: &[Subflow], i: usize) -> f64 {
        subflows[i].cwnd / 2.0
    }
}

impl Default for Max {
    fn default() -> Self {
        Self::new()
    }
}

/// `max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2` over the active subflows with an RTT sample
/// (LIA's ratio, [`alpha_ratio`]), or `None` if subflow `i` has no sample.
pub(crate) fn max_increase(subflows: &[Subflow], i: usize) -> Option<f64> {
    rtt(&subflows[i])?;
    alpha_ratio(subflows, i).map(|(ratio, _)| ratio)
}

pub(crate) fn build_ewtcp(
    params: &Params,
    n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let a = number(&EWTCP_INFO, params, "a", |x| x > 0.0)?.unwrap_or(1.0 / (n * n) as f64);
    Ok(Box::new(Ewtcp {
        counting,
        ..Ewtcp::new(a)
    }))
}

pub(crate) fn build_coupled(
    _params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Coupled { counting }))
}

pub(crate) fn build_semicoupled(
    params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let a = number(&SEMICOUPLED_INFO, params, "a", |x| x > 0.0)?.unwrap_or(1.0);
    Ok(Box::new(Semicoupled {
        counting,
        ..Semicoupled::new(a)
    }))
}

pub(crate) fn build_max(
    _params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Max { counting }))
}

/// Coupled's loss response: `ssthresh = max(w_r - w_total/2, floor)`, floor 1 with siblings.
fn coupled_loss(subflows: &mut [Subflow], i: usize) {
    let total = window_total(subflows, i);
    let floor = if active_count(subflows, i) > 1 {
        MIN_CWND
    } else {
        MIN_SSTHRESH
    };
    let sf = &mut subflows[i];
    set_ssthresh(sf, sf.cwnd - total / 2.0, floor);
}

/// The `Controller` the four share: their own `increase` per credited segment, `window_rules`
/// from `increase` and `decrease`, and `$loss` as the loss response.
macro_rules! controller {
    ($t:ty, $info:expr, $loss:expr) => {
        impl Controller for $t {
            fn name(&self) -> &'static str {
                $info.name
            }

            fn window_rules(&self, subflows: &[Subflow], i: usize) -> Option<WindowRules> {
                Some(WindowRules {
                    increase: self.increase(subflows, i),
                    decrease: self.decrease(subflows, i),
                })
            }

            fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
                on_ack_with(subflows, i, ack, self.counting, |s, i| self.increase(s, i));
            }

            fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
                $loss(subflows, i)
            }
        }
    };
}

/// The Reno loss response of EWTCP, Semicoupled and Max.
fn halve_loss(subflows: &mut [Subflow], i: usize) {
    halve(&mut subflows[i]);
}

controller!(Ewtcp, EWTCP_INFO, halve_loss);
controller!(Coupled, COUPLED_INFO, coupled_loss);
controller!(Semicoupled, SEMICOUPLED_INFO, halve_loss);
controller!(Max, MAX_INFO, halve_loss);

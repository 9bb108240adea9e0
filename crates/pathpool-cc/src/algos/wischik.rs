//! `ewtcp`, `coupled`, `semicoupled`, `max`: the four multipath designs that seed 004 models in
//! Section II-B (its formulas were lost in extraction; the standard forms below are those of
//! Wischik, Raiciu, Greenhalgh, Handley, "Design, implementation and evaluation of congestion
//! control for multipath TCP", NSDI 2011, Section 2, as restated in /work/shared/seeds/README.md).
//!
//! All four run Linux slow start and take one congestion-avoidance step per ACK.

use super::common::{
    add_credited, alpha_ratio, ca_credit, halve, participates, rtt, set_ssthresh, window_total,
};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow, MIN_CWND, MIN_SSTHRESH};
use crate::registry::{number, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const EWTCP_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "ewtcp",
    summary: "Equally-weighted TCP: Reno on every subflow with the increase scaled by a weight a",
    source: "Seed 004 Section II-B (EWTCP, Honda et al. 2009); standard form of Wischik et al., NSDI 2011",
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
    source: "Seed 004 Section II-B (Coupled, Kelly & Voice 2005, Han et al. 2006); Wischik et al., NSDI 2011",
    formula: "per segment acked on r: w_r += 1/w_total; per loss on r: ssthresh_r = max(w_r - w_total/2, floor), \
              w_r = ssthresh_r; floor = 1 with more than one active subflow (seed 004 Section V), else 2",
    params: &[],
    coupled: true,
    build: build_coupled,
};

pub(crate) const SEMICOUPLED_INFO: AlgorithmInfo = AlgorithmInfo {
    name: "semicoupled",
    summary: "Semicoupled: coupled increase a/w_total, Reno decrease w_r/2",
    source: "Seed 004 Section II-B (Semicoupled, Wischik et al. 2011); Wischik et al., NSDI 2011",
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
        "Seed 004 Section II-B (Max, Wischik et al. 2011); RFC 6356 Section 3 without the min()",
    formula:
        "per segment acked on r: w_r += max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2; per loss on r: \
              w_r -= w_r/2 (ssthresh = max(w_r/2, 2))",
    params: &[],
    coupled: true,
    build: build_max,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Ewtcp,
    Coupled,
    Semicoupled,
    Max,
}

/// One of the four Section II-B designs of seed 004.
///
/// Per ACK on path r in congestion avoidance, per loss on path r (w_total = sum of the windows
/// of the active subflows):
///
/// | name | increase I_r | decrease D_r |
/// |---|---|---|
/// | `ewtcp` | a / w_r | w_r / 2 |
/// | `coupled` | 1 / w_total | w_total / 2 |
/// | `semicoupled` | a / w_total | w_r / 2 |
/// | `max` | max_k(w_k/rtt_k^2) / (sum_k w_k/rtt_k)^2 | w_r / 2 |
///
/// `coupled`'s decrease can exceed the path's own window; it is applied as
/// `ssthresh_r = max(w_r - w_total/2, floor)`, `w_r = ssthresh_r`, with `floor = 1` when more
/// than one subflow is active (seed 004, Section V: "for the Coupled ... algorithm, the minimum
/// ssthresh is set to 1 instead of 2 when more than 1 path is available") and Linux's 2 on a
/// single path, where the rule is Reno's `max(w/2, 2)`.
///
/// `max` sums over the active subflows that have an RTT sample; if the ACKed subflow has none
/// yet it takes Reno's `1/w_r`.
#[derive(Debug, Clone)]
pub struct Wischik {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    kind: Kind,
    a: f64,
}

impl Wischik {
    /// EWTCP with weight `a`.
    pub fn ewtcp(a: f64) -> Self {
        Wischik {
            counting: Counting::Bytes,
            kind: Kind::Ewtcp,
            a,
        }
    }
    /// Coupled.
    pub fn coupled() -> Self {
        Wischik {
            counting: Counting::Bytes,
            kind: Kind::Coupled,
            a: 1.0,
        }
    }
    /// Semicoupled with weight `a`.
    pub fn semicoupled(a: f64) -> Self {
        Wischik {
            counting: Counting::Bytes,
            kind: Kind::Semicoupled,
            a,
        }
    }
    /// Max.
    pub fn max() -> Self {
        Wischik {
            counting: Counting::Bytes,
            kind: Kind::Max,
            a: 1.0,
        }
    }

    /// The congestion-avoidance increase on subflow `i` for one ACK (segments).
    pub fn increase(&self, subflows: &[Subflow], i: usize) -> f64 {
        let w = subflows[i].cwnd;
        match self.kind {
            Kind::Ewtcp => self.a / w,
            Kind::Coupled => 1.0 / window_total(subflows, i),
            Kind::Semicoupled => self.a / window_total(subflows, i),
            Kind::Max => max_increase(subflows, i).unwrap_or(1.0 / w),
        }
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
    Ok(Box::new(Wischik {
        counting,
        ..Wischik::ewtcp(a)
    }))
}

pub(crate) fn build_coupled(
    _params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Wischik {
        counting,
        ..Wischik::coupled()
    }))
}

pub(crate) fn build_semicoupled(
    params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let a = number(&SEMICOUPLED_INFO, params, "a", |x| x > 0.0)?.unwrap_or(1.0);
    Ok(Box::new(Wischik {
        counting,
        ..Wischik::semicoupled(a)
    }))
}

pub(crate) fn build_max(
    _params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Wischik {
        counting,
        ..Wischik::max()
    }))
}

impl Controller for Wischik {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Ewtcp => EWTCP_INFO.name,
            Kind::Coupled => COUPLED_INFO.name,
            Kind::Semicoupled => SEMICOUPLED_INFO.name,
            Kind::Max => MAX_INFO.name,
        }
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
        if self.kind != Kind::Coupled {
            halve(&mut subflows[i]);
            return;
        }
        let total = window_total(subflows, i);
        let active = (0..subflows.len())
            .filter(|&k| participates(subflows, k, i))
            .count();
        let floor = if active > 1 { MIN_CWND } else { MIN_SSTHRESH };
        let sf = &mut subflows[i];
        set_ssthresh(sf, sf.cwnd - total / 2.0, floor);
    }
}

//! `balia`: Balanced Linked Adaptation (Peng, Walid, Hwang & Low, IEEE/ACM ToN 2016, Section I,
//! eq. (1)-(2); first presented by Walid, Hwang, Peng & Low 2014, slide "Balia").
//!
//! ```text
//! x_r = w_r / tau_r,  alpha_r = max_k x_k / x_r
//! per segment acked on r:  w_r += x_r/(tau_r (sum_k x_k)^2) (1 + alpha_r)/2 (4 + alpha_r)/5  (1)
//! per loss on r:           w_r -= w_r/2 min(alpha_r, 1.5)                                    (2)
//! ```
//!
//! Balia is the generalized family's member (eta, beta) = (0.5, 0.2) with its own capped
//! decrease: one implementation, [`Generalized::balia`] (see [`Generalized`] for the rules, the
//! floors and why the float operations are exactly the slide's).

use super::generalized::{BaliaVariant, Generalized};
use crate::controller::{Controller, Counting};
use crate::registry::{choice, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "balia",
    summary: "Balanced Linked Adaptation: between LIA's friendliness and EWTCP's responsiveness",
    source: "Peng, Walid, Hwang & Low 2016 (IEEE/ACM ToN), Section I, eq. (1)-(2); Walid et al. 2014, \
             slide \"Balia\"; Pokhrel & Williamson 2020, Table 1; variant \"kernel\": Linux MPTCP v0.95 \
             mptcp_balia.c",
    formula: "x_r = w_r/tau_r, alpha_r = max_k x_k / x_r; per segment acked on r: \
              w_r += x_r/(tau_r (sum_k x_k)^2) * (1+alpha_r)/2 * (4+alpha_r)/5; per loss on r: \
              w_r -= w_r/2 * min(alpha_r, 1.5), ssthresh floor 1 with more than one active subflow \
              (Peng et al. 2016, Section V), 2 on a single path; \"kernel\": alpha_r in the decrease is \
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

pub(crate) fn build(
    params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let v = match choice(&INFO, params, "variant", &["continuous", "kernel"])? {
        Some(1) => BaliaVariant::Kernel,
        _ => BaliaVariant::Continuous,
    };
    let mut balia = Generalized::balia(v);
    balia.counting = counting;
    Ok(Box::new(balia))
}

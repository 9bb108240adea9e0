//! `reno`: NewReno-style AIMD, each subflow on its own (Allman, Paxson & Blanton, RFC 5681, 2009,
//! Section 3.1, eq. (3) and (4)).

use super::common::{add_credited, ca_credit, halve};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow, WindowRules};
use crate::registry::{AlgorithmInfo, CcError, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "reno",
    summary: "Uncoupled NewReno AIMD on every subflow (single-path TCP when there is one subflow)",
    source: "Allman, Paxson & Blanton 2009 (RFC 5681), Section 3.1, eq. (3) and (4); Linux \
             tcp_reno_cong_avoid / tcp_reno_ssthresh",
    formula:
        "slow start: w += acked segments (up to ssthresh); per segment acked in CA: w += 1/w; \
              per loss: ssthresh = max(w/2, 2), w = ssthresh",
    params: &[],
    coupled: false,
    build,
};

/// Uncoupled Reno on every subflow (Allman, Paxson & Blanton 2009, RFC 5681, Section 3.1).
///
/// Congestion avoidance (RFC 5681 eq. 3, in segments): `w += 1/w` per acknowledged segment
/// (default [`Counting::Bytes`], Linux 6.18 `tcp_reno_cong_avoid` -> `tcp_cong_avoid_ai(tp, w,
/// acked)`: an ACK of `n` segments adds `n/w`, the slow-start leftover included), or once per
/// ACK whatever it covers ([`Counting::Acks`], the v0.95 coupled algorithms' rule, with which
/// delayed ACKs halve the growth per RTT). RFC 5681 Section 3.1 RECOMMENDS byte counting and
/// allows eq. 3 per ACK as the common alternative. Every coupled algorithm reduces to exactly
/// this controller on one path in either mode. Slow start is Linux's (`w += acked segments`:
/// RFC 3465 byte counting without its limit L) rather than RFC 5681 eq. 2 (`+min(N, SMSS)`
/// per ACK). On loss
/// (RFC 5681 eq. 4 with FlightSize ~ cwnd, Linux `tcp_reno_ssthresh`): `ssthresh = max(w/2, 2)`,
/// `w = ssthresh`; on a timeout the same ssthresh and `w = 1` (the loss window).
#[derive(Debug, Clone, Default)]
pub struct Reno {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
}

impl Reno {
    pub fn new() -> Self {
        Reno::default()
    }
}

pub(crate) fn build(
    _params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Reno { counting }))
}

impl Controller for Reno {
    fn name(&self) -> &'static str {
        INFO.name
    }

    /// `I = 1/w`, `D = w/2`.
    fn window_rules(&self, subflows: &[Subflow], i: usize) -> Option<WindowRules> {
        let w = subflows[i].cwnd;
        Some(WindowRules {
            increase: 1.0 / w,
            decrease: w / 2.0,
        })
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        let sf = &mut subflows[i];
        let n = ca_credit(sf, ack, self.counting);
        if n > 0 {
            let inc = 1.0 / sf.cwnd;
            add_credited(sf, n, inc);
        }
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        halve(&mut subflows[i]);
    }
}

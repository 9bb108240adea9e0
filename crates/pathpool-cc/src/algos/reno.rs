//! `reno`: NewReno-style AIMD, each subflow on its own (RFC 5681).

use super::common::{halve, slow_start_or_ca};
use crate::controller::{Ack, Controller, Nanos, Subflow};
use crate::registry::{AlgorithmInfo, CcError, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "reno",
    summary: "Uncoupled NewReno AIMD on every subflow (single-path TCP when there is one subflow)",
    source: "RFC 5681 Section 3.1 (eq. 3 and 4); Linux tcp_reno_cong_avoid / tcp_reno_ssthresh",
    formula: "slow start: w += acked segments (up to ssthresh); per ACK in CA: w += 1/w; \
              per loss: ssthresh = max(w/2, 2), w = ssthresh",
    params: &[],
    coupled: false,
};

/// Uncoupled Reno on every subflow.
///
/// Congestion avoidance (RFC 5681 eq. 3, in segments): `w += 1/w` per ACK. RFC 5681 Section 3.1
/// RECOMMENDS byte counting (one SMSS once a window's worth of bytes has been acknowledged) and
/// allows eq. 3 (`cwnd += SMSS*SMSS/cwnd` per ACK) as the common alternative; Linux
/// (`tcp_cong_avoid_ai`) counts acknowledged segments. We take eq. 3, one step per ACK whatever
/// it covers, like the v0.95 coupled algorithms, so that every coupled algorithm reduces to
/// exactly this controller on one path; with delayed ACKs (one ACK per two segments) this grows
/// half as fast per RTT as byte counting would. Slow start is Linux's (`w += acked segments`:
/// RFC 3465 byte counting without its limit L) rather than RFC 5681 eq. 2 (`+min(N, SMSS)`
/// per ACK). On loss
/// (RFC 5681 eq. 4 with FlightSize ~ cwnd, Linux `tcp_reno_ssthresh`): `ssthresh = max(w/2, 2)`,
/// `w = ssthresh`; on a timeout the same ssthresh and `w = 1` (the loss window).
#[derive(Debug, Clone, Default)]
pub struct Reno;

impl Reno {
    pub fn new() -> Self {
        Reno
    }
}

pub(crate) fn build(_params: &Params, _n: usize) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Reno))
}

impl Controller for Reno {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        let sf = &mut subflows[i];
        if slow_start_or_ca(sf, ack) {
            sf.cwnd += 1.0 / sf.cwnd;
        }
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        halve(&mut subflows[i]);
    }
}

//! `cubic`: CUBIC (Xu, Ha, Rhee, Goel & Eggert, RFC 9438, 2023, Section 4, eq. (1), (2) and (4);
//! the algorithm of Ha, Rhee & Xu 2008), uncoupled on every subflow.

use super::common::{ca_credit, secs, set_ssthresh};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow, MIN_CWND, MIN_SSTHRESH};
use crate::registry::{AlgorithmInfo, CcError, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "cubic",
    summary: "CUBIC on every subflow, uncoupled (what upstream Linux MPTCP runs by default)",
    source: "Xu, Ha, Rhee, Goel & Eggert 2023 (RFC 9438), Section 4 (eq. 1 W_cubic, eq. 2 K, eq. 4 \
             W_est, Sections 4.6-4.8); Ha, Rhee & Xu 2008",
    formula: "W_cubic(t) = C (t - K)^3 + W_max, K = cbrt((W_max - cwnd_epoch)/C), C = 0.4; per segment acked in CA: \
              target = clamp(W_cubic(t + RTT), cwnd, 1.5 cwnd), cwnd += (target - cwnd)/cwnd, or \
              cwnd = W_est in the Reno-friendly region (W_est += alpha_cubic * segments_acked/cwnd, \
              alpha_cubic = 3(1-beta)/(1+beta) until W_est >= cwnd_prior, then 1); per loss: cwnd_prior = \
              cwnd, W_max = cwnd (fast convergence: cwnd (1+beta)/2 if cwnd < previous W_max), ssthresh = \
              max(beta cwnd, 2), beta = 0.7; first CA stage after an RTO: K = 0, W_max = W_est = cwnd_epoch",
    params: &[],
    coupled: false,
    build,
};

/// RFC 9438 constants.
pub const CUBIC_C: f64 = 0.4;
pub const CUBIC_BETA: f64 = 0.7;

#[derive(Debug, Clone, Copy, Default)]
struct Epoch {
    /// Start of the current congestion-avoidance epoch; `None` until the first CA ACK after a
    /// loss (or ever).
    start: Option<Nanos>,
    k: f64,
    /// The plateau the cubic curve is centred on (W_max, or cwnd_epoch if already above it).
    origin: f64,
    w_est: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct CubicState {
    /// W_max: window just before the last reduction, lowered by fast convergence (0 before
    /// any loss); after a timeout, the window at the start of the next CA stage.
    w_max: f64,
    /// cwnd_prior: the window when ssthresh was last set (0 before any loss). RFC 9438
    /// Section 4.3 ends the reduced alpha_cubic here, not at W_max: with fast convergence
    /// W_max < cwnd_prior, and switching at W_max would speed the flow up exactly when fast
    /// convergence means to slow it down.
    cwnd_prior: f64,
    /// The next CA stage is the first after a retransmission timeout (Section 4.8).
    after_timeout: bool,
    epoch: Epoch,
}

/// CUBIC per RFC 9438 (Xu, Ha, Rhee, Goel & Eggert 2023), run independently on every subflow.
///
/// Congestion avoidance, per ACK (RFC 9438 Section 4.2-4.4), time `t` from the start of the
/// epoch (the first CA ACK after a congestion event):
///
/// ```text
/// W_cubic(t) = C (t - K)^3 + W_max,   K = cbrt((W_max - cwnd_epoch) / C)       (eq. 1, 2)
/// target     = min(max(W_cubic(t + RTT), cwnd), 1.5 cwnd)
/// W_est     += alpha_cubic * segments_acked / cwnd,  alpha_cubic = 3 (1 - beta)/(1 + beta)  (eq. 4)
///              (alpha_cubic = 1 once W_est >= cwnd_prior, Section 4.3)
/// if W_cubic(t) < W_est: cwnd = W_est   (Reno-friendly region)
/// else:                  cwnd += (target - cwnd) / cwnd
/// ```
///
/// `W_est` starts at `cwnd_epoch`. Counting: with [`Counting::Bytes`] (default) an ACK's
/// credit `n` (acknowledged segments, or the slow-start leftover) is the number of times
/// the cubic step is taken against the window before the ACK, as Linux 6.18
/// `cubictcp_cong_avoid` passes `acked` to `tcp_cong_avoid_ai(tp, ca->cnt, acked)`; with
/// [`Counting::Acks`] the step is once per ACK (RFC 9438 read literally). In both modes
/// `segments_acked` for `W_est` is `acked_bytes / MSS`, fractional for a short segment (Section
/// 4.1.2), or the slow-start leftover when the ACK ended slow start (Bytes).
///
/// On a congestion event (Section 4.6-4.7): `cwnd_prior = cwnd`; `W_max = cwnd`, or `cwnd (1 + beta)/2` when `cwnd < W_max` (fast convergence);
/// `ssthresh = max(beta cwnd, 2)`, `cwnd = ssthresh`; the epoch restarts. On a retransmission
/// timeout (Section 4.8) the same, then `cwnd = 1`, and the first CA stage after it uses
/// `K = 0` and `W_max = W_est = cwnd_epoch` (Linux gets the same by zeroing its W_max in
/// `bictcp_reset` on `TCP_CA_Loss`). If an epoch starts at or above `W_max` (no loss yet, or
/// the window already grew past it), `K = 0` and the curve is centred on `cwnd_epoch`, as
/// Linux does (and as Section 4.10 prescribes when slow start ends without a loss). `RTT` is
/// the smoothed RTT (0 before the first sample). No HyStart: slow start is Linux's plain
/// `tcp_slow_start`. `C = 0.4`, `beta = 0.7`.
#[derive(Debug, Clone)]
pub struct Cubic {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    state: Vec<CubicState>,
}

impl Cubic {
    pub fn new(n_subflows: usize) -> Self {
        Cubic {
            counting: Counting::Bytes,
            state: vec![CubicState::default(); n_subflows],
        }
    }

    /// W_max of subflow `i` (0 before its first congestion event; after a timeout, the window
    /// at the start of the next congestion-avoidance stage once that stage has begun).
    pub fn w_max(&self, i: usize) -> f64 {
        self.state[i].w_max
    }

    /// K of subflow `i`'s current epoch (seconds), if an epoch is running.
    pub fn k(&self, i: usize) -> Option<f64> {
        let e = self.state[i].epoch;
        e.start.map(|_| e.k)
    }
}

pub(crate) fn build(
    _params: &Params,
    n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Cubic {
        counting,
        ..Cubic::new(n)
    }))
}

impl Controller for Cubic {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        let sf = &mut subflows[i];
        let credit = ca_credit(sf, ack, self.counting);
        if credit == 0 {
            return;
        }
        let st = &mut self.state[i];
        let cwnd = sf.cwnd;
        let start = match st.epoch.start {
            Some(s) => s,
            None => {
                let (k, origin) = if st.after_timeout {
                    st.after_timeout = false;
                    st.w_max = cwnd;
                    (0.0, cwnd)
                } else if cwnd < st.w_max {
                    (((st.w_max - cwnd) / CUBIC_C).cbrt(), st.w_max)
                } else {
                    (0.0, cwnd)
                };
                st.epoch = Epoch {
                    start: Some(ack.now),
                    k,
                    origin,
                    w_est: cwnd,
                };
                ack.now
            }
        };
        let e = &mut st.epoch;
        let t = secs(ack.now.saturating_sub(start));
        let rtt = secs(sf.srtt);
        let w_cubic = |t: f64| CUBIC_C * (t - e.k).powi(3) + e.origin;
        let alpha = if e.w_est >= st.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        let acked = ack.acked_bytes as f64 / f64::from(sf.mss.max(1));
        let (segments_acked, steps) = match self.counting {
            // The credit counts a short segment as one (Linux counts packets); W_est keeps
            // RFC 9438's fraction, and only the leftover of an ACK that ended slow start.
            Counting::Bytes => (acked.min(f64::from(credit)), f64::from(credit)),
            Counting::Acks => (acked, 1.0),
        };
        e.w_est += alpha * segments_acked / cwnd;
        if w_cubic(t) < e.w_est {
            sf.cwnd = e.w_est.max(cwnd);
        } else {
            let target = w_cubic(t + rtt).max(cwnd).min(1.5 * cwnd);
            sf.cwnd = cwnd + steps * (target - cwnd) / cwnd;
        }
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        let sf = &mut subflows[i];
        let st = &mut self.state[i];
        st.cwnd_prior = sf.cwnd;
        st.w_max = if sf.cwnd < st.w_max {
            sf.cwnd * (1.0 + CUBIC_BETA) / 2.0
        } else {
            sf.cwnd
        };
        st.after_timeout = false;
        st.epoch = Epoch::default();
        set_ssthresh(sf, sf.cwnd * CUBIC_BETA, MIN_SSTHRESH);
    }

    fn on_rto(&mut self, subflows: &mut [Subflow], i: usize, now: Nanos) {
        // Section 4.8: ssthresh as on a loss, cwnd as Reno's timeout, and the next CA stage
        // re-centred on its own starting window.
        self.on_congestion_event(subflows, i, now);
        self.state[i].after_timeout = true;
        subflows[i].cwnd = MIN_CWND;
    }
}

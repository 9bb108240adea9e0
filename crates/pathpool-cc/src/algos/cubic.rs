//! `cubic`: CUBIC (RFC 9438), uncoupled on every subflow.

use super::common::{secs, set_ssthresh, slow_start_or_ca};
use crate::controller::{Ack, Controller, Nanos, Subflow, MIN_SSTHRESH};
use crate::registry::{AlgorithmInfo, CcError, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "cubic",
    summary: "CUBIC on every subflow, uncoupled (what upstream Linux MPTCP runs by default)",
    source: "RFC 9438 Section 4 (eq. 1 W_cubic, eq. 2 K, eq. 4 W_est, Sections 4.6-4.7)",
    formula: "W_cubic(t) = C (t - K)^3 + W_max, K = cbrt((W_max - cwnd_epoch)/C), C = 0.4; per ACK in CA: \
              target = clamp(W_cubic(t + RTT), cwnd, 1.5 cwnd), cwnd += (target - cwnd)/cwnd, or \
              cwnd = W_est in the Reno-friendly region (W_est += alpha_cubic * acked/cwnd, alpha_cubic = \
              3(1-beta)/(1+beta) until W_est >= W_max, then 1); per loss: W_max = cwnd (fast \
              convergence: cwnd (1+beta)/2 if cwnd < previous W_max), ssthresh = max(beta cwnd, 2), beta = 0.7",
    params: &[],
    coupled: false,
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
    /// W_max: window just before the last reduction (0 before any loss).
    w_max: f64,
    epoch: Epoch,
}

/// CUBIC per RFC 9438, run independently on every subflow.
///
/// Congestion avoidance, per ACK (RFC 9438 Section 4.2-4.4), time `t` from the start of the
/// epoch (the first CA ACK after a congestion event):
///
/// ```text
/// W_cubic(t) = C (t - K)^3 + W_max,   K = cbrt((W_max - cwnd_epoch) / C)       (eq. 1, 2)
/// target     = min(max(W_cubic(t + RTT), cwnd), 1.5 cwnd)
/// W_est     += alpha_cubic * segments_acked / cwnd,  alpha_cubic = 3 (1 - beta)/(1 + beta)  (eq. 4)
///              (alpha_cubic = 1 once W_est >= W_max, Section 4.3)
/// if W_cubic(t) < W_est: cwnd = W_est   (Reno-friendly region)
/// else:                  cwnd += (target - cwnd) / cwnd
/// ```
///
/// On a congestion event (Section 4.6-4.7): `W_max = cwnd`, or `cwnd (1 + beta)/2` when
/// `cwnd < W_max` (fast convergence); `ssthresh = max(beta cwnd, 2)`, `cwnd = ssthresh`; the
/// epoch restarts. If the epoch starts above `W_max` (no loss yet, or the window already grew
/// past it), `K = 0` and the curve is centred on `cwnd_epoch`, as Linux does. `RTT` is the
/// smoothed RTT (0 before the first sample). No HyStart: slow start is Linux's plain
/// `tcp_slow_start`. `C = 0.4`, `beta = 0.7`.
#[derive(Debug, Clone)]
pub struct Cubic {
    state: Vec<CubicState>,
}

impl Cubic {
    pub fn new(n_subflows: usize) -> Self {
        Cubic { state: vec![CubicState::default(); n_subflows] }
    }

    /// W_max of subflow `i` (0 before its first congestion event).
    pub fn w_max(&self, i: usize) -> f64 {
        self.state[i].w_max
    }

    /// K of subflow `i`'s current epoch (seconds), if an epoch is running.
    pub fn k(&self, i: usize) -> Option<f64> {
        let e = self.state[i].epoch;
        e.start.map(|_| e.k)
    }
}

pub(crate) fn build(_params: &Params, n: usize) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Cubic::new(n)))
}

impl Controller for Cubic {
    fn name(&self) -> &'static str {
        INFO.name
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        let sf = &mut subflows[i];
        if !slow_start_or_ca(sf, ack) {
            return;
        }
        let st = &mut self.state[i];
        let cwnd = sf.cwnd;
        let start = match st.epoch.start {
            Some(s) => s,
            None => {
                let (k, origin) = if cwnd < st.w_max {
                    (((st.w_max - cwnd) / CUBIC_C).cbrt(), st.w_max)
                } else {
                    (0.0, cwnd)
                };
                st.epoch = Epoch { start: Some(ack.now), k, origin, w_est: cwnd };
                ack.now
            }
        };
        let e = &mut st.epoch;
        let t = secs(ack.now.saturating_sub(start));
        let rtt = secs(sf.srtt);
        let w_cubic = |t: f64| CUBIC_C * (t - e.k).powi(3) + e.origin;
        let alpha = if e.w_est >= st.w_max {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        e.w_est += alpha * f64::from(ack.acked_segments(sf.mss)) / cwnd;
        if w_cubic(t) < e.w_est {
            sf.cwnd = e.w_est.max(cwnd);
        } else {
            let target = w_cubic(t + rtt).max(cwnd).min(1.5 * cwnd);
            sf.cwnd = cwnd + (target - cwnd) / cwnd;
        }
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        let sf = &mut subflows[i];
        let st = &mut self.state[i];
        st.w_max = if sf.cwnd < st.w_max { sf.cwnd * (1.0 + CUBIC_BETA) / 2.0 } else { sf.cwnd };
        st.epoch = Epoch::default();
        set_ssthresh(sf, sf.cwnd * CUBIC_BETA, MIN_SSTHRESH);
    }
}

//! `lia`: the Linked Increases Algorithm of RFC 6356 (Raiciu, Handley & Wischik 2011, Section 3;
//! the RFC numbers no equations), with alpha kept on the connection the way the out-of-tree
//! Linux MPTCP v0.95 (`mptcp_coupled.c`) keeps it.

use super::common::{active_count, add_credited, alpha_ratio, ca_credit, halve};
use crate::controller::{
    Ack, Controller, Counting, Nanos, Subflow, WindowRules, MIN_CWND, MIN_SSTHRESH,
};
use crate::registry::{flag, AlgorithmInfo, CcError, ParamInfo, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "lia",
    summary: "Linked Increases Algorithm (MPTCP's standard coupled congestion control)",
    source: "Raiciu, Handley & Wischik 2011 (RFC 6356), Section 3 (alpha: the unnumbered equation \
             of Section 3, increase min(alpha/w_total, 1/w_r)); Linux MPTCP v0.95 mptcp_coupled.c \
             for when alpha is recomputed",
    formula: "alpha = w_total * max_i(w_i/rtt_i^2) / (sum_i w_i/rtt_i)^2; per segment acked on r: \
              w_r += min(alpha/w_total, 1/w_r); per loss: ssthresh = max(w_r/2, 2), w_r = ssthresh",
    params: &[ParamInfo {
        name: "alpha_every_ack",
        default: "false",
        allowed: "true or false",
        doc:
            "recompute alpha on every ACK instead of only when Linux v0.95 does (slow-start ACKs, \
              integer window increments, RTOs, first CA ACK after a state change)",
    }],
    coupled: true,
    build,
};

/// RFC 6356 LIA (Raiciu, Handley & Wischik 2011).
///
/// RFC 6356 Section 3 (its equations are unnumbered), in segments:
///
/// ```text
/// alpha   = w_total * max_i(w_i / rtt_i^2) / (sum_i w_i / rtt_i)^2
/// per segment acked on r (congestion avoidance):  w_r += min(alpha / w_total, 1 / w_r)
/// per loss on r:                                   ssthresh_r = max(w_r / 2, 2), w_r = ssthresh_r
/// ```
///
/// The RFC states the increase per ACK in bytes, `min(alpha * bytes_acked * MSS_r / tot_cwnd,
/// bytes_acked * MSS_r / cwnd_r)`: with windows in segments that is the line above times the
/// segments acknowledged ([`Counting::Bytes`], the default: an ACK of `n` segments adds `n`
/// times the increment computed before it, as Linux's `tcp_cong_avoid_ai(tp, w, acked)` credits
/// `acked` against one threshold; the slow-start leftover goes on into this step). v0.95
/// `mptcp_ccc_cong_avoid` instead counts `snd_cwnd_cnt++` once per ACK against the threshold
/// `max(w_total/alpha, w_r)` ([`Counting::Acks`]; a slow-start ACK ends after slow start).
///
/// **When alpha is computed (Linux MPTCP v0.95).** The kernel keeps alpha on the connection and
/// recomputes it only (a) on every slow-start ACK, after the slow-start growth, (b) whenever a
/// congestion-avoidance step raises the integer window (`snd_cwnd++`), (c) on every RTO
/// (`CA_EVENT_LOSS`, before the window drops to 1), and (d) on the first congestion-avoidance
/// ACK after any congestion-state change (`set_state` sets `forced_update`): we raise that flag on
/// every loss event, RTO and recovery exit. In between, the increase uses the stored value. The
/// kernel stores `alpha / w_total` (its counter threshold is `max(w_total/alpha, w_r)`), so the
/// stored ratio carries the `w_total` of the moment of computation; we store it the same way.
/// With `alpha_every_ack = true` alpha is recomputed before every ACK's step instead (the RFC
/// read literally). With windows as real numbers, "the integer window grew" is
/// `floor(w_r)` increasing.
///
/// Sums run over the active subflows with an RTT sample (the kernel's `mptcp_ccc_sk_can_send`:
/// `srtt != 0`); if none has one, the increase falls back to Reno's `1/w_r`. With a single active
/// subflow the kernel takes Reno's step (`cnt_established <= 1`); so do we, at once, rather
/// than with a ratio stored while siblings were still active (the formula would give the same
/// `1/w_r` once recomputed).
#[derive(Debug, Clone)]
pub struct Lia {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    alpha_every_ack: bool,
    /// `max_i(w_i/rtt_i^2) / (sum_i w_i/rtt_i)^2` at the last computation = alpha / w_total.
    ratio: f64,
    /// RFC 6356 alpha at the last computation (for inspection).
    alpha: f64,
    /// Next CA ACK must recompute (never computed yet, or a state change happened).
    forced: bool,
    /// How many times alpha has been computed (for inspection and tests).
    recomputations: u64,
}

impl Lia {
    pub fn new(alpha_every_ack: bool) -> Self {
        Lia {
            counting: Counting::Bytes,
            alpha_every_ack,
            ratio: f64::INFINITY,
            alpha: 1.0,
            forced: true,
            recomputations: 0,
        }
    }

    /// RFC 6356 alpha as last computed.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// `alpha / w_total` as last computed (the per-ACK coupled increase before the cap).
    pub fn alpha_over_total(&self) -> f64 {
        self.ratio
    }

    /// Number of alpha computations so far.
    pub fn recomputations(&self) -> u64 {
        self.recomputations
    }

    /// Recomputes alpha from the current windows and RTTs (RFC 6356 Section 3).
    pub fn recompute(&mut self, subflows: &[Subflow], i: usize) {
        self.recomputations += 1;
        match alpha_ratio(subflows, i) {
            Some((ratio, total)) => {
                self.ratio = ratio;
                self.alpha = total * ratio;
            }
            None => {
                self.ratio = f64::INFINITY;
                self.alpha = 1.0;
            }
        }
    }
}

pub(crate) fn build(
    params: &Params,
    _n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    let every = flag(&INFO, params, "alpha_every_ack")?.unwrap_or(false);
    Ok(Box::new(Lia {
        counting,
        ..Lia::new(every)
    }))
}

impl Controller for Lia {
    fn name(&self) -> &'static str {
        INFO.name
    }

    /// RFC 6356's rule with alpha computed from this state (as `alpha_every_ack` does; v0.95
    /// recomputes it only at some moments, so on_ack may use an older alpha):
    /// `I_r = min(alpha/w_total, 1/w_r)` with more than one active subflow, `1/w_r` alone;
    /// `D_r = w_r/2`.
    fn window_rules(&self, subflows: &[Subflow], i: usize) -> Option<WindowRules> {
        let w = subflows[i].cwnd;
        let increase = match alpha_ratio(subflows, i) {
            Some((ratio, _)) if active_count(subflows, i) > 1 => ratio.min(1.0 / w),
            _ => 1.0 / w,
        };
        Some(WindowRules {
            increase,
            decrease: w / 2.0,
        })
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        let was_slow_start = subflows[i].in_slow_start();
        let n = ca_credit(&mut subflows[i], ack, self.counting);
        if ack.acked_bytes > 0 && was_slow_start {
            // v0.95 recomputes alpha after every slow-start growth.
            self.recompute(subflows, i);
        }
        if n == 0 {
            return;
        }
        if self.forced || self.alpha_every_ack {
            // v0.95 clears forced_update only here, not on slow-start recomputations.
            self.recompute(subflows, i);
            self.forced = false;
        }
        let w = subflows[i].cwnd;
        // A lone subflow is Reno at once (v0.95: `cnt_established > 1` guards the coupled
        // threshold); the stored ratio may date from when siblings were still open.
        let inc = if active_count(subflows, i) > 1 {
            self.ratio.min(1.0 / w)
        } else {
            1.0 / w
        };
        add_credited(&mut subflows[i], n, inc);
        if !self.alpha_every_ack && subflows[i].cwnd.floor() > w.floor() {
            self.recompute(subflows, i);
        }
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        halve(&mut subflows[i]);
        self.forced = true;
    }

    fn on_rto(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        // v0.95: tcp_enter_loss sets ssthresh, then CA_EVENT_LOSS recomputes alpha while the
        // window is still the pre-timeout one, then the window drops to 1.
        let sf = &mut subflows[i];
        sf.ssthresh = (sf.cwnd / 2.0).max(MIN_SSTHRESH);
        self.recompute(subflows, i);
        subflows[i].cwnd = MIN_CWND;
        self.forced = true;
    }

    fn on_recovery_exit(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        let sf = &mut subflows[i];
        sf.cwnd = sf.ssthresh.max(MIN_CWND);
        self.forced = true;
    }
}

//! `olia`: the Opportunistic Linked Increases Algorithm (Khalili, Gast, Popovic & Le Boudec,
//! IEEE/ACM ToN 2013, Section V; restated in Pokhrel & Williamson 2020, Table 1).

use super::common::{add_credited, ca_credit, halve, participates};
use crate::controller::{Ack, Controller, Counting, Nanos, Subflow, WindowRules};
use crate::registry::{AlgorithmInfo, CcError, Params};

pub(crate) const INFO: AlgorithmInfo = AlgorithmInfo {
    name: "olia",
    summary: "Opportunistic Linked Increases Algorithm (Pareto-optimal alternative to LIA)",
    source:
        "Khalili, Gast, Popovic & Le Boudec 2013, \"MPTCP is not Pareto-optimal: performance issues \
             and a possible solution\", IEEE/ACM ToN 21(5), Section V (OLIA); Pokhrel & Williamson \
             2020, Table 1; \
             draft-khalili-mptcp-congestion-control-05; Linux MPTCP v0.95 mptcp_olia.c",
    formula: "per segment acked on r: w_r += (w_r/rtt_r^2)/(sum_p w_p/rtt_p)^2 + alpha_r/w_r; \
              l_r = max(l1_r, l2_r); B = argmax l_r/rtt_r^2; M = argmax w_r; \
              alpha_r = 1/(n|B\\M|) if r in B\\M, -1/(n|M|) if r in M and B\\M nonempty, else 0; \
              per loss: ssthresh = max(w_r/2, 2), w_r = ssthresh",
    params: &[],
    coupled: true,
    build,
};

/// Inter-loss marks of one path (the kernel's `mptcp_loss1..3`): byte positions in the
/// subflow's delivered data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Marks {
    loss1: u64,
    loss2: u64,
    loss3: u64,
}

impl Marks {
    /// `l_r = max(l1_r, l2_r)`: l1 = bytes between the last two losses, l2 = bytes since the last.
    fn l(&self) -> u64 {
        (self.loss3 - self.loss2).max(self.loss2 - self.loss1)
    }
}

/// OLIA (Khalili et al., IEEE/ACM ToN 2013, Section V, "OLIA"; the same algorithm as
/// draft-khalili-mptcp-congestion-control-05 Section 3 and Linux MPTCP v0.95 `mptcp_olia.c`,
/// which the authors wrote).
///
/// Per acknowledged segment (per ACK under [`Counting::Acks`]) on path r in congestion avoidance:
///
/// ```text
/// w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2  +  alpha_r / w_r
/// ```
///
/// and per loss `w_r -= w_r/2` (`ssthresh = max(w_r/2, 2)`, Linux `tcp_reno_ssthresh`).
///
/// `alpha_r` moves window from the max-window paths to the best paths:
/// - `l1_r` = bytes acknowledged on r between its last two losses, `l2_r` = bytes acknowledged
///   since its last loss, `l_r = max(l1_r, l2_r)`. The marks advance on entry to recovery or
///   loss (a congestion event or an RTO), and only if bytes were acknowledged since the previous
///   mark (kernel: `loss3 != loss2`);
/// - `B` = the paths maximising `l_r / rtt_r^2` (ties included), `M` = the paths with the largest
///   window;
/// - if `B \ M` is empty every `alpha_r = 0`; otherwise `alpha_r = 1/(n |B\M|)` for r in `B\M`,
///   `-1/(n |M|)` for r in M, 0 for the rest, with n the number of paths.
///
/// Linux v0.95 details modelled: a path in recovery enters the sums and `M` with its `ssthresh`
/// instead of its (inflated) `cwnd`; in slow start none of this runs (Linux slow start only);
/// only active subflows with an RTT sample are counted (kernel `mptcp_olia_sk_can_send`), while
/// n is the number of active subflows (`cnt_established`). Windows are compared as the
/// kernel's integer windows (`floor(w)`) when forming `M`, and `l_r/rtt_r^2` is compared exactly
/// by cross-multiplication in integers as the kernel does. The byte position is
/// `Subflow::delivered * mss`, read on every `on_ack` as the kernel reads `snd_una` on every
/// `cong_avoid`: bytes acknowledged during recovery (when the transport makes no `on_ack`
/// call) therefore count in the interval after the loss, as in v0.95 and as the paper's "bytes
/// transmitted since the last loss" says.
///
/// If the ACKed subflow has no RTT sample yet it takes Reno's `1/w_r`.
#[derive(Debug, Clone)]
pub struct Olia {
    /// Per-ACK or per-segment congestion-avoidance steps ([`Counting`]).
    pub counting: Counting,
    marks: Vec<Marks>,
}

/// The window a path contributes to OLIA's sums and to M: `ssthresh` while in recovery.
fn crt_cwnd(sf: &Subflow) -> f64 {
    if sf.in_recovery && sf.ssthresh.is_finite() {
        sf.ssthresh
    } else {
        sf.cwnd
    }
}

impl Olia {
    pub fn new(n_subflows: usize) -> Self {
        Olia {
            counting: Counting::Bytes,
            marks: vec![Marks::default(); n_subflows],
        }
    }

    /// `(l1_r, l2_r)` in bytes for subflow `r`.
    pub fn inter_loss_bytes(&self, r: usize) -> (u64, u64) {
        let m = self.marks[r];
        (m.loss2 - m.loss1, m.loss3 - m.loss2)
    }

    fn counted(subflows: &[Subflow], k: usize, i: usize) -> bool {
        participates(subflows, k, i) && subflows[k].srtt > 0
    }

    /// Membership of every subflow in B (best paths) and M (max-window paths), as seen by an
    /// event on subflow `i`. Allocates; for inspection and tests, not the ACK path.
    pub fn sets(&self, subflows: &[Subflow], i: usize) -> (Vec<bool>, Vec<bool>) {
        let (best_l, best_rtt2, max_w) = self.extremes(subflows, i);
        let mut b = vec![false; subflows.len()];
        let mut m = vec![false; subflows.len()];
        for k in 0..subflows.len() {
            if Self::counted(subflows, k, i) {
                b[k] = self.is_best(subflows, k, best_l, best_rtt2);
                m[k] = crt_cwnd(&subflows[k]).floor() == max_w;
            }
        }
        (b, m)
    }

    /// Best `(l, rtt^2)` pair and the largest integer window among counted subflows.
    fn extremes(&self, subflows: &[Subflow], i: usize) -> (u64, u128, f64) {
        let mut best_l = 0u64;
        let mut best_rtt2 = 1u128;
        let mut max_w = f64::NEG_INFINITY;
        for (k, sf) in subflows.iter().enumerate() {
            if !Self::counted(subflows, k, i) {
                continue;
            }
            max_w = max_w.max(crt_cwnd(sf).floor());
            let l = self.marks[k].l();
            let rtt2 = u128::from(sf.srtt) * u128::from(sf.srtt);
            if u128::from(l) * best_rtt2 >= u128::from(best_l) * rtt2 {
                best_l = l;
                best_rtt2 = rtt2;
            }
        }
        (best_l, best_rtt2, max_w)
    }

    fn is_best(&self, subflows: &[Subflow], k: usize, best_l: u64, best_rtt2: u128) -> bool {
        let rtt2 = u128::from(subflows[k].srtt) * u128::from(subflows[k].srtt);
        u128::from(self.marks[k].l()) * best_rtt2 == u128::from(best_l) * rtt2
    }

    /// OLIA's `alpha_r` for subflow `r` (Khalili et al., Section V).
    pub fn alpha(&self, subflows: &[Subflow], r: usize) -> f64 {
        if !Self::counted(subflows, r, r) {
            return 0.0;
        }
        let (best_l, best_rtt2, max_w) = self.extremes(subflows, r);
        let n = (0..subflows.len())
            .filter(|&k| participates(subflows, k, r))
            .count() as f64;
        let (mut n_m, mut n_b_not_m) = (0usize, 0usize);
        for k in 0..subflows.len() {
            if !Self::counted(subflows, k, r) {
                continue;
            }
            if crt_cwnd(&subflows[k]).floor() == max_w {
                n_m += 1;
            } else if self.is_best(subflows, k, best_l, best_rtt2) {
                n_b_not_m += 1;
            }
        }
        if n_b_not_m == 0 {
            return 0.0;
        }
        if crt_cwnd(&subflows[r]).floor() == max_w {
            -1.0 / (n * n_m as f64)
        } else if self.is_best(subflows, r, best_l, best_rtt2) {
            1.0 / (n * n_b_not_m as f64)
        } else {
            0.0
        }
    }

    /// The congestion-avoidance increase for one ACK on subflow `r`.
    pub fn increase(&self, subflows: &[Subflow], r: usize) -> f64 {
        let sf = &subflows[r];
        let Some(t_r) = sf.srtt_secs() else {
            return 1.0 / sf.cwnd;
        };
        let mut sum = 0.0;
        for (k, other) in subflows.iter().enumerate() {
            if Self::counted(subflows, k, r) {
                sum += crt_cwnd(other) / other.srtt_secs().unwrap_or(f64::INFINITY);
            }
        }
        (sf.cwnd / (t_r * t_r)) / (sum * sum) + self.alpha(subflows, r) / sf.cwnd
    }

    fn advance_marks(&mut self, i: usize) {
        let m = &mut self.marks[i];
        if m.loss3 != m.loss2 {
            m.loss1 = m.loss2;
            m.loss2 = m.loss3;
        }
    }
}

pub(crate) fn build(
    _params: &Params,
    n: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    Ok(Box::new(Olia {
        counting,
        ..Olia::new(n)
    }))
}

impl Controller for Olia {
    fn name(&self) -> &'static str {
        INFO.name
    }

    /// `I_r` from the loss history the marks hold (see [`Olia::increase`]), `D_r = w_r/2`.
    fn window_rules(&self, subflows: &[Subflow], i: usize) -> Option<WindowRules> {
        Some(WindowRules {
            increase: self.increase(subflows, i),
            decrease: subflows[i].cwnd / 2.0,
        })
    }

    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack) {
        // The kernel moves loss3 to snd_una on every ACK it sees, slow start included.
        let sf = &subflows[i];
        let position = sf.delivered.saturating_mul(u64::from(sf.mss));
        self.marks[i].loss3 = self.marks[i].loss3.max(position);
        let n = ca_credit(&mut subflows[i], ack, self.counting);
        if n == 0 {
            return;
        }
        let inc = self.increase(subflows, i);
        add_credited(&mut subflows[i], n, inc);
    }

    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        self.advance_marks(i);
        halve(&mut subflows[i]);
    }
}

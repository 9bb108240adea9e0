//! `pathpool._core.window_rules`: one pathpool-cc controller's per-segment increase and per-loss
//! decrease ([`Controller::window_rules`]) on every subflow of a state. The fluid model of
//! `pathpool.analysis` takes its rules from here (Peng et al. 2016, eq. 7 turns them into `k_r`,
//! `phi_r`), so it has no copy of its own and every registry algorithm with rules has one.
//!
//! The state is congestion avoidance (`ssthresh` below every window), every subflow active,
//! smoothed RTTs as given (rounded to whole nanoseconds, the controller's unit).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pathpool_cc::{build, Ack, Controller, ParamValue, Params, Subflow, NANOS_PER_SEC};

use crate::{guarded, simulation_error};

/// Bytes per segment of the replayed loss history (the simulator's default MSS).
const HISTORY_MSS: f64 = 1448.0;
/// Longest loss interval accepted (segments); a loss-free route passes this.
const MAX_INTERVAL: f64 = 1e12;

/// Per-segment window increases and per-loss window decreases (segments, before floors) of
/// every subflow.
///
/// `window_rules(name, params, cwnd, srtt_s, loss_interval=None)` builds algorithm `name`
/// (registry name; `params` a dict of numbers, booleans or strings, as in a scenario) for
/// `len(cwnd)` subflows whose windows are `cwnd` (segments) and smoothed RTTs `srtt_s`
/// (seconds), all in congestion avoidance, and returns `(increases, decreases)`.
///
/// `loss_interval` (segments per subflow, 0 < L <= 1e12) gives the controller a loss history
/// first: on each subflow `k`, `L_k` segments delivered (positions to the byte, 1448-byte
/// segments) and then one loss event, on a scratch copy of the state; the rules are then read
/// on the state itself. Only algorithms that keep a loss history (OLIA's `l_r`) depend on it;
/// without it they see a fresh connection.
///
/// Raises `SimulationError` for an unknown algorithm or parameter, an algorithm without
/// per-state rules (CUBIC, RSF) or a bad state.
#[pyfunction]
#[pyo3(signature = (name, params, cwnd, srtt_s, loss_interval=None))]
pub fn window_rules(
    py: Python<'_>,
    name: &str,
    params: &Bound<'_, PyDict>,
    cwnd: Vec<f64>,
    srtt_s: Vec<f64>,
    loss_interval: Option<Vec<f64>>,
) -> PyResult<(Vec<f64>, Vec<f64>)> {
    let mut p = Params::new();
    for (k, v) in params.iter() {
        let key: String = k.extract()?;
        let value = if let Ok(b) = v.extract::<bool>() {
            ParamValue::Bool(b)
        } else if let Ok(x) = v.extract::<f64>() {
            ParamValue::Number(x)
        } else {
            ParamValue::Text(v.extract::<String>()?)
        };
        p.insert(key, value);
    }
    let n = cwnd.len();
    let valid_windows = cwnd.iter().all(|w| w.is_finite() && *w > 0.0);
    let valid_rtts = srtt_s.iter().all(|t| t.is_finite() && *t > 0.0 && *t < 1e6);
    let valid_history = match &loss_interval {
        None => true,
        Some(l) => {
            l.len() == n
                && l.iter()
                    .all(|x| x.is_finite() && *x > 0.0 && *x <= MAX_INTERVAL)
        }
    };
    if n == 0 || srtt_s.len() != n || !valid_windows || !valid_rtts || !valid_history {
        return Err(simulation_error(
            py,
            format!(
                "window_rules: need non-empty cwnd (> 0 segments), srtt_s (0 < s < 1e6) and \
                 loss_interval (0 < L <= 1e12 segments, optional) lists of equal length; got \
                 {n} windows, {} RTTs, {} loss intervals",
                srtt_s.len(),
                loss_interval.as_ref().map_or(0, Vec::len)
            ),
        ));
    }
    let name = name.to_string();
    let out = guarded(py, move || -> Result<(Vec<f64>, Vec<f64>), String> {
        let state: Vec<Subflow> = cwnd
            .iter()
            .zip(&srtt_s)
            .map(|(&w, &t)| {
                let rtt = (t * NANOS_PER_SEC).round().max(1.0) as u64;
                Subflow {
                    cwnd: w,
                    ssthresh: w.min(1.0), // at or below the window: congestion avoidance
                    srtt: rtt,
                    min_rtt: rtt,
                    latest_rtt: rtt,
                    in_flight: w as u32,
                    ..Subflow::new(1448)
                }
            })
            .collect();
        let mut cc = build(&name, &p, n).map_err(|e| e.to_string())?;
        if let Some(intervals) = &loss_interval {
            replay_losses(cc.as_mut(), &state, intervals);
        }
        let mut inc = Vec::with_capacity(n);
        let mut dec = Vec::with_capacity(n);
        for i in 0..n {
            let r = cc.window_rules(&state, i).ok_or_else(|| {
                format!(
                    "window_rules: algorithm {name:?} has no per-state window rules (its steps \
                     depend on time or estimates), so no fluid model"
                )
            })?;
            inc.push(r.increase);
            dec.push(r.decrease);
        }
        Ok((inc, dec))
    })?;
    out.map_err(|e| simulation_error(py, e))
}

/// On a scratch copy of `state`: subflow `k` delivers `intervals[k]` segments (counted in
/// bytes, as one-byte segments, so the position is exact to the byte) and has one loss event.
fn replay_losses(cc: &mut dyn Controller, state: &[Subflow], intervals: &[f64]) {
    let now = 1_000_000_000;
    let mut scratch = state.to_vec();
    for (k, &l) in intervals.iter().enumerate() {
        scratch[k].mss = 1;
        scratch[k].delivered = (l * HISTORY_MSS).round() as u64;
        let nothing_new = Ack {
            acked_bytes: 0,
            rtt_sample: None,
            one_way_delay: None,
            now,
        };
        cc.on_ack(&mut scratch, k, &nothing_new);
        cc.on_congestion_event(&mut scratch, k, now);
    }
}

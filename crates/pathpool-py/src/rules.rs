//! `pathpool._core.window_rules`: one pathpool-cc controller's per-ACK increase and per-loss
//! decrease at a given state, so that the fluid model of `pathpool.analysis` can be checked
//! against the algorithms the simulator runs (seed 004, eq. 7 turns the two into `k_r`, `phi_r`).
//!
//! The state is congestion avoidance (`ssthresh` below every window), every subflow active and
//! cwnd-limited, smoothed RTTs as given; nothing else of a transport is involved.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pathpool_cc::{build, Ack, ParamValue, Params, Subflow, NANOS_PER_SEC};

use crate::{guarded, simulation_error};

/// Per-ACK window increase and per-loss window decrease (segments) of subflow `i`.
///
/// `window_rules(name, params, cwnd, srtt_s, i)` builds algorithm `name` (registry name;
/// `params` a dict of numbers, booleans or strings, as in a scenario) for `len(cwnd)` subflows
/// whose windows are `cwnd` (segments) and smoothed RTTs `srtt_s` (seconds), all in congestion
/// avoidance; returns `(increase, decrease)`: the change of `cwnd[i]` after one newly
/// acknowledged segment, and `cwnd[i] - ssthresh[i]` after one congestion event on a fresh copy
/// of the same state (the window Linux deflates to when recovery ends).
///
/// Raises `SimulationError` for an unknown algorithm or parameter, or a bad state.
#[pyfunction]
#[pyo3(signature = (name, params, cwnd, srtt_s, i))]
pub fn window_rules(
    py: Python<'_>,
    name: &str,
    params: &Bound<'_, PyDict>,
    cwnd: Vec<f64>,
    srtt_s: Vec<f64>,
    i: usize,
) -> PyResult<(f64, f64)> {
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
    let valid_windows = cwnd.iter().all(|w| w.is_finite() && *w >= 2.0);
    let valid_rtts = srtt_s.iter().all(|t| t.is_finite() && *t > 0.0 && *t < 1e6);
    if n == 0 || srtt_s.len() != n || i >= n || !valid_windows || !valid_rtts {
        return Err(simulation_error(
            py,
            format!(
                "window_rules: need equal, non-empty cwnd (>= 2 segments) and srtt_s (0 < s < 1e6) \
                 lists and 0 <= i < len; got {n} windows, {} RTTs, i = {i}",
                srtt_s.len()
            ),
        ));
    }
    let name = name.to_string();
    let out = guarded(py, move || -> Result<(f64, f64), String> {
        let state: Vec<Subflow> = cwnd
            .iter()
            .zip(&srtt_s)
            .map(|(&w, &t)| {
                let rtt = (t * NANOS_PER_SEC).round() as u64;
                Subflow {
                    cwnd: w,
                    ssthresh: 1.0, // below every window: congestion avoidance
                    srtt: rtt,
                    min_rtt: rtt,
                    latest_rtt: rtt,
                    in_flight: w as u32,
                    ..Subflow::new(1448)
                }
            })
            .collect();
        let now = 1_000_000_000;
        let mut acked = state.clone();
        let mut cc = build(&name, &p, n).map_err(|e| e.to_string())?;
        let ack = Ack {
            acked_bytes: u64::from(acked[i].mss),
            rtt_sample: Some(acked[i].srtt),
            one_way_delay: None,
            now,
        };
        cc.on_ack(&mut acked, i, &ack);
        let increase = acked[i].cwnd - state[i].cwnd;
        let mut lost = state.clone();
        let mut cc = build(&name, &p, n).map_err(|e| e.to_string())?;
        cc.on_congestion_event(&mut lost, i, now);
        let decrease = state[i].cwnd - lost[i].ssthresh;
        Ok((increase, decrease))
    })?;
    out.map_err(|e| simulation_error(py, e))
}

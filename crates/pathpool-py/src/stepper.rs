//! `pathpool._core.Simulation`: one (scenario, seed) run advanced step by step from Python, so
//! that a controller written in Python (`pathpool.ratecontrol`) can drive the simulator's
//! rate-based flows (`kind = "rate"`): run to a time, read the receiver feedback that reached the
//! sender, set new rates, run on, and finally take the same tables `run_scenario` returns.
//!
//! Every call goes through `guarded` (GIL released, panics caught): a Rust panic becomes a
//! `SimulationError` and leaves the object unusable (its state may be half-updated) rather than
//! taking the interpreter down. Bad arguments (unknown flow, wrong number of rates, a time that
//! is not finite) raise `SimulationError` naming the flow, the argument and what is allowed.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use pathpool_sim::Simulation as Sim;

use crate::{guarded, output_dict, parse, simulation_error};

/// A simulation that can be advanced step by step.
///
/// ``Simulation(text, origin, seed)`` builds the world of a scenario (TOML text; ``origin``
/// names it in errors). ``run_until(t_s)`` processes every event up to ``t_s`` seconds;
/// ``rate_feedback(flow)`` returns what the receiver's reports brought the sender since the
/// previous call; ``set_rates(flow, rates, source_per_block)`` changes a rate flow's per-path
/// rates (packets/s) now and its FEC source packets per block from the next block;
/// ``finish()`` runs to the end and returns the tables (as ``run_scenario``).
#[pyclass(module = "pathpool._core", name = "Simulation")]
pub struct Simulation {
    /// `None` once finished or broken. The mutex only makes the class `Sync` for PyO3 (the
    /// simulator's controllers are `Send`, not `Sync`); `&mut self` already excludes sharing.
    sim: Mutex<Option<Sim>>,
    origin: String,
    broken: bool,
}

impl Simulation {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Sim>> {
        self.sim.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&mut self, py: Python<'_>) -> PyResult<Sim> {
        let taken = self.slot().take();
        match taken {
            Some(s) => Ok(s),
            None if self.broken => Err(simulation_error(
                py,
                format!(
                    "{}: the simulation failed in an earlier call and cannot continue",
                    self.origin
                ),
            )),
            None => Err(simulation_error(
                py,
                format!("{}: the simulation has finished", self.origin),
            )),
        }
    }

    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(&Sim) -> T) -> PyResult<T> {
        match &*self.slot() {
            Some(s) => Ok(f(s)),
            None => Err(simulation_error(
                py,
                format!("{}: the simulation has finished or failed", self.origin),
            )),
        }
    }

    /// Run `f` on the simulation with the GIL released and panics caught; a panic leaves the
    /// object broken.
    fn step<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut Sim) -> T + Send,
    ) -> PyResult<T> {
        let mut sim = self.take(py)?;
        match guarded(py, move || {
            let v = f(&mut sim);
            (sim, v)
        }) {
            Ok((sim, v)) => {
                *self.slot() = Some(sim);
                Ok(v)
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }
}

fn nanos(py: Python<'_>, t_s: f64, what: &str) -> PyResult<u64> {
    if !(t_s.is_finite() && t_s >= 0.0) {
        return Err(simulation_error(
            py,
            format!("{what} = {t_s}: must be a finite time >= 0 (seconds)"),
        ));
    }
    Ok((t_s * 1e9).round().min(u64::MAX as f64) as u64)
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (text, origin, seed))]
    fn new(py: Python<'_>, text: &str, origin: &str, seed: u64) -> PyResult<Self> {
        let sc = parse(py, text, origin)?;
        match guarded(py, move || Sim::new(&sc, seed))? {
            Ok(sim) => Ok(Simulation {
                sim: Mutex::new(Some(sim)),
                origin: origin.to_string(),
                broken: false,
            }),
            Err(e) => Err(simulation_error(py, format!("{origin}: {e}"))),
        }
    }

    /// Current simulated time, seconds.
    #[getter]
    fn now_s(&self, py: Python<'_>) -> PyResult<f64> {
        self.with(py, |s| s.now() as f64 / 1e9)
    }

    /// End of the run (the scenario's duration), seconds.
    #[getter]
    fn end_s(&self, py: Python<'_>) -> PyResult<f64> {
        self.with(py, |s| s.end() as f64 / 1e9)
    }

    /// Names of the scenario's rate flows.
    fn rate_flows(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.with(py, |s| s.rate_flows())
    }

    /// Process every event at or before ``t_s`` seconds (at most the end of the run).
    fn run_until(&mut self, py: Python<'_>, t_s: f64) -> PyResult<()> {
        let t = nanos(py, t_s, "run_until t_s")?;
        self.step(py, move |s| s.run_until(t))
    }

    /// Static facts about rate flow ``flow``: paths, start_s, feedback_interval_s, deadline_s,
    /// block_length, source_per_block, rates, controller, report_delay_s, payload_bytes.
    fn rate_info<'py>(&self, py: Python<'py>, flow: &str) -> PyResult<Bound<'py, PyDict>> {
        let info = self
            .with(py, |s| s.rate_info(flow))?
            .map_err(|e| simulation_error(py, e.to_string()))?;
        let d = PyDict::new(py);
        d.set_item("paths", info.paths)?;
        d.set_item("start_s", info.start_s)?;
        d.set_item("feedback_interval_s", info.feedback_interval_s)?;
        d.set_item("deadline_s", info.deadline_s)?;
        d.set_item("block_length", info.block_length)?;
        d.set_item("source_per_block", info.source_per_block)?;
        d.set_item("rates", info.rates)?;
        d.set_item("controller", info.controller)?;
        d.set_item("report_delay_s", info.report_delay_s)?;
        d.set_item("payload_bytes", info.payload_bytes)?;
        Ok(d)
    }

    /// Feedback that reached ``flow``'s sender since the previous call.
    ///
    /// Per-path lists (as ``pathpool.ratecontrol.stream.Feedback``): sent, lost, arrived, late,
    /// rtt_sum, rtt_sq_sum, delay_sum, delay_sq_sum, plus loss_events (TFRC, RFC 5348 5.2);
    /// and decoded_source (in-time decoded
    /// source packets), reports (how many reports arrived), report_made_s (when the newest was
    /// made; NaN if none yet), sender_sent (the sender's own per-path counts), source_sent.
    fn rate_feedback<'py>(&mut self, py: Python<'py>, flow: &str) -> PyResult<Bound<'py, PyDict>> {
        let name = flow.to_string();
        let fb = self
            .step(py, move |s| s.rate_feedback(&name))?
            .map_err(|e| simulation_error(py, e.to_string()))?;
        let d = PyDict::new(py);
        let col = |f: fn(&pathpool_sim::PathCounters) -> f64| {
            fb.paths.iter().map(f).collect::<Vec<f64>>()
        };
        d.set_item("sent", col(|c| c.sent as f64))?;
        d.set_item("lost", col(|c| c.lost as f64))?;
        d.set_item("loss_events", col(|c| c.loss_events as f64))?;
        d.set_item("arrived", col(|c| c.arrived as f64))?;
        d.set_item("late", col(|c| c.late as f64))?;
        d.set_item("rtt_sum", col(|c| c.rtt_sum))?;
        d.set_item("rtt_sq_sum", col(|c| c.rtt_sq_sum))?;
        d.set_item("delay_sum", col(|c| c.delay_sum))?;
        d.set_item("delay_sq_sum", col(|c| c.delay_sq_sum))?;
        d.set_item("decoded_source", fb.decoded_source)?;
        d.set_item("reports", fb.reports)?;
        d.set_item("report_made_s", fb.report_made_s)?;
        d.set_item("sender_sent", fb.sender_sent.clone())?;
        d.set_item("source_sent", fb.source_sent)?;
        Ok(d)
    }

    /// Set ``flow``'s per-path rates (packets/s, finite, >= 0) from now on and its source
    /// packets per FEC block (1..=block_length) from the next block on.
    fn set_rates(
        &mut self,
        py: Python<'_>,
        flow: &str,
        rates: Vec<f64>,
        source_per_block: u32,
    ) -> PyResult<()> {
        let name = flow.to_string();
        self.step(py, move |s| s.set_rates(&name, &rates, source_per_block))?
            .map_err(|e| simulation_error(py, e.to_string()))
    }

    /// Run to the end and return the run's tables (the dict ``run_scenario`` returns). The
    /// object cannot be used afterwards.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sim = self.take(py)?;
        match guarded(py, move || sim.finish()) {
            Ok(out) => output_dict(py, &out),
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }
}

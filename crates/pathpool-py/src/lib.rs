//! `pathpool._core`: the compiled half of the Python package.
//!
//! Three entry points, all thin: the algorithm catalogue, scenario validation and one
//! (scenario, seed) run. Results cross the boundary as plain columns (dict of column name ->
//! list) in the order of the fields of `pathpool_sim::output`; the Python side owns dtypes,
//! DataFrames and files.
//!
//! Errors: a scenario problem raises `pathpool.errors.ScenarioError` (file, line, column, field,
//! allowed values), anything else in the simulator raises `pathpool.errors.SimulationError`.
//! A Rust panic is caught at this boundary and becomes a `SimulationError` as well, so a bug
//! in the simulator can never take the Python interpreter down with it.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use pathpool_sim::output::{FlowRecord, LinkRecord, RunOutput, RunStats, Series, SubflowRecord};
use pathpool_sim::{ConfigError, Scenario};

mod rules;
mod stepper;

/// The Python exception classes live in `pathpool.errors` (so they have docstrings, pickle
/// across processes and can be caught without importing `_core`); we look them up lazily.
fn python_error<'py>(py: Python<'py>, class: &str, args: impl IntoPyObject<'py>) -> PyErr {
    let made = py
        .import("pathpool.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((args,)));
    match made {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

fn scenario_error(py: Python<'_>, e: &ConfigError) -> PyErr {
    let args = PyDict::new(py);
    let filled = (|| -> PyResult<()> {
        args.set_item("text", e.to_string())?;
        args.set_item("origin", &e.origin)?;
        args.set_item("line", e.line)?;
        args.set_item("column", e.column)?;
        args.set_item("field", &e.field)?;
        args.set_item("message", &e.message)?;
        args.set_item("allowed", e.allowed.clone())?;
        Ok(())
    })();
    if let Err(err) = filled {
        return err;
    }
    python_error(py, "_scenario_error_from_dict", args)
}

fn simulation_error(py: Python<'_>, message: String) -> PyErr {
    python_error(py, "SimulationError", message)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

/// Run `f` without the GIL and with panics caught: the one door every simulation goes through.
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> PyResult<T> {
    match py.allow_threads(move || catch_unwind(AssertUnwindSafe(f))) {
        Ok(v) => Ok(v),
        Err(payload) => Err(simulation_error(
            py,
            format!(
                "internal error (Rust panic) in the simulator: {}",
                panic_message(&*payload)
            ),
        )),
    }
}

#[allow(clippy::result_large_err)] // ConfigError is the simulator's; it only crosses here
fn parse(py: Python<'_>, text: &str, origin: &str) -> PyResult<Scenario> {
    let owned_text = text.to_string();
    let owned_origin = origin.to_string();
    match guarded(py, move || {
        Scenario::from_toml_str(&owned_text, &owned_origin)
    })? {
        Ok(s) => Ok(s),
        Err(e) => Err(scenario_error(py, &e)),
    }
}

/// Turn a slice of records into {column: list}, one column per struct field, in field order.
///
/// The trailing exhaustive pattern (no `..`) makes a field added to a record in
/// `pathpool_sim::output` a compile error here until it is exported too.
macro_rules! table {
    ($py:expr, $rows:expr, $ty:ident { $($field:ident),* $(,)? }) => {{
        let rows: &[$ty] = $rows;
        let d = PyDict::new($py);
        $(
            let col: Vec<_> = rows.iter().map(|r| r.$field.clone()).collect();
            d.set_item(stringify!($field), col)?;
        )*
        #[allow(unused_variables)]
        if let Some($ty { $($field: _),* }) = rows.first() {}
        d
    }};
}

fn le_bytes<'py, const N: usize, T: Copy>(
    py: Python<'py>,
    v: &[T],
    to: impl Fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&to(x));
    }
    PyBytes::new(py, &out)
}

/// Dictionary-encode a string column: (little-endian u32 codes, labels in order of first use).
fn dict_encoded<'py, S: AsRef<str>>(py: Python<'py>, v: &[S]) -> PyResult<Bound<'py, PyTuple>> {
    let mut index: HashMap<&str, u32> = HashMap::new();
    let mut labels: Vec<&str> = Vec::new();
    let mut codes = Vec::with_capacity(v.len() * 4);
    for s in v {
        let s = s.as_ref();
        let next = labels.len() as u32;
        let code = *index.entry(s).or_insert_with(|| {
            labels.push(s);
            next
        });
        codes.extend_from_slice(&code.to_le_bytes());
    }
    PyTuple::new(
        py,
        [
            PyBytes::new(py, &codes).into_any(),
            PyList::new(py, labels)?.into_any(),
        ],
    )
}

/// The long-form series can have millions of rows, so it crosses as buffers instead of lists
/// (a list of a million Python strings costs more than the simulation that made them):
/// numbers as little-endian bytes, labels dictionary-encoded. `pathpool.sim.results` decodes.
fn series_table<'py>(py: Python<'py>, s: &Series) -> PyResult<Bound<'py, PyDict>> {
    let Series {
        seed,
        time_s,
        entity,
        id,
        metric,
        value,
    } = s;
    let d = PyDict::new(py);
    d.set_item("seed", ("<u8", le_bytes(py, seed, u64::to_le_bytes)))?;
    d.set_item("time_s", ("<f8", le_bytes(py, time_s, f64::to_le_bytes)))?;
    d.set_item("entity", ("dict", dict_encoded(py, entity)?))?;
    d.set_item("id", ("dict", dict_encoded(py, id)?))?;
    d.set_item("metric", ("dict", dict_encoded(py, metric)?))?;
    d.set_item("value", ("<f8", le_bytes(py, value, f64::to_le_bytes)))?;
    Ok(d)
}

fn stats_dict<'py>(py: Python<'py>, s: &RunStats) -> PyResult<Bound<'py, PyDict>> {
    let RunStats {
        seed,
        simulated_s,
        events,
        data_packets,
        wall_s,
        ack_packets,
        packets_in_network_end,
        jain_goodput,
    } = s;
    let d = PyDict::new(py);
    d.set_item("seed", *seed)?;
    d.set_item("simulated_s", *simulated_s)?;
    d.set_item("events", *events)?;
    d.set_item("data_packets", *data_packets)?;
    d.set_item("wall_s", *wall_s)?;
    d.set_item("ack_packets", *ack_packets)?;
    d.set_item("packets_in_network_end", *packets_in_network_end)?;
    d.set_item("jain_goodput", *jain_goodput)?;
    Ok(d)
}

fn output_dict<'py>(py: Python<'py>, out: &RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let RunOutput {
        flows,
        subflows,
        links,
        series,
        stats,
    } = out;
    let d = PyDict::new(py);
    let flows = table!(
        py,
        flows,
        FlowRecord {
            seed,
            flow,
            kind,
            algorithm,
            n_subflows,
            start_s,
            end_s,
            delivered_bytes,
            goodput_bps,
            throughput_bps,
            sent_packets,
            retransmitted_packets,
            lost_packets,
            rto_count,
            completion_time_s,
            received_packets,
            dropped_packets,
            in_flight_packets,
            ack_packets,
            duplicate_segments,
            reinjected_segments,
            integrity_errors,
        }
    );
    d.set_item("flows", flows)?;
    let subflows = table!(
        py,
        subflows,
        SubflowRecord {
            seed,
            flow,
            subflow,
            path,
            acked_bytes,
            goodput_bps,
            throughput_bps,
            sent_packets,
            retransmitted_packets,
            lost_packets,
            loss_events,
            rto_count,
            mean_rtt_s,
            min_rtt_s,
            mean_cwnd,
        }
    );
    d.set_item("subflows", subflows)?;
    let links = table!(
        py,
        links,
        LinkRecord {
            seed,
            link,
            rate_bps,
            delay_s,
            utilisation,
            forwarded_packets,
            queue_drops,
            random_drops,
            mean_queue_bytes,
            max_queue_bytes,
            arrived_packets,
            queued_packets_end,
        }
    );
    d.set_item("links", links)?;
    d.set_item("series", series_table(py, series)?)?;
    d.set_item("stats", stats_dict(py, stats)?)?;
    Ok(d)
}

/// Every congestion-control algorithm, as a list of dicts.
///
/// Keys: name, summary, source, formula, coupled (bool), params (list of dicts with name,
/// default, allowed, doc).
#[pyfunction]
fn algorithms(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for a in pathpool_cc::catalog() {
        let d = PyDict::new(py);
        d.set_item("name", a.name)?;
        d.set_item("summary", a.summary)?;
        d.set_item("source", a.source)?;
        d.set_item("formula", a.formula)?;
        d.set_item("coupled", a.coupled)?;
        let params = PyList::empty(py);
        for p in a.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("default", p.default)?;
            pd.set_item("allowed", p.allowed)?;
            pd.set_item("doc", p.doc)?;
            params.append(pd)?;
        }
        d.set_item("params", params)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Validate a scenario (TOML text) without running it.
///
/// Returns {"name", "origin", "seeds", "duration_s"}; raises `pathpool.ScenarioError`.
#[pyfunction]
fn validate_scenario<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(py, text, origin)?;
    let d = PyDict::new(py);
    d.set_item("name", sc.name())?;
    d.set_item("origin", origin)?;
    d.set_item("seeds", sc.seeds().to_vec())?;
    d.set_item("duration_s", sc.duration_s())?;
    Ok(d)
}

/// Least wall time between two calls of a Python progress callback: often enough for a
/// progress bar, rarely enough that taking the GIL costs nothing measurable.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Wall time a run goes between two looks for a stop request (a pending signal such as Ctrl-C
/// or SIGTERM, or an exception from the progress callback): short enough that a command stops
/// well within a second, long enough that taking the GIL costs nothing measurable.
const STOP_CHECK_EVERY: Duration = Duration::from_millis(50);

/// Why a run ended before its end time: the Python exception to raise.
enum Stop {
    Sim(pathpool_sim::SimError),
    Python(PyErr),
}

/// Run one seed to its end in slices of simulated time, taking the GIL between slices to run
/// Python's signal handlers (`PyErr_CheckSignals`, which acts on the main thread only) and
/// stopping at the first exception they or `progress` raise.
///
/// Slicing changes nothing in the output: `Simulation::run_until(a); run_until(b)` processes
/// exactly the events of `run_until(b)` (pathpool-sim's documented contract, tested there). The
/// slice length adapts so that each takes about `STOP_CHECK_EVERY` of wall time.
fn run_stoppable(sc: &Scenario, seed: u64, progress: Option<&PyObject>) -> Result<RunOutput, Stop> {
    let mut sim = pathpool_sim::Simulation::new(sc, seed).map_err(Stop::Sim)?;
    let end = sim.end();
    // Shared between the callback closure and the loop below, which takes the error out.
    let cb_error: RefCell<Option<PyErr>> = RefCell::new(None);
    let mut last: Option<Instant> = None;
    let mut report = |fraction: f64| {
        let Some(cb) = progress else { return };
        if cb_error.borrow().is_some() {
            return;
        }
        let now = Instant::now();
        if fraction < 1.0 && last.is_some_and(|t| now - t < PROGRESS_EVERY) {
            return;
        }
        last = Some(now);
        Python::with_gil(|py| {
            if let Err(e) = cb.call1(py, (fraction,)) {
                *cb_error.borrow_mut() = Some(e);
            }
        });
    };
    let mut slice = (end / 1000).max(1);
    while sim.now() < end {
        let t0 = Instant::now();
        sim.run_until_with_progress(sim.now().saturating_add(slice).min(end), &mut report);
        let took = t0.elapsed();
        if took < STOP_CHECK_EVERY / 4 {
            slice = slice.saturating_mul(2);
        } else if took > STOP_CHECK_EVERY {
            slice = (slice / 2).max(1);
        }
        if let Some(e) = cb_error.borrow_mut().take() {
            return Err(Stop::Python(e));
        }
        Python::with_gil(|py| py.check_signals()).map_err(Stop::Python)?;
    }
    Ok(sim.finish())
}

/// Run one seed of a scenario (TOML text) and return its tables.
///
/// Returns {"flows", "subflows", "links": {column: list}, "series": {column: encoded buffer},
/// "stats": dict}. The GIL is released during the run; `progress_callback(fraction)` (fraction
/// of simulated time done, 0 to 1) is called with the GIL re-taken at most every 100 ms and once
/// at the end. The run stops early, raising the exception, when the callback raises or when a
/// signal handler does (Ctrl-C's KeyboardInterrupt, for one): pending signals are looked at
/// about every 50 ms of wall time.
#[pyfunction]
#[pyo3(signature = (text, origin, seed, progress_callback=None))]
fn run_scenario<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
    seed: u64,
    progress_callback: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(py, text, origin)?;
    let cb = progress_callback.as_ref();
    match guarded(py, || run_stoppable(&sc, seed, cb))? {
        Ok(out) => output_dict(py, &out),
        Err(Stop::Sim(e)) => Err(simulation_error(py, e.to_string())),
        Err(Stop::Python(e)) => Err(e),
    }
}

/// Panic inside the guarded region on purpose: lets the tests check that a Rust panic surfaces
/// as `SimulationError` and leaves the interpreter alive. Not part of the public API.
#[pyfunction]
fn _panic_for_test(py: Python<'_>, message: String) -> PyResult<()> {
    guarded(py, move || -> () { panic!("{message}") })
}

/// The compiled core of pathpool.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(rules::window_rules, m)?)?;
    m.add_class::<stepper::Simulation>()?;
    Ok(())
}

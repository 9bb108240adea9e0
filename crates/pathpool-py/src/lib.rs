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

use pathpool_sim::config::{Limits, Options};
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

/// A TOML value as the plain Python value tomllib would give (datetimes as their TOML text).
fn toml_to_py<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        toml::Value::String(s) => s.into_pyobject(py)?.into_any(),
        toml::Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        toml::Value::Float(f) => f.into_pyobject(py)?.into_any(),
        toml::Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        toml::Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any(),
        toml::Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(toml_to_py(py, x)?)?;
            }
            l.into_any()
        }
        toml::Value::Table(t) => {
            let d = PyDict::new(py);
            for (k, x) in t {
                d.set_item(k, toml_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The validated scenario as plain Python data: SI units (seconds, bit/s, bytes), defaults
/// filled, names instead of indices, `count` expanded. `pathpool.sim.scenario` documents it.
fn spec_dict<'py>(py: Python<'py>, sc: &Scenario) -> PyResult<Bound<'py, PyDict>> {
    use pathpool_sim::config::{
        AckRoute, App, DelayedAck, Joins, PushFlag, ReceiveWindow, Recovery, Scheduler,
        Segmentation, SendBuffer, WindowArithmetic, Writer,
    };
    use pathpool_sim::link::Buffer;
    let d = PyDict::new(py);
    d.set_item("name", &sc.name)?;
    d.set_item("description", &sc.description)?;
    d.set_item("duration_s", secs(sc.duration))?;
    d.set_item("seeds", sc.seeds.clone())?;
    d.set_item("metrics_interval_s", secs(sc.sample_interval))?;
    let links = PyList::empty(py);
    for l in &sc.links {
        let x = PyDict::new(py);
        x.set_item("name", &l.name)?;
        x.set_item("rate_bps", l.rate_bps)?;
        x.set_item("delay_s", secs(l.delay))?;
        let (packets, bytes) = match l.buffer {
            Buffer::Packets(n) => (Some(n), None),
            Buffer::Bytes(b) => (None, Some(b)),
        };
        x.set_item("buffer_packets", packets)?;
        x.set_item("buffer_bytes", bytes)?;
        x.set_item("loss", l.loss)?;
        let gilbert = match &l.gilbert {
            None => None,
            Some(g) => {
                let gd = PyDict::new(py);
                gd.set_item("p", g.p)?;
                gd.set_item("r", g.r)?;
                gd.set_item("loss_good", g.loss_good)?;
                gd.set_item("loss_bad", g.loss_bad)?;
                Some(gd)
            }
        };
        x.set_item("gilbert", gilbert)?;
        let reorder = match &l.reorder {
            None => None,
            Some(r) => {
                let rd = PyDict::new(py);
                rd.set_item("probability", r.probability)?;
                rd.set_item("extra_delay_s", secs(r.extra_delay))?;
                Some(rd)
            }
        };
        x.set_item("reorder", reorder)?;
        links.append(x)?;
    }
    d.set_item("links", links)?;
    let link_name = |i: &usize| sc.links[*i].name.clone();
    let paths = PyList::empty(py);
    for p in &sc.paths {
        let x = PyDict::new(py);
        x.set_item("name", &p.name)?;
        x.set_item("links", p.links.iter().map(link_name).collect::<Vec<_>>())?;
        match &p.ack {
            AckRoute::Delay(t) => {
                x.set_item("ack_links", None::<Vec<String>>)?;
                x.set_item("ack_delay_s", Some(secs(*t)))?;
            }
            AckRoute::Links(v) => {
                x.set_item(
                    "ack_links",
                    Some(v.iter().map(link_name).collect::<Vec<_>>()),
                )?;
                x.set_item("ack_delay_s", None::<f64>)?;
            }
        }
        paths.append(x)?;
    }
    d.set_item("paths", paths)?;
    let flows = PyList::empty(py);
    for (f, &index) in sc.flows.iter().zip(&sc.flow_origin) {
        let x = PyDict::new(py);
        x.set_item("name", &f.name)?;
        x.set_item("index", index)?;
        x.set_item("written", sc.flow_fields[index].clone())?;
        x.set_item("kind", f.kind.as_str())?;
        x.set_item(
            "paths",
            f.paths
                .iter()
                .map(|&p| sc.paths[p].name.clone())
                .collect::<Vec<_>>(),
        )?;
        x.set_item("algorithm", &f.algorithm)?;
        let params = PyDict::new(py);
        for (k, v) in f.params.iter() {
            match v {
                pathpool_cc::ParamValue::Number(n) => params.set_item(k, *n)?,
                pathpool_cc::ParamValue::Bool(b) => params.set_item(k, *b)?,
                pathpool_cc::ParamValue::Text(t) => params.set_item(k, t)?,
            }
        }
        x.set_item("params", params)?;
        x.set_item("counting", f.counting.name())?;
        x.set_item(
            "scheduler",
            match f.scheduler {
                Scheduler::MinRtt => "minrtt",
                Scheduler::RoundRobin => "roundrobin",
                Scheduler::Linux => "linux",
            },
        )?;
        x.set_item(
            "send_buffer",
            match f.send_buffer {
                SendBuffer::Unlimited => "unlimited",
                SendBuffer::Linux => "linux",
            },
        )?;
        let (writer, write_size) = match f.writer {
            Writer::Blocking => ("blocking", None),
            Writer::Poll { chunk } => ("poll", Some(chunk)),
        };
        x.set_item("writer", writer)?;
        x.set_item(
            "joins",
            match f.joins {
                Joins::Together => "together",
                Joins::Linux => "linux",
                Joins::LinuxPeerFirst => "linux_peer_first",
            },
        )?;
        x.set_item(
            "segmentation",
            match f.segmentation {
                Segmentation::Whole => "whole",
                Segmentation::Linux => "linux",
            },
        )?;
        x.set_item(
            "receive_window",
            match f.receive_window {
                ReceiveWindow::Fixed => "fixed",
                ReceiveWindow::Linux => "linux",
            },
        )?;
        x.set_item("write_size_bytes", write_size)?;
        let (app, size) = match f.app {
            App::Bulk => ("bulk", None),
            App::File(b) => ("file", Some(b)),
        };
        x.set_item("app", app)?;
        x.set_item("size_bytes", size)?;
        x.set_item("start_s", secs(f.start))?;
        x.set_item("stop_s", f.stop.map(secs))?;
        x.set_item("start_jitter_s", secs(f.start_jitter))?;
        x.set_item("send_jitter_s", secs(f.send_jitter))?;
        x.set_item("mss", f.mss)?;
        x.set_item("option_bytes", f.option_bytes)?;
        x.set_item("rcv_buffer_bytes", f.rcv_buffer)?;
        // As written in the file: false, true or "linux".
        match f.delayed_ack {
            DelayedAck::Off => x.set_item("delayed_ack", false)?,
            DelayedAck::Every2 => x.set_item("delayed_ack", true)?,
            DelayedAck::Linux => x.set_item("delayed_ack", "linux")?,
        }
        x.set_item("slow_start_after_idle", f.slow_start_after_idle)?;
        x.set_item(
            "recovery",
            match f.recovery {
                Recovery::Rfc6675 => "rfc6675",
                Recovery::Linux => "linux",
            },
        )?;
        x.set_item(
            "window_arithmetic",
            match f.window_arithmetic {
                WindowArithmetic::Real => "real",
                WindowArithmetic::Linux => "linux",
            },
        )?;
        x.set_item(
            "push_flag",
            match f.push_flag {
                PushFlag::None => "none",
                PushFlag::Linux => "linux",
            },
        )?;
        let rate = match &f.rate {
            None => None,
            Some(r) => {
                let rd = PyDict::new(py);
                rd.set_item("rates_pps", r.rates.clone())?;
                rd.set_item("block_length", r.block_length)?;
                rd.set_item("source_per_block", r.source_per_block)?;
                rd.set_item("deadline_s", secs(r.deadline))?;
                rd.set_item("feedback_interval_s", secs(r.feedback_interval))?;
                rd.set_item("controller", &r.controller)?;
                Some(rd)
            }
        };
        x.set_item("rate", rate)?;
        flows.append(x)?;
    }
    d.set_item("flows", flows)?;
    Ok(d)
}

#[allow(clippy::result_large_err)] // ConfigError is the simulator's; it only crosses here
fn checked_scenario(
    text: &str,
    origin: &str,
    options: &Options,
    allow_large: bool,
) -> Result<Scenario, ConfigError> {
    let sc = Scenario::from_toml_str_with(text, origin, options)?;
    if !allow_large {
        sc.check_limits(&Limits::default())?;
    }
    Ok(sc)
}

/// Validate a scenario (TOML text) without running it.
///
/// `overrides`: `FIELD=VALUE` strings applied before validation (`--set`); `extensions`:
/// top-level tables that belong to the caller, handed back untyped; `rate_controllers`: the
/// labels a rate flow's `controller` may carry (None: any); `allow_large`: skip the run-cost
/// limits. Returns {"name", "origin", "seeds", "duration_s", "text" (the TOML a run uses),
/// "spec" (the whole validated scenario, SI units), "extensions", "estimate" (events,
/// memory_bytes and series_rows of one seed, the numbers the limits compare)}; raises
/// `pathpool.ScenarioError`.
#[pyfunction]
#[allow(clippy::result_large_err)] // the closure's ConfigError, as in `parse`
#[pyo3(signature = (text, origin, overrides=None, extensions=None, rate_controllers=None, allow_large=false))]
fn validate_scenario<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
    overrides: Option<Vec<String>>,
    extensions: Option<Vec<String>>,
    rate_controllers: Option<Vec<String>>,
    allow_large: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let options = Options {
        overrides: overrides.unwrap_or_default(),
        extensions: extensions.unwrap_or_default(),
        rate_controllers,
    };
    let owned_text = text.to_string();
    let owned_origin = origin.to_string();
    let checked = guarded(py, move || {
        checked_scenario(&owned_text, &owned_origin, &options, allow_large)
    })?;
    let sc = checked.map_err(|e| scenario_error(py, &e))?;
    let d = PyDict::new(py);
    d.set_item("name", sc.name())?;
    d.set_item("origin", origin)?;
    d.set_item("seeds", sc.seeds().to_vec())?;
    d.set_item("duration_s", sc.duration_s())?;
    d.set_item("text", &sc.text)?;
    d.set_item("spec", spec_dict(py, &sc)?)?;
    let ext = PyDict::new(py);
    for (k, v) in &sc.extensions {
        ext.set_item(k, toml_to_py(py, v)?)?;
    }
    d.set_item("extensions", ext)?;
    let est = sc.estimate();
    let ed = PyDict::new(py);
    ed.set_item("events", est.events)?;
    ed.set_item("memory_bytes", est.memory_bytes)?;
    ed.set_item("series_rows", est.series_rows)?;
    d.set_item("estimate", ed)?;
    Ok(d)
}

/// Convert one quantity as written in a scenario to SI (`kind`: "time" -> seconds, "rate" ->
/// bit/s, "size" -> bytes, "probability"), with the simulator's own unit rules; raises
/// ValueError naming the allowed units.
#[pyfunction]
fn quantity(kind: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    use pathpool_sim::units;
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{value} is not a {kind}"
        )));
    }
    if let Ok(x) = value.extract::<f64>() {
        return Ok(x);
    }
    let text: String = value
        .extract()
        .map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("{value} is not a {kind}")))?;
    let r = match kind {
        "time" => units::seconds(&text),
        "rate" => units::rate_bps(&text),
        "size" => units::bytes(&text),
        "probability" => units::fraction(&text),
        _ => Err(format!(
            "unknown quantity kind {kind:?} (allowed: time, rate, size, probability)"
        )),
    };
    r.map_err(pyo3::exceptions::PyValueError::new_err)
}

/// The simulator's defaults for omitted fields, in SI units, and its count limits.
#[pyfunction]
fn defaults(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use pathpool_sim::config as c;
    let d = PyDict::new(py);
    d.set_item("mss", c::DEFAULT_MSS)?;
    d.set_item("rcv_buffer_bytes", c::DEFAULT_RCV_BUFFER)?;
    d.set_item("buffer_packets", c::DEFAULT_BUFFER_PACKETS)?;
    d.set_item("send_jitter_s", secs(c::DEFAULT_SEND_JITTER))?;
    d.set_item("deadline_s", secs(c::DEFAULT_DEADLINE))?;
    d.set_item("feedback_interval_s", secs(c::DEFAULT_FEEDBACK_INTERVAL))?;
    d.set_item("max_seeds", c::MAX_SEEDS)?;
    d.set_item("max_flows", c::MAX_FLOWS)?;
    Ok(d)
}

/// The scenario format as data (`pathpool_sim::config::schema`): `tables`, `fields` and
/// `units`, each a list of dicts, in file order.
#[pyfunction]
fn scenario_schema(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use pathpool_sim::config::schema;
    let tables = PyList::empty(py);
    for (name, written, doc) in schema::TABLES {
        let t = PyDict::new(py);
        t.set_item("name", name)?;
        t.set_item("written", written)?;
        t.set_item("doc", doc)?;
        tables.append(t)?;
    }
    let fields = PyList::empty(py);
    for f in schema::FIELDS {
        let d = PyDict::new(py);
        d.set_item("table", f.table)?;
        d.set_item("name", f.name)?;
        d.set_item("type", f.kind)?;
        d.set_item("required", f.required)?;
        d.set_item("default", f.default)?;
        d.set_item("allowed", f.allowed)?;
        d.set_item("kinds", f.kinds)?;
        d.set_item("doc", f.doc)?;
        d.set_item("accept", f.accept.to_vec())?;
        d.set_item("refuse", f.refuse.to_vec())?;
        fields.append(d)?;
    }
    let units = PyList::empty(py);
    for u in schema::UNITS {
        let d = PyDict::new(py);
        d.set_item("type", u.kind)?;
        d.set_item("suffixes", u.suffixes.to_vec())?;
        d.set_item("plain", u.plain)?;
        units.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("tables", tables)?;
    out.set_item("fields", fields)?;
    out.set_item("units", units)?;
    Ok(out)
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

/// Each flow's start jitter as the simulator draws it for `seed`, in nanoseconds: the first
/// draw of the flow's own random stream (`Stream::new(seed, "flow", name)`), times its
/// `start_jitter`, truncated (as `Conn::new` in crates/pathpool-sim/src/conn/mod.rs does for
/// TCP/MPTCP flows and `RateFlow::build` in src/rate/mod.rs for rate flows). Lets the kernel backend start its flows at the
/// simulator's times without re-drawing them in Python. Returns {flow name: offset_ns}.
#[pyfunction]
fn start_offsets<'py>(
    py: Python<'py>,
    text: &str,
    origin: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(py, text, origin)?;
    let d = PyDict::new(py);
    for f in &sc.flows {
        let offset = if f.start_jitter > 0 {
            let mut rng = pathpool_sim::rng::Stream::new(seed, "flow", &f.name);
            (rng.uniform() * f.start_jitter as f64) as u64
        } else {
            0
        };
        d.set_item(&f.name, offset)?;
    }
    Ok(d)
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
    // A hash of the simulator's and the algorithms' sources (build.rs): part of every cache key.
    m.add("engine_id", env!("PATHPOOL_ENGINE_ID"))?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(start_offsets, m)?)?;
    m.add_function(wrap_pyfunction!(quantity, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(rules::window_rules, m)?)?;
    m.add_class::<stepper::Simulation>()?;
    Ok(())
}

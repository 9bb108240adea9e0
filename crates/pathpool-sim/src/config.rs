//! Scenario files: TOML in, a validated [`Scenario`] out, or a [`ConfigError`] that names the
//! file, line, column, field and allowed values. The format is documented in `SCENARIOS.md`.

// A ConfigError is built at most once per invalid file, never on a hot path; its size costs nothing.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use pathpool_cc::{CcError, Counting, ParamValue, Params};
use serde::Deserialize;
use toml::Spanned;

use crate::link::{Buffer, GilbertElliott, Reorder};
use crate::time::Nanos;
use crate::units;

/// A scenario file that could not be read or is not valid.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// File name (or whatever origin the text came from).
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Dotted path of the offending field, e.g. `flows[2].algorithm`; empty for the whole file.
    pub field: String,
    pub message: String,
    /// Allowed values, in words, when there is a fixed set or range.
    pub allowed: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        write!(f, ": ")?;
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(a) = &self.allowed {
            write!(f, " (allowed: {a})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Which transport a flow uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowKind {
    Tcp,
    Mptcp,
    /// A paced, rate-based multipath sender (no window, no retransmission): `crate::sim::rate`.
    Rate,
}

impl FlowKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FlowKind::Tcp => "tcp",
            FlowKind::Mptcp => "mptcp",
            FlowKind::Rate => "rate",
        }
    }
}

/// MPTCP packet scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduler {
    /// Linux default: the subflow with the lowest smoothed RTT among those with room in cwnd.
    MinRtt,
    /// Cycle through subflows with room.
    RoundRobin,
}

/// What the sending application does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum App {
    /// Always has data, from start until stop (or the end of the run).
    Bulk,
    /// A file of this many bytes; completion time is recorded.
    File(u64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub name: String,
    pub rate_bps: u64,
    pub delay: Nanos,
    pub buffer: Buffer,
    pub loss: f64,
    pub gilbert: Option<GilbertElliott>,
    pub reorder: Option<Reorder>,
}

/// How ACKs of a path come back.
#[derive(Clone, Debug, PartialEq)]
pub enum AckRoute {
    /// An uncongested return of fixed one-way delay.
    Delay(Nanos),
    /// Through these links (indices into `links`), in order.
    Links(Vec<usize>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct PathSpec {
    pub name: String,
    /// Indices into `links`, in order from sender to receiver.
    pub links: Vec<usize>,
    pub ack: AckRoute,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub name: String,
    pub kind: FlowKind,
    /// Indices into `paths`: one per subflow.
    pub paths: Vec<usize>,
    pub algorithm: String,
    pub params: Params,
    /// Congestion-avoidance steps per acknowledged segment (default) or per ACK (v0.95).
    pub counting: Counting,
    pub scheduler: Scheduler,
    pub app: App,
    pub start: Nanos,
    pub stop: Option<Nanos>,
    /// Start is drawn uniformly from `[start, start + start_jitter]` (per-flow random stream).
    pub start_jitter: Nanos,
    /// Each data packet leaves the sending host after a random delay uniform in
    /// `[0, send_jitter]`, never overtaking the previous one (ns-2's `overhead_`): breaks the
    /// drop-tail phase effects of a perfectly deterministic network (Floyd & Jacobson 1991).
    pub send_jitter: Nanos,
    pub mss: u32,
    pub rcv_buffer: u64,
    pub delayed_ack: bool,
    /// `Some` exactly for `kind = "rate"`.
    pub rate: Option<RateSpec>,
}

/// Labels a rate flow's `controller` may carry. The simulator itself only paces at the rates it
/// is given; the label says which external controller (Python, `pathpool.ratecontrol`) is meant
/// to drive the flow. `fixed` keeps the initial rates.
pub const RATE_CONTROLLERS: &[&str] = &["fixed", "mptcp", "optimised"];

/// Settings of a `kind = "rate"` flow (see `SCENARIOS.md`).
#[derive(Clone, Debug, PartialEq)]
pub struct RateSpec {
    /// Initial sending rate of each path, packets/s (one per entry of `paths`).
    pub rates: Vec<f64>,
    /// FEC block length n (packets per block).
    pub block_length: u32,
    /// Source packets per block k (1..=n) until a controller sets another.
    pub source_per_block: u32,
    /// A packet arriving later than this after its send time is late.
    pub deadline: Nanos,
    /// The receiver sends a report every this often.
    pub feedback_interval: Nanos,
    /// One of [`RATE_CONTROLLERS`].
    pub controller: String,
}

/// A validated scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub origin: String,
    pub duration: Nanos,
    pub seeds: Vec<u64>,
    /// Time-series sampling interval; 0 = no time series.
    pub sample_interval: Nanos,
    pub links: Vec<LinkSpec>,
    pub paths: Vec<PathSpec>,
    /// Flows with `count` expanded (`name-0`, `name-1`, ... when count > 1).
    pub flows: Vec<FlowSpec>,
}

// ---------------------------------------------------------------------------------------------
// Raw, as written.

/// A number or a string with a unit (`"10Mbps"`, `"150ms"`, `"64KB"`, `"2%"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Q {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    #[serde(default)]
    description: Option<String>,
    duration: Spanned<Q>,
    #[serde(default)]
    seeds: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    metrics: Option<RawMetrics>,
    #[serde(default)]
    links: Vec<RawLink>,
    #[serde(default)]
    paths: Vec<RawPath>,
    #[serde(default)]
    flows: Vec<RawFlow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    #[serde(default)]
    interval: Option<Spanned<Q>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGilbert {
    p: Spanned<Q>,
    r: Spanned<Q>,
    #[serde(default)]
    loss_good: Option<Spanned<Q>>,
    #[serde(default)]
    loss_bad: Option<Spanned<Q>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReorder {
    probability: Spanned<Q>,
    extra_delay: Spanned<Q>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    name: Spanned<String>,
    rate: Spanned<Q>,
    #[serde(default)]
    delay: Option<Spanned<Q>>,
    #[serde(default)]
    buffer: Option<Spanned<Q>>,
    #[serde(default)]
    loss: Option<Spanned<Q>>,
    #[serde(default)]
    gilbert: Option<Spanned<RawGilbert>>,
    #[serde(default)]
    reorder: Option<Spanned<RawReorder>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    name: Spanned<String>,
    links: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    ack_links: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    ack_delay: Option<Spanned<Q>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: Spanned<String>,
    kind: Spanned<String>,
    #[serde(default)]
    path: Option<Spanned<String>>,
    #[serde(default)]
    paths: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    algorithm: Option<Spanned<String>>,
    #[serde(default)]
    params: Option<Spanned<BTreeMap<String, toml::Value>>>,
    #[serde(default)]
    counting: Option<Spanned<String>>,
    #[serde(default)]
    scheduler: Option<Spanned<String>>,
    #[serde(default)]
    app: Option<Spanned<String>>,
    #[serde(default)]
    size: Option<Spanned<Q>>,
    #[serde(default)]
    start: Option<Spanned<Q>>,
    #[serde(default)]
    stop: Option<Spanned<Q>>,
    #[serde(default)]
    start_jitter: Option<Spanned<Q>>,
    #[serde(default)]
    send_jitter: Option<Spanned<Q>>,
    #[serde(default)]
    count: Option<Spanned<i64>>,
    #[serde(default)]
    mss: Option<Spanned<Q>>,
    #[serde(default)]
    rcv_buffer: Option<Spanned<Q>>,
    #[serde(default)]
    delayed_ack: Option<Spanned<bool>>,
    // --- kind = "rate" only ---
    #[serde(default)]
    rates: Option<Spanned<Vec<Spanned<Q>>>>,
    #[serde(default)]
    block_length: Option<Spanned<i64>>,
    #[serde(default)]
    source_per_block: Option<Spanned<i64>>,
    #[serde(default)]
    deadline: Option<Spanned<Q>>,
    #[serde(default)]
    feedback_interval: Option<Spanned<Q>>,
    #[serde(default)]
    controller: Option<Spanned<String>>,
}

// ---------------------------------------------------------------------------------------------

pub const DEFAULT_MSS: u32 = 1448;
pub const DEFAULT_RCV_BUFFER: u64 = 4 * 1024 * 1024;
pub const DEFAULT_BUFFER_PACKETS: u32 = 100;
/// Default host send jitter: 0.5 ms, about one service time of a 20 Mb/s bottleneck.
pub const DEFAULT_SEND_JITTER: Nanos = 500_000;

struct Ctx<'a> {
    text: &'a str,
    origin: &'a str,
}

impl Ctx<'_> {
    fn pos(&self, span: Option<Range<usize>>) -> (Option<usize>, Option<usize>) {
        match span {
            None => (None, None),
            Some(r) => {
                let at = r.start.min(self.text.len());
                let before = &self.text[..at];
                let line = before.matches('\n').count() + 1;
                let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                (Some(line), Some(col))
            }
        }
    }

    fn err(
        &self,
        span: Option<Range<usize>>,
        field: impl Into<String>,
        message: impl Into<String>,
        allowed: Option<&str>,
    ) -> ConfigError {
        let (line, column) = self.pos(span);
        ConfigError {
            origin: self.origin.to_string(),
            line,
            column,
            field: field.into(),
            message: message.into(),
            allowed: allowed.map(str::to_string),
        }
    }

    fn q<T>(
        &self,
        v: &Spanned<Q>,
        field: &str,
        parse: impl Fn(&Q) -> Result<T, String>,
        allowed: &str,
    ) -> Result<T, ConfigError> {
        parse(v.get_ref()).map_err(|m| self.err(Some(v.span()), field, m, Some(allowed)))
    }
}

fn q_text(q: &Q) -> String {
    match q {
        Q::Int(i) => i.to_string(),
        Q::Float(f) => f.to_string(),
        Q::Text(s) => format!("{s:?}"),
    }
}

fn rate(q: &Q) -> Result<u64, String> {
    let v = match q {
        Q::Int(i) => *i as f64,
        Q::Float(f) => *f,
        Q::Text(s) => units::rate_bps(s)?,
    };
    if !(v.is_finite() && v >= 1.0) {
        return Err(format!("rate {} must be at least 1 bit/s", q_text(q)));
    }
    Ok(v.round() as u64)
}

fn duration(q: &Q) -> Result<Nanos, String> {
    let s = match q {
        Q::Int(i) => *i as f64,
        Q::Float(f) => *f,
        Q::Text(s) => units::seconds(s)?,
    };
    if !(s.is_finite() && s >= 0.0) {
        return Err(format!(
            "time {} must be a non-negative duration",
            q_text(q)
        ));
    }
    Ok((s * 1e9).round() as Nanos)
}

fn probability(q: &Q) -> Result<f64, String> {
    let p = match q {
        Q::Int(i) => *i as f64,
        Q::Float(f) => *f,
        Q::Text(s) => units::fraction(s)?,
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("probability {} is outside [0, 1]", q_text(q)));
    }
    Ok(p)
}

fn bytes(q: &Q) -> Result<u64, String> {
    let b = match q {
        Q::Int(i) => *i as f64,
        Q::Float(f) => *f,
        Q::Text(s) => units::bytes(s)?,
    };
    if !(b.is_finite() && b >= 1.0) {
        return Err(format!("size {} must be at least 1 byte", q_text(q)));
    }
    Ok(b.round() as u64)
}

fn buffer(q: &Q) -> Result<Buffer, String> {
    match q {
        Q::Int(i) if *i >= 1 => Ok(Buffer::Packets((*i).min(u32::MAX as i64) as u32)),
        Q::Text(s) => {
            let t = s.trim();
            for suffix in ["packets", "packet", "pkts", "pkt", "p"] {
                if let Some(n) = t.strip_suffix(suffix) {
                    let n: u64 = n
                        .trim()
                        .parse()
                        .map_err(|_| format!("cannot read {s:?} as a packet count"))?;
                    if n == 0 {
                        return Err("a buffer must hold at least 1 packet".into());
                    }
                    return Ok(Buffer::Packets(n.min(u32::MAX as u64) as u32));
                }
            }
            let b = units::bytes(t)?;
            if b < 1.0 {
                return Err("a buffer must hold at least 1 byte".into());
            }
            Ok(Buffer::Bytes(b.round() as u64))
        }
        _ => Err(format!(
            "buffer {} must be a positive packet count or a size",
            q_text(q)
        )),
    }
}

fn param_value(v: &toml::Value) -> Option<ParamValue> {
    match v {
        toml::Value::Integer(i) => Some(ParamValue::Number(*i as f64)),
        toml::Value::Float(f) => Some(ParamValue::Number(*f)),
        toml::Value::Boolean(b) => Some(ParamValue::Bool(*b)),
        toml::Value::String(s) => Some(ParamValue::Text(s.clone())),
        _ => None,
    }
}

/// Turn a serde/toml error into a ConfigError with the field path and allowed values.
fn from_de_error(ctx: &Ctx, e: serde_path_to_error::Error<toml::de::Error>) -> ConfigError {
    // `Spanned<T>` deserialises through a private wrapper field; it is no part of the file.
    let mut path = e
        .path()
        .to_string()
        .replace(".$__serde_spanned_private_value", "");
    if path == "." {
        path.clear();
    }
    let inner = e.into_inner();
    let msg = inner.message().trim().to_string();
    let mut allowed = None;
    let mut message = msg.clone();
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        if let Some((name, tail)) = rest.split_once('`') {
            if !(path == name || path.ends_with(&format!(".{name}"))) {
                path = if path.is_empty() {
                    name.to_string()
                } else {
                    format!("{path}.{name}")
                };
            }
            message = format!("unknown field `{name}`");
            let tail = tail.trim_start_matches(',').trim();
            let list = tail
                .strip_prefix("expected one of ")
                .or_else(|| tail.strip_prefix("expected "));
            allowed = list.map(|l| l.replace('`', ""));
        }
    } else if let Some(rest) = msg.strip_prefix("missing field `") {
        if let Some((name, _)) = rest.split_once('`') {
            if !(path == name || path.ends_with(&format!(".{name}"))) {
                path = if path.is_empty() {
                    name.to_string()
                } else {
                    format!("{path}.{name}")
                };
            }
            message = format!("missing required field `{name}`");
        }
    } else if msg.contains("did not match any variant of untagged enum Q") {
        message = "expected a number or a string with a unit".into();
    }
    let (line, column) = ctx.pos(inner.span());
    ConfigError {
        origin: ctx.origin.to_string(),
        line,
        column,
        field: path,
        message,
        allowed,
    }
}

impl Scenario {
    /// Parse and validate scenario text; `origin` names it in error messages (usually the file).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Scenario, ConfigError> {
        let ctx = Ctx { text, origin };
        let de = toml::Deserializer::parse(text).map_err(|e| {
            let (line, column) = ctx.pos(e.span());
            ConfigError {
                origin: origin.to_string(),
                line,
                column,
                field: String::new(),
                message: e.message().trim().to_string(),
                allowed: None,
            }
        })?;
        let raw: RawScenario =
            serde_path_to_error::deserialize(de).map_err(|e| from_de_error(&ctx, e))?;
        validate(&ctx, raw)
    }

    /// Read and validate a scenario file.
    pub fn from_path(path: &Path) -> Result<Scenario, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            line: None,
            column: None,
            field: String::new(),
            message: format!("cannot read file: {e}"),
            allowed: None,
        })?;
        Scenario::from_toml_str(&text, &origin)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    pub fn duration_s(&self) -> f64 {
        self.duration as f64 / 1e9
    }
}

/// Reject fields that do not apply to the flow's kind, naming the field.
fn check_kind_fields(ctx: &Ctx, fl: &RawFlow, kind: FlowKind, i: usize) -> Result<(), ConfigError> {
    let rate_only: [(&str, Option<Range<usize>>); 6] = [
        ("rates", fl.rates.as_ref().map(|v| v.span())),
        ("block_length", fl.block_length.as_ref().map(|v| v.span())),
        (
            "source_per_block",
            fl.source_per_block.as_ref().map(|v| v.span()),
        ),
        ("deadline", fl.deadline.as_ref().map(|v| v.span())),
        (
            "feedback_interval",
            fl.feedback_interval.as_ref().map(|v| v.span()),
        ),
        ("controller", fl.controller.as_ref().map(|v| v.span())),
    ];
    let window_only: [(&str, Option<Range<usize>>); 7] = [
        ("algorithm", fl.algorithm.as_ref().map(|v| v.span())),
        ("params", fl.params.as_ref().map(|v| v.span())),
        ("counting", fl.counting.as_ref().map(|v| v.span())),
        ("scheduler", fl.scheduler.as_ref().map(|v| v.span())),
        ("size", fl.size.as_ref().map(|v| v.span())),
        ("rcv_buffer", fl.rcv_buffer.as_ref().map(|v| v.span())),
        ("delayed_ack", fl.delayed_ack.as_ref().map(|v| v.span())),
    ];
    let (bad, msg, allowed) = if kind == FlowKind::Rate {
        (&window_only[..], "does not apply to kind = \"rate\" (a paced sender has no window, congestion controller or receive buffer)", "rate flow fields: rates, block_length, source_per_block, deadline, feedback_interval, controller")
    } else {
        (
            &rate_only[..],
            "applies only to kind = \"rate\"",
            "kind = \"rate\"",
        )
    };
    for (name, span) in bad.iter() {
        if let Some(sp) = span {
            return Err(ctx.err(
                Some(sp.clone()),
                format!("flows[{i}].{name}"),
                msg,
                Some(allowed),
            ));
        }
    }
    if kind == FlowKind::Rate {
        if let Some(a) = &fl.app {
            if a.get_ref() != "bulk" {
                return Err(ctx.err(
                    Some(a.span()),
                    format!("flows[{i}].app"),
                    "a rate flow streams from start to stop",
                    Some("bulk"),
                ));
            }
        }
    }
    Ok(())
}

/// Validate the rate-flow fields of flow `i` with `n_paths` paths.
fn rate_spec(ctx: &Ctx, fl: &RawFlow, i: usize, n_paths: usize) -> Result<RateSpec, ConfigError> {
    let f = |k: &str| format!("flows[{i}].{k}");
    let rates_allowed = "a list of packets/s >= 0, one per path, not all 0, e.g. [100, 50]";
    let rates = match &fl.rates {
        None => {
            return Err(ctx.err(
                Some(fl.name.span()),
                f("rates"),
                "a rate flow needs its initial per-path rates",
                Some(rates_allowed),
            ))
        }
        Some(rs) => {
            if rs.get_ref().len() != n_paths {
                return Err(ctx.err(
                    Some(rs.span()),
                    f("rates"),
                    format!("{} rates given for {n_paths} paths", rs.get_ref().len()),
                    Some(rates_allowed),
                ));
            }
            let mut v = Vec::with_capacity(n_paths);
            for (j, r) in rs.get_ref().iter().enumerate() {
                let x = ctx.q(
                    r,
                    &format!("flows[{i}].rates[{j}]"),
                    |q| match q {
                        Q::Int(n) => Ok(*n as f64),
                        Q::Float(x) => Ok(*x),
                        Q::Text(t) => Err(format!("{t:?} is not a number of packets/s")),
                    },
                    rates_allowed,
                )?;
                if !(x.is_finite() && (0.0..=1e9).contains(&x)) {
                    return Err(ctx.err(
                        Some(r.span()),
                        format!("flows[{i}].rates[{j}]"),
                        format!("rate {x} is out of range"),
                        Some(rates_allowed),
                    ));
                }
                v.push(x);
            }
            if v.iter().all(|&x| x == 0.0) {
                return Err(ctx.err(
                    Some(rs.span()),
                    f("rates"),
                    "all rates are 0",
                    Some(rates_allowed),
                ));
            }
            v
        }
    };
    let block_length = match &fl.block_length {
        None => 10,
        Some(b) if (1..=65535).contains(b.get_ref()) => *b.get_ref() as u32,
        Some(b) => {
            return Err(ctx.err(
                Some(b.span()),
                f("block_length"),
                format!("block length {} is out of range", b.get_ref()),
                Some("an integer in 1..=65535"),
            ))
        }
    };
    let source_per_block = match &fl.source_per_block {
        // Before any feedback, half the block is redundancy (as `pathpool.ratecontrol.stream`).
        None => block_length.div_ceil(2),
        Some(k) if *k.get_ref() >= 1 && *k.get_ref() <= i64::from(block_length) => {
            *k.get_ref() as u32
        }
        Some(k) => {
            return Err(ctx.err(
                Some(k.span()),
                f("source_per_block"),
                format!(
                    "{} source packets do not fit a block of {block_length}",
                    k.get_ref()
                ),
                Some("an integer in 1..=block_length"),
            ))
        }
    };
    let deadline = match &fl.deadline {
        None => 300_000_000,
        Some(v) => {
            let d = ctx.q(v, &f("deadline"), duration, "a time > 0, e.g. \"300ms\"")?;
            if d == 0 {
                return Err(ctx.err(
                    Some(v.span()),
                    f("deadline"),
                    "must be greater than 0",
                    Some("a time > 0, e.g. \"300ms\""),
                ));
            }
            d
        }
    };
    let feedback_interval = match &fl.feedback_interval {
        None => 1_000_000_000,
        Some(v) => {
            let d = ctx.q(
                v,
                &f("feedback_interval"),
                duration,
                "a time >= 1ms, e.g. \"1s\"",
            )?;
            if d < 1_000_000 {
                return Err(ctx.err(
                    Some(v.span()),
                    f("feedback_interval"),
                    "must be at least 1 ms",
                    Some("a time >= 1ms, e.g. \"1s\""),
                ));
            }
            d
        }
    };
    let controller = match &fl.controller {
        None => "fixed".to_string(),
        Some(c) if RATE_CONTROLLERS.contains(&c.get_ref().as_str()) => c.get_ref().clone(),
        Some(c) => {
            return Err(ctx.err(
                Some(c.span()),
                f("controller"),
                format!("unknown rate controller {:?}", c.get_ref()),
                Some(&RATE_CONTROLLERS.join(", ")),
            ))
        }
    };
    Ok(RateSpec {
        rates,
        block_length,
        source_per_block,
        deadline,
        feedback_interval,
        controller,
    })
}

fn validate(ctx: &Ctx, raw: RawScenario) -> Result<Scenario, ConfigError> {
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(Some(raw.name.span()), "name", "must not be empty", None));
    }
    let dur = ctx.q(
        &raw.duration,
        "duration",
        duration,
        "a time > 0, e.g. \"30s\", \"500ms\", or seconds as a number",
    )?;
    if dur == 0 {
        return Err(ctx.err(
            Some(raw.duration.span()),
            "duration",
            "must be greater than 0",
            Some("a time > 0"),
        ));
    }
    let seeds = match &raw.seeds {
        None => vec![1],
        Some(s) if s.get_ref().is_empty() => {
            return Err(ctx.err(
                Some(s.span()),
                "seeds",
                "must list at least one seed",
                Some("a non-empty list of integers >= 0"),
            ))
        }
        Some(s) => s.get_ref().clone(),
    };
    let sample_interval = match raw.metrics.as_ref().and_then(|m| m.interval.as_ref()) {
        None => 0,
        Some(v) => ctx.q(
            v,
            "metrics.interval",
            duration,
            "a time >= 0 (0 = no time series)",
        )?,
    };

    // Links.
    let mut links = Vec::with_capacity(raw.links.len());
    for (i, l) in raw.links.iter().enumerate() {
        let f = |k: &str| format!("links[{i}].{k}");
        let lname = l.name.get_ref().trim().to_string();
        if lname.is_empty() {
            return Err(ctx.err(Some(l.name.span()), f("name"), "must not be empty", None));
        }
        if links.iter().any(|x: &LinkSpec| x.name == lname) {
            return Err(ctx.err(
                Some(l.name.span()),
                f("name"),
                format!("duplicate link name {lname:?}"),
                Some("a name unique among links"),
            ));
        }
        let rate_bps = ctx.q(
            &l.rate,
            &f("rate"),
            rate,
            "a rate >= 1 bit/s, e.g. \"10Mbps\", \"1Gbps\", or bits/s as a number",
        )?;
        let delay = match &l.delay {
            None => 0,
            Some(v) => ctx.q(v, &f("delay"), duration, "a time >= 0, e.g. \"20ms\"")?,
        };
        let buffer = match &l.buffer {
            None => Buffer::Packets(DEFAULT_BUFFER_PACKETS),
            Some(v) => ctx.q(
                v,
                &f("buffer"),
                buffer,
                "a packet count >= 1 (100 or \"100pkt\") or a size (\"64KB\", \"1MiB\")",
            )?,
        };
        let loss = match &l.loss {
            None => 0.0,
            Some(v) => ctx.q(
                v,
                &f("loss"),
                probability,
                "a probability in [0, 1], e.g. 0.01 or \"1%\"",
            )?,
        };
        let gilbert = match &l.gilbert {
            None => None,
            Some(g) => {
                let g = g.get_ref();
                let pr = |v: &Spanned<Q>, k: &str| {
                    ctx.q(
                        v,
                        &format!("links[{i}].gilbert.{k}"),
                        probability,
                        "a probability in [0, 1]",
                    )
                };
                Some(GilbertElliott {
                    p: pr(&g.p, "p")?,
                    r: pr(&g.r, "r")?,
                    loss_good: g
                        .loss_good
                        .as_ref()
                        .map(|v| pr(v, "loss_good"))
                        .transpose()?
                        .unwrap_or(0.0),
                    loss_bad: g
                        .loss_bad
                        .as_ref()
                        .map(|v| pr(v, "loss_bad"))
                        .transpose()?
                        .unwrap_or(1.0),
                })
            }
        };
        let reorder = match &l.reorder {
            None => None,
            Some(r) => {
                let r = r.get_ref();
                let probability = ctx.q(
                    &r.probability,
                    &f("reorder.probability"),
                    probability,
                    "a probability in [0, 1], e.g. 0.05 or \"5%\"",
                )?;
                let allowed = "a time > 0, e.g. \"5ms\"";
                let extra_delay =
                    ctx.q(&r.extra_delay, &f("reorder.extra_delay"), duration, allowed)?;
                if extra_delay == 0 {
                    return Err(ctx.err(
                        Some(r.extra_delay.span()),
                        f("reorder.extra_delay"),
                        "must be greater than 0",
                        Some(allowed),
                    ));
                }
                Some(Reorder {
                    probability,
                    extra_delay,
                })
            }
        };
        links.push(LinkSpec {
            name: lname,
            rate_bps,
            delay,
            buffer,
            loss,
            gilbert,
            reorder,
        });
    }
    let link_names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
    let find_link = |s: &Spanned<String>, field: String| -> Result<usize, ConfigError> {
        link_names
            .iter()
            .position(|n| *n == s.get_ref().as_str())
            .ok_or_else(|| {
                ctx.err(
                    Some(s.span()),
                    field,
                    format!("no link named {:?}", s.get_ref()),
                    Some(&link_names.join(", ")),
                )
            })
    };

    // Paths.
    let mut paths: Vec<PathSpec> = Vec::with_capacity(raw.paths.len());
    for (i, p) in raw.paths.iter().enumerate() {
        let pname = p.name.get_ref().trim().to_string();
        if pname.is_empty() {
            return Err(ctx.err(
                Some(p.name.span()),
                format!("paths[{i}].name"),
                "must not be empty",
                None,
            ));
        }
        if paths.iter().any(|x| x.name == pname) {
            return Err(ctx.err(
                Some(p.name.span()),
                format!("paths[{i}].name"),
                format!("duplicate path name {pname:?}"),
                Some("a name unique among paths"),
            ));
        }
        if p.links.get_ref().is_empty() {
            return Err(ctx.err(
                Some(p.links.span()),
                format!("paths[{i}].links"),
                "a path needs at least one link",
                Some(&link_names.join(", ")),
            ));
        }
        let mut idx = Vec::new();
        for (j, s) in p.links.get_ref().iter().enumerate() {
            idx.push(find_link(s, format!("paths[{i}].links[{j}]"))?);
        }
        let ack = match (&p.ack_links, &p.ack_delay) {
            (Some(al), Some(ad)) => {
                let _ = al;
                return Err(ctx.err(
                    Some(ad.span()),
                    format!("paths[{i}].ack_delay"),
                    "give either ack_links or ack_delay, not both",
                    None,
                ));
            }
            (Some(al), None) => {
                let mut v = Vec::new();
                for (j, s) in al.get_ref().iter().enumerate() {
                    v.push(find_link(s, format!("paths[{i}].ack_links[{j}]"))?);
                }
                if v.is_empty() {
                    return Err(ctx.err(
                        Some(al.span()),
                        format!("paths[{i}].ack_links"),
                        "must list at least one link (or use ack_delay)",
                        Some(&link_names.join(", ")),
                    ));
                }
                AckRoute::Links(v)
            }
            (None, Some(ad)) => AckRoute::Delay(ctx.q(
                ad,
                &format!("paths[{i}].ack_delay"),
                duration,
                "a time >= 0",
            )?),
            // Default: a symmetric, uncongested return.
            (None, None) => AckRoute::Delay(idx.iter().map(|&l| links[l].delay).sum()),
        };
        paths.push(PathSpec {
            name: pname,
            links: idx,
            ack,
        });
    }
    let path_names: Vec<&str> = paths.iter().map(|p| p.name.as_str()).collect();
    let find_path = |s: &Spanned<String>, field: String| -> Result<usize, ConfigError> {
        path_names
            .iter()
            .position(|n| *n == s.get_ref().as_str())
            .ok_or_else(|| {
                ctx.err(
                    Some(s.span()),
                    field,
                    format!("no path named {:?}", s.get_ref()),
                    Some(&path_names.join(", ")),
                )
            })
    };

    // Flows.
    let mut flows: Vec<FlowSpec> = Vec::new();
    let mut base_names: Vec<String> = Vec::new();
    for (i, fl) in raw.flows.iter().enumerate() {
        let f = |k: &str| format!("flows[{i}].{k}");
        let fname = fl.name.get_ref().trim().to_string();
        if fname.is_empty() {
            return Err(ctx.err(Some(fl.name.span()), f("name"), "must not be empty", None));
        }
        if base_names.contains(&fname) {
            return Err(ctx.err(
                Some(fl.name.span()),
                f("name"),
                format!("duplicate flow name {fname:?}"),
                Some("a name unique among flows"),
            ));
        }
        base_names.push(fname.clone());
        let kind = match fl.kind.get_ref().as_str() {
            "tcp" => FlowKind::Tcp,
            "mptcp" => FlowKind::Mptcp,
            "rate" => FlowKind::Rate,
            other => {
                return Err(ctx.err(
                    Some(fl.kind.span()),
                    f("kind"),
                    format!("unknown flow kind {other:?}"),
                    Some("tcp, mptcp, rate"),
                ))
            }
        };
        check_kind_fields(ctx, fl, kind, i)?;
        let path_idx = match (kind, &fl.path, &fl.paths) {
            (_, Some(_), Some(ps)) => {
                return Err(ctx.err(
                    Some(ps.span()),
                    f("paths"),
                    "give either path or paths, not both",
                    None,
                ));
            }
            (_, Some(p), None) => vec![find_path(p, f("path"))?],
            (FlowKind::Tcp, None, Some(ps)) if ps.get_ref().len() != 1 => {
                return Err(ctx.err(
                    Some(ps.span()),
                    f("paths"),
                    "a tcp flow uses exactly one path",
                    Some("one path name (use kind = \"mptcp\" for several)"),
                ));
            }
            (_, None, Some(ps)) => {
                if ps.get_ref().is_empty() {
                    return Err(ctx.err(
                        Some(ps.span()),
                        f("paths"),
                        "must list at least one path",
                        Some(&path_names.join(", ")),
                    ));
                }
                let mut v = Vec::new();
                for (j, s) in ps.get_ref().iter().enumerate() {
                    v.push(find_path(s, format!("flows[{i}].paths[{j}]"))?);
                }
                v
            }
            (_, None, None) => {
                return Err(ctx.err(
                    Some(fl.name.span()),
                    f("path"),
                    "a flow needs `path` (tcp) or `paths` (mptcp)",
                    Some(&path_names.join(", ")),
                ));
            }
        };
        let algorithm = match kind {
            FlowKind::Rate => fl
                .controller
                .as_ref()
                .map(|a| a.get_ref().clone())
                .unwrap_or_else(|| "fixed".to_string()),
            _ => fl
                .algorithm
                .as_ref()
                .map(|a| a.get_ref().clone())
                .unwrap_or_else(|| "reno".to_string()),
        };
        let mut params = Params::new();
        if let Some(p) = &fl.params {
            for (k, v) in p.get_ref() {
                let pv = param_value(v).ok_or_else(|| {
                    ctx.err(
                        Some(p.span()),
                        format!("flows[{i}].params.{k}"),
                        "parameter values must be numbers, booleans or strings",
                        None,
                    )
                })?;
                params.insert(k.clone(), pv);
            }
        }
        let rate_spec = if kind == FlowKind::Rate {
            Some(rate_spec(ctx, fl, i, path_idx.len())?)
        } else {
            None
        };
        if kind == FlowKind::Rate {
            // The rate receiver infers losses from sequence gaps, which needs FIFO paths.
            for &p in &path_idx {
                let back: &[usize] = match &paths[p].ack {
                    AckRoute::Links(v) => v,
                    AckRoute::Delay(_) => &[],
                };
                if let Some(&l) = paths[p]
                    .links
                    .iter()
                    .chain(back)
                    .find(|&&l| links[l].reorder.is_some())
                {
                    let sp = fl
                        .paths
                        .as_ref()
                        .map(|v| v.span())
                        .or_else(|| fl.path.as_ref().map(|v| v.span()));
                    return Err(ctx.err(
                        sp,
                        f("paths"),
                        format!("path {:?} crosses link {:?}, which reorders; a rate flow needs FIFO paths (its receiver counts sequence gaps as losses)", paths[p].name, links[l].name),
                        Some("paths whose links have no `reorder`"),
                    ));
                }
            }
        }
        if kind == FlowKind::Rate {
            // Checked by rate_spec; a rate flow has no congestion controller.
        } else if let Err(e) = pathpool_cc::build(&algorithm, &params, path_idx.len()) {
            let alg_span = fl
                .algorithm
                .as_ref()
                .map(|a| a.span())
                .or_else(|| Some(fl.name.span()));
            let par_span = fl.params.as_ref().map(|p| p.span()).or(alg_span.clone());
            return Err(match e {
                CcError::UnknownAlgorithm { name, allowed } => ctx.err(
                    alg_span,
                    f("algorithm"),
                    format!("unknown algorithm {name:?}"),
                    Some(&allowed.join(", ")),
                ),
                CcError::UnknownParam {
                    algorithm,
                    param,
                    allowed,
                } => ctx.err(
                    par_span,
                    format!("flows[{i}].params.{param}"),
                    format!("algorithm {algorithm:?} has no parameter {param:?}"),
                    Some(&if allowed.is_empty() {
                        "no parameters".to_string()
                    } else {
                        allowed.join(", ")
                    }),
                ),
                CcError::BadParam {
                    algorithm,
                    param,
                    value,
                    allowed,
                } => ctx.err(
                    par_span,
                    format!("flows[{i}].params.{param}"),
                    format!("algorithm {algorithm:?}: {param} = {value} is not allowed"),
                    Some(allowed),
                ),
                CcError::NoSubflows => ctx.err(
                    alg_span,
                    f("paths"),
                    "a connection needs at least one subflow",
                    None,
                ),
            });
        }
        let counting = match fl.counting.as_ref() {
            None => Counting::default(),
            Some(c) => Counting::from_name(c.get_ref()).ok_or_else(|| {
                ctx.err(
                    Some(c.span()),
                    f("counting"),
                    format!("unknown counting {:?}", c.get_ref()),
                    Some(&Counting::NAMES.join(", ")),
                )
            })?,
        };
        let scheduler = match fl
            .scheduler
            .as_ref()
            .map(|s| (s.get_ref().as_str(), s.span()))
        {
            None | Some(("minrtt", _)) => Scheduler::MinRtt,
            Some(("roundrobin", _)) => Scheduler::RoundRobin,
            Some((other, sp)) => {
                return Err(ctx.err(
                    Some(sp),
                    f("scheduler"),
                    format!("unknown scheduler {other:?}"),
                    Some("minrtt, roundrobin"),
                ))
            }
        };
        let app = match fl.app.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
            None | Some(("bulk", _)) => {
                if let Some(sz) = &fl.size {
                    return Err(ctx.err(
                        Some(sz.span()),
                        f("size"),
                        "size applies only to app = \"file\"",
                        None,
                    ));
                }
                App::Bulk
            }
            Some(("file", sp)) => match &fl.size {
                None => {
                    return Err(ctx.err(
                        Some(sp),
                        f("size"),
                        "app = \"file\" needs a size",
                        Some("a size >= 1 byte, e.g. \"4MB\""),
                    ))
                }
                Some(sz) => App::File(ctx.q(
                    sz,
                    &f("size"),
                    bytes,
                    "a size >= 1 byte, e.g. \"4MB\", \"10MiB\", or bytes as a number",
                )?),
            },
            Some((other, sp)) => {
                return Err(ctx.err(
                    Some(sp),
                    f("app"),
                    format!("unknown app {other:?}"),
                    Some("bulk, file"),
                ))
            }
        };
        let start = match &fl.start {
            None => 0,
            Some(v) => ctx.q(v, &f("start"), duration, "a time >= 0")?,
        };
        let stop = match &fl.stop {
            None => None,
            Some(v) => {
                let t = ctx.q(v, &f("stop"), duration, "a time > start")?;
                if t <= start {
                    return Err(ctx.err(
                        Some(v.span()),
                        f("stop"),
                        "stop must be later than start",
                        Some("a time > start"),
                    ));
                }
                Some(t)
            }
        };
        let start_jitter = match &fl.start_jitter {
            None => 0,
            Some(v) => ctx.q(v, &f("start_jitter"), duration, "a time >= 0")?,
        };
        let send_jitter = match &fl.send_jitter {
            None => DEFAULT_SEND_JITTER,
            Some(v) => ctx.q(v, &f("send_jitter"), duration, "a time >= 0 (0 = none)")?,
        };
        let count = match &fl.count {
            None => 1,
            Some(c) if *c.get_ref() >= 1 && *c.get_ref() <= 100_000 => *c.get_ref() as usize,
            Some(c) => {
                return Err(ctx.err(
                    Some(c.span()),
                    f("count"),
                    format!("count {} is out of range", c.get_ref()),
                    Some("an integer in 1..=100000"),
                ))
            }
        };
        let mss = match &fl.mss {
            None => DEFAULT_MSS,
            Some(v) => {
                let b = ctx.q(v, &f("mss"), bytes, "payload bytes in 64..=9000")?;
                if !(64..=9000).contains(&b) {
                    return Err(ctx.err(
                        Some(v.span()),
                        f("mss"),
                        format!("mss {b} is out of range"),
                        Some("payload bytes in 64..=9000"),
                    ));
                }
                b as u32
            }
        };
        let rcv_buffer = match &fl.rcv_buffer {
            None => DEFAULT_RCV_BUFFER,
            Some(v) => ctx.q(
                v,
                &f("rcv_buffer"),
                bytes,
                "a size >= 1 byte, e.g. \"4MiB\"",
            )?,
        };
        if rcv_buffer < u64::from(mss) * 2 {
            let sp = fl.rcv_buffer.as_ref().map(|v| v.span());
            return Err(ctx.err(
                sp,
                f("rcv_buffer"),
                "receive buffer must hold at least two segments",
                Some("a size >= 2 * mss"),
            ));
        }
        let delayed_ack = fl
            .delayed_ack
            .as_ref()
            .map(|b| *b.get_ref())
            .unwrap_or(false);
        for k in 0..count {
            let name = if count == 1 {
                fname.clone()
            } else {
                format!("{fname}-{k}")
            };
            flows.push(FlowSpec {
                name,
                kind,
                paths: path_idx.clone(),
                algorithm: algorithm.clone(),
                params: params.clone(),
                counting,
                scheduler,
                app,
                start,
                stop,
                start_jitter,
                send_jitter,
                mss,
                rcv_buffer,
                delayed_ack,
                rate: rate_spec.clone(),
            });
        }
    }
    if flows.is_empty() {
        return Err(ctx.err(None, "flows", "a scenario needs at least one flow", None));
    }
    Ok(Scenario {
        name,
        description: raw.description.unwrap_or_default(),
        origin: ctx.origin.to_string(),
        duration: dur,
        seeds,
        sample_interval,
        links,
        paths,
        flows,
    })
}

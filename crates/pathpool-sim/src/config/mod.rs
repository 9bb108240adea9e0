//! Scenario files: TOML in, a validated [`Scenario`] out, or a [`ConfigError`] that names the
//! file, line, column, field and allowed values. The format is documented in `SCENARIOS.md`.
//!
//! One pass, by section: `raw` is serde's view of the file (every value spanned), `check` turns
//! quantities into SI integers within their documented ranges, `network` validates links and
//! paths, `flows` the flows, `budget` estimates the work and memory of a run before it starts,
//! and `overrides` applies `--set FIELD=VALUE` to the parsed document before any of that.

// A ConfigError is built at most once per invalid file, never on a hot path; its size costs nothing.
#![allow(clippy::result_large_err)]

mod budget;
mod check;
mod flows;
mod network;
mod overrides;
mod raw;
pub mod schema;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use pathpool_cc::{Counting, Params};

use crate::net::link::{Buffer, GilbertElliott, Reorder};
use crate::time::Nanos;

pub use budget::{Estimate, Limits};
pub use check::{
    DEFAULT_BUFFER_PACKETS, DEFAULT_DEADLINE, DEFAULT_FEEDBACK_INTERVAL, DEFAULT_MSS,
    DEFAULT_RCV_BUFFER, DEFAULT_SEND_JITTER, LINUX_RCV_BUFFER, MAX_DELAY, MAX_FLOWS,
    MAX_OPTION_BYTES, MAX_SEEDS, MAX_SUBFLOWS, MAX_TIME,
};

/// How to read a scenario beyond its text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `FIELD=VALUE` assignments applied to the parsed document before validation (the CLI's
    /// `--set`), in order; see `SCENARIOS.md` ("Overrides").
    pub overrides: Vec<String>,
    /// Top-level tables that belong to the caller: taken out before validation and handed
    /// back untouched in [`Scenario::extensions`]. Any other unknown table is an error.
    pub extensions: Vec<String>,
    /// The labels a rate flow's `controller` may carry; `None` accepts any non-empty label.
    pub rate_controllers: Option<Vec<String>>,
}

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
    /// A paced, rate-based multipath sender (no window, no retransmission): `crate::rate`.
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
    /// The out-of-tree Linux MPTCP kernels' default (multipath-tcp.org v0.9x, what the papers'
    /// kernels ran): the subflow with the lowest smoothed RTT among those with room in cwnd,
    /// one segment at a time.
    MinRtt,
    /// Cycle through subflows with room.
    RoundRobin,
    /// Upstream Linux's default (`mptcp_subflow_get_send`, Linux 6.18): the lowest linger time
    /// (queued bytes over pacing rate), bursts of up to 65,428 bytes queued on the subflow,
    /// which keeps them until its window lets them out (`conn/sendq.rs`).
    Linux,
}

/// Send buffers (the `send_buffer` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SendBuffer {
    /// None: the application always has data ready and nothing bounds what is queued.
    #[default]
    Unlimited,
    /// Linux's: each subflow's grows as `tcp_sndbuf_expand` says and never shrinks; the
    /// connection's is `tcp_wmem[0]` plus its subflows'; memory is freed on DATA_ACK and the
    /// writer blocks when queued memory reaches the buffer (`conn/sendq.rs`).
    Linux,
}

/// How the application writes into its send buffer (the `writer` and `write_size` fields;
/// only with `send_buffer = "linux"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Writer {
    /// Blocking `send()` calls: the writer fills the buffer, then sleeps in
    /// `sk_stream_wait_memory` until the free space is at least half of what is queued.
    #[default]
    Blocking,
    /// A non-blocking writer driven by select/poll/epoll (iperf3, the test bed's sender): one
    /// `send()` of `chunk` bytes each time the socket polls writable (`sk_stream_is_writeable`),
    /// each call's data handed to the subflows before the next (`mptcp_sendmsg` ends in
    /// `__mptcp_push_pending`).
    Poll {
        /// Bytes per `send()` call.
        chunk: u64,
    },
}

/// When an MPTCP connection's further subflows start (the `joins` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Joins {
    /// Every subflow starts with the connection.
    #[default]
    Together,
    /// Linux 6.18: the in-kernel path manager opens the further subflows once the connection
    /// is fully established (the first subflow's first ACK with a DSS option back:
    /// `check_fully_established`, `mptcp_pm_fully_established`); each carries data once its
    /// MP_JOIN handshake has ended with the peer's fourth ACK (`mptcp_subflow_active`): two
    /// round trips of its own path.
    Linux,
    /// As `Linux`, for an application whose peer sends first (the test bed's receiver sends
    /// one byte before the sender writes): that byte's DSS option makes the connection fully
    /// established before the application starts, so the joins begin at its start.
    LinuxPeerFirst,
}

/// The connection-level receive window (the `receive_window` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReceiveWindow {
    /// `rcv_buffer` bytes from the data-level cumulative ACK, at all times.
    #[default]
    Fixed,
    /// Linux 6.18's autotuned window (`conn/rcvbuf.rs`): a buffer from `tcp_rmem[1]` up to
    /// `rcv_buffer`, grown once per round trip by what the application read
    /// (`mptcp_rcv_space_adjust`, `tcp_rcv_space_adjust`); the window offered is half of it
    /// less the payload held out of order.
    Linux,
}

/// How a connection's byte stream is cut into segments (the `segmentation` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Segmentation {
    /// Every segment full but a file's last: a write's unfinished segment waits for the next
    /// write.
    #[default]
    Whole,
    /// Linux 6.18 with `scheduler = "linux"`: the data a subflow takes ends where the written
    /// data ends, so a write's tail goes out short (`mptcp_sendmsg_frag`, net/mptcp/protocol.c),
    /// unless more data for the same subflow reaches that tail while it is still unsent (it
    /// then grows to a full segment: `mptcp_skb_can_collapse_to`); a short tail waits while an
    /// earlier short segment of its subflow is unacknowledged (Nagle with Minshall's check:
    /// `tcp_nagle_check`, net/ipv4/tcp_output.c). A subflow's burst ends after a whole data
    /// fragment (`__subflow_push_pending`). A TCP flow has no fragments: short only where the
    /// written data ends (`tcp_sendmsg` appends to the unsent tail skb).
    Linux,
}

/// When a TCP/MPTCP receiver ACKs (the `delayed_ack` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DelayedAck {
    /// `false`: an ACK for every segment (what the test bed runs with the route's `quickack 1`).
    #[default]
    Off,
    /// `true`: an ACK for every second in-order segment or 40 ms after the first unACKed one;
    /// out-of-order and hole-filling segments at once; no quick-ACK mode.
    Every2,
    /// `"linux"`: Linux's receiver (quick-ACK mode at the start, an ACK per more than one
    /// full segment, the adaptive ACK timeout `ato`), as `conn/receiver.rs` [`LinuxDelack`]
    /// describes.
    ///
    /// [`LinuxDelack`]: crate::conn::receiver::LinuxDelack
    Linux,
}

/// How a TCP/MPTCP sender detects and repairs losses (the `recovery` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Recovery {
    /// RFC 6675 SACK recovery: a segment is lost once DupThresh = 3 segments above it are
    /// SACKed, fast retransmit on entry, then send whenever pipe < cwnd; no tail loss probe.
    #[default]
    Rfc6675,
    /// What Linux >= 4.18 runs by default (`tcp_recovery = 1`, `tcp_early_retrans = 3`):
    /// RACK time-based loss detection and the tail loss probe (RFC 8985) instead of DupThresh,
    /// and proportional rate reduction (RFC 6937) during recovery (`src/conn/recovery.rs`).
    Linux,
}

/// Which data segments carry the PSH flag (the `push_flag` field), read by the receiver's
/// `delayed_ack = "linux"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PushFlag {
    /// No segment carries PSH; the receiver sees a pushed segment only where it is short.
    #[default]
    None,
    /// As Linux 6.18 sends: the new segments a (sub)flow sends in one pass leave in GSO packets
    /// of at most `tcp_tso_segs()` segments (`tcp_tso_autosize()`: about 1 ms of its pacing
    /// rate, at least `tcp_min_tso_segs` = 2), and `__tcp_transmit_skb()` forces PSH on every
    /// packet of more than one segment ("to expedite GRO flush at receiver"), so its last
    /// segment carries PSH; a lone segment does not (net/ipv4/tcp_output.c). The receiver marks
    /// a full segment with PSH pushed (`tcp_measure_rcv_mss()`).
    Linux,
}

/// How a (sub)flow's window is kept across reductions (the `window_arithmetic` field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WindowArithmetic {
    /// The papers' real-valued window: a reduction keeps the fraction of a segment that the
    /// algorithm's rule leaves (`w/2` of 9.7 segments is 4.85), and so does what grows from it.
    #[default]
    Real,
    /// Whole segments at every reduction, as Linux keeps them: `ca_ops->ssthresh()` returns
    /// whole segments (a `u32`), `tcp_init_cwnd_reduction()` and `tcp_enter_loss()` zero
    /// `snd_cwnd_cnt` (the progress towards the next segment), and the window that recovery
    /// ends with is that ssthresh (`tcp_end_cwnd_reduction()`; net/ipv4/tcp_input.c, Linux
    /// 6.18). Growth between reductions is unchanged: the real-valued window's fraction is
    /// Linux's `snd_cwnd_cnt / snd_cwnd` (`tcp_cong_avoid_ai()`, net/ipv4/tcp_cong.c), and a
    /// sender may have `floor(cwnd)` segments out in both readings.
    Linux,
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
    pub send_buffer: SendBuffer,
    pub writer: Writer,
    pub joins: Joins,
    pub segmentation: Segmentation,
    pub receive_window: ReceiveWindow,
    pub app: App,
    pub start: Nanos,
    pub stop: Option<Nanos>,
    /// Start is drawn uniformly from `[start, start + start_jitter]` (per-flow random stream).
    pub start_jitter: Nanos,
    /// Each data packet leaves the sending host after a random delay uniform in
    /// `[0, send_jitter]`, never overtaking the previous one (ns-2's `overhead_`): breaks the
    /// drop-tail phase effects of a perfectly deterministic network (Floyd & Jacobson 1991).
    pub send_jitter: Nanos,
    /// Payload bytes a segment could carry with timestamps as its only TCP option.
    pub mss: u32,
    /// TCP option bytes every data segment carries beyond the timestamps (0..=28; Linux MPTCP's
    /// DSS: 24). A segment carries at most `mss - option_bytes` payload bytes and is
    /// `payload + HEADER_BYTES + option_bytes` on the wire; see [`FlowSpec::seg_payload`].
    pub option_bytes: u32,
    pub rcv_buffer: u64,
    pub delayed_ack: DelayedAck,
    /// Linux's restart after idle (`tcp_slow_start_after_idle`, `tcp_cwnd_restart`).
    pub slow_start_after_idle: bool,
    /// Loss detection and recovery of the flow's (sub)flows.
    pub recovery: Recovery,
    /// Whether a reduction leaves a fraction of a segment in the window.
    pub window_arithmetic: WindowArithmetic,
    /// Which data segments carry PSH.
    pub push_flag: PushFlag,
    /// `Some` exactly for `kind = "rate"`.
    pub rate: Option<RateSpec>,
}

impl FlowSpec {
    /// Payload bytes of a full-size data segment: what the options leave of the MSS (Linux's
    /// `tcp_current_mss()` takes the options beyond the timestamps off `mss_cache` the same way).
    pub fn seg_payload(&self) -> u32 {
        self.mss - self.option_bytes
    }
}

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
    /// A label naming the external controller meant to drive the flow (`fixed` = none). The
    /// simulator only paces at the rates it is given; which labels exist is the caller's
    /// business ([`Options::rate_controllers`]).
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
    /// Index into the file's `[[flows]]` of each entry of `flows` (several with `count`).
    pub flow_origin: Vec<usize>,
    /// For each `[[flows]]` entry, the optional fields the file writes (defaults are filled
    /// in `flows`; this says which values were chosen rather than defaulted).
    pub flow_fields: Vec<Vec<&'static str>>,
    /// The top-level tables named in [`Options::extensions`], untouched: they belong to the
    /// caller (e.g. Python's `[reproduce]`), not to the simulator.
    pub extensions: BTreeMap<String, toml::Value>,
    /// The TOML text the scenario was validated from: the file's own text, or, when overrides
    /// were applied or extension tables removed, the merged document rendered anew. Validating
    /// it again gives this same scenario (with no options).
    pub text: String,
}

impl Scenario {
    /// Parse and validate scenario text; `origin` names it in error messages (usually the file).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Scenario, ConfigError> {
        Scenario::from_toml_str_with(text, origin, &Options::default())
    }

    /// Parse and validate scenario text with overrides, caller-owned tables and the caller's
    /// rate-controller labels. Resource limits are a separate step: [`Scenario::check_limits`].
    pub fn from_toml_str_with(
        text: &str,
        origin: &str,
        options: &Options,
    ) -> Result<Scenario, ConfigError> {
        let ctx = check::Ctx {
            text,
            origin,
            overrides: &options.overrides,
        };
        let mut root = toml::de::DeTable::parse(text)
            .map_err(|e| ctx.err(e.span(), "", e.message().trim().to_string(), None))?;
        overrides::apply(&ctx, &mut root, &options.overrides)?;
        let mut extensions = BTreeMap::new();
        for name in &options.extensions {
            if let Some(v) = overrides::take_table(&ctx, &mut root, name)? {
                extensions.insert(name.clone(), v);
            }
        }
        let rendered = !(options.overrides.is_empty() && extensions.is_empty());
        let merged = rendered.then(|| root.clone());
        let raw: raw::RawScenario =
            serde_path_to_error::deserialize(toml::de::Deserializer::from(root))
                .map_err(|e| check::from_de_error(&ctx, e))?;
        let mut sc = validate(&ctx, raw, options.rate_controllers.as_deref())?;
        if let Some(doc) = merged {
            sc.text = overrides::render(&ctx, &doc)?;
        }
        sc.extensions = extensions;
        Ok(sc)
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

/// A scenario name becomes a directory name (`results/NAME`) and a file-name stem, so it is a
/// plain slug: letters, digits, `.`, `_`, `-`, not starting with `.` (no `..`, no `/`, no NUL).
fn scenario_name(ctx: &check::Ctx, v: &toml::Spanned<String>) -> Result<String, ConfigError> {
    let allowed = schema::allowed::NAME;
    let name = v.get_ref().trim();
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        let message = if name.is_empty() {
            "must not be empty".to_string()
        } else {
            format!("{name:?} is not a safe name")
        };
        return Err(ctx.err(Some(v.span()), "name", message, Some(allowed)));
    }
    Ok(name.to_string())
}

fn validate(
    ctx: &check::Ctx,
    raw: raw::RawScenario,
    controllers: Option<&[String]>,
) -> Result<Scenario, ConfigError> {
    let name = scenario_name(ctx, &raw.name)?;
    let duration = ctx.time(
        &raw.duration,
        "duration",
        1,
        MAX_TIME,
        schema::allowed::DURATION,
    )?;
    let seeds = match &raw.seeds {
        None => vec![1],
        Some(s) => {
            let allowed = schema::allowed::SEEDS;
            let list = s.get_ref();
            if list.is_empty() || list.len() > MAX_SEEDS {
                return Err(ctx.err(
                    Some(s.span()),
                    "seeds",
                    format!("{} seeds listed", list.len()),
                    Some(allowed),
                ));
            }
            let mut seen = std::collections::HashSet::with_capacity(list.len());
            if let Some(d) = list.iter().find(|&&x| !seen.insert(x)) {
                return Err(ctx.err(
                    Some(s.span()),
                    "seeds",
                    format!("seed {d} is listed twice"),
                    Some(allowed),
                ));
            }
            list.clone()
        }
    };
    let sample_interval = match raw.metrics.as_ref().and_then(|m| m.interval.as_ref()) {
        None => 0,
        Some(v) => {
            let allowed = schema::allowed::METRICS_INTERVAL;
            let t = ctx.time(v, "metrics.interval", 0, MAX_TIME, allowed)?;
            if t != 0 && t < check::MIN_SAMPLE_INTERVAL {
                return Err(ctx.err(
                    Some(v.span()),
                    "metrics.interval",
                    "shorter than 1 us",
                    Some(allowed),
                ));
            }
            t
        }
    };
    let (links, link_names) = network::links(ctx, &raw.links)?;
    let (paths, path_names) = network::paths(ctx, &raw.paths, &links, &link_names)?;
    let (flows, flow_origin, flow_fields) =
        flows::flows(ctx, &raw.flows, &links, &paths, &path_names, controllers)?;
    network::packets_fit(ctx, &raw.links, &links, &paths, &flows, duration)?;
    Ok(Scenario {
        name,
        description: raw.description.unwrap_or_default(),
        origin: ctx.origin.to_string(),
        duration,
        seeds,
        sample_interval,
        links,
        paths,
        flows,
        flow_origin,
        flow_fields,
        extensions: BTreeMap::new(),
        text: ctx.text.to_string(),
    })
}

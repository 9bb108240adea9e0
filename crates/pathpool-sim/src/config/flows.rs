//! `[[flows]]`: window-based (tcp, mptcp) and paced (rate) flows, `count` expanded.

use std::collections::HashMap;
use std::ops::Range;

use pathpool_cc::{CcError, Counting, Params};

use crate::time::Nanos;

use super::check::{
    bytes_in, param_value, Ctx, DEFAULT_DEADLINE, DEFAULT_FEEDBACK_INTERVAL, DEFAULT_MSS,
    DEFAULT_RCV_BUFFER, DEFAULT_SEND_JITTER, DEFAULT_WRITE_SIZE, LINUX_RCV_BUFFER, MAX_DELAY,
    MAX_FILE_BYTES, MAX_FLOWS, MAX_OPTION_BYTES, MAX_RCV_BUFFER, MAX_SUBFLOWS, MAX_TIME,
    MAX_WRITE_SIZE,
};
use super::network::Names;
use super::raw::{Quantity, RawFlow};
use super::schema::allowed as a;
use super::{
    AckRoute, App, ConfigError, DelayedAck, FlowKind, FlowSpec, Joins, LinkSpec, PathSpec,
    PushFlag, RateSpec, ReceiveWindow, Recovery, Scheduler, Segmentation, SendBuffer,
    WindowArithmetic, Writer,
};
use toml::Spanned;

/// Every flow, `count` expanded; for each the index of its `[[flows]]` entry; for each entry
/// the optional fields it writes.
///
/// Names are unique after expansion: a flow `x` with `count = 2` and a flow named `x-0` would
/// give two result rows named `x-0`, so that is refused (linear: one hash set of names).
pub(super) fn flows(
    ctx: &Ctx,
    raw: &[RawFlow],
    links: &[LinkSpec],
    paths: &[PathSpec],
    path_names: &Names,
    controllers: Option<&[String]>,
) -> Result<Flows, ConfigError> {
    let mut out: Vec<FlowSpec> = Vec::new();
    let mut fields = Vec::with_capacity(raw.len());
    let mut origin: Vec<usize> = Vec::new();
    // Expanded name -> the [[flows]] entry it came from.
    let mut taken: HashMap<String, usize> = HashMap::new();
    for (i, fl) in raw.iter().enumerate() {
        let field = format!("flows[{i}].name");
        let name = ctx.name(&fl.name, &field)?;
        if let Some(&j) = taken.get(&name) {
            let message = if raw_name(&raw[j]) == name {
                format!("duplicate flow name {name:?}")
            } else {
                format!("flow name {name:?} is also the name of one of the `count` copies of flows[{j}]")
            };
            return Err(ctx.err(
                Some(fl.name.span()),
                field,
                message,
                Some("a name unique among flows (with count = n, flows are named NAME-0 .. NAME-(n-1))"),
            ));
        }
        let (spec, count) = flow(ctx, i, fl, name, links, paths, path_names, controllers)?;
        fields.push(written(fl));
        if out.len() + count > MAX_FLOWS {
            let sp = fl.count.as_ref().map_or(fl.name.span(), |c| c.span());
            return Err(ctx.err(
                Some(sp),
                format!("flows[{i}].count"),
                format!("more than {MAX_FLOWS} flows in all (count included)"),
                Some(&format!(
                    "at most {MAX_FLOWS} flows after count is expanded"
                )),
            ));
        }
        for k in 0..count {
            let mut f = spec.clone();
            if count > 1 {
                f.name = format!("{}-{k}", spec.name);
            }
            if let Some(&j) = taken.get(&f.name) {
                return Err(ctx.err(
                    Some(fl.count.as_ref().map_or(fl.name.span(), |c| c.span())),
                    format!("flows[{i}].count"),
                    format!("copy {:?} has the name of flows[{j}]", f.name),
                    Some("a name unique among flows (with count = n, flows are named NAME-0 .. NAME-(n-1))"),
                ));
            }
            taken.insert(f.name.clone(), i);
            out.push(f);
            origin.push(i);
        }
        // The base name itself stays taken (a later flow `x` beside `x` with count = 2).
        taken.entry(spec.name.clone()).or_insert(i);
    }
    if out.is_empty() {
        return Err(ctx.err(None, "flows", "a scenario needs at least one flow", None));
    }
    Ok((out, origin, fields))
}

/// Flows, their entry indices and each entry's written fields (see [`flows`]).
type Flows = (Vec<FlowSpec>, Vec<usize>, Vec<Vec<&'static str>>);

/// The optional fields a `[[flows]]` entry writes, in file-format order: for callers to whom
/// "written" differs from "left at its default" (the Linux test bed's ACK policy).
fn written(fl: &RawFlow) -> Vec<&'static str> {
    let present: [(&'static str, bool); 34] = [
        ("path", fl.path.is_some()),
        ("paths", fl.paths.is_some()),
        ("algorithm", fl.algorithm.is_some()),
        ("params", fl.params.is_some()),
        ("counting", fl.counting.is_some()),
        ("scheduler", fl.scheduler.is_some()),
        ("send_buffer", fl.send_buffer.is_some()),
        ("writer", fl.writer.is_some()),
        ("write_size", fl.write_size.is_some()),
        ("joins", fl.joins.is_some()),
        ("segmentation", fl.segmentation.is_some()),
        ("receive_window", fl.receive_window.is_some()),
        ("reading", fl.reading.is_some()),
        ("app", fl.app.is_some()),
        ("size", fl.size.is_some()),
        ("start", fl.start.is_some()),
        ("stop", fl.stop.is_some()),
        ("start_jitter", fl.start_jitter.is_some()),
        ("send_jitter", fl.send_jitter.is_some()),
        ("count", fl.count.is_some()),
        ("mss", fl.mss.is_some()),
        ("option_bytes", fl.option_bytes.is_some()),
        ("rcv_buffer", fl.rcv_buffer.is_some()),
        ("delayed_ack", fl.delayed_ack.is_some()),
        ("slow_start_after_idle", fl.slow_start_after_idle.is_some()),
        ("recovery", fl.recovery.is_some()),
        ("window_arithmetic", fl.window_arithmetic.is_some()),
        ("push_flag", fl.push_flag.is_some()),
        ("rates", fl.rates.is_some()),
        ("block_length", fl.block_length.is_some()),
        ("source_per_block", fl.source_per_block.is_some()),
        ("deadline", fl.deadline.is_some()),
        ("feedback_interval", fl.feedback_interval.is_some()),
        ("controller", fl.controller.is_some()),
    ];
    present.iter().filter(|p| p.1).map(|p| p.0).collect()
}

fn raw_name(fl: &RawFlow) -> String {
    fl.name.get_ref().trim().to_string()
}

/// One `[[flows]]` entry (before `count` expansion) and its count, one section of fields at a
/// time (the first error found is the one reported).
#[allow(clippy::too_many_arguments)]
fn flow(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    name: String,
    links: &[LinkSpec],
    paths: &[PathSpec],
    path_names: &Names,
    controllers: Option<&[String]>,
) -> Result<(FlowSpec, usize), ConfigError> {
    let kind = flow_kind(ctx, i, fl)?;
    check_kind_fields(ctx, fl, kind, i)?;
    let path_idx = flow_paths(ctx, i, fl, kind, path_names)?;
    let (algorithm, params, counting, rate_spec) = if kind == FlowKind::Rate {
        let algorithm = fl
            .controller
            .as_ref()
            .map(|a| a.get_ref().clone())
            .unwrap_or_else(|| "fixed".to_string());
        let spec = rate_spec(ctx, fl, i, path_idx.len(), controllers)?;
        fifo_paths(ctx, i, fl, &path_idx, links, paths)?;
        // A rate flow has no congestion controller (and `check_kind_fields` refused its
        // `params` and `counting`).
        (algorithm, Params::new(), Counting::default(), Some(spec))
    } else {
        let (algorithm, params, counting) = congestion_control(ctx, i, fl, path_idx.len())?;
        (algorithm, params, counting, None)
    };
    let linux = reading(ctx, i, fl)?;
    let scheduler = scheduler(ctx, i, fl, linux)?;
    let send_buffer = send_buffer(ctx, i, fl, linux)?;
    let writer = writer(ctx, i, fl, send_buffer)?;
    let joins = joins(ctx, i, fl, linux)?;
    let segmentation = segmentation(ctx, i, fl, linux, scheduler)?;
    let app = app(ctx, i, fl)?;
    let (start, stop, start_jitter, send_jitter) = times(ctx, i, fl)?;
    let count = count(ctx, i, fl)?;
    let receive_window = receive_window(ctx, i, fl, linux)?;
    let (mss, option_bytes, rcv_buffer) = segments(ctx, i, fl, receive_window)?;
    let delayed_ack = delayed_ack(ctx, i, fl, linux)?;
    let recovery = recovery(ctx, i, fl, linux)?;
    let window_arithmetic = window_arithmetic(ctx, i, fl, linux)?;
    let push_flag = push_flag(ctx, i, fl, linux, scheduler)?;
    Ok((
        FlowSpec {
            name,
            kind,
            paths: path_idx,
            algorithm,
            params,
            counting,
            scheduler,
            send_buffer,
            writer,
            joins,
            segmentation,
            receive_window,
            app,
            start,
            stop,
            start_jitter,
            send_jitter,
            mss,
            option_bytes,
            rcv_buffer,
            delayed_ack,
            slow_start_after_idle: fl
                .slow_start_after_idle
                .as_ref()
                .map_or(linux, |b| *b.get_ref()),
            recovery,
            window_arithmetic,
            push_flag,
            rate: rate_spec,
        },
        count,
    ))
}

fn field(i: usize, k: &str) -> String {
    format!("flows[{i}].{k}")
}

/// `kind`.
fn flow_kind(ctx: &Ctx, i: usize, fl: &RawFlow) -> Result<FlowKind, ConfigError> {
    let f = |k: &str| field(i, k);
    Ok(match fl.kind.get_ref().as_str() {
        "tcp" => FlowKind::Tcp,
        "mptcp" => FlowKind::Mptcp,
        "rate" => FlowKind::Rate,
        other => {
            return Err(ctx.err(
                Some(fl.kind.span()),
                f("kind"),
                format!("unknown flow kind {other:?}"),
                Some(a::KIND),
            ))
        }
    })
}

/// `path` or `paths`: the indices of the flow's paths.
fn flow_paths(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    kind: FlowKind,
    path_names: &Names,
) -> Result<Vec<usize>, ConfigError> {
    let f = |k: &str| field(i, k);
    Ok(match (kind, &fl.path, &fl.paths) {
        (_, Some(_), Some(ps)) => {
            return Err(ctx.err(
                Some(ps.span()),
                f("paths"),
                "give either path or paths, not both",
                None,
            ));
        }
        (_, Some(p), None) => vec![path_names.find(ctx, p, f("path"), "path")?],
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
                    Some(path_names.list()),
                ));
            }
            if ps.get_ref().len() > MAX_SUBFLOWS {
                return Err(ctx.err(
                    Some(ps.span()),
                    f("paths"),
                    format!(
                        "{} paths: a connection has at most {} subflows",
                        ps.get_ref().len(),
                        MAX_SUBFLOWS
                    ),
                    Some("1 to 255 path names"),
                ));
            }
            let mut v = Vec::new();
            for (j, s) in ps.get_ref().iter().enumerate() {
                v.push(path_names.find(ctx, s, format!("flows[{i}].paths[{j}]"), "path")?);
            }
            v
        }
        (_, None, None) => {
            return Err(ctx.err(
                Some(fl.name.span()),
                f("path"),
                "a flow needs `path` (tcp) or `paths` (mptcp)",
                Some(path_names.list()),
            ));
        }
    })
}

/// A rate flow's receiver infers losses from sequence gaps, which needs FIFO paths: none of
/// its paths (data or ACK route) may cross a link that reorders.
fn fifo_paths(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    path_idx: &[usize],
    links: &[LinkSpec],
    paths: &[PathSpec],
) -> Result<(), ConfigError> {
    let f = |k: &str| field(i, k);
    for &p in path_idx {
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
    Ok(())
}

/// `algorithm`, `params` and `counting` of a window-based flow: the controller must build
/// with these parameters for this many subflows.
fn congestion_control(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    n_paths: usize,
) -> Result<(String, Params, Counting), ConfigError> {
    let f = |k: &str| field(i, k);
    let algorithm = fl
        .algorithm
        .as_ref()
        .map(|a| a.get_ref().clone())
        .unwrap_or_else(|| "reno".to_string());
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
    if let Err(e) = pathpool_cc::build(&algorithm, &params, n_paths) {
        return Err(cc_error(ctx, i, fl, e));
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
    Ok((algorithm, params, counting))
}

/// The error of a controller that does not build, on the field it names.
fn cc_error(ctx: &Ctx, i: usize, fl: &RawFlow, e: CcError) -> ConfigError {
    let f = |k: &str| field(i, k);
    let alg_span = fl
        .algorithm
        .as_ref()
        .map(|a| a.span())
        .or_else(|| Some(fl.name.span()));
    let par_span = fl.params.as_ref().map(|p| p.span()).or(alg_span.clone());
    match e {
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
    }
}

/// A string field with a fixed set of values: `default` when it is not written, the value
/// named otherwise; anything else is refused with the allowed values.
fn choice<T: Copy>(
    ctx: &Ctx,
    i: usize,
    name: &str,
    v: &Option<Spanned<String>>,
    default: T,
    values: &[(&str, T)],
    allowed: &'static str,
) -> Result<T, ConfigError> {
    let Some(v) = v else { return Ok(default) };
    let got = v.get_ref().as_str();
    values
        .iter()
        .find(|(n, _)| *n == got)
        .map(|&(_, t)| t)
        .ok_or_else(|| {
            ctx.err(
                Some(v.span()),
                field(i, name),
                format!("unknown {name} {got:?}"),
                Some(allowed),
            )
        })
}

/// `scheduler`.
fn scheduler(ctx: &Ctx, i: usize, fl: &RawFlow, linux: bool) -> Result<Scheduler, ConfigError> {
    use Scheduler::*;
    let default = if linux { Linux } else { MinRtt };
    let values = [
        ("minrtt", MinRtt),
        ("roundrobin", RoundRobin),
        ("linux", Linux),
    ];
    choice(
        ctx,
        i,
        "scheduler",
        &fl.scheduler,
        default,
        &values,
        a::SCHEDULER,
    )
}

/// `reading`: is it `"linux"`? (It changes the defaults of the fields it names.)
fn reading(ctx: &Ctx, i: usize, fl: &RawFlow) -> Result<bool, ConfigError> {
    let values = [("default", false), ("linux", true)];
    choice(ctx, i, "reading", &fl.reading, false, &values, a::READING)
}

/// `send_buffer`.
fn send_buffer(ctx: &Ctx, i: usize, fl: &RawFlow, linux: bool) -> Result<SendBuffer, ConfigError> {
    use SendBuffer::*;
    let default = if linux { Linux } else { Unlimited };
    let values = [("unlimited", Unlimited), ("linux", Linux)];
    choice(
        ctx,
        i,
        "send_buffer",
        &fl.send_buffer,
        default,
        &values,
        a::SEND_BUFFER,
    )
}

/// `writer` and `write_size`: a poll-driven writer needs Linux's send buffers (without them
/// nothing bounds what is queued and the two writers are the same).
fn writer(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    send_buffer: SendBuffer,
) -> Result<Writer, ConfigError> {
    let f = |k: &str| field(i, k);
    let poll = match fl.writer.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
        None | Some(("blocking", _)) => false,
        Some(("poll", sp)) => {
            if send_buffer != SendBuffer::Linux {
                return Err(ctx.err(
                    Some(sp),
                    f("writer"),
                    "writer = \"poll\" needs send_buffer = \"linux\" (or reading = \"linux\"): without send buffers nothing is ever queued",
                    Some(a::WRITER),
                ));
            }
            true
        }
        Some((other, sp)) => {
            return Err(ctx.err(
                Some(sp),
                f("writer"),
                format!("unknown writer {other:?}"),
                Some(a::WRITER),
            ))
        }
    };
    let chunk = match &fl.write_size {
        None => DEFAULT_WRITE_SIZE,
        Some(v) if !poll => {
            return Err(ctx.err(
                Some(v.span()),
                f("write_size"),
                "write_size applies only to writer = \"poll\"",
                Some(a::WRITE_SIZE),
            ))
        }
        Some(v) => ctx.q(
            v,
            &f("write_size"),
            |q| bytes_in(q, 1, MAX_WRITE_SIZE),
            a::WRITE_SIZE,
        )?,
    };
    Ok(if poll {
        Writer::Poll { chunk }
    } else {
        Writer::Blocking
    })
}

/// `app` and `size`.
fn app(ctx: &Ctx, i: usize, fl: &RawFlow) -> Result<App, ConfigError> {
    let f = |k: &str| field(i, k);
    Ok(
        match fl.app.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
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
                Some(sz) => {
                    App::File(ctx.q(sz, &f("size"), |q| bytes_in(q, 1, MAX_FILE_BYTES), a::SIZE)?)
                }
            },
            Some((other, sp)) => {
                return Err(ctx.err(
                    Some(sp),
                    f("app"),
                    format!("unknown app {other:?}"),
                    Some(a::APP),
                ))
            }
        },
    )
}

/// `start`, `stop`, `start_jitter` and `send_jitter`.
fn times(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
) -> Result<(Nanos, Option<Nanos>, Nanos, Nanos), ConfigError> {
    let f = |k: &str| field(i, k);
    let start = match &fl.start {
        None => 0,
        Some(v) => ctx.time(v, &f("start"), 0, MAX_TIME, a::START)?,
    };
    let stop = match &fl.stop {
        None => None,
        Some(v) => {
            let t = ctx.time(v, &f("stop"), 0, MAX_TIME, a::STOP)?;
            if t <= start {
                return Err(ctx.err(
                    Some(v.span()),
                    f("stop"),
                    "stop must be later than start",
                    Some(a::STOP),
                ));
            }
            Some(t)
        }
    };
    let start_jitter = match &fl.start_jitter {
        None => 0,
        Some(v) => ctx.time(v, &f("start_jitter"), 0, MAX_DELAY, a::START_JITTER)?,
    };
    let send_jitter = match &fl.send_jitter {
        None => DEFAULT_SEND_JITTER,
        Some(v) => ctx.time(v, &f("send_jitter"), 0, MAX_DELAY, a::SEND_JITTER)?,
    };
    Ok((start, stop, start_jitter, send_jitter))
}

/// `count`.
fn count(ctx: &Ctx, i: usize, fl: &RawFlow) -> Result<usize, ConfigError> {
    let f = |k: &str| field(i, k);
    Ok(match &fl.count {
        None => 1,
        Some(c) if *c.get_ref() >= 1 && *c.get_ref() <= 100_000 => *c.get_ref() as usize,
        Some(c) => {
            return Err(ctx.err(
                Some(c.span()),
                f("count"),
                format!("count {} is out of range", c.get_ref()),
                Some(a::COUNT),
            ))
        }
    })
}

/// `mss`, `option_bytes` and `rcv_buffer` (whose default follows `receive_window`).
fn segments(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    receive_window: ReceiveWindow,
) -> Result<(u32, u32, u64), ConfigError> {
    let f = |k: &str| field(i, k);
    let mss = match &fl.mss {
        None => DEFAULT_MSS,
        Some(v) => ctx.q(v, &f("mss"), |q| bytes_in(q, 64, 9000), a::MSS)? as u32,
    };
    // The payload a segment carries is what the options leave of the MSS; it keeps mss's own
    // floor of 64 bytes, so a segment is never mostly header.
    let option_bytes = match &fl.option_bytes {
        None => 0,
        Some(v) => {
            let o = ctx.q(
                v,
                &f("option_bytes"),
                |q| bytes_in(q, 0, MAX_OPTION_BYTES),
                a::OPTION_BYTES,
            )? as u32;
            if mss - o < 64 {
                return Err(ctx.err(
                    Some(v.span()),
                    f("option_bytes"),
                    format!("mss {mss} less option_bytes {o} leaves under 64 payload bytes"),
                    Some(a::OPTION_BYTES),
                ));
            }
            o
        }
    };
    let rcv_buffer = match &fl.rcv_buffer {
        None if receive_window == ReceiveWindow::Linux => LINUX_RCV_BUFFER,
        None => DEFAULT_RCV_BUFFER,
        Some(v) => ctx.q(
            v,
            &f("rcv_buffer"),
            |q| bytes_in(q, 1, MAX_RCV_BUFFER),
            a::RCV_BUFFER,
        )?,
    };
    if rcv_buffer < u64::from(mss) * 2 {
        let sp = fl.rcv_buffer.as_ref().map(|v| v.span());
        return Err(ctx.err(
            sp,
            f("rcv_buffer"),
            "receive buffer must hold at least two segments",
            Some(a::RCV_BUFFER),
        ));
    }
    Ok((mss, option_bytes, rcv_buffer))
}

/// `delayed_ack`: a boolean (the simulator's own two policies) or `"linux"`.
fn delayed_ack(ctx: &Ctx, i: usize, fl: &RawFlow, linux: bool) -> Result<DelayedAck, ConfigError> {
    let Some(v) = fl.delayed_ack.as_ref() else {
        return Ok(if linux {
            DelayedAck::Linux
        } else {
            DelayedAck::Off
        });
    };
    match v.get_ref() {
        toml::Value::Boolean(false) => Ok(DelayedAck::Off),
        toml::Value::Boolean(true) => Ok(DelayedAck::Every2),
        toml::Value::String(s) if s == "linux" => Ok(DelayedAck::Linux),
        other => Err(ctx.err(
            Some(v.span()),
            field(i, "delayed_ack"),
            match other {
                toml::Value::String(s) => format!("unknown delayed_ack {s:?}"),
                _ => format!("expected a boolean or a string, found {}", other.type_str()),
            },
            Some(a::DELAYED_ACK),
        )),
    }
}

/// `joins`.
fn joins(ctx: &Ctx, i: usize, fl: &RawFlow, linux: bool) -> Result<Joins, ConfigError> {
    use Joins::*;
    let default = if linux { Linux } else { Together };
    let values = [
        ("together", Together),
        ("linux", Linux),
        ("linux_peer_first", LinuxPeerFirst),
    ];
    choice(ctx, i, "joins", &fl.joins, default, &values, a::JOINS)
}

/// `segmentation`: `"linux"` needs Linux's scheduler (a subflow's own queue of unsent data is
/// where a short tail waits and grows).
fn segmentation(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    linux: bool,
    scheduler: Scheduler,
) -> Result<Segmentation, ConfigError> {
    use Segmentation::*;
    let default = if linux && scheduler == Scheduler::Linux {
        Linux
    } else {
        Whole
    };
    let values = [("whole", Whole), ("linux", Linux)];
    let s = choice(
        ctx,
        i,
        "segmentation",
        &fl.segmentation,
        default,
        &values,
        a::SEGMENTATION,
    )?;
    if s == Linux && scheduler != Scheduler::Linux {
        return Err(ctx.err(
            fl.segmentation.as_ref().map(|v| v.span()),
            field(i, "segmentation"),
            "segmentation = \"linux\" needs scheduler = \"linux\" (or reading = \"linux\"): a short tail waits and grows in a subflow's own queue",
            Some(a::SEGMENTATION),
        ));
    }
    Ok(s)
}

/// `receive_window`.
fn receive_window(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    linux: bool,
) -> Result<ReceiveWindow, ConfigError> {
    use ReceiveWindow::*;
    let default = if linux { Linux } else { Fixed };
    let values = [("fixed", Fixed), ("linux", Linux)];
    choice(
        ctx,
        i,
        "receive_window",
        &fl.receive_window,
        default,
        &values,
        a::RECEIVE_WINDOW,
    )
}

/// `recovery`.
fn recovery(ctx: &Ctx, i: usize, fl: &RawFlow, linux: bool) -> Result<Recovery, ConfigError> {
    use Recovery::*;
    let default = if linux { Linux } else { Rfc6675 };
    let values = [("rfc6675", Rfc6675), ("linux", Linux)];
    choice(
        ctx,
        i,
        "recovery",
        &fl.recovery,
        default,
        &values,
        a::RECOVERY,
    )
}

fn window_arithmetic(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    linux: bool,
) -> Result<WindowArithmetic, ConfigError> {
    use WindowArithmetic::*;
    let default = if linux { Linux } else { Real };
    let values = [("real", Real), ("linux", Linux)];
    choice(
        ctx,
        i,
        "window_arithmetic",
        &fl.window_arithmetic,
        default,
        &values,
        a::WINDOW_ARITHMETIC,
    )
}

/// `push_flag`: Linux's PSH marks need Linux's send path, where a subflow sends its own queue
/// in passes (the other schedulers hand out one segment at a time across subflows).
fn push_flag(
    ctx: &Ctx,
    i: usize,
    fl: &RawFlow,
    linux: bool,
    scheduler: Scheduler,
) -> Result<PushFlag, ConfigError> {
    use PushFlag::*;
    let default = if linux && scheduler == Scheduler::Linux {
        Linux
    } else {
        None
    };
    let values = [("none", None), ("linux", Linux)];
    let p = choice(
        ctx,
        i,
        "push_flag",
        &fl.push_flag,
        default,
        &values,
        a::PUSH_FLAG,
    )?;
    if p == Linux && scheduler != Scheduler::Linux {
        return Err(ctx.err(
            fl.push_flag.as_ref().map(|v| v.span()),
            field(i, "push_flag"),
            "push_flag = \"linux\" needs scheduler = \"linux\" (or reading = \"linux\"): PSH marks the GSO packets of a subflow's sending pass",
            Some(a::PUSH_FLAG),
        ));
    }
    Ok(p)
}

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
    let window_only: [(&str, Option<Range<usize>>); 19] = [
        ("algorithm", fl.algorithm.as_ref().map(|v| v.span())),
        ("params", fl.params.as_ref().map(|v| v.span())),
        ("counting", fl.counting.as_ref().map(|v| v.span())),
        ("scheduler", fl.scheduler.as_ref().map(|v| v.span())),
        ("send_buffer", fl.send_buffer.as_ref().map(|v| v.span())),
        ("writer", fl.writer.as_ref().map(|v| v.span())),
        ("write_size", fl.write_size.as_ref().map(|v| v.span())),
        ("joins", fl.joins.as_ref().map(|v| v.span())),
        ("segmentation", fl.segmentation.as_ref().map(|v| v.span())),
        (
            "receive_window",
            fl.receive_window.as_ref().map(|v| v.span()),
        ),
        ("reading", fl.reading.as_ref().map(|v| v.span())),
        ("size", fl.size.as_ref().map(|v| v.span())),
        ("option_bytes", fl.option_bytes.as_ref().map(|v| v.span())),
        ("rcv_buffer", fl.rcv_buffer.as_ref().map(|v| v.span())),
        ("delayed_ack", fl.delayed_ack.as_ref().map(|v| v.span())),
        (
            "slow_start_after_idle",
            fl.slow_start_after_idle.as_ref().map(|v| v.span()),
        ),
        ("recovery", fl.recovery.as_ref().map(|v| v.span())),
        (
            "window_arithmetic",
            fl.window_arithmetic.as_ref().map(|v| v.span()),
        ),
        ("push_flag", fl.push_flag.as_ref().map(|v| v.span())),
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
fn rate_spec(
    ctx: &Ctx,
    fl: &RawFlow,
    i: usize,
    n_paths: usize,
    controllers: Option<&[String]>,
) -> Result<RateSpec, ConfigError> {
    let f = |k: &str| format!("flows[{i}].{k}");
    let rates_allowed = a::RATES;
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
                        Quantity::Int(n) => Ok(*n as f64),
                        Quantity::Float(x) => Ok(*x),
                        Quantity::Text(t) => Err(format!("{t:?} is not a number of packets/s")),
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
                Some(a::BLOCK_LENGTH),
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
                Some(a::SOURCE_PER_BLOCK),
            ))
        }
    };
    let deadline = match &fl.deadline {
        None => DEFAULT_DEADLINE,
        Some(v) => ctx.time(v, &f("deadline"), 1, MAX_DELAY, a::DEADLINE)?,
    };
    let feedback_interval = match &fl.feedback_interval {
        None => DEFAULT_FEEDBACK_INTERVAL,
        Some(v) => ctx.time(
            v,
            &f("feedback_interval"),
            1_000_000,
            MAX_TIME,
            a::FEEDBACK_INTERVAL,
        )?,
    };
    let controller = match &fl.controller {
        None => "fixed".to_string(),
        Some(c) => {
            let label = c.get_ref();
            let known = match controllers {
                None => !label.trim().is_empty() && !label.chars().any(char::is_control),
                Some(list) => list.iter().any(|k| k == label),
            };
            if !known {
                return Err(ctx.err(
                    Some(c.span()),
                    f("controller"),
                    format!("unknown rate controller {label:?}"),
                    Some(&controllers.map_or("a non-empty label".to_string(), |l| l.join(", "))),
                ));
            }
            label.clone()
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

//! Quantities as written -> SI integers within their documented ranges, and located errors.
//!
//! Every bound here is a row of `SCENARIOS.md` ("Ranges"). Times are bounded so that no sum
//! the simulator forms (start + jitter + a path's delays + RTO backoff) can come near the
//! u64-nanosecond limit: `MAX_TIME` + `MAX_FLOWS`-independent terms of at most `MAX_DELAY`
//! each, over at most `MAX_LINKS` links, stays below 2^64 ns (1.8e10 s) by a factor of 1000.

use std::ops::Range;

use pathpool_cc::ParamValue;
use toml::Spanned;

use super::raw::Quantity;
use super::ConfigError;
use crate::net::link::Buffer;
use crate::time::Nanos;
use crate::units;

pub const DEFAULT_MSS: u32 = 1448;
/// Most TCP option bytes a data segment carries beyond the timestamps: the 40 bytes of option
/// space (RFC 9293 Section 3.1) less the 12 of the timestamp option, which
/// [`crate::net::packet::HEADER_BYTES`] already has.
pub const MAX_OPTION_BYTES: u64 = 28;
pub const DEFAULT_RCV_BUFFER: u64 = 4 * 1024 * 1024;
/// Default `rcv_buffer` of `receive_window = "linux"`: `tcp_rmem[2]` as Linux 6.18 sets it on a
/// machine with memory to spare (the test bed's kernel), bytes.
pub const LINUX_RCV_BUFFER: u64 = 32 * 1024 * 1024;
pub const DEFAULT_BUFFER_PACKETS: u32 = 100;
/// Default host send jitter: 0.5 ms, about one service time of a 20 Mb/s bottleneck.
pub const DEFAULT_SEND_JITTER: Nanos = 500_000;
/// A rate flow's default deadline (the live stream of Pluntke & Rio 2011).
pub const DEFAULT_DEADLINE: Nanos = 300_000_000;
/// A rate flow's default report interval.
pub const DEFAULT_FEEDBACK_INTERVAL: Nanos = 1_000_000_000;

/// Longest run and latest start/stop: 10^6 s (11.6 days of simulated time).
pub const MAX_TIME: Nanos = 1_000_000 * 1_000_000_000;
/// Longest delay of any kind (propagation, ACK return, reordering, jitter, deadline): 1000 s.
pub const MAX_DELAY: Nanos = 1000 * 1_000_000_000;
/// Most links in a scenario (each path crosses each at most once per direction).
pub const MAX_LINKS: usize = 10_000;
/// Most flows after `count` is expanded.
/// Most subflows (paths) of one connection. (Linux MPTCP allows 8 by default,
/// `MPTCP_PM_ADDR_MAX`.) The data-level receiver keeps the subflow that carried each held
/// segment in a byte, with `u8::MAX` for a free slot, so 255 at most.
pub const MAX_SUBFLOWS: usize = 255;
pub const MAX_FLOWS: usize = 100_000;
/// Most seeds a scenario may list.
pub const MAX_SEEDS: usize = 100_000;
/// Fastest link: 1 Tbit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;
/// Largest file (`app = "file"`): 10^12 bytes.
pub const MAX_FILE_BYTES: u64 = 1_000_000_000_000;
/// Largest link buffer: 10^6 packets, or 1.5 * 10^9 bytes.
pub const MAX_BUFFER_PACKETS: u64 = 1_000_000;
pub const MAX_BUFFER_BYTES: u64 = 1_500_000_000;
/// A poll-driven writer's bytes per `send()` call by default: the test bed's sender's 64 KiB.
pub const DEFAULT_WRITE_SIZE: u64 = 64 * 1024;
/// Largest `write_size`: 64 MiB (far beyond any send buffer, which `tcp_wmem[2]` caps at 4 MiB).
pub const MAX_WRITE_SIZE: u64 = 64 << 20;
/// Largest receive buffer: 1 GiB.
pub const MAX_RCV_BUFFER: u64 = 1 << 30;
/// Shortest non-zero metrics interval: 1 us (the memory budget usually binds first).
pub const MIN_SAMPLE_INTERVAL: Nanos = 1_000;

pub(super) struct Ctx<'a> {
    pub text: &'a str,
    pub origin: &'a str,
    /// `--set` assignments; a span starting past the end of `text` points at one of them.
    pub overrides: &'a [String],
}

impl Ctx<'_> {
    /// The span that stands for override `k` (past the end of the text: no line in the file).
    pub fn override_span(text_len: usize, k: usize) -> Range<usize> {
        let at = text_len + 1 + k;
        at..at + 1
    }

    pub fn err(
        &self,
        span: Option<Range<usize>>,
        field: impl Into<String>,
        message: impl Into<String>,
        allowed: Option<&str>,
    ) -> ConfigError {
        let mut origin = self.origin.to_string();
        let (mut line, mut column) = (None, None);
        if let Some(r) = span {
            if r.start > self.text.len() {
                // A value that came from an override: name the override, not a line.
                let k = r.start - self.text.len() - 1;
                if let Some(o) = self.overrides.get(k) {
                    origin = format!("{origin}: --set {o}");
                }
            } else {
                let before = &self.text[..r.start];
                line = Some(before.matches('\n').count() + 1);
                column = Some(before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1);
            }
        }
        ConfigError {
            origin,
            line,
            column,
            field: field.into(),
            message: message.into(),
            allowed: allowed.map(str::to_string),
        }
    }

    /// Convert a quantity with `parse`, locating any complaint at the value.
    pub fn q<T>(
        &self,
        v: &Spanned<Quantity>,
        field: &str,
        parse: impl Fn(&Quantity) -> Result<T, String>,
        allowed: &str,
    ) -> Result<T, ConfigError> {
        parse(v.get_ref()).map_err(|m| self.err(Some(v.span()), field, m, Some(allowed)))
    }

    /// A time in `[min, max]` nanoseconds (rounded to the nanosecond).
    pub fn time(
        &self,
        v: &Spanned<Quantity>,
        field: &str,
        min: Nanos,
        max: Nanos,
        allowed: &str,
    ) -> Result<Nanos, ConfigError> {
        self.q(v, field, |q| time_in(q, min, max), allowed)
    }

    /// A name: non-empty after trimming, no control characters (a NUL or newline in a name
    /// breaks every file it is written to).
    pub fn name(&self, v: &Spanned<String>, field: &str) -> Result<String, ConfigError> {
        let name = v.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(self.err(Some(v.span()), field, "must not be empty", None));
        }
        if name.chars().any(char::is_control) {
            return Err(self.err(
                Some(v.span()),
                field,
                format!("{name:?} contains a control character"),
                Some("printable characters"),
            ));
        }
        Ok(name)
    }
}

fn text_of(q: &Quantity) -> String {
    match q {
        Quantity::Int(i) => i.to_string(),
        Quantity::Float(f) => f.to_string(),
        Quantity::Text(s) => format!("{s:?}"),
    }
}

fn number(q: &Quantity, unit: impl Fn(&str) -> Result<f64, String>) -> Result<f64, String> {
    let v = match q {
        Quantity::Int(i) => *i as f64,
        Quantity::Float(f) => *f,
        Quantity::Text(s) => unit(s)?,
    };
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{} is not a finite number", text_of(q)))
    }
}

fn seconds_text(ns: Nanos) -> String {
    format!("{} s", ns as f64 / 1e9)
}

pub(super) fn time_in(q: &Quantity, min: Nanos, max: Nanos) -> Result<Nanos, String> {
    let s = number(q, units::seconds)?;
    if s < 0.0 {
        return Err(format!("time {} is negative", text_of(q)));
    }
    // Compared in seconds first: a huge value must not reach the u64 conversion (which saturates).
    if s > max as f64 / 1e9 {
        return Err(format!(
            "time {} is longer than the largest allowed, {}",
            text_of(q),
            seconds_text(max)
        ));
    }
    let ns = (s * 1e9).round() as Nanos;
    if ns < min {
        return Err(format!(
            "time {} is shorter than the smallest allowed, {}",
            text_of(q),
            seconds_text(min)
        ));
    }
    Ok(ns)
}

pub(super) fn rate(q: &Q) -> Result<u64, String> {
    let v = number(q, units::rate_bps)?;
    if !(1.0..=MAX_RATE_BPS as f64).contains(&v) {
        return Err(format!("rate {} is out of range", text_of(q)));
    }
    Ok(v.round() as u64)
}

type Q = Quantity;

pub(super) fn probability(q: &Q) -> Result<f64, String> {
    let p = number(q, units::fraction)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("probability {} is outside [0, 1]", text_of(q)));
    }
    Ok(p)
}

/// A size in bytes within `[min, max]`.
pub(super) fn bytes_in(q: &Q, min: u64, max: u64) -> Result<u64, String> {
    let b = number(q, units::bytes)?;
    if !(min as f64..=max as f64).contains(&b) {
        return Err(format!("size {} is out of range", text_of(q)));
    }
    Ok(b.round() as u64)
}

pub(super) fn buffer(q: &Q) -> Result<Buffer, String> {
    let packets = |n: f64| -> Result<Buffer, String> {
        if n.fract() != 0.0 || !(1.0..=MAX_BUFFER_PACKETS as f64).contains(&n) {
            return Err(format!("buffer {} is out of range", text_of(q)));
        }
        Ok(Buffer::Packets(n as u32))
    };
    match q {
        Quantity::Int(i) => packets(*i as f64),
        Quantity::Text(s) => {
            for suffix in ["packets", "packet", "pkts", "pkt", "p"] {
                if let Some(n) = s.strip_suffix(suffix) {
                    // As units::split: one space between number and unit, none around.
                    let n: u64 = n
                        .strip_suffix(' ')
                        .unwrap_or(n)
                        .parse()
                        .map_err(|_| format!("cannot read {s:?} as a packet count"))?;
                    return packets(n as f64);
                }
            }
            if s.parse::<f64>().is_ok() {
                // units::bytes would say a plain number is bytes; for a buffer it is packets.
                return Err(format!(
                    "{s:?} has no unit: a buffer written as a string needs one (p, pkt, pkts, packet, packets, or B, KB, kB, MB, GB, KiB, MiB, GiB, e.g. \"100pkt\" or \"64KB\"); a plain number is packets"
                ));
            }
            Ok(Buffer::Bytes(bytes_in(q, 1, MAX_BUFFER_BYTES)?))
        }
        Quantity::Float(_) => Err(format!(
            "buffer {} must be a whole packet count or a size",
            text_of(q)
        )),
    }
}

pub(super) fn param_value(v: &toml::Value) -> Option<ParamValue> {
    match v {
        toml::Value::Integer(i) => Some(ParamValue::Number(*i as f64)),
        toml::Value::Float(f) => Some(ParamValue::Number(*f)),
        toml::Value::Boolean(b) => Some(ParamValue::Bool(*b)),
        toml::Value::String(s) => Some(ParamValue::Text(s.clone())),
        _ => None,
    }
}

/// Turn a serde/toml error into a ConfigError with the field path and allowed values.
pub(super) fn from_de_error(
    ctx: &Ctx,
    e: serde_path_to_error::Error<toml::de::Error>,
) -> ConfigError {
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
    let named = |name: &str, path: &mut String| {
        if !(path == name || path.ends_with(&format!(".{name}"))) {
            *path = if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            };
        }
    };
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        if let Some((name, tail)) = rest.split_once('`') {
            named(name, &mut path);
            message = format!("unknown field `{name}`");
            let tail = tail.trim_start_matches(',').trim();
            let list = tail
                .strip_prefix("expected one of ")
                .or_else(|| tail.strip_prefix("expected "));
            allowed = list.map(|l| l.replace('`', ""));
        }
    } else if let Some(rest) = msg.strip_prefix("missing field `") {
        if let Some((name, _)) = rest.split_once('`') {
            named(name, &mut path);
            message = format!("missing required field `{name}`");
        }
    } else if msg.contains("did not match any variant of untagged enum Quantity") {
        message = "expected a number or a string with a unit".into();
        allowed = Some("a number (integers within +-2^63) or a string such as \"10Mbps\"".into());
    } else if msg.starts_with("invalid type: integer `") && msg.contains("as i128") {
        // TOML integers are 64-bit; serde's own words for a longer one mean nothing to a user.
        message = "integer does not fit TOML's 64-bit integers".into();
        allowed = Some("integers within +-2^63, or a float, or a string with a unit".into());
    } else if msg.contains("invalid value: integer `-") && path.starts_with("seeds") {
        message = "a seed must not be negative".into();
        allowed = Some(super::schema::allowed::SEEDS.to_string());
    }
    // serde names Rust types; the file has tables and lists.
    if let Some(at) = message.find("expected struct Raw") {
        message.truncate(at);
        message.push_str("expected a table");
    }
    let message = message.replace("expected a sequence", "expected a list");
    ctx.err(inner.span(), path, message, allowed.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_bounded_before_conversion() {
        let q = Quantity::Text("1e30s".into());
        assert!(time_in(&q, 0, MAX_DELAY).unwrap_err().contains("longer"));
        let q = Quantity::Float(f64::NAN);
        assert!(time_in(&q, 0, MAX_DELAY).is_err());
        assert_eq!(
            time_in(&Quantity::Text("1000s".into()), 0, MAX_DELAY).unwrap(),
            MAX_DELAY
        );
        assert!(time_in(&Quantity::Text("1ns".into()), 2, MAX_DELAY).is_err());
        // Every bounded sum the simulator can form stays far below u64::MAX ns.
        let worst = MAX_TIME as u128 + (MAX_LINKS as u128 + 4) * MAX_DELAY as u128;
        assert!(worst * 1000 < u64::MAX as u128);
    }

    #[test]
    fn buffers() {
        assert_eq!(buffer(&Quantity::Int(5)).unwrap(), Buffer::Packets(5));
        assert_eq!(
            buffer(&Quantity::Text("64KB".into())).unwrap(),
            Buffer::Bytes(64_000)
        );
        assert!(buffer(&Quantity::Int(0)).is_err());
        assert!(buffer(&Quantity::Int(i64::MAX)).is_err());
        assert!(buffer(&Quantity::Text("99999999999pkt".into())).is_err());
    }
}

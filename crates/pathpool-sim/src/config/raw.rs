//! The scenario as written: serde's view of the TOML, every value with its span so that
//! validation can point at it. Nothing here is checked beyond its TOML type.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// A quantity as written: a plain number, or a string with a unit (`"10Mbps"`, `"150ms"`,
/// `"64KB"`, `"2%"`). Which units are allowed depends on the field (`super::check`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Quantity {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Spanned<String>,
    #[serde(default)]
    pub(super) description: Option<String>,
    pub(super) duration: Spanned<Quantity>,
    #[serde(default)]
    pub(super) seeds: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    pub(super) metrics: Option<RawMetrics>,
    #[serde(default)]
    pub(super) links: Vec<RawLink>,
    #[serde(default)]
    pub(super) paths: Vec<RawPath>,
    #[serde(default)]
    pub(super) flows: Vec<RawFlow>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMetrics {
    #[serde(default)]
    pub(super) interval: Option<Spanned<Quantity>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGilbert {
    pub(super) p: Spanned<Quantity>,
    pub(super) r: Spanned<Quantity>,
    #[serde(default)]
    pub(super) loss_good: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) loss_bad: Option<Spanned<Quantity>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReorder {
    pub(super) probability: Spanned<Quantity>,
    pub(super) extra_delay: Spanned<Quantity>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLink {
    pub(super) name: Spanned<String>,
    pub(super) rate: Spanned<Quantity>,
    #[serde(default)]
    pub(super) delay: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) buffer: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) loss: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) gilbert: Option<Spanned<RawGilbert>>,
    #[serde(default)]
    pub(super) reorder: Option<Spanned<RawReorder>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPath {
    pub(super) name: Spanned<String>,
    pub(super) links: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    pub(super) ack_links: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub(super) ack_delay: Option<Spanned<Quantity>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFlow {
    pub(super) name: Spanned<String>,
    pub(super) kind: Spanned<String>,
    #[serde(default)]
    pub(super) path: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) paths: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub(super) algorithm: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) params: Option<Spanned<BTreeMap<String, toml::Value>>>,
    #[serde(default)]
    pub(super) counting: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) scheduler: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) send_buffer: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) writer: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) write_size: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) joins: Option<Spanned<String>>,
    pub(super) segmentation: Option<Spanned<String>>,
    pub(super) receive_window: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) reading: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) app: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) size: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) start: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) stop: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) start_jitter: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) send_jitter: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) count: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) mss: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) option_bytes: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) rcv_buffer: Option<Spanned<Quantity>>,
    #[serde(default)]
    /// `true`, `false` or `"linux"`: any TOML value, checked in `flows.rs`.
    pub(super) delayed_ack: Option<Spanned<toml::Value>>,
    #[serde(default)]
    pub(super) slow_start_after_idle: Option<Spanned<bool>>,
    #[serde(default)]
    pub(super) recovery: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) window_arithmetic: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) push_flag: Option<Spanned<String>>,
    // --- kind = "rate" only ---
    #[serde(default)]
    pub(super) rates: Option<Spanned<Vec<Spanned<Quantity>>>>,
    #[serde(default)]
    pub(super) block_length: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) source_per_block: Option<Spanned<i64>>,
    #[serde(default)]
    pub(super) deadline: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) feedback_interval: Option<Spanned<Quantity>>,
    #[serde(default)]
    pub(super) controller: Option<Spanned<String>>,
}

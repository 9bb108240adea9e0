//! Simulated time: integer nanoseconds everywhere inside the simulator; seconds only at the edge.

pub use pathpool_cc::Nanos;

pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_SEC: Nanos = 1_000_000_000;

/// Nanoseconds to seconds, for output records only.
#[inline]
pub fn secs(t: Nanos) -> f64 {
    t as f64 / NS_PER_SEC as f64
}

/// Time to serialise `bytes` at `rate_bps`, rounded up to a whole nanosecond so that a link can
/// never carry more than its rate.
#[inline]
pub fn serialisation(bytes: u32, rate_bps: u64) -> Nanos {
    let bits = u128::from(bytes) * 8 * u128::from(NS_PER_SEC);
    bits.div_ceil(u128::from(rate_bps.max(1))) as Nanos
}

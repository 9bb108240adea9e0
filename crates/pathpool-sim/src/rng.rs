//! Deterministic random streams, one per component.
//!
//! Each component (a link, a flow) draws from its own xoshiro256++ stream, seeded from the run
//! seed and a stable hash of the component's *name*, so adding or reordering components never
//! perturbs the draws of the others.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// FNV-1a over the bytes of `name`: stable across platforms and Rust versions (unlike
/// `std::hash`).
fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A random stream for one component.
#[derive(Clone, Debug)]
pub struct Stream(Xoshiro256PlusPlus);

impl Stream {
    /// The stream of component `kind`/`name` in the run seeded `seed`.
    pub fn new(seed: u64, kind: &str, name: &str) -> Self {
        let key =
            fnv1a(kind) ^ fnv1a(name).rotate_left(17) ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Stream(Xoshiro256PlusPlus::seed_from_u64(key))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1) with 53 bits.
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A Bernoulli trial with fixed probability as an integer threshold, so each draw is one
/// comparison of a raw 64-bit output.
#[derive(Clone, Copy, Debug)]
pub struct Chance(u64);

impl Chance {
    pub fn new(p: f64) -> Self {
        if p <= 0.0 {
            Chance(0)
        } else if p >= 1.0 {
            Chance(u64::MAX)
        } else {
            Chance((p * 18_446_744_073_709_551_616.0) as u64)
        }
    }

    #[inline]
    pub fn is_never(&self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub fn hit(&self, s: &mut Stream) -> bool {
        self.0 != 0 && (self.0 == u64::MAX || s.next_u64() < self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_depend_on_seed_and_name_only() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(1, "link", "a");
                move |_| s.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(1, "link", "a");
                move |_| s.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(1, "link", "b");
                move |_| s.next_u64()
            })
            .collect();
        let a_seed2: Vec<u64> = (0..4)
            .map({
                let mut s = Stream::new(2, "link", "a");
                move |_| s.next_u64()
            })
            .collect();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert_ne!(a, a_seed2);
    }

    #[test]
    fn chance_frequency_matches_probability() {
        let mut s = Stream::new(7, "t", "t");
        let c = Chance::new(0.02);
        let n = 200_000;
        let hits = (0..n).filter(|_| c.hit(&mut s)).count() as f64;
        // 5 standard deviations of a binomial(200000, 0.02): sqrt(n p (1-p)) ~ 62.6
        assert!((hits - 4000.0).abs() < 5.0 * 62.6, "hits {hits}");
        assert!(!Chance::new(0.0).hit(&mut s));
        assert!(Chance::new(1.0).hit(&mut s));
    }
}

//! Summary statistics over a run's records.

/// Jain's fairness index (Jain, Chiu, Hawe 1984, eq. 1): `(sum x)^2 / (n * sum x^2)`.
/// 1 when all shares are equal, `1/n` when one takes everything. Empty or all-zero input gives 1
/// (nobody is treated worse than anybody else).
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        return 1.0;
    }
    s * s / (n * s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_extremes_and_hand_value() {
        assert_eq!(jain_index(&[3.0, 3.0, 3.0]), 1.0);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+2)^2 / (2 * (1+4)) = 9/10
        assert!((jain_index(&[1.0, 2.0]) - 0.9).abs() < 1e-12);
    }
}

//! Small parsers for quantities with units as written in scenario files.

fn split(s: &str) -> Result<(f64, &str), String> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|&(_, c)| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .map_or(t.len(), |(i, _)| i);
    // "1e3" is a number but "1ms" must not eat the 'm'; 'e'/'E' only count when followed by a digit.
    let mut end = end;
    while end > 0 && matches!(t.as_bytes()[end - 1], b'e' | b'E' | b'+' | b'-') {
        end -= 1;
    }
    let (num, unit) = t.split_at(end);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("cannot read a number in {s:?}"))?;
    Ok((v, unit.trim()))
}

/// `"10Mbps"`, `"1.5 Gbps"`, `"64kbps"`, `"1000bps"`, `"10Mbit/s"` (decimal prefixes) -> bits per
/// second. Case matters: a capital `B` would mean bytes (`"10MBps"` is 80 Mbit/s to some
/// tools), and `tc` reads `mbps` as megabytes per second, so both are refused, not guessed.
pub fn rate_bps(s: &str) -> Result<f64, String> {
    let (v, u) = split(s)?;
    let m = match u {
        "" | "bps" | "bit/s" => 1.0,
        "kbps" | "Kbps" | "kbit/s" => 1e3,
        "Mbps" | "Mbit/s" => 1e6,
        "Gbps" | "Gbit/s" => 1e9,
        "Tbps" | "Tbit/s" => 1e12,
        _ => {
            return Err(format!(
                "unknown rate unit {u:?} in {s:?} (bits per second: bps, kbps, Mbps, Gbps, Tbps or bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s; case matters)"
            ))
        }
    };
    Ok(v * m)
}

/// `"150ms"`, `"2s"`, `"500us"`, `"10ns"`, `"1min"` -> seconds.
pub fn seconds(s: &str) -> Result<f64, String> {
    let (v, u) = split(s)?;
    let m = match u {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        _ => {
            return Err(format!(
                "unknown time unit {u:?} in {s:?} (use ns, us, ms, s, min)"
            ))
        }
    };
    Ok(v * m)
}

/// `"64KB"` (1000), `"64KiB"` (1024), `"4MiB"`, `"10MB"`, `"1500B"` -> bytes.
pub fn bytes(s: &str) -> Result<f64, String> {
    let (v, u) = split(s)?;
    let m = match u {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "unknown size unit {u:?} in {s:?} (use B, KB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    Ok(v * m)
}

/// `"2%"` -> 0.02, `"0.02"` -> 0.02.
pub fn fraction(s: &str) -> Result<f64, String> {
    let (v, u) = split(s)?;
    match u {
        "" => Ok(v),
        "%" => Ok(v / 100.0),
        _ => Err(format!(
            "cannot read {s:?} as a probability (use 0.02 or \"2%\")"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(rate_bps("10Mbps").unwrap(), 10e6);
        assert_eq!(rate_bps("1 Gbps").unwrap(), 1e9);
        assert_eq!(seconds("150ms").unwrap(), 0.15);
        assert_eq!(seconds("2").unwrap(), 2.0);
        assert_eq!(seconds("1e-3s").unwrap(), 1e-3);
        assert_eq!(bytes("64KB").unwrap(), 64e3);
        assert_eq!(bytes("4MiB").unwrap(), 4194304.0);
        assert_eq!(fraction("2%").unwrap(), 0.02);
        assert!(rate_bps("10Mbs").is_err());
        assert_eq!(rate_bps("10Mbit/s").unwrap(), 10e6);
        assert_eq!(rate_bps("64Kbps").unwrap(), 64e3);
        // Bytes per second and tc's lower-case forms are not guessed at.
        for bad in ["10MBps", "10mbps", "10MBPS", "10mbit", "1gbps", "10 MB/s"] {
            assert!(rate_bps(bad).is_err(), "{bad}");
        }
        assert!(seconds("10MS").is_err());
        assert!(bytes("10mb").is_err());
        assert!(seconds("abc").is_err());
    }
}

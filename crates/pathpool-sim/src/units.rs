//! Small parsers for quantities with units as written in scenario files.
//!
//! A quantity written as a string carries its unit, always: `"10"` could be 10 bit/s or 10
//! Mbit/s, 10 s or 10 ms, 10 bytes or 10 packets, and every reader guesses differently, so it
//! is refused; a plain number (`10`, not `"10"`) has one documented meaning per type. Units are
//! matched exactly: no case folding and no white space around the value.

/// The number and the unit of `s`; `units` lists the allowed units for the messages.
fn split<'a>(s: &'a str, units: &str) -> Result<(f64, &'a str), String> {
    if s.trim() != s {
        return Err(format!(
            "{s:?} has white space around it; units are matched exactly ({units})"
        ));
    }
    let end = s
        .char_indices()
        .find(|&(_, c)| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .map_or(s.len(), |(i, _)| i);
    // "1e3" is a number but "1ms" must not eat the 'm'; 'e'/'E' only count when followed by a digit.
    let mut end = end;
    while end > 0 && matches!(s.as_bytes()[end - 1], b'e' | b'E' | b'+' | b'-') {
        end -= 1;
    }
    let (num, unit) = s.split_at(end);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("cannot read a number in {s:?} ({units})"))?;
    // One space between number and unit is how SI writes it ("1.5 Gbps").
    let unit = unit.strip_prefix(' ').unwrap_or(unit);
    if unit.is_empty() {
        return Err(format!(
            "{s:?} has no unit: a quantity written as a string needs one ({units})"
        ));
    }
    Ok((v, unit))
}

const RATE_UNITS: &str = "bits per second: bps, kbps, Mbps, Gbps, Tbps or bit/s, kbit/s, Mbit/s, Gbit/s, Tbit/s; case matters, e.g. \"10Mbps\"; a plain number is bit/s";

/// `"10Mbps"`, `"1.5 Gbps"`, `"64kbps"`, `"1000bps"`, `"10Mbit/s"` (decimal prefixes) -> bits per
/// second. Case matters: a capital `B` would mean bytes (`"10MBps"` is 80 Mbit/s to some
/// tools), and `tc` reads `mbps` as megabytes per second, so both are refused, not guessed.
pub fn rate_bps(s: &str) -> Result<f64, String> {
    let (v, u) = split(s, RATE_UNITS)?;
    let m = match u {
        "bps" | "bit/s" => 1.0,
        "kbps" | "Kbps" | "kbit/s" => 1e3,
        "Mbps" | "Mbit/s" => 1e6,
        "Gbps" | "Gbit/s" => 1e9,
        "Tbps" | "Tbit/s" => 1e12,
        _ => return Err(format!("unknown rate unit {u:?} in {s:?} ({RATE_UNITS})")),
    };
    Ok(v * m)
}

const TIME_UNITS: &str = "ns, us, µs, ms, s, min, e.g. \"150ms\"; a plain number is seconds";

/// `"150ms"`, `"2s"`, `"500us"`, `"10ns"`, `"1min"` -> seconds.
pub fn seconds(s: &str) -> Result<f64, String> {
    let (v, u) = split(s, TIME_UNITS)?;
    let m = match u {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        _ => return Err(format!("unknown time unit {u:?} in {s:?} ({TIME_UNITS})")),
    };
    Ok(v * m)
}

const SIZE_UNITS: &str = "B, KB, kB, MB, GB, KiB, MiB, GiB, e.g. \"64KB\"; a plain number is bytes";

/// `"64KB"` (1000), `"64KiB"` (1024), `"4MiB"`, `"10MB"`, `"1500B"` -> bytes.
pub fn bytes(s: &str) -> Result<f64, String> {
    let (v, u) = split(s, SIZE_UNITS)?;
    let m = match u {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unknown size unit {u:?} in {s:?} ({SIZE_UNITS})")),
    };
    Ok(v * m)
}

const FRACTION_UNITS: &str = "%, e.g. \"2%\"; a plain number is a fraction, e.g. 0.02";

/// `"2%"` -> 0.02 (a fraction is written as a plain number, `0.02`).
pub fn fraction(s: &str) -> Result<f64, String> {
    let (v, u) = split(s, FRACTION_UNITS)?;
    match u {
        "%" => Ok(v / 100.0),
        _ => Err(format!(
            "cannot read {s:?} as a probability ({FRACTION_UNITS})"
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
        assert_eq!(seconds("2s").unwrap(), 2.0);
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

    #[test]
    fn a_string_without_its_unit_is_refused_naming_the_units() {
        let e = rate_bps("10").unwrap_err();
        assert!(e.contains("no unit") && e.contains("Mbps"), "{e}");
        let e = seconds("10").unwrap_err();
        assert!(e.contains("no unit") && e.contains("ms"), "{e}");
        let e = bytes("50").unwrap_err();
        assert!(e.contains("no unit") && e.contains("KiB"), "{e}");
        let e = fraction("0.02").unwrap_err();
        assert!(e.contains("no unit") && e.contains('%'), "{e}");
    }

    #[test]
    fn white_space_around_a_value_is_refused() {
        for bad in ["10Mbps ", " 10Mbps", "10Mbps\t", "10  Mbps"] {
            assert!(rate_bps(bad).is_err(), "{bad:?}");
        }
        assert!(seconds("150ms\n").is_err());
        assert!(bytes(" 64KB").is_err());
        assert!(fraction("2% ").is_err());
    }
}

//! Fixtures shared by the pathpool-sim integration tests: parsing a scenario (failing with its
//! text), and the TOML tables scenarios are made of, so each test states only what it varies.
// Each test binary uses its own subset.
#![allow(dead_code)]

use pathpool_sim::Scenario;

/// Parse a scenario the test wrote; a mistake in it fails the test with the text.
pub fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "test").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The top of a scenario: its name and duration (a TOML value: `60` or `"5s"`).
pub fn header(name: &str, duration: &str) -> String {
    format!("name = \"{name}\"\nduration = {duration}\n")
}

/// A `[metrics]` table with the sampling interval.
pub fn metrics(interval: &str) -> String {
    format!("[metrics]\ninterval = \"{interval}\"\n")
}

/// A `[[links]]` table; `buffer = ""` leaves the default buffer; `extra` holds further
/// `key = value` lines (loss, reorder, ...).
pub fn link(name: &str, rate: &str, delay: &str, buffer: &str, extra: &str) -> String {
    let buffer = if buffer.is_empty() {
        String::new()
    } else {
        format!("buffer = \"{buffer}\"\n")
    };
    format!(
        "[[links]]\nname = \"{name}\"\nrate = \"{rate}\"\ndelay = \"{delay}\"\n{buffer}{extra}\n"
    )
}

/// A `[[paths]]` table over `links`; `extra` holds further lines (`ack_delay`, `ack_links`).
pub fn path(name: &str, links: &[&str], extra: &str) -> String {
    let links: Vec<String> = links.iter().map(|l| format!("\"{l}\"")).collect();
    format!(
        "[[paths]]\nname = \"{name}\"\nlinks = [{}]\n{extra}\n",
        links.join(", ")
    )
}

/// A single-path `[[flows]]` table of kind tcp; `algorithm = ""` leaves the default.
pub fn tcp_flow(name: &str, path: &str, algorithm: &str, extra: &str) -> String {
    let algorithm = if algorithm.is_empty() {
        String::new()
    } else {
        format!("algorithm = \"{algorithm}\"\n")
    };
    format!("[[flows]]\nname = \"{name}\"\nkind = \"tcp\"\npath = \"{path}\"\n{algorithm}{extra}\n")
}

/// A multipath `[[flows]]` table of kind mptcp over `paths`.
pub fn mptcp_flow(name: &str, paths: &[&str], algorithm: &str, extra: &str) -> String {
    let paths: Vec<String> = paths.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "[[flows]]\nname = \"{name}\"\nkind = \"mptcp\"\npaths = [{}]\nalgorithm = \"{algorithm}\"\n{extra}\n",
        paths.join(", ")
    )
}

//! Algorithms by name: construction with validated parameters, and the catalogue that
//! `pathpool algorithms` prints.

use std::collections::BTreeMap;
use std::fmt;

use crate::Controller;

/// A parameter value as written in a scenario file.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Number(f64),
    Bool(bool),
    Text(String),
}

/// Parameters of one algorithm instance, by name.
pub type Params = BTreeMap<String, ParamValue>;

/// One parameter an algorithm accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    /// Default, rendered as it would be written in TOML.
    pub default: &'static str,
    /// Allowed values, in words (e.g. "> 0", "true or false", "\"continuous\" or \"kernel\"").
    pub allowed: &'static str,
    pub doc: &'static str,
}

/// One algorithm in the catalogue.
#[derive(Clone, Copy, Debug)]
pub struct AlgorithmInfo {
    pub name: &'static str,
    /// One line: what it is.
    pub summary: &'static str,
    /// Paper/RFC and equation the implementation follows.
    pub source: &'static str,
    /// The window rules, in plain text.
    pub formula: &'static str,
    pub params: &'static [ParamInfo],
    /// True if subflows are coupled (the algorithm reads its siblings).
    pub coupled: bool,
}

/// Why an algorithm could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum CcError {
    UnknownAlgorithm { name: String, allowed: Vec<&'static str> },
    UnknownParam { algorithm: &'static str, param: String, allowed: Vec<&'static str> },
    BadParam { algorithm: &'static str, param: &'static str, value: String, allowed: &'static str },
    NoSubflows,
}

impl fmt::Display for CcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CcError::UnknownAlgorithm { name, allowed } => {
                write!(f, "unknown algorithm {name:?}; allowed: {}", allowed.join(", "))
            }
            CcError::UnknownParam { algorithm, param, allowed } => {
                if allowed.is_empty() {
                    write!(f, "algorithm {algorithm:?} takes no parameters, got {param:?}")
                } else {
                    write!(
                        f,
                        "algorithm {algorithm:?} has no parameter {param:?}; allowed: {}",
                        allowed.join(", ")
                    )
                }
            }
            CcError::BadParam { algorithm, param, value, allowed } => write!(
                f,
                "algorithm {algorithm:?}: parameter {param:?} = {value} is not allowed; allowed: {allowed}"
            ),
            CcError::NoSubflows => write!(f, "a connection needs at least one subflow"),
        }
    }
}

impl std::error::Error for CcError {}

/// Every algorithm, in the order `pathpool algorithms` lists them.
pub fn catalog() -> &'static [AlgorithmInfo] {
    &CATALOG
}

/// Build the named algorithm for a connection of `n_subflows` subflows.
pub fn build(name: &str, params: &Params, n_subflows: usize) -> Result<Box<dyn Controller>, CcError> {
    if n_subflows == 0 {
        return Err(CcError::NoSubflows);
    }
    let _ = params;
    Err(CcError::UnknownAlgorithm {
        name: name.to_string(),
        allowed: CATALOG.iter().map(|a| a.name).collect(),
    })
}

static CATALOG: [AlgorithmInfo; 0] = [];

//! Algorithms by name: construction with validated parameters, and the catalogue that
//! `pathpool algorithms` prints.

use std::collections::BTreeMap;
use std::fmt;

use crate::algos;
use crate::{Controller, Counting};

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
    /// Builds the controller from validated parameters.
    pub(crate) build: Builder,
}

/// Why an algorithm could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum CcError {
    UnknownAlgorithm {
        name: String,
        allowed: Vec<&'static str>,
    },
    UnknownParam {
        algorithm: &'static str,
        param: String,
        allowed: Vec<&'static str>,
    },
    BadParam {
        algorithm: &'static str,
        param: &'static str,
        value: String,
        allowed: &'static str,
    },
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

/// Build the named algorithm for a connection of `n_subflows` subflows, with the default
/// [`Counting::Bytes`] (congestion-avoidance steps per acknowledged segment).
///
/// Parameters are checked against the catalogue entry: an unknown name, a value of the wrong
/// type or out of range gives a [`CcError`] that names the allowed values.
pub fn build(
    name: &str,
    params: &Params,
    n_subflows: usize,
) -> Result<Box<dyn Controller>, CcError> {
    build_with_counting(name, params, n_subflows, Counting::Bytes)
}

/// [`build`] with the given [`Counting`] (`Counting::Acks` is v0.95's one step per ACK).
pub fn build_with_counting(
    name: &str,
    params: &Params,
    n_subflows: usize,
    counting: Counting,
) -> Result<Box<dyn Controller>, CcError> {
    if n_subflows == 0 {
        return Err(CcError::NoSubflows);
    }
    let Some(k) = CATALOG.iter().position(|info| info.name == name) else {
        return Err(CcError::UnknownAlgorithm {
            name: name.to_string(),
            allowed: CATALOG.iter().map(|a| a.name).collect(),
        });
    };
    check_known(&CATALOG[k], params)?;
    (CATALOG[k].build)(params, n_subflows, counting)
}

pub(crate) type Builder = fn(&Params, usize, Counting) -> Result<Box<dyn Controller>, CcError>;

// One table: each entry carries its own builder (a test checks every built controller reports
// the name of the entry that built it).
static CATALOG: [AlgorithmInfo; 12] = [
    algos::reno::INFO,
    algos::cubic::INFO,
    algos::nsdi2011::EWTCP_INFO,
    algos::nsdi2011::COUPLED_INFO,
    algos::nsdi2011::SEMICOUPLED_INFO,
    algos::nsdi2011::MAX_INFO,
    algos::lia::INFO,
    algos::olia::INFO,
    algos::balia::INFO,
    algos::generalized::INFO,
    algos::rsf::DB_INFO,
    algos::rsf::LB_INFO,
];

/// Rejects any parameter the algorithm does not declare.
fn check_known(info: &AlgorithmInfo, params: &Params) -> Result<(), CcError> {
    for key in params.keys() {
        if !info.params.iter().any(|p| p.name == key) {
            return Err(CcError::UnknownParam {
                algorithm: info.name,
                param: key.clone(),
                allowed: info.params.iter().map(|p| p.name).collect(),
            });
        }
    }
    Ok(())
}

fn param_info(info: &AlgorithmInfo, name: &str) -> &'static ParamInfo {
    // Algorithms only ask for parameters their own static entry declares.
    let params: &'static [ParamInfo] = info.params;
    params.iter().find(|p| p.name == name).unwrap_or_else(|| {
        panic!(
            "{}: parameter {name} missing from its catalogue entry",
            info.name
        )
    })
}

fn render(v: &ParamValue) -> String {
    match v {
        ParamValue::Number(x) => format!("{x}"),
        ParamValue::Bool(b) => format!("{b}"),
        ParamValue::Text(t) => format!("{t:?}"),
    }
}

fn bad(info: &AlgorithmInfo, p: &'static ParamInfo, v: &ParamValue) -> CcError {
    CcError::BadParam {
        algorithm: info.name,
        param: p.name,
        value: render(v),
        allowed: p.allowed,
    }
}

/// A number parameter, `None` if absent; `ok` says whether a value is in range.
pub(crate) fn number(
    info: &AlgorithmInfo,
    params: &Params,
    name: &str,
    ok: impl Fn(f64) -> bool,
) -> Result<Option<f64>, CcError> {
    let p = param_info(info, name);
    match params.get(name) {
        None => Ok(None),
        Some(ParamValue::Number(x)) if x.is_finite() && ok(*x) => Ok(Some(*x)),
        Some(v) => Err(bad(info, p, v)),
    }
}

/// A boolean parameter, `None` if absent.
pub(crate) fn flag(
    info: &AlgorithmInfo,
    params: &Params,
    name: &str,
) -> Result<Option<bool>, CcError> {
    let p = param_info(info, name);
    match params.get(name) {
        None => Ok(None),
        Some(ParamValue::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(bad(info, p, v)),
    }
}

/// A text parameter that must be one of `choices`; returns its index, `None` if absent.
pub(crate) fn choice(
    info: &AlgorithmInfo,
    params: &Params,
    name: &str,
    choices: &[&str],
) -> Result<Option<usize>, CcError> {
    let p = param_info(info, name);
    match params.get(name) {
        None => Ok(None),
        Some(ParamValue::Text(t)) => match choices.iter().position(|c| c == t) {
            Some(k) => Ok(Some(k)),
            None => Err(bad(info, p, &ParamValue::Text(t.clone()))),
        },
        Some(v) => Err(bad(info, p, v)),
    }
}

//! The error of a run that could not be carried out (a scenario's errors are
//! [`crate::ConfigError`]s).

use std::fmt;

/// A run that could not be carried out.
#[derive(Clone, Debug, PartialEq)]
pub struct SimError {
    pub message: String,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SimError {}

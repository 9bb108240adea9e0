//! A TCP or MPTCP connection.

pub mod data;
mod input;
pub mod recovery;
pub mod sender;

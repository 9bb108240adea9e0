//! The algorithms. Each module holds one controller (or one family), its catalogue entry
//! `INFO` and its `build` from validated parameters.

pub mod balia;
pub(crate) mod common;
pub mod cubic;
pub mod generalized;
pub mod lia;
pub mod nsdi2011;
pub mod olia;
pub mod reno;
pub mod rsf;

pub use cubic::Cubic;
pub use generalized::{BaliaVariant, Decrease, Generalized};
pub use lia::Lia;
pub use nsdi2011::{Coupled, Ewtcp, Max, Semicoupled};
pub use olia::Olia;
pub use reno::Reno;
pub use rsf::{RsfDb, RsfLb};

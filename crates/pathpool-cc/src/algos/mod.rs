//! The algorithms. Each module holds one controller (or one family), its catalogue entry
//! `INFO` and its `build` from validated parameters.

pub mod balia;
pub(crate) mod common;
pub mod cubic;
pub mod generalized;
pub mod lia;
pub mod olia;
pub mod reno;
pub mod rsf;
pub mod wischik;

pub use cubic::Cubic;
pub use generalized::{BaliaVariant, Decrease, Generalized};
pub use lia::Lia;
pub use olia::Olia;
pub use reno::Reno;
pub use rsf::{RsfDb, RsfLb};
pub use wischik::Wischik;

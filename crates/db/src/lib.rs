//! The PostgreSQL load engine: pgbench's job (its schema, its built-in
//! scripts and its script language) with latencies in HDR histograms.

pub mod init;
pub mod inspect;
pub mod run;
pub mod script;
pub mod target;
pub mod warnings;
pub mod wire;

pub use target::{Target, TargetError};
pub use warnings::DbWarning;

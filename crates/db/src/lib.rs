//! The PostgreSQL load engine: pgbench's job (its schema, its built-in
//! scripts and its script language) with latencies in HDR histograms.
//! [`record`] turns a run's outcome into a `Run`.

pub mod capacity;
pub mod doctor;
pub mod init;
pub mod inspect;
pub mod quick;
pub mod record;
pub mod run;
pub mod script;
mod shell;
pub mod stats;
pub mod target;
pub mod txlog;
pub mod warnings;
pub mod wire;

pub use target::{Target, TargetError};
pub use warnings::DbWarning;

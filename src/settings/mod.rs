//! Flags → engine settings (uv's `settings.rs` pattern): each
//! subcommand's clap arguments resolved into the plain settings its engine
//! runs with, plus what the binary keeps for itself around the run (where
//! it is saved, the segment plan, the output format). Every usage error
//! that needs the flags together is found here, before anything is
//! measured; nothing here measures, prints a result or saves.
//!
//! Data flow: `cli.rs` → here → `cmd/<sub>.rs` (wiring) → the engine.

mod capacity;
mod changes;
pub(crate) mod compare;
mod db;
mod disk;
mod exec;
mod http;
mod k8s;
pub(crate) mod segment;
pub(crate) mod watch;

pub(crate) use capacity::Mode;
pub(crate) use changes::changes;
pub(crate) use db::{DbPlan, db_init, db_run};
pub(crate) use disk::{DiskInputs, DiskPlan, disk};
pub(crate) use exec::{ExecPlan, exec};
pub(crate) use http::{HttpInputs, HttpPlan, builtin_server_threads, http, loads_builtin_server};
pub(crate) use k8s::{Segmented, segmented};
pub(crate) use watch::{Watch, watch};

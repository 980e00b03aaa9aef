//! Everything that turns a [`dyno_model::Run`] into something to read:
//! human tables (history, a run in full, the machine), and the machine
//! formats (JSON, JSON Lines, CSV) behind the one [`Exporter`] trait.
//!
//! Nothing here measures or saves; it only renders what the engines
//! returned. Human renderers return `String`s so the binary decides where
//! they go.

mod export;
mod format;
mod text;

pub use export::{Csv, Exporter, Json, JsonLines, exporter};
pub use format::{format_duration_ns, format_interval, format_value};
pub use text::{SummaryRow, environment, history, run_details, summary};

//! The names metrics are stored under: the contract between the engine that
//! writes a figure and every view that reads it.
//!
//! An engine builds its metrics with these constants and a view (text,
//! HTML, ab's layout, quick's table) finds them with the same constants, so
//! renaming a figure is a compile error in every reader rather than a dash
//! in a report. The strings themselves are the stored form: changing one
//! breaks stored runs and comparisons with them, so a rename keeps the old
//! string readable (see `legacy`).
//!
//! One module per kind of run; [`common`] holds what more than one kind
//! writes (latency, the measured window, the client's CPU, the per-second
//! timeline, a rate plan's stages), [`telemetry`] what watching the target
//! adds to any run, and [`label`] the label keys views select on.

pub mod capacity;
pub mod common;
pub mod compare;
pub mod db;
pub mod disk;
pub mod exec;
pub mod http;
pub mod label;
pub mod quick;
pub mod scale;
pub mod telemetry;

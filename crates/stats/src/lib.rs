//! Statistics for measurements: summaries and confidence intervals of
//! repeated samples, HDR latency histograms and their lossless stored form,
//! and the helpers that turn them into a [`dyno_model::Metric`].
//!
//! Everything here is a pure function of its inputs, so each formula can be
//! tested against worked examples. Engines call these after measuring; the
//! exporters only read the results.

pub mod changes;
pub mod compare;
pub mod hdr;
pub mod merge;
pub mod outliers;
pub mod scaling;
pub mod series;
mod summary;
pub mod versus;

pub use summary::{Summary, sampled_metric, student_t_interval};

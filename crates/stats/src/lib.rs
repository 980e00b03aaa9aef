//! Statistics for repeated measurements: summaries and confidence intervals,
//! and the helpers that turn samples into a [`dyno_model::Metric`].
//!
//! Everything here is a pure function of its inputs, so each formula can be
//! tested against worked examples. Engines call these after measuring; the
//! exporters only read the results.

mod summary;

pub use summary::{Summary, sampled_metric, student_t_interval};

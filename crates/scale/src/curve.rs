//! The points of one curve over N, and where they came from.

use dyno_model::names::scale;
use dyno_model::record::ScaleRecord;
use dyno_model::{Direction, Environment, Metric, Unit, Warning};
use dyno_stats::scaling::Measure;

/// One point before the analysis: N, its value in the analysis' units
/// (seconds, or work per second), and the metric that records it (`time_ns`
/// or `throughput`, with its samples when there are any; the `n` label is
/// added later).
#[derive(Debug, Clone)]
pub struct Measured {
    pub n: f64,
    pub value: f64,
    pub metric: Metric,
}

impl Measured {
    /// A time in seconds, recorded in nanoseconds.
    pub fn time(n: f64, seconds: f64) -> Self {
        Measured {
            n,
            value: seconds,
            metric: Metric::new(
                scale::TIME,
                Unit::Ns,
                Direction::LowerIsBetter,
                seconds * 1e9,
            ),
        }
    }

    /// A throughput in work per second.
    pub fn throughput(n: f64, per_sec: f64) -> Self {
        Measured {
            n,
            value: per_sec,
            metric: Metric::new(
                scale::THROUGHPUT,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
                per_sec,
            ),
        }
    }
}

/// The points of one curve and where they came from.
#[derive(Debug)]
pub struct Curve {
    pub points: Vec<Measured>,
    pub measure: Measure,
    /// The source, as the run's settings record it.
    pub settings: ScaleRecord,
    pub description: String,
    pub environment: Environment,
    pub warnings: Vec<Warning>,
    /// Figures measured beside the points, labelled with their N.
    pub extra: Vec<Metric>,
}

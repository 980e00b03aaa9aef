//! What a run's own figures say about the run, judged the same way for
//! every protocol: whether the client, not the server, set the pace, and
//! whether an open-model run reached the rate it was asked for. The
//! engines' warnings and the capacity search's steps read these; none
//! writes its own rule.

use std::time::Duration;

use dyno_model::names::common;
use dyno_model::{Direction, Merge, Metric, Unit};

/// The client CPU share, in percent of its threads, from which the client
/// is taken to have set the pace: a run or a step at or above it measured
/// the client.
pub const CLIENT_SATURATED_PERCENT: f64 = 90.0;

/// The shortest window whose CPU time is judged: a shorter one holds too
/// few of the kernel's CPU-time ticks to tell a busy client from an idle
/// one.
pub const SHORTEST_JUDGED: Duration = Duration::from_millis(100);

/// The least share of the requested rate an open-model run must reach
/// (and the least share of a capacity step's due requests that must end
/// in it for the step to pass).
pub const MIN_ACHIEVED: f64 = 0.99;

/// Whether client threads `busy_percent` busy over `window` set the pace.
pub fn client_saturated(busy_percent: f64, window: Duration) -> bool {
    busy_percent >= CLIENT_SATURATED_PERCENT && window >= SHORTEST_JUDGED
}

/// Whether an open-model run that achieved `achieved` a second fell short
/// of the `requested` rate.
pub fn rate_not_reached(achieved: f64, requested: f64) -> bool {
    achieved < requested * MIN_ACHIEVED
}

/// The figures the judge reads, as every protocol's run records them: the
/// measured window (`measured_ns`, context; a merged run's is the merged
/// window)...
pub fn window_metric(window: Duration) -> Metric {
    Metric::new(
        common::MEASURED,
        Unit::Ns,
        Direction::LowerIsBetter,
        window.as_nanos() as f64,
    )
    .context()
    .merged(Merge::Window)
}

/// ... and the client's own load (`client_cpu_percent`, a diagnostic: it
/// says whether the figures are the server's or a lower bound, and is not
/// the server's figure; a merged run keeps the busiest segment's).
pub fn client_cpu_metric(busy_percent: f64) -> Metric {
    Metric::new(
        common::CLIENT_CPU_PERCENT,
        Unit::Percent,
        Direction::LowerIsBetter,
        busy_percent,
    )
    .diagnostic()
    .merged(Merge::Max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_client_is_saturated_only_over_a_window_long_enough_to_tell() {
        let long = Duration::from_secs(1);
        assert!(client_saturated(90.0, long));
        assert!(!client_saturated(89.9, long));
        assert!(!client_saturated(100.0, Duration::from_millis(50)));
    }

    #[test]
    fn one_percent_short_of_the_rate_is_not_reaching_it() {
        assert!(!rate_not_reached(990.0, 1000.0));
        assert!(rate_not_reached(989.0, 1000.0));
    }
}

//! What a run's own figures say about the run, judged the same way for
//! every protocol: whether the client, not the server, set the pace, and
//! whether an open-model run reached the rate it was asked for. The
//! engines' warnings and the capacity search's steps read these; none
//! writes its own rule.

use std::time::Duration;

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

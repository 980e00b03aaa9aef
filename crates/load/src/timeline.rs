//! The run's per-second timeline as metrics, alike for every protocol:
//! the rate of each second of the measured window, its p99, and, for a
//! segment, each second's latency histogram, from which a merged run
//! recomputes the p99 of the whole run's seconds.
//!
//! Entry i of a timeline holds seconds [i, i + 1) of the measured window
//! (the pool's [`crate::pool::Seconds`] fills it); the last one is as long
//! as what remains of the window.

use std::time::Duration;

use dyno_model::names::{common, label};
use dyno_model::{Direction, Merge, Metric, Samples, Unit};
use dyno_stats::hdr;
use hdrhistogram::Histogram;

/// One second as the metrics read it: how many requests or transactions
/// ended in it, and their latencies.
pub type Second<'a> = (u64, &'a Histogram<u64>);

/// The timeline as two series of samples, one per second of the measured
/// `window`: `rate_name` (in `unit`), what ended in each second over its
/// length, and `timeline_latency_p99_ns`, the p99 of each second, 0 for a
/// second in which nothing ended (no latency was measured then: a gap, not
/// a fast second). Each value is the mean of its samples, the p99's over
/// the seconds with answers. Nothing when the window is empty.
///
/// Series over the run's seconds are context for the report's charts,
/// never compared (seconds are not independent samples). A merged run adds
/// the rates up second by second and recomputes the p99 from the merged
/// per-second histograms ([`histograms`]).
pub fn metrics<'a>(
    window: Duration,
    seconds: impl IntoIterator<Item = Second<'a>>,
    rate_name: &str,
    unit: Unit,
) -> Vec<Metric> {
    let window = window.as_secs_f64();
    let count = window.ceil() as usize;
    if count == 0 {
        return Vec::new();
    }
    let mut rates = vec![0.0; count];
    let mut p99s = vec![0.0; count];
    for (slot, (done, latency)) in seconds.into_iter().enumerate().take(count) {
        let length = (window - slot as f64).clamp(f64::MIN_POSITIVE, 1.0);
        rates[slot] = done as f64 / length;
        if !latency.is_empty() {
            p99s[slot] = hdr::value_at_percentile(latency, 99.0) as f64;
        }
    }
    let seen: Vec<f64> = p99s.iter().copied().filter(|&x| x > 0.0).collect();
    let mean_p99 = if seen.is_empty() {
        0.0
    } else {
        seen.iter().sum::<f64>() / seen.len() as f64
    };
    let mut rate = Metric::new(
        rate_name,
        unit,
        Direction::HigherIsBetter,
        rates.iter().sum::<f64>() / count as f64,
    );
    rate.samples = rates;
    let mut p99 = Metric::new(
        common::TIMELINE_LATENCY_P99,
        Unit::Ns,
        Direction::LowerIsBetter,
        mean_p99,
    );
    p99.samples = p99s;
    vec![
        rate.context()
            .merged(Merge::Timeline)
            .samples_are(Samples::Seconds),
        p99.context()
            .merged(Merge::Recompute)
            .samples_are(Samples::Seconds),
    ]
}

/// The timeline as a run keeps it: the two series ([`metrics`]) and, for a
/// segment of a split run, each second's histogram ([`histograms`]) for
/// its merge to recompute the p99 from.
pub fn of<'a>(
    window: Duration,
    seconds: impl IntoIterator<Item = Second<'a>> + Clone,
    rate_name: &str,
    unit: Unit,
    segment: bool,
) -> Vec<Metric> {
    let mut out = metrics(window, seconds.clone(), rate_name, unit);
    if segment {
        out.extend(histograms(seconds.into_iter().map(|(_, latency)| latency)));
    }
    out
}

/// A segment's per-second latency histograms, `timeline_latency_ns`
/// labelled with the second (1 is the first measured one), so that the
/// segments' timelines merge into exact per-second percentiles of the
/// whole run. Seconds in which nothing ended are left out.
pub fn histograms<'a>(seconds: impl IntoIterator<Item = &'a Histogram<u64>>) -> Vec<Metric> {
    seconds
        .into_iter()
        .enumerate()
        .filter(|(_, latency)| !latency.is_empty())
        .map(|(i, latency)| {
            let mut m = hdr::latency_metric(common::TIMELINE_LATENCY, latency).context();
            m.labels.insert(label::SECOND.into(), (i + 1).to_string());
            m
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(values: &[u64]) -> Histogram<u64> {
        let mut h = hdr::latency_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn each_second_is_a_sample_and_a_gap_is_not_a_fast_second() {
        let (a, gap, c) = (second(&[1_000, 2_000]), second(&[]), second(&[4_000]));
        // 2.5 s: the last second is half long, so its one answer is 2/s.
        let seconds = [(2, &a), (0, &gap), (1, &c)];
        let m = metrics(
            Duration::from_millis(2_500),
            seconds,
            "timeline_requests_per_sec",
            Unit::RequestsPerSec,
        );
        assert_eq!(m[0].name, "timeline_requests_per_sec");
        assert_eq!(m[0].samples, vec![2.0, 0.0, 2.0]);
        assert!((m[0].value - 4.0 / 3.0).abs() < 1e-9);
        assert_eq!(m[1].samples[1], 0.0);
        // The p99's mean is over the seconds with answers only.
        let p99 = (m[1].samples[0] + m[1].samples[2]) / 2.0;
        assert!((m[1].value - p99).abs() < 1e-9, "{} {p99}", m[1].value);
        assert!(metrics(Duration::ZERO, [], "x", Unit::OpsPerSec).is_empty());
    }

    #[test]
    fn a_segment_gives_each_second_with_answers_its_histogram() {
        let (a, gap, c) = (second(&[1_000]), second(&[]), second(&[4_000, 5_000]));
        let m = histograms([&a, &gap, &c]);
        let labels: Vec<&str> = m.iter().map(|m| m.labels["second"].as_str()).collect();
        assert_eq!(labels, ["1", "3"]);
        assert!(m.iter().all(|m| m.name == "timeline_latency_ns"));
    }
}

//! The per-second latency histograms of an HTTP run in the HdrHistogram
//! interval log format (`.hlog`), which HdrHistogram's own tools read and
//! which merges losslessly across runs and machines.

use std::io::{self, Write};
use std::time::{Duration, SystemTime};

use dyno_model::Run;
use dyno_model::record::HttpRecord;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;

/// Writes `timeline` (second index ≥ 1 after the warm-up, histogram in ns)
/// to `out`.
///
/// `started` is the log's StartTime: when the run's clock started (the
/// warm-up's start; for a segment, the common start after the barrier),
/// not when the process or its record began. Interval start times are
/// seconds since then, so
/// the warm-up shows as the gap before the first interval. Each interval is
/// one second long except the last, partial one, which ends where the
/// measured window (the run's `measured_ns`) ends, so a consumer dividing a
/// count by its interval's length gets the real rate. Max values are
/// written in milliseconds, as HdrHistogram's tools expect by default.
pub fn write_latency_log(
    out: &mut impl Write,
    run: &Run,
    started: SystemTime,
    timeline: &[(u64, &Histogram<u64>)],
) -> io::Result<()> {
    let warmup = Duration::from_nanos(run.record::<HttpRecord>().map_or(0, |r| r.warmup_ns));
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "dyno {} run {}: {}",
            run.kind, run.id, run.description
        ))
        .add_comment("latency in nanoseconds; max column in milliseconds")
        .with_start_time(started)
        .with_max_value_divisor(1e6)
        .begin_log_with(out, &mut serializer)?;
    let measured = run
        .metric(dyno_model::names::common::MEASURED)
        .map(|m| Duration::from_nanos(m.value as u64));
    for (index, histogram) in timeline {
        let since_warmup = Duration::from_secs(index.saturating_sub(1));
        let length = match measured {
            Some(window) if window > since_warmup => {
                (window - since_warmup).min(Duration::from_secs(1))
            }
            _ => Duration::from_secs(1),
        };
        writer
            .write_histogram(histogram, warmup + since_warmup, length, None)
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Kind;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn intervals_read_back_losslessly() {
        let mut run = Run::new(Kind::Http, "GET /");
        run.settings = serde_json::json!({"warmup_ns": 2_000_000_000u64});
        let mut a = dyno_stats::hdr::latency_histogram();
        let mut b = dyno_stats::hdr::latency_histogram();
        a.record(1_000).unwrap();
        b.record(5_000_000).unwrap();
        b.record(7_000_000).unwrap();
        let mut text = Vec::new();
        write_latency_log(&mut text, &run, SystemTime::now(), &[(1, &a), (2, &b)]).unwrap();
        let mut seen = Vec::new();
        for entry in IntervalLogIterator::new(&text) {
            if let Ok(LogEntry::Interval(h)) = entry {
                seen.push((h.start_timestamp(), decode(h.encoded_histogram())));
            }
        }
        assert_eq!(seen.len(), 2);
        assert_eq!(
            seen[0].0,
            Duration::from_secs(2),
            "the first second starts after the warm-up"
        );
        assert_eq!(seen[1].0, Duration::from_secs(3));
        assert_eq!(seen[0].1, a);
        assert_eq!(seen[1].1, b);
    }

    #[test]
    fn the_last_partial_interval_has_its_real_length() {
        // A run measured for 1.25 s: a whole first second, then 0.25 s.
        let mut run = Run::new(Kind::Http, "GET /");
        run.settings = serde_json::json!({"warmup_ns": 0u64});
        run.metrics.push(dyno_model::Metric::new(
            "measured_ns",
            dyno_model::Unit::Ns,
            dyno_model::Direction::LowerIsBetter,
            1.25e9,
        ));
        let mut a = dyno_stats::hdr::latency_histogram();
        a.record(1_000).unwrap();
        let mut text = Vec::new();
        write_latency_log(&mut text, &run, SystemTime::now(), &[(1, &a), (2, &a)]).unwrap();
        let lengths: Vec<Duration> = IntervalLogIterator::new(&text)
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(h)) => Some(h.duration()),
                _ => None,
            })
            .collect();
        assert_eq!(
            lengths,
            vec![Duration::from_secs(1), Duration::from_millis(250)]
        );
    }

    /// Decodes a log line's histogram with the same decoder a Run uses.
    fn decode(encoded: &str) -> Histogram<u64> {
        dyno_stats::hdr::decode(encoded).unwrap()
    }
}

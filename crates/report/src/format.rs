//! Numbers with units for people: durations scaled to ns/µs/ms/s, rates in
//! decimal prefixes (MB/s is 10^6 bytes per second, as in ab and
//! CrystalDiskMark), sizes in binary units that say MiB.

use dyno_model::size::BinarySize;
use dyno_model::{Metric, Unit};

/// A value in `unit`, scaled for reading.
/// A count with its noun, singular for one: "1 run", "2 runs" (regular
/// plurals only: every noun dyno counts takes an "s").
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub fn format_value(value: f64, unit: Unit) -> String {
    if !value.is_finite() {
        return "n/a".to_owned();
    }
    match unit {
        Unit::Ns => format_duration_ns(value),
        Unit::Bytes => BinarySize(value.max(0.0).round() as u64).to_string(),
        Unit::BytesPerSec => format!("{:.2} MB/s", value / 1e6),
        Unit::OpsPerSec => format!("{}ops/s", decimal_prefix(value)),
        Unit::RequestsPerSec => format!("{:.2} req/s", value),
        Unit::Count => format!("{}", value.round() as i64),
        Unit::Ratio => format!("{value:.2}×"),
        Unit::Percent => format!("{value:.1}%"),
    }
}

/// A duration given in nanoseconds, with 4 significant figures and a unit
/// from ns to s.
pub fn format_duration_ns(ns: f64) -> String {
    let abs = ns.abs();
    let (value, unit) = if abs >= 1e9 {
        (ns / 1e9, "s")
    } else if abs >= 1e6 {
        (ns / 1e6, "ms")
    } else if abs >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    format!("{} {unit}", four_figures(value))
}

/// The confidence interval of a metric as `±x.x%` of its value, with the
/// confidence level and sample count (`±1.2% (95% CI, n=5)`). A value of
/// zero has no relative width, so its interval is shown as its two ends
/// (`0.000 ns … 0.000 ns (95% CI, n=5)`).
pub fn format_interval(metric: &Metric) -> Option<String> {
    let u = metric.uncertainty.as_ref()?;
    let level = format!("({:.0}% CI, n={})", u.confidence * 100.0, u.n);
    if metric.value == 0.0 || !metric.value.is_finite() {
        return Some(format!(
            "{} … {} {level}",
            format_value(u.low, metric.unit),
            format_value(u.high, metric.unit)
        ));
    }
    let half = (u.high - u.low) / 2.0;
    let relative = 100.0 * half / metric.value.abs();
    Some(format!("±{relative:.1}% {level}"))
}

fn decimal_prefix(value: f64) -> String {
    let abs = value.abs();
    let (scaled, prefix) = if abs >= 1e9 {
        (value / 1e9, "G")
    } else if abs >= 1e6 {
        (value / 1e6, "M")
    } else if abs >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    format!("{} {prefix}", four_figures(scaled))
}

pub(crate) fn four_figures(value: f64) -> String {
    let abs = value.abs();
    let decimals = if abs >= 1000.0 {
        0
    } else if abs >= 100.0 {
        1
    } else if abs >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Uncertainty, UncertaintyMethod};

    #[test]
    fn one_of_a_thing_is_singular() {
        assert_eq!(counted(1, "worker thread"), "1 worker thread");
        assert_eq!(counted(0, "run"), "0 runs");
        assert_eq!(counted(2, "connection"), "2 connections");
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration_ns(512.0), "512.0 ns");
        assert_eq!(format_duration_ns(1_500.0), "1.500 µs");
        assert_eq!(format_duration_ns(312_400_000.0), "312.4 ms");
        assert_eq!(format_duration_ns(12_345_000_000.0), "12.35 s");
    }

    #[test]
    fn rates_use_decimal_megabytes() {
        assert_eq!(
            format_value(123_456_789.0, Unit::BytesPerSec),
            "123.46 MB/s"
        );
        assert_eq!(format_value(321_000_000.0, Unit::OpsPerSec), "321.0 Mops/s");
        assert_eq!(format_value(1_048_576.0, Unit::Bytes), "1 MiB");
        assert_eq!(format_value(1.987, Unit::Ratio), "1.99×");
        assert_eq!(format_value(99.44, Unit::Percent), "99.4%");
        assert_eq!(format_value(f64::NAN, Unit::Ns), "n/a");
    }

    #[test]
    fn intervals_are_relative_to_the_value() {
        let mut m = Metric::new("t", Unit::Ns, Direction::LowerIsBetter, 100.0);
        assert_eq!(format_interval(&m), None);
        m.uncertainty = Some(Uncertainty {
            method: UncertaintyMethod::StudentT,
            confidence: 0.95,
            low: 98.0,
            high: 102.0,
            n: 5,
            stddev: None,
        });
        assert_eq!(format_interval(&m).unwrap(), "±2.0% (95% CI, n=5)");
        // No NaN% for a value of zero (system time of a command that uses
        // none): the two ends instead.
        m.value = 0.0;
        m.uncertainty.as_mut().unwrap().low = 0.0;
        m.uncertainty.as_mut().unwrap().high = 0.0;
        assert_eq!(
            format_interval(&m).unwrap(),
            "0.000 ns … 0.000 ns (95% CI, n=5)"
        );
    }
}

//! Numbers with units for people: durations scaled to ns/µs/ms/s, rates in
//! decimal prefixes (MB/s is 10^6 bytes per second, as in ab and
//! CrystalDiskMark), sizes in binary units that say MiB.

use dyno_model::size::BinarySize;
use dyno_model::units;
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
        Unit::Ns => units::duration(value),
        Unit::Bytes => BinarySize(value.max(0.0).round() as u64).to_string(),
        Unit::BytesPerSec => format!("{:.2} MB/s", value / 1e6),
        Unit::OpsPerSec => format!("{}ops/s", decimal_prefix(value)),
        Unit::RequestsPerSec => format!("{:.2} req/s", value),
        Unit::FlowsPerSec => format!("{:.2} flows/s", value),
        // A tally is whole; a count per operation or a load average is not,
        // and is not rounded away (0.0213 context switches per request).
        Unit::Count if value.fract() == 0.0 => format!("{}", value as i64),
        Unit::Count => units::four_figures(value),
        Unit::Ratio => format!("{value:.2}×"),
        Unit::Percent => format!("{value:.1}%"),
        Unit::Mhz => format!("{value:.0} MHz"),
    }
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
    let (divisor, prefix) = units::thousands_step(value.abs(), units::DECIMAL_PREFIXES);
    format!("{} {prefix}", units::four_figures(value / divisor))
}

/// A metric's value as `dyno show` prints it: a parallel fraction as
/// [`format_parallel_fraction`] does, other fractions and the efficiency as
/// percentages, everything else as [`format_value`]. `name` is the stored
/// name, labels allowed (`value{metric=…}` rows pass the metric they show).
pub fn format_metric_value(name: &str, value: f64, unit: Unit) -> String {
    let base = name.split('{').next().unwrap_or(name);
    if unit == Unit::Ratio && base.contains(dyno_model::names::scale::PARALLEL_FRACTION_SUFFIX) {
        return format_parallel_fraction(value);
    }
    if unit == Unit::Ratio
        && value.is_finite()
        && (base.contains("fraction") || base == dyno_model::names::scale::EFFICIENCY)
    {
        return format!("{:.1}%", 100.0 * value);
    }
    format_value(value, unit)
}

/// The ab-style split times (connect, waiting, processing): their value is
/// the mean over every request, a reused connection's 0 ns connect
/// included, as ab prints them.
const MEAN_SPLITS: [&str; 3] = [
    dyno_model::names::http::CONNECT,
    dyno_model::names::http::WAITING,
    dyno_model::names::http::PROCESSING,
];

/// A metric's name for a metric table: its display name, and for the
/// ab-style split times that their value is a mean over requests (so a
/// 5 ns `connect_ns` reads as the mean over requests that mostly reused a
/// connection, not as one connect). Only the histogram-backed ones are
/// such means: a db run's `connect_ns` is the time its connections took.
pub fn metric_label(m: &Metric) -> String {
    let name = m.display_name();
    // A quick run's HTTP line keeps their names, with its part as a label
    // (`connect_ns{part=http}`).
    if MEAN_SPLITS.contains(&m.name.as_str()) && m.histogram.is_some() {
        format!("{name} (mean over requests)")
    } else {
        name
    }
}

/// The most decimals [`format_parallel_fraction`] shows: 1 − p keeps three
/// significant figures down to 0.00100%, closer to 100% than any
/// measurement can tell apart.
const MAX_FRACTION_DECIMALS: usize = 4;

/// Amdahl's parallel fraction `p` (a ratio, 0.98957) as a percentage with
/// enough digits that the serial part 1 − p keeps three significant figures:
/// the serial part is what sets the ceiling 1/(1 − p), so 98.96% and 99.0%
/// are a ceiling of 96× and one of 100×. At least one decimal is shown.
///
/// - 0.98957 → `98.96%` (1 − p = 1.04%), 0.999 → `99.900%` (0.100%),
///   0.80805 → `80.8%` (19.2%), 0.5 → `50.0%`.
/// - exactly 1 → `100%`: no serial part at all.
/// - below 1 but within 0.00005% of it → `> 99.9999%`, never a rounded
///   `100%` that would claim no serial part.
/// - above 1 (noise or super-linear speedup) and at or below 0 (slower with
///   more units) follow the same rule on |1 − p|: `101.23%`, `0.0%`,
///   `-50.0%`.
/// - not finite → `n/a`, as [`format_value`] shows one.
pub fn format_parallel_fraction(p: f64) -> String {
    if !p.is_finite() {
        return "n/a".to_owned();
    }
    if p == 1.0 {
        return "100%".to_owned();
    }
    let serial = (100.0 * (1.0 - p)).abs();
    // The magnitude of the serial part after rounding to three figures,
    // so 0.09996% counts as 0.100%, not as 0.0999%.
    let rounded: f64 = format!("{serial:.2e}").parse().unwrap_or(serial);
    let magnitude = rounded.log10().floor() as i32;
    let decimals = usize::try_from(2 - magnitude)
        .unwrap_or(0)
        .clamp(1, MAX_FRACTION_DECIMALS);
    let shown = format!("{:.decimals$}%", 100.0 * p);
    if p < 1.0 && shown.starts_with("100.") {
        return format!("> {:.decimals$}%", 100.0 - 0.1f64.powi(decimals as i32));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Direction, Uncertainty, UncertaintyMethod};

    #[test]
    fn a_parallel_fraction_keeps_three_figures_of_its_serial_part() {
        assert_eq!(format_parallel_fraction(0.98957), "98.96%");
        assert_eq!(format_parallel_fraction(0.9990), "99.900%");
        assert_eq!(format_parallel_fraction(0.80805), "80.8%");
        assert_eq!(format_parallel_fraction(0.9), "90.0%");
        assert_eq!(format_parallel_fraction(0.5), "50.0%");
        assert_eq!(format_parallel_fraction(0.995), "99.500%");
        assert_eq!(format_parallel_fraction(0.99987), "99.9870%");
        // Rounded to three figures first: 1 − p = 0.09996% reads as 0.100%.
        assert_eq!(format_parallel_fraction(0.9990004), "99.900%");
        assert_eq!(format_parallel_fraction(0.98996), "99.00%");
    }

    #[test]
    fn a_parallel_fraction_at_or_past_its_bounds_reads_honestly() {
        assert_eq!(format_parallel_fraction(1.0), "100%");
        // So close to 1 that four decimals round to 100: still not 100%.
        assert_eq!(format_parallel_fraction(0.9999999), "> 99.9999%");
        assert_eq!(format_parallel_fraction(1.0 - 1e-15), "> 99.9999%");
        assert_eq!(format_parallel_fraction(0.0), "0.0%");
        assert_eq!(format_parallel_fraction(-0.5), "-50.0%");
        assert_eq!(format_parallel_fraction(-3.0), "-300.0%");
        // Noise above 1 keeps the same rule on |1 − p|.
        assert_eq!(format_parallel_fraction(1.0123), "101.23%");
        assert_eq!(format_parallel_fraction(1.25), "125.0%");
        assert_eq!(format_parallel_fraction(1.0 + 1e-12), "100.0000%");
        assert_eq!(format_parallel_fraction(f64::NAN), "n/a");
        assert_eq!(format_parallel_fraction(f64::INFINITY), "n/a");
    }

    #[test]
    fn one_of_a_thing_is_singular() {
        assert_eq!(counted(1, "worker thread"), "1 worker thread");
        assert_eq!(counted(0, "run"), "0 runs");
        assert_eq!(counted(2, "connection"), "2 connections");
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
        // A tally is whole; a count per request is not rounded to 0.
        assert_eq!(format_value(4883.0, Unit::Count), "4883");
        assert_eq!(format_value(0.0213, Unit::Count), "0.021");
        assert_eq!(format_value(3.3, Unit::Count), "3.300");
        assert_eq!(format_value(2445.41, Unit::Mhz), "2445 MHz");
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

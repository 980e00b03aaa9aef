//! Numbers with units as dyno writes them, one formatter a use, so that
//! every view, message and flag says a duration the same way:
//!
//! - [`duration`]: a measured duration in a report, four significant
//!   figures and a unit from ns to s (`312.4 ms`);
//! - [`duration_short`]: the same without the space, for table cells
//!   (`312.4ms`);
//! - [`duration_flag`]: a duration as a flag takes it back (`850µs`,
//!   `20.5ms`, `1.5s`): settings, objectives and messages that name a flag;
//! - [`four_figures`]: a plain number to four significant figures;
//! - [`trim_float`]: a plain number with the digits it needs (`99.9`);
//! - [`short_rate`]: a rate in a capacity search's short form (`41.2k`).
//!
//! Byte sizes are [`crate::size`]'s.

use std::time::Duration;

/// A measured duration given in nanoseconds, with four significant figures
/// and a unit from ns to s.
pub fn duration(ns: f64) -> String {
    let (divisor, unit) = thousands_step(ns.abs(), TIME_UNITS);
    format!("{} {unit}", four_figures(ns / divisor))
}

/// The units of [`thousands_step`] for nanoseconds: s, ms, µs and ns.
pub const TIME_UNITS: [&str; 4] = ["s", "ms", "µs", "ns"];

/// The decimal prefixes of [`thousands_step`]: G, M, k and none.
pub const DECIMAL_PREFIXES: [&str; 4] = ["G", "M", "k", ""];

/// The largest of 10⁹, 10⁶ and 10³ that `magnitude` reaches (1 when none
/// is), with its name from `names`, largest first: the divisor and unit
/// that keep a number of that size readable.
pub fn thousands_step(magnitude: f64, names: [&'static str; 4]) -> (f64, &'static str) {
    let [giga, mega, kilo, one] = names;
    if magnitude >= 1e9 {
        (1e9, giga)
    } else if magnitude >= 1e6 {
        (1e6, mega)
    } else if magnitude >= 1e3 {
        (1e3, kilo)
    } else {
        (1.0, one)
    }
}

/// [`duration`] for a table cell: no space before the unit.
pub fn duration_short(ns: f64) -> String {
    duration(ns).replace(' ', "")
}

/// A duration in the unit that reads best, with no more digits than it
/// needs, as `--slo`, `--timeout` and the other duration flags read it
/// back: `850µs`, `20ms`, `1.5s`.
pub fn duration_flag(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e6 {
        format!("{}µs", trim_float((ns / 1e3 * 10.0).round() / 10.0))
    } else if ns < 1e9 {
        format!("{}ms", trim_float((ns / 1e6 * 100.0).round() / 100.0))
    } else {
        format!("{}s", trim_float((ns / 1e9 * 1000.0).round() / 1000.0))
    }
}

/// `value` with four significant figures (no fewer decimals than 0, no
/// more than 3).
pub fn four_figures(value: f64) -> String {
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

/// `x` to four decimals, trailing zeros (and a trailing point) dropped:
/// `99.9`, `0.1`, `20`.
pub fn trim_float(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A rate in the search's short form, three significant figures or
/// more: `41.2k`, `950`, `23.5`, `2.50`.
pub fn short_rate(per_sec: f64) -> String {
    if per_sec >= 10_000.0 {
        format!("{:.1}k", per_sec / 1000.0)
    } else if per_sec >= 100.0 {
        format!("{per_sec:.0}")
    } else if per_sec >= 10.0 {
        format!("{per_sec:.1}")
    } else {
        format!("{per_sec:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measured_duration_has_four_figures_and_a_readable_unit() {
        assert_eq!(duration(512.0), "512.0 ns");
        assert_eq!(duration(1_500.0), "1.500 µs");
        assert_eq!(duration(312_400_000.0), "312.4 ms");
        assert_eq!(duration(12_345_000_000.0), "12.35 s");
        assert_eq!(duration_short(312_400_000.0), "312.4ms");
    }

    #[test]
    fn a_flags_duration_reads_in_its_best_unit_with_the_digits_it_needs() {
        assert_eq!(duration_flag(Duration::from_micros(850)), "850µs");
        assert_eq!(duration_flag(Duration::from_micros(20_500)), "20.5ms");
        assert_eq!(duration_flag(Duration::from_millis(1500)), "1.5s");
        assert_eq!(duration_flag(Duration::from_secs(10)), "10s");
        assert_eq!(duration_flag(Duration::from_millis(500)), "500ms");
    }
}

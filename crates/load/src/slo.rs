//! A service-level objective: what a load step must meet to count as
//! sustainable (`--slo 'p99<=20ms,errors<=0.1%'`).
//!
//! Latency targets name a percentile of the corrected latency (from each
//! request's due time, so a queue cannot hide behind a slow client); the
//! error target is a share of the measured requests. Parsing is strict and
//! every error says what is accepted.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// One latency target: the `percentile` (0 < p < 100) must be at most (or,
/// `strict`, below) `limit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyTarget {
    pub percentile: f64,
    pub limit: Duration,
    pub strict: bool,
}

impl LatencyTarget {
    /// Whether `measured` meets the target.
    pub fn met_by(&self, measured: Duration) -> bool {
        if self.strict {
            measured < self.limit
        } else {
            measured <= self.limit
        }
    }
}

/// The objective: every target must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slo {
    pub latency: Vec<LatencyTarget>,
    /// The most errors allowed, as a fraction of the measured requests
    /// (0.001 for `errors<=0.1%`), and whether the bound is strict.
    pub errors: Option<(f64, bool)>,
}

/// Why `--slo` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SloError(String);

const ACCEPTED: &str = "targets are pNN<=DURATION (p50, p99, p99.9 …; units us, ms, s) and errors<=PCT% (or errors<=0), joined by commas: e.g. 'p99<=20ms,errors<=0.1%'";

impl Slo {
    /// The tightest latency limit, if any: what a rising latency is
    /// measured against.
    pub fn tightest(&self) -> Option<Duration> {
        self.latency.iter().map(|t| t.limit).min()
    }

    /// The loosest latency limit, if any: how long a step waits for what
    /// is still under way at its end.
    pub fn loosest(&self) -> Option<Duration> {
        self.latency.iter().map(|t| t.limit).max()
    }

    /// The percentiles the objective names, each once, in order.
    pub fn percentiles(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self.latency.iter().map(|t| t.percentile).collect();
        p.sort_by(f64::total_cmp);
        p.dedup();
        p
    }
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Slo, SloError> {
        let mut slo = Slo::default();
        if s.trim().is_empty() {
            return Err(SloError(format!("the objective is empty: {ACCEPTED}")));
        }
        for term in s.split(',') {
            let term = term.trim();
            let (name, strict, value) = split_term(term)?;
            if name == "errors" {
                if slo.errors.is_some() {
                    return Err(SloError(format!(
                        "'{term}': the error target is given twice; give it once"
                    )));
                }
                slo.errors = Some((error_fraction(term, value)?, strict));
            } else if let Some(p) = name.strip_prefix('p') {
                let percentile = match p.parse::<f64>() {
                    Ok(p) if p > 0.0 && p < 100.0 => p,
                    _ => {
                        return Err(SloError(format!(
                            "'{term}': '{name}' is not a percentile: give p followed by a number above 0 and below 100, such as p50, p99 or p99.9"
                        )));
                    }
                };
                if slo.latency.iter().any(|t| t.percentile == percentile) {
                    return Err(SloError(format!(
                        "'{term}': {name} is given twice; give each percentile once"
                    )));
                }
                slo.latency.push(LatencyTarget {
                    percentile,
                    limit: latency_limit(term, value)?,
                    strict,
                });
            } else {
                return Err(SloError(format!(
                    "'{term}': '{name}' is not a target: {ACCEPTED}"
                )));
            }
        }
        Ok(slo)
    }
}

/// `name<=value` or `name<value`, lower-cased and trimmed.
fn split_term(term: &str) -> Result<(String, bool, &str), SloError> {
    if term.is_empty() {
        return Err(SloError(format!(
            "an empty target (two commas in a row, or one at the end): {ACCEPTED}"
        )));
    }
    let (at, len, strict) = match (term.find("<="), term.find('<')) {
        (Some(at), _) => (at, 2, false),
        (None, Some(at)) => (at, 1, true),
        (None, None) => {
            let hint = if term.contains(">") {
                "an objective is an upper bound, written with <= or <"
            } else {
                "no <= in it"
            };
            return Err(SloError(format!("'{term}': {hint}; {ACCEPTED}")));
        }
    };
    let name = term[..at].trim().to_ascii_lowercase();
    let value = term[at + len..].trim();
    if value.is_empty() {
        return Err(SloError(format!(
            "'{term}': no value after the <=; {ACCEPTED}"
        )));
    }
    Ok((name, strict, value))
}

fn error_fraction(term: &str, value: &str) -> Result<f64, SloError> {
    let bad = || {
        SloError(format!(
            "'{term}': the error limit is a percentage from 0% to 100%, such as errors<=0.1% (or errors<=0 for none)"
        ))
    };
    let number = match value.strip_suffix('%') {
        Some(n) => n.trim().parse::<f64>().map_err(|_| bad())?,
        None => match value.parse::<f64>() {
            Ok(0.0) => 0.0,
            _ => return Err(bad()),
        },
    };
    if !(0.0..=100.0).contains(&number) {
        return Err(bad());
    }
    Ok(number / 100.0)
}

fn latency_limit(term: &str, value: &str) -> Result<Duration, SloError> {
    if value.parse::<f64>().is_ok() {
        return Err(SloError(format!(
            "'{term}': '{value}' has no unit: give a duration such as {value}ms (units: us, ms, s)"
        )));
    }
    let d: jiff::SignedDuration = value.parse().map_err(|_| {
        SloError(format!(
            "'{term}': '{value}' is not a duration: write it as 20ms, 500us or 1.5s"
        ))
    })?;
    match Duration::try_from(d) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(SloError(format!(
            "'{term}': the limit must be above zero, such as 20ms"
        ))),
    }
}

/// A percentile as written: `99`, `99.9`.
pub fn percentile_name(p: f64) -> String {
    format!("p{}", dyno_model::units::trim_float(p))
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for t in &self.latency {
            let op = if t.strict { "<" } else { "≤" };
            parts.push(format!(
                "{} {op} {}",
                percentile_name(t.percentile),
                dyno_model::units::duration_flag(t.limit)
            ));
        }
        if let Some((limit, strict)) = self.errors {
            let op = if strict { "<" } else { "≤" };
            parts.push(format!(
                "errors {op} {}%",
                dyno_model::units::trim_float(limit * 100.0)
            ));
        }
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        s.parse::<Slo>().unwrap_err().to_string()
    }

    #[test]
    fn reads_latency_and_error_targets() {
        let slo: Slo = "p99<=20ms, errors<=0.1%".parse().unwrap();
        assert_eq!(
            slo.latency,
            [LatencyTarget {
                percentile: 99.0,
                limit: Duration::from_millis(20),
                strict: false
            }]
        );
        assert_eq!(slo.errors, Some((0.001, false)));
        assert_eq!(slo.to_string(), "p99 ≤ 20ms, errors ≤ 0.1%");

        let slo: Slo = "P99.9<1.5s,p50<=500us,errors<=0".parse().unwrap();
        assert_eq!(slo.percentiles(), [50.0, 99.9]);
        assert_eq!(slo.tightest(), Some(Duration::from_micros(500)));
        assert!(slo.latency[0].strict);
        assert!(!slo.latency[0].met_by(Duration::from_millis(1500)));
        assert!(slo.latency[1].met_by(Duration::from_micros(500)));
        assert_eq!(slo.errors, Some((0.0, false)));
        assert_eq!(slo.to_string(), "p99.9 < 1.5s, p50 ≤ 500µs, errors ≤ 0%");
        assert_eq!("errors<=1%".parse::<Slo>().unwrap().latency, []);
    }

    #[test]
    fn says_what_is_accepted() {
        assert!(err("").contains("empty"));
        assert!(err("p99<=20").contains("has no unit: give a duration such as 20ms"));
        assert!(err("p99<=fast").contains("not a duration"));
        assert!(err("p100<=20ms").contains("not a percentile"));
        assert!(err("p0<=20ms").contains("not a percentile"));
        assert!(err("px<=20ms").contains("not a percentile"));
        assert!(err("latency<=20ms").contains("'latency' is not a target"));
        assert!(err("p99>=20ms").contains("upper bound"));
        assert!(err("p99=20ms").contains("no <= in it"));
        assert!(err("p99<=").contains("no value"));
        assert!(err("p99<=20ms,").contains("empty target"));
        assert!(err("errors<=0.1").contains("percentage"));
        assert!(err("errors<=150%").contains("percentage"));
        assert!(err("p99<=1ms,p99<=2ms").contains("given twice"));
        assert!(err("errors<=1%,errors<=2%").contains("given twice"));
        assert!(err("p99<=0ms").contains("above zero"));
    }
}
